//! Identity by one rule: when two spellings of a group label, a key or a column header name the
//! same thing to a reader.
//!
//! A reader takes `West`, ` west`, `wеst` (with a Cyrillic е), `we\u{200B}st` (with a zero-width
//! space) and `ｗｅｓｔ` (fullwidth) for one group; a byte comparison takes them for five. Every
//! check that matches labels, keys or headers therefore compares them by one canonical form:
//!
//! 1. Unicode compatibility normalization (NFKC, UAX #15);
//! 2. default-ignorable code points removed (zero-width spaces and joiners, soft hyphens,
//!    bidirectional controls, variation selectors: they draw nothing);
//! 3. white space folded: trimmed, and every run of it one space;
//! 4. letter case folded;
//! 5. a text that is one number is that number (`6`, `6.0` and `6e0` are one label);
//!    any other text is replaced by its confusable skeleton (UTS #39), which maps look-alike
//!    letters from other scripts to one prototype.
//!
//! A group label names a group (a firm, a site), which a reader recognises through its
//! punctuation and spacing: `Westinghouse.`, `Westing-house` and `W estinghouse` are the firm
//! `Westinghouse`. So group labels are compared by their [`group_canonical`] form: the canonical
//! form with every character that is not a letter or digit (punctuation, symbols, white space)
//! dropped. Keys and headers keep the canonical form (`a-1` and `a1` are two keys). A full name
//! against a short one (`Westinghouse Electric` and `Westinghouse`) is not a spelling and is
//! not caught here.
//!
//! Checks never merge two spellings silently: two distinct raw spellings with one canonical form
//! are ambiguous, and the check refuses them naming both and where each stands.

use std::collections::{HashMap, HashSet};

use unicode_normalization::UnicodeNormalization;

/// Whether `c` is a default-ignorable code point (Unicode's `Default_Ignorable_Code_Point`,
/// the table of Unicode 16): a character that draws nothing where it is not supported.
pub fn default_ignorable(c: char) -> bool {
    matches!(c,
        '\u{AD}' | '\u{34F}' | '\u{61C}' | '\u{115F}'..='\u{1160}' | '\u{17B4}'..='\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// The canonical form of a label, key or header (see the module documentation).
pub fn canonical(text: &str) -> String {
    // Most fields are plain ASCII numbers: NFKC and the skeleton leave nothing to do there.
    if text.is_ascii()
        && let Some(v) = number(text.trim())
    {
        return format!("#{}", v + 0.0);
    }
    if let Some(form) = ascii_canonical(text) {
        return form;
    }
    slow_canonical(text)
}

/// Each ASCII character's canonical form on its own (its lower-cased skeleton), where that is
/// ASCII: an ASCII text made of such characters has their forms concatenated as its form
/// (NFKC and the decompositions leave ASCII as it is, and the skeleton maps character by
/// character).
fn ascii_forms() -> &'static [Option<String>; 128] {
    static FORMS: std::sync::OnceLock<[Option<String>; 128]> = std::sync::OnceLock::new();
    FORMS.get_or_init(|| {
        std::array::from_fn(|b| {
            let c = char::from(u8::try_from(b).unwrap_or(0));
            let form = unicode_security::skeleton(&c.to_string())
                .collect::<String>()
                .to_lowercase();
            form.is_ascii().then_some(form)
        })
    })
}

/// [`canonical`] of an ASCII text whose characters all have ASCII forms, from those forms.
fn ascii_canonical(text: &str) -> Option<String> {
    if !text.is_ascii() {
        return None;
    }
    let forms = ascii_forms();
    // Keys and labels rarely hold white space: then there is none to fold.
    let folded = if text.chars().any(char::is_whitespace) {
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase()
    } else {
        text.to_ascii_lowercase()
    };
    if let Some(v) = number(&folded) {
        return Some(format!("#{}", v + 0.0));
    }
    folded
        .bytes()
        .map(|b| forms[usize::from(b)].as_deref())
        .collect()
}

/// [`canonical`] by its definition, for any text.
fn slow_canonical(text: &str) -> String {
    let visible: String = text.nfkc().filter(|&c| !default_ignorable(c)).collect();
    let spaced = visible.split_whitespace().collect::<Vec<_>>().join(" ");
    let folded = spaced.to_lowercase();
    if let Some(v) = number(&folded) {
        // Adding 0 turns `-0` into `0`; `{}` writes every f64 in one shortest form.
        return format!("#{}", v + 0.0);
    }
    // The skeleton of a lower-cased text, lower-cased again: prototypes may be capitals.
    unicode_security::skeleton(&folded)
        .collect::<String>()
        .to_lowercase()
}

/// The canonical form of a group label: [`canonical`], then every character that is not a
/// letter or digit dropped (a label of punctuation only keeps its canonical form).
pub fn group_canonical(text: &str) -> String {
    let form = canonical(text);
    if form.starts_with('#') {
        return form;
    }
    let letters: String = form.chars().filter(|c| c.is_alphanumeric()).collect();
    if letters.is_empty() { form } else { letters }
}

/// A text as a finite number (the tables' reading, kept here so identity depends on nothing).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Two distinct raw spellings that share one canonical form, with where each stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambiguity<'a> {
    /// The spelling seen first.
    pub first: &'a str,
    /// Where it stands (as the caller named it).
    pub first_at: String,
    /// The other spelling.
    pub second: &'a str,
    /// Where it stands.
    pub second_at: String,
}

impl std::fmt::Display for Ambiguity<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} ({}) and {:?} ({}) differ only in spacing, case, Unicode form, invisible \
             characters, look-alike letters, number spelling or (for group labels) punctuation, \
             so a reader takes them for one",
            self.first, self.first_at, self.second, self.second_at
        )
    }
}

/// Every pair of distinct raw spellings in `items` (spelling, where it stands) that share one
/// canonical form, each pair once, in the order given. The same spelling twice is not
/// ambiguous (whether it may repeat is the caller's rule). Where a spelling stands is written
/// out only for a pair found (a table's keys are ten thousand places).
pub fn ambiguities<'a, L: std::fmt::Display>(
    items: impl IntoIterator<Item = (&'a str, L)>,
) -> Vec<Ambiguity<'a>> {
    ambiguities_by(items, canonical)
}

/// [`ambiguities`] of group labels, by their [`group_canonical`] form.
pub fn group_ambiguities<'a, L: std::fmt::Display>(
    items: impl IntoIterator<Item = (&'a str, L)>,
) -> Vec<Ambiguity<'a>> {
    ambiguities_by(items, group_canonical)
}

fn ambiguities_by<'a, L: std::fmt::Display>(
    items: impl IntoIterator<Item = (&'a str, L)>,
    form_of: fn(&str) -> String,
) -> Vec<Ambiguity<'a>> {
    // The first spelling filed under each canonical form: every later one is paired with it.
    let mut first: HashMap<String, (&'a str, L)> = HashMap::new();
    let mut found = Vec::new();
    // A spelling seen before was filed under its canonical form then: each spelling's form is
    // computed and filed once.
    let mut known: HashSet<&'a str> = HashSet::new();
    for (raw, at) in items {
        if !known.insert(raw) {
            continue;
        }
        match first.entry(form_of(raw)) {
            std::collections::hash_map::Entry::Occupied(one) => {
                let (one, one_at) = one.get();
                found.push(Ambiguity {
                    first: one,
                    first_at: one_at.to_string(),
                    second: raw,
                    second_at: at.to_string(),
                });
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert((raw, at));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_a_reader_takes_for_one_share_a_canonical_form() {
        let west = canonical("west");
        for other in [
            "West",
            " west ",
            "w\u{435}st",   // Cyrillic е
            "we\u{200B}st", // zero-width space
            "\u{FF57}est",  // fullwidth w
            "w\u{AD}est",   // soft hyphen
            "\u{2060}west", // word joiner
        ] {
            assert_eq!(canonical(other), west, "{other:?}");
        }
        assert_eq!(canonical("North  site"), canonical("north site"));
        assert_eq!(canonical("6"), canonical("6.0"));
        assert_ne!(canonical("west"), canonical("east"));
        assert_ne!(canonical("6"), canonical("7"));
    }

    #[test]
    fn the_ascii_path_gives_the_definition_s_forms() {
        let plain = ascii_forms().iter().filter(|f| f.is_some()).count();
        assert!(plain > 90, "{plain} ASCII characters have ASCII forms");
        let mut texts: Vec<String> = (0u8..128)
            .flat_map(|a| {
                (0u8..128).map(move |b| String::from_utf8(vec![a, b]).unwrap_or_default())
            })
            .collect();
        texts.extend(
            [
                "u123",
                "West site",
                "rn vs m",
                "l0O1I|",
                "  A  b\t",
                "g12",
                "1e5",
                "-0",
                "Chrysler",
                "x_1-2.3",
                "\u{7f}del",
                "a\u{0}b",
            ]
            .map(str::to_owned),
        );
        for text in texts {
            assert_eq!(canonical(&text), slow_canonical(&text), "{text:?}");
        }
    }

    #[test]
    fn group_labels_that_differ_only_in_punctuation_or_spacing_share_a_form() {
        let firm = group_canonical("Westinghouse");
        for other in [
            "Westinghouse.",
            "Westing-house",
            "W estinghouse",
            "WESTINGHOUSE",
        ] {
            assert_eq!(group_canonical(other), firm, "{other:?}");
        }
        assert_ne!(group_canonical("Westinghouse Electric"), firm);
        assert_ne!(canonical("Westing-house"), canonical("Westinghouse"));
        let found = group_ambiguities([("Westinghouse", 3), ("Westing-house", 9)]);
        assert_eq!(found.len(), 1);
        assert!(found[0].to_string().contains("Westing-house"));
    }

    #[test]
    fn ambiguities_name_both_spellings_and_where_they_stand() {
        let found = ambiguities([
            ("west", "line 2".to_owned()),
            ("west", "line 3".to_owned()),
            ("w\u{435}st", "line 9".to_owned()),
            ("east", "line 4".to_owned()),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].first_at, "line 2");
        assert_eq!(found[0].second_at, "line 9");
        assert!(found[0].to_string().contains("line 9"));
    }
}
