//! Reading a report's figures: every number a reader sees in it ([`super::render`]: sentences,
//! headings, list items, quotes and table cells), with the line it stands on, the digits
//! written and what the words of its sentence say it is ([`super::context`]).
//!
//! Figures are read by an allow-list, never by guessing: a figure is ASCII digits with an
//! optional sign (`-` or `−`), one decimal point, an exponent (`e-05`) and `%`. Anything else
//! that a reader could take for a number is a doubt that leaves the report `unverified`, naming
//! it: another script's digits, superscripts and fractions, a decimal comma, letters or symbols
//! glued to digits (`5.8pts`, `O.9O`, `R²0.90`), a number written in words, an invisible
//! character (zero-width, bidirectional control, filler). A word that starts with a letter and
//! holds digits but no point (`HC3`, `x1`, `sleep_hours2`) is a name, not a figure; `R²` is
//! the metric's name; a percentage directly before `CI` or `confidence` is an interval's level.

use unicode_normalization::UnicodeNormalization;

use super::context::{self, Reading, Tok, Vocabulary};
use super::render::{Passage, Rendered};

/// One number a reader sees.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    /// The report line it stands on (from 1).
    pub line: usize,
    /// As written, the sign as `-` (`-0.31`, `31%`, `1.2e-05`, `0,31`).
    pub written: String,
    /// Its value (a percentage as written, not divided).
    pub value: f64,
    /// Half a unit of the last digit written: how far rounding to those digits moves a value.
    pub half_unit: f64,
    /// Whether it ends in `%`.
    pub percent: bool,
    /// Written with a decimal comma or digit grouping: its value is not read.
    pub comma: bool,
    /// Written with a decimal point or an exponent (a count is written without).
    pub fractional: bool,
    /// The sentence (or table cell) it stands in, for quoting.
    pub quote: String,
    /// What the words of its sentence say it is.
    pub reading: Reading,
}

/// Every figure of a report, and every doubt about what a reader takes for a number.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub figures: Vec<Figure>,
    /// `line N: why`, each making the report `unverified`.
    pub doubts: Vec<String>,
}

/// Folds a claim's value as figures are written: trimmed, `−` as `-`, no inner spaces.
pub(crate) fn fold(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '\u{2212}' { '-' } else { c })
        .collect()
}

/// Symbols kept as tokens: they say how a figure relates to what it states.
const SYMBOLS: &[char] = &[
    '<', '>', '≤', '≥', '≦', '≧', '⩽', '⩾', '≠', '≈', '≃', '≅', '∼', '~', '±', '∓', '→', '⇒', '⟶',
    '←', '=', '–', '—', '≪', '≫', '+',
];

/// Characters that separate words and mean nothing by themselves.
const SEPARATORS: &[char] = &[
    '(', ')', '[', ']', '{', '}', ',', ';', ':', '"', '“', '”', '‘', '’', '\'', '*', '|', '/',
    '\\', '`',
];

/// Characters that scale a number a reader sees (per mille, another script's percent sign).
const SCALES: &[char] = &['‰', '‱', '٪', '％', '﹪', '%'];

/// Numbers in words: a reader sees a quantity the check does not read.
const NUMBER_WORDS: &[&str] = &[
    "zero",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "billion",
    "billions",
    "trillion",
    "dozen",
    "dozens",
    "percent",
    "per-cent",
    "pct",
    "permille",
    "half",
    "quarter",
    "thrice",
    "twice",
    "double",
    "triple",
    "tenth",
    "hundredth",
    "thousandth",
];

/// Words a `.` after which does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "vs", "cf", "etc", "approx", "resp", "fig", "eq", "al", "ca", "incl", "std", "est", "no",
];

/// A raw word or mark of a passage, with its byte offset.
enum Raw {
    Word(usize, String),
    Sym(usize, char),
    End(usize),
}

/// Cuts a passage's text into raw words, symbols and sentence ends.
fn raw(text: &str) -> Vec<Raw> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut word = String::new();
    let mut start = 0;
    // A point before a word in lower case ends no sentence (`Excl. the held-out rows`): a
    // reader reads on, so the words before it belong to the figure's sentence.
    let end_word = |word: &mut String, start: usize, next: Option<char>, out: &mut Vec<Raw>| {
        if word.is_empty() {
            return;
        }
        let stripped = word.trim_end_matches('.');
        let dots = word.len() - stripped.len();
        let lower = stripped.to_lowercase();
        let abbreviation = ABBREVIATIONS.contains(&lower.as_str())
            || (lower.chars().count() == 1 && lower.chars().all(char::is_alphabetic))
            || (lower.contains('.') && lower.chars().all(|c| c.is_alphabetic() || c == '.'));
        if !stripped.is_empty() {
            out.push(Raw::Word(start, stripped.to_owned()));
        }
        let reads_on = next.is_some_and(char::is_lowercase);
        if dots > 0 && !abbreviation && !reads_on {
            out.push(Raw::End(start + word.len()));
        }
        word.clear();
    };
    for (i, &(offset, c)) in chars.iter().enumerate() {
        let between_digits = |c: char| {
            c == ','
                && i > 0
                && chars[i - 1].1.is_ascii_digit()
                && chars.get(i + 1).is_some_and(|n| n.1.is_ascii_digit())
        };
        let next = || {
            chars[i..]
                .iter()
                .map(|&(_, n)| n)
                .find(|n| !n.is_whitespace() && !SEPARATORS.contains(n))
        };
        if c.is_whitespace() || (SEPARATORS.contains(&c) && !between_digits(c)) {
            end_word(&mut word, start, next(), &mut out);
        } else if SYMBOLS.contains(&c) {
            end_word(&mut word, start, Some(c), &mut out);
            out.push(Raw::Sym(offset, c));
        } else if matches!(c, '!' | '?') {
            end_word(&mut word, start, Some(c), &mut out);
            out.push(Raw::End(offset));
        } else {
            if word.is_empty() {
                start = offset;
            }
            word.push(c);
        }
    }
    end_word(&mut word, start, None, &mut out);
    out
}

/// A figure's parts as read from a word.
struct Parsed {
    written: String,
    value: f64,
    half_unit: f64,
    percent: bool,
    comma: bool,
    fractional: bool,
}

/// Reads a word that is one figure by the allow-list, or `None`.
fn parse(word: &str) -> Option<Parsed> {
    let (sign, rest) = match word.strip_prefix('-').or_else(|| word.strip_prefix('−')) {
        Some(rest) => ("-", rest),
        None => ("", word),
    };
    let (body, percent) = match rest.strip_suffix('%') {
        Some(body) => (body, true),
        None => (rest, false),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => {
            let e = body[at + 1..].replace('−', "-");
            let digits = e.trim_start_matches(['-', '+']);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (&body[..at], Some(e.parse::<i32>().ok()?))
        }
        None => (body, None),
    };
    let comma = mantissa.contains(',');
    let (whole, decimals) = match mantissa.split_once('.') {
        Some((w, d)) => (w, Some(d)),
        None => (mantissa, None),
    };
    let whole_ok = if comma {
        let groups: Vec<&str> = whole.split(',').collect();
        groups
            .iter()
            .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
    } else {
        whole.bytes().all(|b| b.is_ascii_digit())
    };
    let decimals_ok =
        decimals.is_none_or(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    if !whole_ok || !decimals_ok || (whole.is_empty() && decimals.is_none()) {
        return None;
    }
    let places = decimals.map_or(0, str::len);
    let e = exponent.unwrap_or(0);
    let text = format!("{sign}{mantissa}");
    let value = if comma {
        f64::NAN
    } else {
        format!("{text}e{e}").parse::<f64>().ok()?
    };
    Some(Parsed {
        written: format!(
            "{}{}",
            fold(word).trim_end_matches('%'),
            if percent { "%" } else { "" }
        ),
        value,
        half_unit: 0.5 * 10f64.powi(e - i32::try_from(places).unwrap_or(i32::MAX)),
        percent,
        comma,
        fractional: decimals.is_some() || exponent.is_some(),
    })
}

/// Why a word that is not a figure may be read as one, if it may.
fn doubt(word: &str) -> Option<String> {
    if let Some(c) = word
        .chars()
        .find(|&c| crate::identity::default_ignorable(c) || c.is_control())
    {
        return Some(format!(
            "an invisible character (U+{:04X}) stands in {word:?}; remove it",
            u32::from(c)
        ));
    }
    let name = |w: &str| {
        w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    };
    let metric = matches!(word, "R²" | "r²" | "R^2" | "r^2");
    if !metric && word.chars().any(|c| c.is_numeric() && !c.is_ascii_digit()) {
        return Some(format!(
            "{word:?} holds a digit that is not an ASCII digit (another script's, a superscript \
             or a fraction); write figures with the digits 0-9"
        ));
    }
    if word.chars().any(|c| SCALES.contains(&c)) {
        return Some(format!(
            "{word:?}: a percent or per-mille sign the check does not read; write a figure as \
             digits directly followed by %"
        ));
    }
    if word.bytes().any(|b| b.is_ascii_digit()) && !name(word) && !metric {
        return Some(format!(
            "{word:?} glues letters or symbols to digits; write the figure alone (0.31, -2.4, \
             1.2e-05, 31%) with its unit as a separate word"
        ));
    }
    let looks_like_digits =
        !word.is_ascii() && unicode_security::skeleton(word).any(|c| c.is_ascii_digit());
    if looks_like_digits {
        return Some(format!(
            "{word:?} holds a letter that looks like a digit; write figures with the digits 0-9"
        ));
    }
    // A word a reader takes for an English one but the check would not match: letters of two
    // scripts (`hеld-out` with a Cyrillic `е`), or letters of another script or width that
    // look like ASCII ones (`ｈｅｌｄ`, `хоld`).
    let disguised = word.chars().any(|c| !c.is_ascii() && c.is_alphabetic())
        && !metric
        && (!unicode_security::MixedScript::is_single_script(word)
            || unicode_security::skeleton(word).all(|c| c.is_ascii()));
    if disguised {
        return Some(format!(
            "{word:?} mixes scripts or uses letters that look like ASCII ones, so a reader and \
             the check would read it differently; write it in plain letters"
        ));
    }
    let folded = word_form(word);
    if folded.split('-').any(|part| NUMBER_WORDS.contains(&part)) {
        return Some(format!(
            "{word:?} is a number written in words, which the check cannot verify; write it as \
             digits and bind it to a claim"
        ));
    }
    None
}

/// A word as the grammar reads it: NFKC, lower case, every Unicode dash `-`.
fn word_form(word: &str) -> String {
    word.nfkc()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => '-',
            other => other,
        })
        .collect()
}

/// A name (a coefficient's, `region[T.north]`) as the grammar reads it in a report: cut into
/// words as text is, each word in its read form, joined by spaces.
pub(crate) fn words(name: &str) -> String {
    raw(name)
        .into_iter()
        .filter_map(|r| match r {
            Raw::Word(_, w) => Some(word_form(&w)),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A section number opening a heading (`3.`, `2.1.`: it ends in a point).
fn section_number(word: &str) -> bool {
    word.split('.').all(|part| {
        (1..=2).contains(&part.len())
            && part.bytes().all(|b| b.is_ascii_digit())
            && !part.starts_with('0')
    })
}

/// One sentence being read.
#[derive(Default)]
struct Sentence {
    toks: Vec<Tok>,
    figures: Vec<(Parsed, usize)>,
    start: Option<usize>,
    end: usize,
}

/// Reads every figure and doubt of a rendered report.
pub(crate) fn figures(rendered: &Rendered, vocabulary: &Vocabulary) -> Read {
    let mut read = Read::default();
    for passage in &rendered.passages {
        read_passage(passage, vocabulary, &mut read);
    }
    read
}

/// Whether `word` opens an interval's name (`CI`, `confidence`): a percentage before it is the
/// interval's level.
fn names_interval(word: &str) -> bool {
    matches!(
        word.to_lowercase().as_str(),
        "ci" | "confidence" | "confidence-interval"
    )
}

/// The tokens of a table cell's header and row label (a header's `95% CI` is a level).
fn prefix_tokens(passage: &Passage) -> Vec<Tok> {
    let mut toks = Vec::new();
    for part in &passage.prefix {
        let raws = raw(part);
        for (k, raw) in raws.iter().enumerate() {
            match raw {
                Raw::Word(_, w) => {
                    let next_names_interval =
                        matches!(raws.get(k + 1), Some(Raw::Word(_, n)) if names_interval(n));
                    match parse(w) {
                        Some(p) if p.percent && next_names_interval => {
                            toks.push(Tok::Level(p.value / 100.0));
                        }
                        _ => toks.push(Tok::Word(word_form(w))),
                    }
                }
                Raw::Sym(_, c) => toks.push(Tok::Sym(*c)),
                Raw::End(_) => {}
            }
        }
        toks.push(Tok::Sym('|'));
    }
    toks
}

fn read_passage(passage: &Passage, vocabulary: &Vocabulary, read: &mut Read) {
    let prefix = prefix_tokens(passage);
    let mut sentence = Sentence::default();
    let mut first = passage.heading;
    let raws = raw(&passage.text);
    let mut k = 0;
    while k < raws.len() {
        match &raws[k] {
            Raw::End(at) => {
                sentence.end = *at;
                finish(
                    passage,
                    &prefix,
                    std::mem::take(&mut sentence),
                    vocabulary,
                    read,
                );
            }
            Raw::Sym(at, c) => {
                sentence.start.get_or_insert(*at);
                sentence.end = at + c.len_utf8();
                sentence.toks.push(Tok::Sym(*c));
            }
            Raw::Word(at, word) => {
                sentence.start.get_or_insert(*at);
                sentence.end = at + word.len();
                let numbered = matches!(raws.get(k + 1), Some(Raw::End(_)));
                if std::mem::take(&mut first) && numbered && section_number(word) {
                    // A heading's section number: skip it and the `.` after it.
                    k += 1;
                    sentence = Sentence::default();
                } else if let Some(mut parsed) = parse(word) {
                    let text = &passage.text;
                    if text[..*at].ends_with('(') && text[at + word.len()..].starts_with(')') {
                        read.doubts.push(format!(
                            "line {}: ({word}) in parentheses alone is a negative number to an \
                             accountant; write the sign, or words with it in the parentheses",
                            passage.line_at(*at)
                        ));
                    }
                    // `95 %`: a percent sign standing apart is the figure's.
                    if !parsed.percent
                        && matches!(raws.get(k + 1), Some(Raw::Word(_, w)) if w == "%")
                    {
                        parsed.percent = true;
                        parsed.written.push('%');
                        k += 1;
                    }
                    let level = parsed.percent
                        && matches!(raws.get(k + 1), Some(Raw::Word(_, w)) if names_interval(w));
                    if level {
                        sentence.toks.push(Tok::Level(parsed.value / 100.0));
                    } else {
                        sentence.toks.push(Tok::Figure(sentence.figures.len()));
                        sentence.figures.push((parsed, passage.line_at(*at)));
                    }
                } else if let Some((left, right)) = range(word) {
                    sentence.toks.push(Tok::Figure(sentence.figures.len()));
                    sentence.figures.push((left, passage.line_at(*at)));
                    sentence.toks.push(Tok::Sym('–'));
                    sentence.toks.push(Tok::Figure(sentence.figures.len()));
                    sentence.figures.push((right, passage.line_at(*at)));
                } else if let Some(why) = doubt(word) {
                    read.doubts
                        .push(format!("line {}: {why}", passage.line_at(*at)));
                    sentence.toks.push(Tok::Word("?".into()));
                } else {
                    sentence.toks.push(Tok::Word(word_form(word)));
                }
            }
        }
        k += 1;
    }
    finish(passage, &prefix, sentence, vocabulary, read);
}

/// `6.28-7.81`: two figures joined by a hyphen.
fn range(word: &str) -> Option<(Parsed, Parsed)> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    chars.iter().skip(1).find_map(|&(i, c)| {
        let joins = c == '-' && word[..i].ends_with(|p: char| p.is_ascii_digit());
        if !joins {
            return None;
        }
        let right = &word[i + 1..];
        if right.starts_with(['-', '−']) {
            return None;
        }
        Some((parse(&word[..i])?, parse(right)?))
    })
}

/// Reads a finished sentence's figures with the grammar.
fn finish(
    passage: &Passage,
    prefix: &[Tok],
    sentence: Sentence,
    vocabulary: &Vocabulary,
    read: &mut Read,
) {
    if sentence.figures.is_empty() {
        return;
    }
    let start = sentence.start.unwrap_or(0);
    let quote = passage
        .text
        .get(start..sentence.end.max(start))
        .unwrap_or(&passage.text)
        .trim()
        .to_owned();
    let mut toks = prefix.to_vec();
    toks.extend(sentence.toks);
    let readings = context::read(&toks, vocabulary);
    for ((parsed, line), mut reading) in sentence.figures.into_iter().zip(readings) {
        if passage.html {
            reading.doubts.push(
                "raw HTML stands next to it, which a browser may show, hide or restyle".into(),
            );
        }
        read.figures.push(Figure {
            line,
            written: parsed.written,
            value: parsed.value,
            half_unit: parsed.half_unit,
            percent: parsed.percent,
            comma: parsed.comma,
            fractional: parsed.fractional,
            quote: quote.clone(),
            reading,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(report: &str) -> Read {
        let vocabulary = Vocabulary {
            coefficients: super::super::context::line_coefficients("sleep_hours"),
            groups: vec![("west".into(), super::super::format::Sample::HeldOut)],
            outcome: vec!["score".into()],
        };
        figures(&super::super::render::render(report), &vocabulary)
    }

    fn written(report: &str) -> Vec<(usize, String)> {
        read(report)
            .figures
            .into_iter()
            .map(|f| (f.line, f.written))
            .collect()
    }

    #[test]
    fn figures_are_read_from_sentences_headings_and_table_cells_but_not_from_names() {
        let report = "# Study\n\nIntro 2024.\n\n## 3. Results\n\nThe held\u{2011}out R² was\n0.31 \
                      (95% CI 0.2 to −0.4; p < .001), HC3 errors.\n\n| sample | R² |\n|---|---|\n\
                      | held-out | 1.2e-05 |\n\n## Discussion of 7\n";
        assert_eq!(
            written(report),
            vec![
                (3, "2024".to_owned()),
                (8, "0.31".to_owned()),
                (8, "0.2".to_owned()),
                (8, "-0.4".to_owned()),
                (8, ".001".to_owned()),
                (12, "1.2e-05".to_owned()),
                (14, "7".to_owned()),
            ]
        );
        let all = read(report).figures;
        assert_eq!(all[4].reading.relation, context::Relation::Below);
        assert!((all[5].half_unit - 0.05e-5).abs() < 1e-20);
    }

    #[test]
    fn a_decimal_comma_and_percentages_are_read_as_written() {
        let all = read("R² 0,31 and 31% and 1,234,567 rows; 0.1, 0.2\r\n").figures;
        let got: Vec<(&str, bool)> = all.iter().map(|f| (f.written.as_str(), f.comma)).collect();
        assert_eq!(
            got,
            vec![
                ("0,31", true),
                ("31%", false),
                ("1,234,567", true),
                ("0.1", false),
                ("0.2", false)
            ]
        );
        assert!((all[1].half_unit - 0.5).abs() < 1e-12);
    }

    #[test]
    fn anything_else_a_reader_takes_for_a_number_is_a_doubt() {
        for text in [
            "R² is ٠.٩٩.",
            "RMSE 5.8pts.",
            "R² O.9O.",
            "R²0.90.",
            "ninety percent.",
            "RMSE 0.58\u{3164}.",
            "RMSE 0.58 ‰.",
            "RMSE 7.05².",
            "RMSE \u{202E}85.0.",
            "n = +3.",
            "In training terms, the h\u{435}ld-out R² is 0.986.",
        ] {
            let r = read(text);
            let doubted =
                !r.doubts.is_empty() || r.figures.iter().any(|f| !f.reading.doubts.is_empty());
            assert!(doubted, "{text}");
        }
        assert!(
            read("HC3 errors for x1, R² and R^2 are fine.")
                .doubts
                .is_empty()
        );
        assert!(read("The São Paulo café site.").doubts.is_empty());
    }
}
