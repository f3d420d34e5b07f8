//! `linear_model` on the example project's files: a report stating the reference's figures
//! (heartwood-stats on the training rows) passes; one coefficient off by a percent fails; a
//! declared model the dictionary does not permit fails.

use std::path::Path;

use heartwood_workflow::registry::Params;
use heartwood_workflow::{CheckResult, Status, checks};
use serde_json::{Value, json};

fn files(report: &Value) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    let read = |p: &str| std::fs::read(dir.join(p)).expect("fixture");
    vec![
        read("data/cohort.csv"),
        read("data/dictionary.json"),
        read("outputs/split.csv"),
        report.to_string().into_bytes(),
    ]
}

fn run(params: &Value, report: &Value) -> CheckResult {
    let params: Params = serde_json::from_value(params.clone()).expect("params");
    let mut result = CheckResult::new("linear_model");
    checks::linear_model(&files(report), &params, &mut result);
    result
}

/// The report the reference's own figures make.
fn reference_report(params: &Value) -> Value {
    let probe = run(
        params,
        &json!({"outcome": "score", "family": "gaussian",
        "std_errors": "cluster", "n_train": 0, "coefficients": [],
        "held_out_predictions": [], "held_out": {}}),
    );
    let f = &probe.figures;
    let predictions: Vec<Value> = f["held_out"]["predictions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    json!({
        "outcome": "score", "family": "gaussian", "std_errors": "cluster",
        "n_train": f["n_train"],
        "coefficients": f["coefficients"],
        "held_out_predictions": predictions,
        "held_out": {"rmse": f["held_out"]["rmse"], "mean_comparator_rmse": f["held_out"]["mean_comparator_rmse"]},
    })
}

#[test]
fn the_reference_figures_pass_and_a_shifted_coefficient_fails() {
    let params = json!({"outcome": "score", "predictors": ["sleep_hours", "age"],
        "std_errors": "cluster", "cluster": "site"});
    let report = reference_report(&params);
    assert_eq!(
        report["coefficients"].as_array().map(Vec::len),
        Some(3),
        "{report:#}"
    );
    let ok = run(&params, &report);
    assert_eq!(ok.status, Status::Passed, "{:?}", ok.reasons);
    assert_eq!(ok.version.as_deref(), Some("1"));

    let mut shifted = report.clone();
    let slope = shifted["coefficients"][1]["estimate"]
        .as_f64()
        .expect("estimate");
    shifted["coefficients"][1]["estimate"] = json!(slope * 1.01);
    let bad = run(&params, &shifted);
    assert_eq!(bad.status, Status::Failed);
    assert!(
        bad.reasons
            .iter()
            .any(|r| r.contains("coefficient sleep_hours")),
        "{:?}",
        bad.reasons
    );
}

#[test]
fn a_predictor_the_dictionary_does_not_permit_fails() {
    let params = json!({"outcome": "score", "predictors": ["sleep_hours", "site_code"]});
    let result = run(&params, &reference_report(&params));
    assert_eq!(result.status, Status::Failed);
    assert!(
        result
            .reasons
            .iter()
            .any(|r| r.contains("not a permitted predictor")),
        "{:?}",
        result.reasons
    );
}
