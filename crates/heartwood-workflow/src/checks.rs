//! The maintained tabular checks, as pure functions over the bytes of the files they read.
//!
//! Numerics: means first, then sums over deviations from the means (never the naive
//! `Σx² − n·x̄²`), in f64. Reported figures agree when `|reported − recomputed| ≤ TOLERANCE ·
//! max(1, |recomputed|)`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Deserialize;

use crate::check::{CheckResult, MAX_GROUPS};
use crate::table::{ColumnType, Dictionary, Table, TableError, number};

/// Relative tolerance for reported figures (absolute below 1).
pub const TOLERANCE: f64 = 1e-6;

/// The file bytes a check reads, in the order its definition lists them.
pub type Files<'a> = &'a [Vec<u8>];

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

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v;
        n += 1;
    }
    if n == 0 { 0.0 } else { sum / n as f64 }
}

fn compare(result: &mut CheckResult, what: &str, reported: f64, recomputed: f64) {
    if (reported - recomputed).abs() > TOLERANCE * recomputed.abs().max(1.0) {
        result.fail(format!(
            "{what}: the report says {reported}, recomputed {recomputed}"
        ));
    }
}

fn table_and_dictionary(
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

fn table_from(bytes: Option<&Vec<u8>>, what: &str, result: &mut CheckResult) -> Option<Arc<Table>> {
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

/// `python_syntax`: reads one Python source file and parses it, never running it. An in-process
/// parser (rustpython) accepts ordinary code at once; what it rejects is confirmed by Python's own
/// parser (`ast.parse`), so newer syntax it does not know is never failed on its word alone.
/// Unverified when the in-process parser rejects the file and no `python3` is available.
pub fn python_syntax(files: Files<'_>, result: &mut CheckResult) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let Some(source) = files.first() else {
        return result.fail("the check needs the source file");
    };
    if source.iter().all(u8::is_ascii_whitespace) {
        return result.fail("the source file is empty");
    }
    let Ok(text) = std::str::from_utf8(source) else {
        return result.fail("the source file is not UTF-8");
    };
    if rustpython_parser::parse(text, rustpython_parser::Mode::Module, "<source>").is_ok() {
        return;
    }
    let parser = Command::new("python3")
        .args([
            "-I",
            "-c",
            "import ast, sys\ntry:\n    ast.parse(sys.stdin.buffer.read())\nexcept SyntaxError as e:\n    print(f'line {e.lineno}: {e.msg}')\n    sys.exit(1)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match parser {
        Ok(child) => child,
        Err(e) => {
            return result
                .mark_unverified(format!("python3 is not available to parse the source: {e}"));
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(source);
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => {}
        Ok(out) if out.status.code() == Some(1) => result.fail(format!(
            "the source does not parse: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Ok(out) => result.mark_unverified(format!(
            "the Python parser did not finish: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => result.mark_unverified(format!("the Python parser could not run: {e}")),
    }
}

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
    let report: ReadinessReport = match files.get(2).map(|b| serde_json::from_slice(b)) {
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
    let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
    for row in &table.rows {
        *sizes.entry(row[g].to_owned()).or_default() += 1;
    }
    if sizes != report.group_sizes {
        result.fail(format!(
            "the report's group sizes {:?} differ from the table's {:?}",
            report.group_sizes, sizes
        ));
    }
    for (c, name) in table.columns.iter().enumerate() {
        let empty = table.rows.iter().filter(|r| r[c].is_empty()).count();
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
        compare(result, &format!("{name} minimum"), stated.min, min);
        compare(result, &format!("{name} maximum"), stated.max, max);
        compare(
            result,
            &format!("{name} mean"),
            stated.mean,
            mean(values.iter().copied()),
        );
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
    let dictionary: Dictionary = match files.first().map(|b| serde_json::from_slice(b)) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return result.fail(format!("the data dictionary is not valid: {e}")),
        None => return result.fail("the check needs the data dictionary"),
    };
    let plan: AnalysisPlan = match files.get(1).map(|b| serde_json::from_slice(b)) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return result.fail(format!("the plan is not in the expected form: {e}")),
        None => return result.fail("the check needs the plan"),
    };
    if plan.outcome != dictionary.outcome {
        result.fail(format!(
            "the plan's outcome {:?} is not the dictionary's {:?}",
            plan.outcome, dictionary.outcome
        ));
    }
    if !dictionary.predictors.contains(&plan.predictor) {
        result.fail(format!("{:?} is not a permitted predictor", plan.predictor));
    }
    if plan.group != dictionary.group {
        result.fail(format!(
            "the plan groups by {:?}; the dictionary's group is {:?}",
            plan.group, dictionary.group
        ));
    }
    let mut planned = plan.held_out_groups.clone();
    let mut declared = dictionary.held_out_groups.clone();
    planned.sort();
    declared.sort();
    if planned != declared {
        result.fail(format!(
            "the plan holds out {planned:?}; the dictionary declares {declared:?}"
        ));
    }
    if plan.split != "group_disjoint" {
        result.mark_unverified(format!(
            "the maintained checks support the group_disjoint split, not {:?}",
            plan.split
        ));
    }
}

/// `byte_comparison`: reads an original and a reproduction. Different bytes fail (with the first
/// differing offset). Identical bytes stay unverified: a copy matches too, and a reproduction
/// also needs evidence that a reviewed run produced it.
pub fn byte_comparison(files: Files<'_>, result: &mut CheckResult) {
    let (Some(original), Some(reproduced)) = (files.first(), files.get(1)) else {
        return result.fail("the check needs the original and the reproduction");
    };
    match original
        .iter()
        .zip(reproduced.iter())
        .position(|(a, b)| a != b)
    {
        Some(at) => result.fail(format!("the files differ first at byte {at}")),
        None if original.len() != reproduced.len() => result.fail(format!(
            "the files differ in length ({} and {} bytes)",
            original.len(),
            reproduced.len()
        )),
        None => result.mark_unverified(
            "the bytes are identical, which a copy would also be; reproduction needs evidence \
             that a reviewed run produced the file",
        ),
    }
}
