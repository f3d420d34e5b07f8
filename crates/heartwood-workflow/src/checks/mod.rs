//! The maintained checks, as pure functions over the bytes of the files they read: tabular
//! ones (dictionary, split, OLS), report ones (readiness, plan, presence) and source ones
//! (Python syntax, byte comparison), with the helpers they share.
//!
//! Numerics: compensated sums, means to twice double precision, sums over deviations from the
//! means (never the naive `Σx² − n·x̄²`), predictions in centered form (`ȳ + b·(x − x̄)`, never
//! `a + b·x`, which cancels catastrophically when `x` is far from 0) and residuals formed as
//! `(y − ȳ) − b·(x − x̄)`, so every figure keeps about 1e-12 relative accuracy at offsets up to
//! 10¹², in f64.
//!
//! Tolerances: a reported figure agrees with the recomputed one when
//! `|reported − recomputed| ≤ TOLERANCE · scale + REPRESENTATION · |recomputed| +
//! min(ROUNDING · magnitude, ROUNDING_CAP · scale)`, where `scale` is what an error in that
//! figure is naturally measured against (for a prediction, the residual scale; for an RMSE,
//! the RMSE itself or the residual scale; for a summary of a column, the column's spread),
//! and `magnitude` is the size of the terms the figure is computed from. The first term is the
//! stated tolerance; the second is what writing the value itself as a double can leave; the
//! third admits the rounding of a correct but naive computation (`a + b·x` at large `x`), and
//! is capped by the error scale, so no shift larger than `(TOLERANCE + ROUNDING_CAP)` error
//! scales (about a ten-thousandth) is ever admitted, at any offset. When a difference lies
//! beyond the cap but within the rounding the magnitude can leave, the check cannot tell a
//! correct figure from a wrong one at that precision and answers `unverified`, saying so;
//! beyond the rounding too, the figure is wrong and the check fails. A recomputation that
//! overflows double precision is `unverified` too, never `passed` or `failed`.
//!
//! Every JSON file a check reads is refused when any object in it names a key twice (JSON
//! readers disagree on which one wins), and so is any list of keyed entries that names a key
//! twice.

pub mod claims;
mod identity;
mod linear;
mod model_plan;
mod reports;
mod source;
mod tabular;

use std::collections::HashSet;
use std::sync::Arc;

use serde::de::{DeserializeOwned, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

pub use claims::report_claims;
pub use linear::{HeldOut, LinearReport, ReportedCoefficient, linear_model};
pub use model_plan::{ModelPlan, model_plan};
pub use reports::{
    AnalysisPlan, MIN_REPORT_WORDS, NumericSummary, ReadinessReport, analysis_plan,
    nonempty_report, readiness_report,
};
pub use source::{byte_comparison, python_syntax};
pub use tabular::{
    GroupSlope, NoPicture, OlsReport, OlsSeries, Prediction, Split, data_dictionary,
    group_disjoint_split, ols_series, univariate_ols,
};

use crate::check::{CheckResult, Status};
use crate::table::{Dictionary, Table, TableError};

/// Forgets the remembered model computations (see [`crate::recent`]).
pub(crate) fn forget() {
    linear::forget();
    tabular::forget();
}

/// Adds a recalled answer (its status, reasons and figures) to `result`.
fn merge(result: &mut CheckResult, answer: CheckResult) {
    match answer.status {
        Status::Failed => result.status = Status::Failed,
        Status::Unverified if result.status == Status::Passed => {
            result.status = Status::Unverified;
        }
        _ => {}
    }
    result.reasons.extend(answer.reasons);
    if !answer.figures.is_null() {
        result.figures = answer.figures;
    }
}

/// Relative tolerance, against the figure's natural scale (see the module documentation).
pub const TOLERANCE: f64 = 1e-6;

/// Allowance for the rounding of a correct but naive computation, relative to the magnitude
/// of the terms a figure is computed from (the sum of their sizes, so already a few times the
/// largest): about nine unit roundoffs (2⁻⁵³ ≈ 1.1e-16) of that sum, what a few roundings of
/// the largest term in `a + b·x` leave. Never more than [`ROUNDING_CAP`] error scales counts
/// as agreement.
pub const ROUNDING: f64 = 1e-15;

/// The most of the error scale the rounding allowance may take: a difference beyond it (and
/// within [`ROUNDING`] of the magnitude) is `unverified`, not `passed`.
pub const ROUNDING_CAP: f64 = 1e-4;

/// What writing the value itself as a double leaves, relative to the value: four unit
/// roundoffs (a figure of 10¹² cannot be written closer than about 10⁻⁴).
pub const REPRESENTATION: f64 = 4.0 * f64::EPSILON / 2.0;

/// The file bytes a check reads, in the order its definition lists them.
pub type Files<'a> = &'a [Vec<u8>];

/// A least-squares line, kept in centered form, with its means to twice double precision (a
/// value and the rounding it leaves), so deviations from the means keep their digits at any
/// offset: `x − x̄` is exact when `x` is near `x̄`, and the mean's own rounding is added back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// The slope.
    pub slope: f64,
    /// The intercept (`ȳ − b·x̄`; reported, never used to predict).
    pub intercept: f64,
    /// The mean of the predictor, as a value and the rounding it leaves.
    pub mean_x: (f64, f64),
    /// The mean of the outcome, likewise.
    pub mean_y: (f64, f64),
}

impl Line {
    /// `x − x̄`.
    pub fn dx(&self, x: f64) -> f64 {
        (x - self.mean_x.0) - self.mean_x.1
    }

    /// `y − ȳ`.
    pub fn dy(&self, y: f64) -> f64 {
        (y - self.mean_y.0) - self.mean_y.1
    }

    /// The prediction at `x`, in centered form.
    pub fn predict(&self, x: f64) -> f64 {
        self.mean_y.0 + (self.mean_y.1 + self.slope * self.dx(x))
    }

    /// `y − ŷ(x)`, without forming `ŷ` (which would round at the outcome's magnitude).
    pub fn residual(&self, x: f64, y: f64) -> f64 {
        self.dy(y) - self.slope * self.dx(x)
    }

    /// The size of the terms a naive `a + b·x` prediction at `x` adds up, which bounds its
    /// rounding.
    pub fn magnitude_at(&self, x: f64) -> f64 {
        self.intercept.abs() + (self.slope * x).abs() + self.mean_y.0.abs()
    }
}

/// Least squares of `y` on `x`, or `None` when `x` does not vary (or there are fewer than two
/// points).
pub fn fit(points: &[(f64, f64)]) -> Option<Line> {
    if points.len() < 2 {
        return None;
    }
    // Both means in one pass (each sum adds the same terms in the same order as alone).
    let (mut sum_x, mut sum_y) = (Sum::default(), Sum::default());
    for &(x, y) in points {
        sum_x.add(x);
        sum_y.add(y);
    }
    let (mean_x, mean_y) = (sum_x.mean(), sum_y.mean());
    let dx = |x: f64| (x - mean_x.0) - mean_x.1;
    let dy = |y: f64| (y - mean_y.0) - mean_y.1;
    let mut sxy = Sum::default();
    let mut sxx = Sum::default();
    for &(x, y) in points {
        sxy.add(dx(x) * dy(y));
        sxx.add(dx(x) * dx(x));
    }
    let (sxy, sxx) = (sxy.total(), sxx.total());
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    // One rounding of the product, then the means' own roundings.
    let intercept = (-slope).mul_add(mean_x.0, mean_y.0) + (mean_y.1 - slope * mean_x.1);
    Some(Line {
        slope,
        intercept,
        mean_x,
        mean_y,
    })
}

/// A compensated (Neumaier) sum: the rounding of each addition is kept and added back.
#[derive(Debug, Default, Clone, Copy)]
struct Sum {
    sum: f64,
    compensation: f64,
    count: usize,
}

impl Sum {
    fn add(&mut self, v: f64) {
        let t = self.sum + v;
        self.compensation += if self.sum.abs() >= v.abs() {
            (self.sum - t) + v
        } else {
            (v - t) + self.sum
        };
        self.sum = t;
        self.count += 1;
    }

    fn total(&self) -> f64 {
        self.sum + self.compensation
    }

    /// The mean as a value and the rounding it leaves.
    fn mean(&self) -> (f64, f64) {
        if self.count == 0 {
            return (0.0, 0.0);
        }
        let n = self.count as f64;
        let hi_total = self.sum + self.compensation;
        let lo_total = self.compensation - (hi_total - self.sum);
        let hi = hi_total / n;
        // Exact: what dividing left behind.
        let remainder = (-hi).mul_add(n, hi_total);
        (hi, (remainder + lo_total) / n)
    }
}

/// The mean as a value and the rounding it leaves (twice double precision).
pub(crate) fn mean2(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let mut sum = Sum::default();
    values.for_each(|v| sum.add(v));
    sum.mean()
}

/// The mean, correctly rounded in all but pathological cases.
pub(crate) fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (hi, lo) = mean2(values);
    hi + lo
}

/// The root mean square of `values` (deviations already formed by the caller), scaled by the
/// largest so squares cannot overflow: values near 10¹⁶⁰ have a finite root mean square.
pub(crate) fn root_mean_square(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let largest = values.clone().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return largest;
    }
    let mut sum = Sum::default();
    values.for_each(|v| {
        let scaled = v / largest;
        sum.add(scaled * scaled);
    });
    largest * (sum.total() / sum.count as f64).sqrt()
}

/// The root mean square of deviations from the mean of `values`.
pub(crate) fn spread(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let (hi, lo) = mean2(values.clone());
    root_mean_square(values.map(|v| (v - hi) - lo))
}

/// Compares a reported figure with the recomputed one (see the module documentation for the
/// rule): agreement within the capped allowance passes, a difference only rounding at the
/// magnitude could explain is `unverified`, anything else fails. A reported figure that is not
/// a finite number never agrees; a recomputation that overflowed judges nothing.
pub(crate) fn compare_within(
    result: &mut CheckResult,
    what: &str,
    reported: f64,
    recomputed: f64,
    scale: f64,
    magnitude: f64,
) {
    if !reported.is_finite() {
        return result.fail(format!(
            "{what}: the report says {reported}, not a finite number"
        ));
    }
    if ![recomputed, scale, magnitude].iter().all(|v| v.is_finite()) {
        return result.mark_unverified(format!(
            "{what}: recomputing it overflows double precision (values near {magnitude:e}), so \
             Heartwood cannot judge the reported {reported}; rescale the data (other units) to \
             have it checked"
        ));
    }
    let stated = TOLERANCE * scale.abs() + REPRESENTATION * recomputed.abs();
    let rounding = ROUNDING * magnitude.abs();
    let capped = rounding.min(ROUNDING_CAP * scale.abs());
    let difference = (reported - recomputed).abs();
    if difference <= stated + capped {
        return;
    }
    if difference <= stated + rounding {
        return result.mark_unverified(format!(
            "{what}: the report says {reported}, recomputed {recomputed}; the difference \
             {difference:.3e} is within what rounding at values near {magnitude:.3e} can leave \
             ({rounding:.3e}), but that is more than {ROUNDING_CAP:e} of the error scale \
             {scale:.3e}, so a correct figure cannot be told from a wrong one here. Compute on \
             centred values (subtract a constant from the column first) and report again"
        ));
    }
    result.fail(format!(
        "{what}: the report says {reported}, recomputed {recomputed} (allowed difference \
         {:.3e})",
        stated + capped
    ));
}

/// Half a unit of the last digit of `value` as a JSON writer writes it (the shortest decimal
/// that reads back as the same double, without an exponent): how far rounding to the digits
/// written can move a value.
pub(crate) fn written_half_unit(value: f64) -> f64 {
    let text = format!("{value}");
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    0.5 * 10f64.powi(-i32::try_from(decimals).unwrap_or(i32::MAX))
}

/// Compares a figure a file states with the recomputed one by the written-figure rule: it
/// agrees within half a unit of its last written digit and the value's own representation,
/// plus the rounding of a correct computation over terms of size `magnitude` (about nine unit
/// roundoffs of it). Beyond that, a difference that summing `count` such terms naively could
/// still leave is `unverified`; anything else fails. The allowance is never borrowed from a
/// larger scale (a column's spread), so a figure passes only as its own digits allow.
pub(crate) fn compare_written(
    result: &mut CheckResult,
    what: &str,
    reported: f64,
    recomputed: f64,
    magnitude: f64,
    count: usize,
) {
    if !reported.is_finite() {
        return result.fail(format!(
            "{what}: the report says {reported}, not a finite number"
        ));
    }
    if !recomputed.is_finite() || !magnitude.is_finite() {
        return result.mark_unverified(format!(
            "{what}: recomputing it overflows double precision, so Heartwood cannot judge the \
             reported {reported}; rescale the data (other units) to have it checked"
        ));
    }
    let written = written_half_unit(reported) + REPRESENTATION * recomputed.abs();
    let difference = (reported - recomputed).abs();
    if difference <= written + ROUNDING * magnitude {
        return;
    }
    let naive = count as f64 * f64::EPSILON * magnitude;
    if difference <= written + naive {
        return result.mark_unverified(format!(
            "{what}: the report says {reported}, recomputed {recomputed}; the difference \
             {difference:.3e} is more than its digits allow but within what summing {count} \
             values near {magnitude:.3e} naively can leave, so a correct figure cannot be told \
             from a wrong one here. Compute it with a compensated sum (math.fsum) and report again"
        ));
    }
    result.fail(format!(
        "{what}: the report says {reported}, recomputed {recomputed} (its digits allow a \
         difference of {:.3e})",
        written + ROUNDING * magnitude
    ));
}

/// Reads a JSON file strictly: any object naming a key twice is refused before the file is
/// read as `T`.
pub(crate) fn strict_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    <NoDuplicateKeys as serde::Deserialize>::deserialize(&mut reader)?;
    reader.end()?;
    serde_json::from_slice(bytes)
}

/// Any JSON value, read only to refuse an object that names a key twice.
struct NoDuplicateKeys;

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!(
                    "the key {key:?} appears twice in one object"
                )));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(self)
    }
}

pub(crate) fn table_and_dictionary(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<(Arc<Table>, Dictionary)> {
    let table = table_from(files.first(), "table", result)?;
    let dictionary = match files.get(1).map(|b| strict_json::<Dictionary>(b)) {
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
        Ok(t) if t.rows.is_empty() => {
            result.fail(format!(
                "the {what} has a header and no rows; an empty table is a finding, not evidence"
            ));
            None
        }
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
