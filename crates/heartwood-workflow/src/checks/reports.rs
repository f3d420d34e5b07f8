//! The report checks: the readiness report's counts and summaries, the analysis plan's fit with
//! the dictionary, and a written report's presence.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Files, compare_written, mean, strict_json, table_and_dictionary};
use crate::check::CheckResult;
use crate::table::{Dictionary, number};

/// The fewest words a report needs to count as written.
pub const MIN_REPORT_WORDS: usize = 20;

/// `nonempty_report`: reads one text report. It must be UTF-8 with at least
/// [`MIN_REPORT_WORDS`] words. Presence only: it says nothing of correctness.
pub fn nonempty_report(files: Files<'_>, result: &mut CheckResult) {
    let Some(bytes) = files.first() else {
        return result.fail("the check needs the report");
    };
    match std::str::from_utf8(bytes) {
        Err(_) => result.fail("the report is not UTF-8 text"),
        Ok(text) => {
            let words = text.split_whitespace().count();
            if words < MIN_REPORT_WORDS {
                result.fail(format!(
                    "the report has {words} words; a written result needs at least {MIN_REPORT_WORDS}"
                ));
            }
        }
    }
}

/// A readiness report as the stage writes it (JSON): the figures it states about the table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadinessReport {
    /// Data rows (the header not counted).
    pub rows: usize,
    /// Columns.
    pub columns: usize,
    /// Rows per group.
    pub group_sizes: BTreeMap<String, usize>,
    /// Empty values per column (columns not listed are stated to have none).
    #[serde(default)]
    pub missing: BTreeMap<String, usize>,
    /// Summaries of numeric columns.
    #[serde(default)]
    pub numeric: BTreeMap<String, NumericSummary>,
}

/// A numeric column's summary.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumericSummary {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// `readiness_report`: reads table, dictionary, report. Every count and summary the report
/// states is recomputed from the table.
pub fn readiness_report(files: Files<'_>, result: &mut CheckResult) {
    let Some((table, dictionary)) = table_and_dictionary(files, result) else {
        return;
    };
    let report: ReadinessReport = match files.get(2).map(|b| strict_json(b)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            return result.fail(format!(
                "the readiness report is not in the expected form: {e}"
            ));
        }
        None => return result.fail("the check needs the readiness report"),
    };
    if report.rows != table.rows.len() {
        result.fail(format!(
            "the report says {} rows; the table has {}",
            report.rows,
            table.rows.len()
        ));
    }
    if report.columns != table.columns.len() {
        result.fail(format!(
            "the report says {} columns; the table has {}",
            report.columns,
            table.columns.len()
        ));
    }
    let Some(g) = table.column(&dictionary.group) else {
        return result.fail("the table lacks the dictionary's group column");
    };
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &table.rows {
        *sizes.entry(&row[g]).or_default() += 1;
    }
    if !sizes
        .iter()
        .map(|(g, n)| (*g, *n))
        .eq(report.group_sizes.iter().map(|(g, n)| (g.as_str(), *n)))
    {
        result.fail(format!(
            "the report's group sizes {:?} differ from the table's {:?}",
            report.group_sizes, sizes
        ));
    }
    for name in report.missing.keys() {
        if table.column(name).is_none() {
            result.fail(format!(
                "the report counts empty values in column {name:?}, which the table lacks"
            ));
        }
    }
    // Empty fields counted row by row, each row's fields in one pass (a row lacking trailing
    // fields reads them as empty).
    let mut empties = vec![0usize; table.columns.len()];
    for row in &table.rows {
        let mut width = 0;
        for (c, field) in row.fields().enumerate() {
            if let Some(count) = empties.get_mut(c)
                && field.is_empty()
            {
                *count += 1;
            }
            width = c + 1;
        }
        for count in empties.iter_mut().skip(width) {
            *count += 1;
        }
    }
    for (name, empty) in table.columns.iter().zip(empties) {
        let stated = report.missing.get(name).copied().unwrap_or(0);
        if empty != stated {
            result.fail(format!(
                "column {name}: the report says {stated} empty values; the table has {empty}"
            ));
        }
    }
    for (name, stated) in &report.numeric {
        let Some(c) = table.column(name) else {
            result.fail(format!(
                "the report summarizes column {name:?}, which the table lacks"
            ));
            continue;
        };
        let values: Vec<f64> = table.rows.iter().filter_map(|r| number(&r[c])).collect();
        if values.is_empty() {
            result.fail(format!("column {name} has no numbers to summarize"));
            continue;
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let centre = mean(values.iter().copied());
        // A summary is judged in its own units, by the digits it is written with, never
        // against the column's spread (a mean off by a whole unit would pass a column whose
        // spread is 10⁶). The extremes are values of the column; the mean's rounding is what
        // summing `values.len()` values of this size can leave.
        let magnitude = min.abs().max(max.abs());
        for (what, stated, recomputed, rounding) in [
            ("minimum", stated.min, min, 0.0),
            ("maximum", stated.max, max, 0.0),
            ("mean", stated.mean, centre, magnitude),
        ] {
            compare_written(
                result,
                &format!("{name} {what}"),
                stated,
                recomputed,
                rounding,
                values.len(),
            );
        }
    }
}

/// An analysis plan (JSON).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisPlan {
    /// The outcome column.
    pub outcome: String,
    /// The single predictor.
    pub predictor: String,
    /// The grouping column.
    pub group: String,
    /// The split: `group_disjoint` is the one the maintained checks support.
    pub split: String,
    /// Groups held out.
    pub held_out_groups: Vec<String>,
}

/// `analysis_plan`: reads dictionary, plan. The plan names the dictionary's outcome and grouping,
/// one permitted predictor, its held-out groups, and a split the maintained checks support.
pub fn analysis_plan(files: Files<'_>, result: &mut CheckResult) {
    let dictionary: Dictionary = match files.first().map(|b| strict_json(b)) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return result.fail(format!("the data dictionary is not valid: {e}")),
        None => return result.fail("the check needs the data dictionary"),
    };
    let plan: AnalysisPlan = match files.get(1).map(|b| strict_json(b)) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return result.fail(format!("the plan is not in the expected form: {e}")),
        None => return result.fail("the check needs the plan"),
    };
    plan_fits_dictionary((&plan).into(), &dictionary, result);
    if plan.split != "group_disjoint" {
        result.mark_unverified(format!(
            "the maintained checks support the group_disjoint split, not {:?}",
            plan.split
        ));
    }
}

/// What a plan (the analysis plan of `tabular-ols`, the model plan of `tabular-linear` and
/// `tabular-logistic`) declares about the data, for binding it to the dictionary.
pub(crate) struct PlannedData<'a> {
    /// The outcome column.
    pub outcome: &'a str,
    /// Every predictor column (numeric and categorical).
    pub predictors: Vec<&'a str>,
    /// The grouping column.
    pub group: &'a str,
    /// The groups held out.
    pub held_out_groups: &'a [String],
}

impl<'a> From<&'a AnalysisPlan> for PlannedData<'a> {
    fn from(plan: &'a AnalysisPlan) -> Self {
        PlannedData {
            outcome: &plan.outcome,
            predictors: vec![plan.predictor.as_str()],
            group: &plan.group,
            held_out_groups: &plan.held_out_groups,
        }
    }
}

/// The one rule binding a plan to the dictionary: the plan names the dictionary's outcome and
/// grouping, at least one permitted predictor (each once), and the dictionary's held-out
/// groups (at least one). Used by the plan checks and by the model checks, which bind a model
/// to its plan.
pub(crate) fn plan_fits_dictionary(
    plan: PlannedData<'_>,
    dictionary: &Dictionary,
    result: &mut CheckResult,
) {
    if plan.outcome != dictionary.outcome {
        result.fail(format!(
            "the plan's outcome {:?} is not the dictionary's {:?}",
            plan.outcome, dictionary.outcome
        ));
    }
    if plan.predictors.is_empty() {
        result.fail("the plan declares no predictor");
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in &plan.predictors {
        if !dictionary.predictors.iter().any(|d| d == p) {
            result.fail(format!("{p:?} is not a permitted predictor"));
        }
        if !seen.insert(*p) {
            result.fail(format!("the plan names the predictor {p:?} twice"));
        }
    }
    if plan.group != dictionary.group {
        result.fail(format!(
            "the plan groups by {:?}; the dictionary's group is {:?}",
            plan.group, dictionary.group
        ));
    }
    let mut planned = plan.held_out_groups.to_vec();
    let mut declared = dictionary.held_out_groups.clone();
    planned.sort();
    declared.sort();
    if planned != declared {
        result.fail(format!(
            "the plan holds out {planned:?}; the dictionary declares {declared:?}"
        ));
    }
    if plan.held_out_groups.is_empty() {
        result.fail("the plan holds out no group, so nothing would be held out");
    }
}
