//! What the words around a figure say it is: which rows (training, held-out, all) and which fit
//! metric (R², RMSE, MAE). The claims file says what a figure is; these words are what a reader
//! takes it for, and the two must not disagree: a training R² stated in a sentence about
//! held-out data, or an MAE under the name RMSE, misleads whatever the claims file says.
//!
//! A figure is attributed the mention nearest to it in its sentence (for a table cell, in its
//! column's header and row label, the row label first); a mention before the figure wins a tie.

use super::format::{Metric, Sample};

/// How each sample is written (after folding: every dash is `-`).
const SAMPLES: &[(&str, Sample)] = &[
    ("held-out", Sample::HeldOut),
    ("held out", Sample::HeldOut),
    ("heldout", Sample::HeldOut),
    ("holdout", Sample::HeldOut),
    ("hold-out", Sample::HeldOut),
    ("out-of-sample", Sample::HeldOut),
    ("out of sample", Sample::HeldOut),
    ("test set", Sample::HeldOut),
    ("test data", Sample::HeldOut),
    ("test site", Sample::HeldOut),
    ("test group", Sample::HeldOut),
    ("test partition", Sample::HeldOut),
    ("test rows", Sample::HeldOut),
    ("validation", Sample::HeldOut),
    ("training", Sample::Training),
    ("train set", Sample::Training),
    ("train data", Sample::Training),
    ("train partition", Sample::Training),
    ("train rows", Sample::Training),
    ("in-sample", Sample::Training),
    ("in sample", Sample::Training),
    ("all rows", Sample::All),
    ("all observations", Sample::All),
    ("all data", Sample::All),
    ("full sample", Sample::All),
    ("whole sample", Sample::All),
    ("entire sample", Sample::All),
    ("full data", Sample::All),
    ("pooled", Sample::All),
];

/// Phrases that contain a sample's word without naming the rows a figure is on: the
/// comparator predicts the training mean for held-out rows.
const NOT_SAMPLES: &[&str] = &["training mean", "training-mean"];

/// How each metric is written (after NFKC: `R²` is `r2`).
const METRICS: &[(&str, Metric)] = &[
    ("coefficient of determination", Metric::RSquared),
    ("variance explained", Metric::RSquared),
    ("of the variance", Metric::RSquared),
    ("r-squared", Metric::RSquared),
    ("r squared", Metric::RSquared),
    ("r^2", Metric::RSquared),
    ("r2", Metric::RSquared),
    ("root mean squared error", Metric::Rmse),
    ("root-mean-squared error", Metric::Rmse),
    ("root mean square error", Metric::Rmse),
    ("root-mean-square error", Metric::Rmse),
    ("rmse", Metric::Rmse),
    ("mean absolute error", Metric::Mae),
    ("mae", Metric::Mae),
];

/// The sample the words nearest `at` in `context` name, if any.
pub(crate) fn sample(context: &str, at: usize) -> Option<Sample> {
    let excluded: Vec<(usize, usize)> = NOT_SAMPLES
        .iter()
        .flat_map(|p| mentions(context, p))
        .collect();
    let found = SAMPLES.iter().flat_map(|&(word, sample)| {
        mentions(context, word)
            .filter(|&(s, e)| !excluded.iter().any(|&(xs, xe)| s < xe && xs < e))
            .map(move |span| (span, sample))
            .collect::<Vec<_>>()
    });
    nearest(context, found, at)
}

/// The metric the words nearest before `at` name, or else the nearest after.
pub(crate) fn metric(context: &str, at: usize) -> Option<Metric> {
    let found: Vec<((usize, usize), Metric)> = METRICS
        .iter()
        .flat_map(|&(word, metric)| mentions(context, word).map(move |span| (span, metric)))
        .collect();
    let before = found
        .iter()
        .filter(|((_, end), _)| *end <= at)
        .max_by_key(|((_, end), _)| *end)
        .map(|(_, m)| *m);
    before.or_else(|| {
        found
            .iter()
            .filter(|((start, _), _)| *start >= at)
            .min_by_key(|((start, _), _)| *start)
            .map(|(_, m)| *m)
    })
}

/// The item whose span is nearest `at` within its clause (no `,`, `;`, `:` or bracket
/// between), else nearest at all; before wins a tie.
fn nearest<T: Copy>(
    context: &str,
    found: impl Iterator<Item = ((usize, usize), T)>,
    at: usize,
) -> Option<T> {
    let breaks = |from: usize, to: usize| {
        context
            .get(from.min(to)..to.max(from))
            .is_some_and(|between| between.contains([',', ';', ':', '(', ')', '[', ']']))
    };
    found
        .map(|((start, end), item)| {
            let (distance, after) = if end <= at {
                (at - end, false)
            } else {
                (start.saturating_sub(at), true)
            };
            let crossed = if after {
                breaks(at, start)
            } else {
                breaks(end, at)
            };
            ((crossed, distance, after), item)
        })
        .min_by_key(|(key, _)| *key)
        .map(|(_, item)| item)
}

/// Where `word` stands in `text` as words of its own.
fn mentions<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
    text.match_indices(word).filter_map(move |(start, _)| {
        let end = start + word.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let alone = before.is_none_or(|c| !c.is_alphanumeric())
            && after.is_none_or(|c| !c.is_alphanumeric());
        alone.then_some((start, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_mention_names_the_sample() {
        let text = "training r2 was 0.62 and held-out r2 0.31";
        assert_eq!(
            sample(text, text.find("0.62").unwrap_or(0)),
            Some(Sample::Training)
        );
        assert_eq!(
            sample(text, text.find("0.31").unwrap_or(0)),
            Some(Sample::HeldOut)
        );
        let text = "0.62 on training data, 0.31 on held-out data";
        assert_eq!(
            sample(text, text.find("0.31").unwrap_or(0)),
            Some(Sample::HeldOut)
        );
        let text = "the training-mean comparator rmse 9.4";
        assert_eq!(sample(text, text.len()), None);
    }

    #[test]
    fn the_metric_named_before_a_figure_is_its_name() {
        let text = "held-out rmse 4.2 and mae 3.1";
        assert_eq!(
            metric(text, text.find("4.2").unwrap_or(0)),
            Some(Metric::Rmse)
        );
        assert_eq!(
            metric(text, text.find("3.1").unwrap_or(0)),
            Some(Metric::Mae)
        );
        assert_eq!(metric("hr2 unit 5", 9), None);
    }
}
