//! The tabular checks: the data dictionary's rules, the group-disjoint split, and the univariate
//! OLS model with held-out predictions, comparator and leave-one-group-out sensitivity.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;

use super::{
    Files, compare_within, fit, root_mean_square, strict_json, table_and_dictionary, table_from,
};
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
        let mut seen = HashSet::with_capacity(table.rows.len());
        for (i, row) in table.rows.iter().enumerate() {
            if !seen.insert(&row[key]) {
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
pub(crate) fn checked_split(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<(Split, Arc<Table>, Dictionary)> {
    let inputs = files.get(..3).unwrap_or(files);
    let (answer, split) = SPLITS.answer(
        |f| f.as_slice() == inputs,
        || inputs.to_vec(),
        || {
            let mut fresh = CheckResult::new(&result.check);
            let split = judged_split(inputs, &mut fresh);
            (fresh, split)
        },
    );
    super::merge(result, answer);
    split
}

/// The splits judged most recently, by the exact table, dictionary and split bytes: every
/// stage after the split's reads them again.
type SplitAnswer = (CheckResult, Option<(Split, Arc<Table>, Dictionary)>);
static SPLITS: crate::recent::Recent<Vec<Vec<u8>>, SplitAnswer> = crate::recent::Recent::new(2);

/// The computation of [`checked_split`].
fn judged_split(
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
    // Each stage's checks stand on their own: a key that names two rows cannot be split.
    let mut table_keys = HashSet::with_capacity(table.rows.len());
    for (i, row) in table.rows.iter().enumerate() {
        if !table_keys.insert(&row[key]) {
            result.fail(format!(
                "line {}: key {:?} names two rows of the table, so the split cannot say which \
                 partition a row is in",
                i + 2,
                &row[key]
            ));
        }
    }
    let table_groups: BTreeSet<&str> = table.rows.iter().map(|r| &r[group]).collect();
    // Two spellings a reader takes for one group would let its rows sit on both sides; two
    // for one key would let one row be assigned twice.
    super::identity::labels_and_keys(&table, &dictionary, &split_table, (key, group, sk), result);
    if dictionary.held_out_groups.is_empty() {
        result.fail("the dictionary holds out no group, so nothing is held out");
    }
    for held in &dictionary.held_out_groups {
        if !table_groups.contains(held.as_str()) {
            result.fail(format!(
                "the dictionary holds out group {held:?}, which no row of the table has"
            ));
        }
    }
    if !table_groups
        .iter()
        .any(|g| !dictionary.held_out_groups.iter().any(|h| h == g))
    {
        result.fail("every group is held out, so nothing is left to train on");
    }
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
    for k in assigned.keys() {
        if !table_keys.contains(k) {
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
    for side in ["train", "held_out"] {
        if !split.partition.values().any(|p| p == side) {
            result.fail(format!("the {side} partition is empty"));
        }
    }
    super::identity::identical_across(&table, &dictionary, &split.partition, result);
    Some((split, table, dictionary))
}

/// Which partition each key is in.
#[derive(Debug, Default, Clone)]
pub struct Split {
    /// Key → `train` or `held_out` (looked up once per row by every later check).
    pub partition: HashMap<String, String>,
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

/// `univariate_ols`: reads table, dictionary, split, results, plan. The report must be the model
/// the accepted plan declared (outcome, predictor, grouping, held-out groups). Recomputes the fit
/// on the training partition, the held-out predictions and errors, the training-mean comparator
/// and the leave-one-group-out slopes, and compares each with the report.
pub fn univariate_ols(files: Files<'_>, result: &mut CheckResult) {
    checked_model(files, result);
}

/// The model inputs as the model check read them: the report, split, table and dictionary.
pub(crate) type ModelInputs = (OlsReport, Split, Arc<Table>, Dictionary);

/// The answers `univariate_ols` gave most recently, by the exact files it read: the report
/// stage's claims are judged against the model stage's computation.
type Answer = (CheckResult, Option<Arc<ModelInputs>>);
static RECENT: crate::recent::Recent<Vec<Vec<u8>>, Answer> = crate::recent::Recent::new(2);

/// Forgets the remembered answers.
pub(crate) fn forget() {
    RECENT.clear();
    SPLITS.clear();
}

/// [`univariate_ols`] (or its answer on the same files, recalled), handing back its inputs when
/// it judged every figure (so the report's claims are recomputed from the same parse, not a
/// second one).
pub(crate) fn checked_model(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<Arc<ModelInputs>> {
    let (answer, inputs) = RECENT.answer(
        |f| f.as_slice() == files,
        || files.to_vec(),
        || {
            let mut fresh = CheckResult::new(&result.check);
            let inputs = judged_model(files, &mut fresh).map(Arc::new);
            (fresh, inputs)
        },
    );
    super::merge(result, answer);
    inputs
}

/// The computation of [`univariate_ols`].
fn judged_model(files: Files<'_>, result: &mut CheckResult) -> Option<ModelInputs> {
    let (report, split, table, dictionary) = model_inputs(files, result)?;
    let (train, held_out) = partitioned(&report, &split, &table, &dictionary, result)?;
    let points: Vec<(f64, f64)> = train.iter().map(|(x, y, _)| (*x, *y)).collect();
    let Some(line) = fit(&points) else {
        result.mark_unverified(
            "the training predictor has no variance (or fewer than two rows), so the slope is undefined",
        );
        return None;
    };
    if !(line.slope.is_finite() && line.intercept.is_finite()) {
        result.mark_unverified(
            "fitting the line overflows double precision at values this large, so Heartwood \
             cannot judge the reported model; rescale the data (other units) to have it checked",
        );
        return None;
    }
    // The residual scale: what an error in a prediction or a residual figure is measured
    // against. A perfect fit has none; the outcome's spread stands in, and rounding covers an
    // outcome that does not vary at all.
    let residual = root_mean_square(points.iter().map(|&(x, y)| line.residual(x, y)));
    let outcome_spread = root_mean_square(points.iter().map(|p| line.dy(p.1)));
    let scale = if residual > 0.0 {
        residual
    } else {
        outcome_spread
    };
    let x_spread = root_mean_square(points.iter().map(|p| line.dx(p.0)));
    // A slope's natural scale: its own size, or the residual scale per unit of predictor.
    let slope_scale = |slope: f64| slope.abs().max(scale / x_spread);
    compare_within(
        result,
        "slope",
        report.slope,
        line.slope,
        slope_scale(line.slope),
        line.slope,
    );
    // An intercept is judged by the predictions it implies: a shift of it shifts every one,
    // so it is measured against the residual scale, never against its own size (at an offset
    // of 10⁶ that would admit errors of many residual scales).
    compare_within(
        result,
        "intercept",
        report.intercept,
        line.intercept,
        scale,
        line.magnitude_at(line.mean_x.0),
    );

    let (rmse, comparator_rmse) = check_held_out(&report, &held_out, &line, scale, result);
    let held_out_spread = super::spread(held_out.values().map(|&(_, y)| y));
    let groups: BTreeSet<&str> = train.iter().map(|t| t.2.as_str()).collect();
    // Every reported entry names exactly one training group, once: a fabricated or repeated
    // entry fails whatever its slope.
    let mut reported_logo: HashMap<&str, f64> = HashMap::new();
    for entry in &report.leave_one_group_out {
        if reported_logo
            .insert(entry.group.as_str(), entry.slope)
            .is_some()
        {
            result.fail(format!(
                "the report gives the slope without group {:?} twice",
                entry.group
            ));
        }
        if !groups.contains(entry.group.as_str()) {
            result.fail(format!(
                "the report gives a slope without group {:?}, which is not a training group",
                entry.group
            ));
        }
    }
    let mut figures = serde_json::json!({
        "slope": line.slope,
        "intercept": line.intercept,
        "held_out_rmse": rmse,
        "mean_comparator_rmse": comparator_rmse,
        "residual_scale": scale,
        "training_r2": r_squared(residual, outcome_spread),
        "held_out_r2": r_squared(rmse, comparator_rmse),
        "held_out_r2_own_mean": r_squared(rmse, held_out_spread),
        "training_rows": points.len(),
        "held_out_rows": held_out.len(),
    });
    if groups.len() > MAX_GROUPS {
        result.figures = figures;
        result.mark_unverified(format!(
            "{} training groups; leave-one-group-out is checked for at most {MAX_GROUPS}",
            groups.len()
        ));
        return None;
    }
    figures["leave_one_group_out"] =
        leave_one_group_out(&train, &groups, &reported_logo, slope_scale, result);
    result.figures = figures;
    Some((report, split, table, dictionary))
}

/// The report and the plan it must be the model of, the split, table and dictionary; `None`
/// once the result says why the model cannot be checked.
fn model_inputs(
    files: Files<'_>,
    result: &mut CheckResult,
) -> Option<(OlsReport, Split, Arc<Table>, Dictionary)> {
    let (split, table, dictionary) = checked_split(files, result)?;
    if result.status != crate::check::Status::Passed {
        result.fail("the split is not valid, so the model cannot be checked against it");
        return None;
    }
    let report: OlsReport = match files.get(3).map(|b| strict_json(b)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            result.fail(format!("the results file is not a model report: {e}"));
            return None;
        }
        None => {
            result.fail("the check needs the results file");
            return None;
        }
    };
    let plan: super::AnalysisPlan = match files.get(4).map(|b| strict_json(b)) {
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            result.fail(format!("the analysis plan is not valid: {e}"));
            return None;
        }
        None => {
            result.fail(
                "the check needs the analysis plan: a model is checked against the plan that \
                 declared it",
            );
            return None;
        }
    };
    // The plan must fit the dictionary, and the report must be the plan's model.
    super::reports::plan_fits_dictionary((&plan).into(), &dictionary, result);
    if report.outcome != plan.outcome {
        result.fail(format!(
            "the report's outcome {:?} is not the plan's {:?}",
            report.outcome, plan.outcome
        ));
    }
    if report.predictor != plan.predictor {
        result.fail(format!(
            "the report fits predictor {:?}; the plan declared {:?}",
            report.predictor, plan.predictor
        ));
    }
    if !dictionary.predictors.contains(&report.predictor) {
        result.fail(format!(
            "{:?} is not a permitted predictor",
            report.predictor
        ));
        return None;
    }
    Some((report, split, table, dictionary))
}

/// Training rows (predictor, outcome, group) and held-out rows by key (predictor, outcome).
pub(crate) type Partitions = (Vec<(f64, f64, String)>, BTreeMap<String, (f64, f64)>);

/// The table's rows as the split assigns them; `None` once the result says why not.
pub(crate) fn partitioned(
    report: &OlsReport,
    split: &Split,
    table: &Table,
    dictionary: &Dictionary,
    result: &mut CheckResult,
) -> Option<Partitions> {
    let (Some(x), Some(y), Some(k), Some(g)) = (
        table.column(&report.predictor),
        table.column(&dictionary.outcome),
        table.column(&dictionary.primary_key),
        table.column(&dictionary.group),
    ) else {
        result.fail("the table lacks the predictor, outcome, key or group column");
        return None;
    };
    let mut train = Vec::new();
    let mut held_out = BTreeMap::new();
    for row in &table.rows {
        let (Some(xv), Some(yv)) = (number(&row[x]), number(&row[y])) else {
            result.fail(format!(
                "key {:?}: predictor or outcome is not a number",
                &row[k]
            ));
            return None;
        };
        match split.partition.get(&row[k]).map(String::as_str) {
            Some("train") => train.push((xv, yv, row[g].to_owned())),
            Some(_) => {
                held_out.insert(row[k].to_owned(), (xv, yv));
            }
            None => {}
        }
    }
    if held_out.is_empty() {
        // The split check says why; an error over zero rows is not a figure.
        result.fail("no row is held out, so there is no held-out error to check");
        return None;
    }
    Some((train, held_out))
}

/// Compares every held-out prediction, the held-out RMSE and the training-mean comparator's
/// RMSE with the report; returns the two RMSEs recomputed.
fn check_held_out(
    report: &OlsReport,
    held_out: &BTreeMap<String, (f64, f64)>,
    line: &super::Line,
    scale: f64,
    result: &mut CheckResult,
) -> (f64, f64) {
    let mut reported: HashMap<&str, f64> = HashMap::new();
    for p in &report.held_out_predictions {
        if reported.insert(p.key.as_str(), p.predicted).is_some() {
            result.fail(format!(
                "the report predicts key {:?} twice; each held-out row has one prediction",
                p.key
            ));
        }
        if !held_out.contains_key(&p.key) {
            result.fail(format!(
                "the report predicts key {:?}, which is not a held-out row",
                p.key
            ));
        }
    }
    let mut errors = Vec::with_capacity(held_out.len());
    let mut comparator = Vec::with_capacity(held_out.len());
    let mut magnitude: f64 = 0.0;
    for (key, (xv, yv)) in held_out {
        let predicted = line.predict(*xv);
        let terms = line.magnitude_at(*xv) + yv.abs();
        magnitude = magnitude.max(terms);
        match reported.get(key.as_str()) {
            Some(r) => compare_within(
                result,
                &format!("prediction for {key}"),
                *r,
                predicted,
                scale,
                terms,
            ),
            None => result.fail(format!(
                "the report has no prediction for held-out key {key:?}"
            )),
        }
        errors.push(line.residual(*xv, *yv));
        comparator.push(line.dy(*yv));
    }
    let rmse = root_mean_square(errors.into_iter());
    let comparator_rmse = root_mean_square(comparator.into_iter());
    compare_within(
        result,
        "held-out RMSE",
        report.held_out_rmse,
        rmse,
        rmse.max(scale),
        magnitude,
    );
    compare_within(
        result,
        "training-mean comparator RMSE",
        report.mean_comparator_rmse,
        comparator_rmse,
        comparator_rmse.max(scale),
        magnitude,
    );
    (rmse, comparator_rmse)
}

/// The slope without each training group, compared with the report's; the figures' entries.
fn leave_one_group_out(
    train: &[(f64, f64, String)],
    groups: &BTreeSet<&str>,
    reported_logo: &HashMap<&str, f64>,
    slope_scale: impl Fn(f64) -> f64,
    result: &mut CheckResult,
) -> serde_json::Value {
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
        let Some(without) = fit(&rest) else {
            if reported_logo.contains_key(group) {
                result.fail(format!(
                    "the report gives a slope without group {group:?}, but without it the \
                     predictor does not vary (or too few rows remain), so there is none"
                ));
            }
            continue;
        };
        logo.push(serde_json::json!({"group": group, "slope": without.slope}));
        match reported_logo.get(group) {
            Some(r) => compare_within(
                result,
                &format!("slope without group {group}"),
                *r,
                without.slope,
                slope_scale(without.slope),
                without.slope,
            ),
            None => result.fail(format!(
                "the report lacks the slope without group {group:?}"
            )),
        }
    }
    serde_json::Value::Array(logo)
}

/// `1 − (error / spread)²`: the share of the spread's square an error leaves unexplained.
/// `None` when there is no spread to explain.
fn r_squared(error: f64, spread: f64) -> Option<f64> {
    (spread > 0.0).then(|| 1.0 - (error / spread).powi(2))
}

/// Why a model's files give no picture.
#[derive(Debug, thiserror::Error)]
pub enum NoPicture {
    /// The split is not valid; the split check's reasons.
    #[error("{}", .0.join("; "))]
    InvalidSplit(Vec<String>),
    /// The results file does not read as a model report.
    #[error("the results file is not a model report: {0}")]
    NotReport(#[source] serde_json::Error),
    /// No results file.
    #[error("there is no results file")]
    NoResults,
    /// The table lacks a column the picture needs.
    #[error("the table lacks the predictor, outcome or key column")]
    MissingColumns,
    /// A row's predictor or outcome is not a number.
    #[error("key {0:?}: predictor or outcome is not a number")]
    NotNumber(String),
    /// No row is in the training partition.
    #[error("no row is in the training partition")]
    NoTraining,
}

/// The series of a fitted model's picture, from the same files `univariate_ols` reads (table,
/// dictionary, split, results, plan): each row's predictor and outcome by partition, the
/// reported line and predictions, the training mean and the leave-one-group-out slopes.
/// Drawn only from a model whose split is valid; `Err` says why there is no picture.
pub fn ols_series(files: Files<'_>) -> Result<OlsSeries, NoPicture> {
    let mut scratch = CheckResult::new("univariate_ols");
    let Some((split, table, dictionary)) = checked_split(files, &mut scratch) else {
        return Err(NoPicture::InvalidSplit(scratch.reasons));
    };
    let report: OlsReport = match files.get(3).map(|b| strict_json(b)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(NoPicture::NotReport(e)),
        None => return Err(NoPicture::NoResults),
    };
    let (Some(x), Some(y), Some(k)) = (
        table.column(&report.predictor),
        table.column(&dictionary.outcome),
        table.column(&dictionary.primary_key),
    ) else {
        return Err(NoPicture::MissingColumns);
    };
    let mut series = OlsSeries {
        predictor: report.predictor.clone(),
        outcome: dictionary.outcome.clone(),
        slope: report.slope,
        intercept: report.intercept,
        ..OlsSeries::default()
    };
    let mut held_x = HashMap::new();
    for row in &table.rows {
        let (Some(xv), Some(yv)) = (number(&row[x]), number(&row[y])) else {
            return Err(NoPicture::NotNumber(row[k].to_owned()));
        };
        match split.partition.get(&row[k]).map(String::as_str) {
            Some("train") => series.train.push((xv, yv)),
            Some(_) => {
                series.held_out.push((xv, yv));
                held_x.insert(&row[k], xv);
            }
            None => {}
        }
    }
    if series.train.is_empty() {
        return Err(NoPicture::NoTraining);
    }
    series.training_mean =
        series.train.iter().map(|p| p.1).sum::<f64>() / series.train.len() as f64;
    series.predictions = report
        .held_out_predictions
        .iter()
        .filter_map(|p| held_x.get(p.key.as_str()).map(|&x| (x, p.predicted)))
        .collect();
    series.group_slopes = report
        .leave_one_group_out
        .iter()
        .map(|g| (g.group.clone(), g.slope))
        .collect();
    let mut check = CheckResult::new("univariate_ols");
    univariate_ols(files, &mut check);
    series.recomputed = check.figures;
    Ok(series)
}

/// What [`ols_series`] reads off the files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OlsSeries {
    /// The predictor's column.
    pub predictor: String,
    /// The outcome's column.
    pub outcome: String,
    /// Training rows `(x, y)`.
    pub train: Vec<(f64, f64)>,
    /// Held-out rows `(x, y)`.
    pub held_out: Vec<(f64, f64)>,
    /// Reported held-out predictions `(x, predicted)`.
    pub predictions: Vec<(f64, f64)>,
    /// The reported slope.
    pub slope: f64,
    /// The reported intercept.
    pub intercept: f64,
    /// The training mean of the outcome.
    pub training_mean: f64,
    /// Reported slopes without each group.
    pub group_slopes: Vec<(String, f64)>,
    /// The figures `univariate_ols` recomputes from the same files (its `figures`), so a
    /// picture's numbers are the check's, never the report's.
    pub recomputed: serde_json::Value,
}
