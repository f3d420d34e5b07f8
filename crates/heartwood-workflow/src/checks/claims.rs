//! `report_claims`: what a written report says about held-out performance must be what the
//! held-out computation gives.
//!
//! A report can be long, fluent and wrong in the one way that matters: stating the training
//! fit as if it were held-out performance. This check reads every sentence that speaks of
//! held-out (out-of-sample, test, validation) data and names a metric (R² or RMSE) with a
//! number after it, and compares that number with the figure recomputed from the table, the
//! split and the model (the `univariate_ols` computation, not the model report's own words).
//! A number agrees when it is the recomputed figure rounded to the digits written (a
//! percentage for R² is read as such). It proves only that the held-out figures the report
//! states are right; it cannot read claims made in other words, and says nothing of prose.

use super::Files;
use crate::check::{CheckResult, Status};

/// A metric a sentence can claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    RSquared,
    Rmse,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::RSquared => "R²",
            Metric::Rmse => "RMSE",
        }
    }
}

/// Words that put a sentence about held-out data.
const HELD_OUT: [&str; 10] = [
    "held-out",
    "held out",
    "heldout",
    "holdout",
    "hold-out",
    "out-of-sample",
    "out of sample",
    "test set",
    "test data",
    "validation",
];

/// How each metric is written, longest first so `r-squared` is not read as `r`.
const METRIC_WORDS: [(&str, Metric); 11] = [
    ("coefficient of determination", Metric::RSquared),
    ("root mean squared error", Metric::Rmse),
    ("root-mean-square error", Metric::Rmse),
    ("root mean square error", Metric::Rmse),
    ("r-squared", Metric::RSquared),
    ("r squared", Metric::RSquared),
    ("rmse", Metric::Rmse),
    ("r^2", Metric::RSquared),
    ("r²", Metric::RSquared),
    ("r2", Metric::RSquared),
    ("variance explained", Metric::RSquared),
];

/// One number a sentence states for a metric.
#[derive(Debug, PartialEq)]
struct Claim {
    metric: Metric,
    /// The value as stated (a percentage already divided by 100).
    value: f64,
    /// Half a unit of the last digit written: how far rounding to those digits can move it.
    half_unit: f64,
    /// The number as written.
    written: String,
    sentence: String,
}

/// `report_claims`: reads report, table, dictionary, split, model, plan.
pub fn report_claims(files: Files<'_>, result: &mut CheckResult) {
    let Some(report) = files.first() else {
        return result.fail("the check needs the report");
    };
    let Ok(text) = std::str::from_utf8(report) else {
        return result.fail("the report is not UTF-8 text");
    };
    let claims = held_out_claims(text);
    if claims.is_empty() {
        return;
    }
    let mut model = CheckResult::new("univariate_ols");
    super::univariate_ols(files.get(1..).unwrap_or_default(), &mut model);
    if model.status != Status::Passed {
        return result.mark_unverified(format!(
            "the report states held-out figures, but the model they describe does not check ({}), \
             so there is no held-out computation to compare them with",
            model.reasons.join("; ")
        ));
    }
    let figure = |name: &str| model.figures[name].as_f64();
    for claim in claims {
        let held_out: Vec<f64> = match claim.metric {
            Metric::Rmse => figure("held_out_rmse").into_iter().collect(),
            Metric::RSquared => ["held_out_r2", "held_out_r2_own_mean"]
                .into_iter()
                .filter_map(figure)
                .collect(),
        };
        if held_out.iter().any(|&v| agrees(&claim, v)) {
            continue;
        }
        let training = match claim.metric {
            Metric::Rmse => figure("residual_scale"),
            Metric::RSquared => figure("training_r2"),
        };
        let as_training = if training.is_some_and(|v| agrees(&claim, v)) {
            " (that is the training-set figure, stated as held-out performance)"
        } else {
            ""
        };
        let computed: Vec<String> = held_out.iter().map(|v| format!("{v:.4}")).collect();
        result.fail(format!(
            "the report states held-out {} = {}{as_training}, but the held-out computation \
             gives {}: “{}”",
            claim.metric.name(),
            claim.written,
            if computed.is_empty() {
                "no such figure".to_owned()
            } else {
                computed.join(" or ")
            },
            claim.sentence
        ));
    }
}

/// Whether `claim` is `value` rounded to the digits the claim writes.
fn agrees(claim: &Claim, value: f64) -> bool {
    (claim.value - value).abs() <= claim.half_unit * (1.0 + 1e-9) + 1e-12 * value.abs()
}

/// Every metric-and-number claim in a sentence that speaks of held-out data.
fn held_out_claims(text: &str) -> Vec<Claim> {
    let mut claims = Vec::new();
    for sentence in sentences(text) {
        let lower = sentence.to_lowercase();
        if !HELD_OUT.iter().any(|w| lower.contains(w)) {
            continue;
        }
        let (mut at, mut since) = (0, 0);
        while let Some((start, word, metric)) = next_metric(&lower, at) {
            at = start + word.len();
            let Some((value, half_unit, written, len)) = number_after(&lower[at..], metric) else {
                continue;
            };
            // "Training R² was 0.62, held-out R² 0.31": a figure introduced as the training
            // one is not a held-out claim, even in a sentence that has one.
            let said = &lower[since..at + len];
            since = at + len;
            if said.contains("train") && !HELD_OUT.iter().any(|w| said.contains(w)) {
                continue;
            }
            claims.push(Claim {
                metric,
                value,
                half_unit,
                written,
                sentence: sentence.trim().to_owned(),
            });
        }
    }
    claims
}

/// The report's sentences: split at line ends and at `.`, `;`, `!` or `?` followed by a space
/// (a decimal point is followed by a digit, so numbers stay whole).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let ends = matches!(b, b'.' | b';' | b'!' | b'?')
                && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace);
            if ends {
                out.push(&line[start..=i]);
                start = i + 1;
            }
        }
        if start < line.len() {
            out.push(&line[start..]);
        }
    }
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The next metric word at or after `from` that stands as a word of its own.
fn next_metric(lower: &str, from: usize) -> Option<(usize, &'static str, Metric)> {
    METRIC_WORDS
        .iter()
        .filter_map(|&(word, metric)| {
            let mut search = from;
            while let Some(found) = lower.get(search..)?.find(word) {
                let start = search + found;
                let end = start + word.len();
                let before = lower[..start].chars().next_back();
                let after = lower[end..].chars().next();
                let alone = before.is_none_or(|c| !c.is_alphanumeric())
                    && after.is_none_or(|c| !c.is_alphanumeric());
                if alone {
                    return Some((start, word, metric));
                }
                search = end;
            }
            None
        })
        .min_by_key(|&(start, word, _)| (start, std::cmp::Reverse(word.len())))
}

/// The first number in `rest` (within the sentence), as value, half a unit of its last digit,
/// as written, and where it ends in `rest`. For R², a number followed by `%` is a percentage.
fn number_after(rest: &str, metric: Metric) -> Option<(f64, f64, String, usize)> {
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    // A minus sign directly before the digits belongs to the number.
    let signed = rest[..start].ends_with('-') || rest[..start].ends_with('−');
    let digits: String = rest[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let digits = digits.trim_end_matches('.');
    let mut value: f64 = digits.parse().ok()?;
    let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len());
    let mut half_unit = 0.5 * 10f64.powi(-i32::try_from(decimals).unwrap_or(i32::MAX));
    let percent = rest[start + digits.len()..].trim_start().starts_with('%');
    let mut written = digits.to_owned();
    if signed {
        value = -value;
        written.insert(0, '-');
    }
    if percent && metric == Metric::RSquared {
        value /= 100.0;
        half_unit /= 100.0;
        written.push('%');
    }
    let end = start + digits.len() + usize::from(percent && metric == Metric::RSquared);
    Some((value, half_unit, written, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_read_only_from_sentences_about_held_out_data() {
        let text = "Training R² was 0.62. On the held-out site, R² = 0.31 and RMSE 4.2; \
                    the out-of-sample r-squared is 31%. Training R² 0.62 against held-out R² \
                    0.305.";
        let claims = held_out_claims(text);
        let read: Vec<(Metric, f64)> = claims.iter().map(|c| (c.metric, c.value)).collect();
        assert_eq!(
            read,
            vec![
                (Metric::RSquared, 0.31),
                (Metric::Rmse, 4.2),
                (Metric::RSquared, 0.31),
                (Metric::RSquared, 0.305)
            ]
        );
        assert!((claims[2].half_unit - 0.005).abs() < 1e-12);
    }

    #[test]
    fn a_number_agrees_when_it_is_the_figure_rounded_to_its_digits() {
        let claim = |value, half_unit| Claim {
            metric: Metric::Rmse,
            value,
            half_unit,
            written: String::new(),
            sentence: String::new(),
        };
        assert!(agrees(&claim(4.2, 0.05), 4.24));
        assert!(!agrees(&claim(4.2, 0.05), 4.26));
        assert!(agrees(&claim(4.237, 0.0005), 4.2374));
        assert!(!agrees(&claim(4.237, 0.0005), 4.2376));
    }

    #[test]
    fn metric_names_inside_other_words_are_not_claims() {
        assert_eq!(next_metric("the hr2 unit on held-out data", 0), None);
        assert_eq!(
            next_metric("held-out r2 of 0.4", 0).map(|m| m.2),
            Some(Metric::RSquared)
        );
    }
}
