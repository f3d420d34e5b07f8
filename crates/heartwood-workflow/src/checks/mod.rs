//! The maintained checks, as pure functions over the bytes of the files they read: tabular
//! ones (dictionary, split, OLS), report ones (readiness, plan, presence) and source ones
//! (Python syntax, byte comparison), with the helpers they share.
//!
//! Numerics: means first, then sums over deviations from the means (never the naive
//! `Σx² − n·x̄²`), in f64. Reported figures agree when `|reported − recomputed| ≤ TOLERANCE ·
//! max(1, |recomputed|)`.

mod reports;
mod source;
mod tabular;

use std::sync::Arc;

pub use reports::{
    AnalysisPlan, MIN_REPORT_WORDS, NumericSummary, ReadinessReport, analysis_plan,
    nonempty_report, readiness_report,
};
pub use source::{byte_comparison, python_syntax};
pub use tabular::{
    GroupSlope, OlsReport, Prediction, Split, data_dictionary, group_disjoint_split, univariate_ols,
};

use crate::check::CheckResult;
use crate::table::{Dictionary, Table, TableError};

/// Relative tolerance for reported figures (absolute below 1).
pub const TOLERANCE: f64 = 1e-6;

/// The file bytes a check reads, in the order its definition lists them.
pub type Files<'a> = &'a [Vec<u8>];

/// Least squares of `y` on `x`: `(slope, intercept)`, or `None` when `x` does not vary.
pub fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let mx = mean(points.iter().map(|p| p.0));
    let my = mean(points.iter().map(|p| p.1));
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in points {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

pub(crate) fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v;
        n += 1;
    }
    if n == 0 { 0.0 } else { sum / n as f64 }
}

pub(crate) fn compare(result: &mut CheckResult, what: &str, reported: f64, recomputed: f64) {
    if (reported - recomputed).abs() > TOLERANCE * recomputed.abs().max(1.0) {
        result.fail(format!(
            "{what}: the report says {reported}, recomputed {recomputed}"
        ));
    }
}

pub(crate) fn table_and_dictionary(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<(Arc<Table>, Dictionary)> {
    let table = table_from(files.first(), "table", result)?;
    let dictionary = match files
        .get(1)
        .map(|b| serde_json::from_slice::<Dictionary>(b))
    {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            result.fail(format!("the data dictionary is not valid: {e}"));
            return None;
        }
        None => {
            result.fail("the check needs the data dictionary");
            return None;
        }
    };
    Some((table, dictionary))
}

pub(crate) fn table_from(
    bytes: Option<&Vec<u8>>,
    what: &str,
    result: &mut CheckResult,
) -> Option<Arc<Table>> {
    let Some(bytes) = bytes else {
        result.fail(format!("the check needs the {what} file"));
        return None;
    };
    match Table::parse_shared(bytes) {
        Ok(t) => Some(t),
        Err(TableError::Malformed(e)) => {
            result.fail(format!("the {what} is not a valid CSV table: {e}"));
            None
        }
        Err(TableError::Limit(e)) => {
            result.mark_unverified(e);
            None
        }
    }
}
