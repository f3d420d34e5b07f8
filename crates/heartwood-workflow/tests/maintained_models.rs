//! The maintained `tabular-linear` and `tabular-logistic` workflows on their example projects
//! (`fixtures/projects/grunfeld-panel`, Grunfeld's firm panel with firm-clustered errors, and
//! `fixtures/projects/anes-vote`, the 1996 ANES vote by logistic regression). Every artifact
//! there was computed by statsmodels and Python's `statistics` (`make_projects.py`), not by the
//! checks' code, so a stage passing here is agreement between two independent computations;
//! each planted defect is one a referee reading the plan and the report would catch.

mod support;

use std::path::Path;

use heartwood_workflow::evaluate::check_stage;
use heartwood_workflow::{CheckResult, Status, catalog};
use heartwood_workspace::Workspace;
use serde_json::{Value, json};

fn project(name: &str) -> tempfile::TempDir {
    support::example_project(name)
}

fn stage(project: &Path, workflow: &str, stage: &str) -> Vec<CheckResult> {
    let definition = catalog::definition(workflow)
        .expect("catalog")
        .expect("maintained");
    let workspace = Workspace::open(project).expect("workspace");
    check_stage(&workspace, &definition, stage).expect("stage")
}

fn result(project: &Path, workflow: &str, stage_id: &str, check: &str) -> CheckResult {
    stage(project, workflow, stage_id)
        .into_iter()
        .find(|r| r.check == check)
        .expect("the check ran")
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
}

fn says(result: &CheckResult, words: &str) -> bool {
    result.reasons.iter().any(|r| r.contains(words))
}

#[test]
fn both_workflows_are_maintained_and_supported() {
    let listed = catalog::catalog().expect("catalog");
    for id in ["tabular-linear", "tabular-logistic"] {
        let entry = listed.iter().find(|e| e.id == id).expect("listed");
        assert!(entry.supported, "{id}: {:?}", entry.missing_checks);
    }
}

#[test]
fn every_stage_passes_on_the_independently_computed_artifacts() {
    for (name, workflow) in [
        ("grunfeld-panel", "tabular-linear"),
        ("anes-vote", "tabular-logistic"),
    ] {
        let dir = project(name);
        for id in ["readiness", "plan", "split", "model", "report"] {
            for r in stage(dir.path(), workflow, id) {
                assert_eq!(
                    r.status,
                    Status::Passed,
                    "{workflow}/{id}/{}: {:?}",
                    r.check,
                    r.reasons
                );
            }
        }
    }
}

#[test]
fn classical_errors_stated_as_cluster_robust_fail() {
    // The report keeps the estimates but states the classical standard errors a plain OLS
    // gives, while the plan (accepted at its gate) asks for errors clustered by firm.
    let dir = project("grunfeld-panel");
    let classical = [
        ("intercept", 10.4153283),
        ("value", 0.00608676741),
        ("capital", 0.0276027739),
    ];
    edit_json(&dir.path().join("outputs/model.json"), |m| {
        for (i, (name, se)) in classical.iter().enumerate() {
            assert_eq!(m["coefficients"][i]["name"], *name);
            m["coefficients"][i]["std_error"] = json!(se);
        }
    });
    let r = result(dir.path(), "tabular-linear", "model", "linear_model");
    assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
    assert!(says(&r, "standard error of value"), "{:?}", r.reasons);
    // The figures the check publishes are firm-clustered: 9 training firms.
    let unedited = project("grunfeld-panel");
    let ok = result(unedited.path(), "tabular-linear", "model", "linear_model");
    assert_eq!(ok.figures["clusters"], json!(9), "{:#}", ok.figures);
}

#[test]
fn a_model_other_than_the_plan_fails_even_when_its_figures_are_right() {
    // The plan, accepted at its gate, declares invest ~ value + capital; a model that drops
    // capital is refused however well it is computed.
    let dir = project("grunfeld-panel");
    edit_json(&dir.path().join("analysis/plan.json"), |p| {
        p["predictors"] = json!(["value"]);
    });
    let r = result(dir.path(), "tabular-linear", "model", "linear_model");
    assert_eq!(r.status, Status::Failed);
    assert!(says(&r, "in that order"), "{:?}", r.reasons);
}

#[test]
fn a_plan_the_dictionary_or_the_workflow_does_not_permit_fails() {
    let dir = project("grunfeld-panel");
    let plan = dir.path().join("analysis/plan.json");
    edit_json(&plan, |p| {
        p["predictors"] = json!(["value", "invest"]);
        p["family"] = json!("binomial");
        p["std_errors"] = json!("cluster");
        p.as_object_mut().expect("plan").remove("cluster");
    });
    let r = result(dir.path(), "tabular-linear", "plan", "model_plan");
    assert_eq!(r.status, Status::Failed);
    assert!(
        says(&r, "\"invest\" is not a permitted predictor"),
        "{:?}",
        r.reasons
    );
    assert!(says(&r, "fits the gaussian family"), "{:?}", r.reasons);
    assert!(
        says(&r, "exactly when `std_errors` is `cluster`"),
        "{:?}",
        r.reasons
    );

    edit_json(&plan, |p| {
        p["predictors"] = json!(["value", "capital"]);
        p["family"] = json!("gaussian");
        p["cluster"] = json!("sector");
    });
    let r = result(dir.path(), "tabular-linear", "plan", "model_plan");
    assert!(says(&r, "does not describe"), "{:?}", r.reasons);
}

#[test]
fn held_out_discrimination_overstated_fails() {
    // A report that claims a better held-out AUC and log loss than its own probabilities give.
    let dir = project("anes-vote");
    edit_json(&dir.path().join("outputs/model.json"), |m| {
        let auc = m["held_out"]["auc"].as_f64().expect("auc");
        m["held_out"]["auc"] = json!(auc + 0.02);
        let loss = m["held_out"]["log_loss"].as_f64().expect("log loss");
        m["held_out"]["log_loss"] = json!(loss * 0.95);
    });
    let r = result(dir.path(), "tabular-logistic", "model", "linear_model");
    assert_eq!(r.status, Status::Failed);
    assert!(says(&r, "held-out AUC"), "{:?}", r.reasons);
    assert!(says(&r, "held-out log loss"), "{:?}", r.reasons);
}

#[test]
fn training_rows_predicted_as_held_out_fail() {
    // The held-out predictions replaced by the fitted values of training rows: the keys name
    // rows of the training partition, and the held-out rows go unpredicted.
    let dir = project("anes-vote");
    let split = std::fs::read_to_string(dir.path().join("outputs/split.csv")).expect("split");
    let training: Vec<&str> = split
        .lines()
        .filter_map(|l| l.strip_suffix(",train"))
        .take(3)
        .collect();
    edit_json(&dir.path().join("outputs/model.json"), |m| {
        for (i, key) in training.iter().enumerate() {
            m["held_out_predictions"][i]["key"] = json!(key);
        }
    });
    let r = result(dir.path(), "tabular-logistic", "model", "linear_model");
    assert_eq!(r.status, Status::Failed);
    assert!(says(&r, "which is not a held-out row"), "{:?}", r.reasons);
    assert!(
        says(&r, "gives no prediction for held-out row"),
        "{:?}",
        r.reasons
    );
}

#[test]
fn a_definition_that_leaves_the_model_to_the_plan_names_nothing_else() {
    let registry = heartwood_workflow::registry::Registry::builtin();
    let spec = registry.get("linear_model").expect("registered");
    let params =
        serde_json::from_value(json!({"declared_by": "plan", "outcome": "y"})).expect("params");
    let problems = spec.param_problems(&params);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("cannot be given with `declared_by: plan`")),
        "{problems:?}"
    );
    let params = serde_json::from_value(json!({"std_errors": "cluster"})).expect("params");
    let problems = spec.param_problems(&params);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("needs the parameter \"outcome\"")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("exactly when")),
        "{problems:?}"
    );
}
