//! The grammar: what the words of a figure's own sentence (for a table cell, its column's
//! header, its row's label and the cell) say the figure is. The claims file says what a figure
//! is; these words are what a reader takes it for, and the two must agree.
//!
//! The grammar is small and fixed, and anything outside it is a doubt, never a guess:
//!
//! - **Language**: every word of the sentence must be in the results language, a closed
//!   vocabulary: the grammar's own terms (the phrases of [`super::words`]), the project's names
//!   (the model's coefficients, the outcome, the split's group labels) and a few function
//!   words. A sentence holding any other word is not read at all: each of its figures names
//!   the words outside and stays `unverified`. The boundary is an allow-list because a list
//!   of words that change a figure's meaning (`squared`, `excluding`, `odds`, `per minute`)
//!   is never complete, while the words that leave it alone are few.
//! - **Sample**: the rows named anywhere in the sentence (training, held-out, all). A sentence
//!   naming two samples is ambiguous for every figure in it; naming none leaves a metric or a
//!   count unread.
//! - **Metric**: named in the words between the previous figure and this one (its own
//!   segment): exactly one of R², RMSE, MAE, or another metric (MSE, adjusted R², a
//!   correlation, ...) that the claim cannot be; the comparator's RMSE names the comparator
//!   there too.
//! - **Coefficient**: one of the model's coefficients by name (the intercept as `intercept`
//!   or `constant`; a predictor by its column name, `_` read as a space; a dummy as
//!   `column[T.level]`; the univariate model's slope also as `slope`), the one named last
//!   before the figure in the sentence; its own segment naming two is ambiguous.
//!   **Statistic**: `SE`/`standard error`, `t` or `z`, `p`/`p-value`, `CI`/`confidence
//!   interval` in its own segment (the figure after an interval's first bound, joined by `to`
//!   or a dash, is its second), else the estimate when the segment names the coefficient.
//!   **Level**: the percentage before `CI`. **Standard errors**: the kind the sentence names
//!   (`classical`, `HC0`–`HC3`, `robust`, `cluster-robust`), if any.
//! - **Doubts**: a comparison, negation, hedge or reference word (`not`, `unlike`, `vs`,
//!   `than`, `below`, `about`, `respectively`, `i.e.`, ...) or symbol (`<`, `≠`, `≈`, `±`,
//!   `→`, `+`) in its own segment or the words after it up to the next figure. The one
//!   relation understood is a p-value's bound, `p < 0.001`.

use super::format::{Metric, Sample};
use super::words::{
    COMPARATOR, DOUBT_WORDS, ERRORS, FUNCTION_WORDS, GRAMMAR_WORDS, INTERCEPT, KINDS, METRICS,
    OTHER_METRICS, OTHER_STATISTICS, ROW_NOUNS, SAMPLES,
};
pub(crate) use super::words::{ErrorsSaid, Kind};

/// How a figure is related to the quantity it states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// `= figure` (the ordinary case).
    Equal,
    /// `p < figure` or `p ≤ figure`.
    Below,
    /// `p > figure` or `p ≥ figure`.
    Above,
}

/// A token of a sentence, as the grammar ([`super::context`]) reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// A word: lower-cased, NFKC, every Unicode dash one `-`.
    Word(String),
    /// A symbol that says how a figure relates (`<`, `≠`, `~`, `±`, `=`, `–`).
    Sym(char),
    /// A figure (the index of it among the sentence's figures).
    Figure(usize),
    /// A percentage naming an interval's level (a fraction).
    Level(f64),
}

/// What a word names: nothing, one thing, or several (ambiguous).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Named<T> {
    /// Nothing.
    None,
    /// One thing.
    One(T),
    /// Several different things.
    Many,
}

impl<T: PartialEq + Clone> Named<T> {
    fn of(items: &[T]) -> Named<T> {
        let mut distinct: Vec<T> = Vec::new();
        for item in items {
            if !distinct.contains(item) {
                distinct.push(item.clone());
            }
        }
        match distinct.len() {
            0 => Named::None,
            1 => Named::One(distinct.swap_remove(0)),
            _ => Named::Many,
        }
    }
}

/// A metric a report names: one the claims file knows, or another's name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Said {
    /// R², RMSE or MAE.
    Known(Metric),
    /// Another metric (MSE, adjusted R², a correlation...).
    Other(&'static str),
}

/// The names of this project a sentence may use: its coefficients' and each group's (the
/// held-out site is a held-out sample).
#[derive(Debug, Clone, Default)]
pub(crate) struct Vocabulary {
    /// Each coefficient's names as the grammar reads words (lower case, NFKC), by its index
    /// among the model's coefficients.
    pub coefficients: Vec<Vec<String>>,
    /// Each group's label, lower-cased, and the side of the split it is on.
    pub groups: Vec<(String, Sample)>,
    /// The outcome's names as the grammar reads words (`_` also read as a space).
    pub outcome: Vec<String>,
}

impl Vocabulary {
    /// The outcome column's names as a report may write them.
    pub(crate) fn outcome_names(outcome: &str) -> Vec<String> {
        let words = super::text::words(outcome);
        let mut names = vec![words.clone(), words.replace('_', " ")];
        names.dedup();
        names
    }
}

/// What a reader takes one figure for.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    /// The samples the sentence names.
    pub samples: Named<Sample>,
    /// The metric its own segment names.
    pub metric: Named<Said>,
    /// Its own segment names the training-mean comparator.
    pub comparator: bool,
    /// The coefficient (its index among the model's).
    pub coefficient: Named<usize>,
    /// Which figure of a coefficient.
    pub kind: Named<Kind>,
    /// The interval level named before it.
    pub level: Named<u32>,
    /// It is said to be a count (`n = 9`, `9 rows`).
    pub counted: bool,
    /// A p-value's bound.
    pub relation: Relation,
    /// The kind of standard errors the sentence names.
    pub errors: Named<ErrorsSaid>,
    /// A statistic the check does not compute (one-sided, bootstrap...) is named in the
    /// sentence.
    pub other_statistic: Option<String>,
    /// Words or symbols near it that the grammar does not understand.
    pub doubts: Vec<String>,
    /// Words of its sentence outside the results language.
    pub outside: Vec<String>,
    /// A group label the sentence names that is one of several on its side of the split: the
    /// figure would be that subset's, which no claim binds.
    pub subset: Option<String>,
    /// Its own segment or the words after it (up to the next figure) name its sample; a sample
    /// named only elsewhere in the sentence may be another figure's.
    pub sample_near: bool,
}

/// Symbols a figure may stand next to without doubt (`=`, the table's `|`).
const PLAIN_SYMBOLS: &[char] = &['=', '|'];

/// Where `phrase` stands in `text` as words of its own.
fn mentions<'a>(text: &'a str, phrase: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
    text.match_indices(phrase).filter_map(move |(start, _)| {
        let end = start + phrase.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let alone = before.is_none_or(|c| c == ' ' || c == '#')
            && after.is_none_or(|c| c == ' ' || c == '#');
        alone.then_some((start, end))
    })
}

/// The words of some tokens as one text (a symbol or figure is `#`, which no phrase spans).
fn joined(toks: &[Tok]) -> String {
    toks.iter()
        .map(|t| match t {
            Tok::Word(w) => w.as_str(),
            _ => "#",
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The items of `table` named in `text`; a phrase inside a longer one counts once.
fn named<T: Clone>(text: &str, table: &[(&str, T)], excluded: &[&str]) -> Vec<(usize, T)> {
    let mut spans: Vec<(usize, usize)> = excluded
        .iter()
        .flat_map(|p| mentions(text, p).collect::<Vec<_>>())
        .collect();
    let mut by_length: Vec<&(&str, T)> = table.iter().collect();
    by_length.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    let mut out = Vec::new();
    for (phrase, item) in by_length {
        for (s, e) in mentions(text, phrase).collect::<Vec<_>>() {
            if !spans.iter().any(|&(xs, xe)| s < xe && xs < e) {
                spans.push((s, e));
                out.push((s, item.clone()));
            }
        }
    }
    out.sort_by_key(|(s, _)| *s);
    out
}

/// Whether some words mention any of `phrases`.
fn any(text: &str, phrases: &[&str]) -> Option<String> {
    phrases
        .iter()
        .find(|p| mentions(text, p).next().is_some())
        .map(|p| (*p).to_owned())
}

/// A p-value's bound at the end of a segment: `p <`.
fn bound(segment: &[Tok]) -> Option<Relation> {
    let [.., Tok::Word(w), Tok::Sym(c)] = segment else {
        return None;
    };
    if !matches!(w.as_str(), "p" | "p-value") {
        return None;
    }
    match c {
        '<' | '≤' | '⩽' => Some(Relation::Below),
        '>' | '≥' | '⩾' => Some(Relation::Above),
        _ => None,
    }
}

/// Reads every figure of a sentence (`toks`, a table cell's header and label first).
pub(crate) fn read(toks: &[Tok], vocabulary: &Vocabulary) -> Vec<Reading> {
    let names: Vec<(&str, usize)> = vocabulary
        .coefficients
        .iter()
        .enumerate()
        .flat_map(|(i, aliases)| aliases.iter().map(move |a| (a.as_str(), i)))
        .collect();
    let whole = joined(toks);
    let mut sample_words: Vec<(&str, Sample)> = SAMPLES.to_vec();
    sample_words.extend(
        vocabulary
            .groups
            .iter()
            .filter(|(g, _)| g.chars().count() >= 3)
            .map(|(g, s)| (g.as_str(), *s)),
    );
    let samples: Vec<Sample> = named(&whole, &sample_words, COMPARATOR)
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let samples = Named::of(&samples);
    let outside = outside(toks, vocabulary);
    let subset = subset(&whole, vocabulary);
    let other_statistic = any(&whole, OTHER_STATISTICS);
    let errors: Vec<ErrorsSaid> = named(&whole, ERRORS, &[])
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    let errors = Named::of(&errors);
    let levels: Vec<u32> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Level(l) => Some((l * 1000.0).round() as u32),
            _ => None,
        })
        .collect();
    let figures: Vec<usize> = toks
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t, Tok::Figure(_)))
        .map(|(i, _)| i)
        .collect();
    let mut out: Vec<Reading> = Vec::new();
    for (n, &at) in figures.iter().enumerate() {
        let from = if n == 0 { 0 } else { figures[n - 1] + 1 };
        let to = figures.get(n + 1).copied().unwrap_or(toks.len());
        let own = &toks[from..at];
        let after = &toks[at + 1..to];
        let relation = bound(own).unwrap_or(Relation::Equal);
        let previous = out.last().map(|r| r.kind.clone());
        let mut reading = Reading {
            samples: samples.clone(),
            metric: metric(own),
            comparator: any(&joined(own), COMPARATOR).is_some(),
            coefficient: coefficient(&toks[..at], own, &names),
            kind: Named::None,
            level: Named::None,
            counted: counted(own, after),
            relation,
            errors: errors.clone(),
            other_statistic: other_statistic.clone(),
            doubts: doubts(own, after, relation != Relation::Equal, n == 0),
            outside: outside.clone(),
            subset: subset.clone(),
            sample_near: [own, after]
                .iter()
                .any(|t| !named(&joined(t), &sample_words, COMPARATOR).is_empty()),
        };
        let names_own = matches!(coefficient(own, own, &names), Named::One(_));
        reading.kind = kind(own, previous, names_own);
        if matches!(reading.kind, Named::One(Kind::CiFirst | Kind::CiSecond)) {
            let before: Vec<u32> = toks[..at]
                .iter()
                .filter_map(|t| match t {
                    Tok::Level(l) => Some((l * 1000.0).round() as u32),
                    _ => None,
                })
                .collect();
            reading.level = match (Named::of(&levels), before.last()) {
                (Named::Many, _) => Named::Many,
                (_, Some(l)) => Named::One(*l),
                _ => Named::None,
            };
        }
        out.push(reading);
    }
    out
}

/// Where each token of `toks` stands in [`joined`]`(toks)`: (start, end) in bytes.
fn spans(toks: &[Tok]) -> Vec<(usize, usize)> {
    let mut at = 0;
    toks.iter()
        .map(|t| {
            let len = match t {
                Tok::Word(w) => w.len(),
                _ => 1,
            };
            let span = (at, at + len);
            at += len + 1;
            span
        })
        .collect()
}

/// The words of a sentence outside the results language, each once, in order: words that no
/// phrase of the grammar or name of the project covers and that are not function words.
fn outside(toks: &[Tok], vocabulary: &Vocabulary) -> Vec<String> {
    let text = joined(toks);
    let spans = spans(toks);
    let mut covered = vec![false; toks.len()];
    let group_words: Vec<String> = vocabulary
        .groups
        .iter()
        .map(|(g, _)| super::text::words(g))
        .collect();
    let phrases = SAMPLES
        .iter()
        .map(|(p, _)| *p)
        .chain(COMPARATOR.iter().copied())
        .chain(METRICS.iter().map(|(p, _)| *p))
        .chain(OTHER_METRICS.iter().copied())
        .chain(KINDS.iter().map(|(p, _)| *p))
        .chain(ERRORS.iter().map(|(p, _)| *p))
        .chain(INTERCEPT.iter().copied())
        .chain(vocabulary.coefficients.iter().flatten().map(String::as_str))
        .chain(vocabulary.groups.iter().map(|(g, _)| g.as_str()))
        .chain(group_words.iter().map(String::as_str))
        .chain(vocabulary.outcome.iter().map(String::as_str));
    for phrase in phrases {
        for (s, e) in mentions(&text, phrase) {
            for (i, &(ts, te)) in spans.iter().enumerate() {
                if s <= ts && te <= e {
                    covered[i] = true;
                }
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (t, covered) in toks.iter().zip(covered) {
        let Tok::Word(w) = t else { continue };
        let known = covered
            || w == "?"
            || FUNCTION_WORDS.contains(&w.as_str())
            || GRAMMAR_WORDS.contains(&w.as_str())
            || ROW_NOUNS.contains(&w.as_str());
        if !known && !out.contains(w) {
            out.push(w.clone());
        }
    }
    out
}

/// A group label the sentence names that is one of several on its side of the split.
fn subset(whole: &str, vocabulary: &Vocabulary) -> Option<String> {
    vocabulary.groups.iter().find_map(|(label, side)| {
        let several = vocabulary.groups.iter().filter(|(_, s)| s == side).count() > 1;
        (several && mentions(whole, label).next().is_some()).then(|| label.clone())
    })
}

fn metric(own: &[Tok]) -> Named<Said> {
    let text = joined(own);
    let mut found: Vec<Said> = named(&text, METRICS, &[])
        .into_iter()
        .map(|(_, m)| Said::Known(m))
        .collect();
    let known: Vec<(usize, usize)> = METRICS
        .iter()
        .flat_map(|(p, _)| mentions(&text, p).collect::<Vec<_>>())
        .collect();
    for phrase in OTHER_METRICS {
        for (s, e) in mentions(&text, phrase) {
            if !known.iter().any(|&(ks, ke)| s < ke && ks < e) {
                found.push(Said::Other(phrase));
            }
        }
    }
    Named::of(&found)
}

/// The coefficient named last before the figure; its own segment naming two is ambiguous.
/// Words that name a statistic or a metric (`p value`, `r2`) never name a coefficient.
fn coefficient(before: &[Tok], own: &[Tok], names: &[(&str, usize)]) -> Named<usize> {
    let mut excluded: Vec<&str> = KINDS.iter().map(|(p, _)| *p).collect();
    excluded.extend(METRICS.iter().map(|(p, _)| *p));
    let in_own: Vec<usize> = named(&joined(own), names, &excluded)
        .into_iter()
        .map(|(_, i)| i)
        .collect();
    if let Named::Many = Named::of(&in_own) {
        return Named::Many;
    }
    named(&joined(before), names, &excluded)
        .last()
        .map_or(Named::None, |(_, i)| Named::One(*i))
}

/// The names the univariate model's two coefficients go by: the intercept (index 0) and the
/// slope (index 1, also the predictor's name).
pub(crate) fn line_coefficients(predictor: &str) -> Vec<Vec<String>> {
    let lower = predictor.to_lowercase();
    vec![
        INTERCEPT.iter().map(|w| (*w).to_owned()).collect(),
        vec!["slope".into(), lower.replace('_', " "), lower],
    ]
}

/// The names a multivariable model's coefficient goes by: `intercept` (or `constant`), or its
/// name as the grammar reads words (`words`: the name cut into words as a report's text is),
/// also with `_` read as a space.
pub(crate) fn model_coefficient(name: &str, words: &str) -> Vec<String> {
    if name == "intercept" {
        return INTERCEPT.iter().map(|w| (*w).to_owned()).collect();
    }
    let mut aliases = vec![words.to_owned(), words.replace('_', " ")];
    aliases.dedup();
    aliases
}

fn kind(own: &[Tok], previous: Option<Named<Kind>>, names_coefficient: bool) -> Named<Kind> {
    let text = joined(own);
    let kinds: Vec<Kind> = named(&text, KINDS, &[])
        .into_iter()
        .map(|(_, k)| k)
        .collect();
    let found = Named::of(&kinds);
    if found != Named::None {
        return found;
    }
    let joiner = own.iter().all(|t| match t {
        Tok::Word(w) => matches!(w.as_str(), "to" | "and" | "-"),
        Tok::Sym(c) => matches!(c, '–' | '—'),
        _ => false,
    });
    if joiner && previous == Some(Named::One(Kind::CiFirst)) {
        return Named::One(Kind::CiSecond);
    }
    let estimate =
        any(&text, &["estimate", "estimated", "coefficient"]).is_some() || names_coefficient;
    if estimate {
        Named::One(Kind::Estimate)
    } else {
        Named::None
    }
}

fn counted(own: &[Tok], after: &[Tok]) -> bool {
    let last_word = own.iter().rev().find(|t| !matches!(t, Tok::Sym('=')));
    let nouns = ROW_NOUNS;
    // A table cell under a column headed `n` or `rows`.
    let header: Vec<&Tok> = own.iter().take_while(|t| **t != Tok::Sym('|')).collect();
    let in_table = own.contains(&Tok::Sym('|'));
    let headed = in_table
        && header
            .iter()
            .any(|t| matches!(t, Tok::Word(w) if w == "n" || nouns.contains(&w.as_str())));
    headed
        || matches!(last_word, Some(Tok::Word(w)) if w == "n")
        || after
            .iter()
            .take(3)
            .any(|t| matches!(t, Tok::Word(w) if nouns.contains(&w.as_str())))
}

fn doubts(own: &[Tok], after: &[Tok], bounded: bool, first: bool) -> Vec<String> {
    let own = if bounded {
        &own[..own.len().saturating_sub(1)]
    } else {
        own
    };
    // The next figure's own `p <` is not this figure's.
    let after = if bound(after).is_some() {
        &after[..after.len() - 1]
    } else {
        after
    };
    let mut out = Vec::new();
    for toks in [own, after] {
        if let Some(word) = any(&joined(toks), DOUBT_WORDS) {
            out.push(format!("the word {word:?} stands next to it"));
        }
        let is_range = |c: &char| matches!(c, '–' | '—');
        for t in toks {
            if let Tok::Sym(c) = t
                && !PLAIN_SYMBOLS.contains(c)
                && !is_range(c)
            {
                out.push(format!("the symbol {c:?} stands next to it"));
            }
        }
    }
    // A dash right before a figure that follows no figure reads as a minus sign.
    let dash = match own {
        [.., Tok::Sym(c)] if matches!(c, '–' | '—') => Some(c.to_string()),
        [.., Tok::Word(w)] if w == "-" => Some(w.clone()),
        _ => None,
    };
    if let Some(dash) = dash {
        let follows_figure = own.len() == 1 && !first;
        if !follows_figure {
            out.push(format!(
                "the dash {dash:?} before it may be read as a minus sign"
            ));
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(words: &str) -> Vec<Tok> {
        words
            .split(' ')
            .map(|w| match w {
                "#" => Tok::Figure(0),
                "<" | "=" | "–" => Tok::Sym(w.chars().next().unwrap_or('=')),
                "95%" => Tok::Level(0.95),
                _ => Tok::Word(w.to_owned()),
            })
            .collect()
    }

    fn read_with(toks: &[Tok], predictor: Option<&str>) -> Vec<Reading> {
        read(
            toks,
            &Vocabulary {
                coefficients: predictor.map(line_coefficients).unwrap_or_default(),
                groups: Vec::new(),
                outcome: Vec::new(),
            },
        )
    }

    #[test]
    fn the_grammar_names_sample_metric_coefficient_and_statistic() {
        let r = read_with(&toks("the held-out rmse is # and mae #"), None);
        assert_eq!(r[0].samples, Named::One(Sample::HeldOut));
        assert_eq!(r[0].metric, Named::One(Said::Known(Metric::Rmse)));
        assert_eq!(r[1].metric, Named::One(Said::Known(Metric::Mae)));
        let r = read_with(&toks("the slope is # se # 95% ci # to # p < #"), Some("x"));
        let kinds: Vec<Named<Kind>> = r.iter().map(|r| r.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![
                Named::One(Kind::Estimate),
                Named::One(Kind::StdError),
                Named::One(Kind::CiFirst),
                Named::One(Kind::CiSecond),
                Named::One(Kind::PValue)
            ]
        );
        assert!(r.iter().all(|r| r.coefficient == Named::One(1)));
        assert_eq!(r[2].level, Named::One(950));
        assert_eq!(r[4].relation, Relation::Below);
        assert!(r.iter().all(|r| r.doubts.is_empty()), "{r:?}");
    }

    #[test]
    fn words_outside_the_language_are_named_and_phrase_parts_are_not_words() {
        let r = read_with(&toks("the held-out rmse is #"), None);
        assert!(r[0].outside.is_empty(), "{:?}", r[0].outside);
        // `mean` is a word only inside `root mean squared error` or `mean absolute error`.
        let r = read_with(&toks("the mean of x is #"), Some("x"));
        assert_eq!(r[0].outside, vec!["mean".to_owned()]);
        let r = read_with(&toks("the training rmse squared is #"), None);
        assert_eq!(r[0].outside, vec!["squared".to_owned()]);
        let r = read_with(&toks("the root mean squared error on new firms is #"), None);
        assert_eq!(r[0].outside, vec!["new".to_owned(), "firms".to_owned()]);
    }

    #[test]
    fn a_group_among_several_names_a_subset() {
        let vocabulary = Vocabulary {
            coefficients: Vec::new(),
            groups: vec![
                ("chrysler".into(), Sample::HeldOut),
                ("westinghouse".into(), Sample::HeldOut),
                ("ibm".into(), Sample::Training),
            ],
            outcome: Vec::new(),
        };
        let r = read(&toks("the rmse for chrysler is #"), &vocabulary);
        assert_eq!(r[0].subset.as_deref(), Some("chrysler"));
        assert!(r[0].outside.is_empty());
        let r = read(&toks("the rmse for ibm is #"), &vocabulary);
        assert_eq!(r[0].subset, None);
        assert_eq!(r[0].samples, Named::One(Sample::Training));
    }

    #[test]
    fn two_samples_or_a_comparison_word_leave_a_figure_unread() {
        let r = read_with(
            &toks("on the held-out site which had no training rows r2 is #"),
            None,
        );
        assert_eq!(r[0].samples, Named::Many);
        assert!(!r[0].doubts.is_empty());
        let r = read_with(&toks("the mae unlike the rmse is #"), None);
        assert_eq!(r[0].metric, Named::Many);
        let r = read_with(&toks("the intercept is # and the slope is #"), Some("x"));
        assert_eq!(r[0].coefficient, Named::One(0));
        assert_eq!(r[1].coefficient, Named::One(1));
    }
}
