//! The tabular checks: the data dictionary's rules, the group-disjoint split, and the univariate
//! OLS model with held-out predictions, comparator and leave-one-group-out sensitivity.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Deserialize;

use super::{Files, compare, fit, mean, table_and_dictionary, table_from};
use crate::check::{CheckResult, MAX_GROUPS};
use crate::table::{ColumnType, Dictionary, Table, number};

/// `data_dictionary`: reads table, dictionary. Every column rule holds on every row, the key is
/// unique, and the declared roles name real columns.
pub fn data_dictionary(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<(Arc<Table>, Dictionary)> {
    let (table, dictionary) = table_and_dictionary(files, result)?;
    for role in [
        &dictionary.primary_key,
        &dictionary.group,
        &dictionary.outcome,
    ]
    .into_iter()
    .chain(&dictionary.predictors)
    {
        if table.column(role).is_none() {
            result.fail(format!(
                "the dictionary names column {role:?}, which the table lacks"
            ));
        }
    }
    for (name, rule) in &dictionary.columns {
        let Some(c) = table.column(name) else {
            result.fail(format!(
                "the dictionary describes column {name:?}, which the table lacks"
            ));
            continue;
        };
        for (i, row) in table.rows.iter().enumerate() {
            let value = &row[c];
            let line = i + 2;
            if value.is_empty() {
                if rule.required {
                    result.fail(format!("line {line}: {name} is required but empty"));
                }
                continue;
            }
            if rule.kind == ColumnType::Number {
                match number(value) {
                    None => result.fail(format!("line {line}: {name} = {value:?} is not a number")),
                    Some(v) => {
                        if rule.min.is_some_and(|m| v < m) || rule.max.is_some_and(|m| v > m) {
                            result.fail(format!(
                                "line {line}: {name} = {v} is outside its permitted range"
                            ));
                        }
                    }
                }
            }
            if let Some(allowed) = &rule.allowed
                && !allowed.iter().any(|a| a == value)
            {
                result.fail(format!(
                    "line {line}: {name} = {value:?} is not an allowed value"
                ));
            }
        }
    }
    if let Some(key) = table.column(&dictionary.primary_key) {
        let mut seen = BTreeSet::new();
        for (i, row) in table.rows.iter().enumerate() {
            if !seen.insert(row[key].to_owned()) {
                result.fail(format!("line {}: key {:?} appears twice", i + 2, &row[key]));
            }
        }
    }
    if let (Some(min), Some(g)) = (
        dictionary.min_rows_per_group,
        table.column(&dictionary.group),
    ) {
        let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
        for row in &table.rows {
            *sizes.entry(&row[g]).or_default() += 1;
        }
        for (group, n) in sizes {
            if n < min {
                result.fail(format!(
                    "group {group:?} has {n} rows; the dictionary asks for at least {min}"
                ));
            }
        }
    }
    Some((table, dictionary))
}

/// `group_disjoint_split`: reads table, dictionary, split. Every key is assigned exactly once, no
/// group is on both sides, and the held-out rows are exactly the held-out groups' rows.
pub fn group_disjoint_split(files: Files<'_>, result: &mut CheckResult) -> Option<Split> {
    checked_split(files, result).map(|(split, _, _)| split)
}

/// The split check, also handing back the table and dictionary it parsed.
fn checked_split(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<(Split, Arc<Table>, Dictionary)> {
    let (table, dictionary) = table_and_dictionary(files, result)?;
    let split_table = table_from(files.get(2), "split", result)?;
    let (Some(key), Some(group)) = (
        table.column(&dictionary.primary_key),
        table.column(&dictionary.group),
    ) else {
        result.fail("the table lacks the dictionary's key or group column");
        return None;
    };
    let (Some(sk), Some(sp)) = (split_table.column("key"), split_table.column("partition")) else {
        result.fail("the split needs the columns key and partition");
        return None;
    };
    let mut assigned: HashMap<&str, &str> = HashMap::new();
    for (i, row) in split_table.rows.iter().enumerate() {
        let partition = &row[sp];
        if partition != "train" && partition != "held_out" {
            result.fail(format!(
                "split line {}: partition {partition:?} is neither train nor held_out",
                i + 2
            ));
        }
        if assigned.insert(&row[sk], partition).is_some() {
            result.fail(format!(
                "split line {}: key {:?} is assigned twice",
                i + 2,
                &row[sk]
            ));
        }
    }
    let keys: BTreeSet<&str> = table.rows.iter().map(|r| &r[key]).collect();
    for k in assigned.keys() {
        if !keys.contains(k) {
            result.fail(format!(
                "the split assigns key {k:?}, which the table does not have"
            ));
        }
    }
    let mut sides: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut split = Split::default();
    for row in &table.rows {
        let Some(partition) = assigned.get(&row[key]) else {
            result.fail(format!(
                "key {:?} is not assigned to a partition",
                &row[key]
            ));
            continue;
        };
        sides.entry(&row[group]).or_default().insert(partition);
        let expected = if dictionary.held_out_groups.iter().any(|h| *h == row[group]) {
            "held_out"
        } else {
            "train"
        };
        if *partition != expected {
            result.fail(format!(
                "key {:?} (group {:?}) is in {partition}, but the dictionary puts its group in {expected}",
                &row[key], &row[group]
            ));
        }
        split
            .partition
            .insert(row[key].to_owned(), (*partition).to_owned());
    }
    for (g, s) in sides {
        if s.len() > 1 {
            result.fail(format!(
                "group {g:?} has rows on both sides of the split (leakage)"
            ));
        }
    }
    Some((split, table, dictionary))
}

/// Which partition each key is in.
#[derive(Debug, Default, Clone)]
pub struct Split {
    /// Key → `train` or `held_out`.
    pub partition: BTreeMap<String, String>,
}

/// The reported model, as the results artifact states it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OlsReport {
    /// The outcome column.
    pub outcome: String,
    /// The single predictor.
    pub predictor: String,
    /// Slope fitted on the training partition.
    pub slope: f64,
    /// Intercept fitted on the training partition.
    pub intercept: f64,
    /// A prediction for every held-out key.
    pub held_out_predictions: Vec<Prediction>,
    /// Root mean squared error of those predictions.
    pub held_out_rmse: f64,
    /// The same error for predicting the training mean.
    pub mean_comparator_rmse: f64,
    /// The slope refitted without each training group.
    pub leave_one_group_out: Vec<GroupSlope>,
}

/// One held-out prediction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prediction {
    /// The row's key.
    pub key: String,
    /// The predicted outcome.
    pub predicted: f64,
}

/// The slope without one group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSlope {
    /// The group left out.
    pub group: String,
    /// The slope without it.
    pub slope: f64,
}

/// `univariate_ols`: reads table, dictionary, split, results. Recomputes the fit on the training
/// partition, the held-out predictions and errors, the training-mean comparator and the
/// leave-one-group-out slopes, and compares each with the report.
pub fn univariate_ols(files: Files<'_>, result: &mut CheckResult) {
    let Some((split, table, dictionary)) = checked_split(files, result) else {
        return;
    };
    if result.status != crate::check::Status::Passed {
        result.fail("the split is not valid, so the model cannot be checked against it");
        return;
    }
    let report: OlsReport = match files.get(3).map(|b| serde_json::from_slice(b)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => return result.fail(format!("the results file is not a model report: {e}")),
        None => return result.fail("the check needs the results file"),
    };
    if report.outcome != dictionary.outcome {
        result.fail(format!(
            "the report's outcome {:?} is not the dictionary's {:?}",
            report.outcome, dictionary.outcome
        ));
    }
    if !dictionary.predictors.contains(&report.predictor) {
        result.fail(format!(
            "{:?} is not a permitted predictor",
            report.predictor
        ));
        return;
    }
    let (Some(x), Some(y), Some(k), Some(g)) = (
        table.column(&report.predictor),
        table.column(&dictionary.outcome),
        table.column(&dictionary.primary_key),
        table.column(&dictionary.group),
    ) else {
        return result.fail("the table lacks the predictor, outcome, key or group column");
    };
    let mut train = Vec::new();
    let mut held_out = BTreeMap::new();
    for row in &table.rows {
        let (Some(xv), Some(yv)) = (number(&row[x]), number(&row[y])) else {
            result.fail(format!(
                "key {:?}: predictor or outcome is not a number",
                &row[k]
            ));
            return;
        };
        match split.partition.get(&row[k]).map(String::as_str) {
            Some("train") => train.push((xv, yv, row[g].to_owned())),
            Some(_) => {
                held_out.insert(row[k].to_owned(), (xv, yv));
            }
            None => {}
        }
    }
    let points: Vec<(f64, f64)> = train.iter().map(|(x, y, _)| (*x, *y)).collect();
    let Some((slope, intercept)) = fit(&points) else {
        result.mark_unverified(
            "the training predictor has no variance (or fewer than two rows), so the slope is undefined",
        );
        return;
    };
    compare(result, "slope", report.slope, slope);
    compare(result, "intercept", report.intercept, intercept);
    let mut squared = 0.0;
    let mut comparator = 0.0;
    let mean_y = mean(points.iter().map(|p| p.1));
    let reported: HashMap<&str, f64> = report
        .held_out_predictions
        .iter()
        .map(|p| (p.key.as_str(), p.predicted))
        .collect();
    for (key, (xv, yv)) in &held_out {
        let predicted = intercept + slope * xv;
        match reported.get(key.as_str()) {
            Some(r) => compare(result, &format!("prediction for {key}"), *r, predicted),
            None => result.fail(format!(
                "the report has no prediction for held-out key {key:?}"
            )),
        }
        squared += (yv - predicted).powi(2);
        comparator += (yv - mean_y).powi(2);
    }
    if reported.len() != held_out.len() {
        result.fail(format!(
            "the report predicts {} rows; the held-out partition has {}",
            reported.len(),
            held_out.len()
        ));
    }
    let n = held_out.len().max(1) as f64;
    let rmse = (squared / n).sqrt();
    let comparator_rmse = (comparator / n).sqrt();
    compare(result, "held-out RMSE", report.held_out_rmse, rmse);
    compare(
        result,
        "training-mean comparator RMSE",
        report.mean_comparator_rmse,
        comparator_rmse,
    );

    let groups: BTreeSet<&str> = train.iter().map(|t| t.2.as_str()).collect();
    if groups.len() > MAX_GROUPS {
        result.mark_unverified(format!(
            "{} training groups; leave-one-group-out is checked for at most {MAX_GROUPS}",
            groups.len()
        ));
        return;
    }
    let reported: HashMap<&str, f64> = report
        .leave_one_group_out
        .iter()
        .map(|s| (s.group.as_str(), s.slope))
        .collect();
    // Groups by index, so leaving one out compares integers, not names.
    let names: Vec<&str> = groups.iter().copied().collect();
    let ids: Vec<usize> = train
        .iter()
        .map(|t| names.binary_search(&t.2.as_str()).unwrap_or(usize::MAX))
        .collect();
    let mut logo = Vec::new();
    let mut rest = Vec::with_capacity(train.len());
    for (id, group) in names.iter().enumerate() {
        rest.clear();
        rest.extend(
            train
                .iter()
                .zip(&ids)
                .filter(|(_, g)| **g != id)
                .map(|(t, _)| (t.0, t.1)),
        );
        let Some((s, _)) = fit(&rest) else { continue };
        logo.push(serde_json::json!({"group": group, "slope": s}));
        match reported.get(group) {
            Some(r) => compare(result, &format!("slope without group {group}"), *r, s),
            None => result.fail(format!(
                "the report lacks the slope without group {group:?}"
            )),
        }
    }
    result.figures = serde_json::json!({
        "slope": slope,
        "intercept": intercept,
        "held_out_rmse": rmse,
        "mean_comparator_rmse": comparator_rmse,
        "training_rows": points.len(),
        "held_out_rows": held_out.len(),
        "leave_one_group_out": logo,
    });
}
