//! Held-out metrics for probabilities of a binary outcome: log loss, Brier score and AUC.

use crate::error::StatsError;

/// Probabilities are clipped to [ε, 1 − ε] before taking logarithms, as scikit-learn does.
pub const LOG_LOSS_EPSILON: f64 = 1e-15;

fn check(outcome: &[f64], values: &[f64], probabilities: bool) -> Result<(), StatsError> {
    if outcome.is_empty() {
        return Err(StatsError::Metric("no held-out rows; give at least one"));
    }
    if outcome.len() != values.len() {
        return Err(StatsError::Metric(
            "outcomes and predictions differ in length; give one prediction per row",
        ));
    }
    if outcome.iter().any(|y| *y != 0.0 && *y != 1.0) {
        return Err(StatsError::Metric("a held-out outcome is not 0 or 1"));
    }
    if values
        .iter()
        .any(|p| !p.is_finite() || (probabilities && !(0.0..=1.0).contains(p)))
    {
        return Err(StatsError::Metric(
            "a prediction is not a probability between 0 and 1",
        ));
    }
    Ok(())
}

/// Mean negative log likelihood: −mean(y ln p + (1 − y) ln(1 − p)).
pub fn log_loss(outcome: &[f64], probability: &[f64]) -> Result<f64, StatsError> {
    check(outcome, probability, true)?;
    let total: f64 = outcome
        .iter()
        .zip(probability)
        .map(|(y, p)| {
            let p = p.clamp(LOG_LOSS_EPSILON, 1.0 - LOG_LOSS_EPSILON);
            -(y * p.ln() + (1.0 - y) * (1.0 - p).ln())
        })
        .sum();
    Ok(total / outcome.len() as f64)
}

/// Mean squared difference between probability and outcome.
pub fn brier_score(outcome: &[f64], probability: &[f64]) -> Result<f64, StatsError> {
    check(outcome, probability, true)?;
    let total: f64 = outcome
        .iter()
        .zip(probability)
        .map(|(y, p)| (p - y) * (p - y))
        .sum();
    Ok(total / outcome.len() as f64)
}

/// The area under the ROC curve: the chance a random positive row scores above a random
/// negative one, ties counting one half (Mann–Whitney with mid-ranks).
pub fn auc(outcome: &[f64], score: &[f64]) -> Result<f64, StatsError> {
    check(outcome, score, false)?;
    let mut order: Vec<usize> = (0..score.len()).collect();
    order.sort_by(|a, b| score[*a].total_cmp(&score[*b]));
    let mut rank_sum = 0.0;
    let mut at = 0;
    while at < order.len() {
        let mut end = at;
        while end + 1 < order.len() && score[order[end + 1]] == score[order[at]] {
            end += 1;
        }
        let mid_rank = (at + end) as f64 / 2.0 + 1.0;
        rank_sum += order[at..=end]
            .iter()
            .filter(|i| outcome[**i] == 1.0)
            .count() as f64
            * mid_rank;
        at = end + 1;
    }
    let positives = outcome.iter().filter(|y| **y == 1.0).count() as f64;
    let negatives = outcome.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return Err(StatsError::Metric(
            "AUC needs both outcomes among the held-out rows",
        ));
    }
    Ok((rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perfect_ranking_has_auc_one_and_ties_count_half() {
        assert_eq!(
            auc(&[0.0, 0.0, 1.0, 1.0], &[0.1, 0.2, 0.8, 0.9]).ok(),
            Some(1.0)
        );
        assert_eq!(auc(&[0.0, 1.0], &[0.5, 0.5]).ok(), Some(0.5));
        assert_eq!(
            auc(&[1.0, 0.0, 1.0, 0.0], &[0.9, 0.8, 0.3, 0.1]).ok(),
            Some(0.75)
        );
    }

    #[test]
    fn log_loss_and_brier_of_known_predictions() {
        let y = [1.0, 0.0];
        let p = [0.8, 0.4];
        let expected = -(0.8f64.ln() + 0.6f64.ln()) / 2.0;
        assert!((log_loss(&y, &p).expect("ok") - expected).abs() < 1e-15);
        assert!((brier_score(&y, &p).expect("ok") - (0.04 + 0.16) / 2.0).abs() < 1e-15);
    }

    #[test]
    fn metrics_refuse_what_they_cannot_score() {
        assert!(log_loss(&[1.0], &[1.5]).is_err());
        assert!(brier_score(&[2.0], &[0.5]).is_err());
        assert!(auc(&[1.0, 1.0], &[0.2, 0.3]).is_err());
        assert!(auc(&[], &[]).is_err());
    }
}
