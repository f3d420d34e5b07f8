//! `linear_model`: a multivariable linear (least squares) or logistic model, declared by the
//! definition's parameters, recomputed on the training rows of a group-disjoint split by
//! `heartwood-stats` (the computation `heartwood stats fit` runs), and compared with the model
//! report: every coefficient and standard error, every held-out prediction, and the held-out
//! figures (RMSE and the training-mean comparator for gaussian; log loss, Brier score and AUC
//! for binomial). A fit the reference cannot vouch for is `unverified`, never `passed`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use heartwood_stats::{Column, Family, Model, Predictor, StdErrors};
use serde::Deserialize;

use super::model_plan::{self, ModelSpec, declared_by_plan};
use super::{Files, compare_within, strict_json, tabular::checked_split};
use crate::check::CheckResult;
use crate::recent::Recent;
use crate::registry::Params;
use crate::table::{Dictionary, Table};

/// The model report `linear_model` reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearReport {
    /// The outcome column.
    pub outcome: String,
    /// `gaussian` or `binomial`.
    pub family: String,
    /// The kind of standard errors (`classical`, `hc0`…`hc3`, `cluster`).
    pub std_errors: String,
    /// Training rows fitted.
    pub n_train: usize,
    /// Coefficients in the reference's order: `intercept` first, then the predictors.
    pub coefficients: Vec<ReportedCoefficient>,
    /// One prediction per held-out row (a probability for binomial).
    pub held_out_predictions: Vec<super::Prediction>,
    /// Held-out figures.
    pub held_out: HeldOut,
}

/// One reported coefficient.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedCoefficient {
    /// Its name, as `heartwood stats fit` names it.
    pub name: String,
    /// The estimate.
    pub estimate: f64,
    /// Its standard error.
    pub std_error: f64,
}

/// Held-out figures: `rmse` and `mean_comparator_rmse` (gaussian), `log_loss`, `brier` and
/// `auc` (binomial).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldOut {
    /// Root mean squared error of the held-out predictions.
    pub rmse: Option<f64>,
    /// The same for predicting every held-out row by the training mean.
    pub mean_comparator_rmse: Option<f64>,
    /// Mean negative log likelihood.
    pub log_loss: Option<f64>,
    /// Brier score.
    pub brier: Option<f64>,
    /// Area under the ROC curve.
    pub auc: Option<f64>,
}

type Spec = ModelSpec;

/// What `linear_model` computed, for the report's claims to be judged against.
#[derive(Debug)]
pub(crate) struct Fitted {
    /// The model as declared.
    pub spec: ModelSpec,
    /// The table.
    pub table: Arc<Table>,
    /// The dictionary.
    pub dictionary: Dictionary,
    /// The split.
    pub split: super::Split,
    /// Training rows (indices into the table).
    pub train: Vec<usize>,
    /// Held-out rows.
    pub held_out: Vec<usize>,
    /// The reference fit on the training rows.
    pub fit: heartwood_stats::Fit,
    /// The recomputed estimates by name.
    pub estimates: HashMap<String, f64>,
}

impl Fitted {
    /// The linear predictor of each of `rows` from the recomputed estimates, or `None` when
    /// one cannot be predicted (a level unseen in training, absorbed fixed effects).
    pub(crate) fn linear_predictors(&self, rows: &[usize]) -> Option<Vec<f64>> {
        let levels = training_levels(&self.spec, &self.table, &self.train);
        let terms = numeric_terms(&self.spec, &self.table, &self.estimates);
        rows.iter()
            .map(|&i| {
                linear_predictor(&self.spec, &self.table, i, &self.estimates, &terms, &levels)
            })
            .collect()
    }
}

/// `linear_model`: reads table, dictionary, split, model report, and the model plan when the
/// definition leaves the model to it (`declared_by: plan`).
pub fn linear_model(files: Files<'_>, params: &Params, result: &mut CheckResult) {
    checked(files, params, result);
}

/// The answers `linear_model` gave most recently, by the exact files and parameters: the report
/// stage's claims are judged against the model stage's computation.
type Answer = (CheckResult, Option<Arc<Fitted>>);
static RECENT: Recent<(Vec<Vec<u8>>, Params), Answer> = Recent::new(2);

/// Forgets the remembered answers.
pub(crate) fn forget() {
    RECENT.clear();
}

/// Runs `linear_model` (or recalls its answer on the same files and parameters), returning
/// what it computed when it got as far as a reliable fit.
pub(crate) fn checked(
    files: Files<'_>,
    params: &Params,
    result: &mut CheckResult,
) -> Option<Arc<Fitted>> {
    let (answer, fitted) = RECENT.answer(
        |(f, p)| f.as_slice() == files && p == params,
        || (files.to_vec(), params.clone()),
        || {
            let mut fresh = CheckResult::new(&result.check);
            let fitted = compute(files, params, &mut fresh).map(Arc::new);
            (fresh, fitted)
        },
    );
    super::merge(result, answer);
    fitted
}

/// The computation of `linear_model`.
fn compute(files: Files<'_>, params: &Params, result: &mut CheckResult) -> Option<Fitted> {
    let from_params = if declared_by_plan(params) {
        None
    } else {
        match model_plan::from_params(params) {
            Ok(s) => Some(s),
            Err(why) => {
                result.fail(why.to_string());
                return None;
            }
        }
    };
    let (split, table, dictionary) = checked_split(files, result)?;
    let spec = match from_params {
        Some(spec) => spec,
        None => {
            let plan = model_plan::read_plan(files, 4, result)?;
            model_plan::from_plan(&plan, &dictionary, params, result)?
        }
    };
    permitted(&spec, &dictionary, result);
    let report: LinearReport = match files.get(3).map(|b| strict_json(b)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            result.fail(format!("the model report is not valid: {e}"));
            return None;
        }
        None => {
            result.fail("the check needs the model report");
            return None;
        }
    };
    declared(&spec, &report, result);
    let key = table.column(&dictionary.primary_key)?;
    let mut train = Vec::new();
    let mut held_out = Vec::new();
    for (i, row) in table.rows.iter().enumerate() {
        match split.partition.get(&row[key]).map(String::as_str) {
            Some("train") => train.push(i),
            Some("held_out") => held_out.push(i),
            _ => {}
        }
    }
    let model = match model(&spec, &table, &train) {
        Ok(m) => m,
        Err(why) => {
            result.fail(why.to_string());
            return None;
        }
    };
    let fit = match heartwood_stats::fit(&model) {
        Ok(fit) => fit,
        Err(e) => {
            result.fail(format!("the declared model cannot be fitted: {e}"));
            return None;
        }
    };
    if fit.status == heartwood_stats::Status::Unreliable {
        result.mark_unverified(format!(
            "the reference cannot vouch for this model's figures ({}; condition number {:.3e}), \
             so the report cannot be checked",
            fit.reason.as_deref().unwrap_or("unreliable"),
            fit.condition_number
        ));
        return None;
    }
    if report.n_train != fit.n {
        result.fail(format!(
            "the report fits {} training rows; the split has {}",
            report.n_train, fit.n
        ));
    }
    let coefficients = compare_coefficients(&report, &fit, result);
    let figures = held_out_figures(
        &spec,
        &table,
        key,
        &held_out,
        &train,
        &coefficients,
        &report,
        result,
    );
    result.figures = serde_json::json!({
        "n_train": fit.n,
        "family": spec.family.name(),
        "std_errors": fit.std_errors,
        "clusters": fit.clusters,
        "coefficients": fit.coefficients,
        "residual_sd": fit.residual_sd,
        "r_squared": fit.r_squared,
        "log_likelihood": fit.log_likelihood,
        "condition_number": fit.condition_number,
        "held_out": figures,
    });
    Some(Fitted {
        spec,
        table,
        dictionary,
        split,
        train,
        held_out,
        fit,
        estimates: coefficients,
    })
}

/// The report must be the model the definition declares, on permitted predictors.
fn permitted(spec: &Spec, d: &Dictionary, result: &mut CheckResult) {
    if spec.outcome != d.outcome {
        result.fail(format!(
            "the definition's outcome {:?} is not the dictionary's {:?}",
            spec.outcome, d.outcome
        ));
    }
    for p in spec.predictors.iter().chain(&spec.categorical) {
        if !d.predictors.contains(p) {
            result.fail(format!(
                "{p:?} is not a permitted predictor in the dictionary"
            ));
        }
    }
}

fn declared(spec: &Spec, report: &LinearReport, result: &mut CheckResult) {
    if report.outcome != spec.outcome {
        result.fail(format!(
            "the report models {:?}; the definition declares {:?}",
            report.outcome, spec.outcome
        ));
    }
    if report.family != spec.family.name() {
        result.fail(format!(
            "the report's family is {:?}; the definition declares {:?}",
            report.family,
            spec.family.name()
        ));
    }
    if report.std_errors != spec.std_errors {
        result.fail(format!(
            "the report's standard errors are {:?}; the definition declares {:?}",
            report.std_errors, spec.std_errors
        ));
    }
}

/// Why the table cannot give the model a column it names.
#[derive(Debug, thiserror::Error)]
enum ColumnError {
    #[error("the table has no column {0:?}")]
    Missing(String),
    #[error("column {column:?}: the value {value:?} is not a plain decimal number")]
    NotDecimal { column: String, value: String },
}

fn column_of(table: &Table, name: &str) -> Result<usize, ColumnError> {
    table
        .column(name)
        .ok_or_else(|| ColumnError::Missing(name.to_owned()))
}

fn numeric(table: &Table, name: &str, rows: &[usize]) -> Result<Column, ColumnError> {
    let at = column_of(table, name)?;
    Column::from_text(rows.iter().map(|&i| &table.rows[i][at])).map_err(|(row, _)| {
        ColumnError::NotDecimal {
            column: name.to_owned(),
            value: table.rows[rows[row]][at].to_owned(),
        }
    })
}

fn labels(table: &Table, name: &str, rows: &[usize]) -> Result<Vec<String>, ColumnError> {
    let at = column_of(table, name)?;
    Ok(rows.iter().map(|&i| table.rows[i][at].to_owned()).collect())
}

fn model(spec: &Spec, table: &Table, rows: &[usize]) -> Result<Model, ColumnError> {
    let mut predictors = Vec::new();
    for name in &spec.predictors {
        predictors.push(Predictor::Numeric {
            name: name.clone(),
            column: numeric(table, name, rows)?,
        });
    }
    for name in &spec.categorical {
        predictors.push(Predictor::Categorical {
            name: name.clone(),
            labels: labels(table, name, rows)?,
        });
    }
    Ok(Model {
        outcome: numeric(table, &spec.outcome, rows)?,
        predictors,
        intercept: spec.intercept,
        fixed_effects: match &spec.fixed_effects {
            Some(name) => Some(labels(table, name, rows)?),
            None => None,
        },
        family: spec.family,
        errors: match spec.std_errors.as_str() {
            "hc0" => StdErrors::Hc0,
            "hc1" => StdErrors::Hc1,
            "hc2" => StdErrors::Hc2,
            "hc3" => StdErrors::Hc3,
            "cluster" => StdErrors::Cluster(labels(
                table,
                spec.cluster.as_deref().unwrap_or_default(),
                rows,
            )?),
            _ => StdErrors::Classical,
        },
    })
}

/// Compares every coefficient, in order; returns the recomputed estimates by name.
fn compare_coefficients(
    report: &LinearReport,
    fit: &heartwood_stats::Fit,
    result: &mut CheckResult,
) -> HashMap<String, f64> {
    let names: Vec<&str> = fit.coefficients.iter().map(|c| c.name.as_str()).collect();
    let reported: Vec<&str> = report
        .coefficients
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    if names != reported {
        result.fail(format!(
            "the report's coefficients are [{}]; the declared model's are [{}], in that order",
            reported.join(", "),
            names.join(", ")
        ));
    }
    let mut estimates = HashMap::new();
    for c in &fit.coefficients {
        let (Some(estimate), Some(se)) = (c.estimate, c.std_error) else {
            continue;
        };
        estimates.insert(c.name.clone(), estimate);
        let Some(r) = report.coefficients.iter().find(|r| r.name == c.name) else {
            continue;
        };
        // An intercept shifts every prediction it implies: judged against the residual
        // scale when the model has one, never against its own size alone.
        let scale = match fit.residual_sd {
            Some(residual) if c.name == "intercept" => estimate.abs().max(se).min(residual),
            _ => estimate.abs().max(se),
        };
        let what = format!("coefficient {}", c.name);
        compare_within(result, &what, r.estimate, estimate, scale, estimate);
        let what = format!("standard error of {}", c.name);
        compare_within(result, &what, r.std_error, se, se, se);
    }
    estimates
}

/// The linear predictor of row `i` from the recomputed estimates (`None` when a level of a
/// categorical predictor was not seen in training, or the model absorbs fixed effects).
/// Each numeric predictor's column and estimate, found once for every row's prediction;
/// `None` when the table or the estimates lack one (then no row can be predicted).
fn numeric_terms(
    spec: &Spec,
    table: &Table,
    estimates: &HashMap<String, f64>,
) -> Option<Vec<(usize, f64)>> {
    spec.predictors
        .iter()
        .map(|name| Some((table.column(name)?, *estimates.get(name)?)))
        .collect()
}

fn linear_predictor(
    spec: &Spec,
    table: &Table,
    i: usize,
    estimates: &HashMap<String, f64>,
    terms: &Option<Vec<(usize, f64)>>,
    levels: &BTreeMap<&str, BTreeSet<&str>>,
) -> Option<f64> {
    if spec.fixed_effects.is_some() {
        return None;
    }
    let mut eta = if spec.intercept {
        *estimates.get("intercept")?
    } else {
        0.0
    };
    for &(at, estimate) in terms.as_deref()? {
        let x = crate::table::number(&table.rows[i][at])?;
        eta += estimate * x;
    }
    for name in &spec.categorical {
        let level = &table.rows[i][table.column(name)?];
        if !levels.get(name.as_str())?.contains(level) {
            return None;
        }
        let dummy = estimates
            .get(&format!("{name}[T.{level}]"))
            .or_else(|| estimates.get(&format!("{name}[{level}]")));
        eta += dummy.copied().unwrap_or(0.0);
    }
    Some(eta)
}

/// The levels of each categorical predictor seen in training.
fn training_levels<'a>(
    spec: &'a Spec,
    table: &'a Table,
    train: &[usize],
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut levels = BTreeMap::new();
    for name in &spec.categorical {
        if let Some(at) = table.column(name) {
            levels.insert(
                name.as_str(),
                train.iter().map(|&i| &table.rows[i][at]).collect(),
            );
        }
    }
    levels
}

#[allow(clippy::too_many_arguments)]
fn held_out_figures(
    spec: &Spec,
    table: &Table,
    key: usize,
    held_out: &[usize],
    train: &[usize],
    estimates: &HashMap<String, f64>,
    report: &LinearReport,
    result: &mut CheckResult,
) -> serde_json::Value {
    let Some(y_at) = table.column(&spec.outcome) else {
        return serde_json::Value::Null;
    };
    let levels = training_levels(spec, table, train);
    let terms = numeric_terms(spec, table, estimates);
    let mut reported: HashMap<&str, f64> = HashMap::new();
    for p in &report.held_out_predictions {
        if reported.insert(p.key.as_str(), p.predicted).is_some() {
            result.fail(format!("the report predicts row {:?} twice", p.key));
        }
    }
    let mut outcomes = Vec::new();
    let mut predictions = Vec::new();
    let mut keyed = Vec::new();
    for &i in held_out {
        let row_key = &table.rows[i][key];
        let Some(eta) = linear_predictor(spec, table, i, estimates, &terms, &levels) else {
            result.mark_unverified(format!(
                "held-out row {row_key:?} cannot be predicted from the training fit (a level \
                 unseen in training, absorbed fixed effects, or a missing value)"
            ));
            return serde_json::Value::Null;
        };
        let predicted = match spec.family {
            Family::Gaussian => eta,
            Family::Binomial => 1.0 / (1.0 + (-eta).exp()),
        };
        let y = crate::table::number(&table.rows[i][y_at]).unwrap_or(f64::NAN);
        match reported.remove(row_key) {
            Some(r) => compare_within(
                result,
                &format!("held-out prediction for {row_key:?}"),
                r,
                predicted,
                1.0f64.max(predicted.abs()),
                predicted,
            ),
            None => result.fail(format!(
                "the report gives no prediction for held-out row {row_key:?}"
            )),
        }
        outcomes.push(y);
        predictions.push(predicted);
        keyed.push(serde_json::json!({"key": row_key, "predicted": predicted}));
    }
    for extra in reported.keys() {
        result.fail(format!(
            "the report predicts {extra:?}, which is not a held-out row"
        ));
    }
    let mut figures = match spec.family {
        Family::Gaussian => {
            gaussian_figures(table, train, y_at, &outcomes, &predictions, report, result)
        }
        Family::Binomial => binomial_figures(&outcomes, &predictions, report, result),
    };
    if let Some(map) = figures.as_object_mut() {
        map.insert("predictions".into(), serde_json::Value::Array(keyed));
    }
    figures
}

fn rmse(errors: impl Iterator<Item = f64> + Clone) -> f64 {
    super::root_mean_square(errors)
}

fn gaussian_figures(
    table: &Table,
    train: &[usize],
    y_at: usize,
    outcomes: &[f64],
    predictions: &[f64],
    report: &LinearReport,
    result: &mut CheckResult,
) -> serde_json::Value {
    let train_mean = super::mean(
        train
            .iter()
            .filter_map(|&i| crate::table::number(&table.rows[i][y_at])),
    );
    let model_rmse = rmse(outcomes.iter().zip(predictions).map(|(y, p)| y - p));
    let comparator = rmse(outcomes.iter().map(|y| y - train_mean));
    for (what, reported, recomputed) in [
        ("held-out RMSE", report.held_out.rmse, model_rmse),
        (
            "held-out training-mean comparator RMSE",
            report.held_out.mean_comparator_rmse,
            comparator,
        ),
    ] {
        match reported {
            Some(r) => compare_within(
                result,
                what,
                r,
                recomputed,
                recomputed.max(1e-12),
                recomputed,
            ),
            None => result.fail(format!("the report does not state the {what}")),
        }
    }
    serde_json::json!({"rmse": model_rmse, "mean_comparator_rmse": comparator})
}

fn binomial_figures(
    outcomes: &[f64],
    predictions: &[f64],
    report: &LinearReport,
    result: &mut CheckResult,
) -> serde_json::Value {
    let recomputed = (
        heartwood_stats::metrics::log_loss(outcomes, predictions),
        heartwood_stats::metrics::brier_score(outcomes, predictions),
        heartwood_stats::metrics::auc(outcomes, predictions),
    );
    let (Ok(log_loss), Ok(brier), Ok(auc)) = recomputed else {
        result.mark_unverified(
            "the held-out figures cannot be computed (an outcome other than 0 or 1, or only one \
             class among the held-out rows)",
        );
        return serde_json::Value::Null;
    };
    for (what, reported, value) in [
        ("held-out log loss", report.held_out.log_loss, log_loss),
        ("held-out Brier score", report.held_out.brier, brier),
        ("held-out AUC", report.held_out.auc, auc),
    ] {
        match reported {
            Some(r) => compare_within(result, what, r, value, value.max(1e-3), value),
            None => result.fail(format!("the report does not state the {what}")),
        }
    }
    serde_json::json!({"log_loss": log_loss, "brier": brier, "auc": auc})
}
