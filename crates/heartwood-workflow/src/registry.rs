//! The check registry: every check this build implements, with its id, its version and the
//! parameters a definition may give it. A definition names checks by id (optionally pinning a
//! version) with parameters; availability is a lookup here, so a definition naming a check the
//! registry lacks is listed as unsupported, saying which, and never run as if it were checked.

use std::collections::BTreeMap;

use serde::Serialize;

/// A parameter's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "values")]
pub enum ParamKind {
    /// A string (a column name).
    Text,
    /// A list of strings (column names).
    TextList,
    /// `true` or `false`.
    Bool,
    /// One of the listed strings.
    OneOf(&'static [&'static str]),
}

/// One declared parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Param {
    /// Its name in a definition's `params`.
    pub name: &'static str,
    /// Its type.
    pub kind: ParamKind,
    /// Whether a definition must give it.
    pub required: bool,
    /// What it means, and its default when optional.
    pub description: &'static str,
}

/// One registered check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CheckSpec {
    /// The id definitions name.
    pub id: &'static str,
    /// Its version: changes whenever what it accepts changes. The record names it.
    pub version: &'static str,
    /// What it proves, in one line.
    pub summary: &'static str,
    /// The parameters it takes (none for most checks: they read their settings from files).
    pub params: &'static [Param],
    /// Rules that tie parameters to each other, beyond each one's type.
    #[serde(skip)]
    pub rules: Rules,
}

/// Rules that relate a check's parameters to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rules {
    /// None beyond each parameter's own.
    #[default]
    None,
    /// A model is declared either by the parameters (`outcome` and `predictors`, `cluster`
    /// exactly with `std_errors: cluster`) or by the run's plan (`declared_by: plan`, then
    /// only `family` may pin what the plan may declare).
    ModelDeclaration,
    /// `report_claims`: a `linear_model` is declared as for [`Rules::ModelDeclaration`]; the
    /// univariate model takes no other parameter.
    ClaimsModel,
}

impl Rules {
    fn problems(self, params: &Params) -> Vec<String> {
        match self {
            Rules::None => Vec::new(),
            Rules::ModelDeclaration => model_declaration_problems(params),
            Rules::ClaimsModel => {
                let mut rest = params.clone();
                let model = rest.remove("model");
                if model.as_ref().and_then(|v| v.as_str()) == Some("linear_model") {
                    model_declaration_problems(&rest)
                } else {
                    rest.keys()
                        .map(|name| {
                            format!(
                                "parameter {name:?} declares a linear_model; give `model: \
                                 linear_model` with it"
                            )
                        })
                        .collect()
                }
            }
        }
    }
}

fn model_declaration_problems(params: &Params) -> Vec<String> {
    let by_plan = params.get("declared_by").and_then(|v| v.as_str()) == Some("plan");
    let mut problems = Vec::new();
    if by_plan {
        for name in params.keys() {
            if !matches!(name.as_str(), "declared_by" | "family") {
                problems.push(format!(
                    "parameter {name:?} cannot be given with `declared_by: plan` (the plan \
                     declares the model; only `family` may pin it)"
                ));
            }
        }
        return problems;
    }
    for name in ["outcome", "predictors"] {
        if !params.contains_key(name) {
            problems.push(format!(
                "needs the parameter {name:?} (or `declared_by: plan`)"
            ));
        }
    }
    let clustered = params.get("std_errors").and_then(|v| v.as_str()) == Some("cluster");
    if clustered != params.contains_key("cluster") {
        problems.push("gives `cluster` exactly when `std_errors` is `cluster`".into());
    }
    problems
}

/// Parameters as a definition gives them.
pub type Params = BTreeMap<String, serde_json::Value>;

impl CheckSpec {
    /// Every problem with `params` for this check, at once (empty when they fit).
    pub fn param_problems(&self, params: &Params) -> Vec<String> {
        let mut problems = Vec::new();
        for name in params.keys() {
            if !self.params.iter().any(|p| p.name == name) {
                let known: Vec<&str> = self.params.iter().map(|p| p.name).collect();
                problems.push(if known.is_empty() {
                    format!("takes no parameters, but is given {name:?}")
                } else {
                    format!(
                        "has no parameter {name:?}; its parameters are {}",
                        known.join(", ")
                    )
                });
            }
        }
        for param in self.params {
            match params.get(param.name) {
                None if param.required => {
                    problems.push(format!("needs the parameter {:?}", param.name));
                }
                None => {}
                Some(value) => {
                    if let Err(why) = fits(param.kind, value) {
                        problems.push(format!("parameter {:?} {why}", param.name));
                    }
                }
            }
        }
        problems.extend(self.rules.problems(params));
        problems
    }
}

/// Why a parameter's value does not fit its kind (said after the parameter's name).
#[derive(Debug, thiserror::Error)]
enum Unfit {
    #[error("must be a non-empty string")]
    Text,
    #[error("must be true or false")]
    Bool,
    #[error("must be a non-empty list of non-empty strings")]
    TextList,
    #[error("must be one of {}", .0.join(", "))]
    OneOf(&'static [&'static str]),
}

fn fits(kind: ParamKind, value: &serde_json::Value) -> Result<(), Unfit> {
    use serde_json::Value;
    match (kind, value) {
        (ParamKind::Text, Value::String(s)) if !s.is_empty() => Ok(()),
        (ParamKind::Text, _) => Err(Unfit::Text),
        (ParamKind::Bool, Value::Bool(_)) => Ok(()),
        (ParamKind::Bool, _) => Err(Unfit::Bool),
        (ParamKind::TextList, Value::Array(items))
            if !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| !s.is_empty())) =>
        {
            Ok(())
        }
        (ParamKind::TextList, _) => Err(Unfit::TextList),
        (ParamKind::OneOf(allowed), Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
        (ParamKind::OneOf(allowed), _) => Err(Unfit::OneOf(allowed)),
    }
}

/// Why a check a definition names is not available in this build (said after "cannot run
/// the check").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRegistered {
    /// No check has this id.
    #[error("{0} (not in this Heartwood's check registry)")]
    Unknown(String),
    /// The check is registered at another version.
    #[error("{id} version {asked} (this Heartwood registers version {registered})")]
    OtherVersion {
        /// The check.
        id: String,
        /// The version the definition pins.
        asked: String,
        /// The version this build registers.
        registered: String,
    },
}

/// The registry: the checks a build implements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registry {
    checks: Vec<CheckSpec>,
}

const NO_PARAMS: &[Param] = &[];

const P_DECLARED_BY: Param = Param {
    name: "declared_by",
    kind: ParamKind::OneOf(&["definition", "plan"]),
    required: false,
    description: "who declares the model: these parameters (default), or the run's model \
                  plan, read as the check's fifth file and bound to the dictionary as \
                  `model_plan` binds it",
};

const P_OUTCOME: Param = Param {
    name: "outcome",
    kind: ParamKind::Text,
    required: false,
    description: "the outcome column (0/1 for the binomial family)",
};

const P_PREDICTORS: Param = Param {
    name: "predictors",
    kind: ParamKind::TextList,
    required: false,
    description: "numeric predictor columns, in the order their coefficients are reported",
};

const P_CATEGORICAL: Param = Param {
    name: "categorical",
    kind: ParamKind::TextList,
    required: false,
    description: "predictor columns to dummy code (levels sorted, the first the reference, \
                  named `column[T.level]`); default none",
};

const P_INTERCEPT: Param = Param {
    name: "intercept",
    kind: ParamKind::Bool,
    required: false,
    description: "whether the model has an intercept (named `intercept`); default true",
};

const P_STD_ERRORS: Param = Param {
    name: "std_errors",
    kind: ParamKind::OneOf(&["classical", "hc0", "hc1", "hc2", "hc3", "cluster"]),
    required: false,
    description: "the standard errors the report must state; default classical; \
                  `cluster` needs `cluster`",
};

const P_CLUSTER: Param = Param {
    name: "cluster",
    kind: ParamKind::Text,
    required: false,
    description: "the column whose values are the clusters of CR1 errors",
};

const P_FIXED_EFFECTS: Param = Param {
    name: "fixed_effects",
    kind: ParamKind::Text,
    required: false,
    description: "a column absorbed as one-way fixed effects (counted, not reported)",
};

const P_FAMILY: Param = Param {
    name: "family",
    kind: ParamKind::OneOf(&["gaussian", "binomial"]),
    required: false,
    description: "gaussian (least squares; held-out RMSE) or binomial (logistic; held-out \
                  log loss, Brier score, AUC); default gaussian",
};

/// The parameters of `linear_model`.
pub const LINEAR_MODEL_PARAMS: &[Param] = &[
    P_DECLARED_BY,
    P_OUTCOME,
    P_PREDICTORS,
    P_CATEGORICAL,
    P_INTERCEPT,
    P_STD_ERRORS,
    P_CLUSTER,
    P_FIXED_EFFECTS,
    P_FAMILY,
];

/// The parameters of `report_claims`: which model's figures the report states, and for a
/// `linear_model`, the same declaration the model stage's `linear_model` is given.
pub const REPORT_CLAIMS_PARAMS: &[Param] = &[
    Param {
        name: "model",
        kind: ParamKind::OneOf(&["univariate_ols", "linear_model"]),
        required: false,
        description: "the check whose model the report describes: univariate_ols (default; \
                      the files are report, claims, table, dictionary, split, model report, \
                      analysis plan) or linear_model (the same files, the model plan last, and \
                      the model declared by the parameters below as for `linear_model`)",
    },
    P_DECLARED_BY,
    P_OUTCOME,
    P_PREDICTORS,
    P_CATEGORICAL,
    P_INTERCEPT,
    P_STD_ERRORS,
    P_CLUSTER,
    P_FIXED_EFFECTS,
    P_FAMILY,
];

const fn check(id: &'static str, version: &'static str, summary: &'static str) -> CheckSpec {
    CheckSpec {
        id,
        version,
        summary,
        params: NO_PARAMS,
        rules: Rules::None,
    }
}

/// The parameters of `model_plan`.
pub const MODEL_PLAN_PARAMS: &[Param] = &[Param {
    name: "family",
    kind: ParamKind::OneOf(&["gaussian", "binomial"]),
    required: false,
    description: "the family every plan of this workflow must declare; default any",
}];

/// The checks this build implements.
const BUILTIN: &[CheckSpec] = &[
    check(
        "data_dictionary",
        "1",
        "the table obeys its data dictionary",
    ),
    check(
        "readiness_report",
        "1",
        "every count and summary of the readiness report matches the table",
    ),
    check(
        "analysis_plan",
        "1",
        "the plan's outcome, predictor, grouping and held-out groups are the dictionary's",
    ),
    check(
        "group_disjoint_split",
        "1",
        "no group is on both sides of the split; the held-out rows are the held-out groups'",
    ),
    check(
        "univariate_ols",
        "1",
        "the model report's OLS figures match recomputation",
    ),
    CheckSpec {
        id: "linear_model",
        version: "1",
        summary: "a multivariable linear or logistic model's coefficients, standard errors and \
                  held-out figures match recomputation on the training rows",
        params: LINEAR_MODEL_PARAMS,
        rules: Rules::ModelDeclaration,
    },
    CheckSpec {
        id: "model_plan",
        version: "1",
        summary: "the plan declares a model the dictionary permits (outcome, predictors, \
                  standard errors and clusters), its grouping, held-out groups and a \
                  group-disjoint split",
        params: MODEL_PLAN_PARAMS,
        rules: Rules::None,
    },
    check(
        "python_syntax",
        "1",
        "the Python file parses; it is never run",
    ),
    check("nonempty_report", "1", "the report has at least 20 words"),
    CheckSpec {
        id: "report_claims",
        version: "1",
        summary: "every figure in the report's results is bound to a claim and is the \
                  recomputed quantity to the digits written",
        params: REPORT_CLAIMS_PARAMS,
        rules: Rules::ClaimsModel,
    },
    check(
        "byte_comparison",
        "1",
        "the reproduction has the original's bytes (never passes on bytes alone)",
    ),
];

impl Registry {
    /// The checks this build implements.
    pub fn builtin() -> Registry {
        Registry {
            checks: BUILTIN.to_vec(),
        }
    }

    /// This registry without the check `id` (what a build lacking it would answer).
    pub fn without(mut self, id: &str) -> Registry {
        self.checks.retain(|c| c.id != id);
        self
    }

    /// The check `id`, if registered.
    pub fn get(&self, id: &str) -> Option<&CheckSpec> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// The check `id` at `version` (any version when `None`), if registered; else why not.
    pub fn lookup(&self, id: &str, version: Option<&str>) -> Result<&CheckSpec, NotRegistered> {
        match (self.get(id), version) {
            (None, _) => Err(NotRegistered::Unknown(id.to_owned())),
            (Some(spec), Some(v)) if v != spec.version => Err(NotRegistered::OtherVersion {
                id: id.to_owned(),
                asked: v.to_owned(),
                registered: spec.version.to_string(),
            }),
            (Some(spec), _) => Ok(spec),
        }
    }

    /// Every registered check.
    pub fn checks(&self) -> &[CheckSpec] {
        &self.checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_id_is_unique() {
        let registry = Registry::builtin();
        let mut ids: Vec<&str> = registry.checks().iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), registry.checks().len());
    }

    #[test]
    fn parameters_are_checked_all_at_once() {
        let registry = Registry::builtin();
        let spec = registry.get("linear_model").expect("registered");
        let params: Params =
            serde_json::from_str(r#"{"predictors": [], "family": "poisson", "colour": "red"}"#)
                .expect("json");
        let problems = spec.param_problems(&params);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("\"colour\"")));
        assert!(
            problems
                .iter()
                .any(|p| p.contains("needs the parameter \"outcome\""))
        );
        assert!(problems.iter().any(|p| p.contains("gaussian, binomial")));
    }

    #[test]
    fn a_pinned_version_the_registry_lacks_is_not_available() {
        let registry = Registry::builtin();
        assert!(registry.lookup("linear_model", Some("1")).is_ok());
        let why = registry
            .lookup("linear_model", Some("2"))
            .expect_err("version 2 is not registered")
            .to_string();
        assert!(why.contains("registers version 1"), "{why}");
        assert!(registry.lookup("anova", None).is_err());
    }
}
