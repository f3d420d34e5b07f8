//! Whether the words around a figure ([`super::context`]) say what its claim says: the same
//! sample, metric, coefficient, statistic and interval level. Words naming something else fail;
//! words naming nothing, several things, or something the grammar does not understand leave the
//! figure `unverified`, saying what to write. Never a guess, never a pass by default.

use super::context::{ErrorsSaid, Kind, Named, Reading, Relation, Said};
use super::format::{self, Claim, Quantity, Sample};
use crate::check::Status;

/// What the words decide, if anything short of a pass.
pub(crate) type Verdict = Option<(Status, String)>;

fn unverified(why: impl Into<String>) -> Verdict {
    Some((Status::Unverified, why.into()))
}

fn failed(why: impl Into<String>) -> Verdict {
    Some((Status::Failed, why.into()))
}

/// What the model says a claim's words must agree with.
pub(crate) struct Bound<'a> {
    /// The index of the claim's coefficient among the model's (for a coefficient's claim).
    pub coefficient: Option<usize>,
    /// Each coefficient's name, by index.
    pub names: &'a [String],
    /// The standard errors the model declares (`classical`, `hc0`…`hc3`, `cluster`).
    pub std_errors: &'a str,
}

/// Judges a claim by what a reader takes its figure for.
pub(crate) fn verdict(claim: &Claim, reading: &Reading, bound: &Bound<'_>) -> Verdict {
    let q = claim.quantity;
    if !reading.outside.is_empty() {
        return unverified(format!(
            "its sentence holds words outside the results language ({}), which may change what \
             the figure is, so it is not read; state the figure with only the language's words \
             (the sample, the metric or the coefficient's name and statistic, the SE kind and \
             level, a row noun, and a, the, of, on, in, for, is, was, and; see \
             docs/workflow-format.md, \"The results language\"), for example `The held-out \
             RMSE is 25.26.` or `The estimate for value is 0.1149 (SE 0.0167).`",
            reading
                .outside
                .iter()
                .map(|w| format!("{w:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(group) = &reading.subset {
        return unverified(format!(
            "the sentence names the group {group:?}, one of several on its side of the split, so \
             the figure reads as that subset's, which no claim binds; name the whole sample \
             (training, held-out, all) instead"
        ));
    }
    if reading.relation != Relation::Equal && q != Quantity::PValue {
        return unverified(
            "a bound is not a figure: only a p-value may be stated as `p < x`; state the value",
        );
    }
    if !reading.doubts.is_empty() {
        return unverified(format!(
            "{}, which the report-claims grammar does not read (see docs/workflow-format.md, \
             \"Report claims\"); state the figure plainly in a sentence of its own",
            reading.doubts.join("; ")
        ));
    }
    if q.is_coefficient() {
        return coefficient(claim, reading, bound);
    }
    // A metric or count is not an interval bound, standard error, t or p.
    if matches!(reading.kind, Named::Many)
        || matches!(&reading.kind, Named::One(k) if *k != Kind::Estimate)
    {
        return unverified(format!(
            "the words before this figure name a coefficient's statistic (SE, t, p, CI), not \
             the {} its claim binds",
            q.name()
        ));
    }
    let counted = if q == Quantity::N && !reading.counted {
        unverified("say what the figure counts: `n = 9` or `9 training rows`")
    } else {
        None
    };
    // A definite contradiction is named before an ambiguity.
    let found: Vec<(Status, String)> = [sample(claim, reading), metric(claim, reading), counted]
        .into_iter()
        .flatten()
        .collect();
    let first_failure = found.iter().position(|(s, _)| *s == Status::Failed);
    found.into_iter().nth(first_failure.unwrap_or(0))
}

fn sample(claim: &Claim, reading: &Reading) -> Verdict {
    match (&reading.samples, claim.sample) {
        (Named::None, _) => unverified(
            "the sentence does not say on which rows (training, held-out, all) this figure is \
             computed; name them in it",
        ),
        (Named::Many, _) => unverified(
            "the sentence names more than one sample (training, held-out, all), so a reader \
             cannot tell which this figure is on; give each sample its own sentence",
        ),
        (Named::One(said), Some(bound)) if *said != bound && reading.sample_near => {
            failed(format!(
                "the report presents this figure as {}, but its claim binds it to the {} rows",
                said.name(),
                bound.name()
            ))
        }
        (Named::One(said), Some(bound)) if *said != bound => unverified(format!(
            "the sentence names the {} rows, but not next to this figure, and its claim binds \
             it to the {} rows; name its own sample right before or after it",
            said.name(),
            bound.name()
        )),
        _ => None,
    }
}

fn metric(claim: &Claim, reading: &Reading) -> Verdict {
    let expected = claim.quantity.metric()?;
    match &reading.metric {
        Named::None => {
            return unverified(format!(
                "no metric is named right before this figure; write its name ({}) before it",
                claim.quantity.name()
            ));
        }
        Named::Many => {
            return unverified(
                "more than one metric is named before this figure, so a reader cannot tell \
                 which it is; name one",
            );
        }
        Named::One(Said::Other(name)) => {
            return failed(format!(
                "the report names this figure {name:?}, but its claim binds it to {}",
                claim.quantity.name()
            ));
        }
        Named::One(Said::Known(m)) if *m != expected => {
            return failed(format!(
                "the report names this figure {}, but its claim binds it to {}",
                format::metric_name(*m),
                claim.quantity.name()
            ));
        }
        Named::One(Said::Known(_)) => {}
    }
    let comparator = claim.quantity == Quantity::ComparatorRmse;
    if comparator && !reading.comparator {
        return failed(
            "the report presents this figure as the model's RMSE, but its claim binds it to the \
             training-mean comparator's",
        );
    }
    if !comparator && reading.comparator {
        return failed(format!(
            "the report presents this figure as the training-mean comparator's, but its claim \
             binds it to the model's {}",
            claim.quantity.name()
        ));
    }
    None
}

fn kind_of(q: Quantity) -> Kind {
    match q {
        Quantity::StdError => Kind::StdError,
        Quantity::TValue => Kind::TValue,
        Quantity::PValue => Kind::PValue,
        Quantity::CiLower => Kind::CiFirst,
        Quantity::CiUpper => Kind::CiSecond,
        _ => Kind::Estimate,
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Estimate => "an estimate",
        Kind::StdError => "a standard error",
        Kind::TValue => "a t statistic",
        Kind::PValue => "a p-value",
        Kind::CiFirst => "an interval's first (lower) bound",
        Kind::CiSecond => "an interval's second (upper) bound",
    }
}

fn coefficient(claim: &Claim, reading: &Reading, bound: &Bound<'_>) -> Verdict {
    if reading.metric != Named::None {
        return unverified(
            "a metric or another statistic of the data (a mean, a variance, a maximum, R², \
             RMSE) is named right before this figure, but its claim binds a coefficient's \
             figure; name only the coefficient and its statistic",
        );
    }
    match &reading.samples {
        Named::None | Named::One(Sample::Training) => {}
        Named::One(s) => {
            return unverified(format!(
                "the sentence speaks of the {} rows, but coefficients are estimated on the \
                 training rows; give the coefficient a sentence of its own",
                s.name()
            ));
        }
        Named::Many => {
            return unverified(
                "the sentence names more than one sample, but coefficients are estimated on the \
                 training rows; give the coefficient a sentence of its own",
            );
        }
    }
    match (&reading.coefficient, bound.coefficient) {
        (Named::None, _) => {
            return unverified(
                "no coefficient (the intercept or a predictor's name) is named before this \
                 figure in its sentence; name it",
            );
        }
        (Named::Many, _) => {
            return unverified(
                "two coefficients are named right before this figure, so a reader cannot tell \
                 whose it is; give each its own clause",
            );
        }
        (Named::One(said), Some(index)) if *said != index => {
            let name = |i: usize| bound.names.get(i).map_or("?", String::as_str);
            return failed(format!(
                "the report presents this figure as {:?}'s, but its claim binds it to {:?}'s",
                name(*said),
                name(index)
            ));
        }
        _ => {}
    }
    let expected = kind_of(claim.quantity);
    match &reading.kind {
        Named::None => {
            return unverified(format!(
                "the words before this figure do not say which of the coefficient's figures it \
                 is; write {} before it (`SE`, `t`, `p`, `95% CI a to b`)",
                kind_name(expected)
            ));
        }
        Named::Many => {
            return unverified("several statistics are named right before this figure; name one");
        }
        Named::One(k) if *k != expected => {
            return failed(format!(
                "the report presents this figure as {}, but its claim binds it to {}",
                kind_name(*k),
                kind_name(expected)
            ));
        }
        Named::One(_) => {}
    }
    if expected != Kind::Estimate {
        if let Some(word) = &reading.other_statistic {
            return unverified(format!(
                "the sentence names {word:?}: the check computes the model's declared \
                 standard errors and two-sided p-values and intervals only"
            ));
        }
        if let Some(found) = errors(reading, bound.std_errors) {
            return Some(found);
        }
    }
    if matches!(expected, Kind::CiFirst | Kind::CiSecond) {
        let claimed = (claim.level.unwrap_or(0.95) * 1000.0).round() as u32;
        return match reading.level {
            Named::None => unverified(
                "the interval's level is not written before it; write it (`95% CI a to b`)",
            ),
            Named::Many => unverified("the sentence names more than one interval level"),
            Named::One(l) if l != claimed => failed(format!(
                "the report states a {}% interval, but its claim binds a {}% one",
                f64::from(l) / 10.0,
                f64::from(claimed) / 10.0
            )),
            Named::One(_) => None,
        };
    }
    None
}

/// Whether the kind of standard errors the sentence names is the model's (`declared`). A
/// reader takes an unqualified SE for a classical one, so any other kind must be named.
fn errors(reading: &Reading, declared: &str) -> Verdict {
    let words = match declared {
        "cluster" => "cluster-robust",
        "classical" => "classical",
        other => other,
    };
    match reading.errors {
        Named::None if declared == "classical" => None,
        Named::None => unverified(format!(
            "the sentence does not say these are {words} standard errors, as the model \
             declares, and a reader takes an unqualified SE for a classical one; name them in \
             it (`{words} SE 0.12`)"
        )),
        Named::Many => unverified(
            "the sentence names more than one kind of standard errors; give each its own sentence",
        ),
        Named::One(said) => {
            let agrees = match said {
                ErrorsSaid::Classical => declared == "classical",
                ErrorsSaid::Robust => declared.starts_with("hc"),
                ErrorsSaid::Hc(k) => declared == format!("hc{k}"),
                ErrorsSaid::Cluster => declared == "cluster",
            };
            if agrees {
                None
            } else if said == ErrorsSaid::Robust && declared == "cluster" {
                unverified(
                    "\"robust\" alone does not say the errors are clustered, as the model \
                     declares; write cluster-robust",
                )
            } else {
                failed(format!(
                    "the report presents this figure as from {} standard errors, but the \
                     model's are {words}",
                    said.name()
                ))
            }
        }
    }
}
