//! Where a model is declared: by the definition's `linear_model` parameters (a lab that fixes its
//! model), or by the run's analysis plan (the maintained `tabular-linear` and
//! `tabular-logistic`, whose researcher accepts the model at the plan stage). Owns the model
//! plan's format, the `model_plan` check that binds a plan to the data dictionary, and the one
//! `ModelSpec` both declarations become, so `linear_model` judges a report against the same
//! declaration whichever wrote it.

use heartwood_stats::Family;
use serde::Deserialize;

use super::{Files, strict_json};
use crate::check::CheckResult;
use crate::registry::Params;
use crate::table::Dictionary;

/// The standard errors a declaration may ask for.
pub const STD_ERRORS: &[&str] = &["classical", "hc0", "hc1", "hc2", "hc3", "cluster"];

/// An analysis plan that declares a multivariable model (JSON).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPlan {
    /// The outcome column (0/1 for binomial).
    pub outcome: String,
    /// Numeric predictors, in the order their coefficients are reported.
    pub predictors: Vec<String>,
    /// Predictors to dummy code.
    #[serde(default)]
    pub categorical: Vec<String>,
    /// Whether the model has an intercept (default true).
    #[serde(default = "yes")]
    pub intercept: bool,
    /// `gaussian` or `binomial`.
    pub family: String,
    /// `classical`, `hc0`…`hc3` or `cluster`.
    pub std_errors: String,
    /// The clusters' column, exactly when `std_errors` is `cluster`.
    #[serde(default)]
    pub cluster: Option<String>,
    /// The grouping column (the dictionary's).
    pub group: String,
    /// The split: `group_disjoint`.
    pub split: String,
    /// Groups held out (the dictionary's).
    pub held_out_groups: Vec<String>,
}

fn yes() -> bool {
    true
}

/// A model as declared, whichever declared it.
#[derive(Debug, Clone)]
pub(super) struct ModelSpec {
    pub outcome: String,
    pub predictors: Vec<String>,
    pub categorical: Vec<String>,
    pub intercept: bool,
    pub std_errors: String,
    pub cluster: Option<String>,
    pub fixed_effects: Option<String>,
    pub family: Family,
}

/// Why a definition's or a plan's model declaration cannot be used; `who` names which.
#[derive(Debug, thiserror::Error)]
pub(super) enum DeclarationError {
    #[error("unknown family {0:?}")]
    UnknownFamily(String),
    #[error("{who} asks for {asked:?} standard errors; known are {}", STD_ERRORS.join(", "))]
    UnknownErrors { who: &'static str, asked: String },
    #[error("{who} must give `cluster` exactly when `std_errors` is `cluster`")]
    ClusterMismatch { who: &'static str },
    #[error(
        "the definition gives linear_model no outcome (give `outcome` and `predictors`, or \
         `declared_by: plan`)"
    )]
    NoOutcome,
}

fn family(name: Option<&str>) -> Result<Family, DeclarationError> {
    match name {
        None | Some("gaussian") => Ok(Family::Gaussian),
        Some("binomial") => Ok(Family::Binomial),
        Some(other) => Err(DeclarationError::UnknownFamily(other.to_owned())),
    }
}

fn cluster_rule(
    std_errors: &str,
    cluster: Option<&String>,
    who: &'static str,
) -> Result<(), DeclarationError> {
    if !STD_ERRORS.contains(&std_errors) {
        return Err(DeclarationError::UnknownErrors {
            who,
            asked: std_errors.to_owned(),
        });
    }
    if (std_errors == "cluster") != cluster.is_some() {
        return Err(DeclarationError::ClusterMismatch { who });
    }
    Ok(())
}

/// Whether the definition leaves the model to the run's plan (`declared_by: plan`).
pub(super) fn declared_by_plan(params: &Params) -> bool {
    params.get("declared_by").and_then(|v| v.as_str()) == Some("plan")
}

/// The model the definition's parameters declare.
pub(super) fn from_params(params: &Params) -> Result<ModelSpec, DeclarationError> {
    let text = |name: &str| params.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    let list = |name: &str| -> Vec<String> {
        params
            .get(name)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let outcome = text("outcome").ok_or(DeclarationError::NoOutcome)?;
    let std_errors = text("std_errors").unwrap_or_else(|| "classical".into());
    let cluster = text("cluster");
    cluster_rule(&std_errors, cluster.as_ref(), "the definition")?;
    Ok(ModelSpec {
        outcome,
        predictors: list("predictors"),
        categorical: list("categorical"),
        intercept: params
            .get("intercept")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true),
        std_errors,
        cluster,
        fixed_effects: text("fixed_effects"),
        family: family(text("family").as_deref())?,
    })
}

/// The model a plan declares, when it fits the dictionary and what the definition pins
/// (`family`); every problem is recorded on `result`.
pub(super) fn from_plan(
    plan: &ModelPlan,
    dictionary: &Dictionary,
    params: &Params,
    result: &mut CheckResult,
) -> Option<ModelSpec> {
    let before = result.reasons.len();
    let data = super::reports::PlannedData {
        outcome: &plan.outcome,
        predictors: plan
            .predictors
            .iter()
            .chain(&plan.categorical)
            .map(String::as_str)
            .collect(),
        group: &plan.group,
        held_out_groups: &plan.held_out_groups,
    };
    super::reports::plan_fits_dictionary(data, dictionary, result);
    if plan.split != "group_disjoint" {
        result.fail(format!(
            "the checks support the group_disjoint split, not {:?}",
            plan.split
        ));
    }
    let family = match family(Some(&plan.family)) {
        Ok(f) => Some(f),
        Err(why) => {
            result.fail(format!("the plan's family: {why}"));
            None
        }
    };
    if let (Some(pinned), Some(f)) = (params.get("family").and_then(|v| v.as_str()), family)
        && pinned != f.name()
    {
        result.fail(format!(
            "this workflow fits the {pinned} family; the plan declares {:?}",
            plan.family
        ));
    }
    if let Err(why) = cluster_rule(&plan.std_errors, plan.cluster.as_ref(), "the plan") {
        result.fail(why.to_string());
    }
    if let Some(cluster) = &plan.cluster
        && !dictionary.columns.contains_key(cluster)
    {
        result.fail(format!(
            "the plan clusters by {cluster:?}, which the dictionary does not describe"
        ));
    }
    if result.reasons.len() > before {
        return None;
    }
    Some(ModelSpec {
        outcome: plan.outcome.clone(),
        predictors: plan.predictors.clone(),
        categorical: plan.categorical.clone(),
        intercept: plan.intercept,
        std_errors: plan.std_errors.clone(),
        cluster: plan.cluster.clone(),
        fixed_effects: None,
        family: family?,
    })
}

/// Reads the model plan at `at`, recording why not on `result`.
pub(super) fn read_plan(
    files: Files<'_>,
    at: usize,
    result: &mut CheckResult,
) -> Option<ModelPlan> {
    match files.get(at).map(|b| strict_json::<ModelPlan>(b)) {
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => {
            result.fail(format!("the model plan is not in the expected form: {e}"));
            None
        }
        None => {
            result.fail("the check needs the model plan");
            None
        }
    }
}

/// `model_plan`: reads dictionary, plan. The plan declares a model the dictionary permits (its
/// outcome, permitted predictors, a known kind of standard errors with the cluster column
/// exactly when clustered), the dictionary's grouping and held-out groups, a group-disjoint
/// split, and the family the definition pins, if it pins one.
pub fn model_plan(files: Files<'_>, params: &Params, result: &mut CheckResult) {
    let dictionary: Dictionary = match files.first().map(|b| strict_json(b)) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return result.fail(format!("the data dictionary is not valid: {e}")),
        None => return result.fail("the check needs the data dictionary"),
    };
    let Some(plan) = read_plan(files, 1, result) else {
        return;
    };
    if let Some(spec) = from_plan(&plan, &dictionary, params, result) {
        result.figures = serde_json::json!({
            "outcome": spec.outcome,
            "predictors": spec.predictors,
            "categorical": spec.categorical,
            "intercept": spec.intercept,
            "family": spec.family.name(),
            "std_errors": spec.std_errors,
            "cluster": spec.cluster,
        });
    }
}
