//! Agreement with statsmodels, the peer reference, on public data (fixtures/
//! statsmodels-reference: the Grunfeld investment panel and the 1996 American National Election
//! Study, both public domain, as statsmodels ships them). statsmodels runs at test time from
//! the virtual environment `HEARTWOOD_STATS_VENV` names; without one the test is skipped with
//! the reason printed, except under `CI=true`, where it fails.
//!
//! Least squares: estimates and every kind of standard error within 1e-9 relative, R² and the
//! residual standard deviation too. Logistic regression: within 1e-7, the log likelihood too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use heartwood_stats::{Column, Family, Model, Predictor, Status, StdErrors, fit};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/statsmodels-reference")
}

/// The reference's JSON, or `None` (with the reason printed) when no environment is given.
fn reference() -> Option<Value> {
    let Some(venv) = std::env::var_os("HEARTWOOD_STATS_VENV") else {
        let reason = "HEARTWOOD_STATS_VENV is not set (a venv with statsmodels and pandas; \
                      .ci/run makes one)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
        println!("skipped: {reason}");
        return None;
    };
    let python = Path::new(&venv).join("bin/python");
    let output = Command::new(&python)
        .arg(fixtures().join("reference.py"))
        .output()
        .unwrap_or_else(|e| panic!("{} could not run: {e}", python.display()));
    assert!(
        output.status.success(),
        "reference.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).expect("the reference's JSON"))
}

/// A CSV file without quoting, by column.
fn table(name: &str) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(fixtures().join(name)).expect("the data");
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(str::to_owned)
        .collect();
    let mut columns: BTreeMap<String, Vec<String>> =
        header.iter().map(|h| (h.clone(), Vec::new())).collect();
    for line in lines {
        for (h, cell) in header.iter().zip(line.split(',')) {
            columns.get_mut(h).expect("a column").push(cell.to_owned());
        }
    }
    columns
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect()
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

fn model_of(case: &Value) -> Model {
    let data = table(case["data"].as_str().expect("data"));
    let column =
        |name: &str| Column::from_text(data[name].iter().map(String::as_str)).expect("numbers");
    let mut predictors: Vec<Predictor> = strings(&case["predictors"])
        .into_iter()
        .map(|name| Predictor::Numeric {
            column: column(&name),
            name,
        })
        .collect();
    for name in strings(&case["categorical"]) {
        predictors.push(Predictor::Categorical {
            labels: data[&name].clone(),
            name,
        });
    }
    let errors = match case["errors"].as_str().expect("errors") {
        "classical" => StdErrors::Classical,
        "hc0" => StdErrors::Hc0,
        "hc1" => StdErrors::Hc1,
        "hc2" => StdErrors::Hc2,
        "hc3" => StdErrors::Hc3,
        other => {
            let label = other.strip_prefix("cluster:").expect("cluster:COLUMN");
            StdErrors::Cluster(data[label].clone())
        }
    };
    Model {
        outcome: column(case["outcome"].as_str().expect("outcome")),
        predictors,
        intercept: case["intercept"].as_bool().expect("intercept"),
        fixed_effects: case["fixed_effect"].as_str().map(|name| data[name].clone()),
        family: match case["family"].as_str() {
            Some("binomial") => Family::Binomial,
            _ => Family::Gaussian,
        },
        errors,
    }
}

fn relative(ours: f64, theirs: f64) -> f64 {
    if ours == theirs {
        0.0
    } else {
        ((ours - theirs) / theirs).abs()
    }
}

#[test]
fn estimates_and_every_kind_of_standard_error_agree_with_statsmodels() {
    let Some(reference) = reference() else {
        return;
    };
    println!("statsmodels {}", reference["statsmodels"]);
    let cases = reference["cases"].as_array().expect("cases");
    assert!(cases.len() >= 15);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let model = model_of(case);
        let tolerance = match model.family {
            Family::Gaussian => 1e-9,
            Family::Binomial => 1e-7,
        };
        let fit = fit(&model).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fit.status, Status::Ok, "{name}: {:?}", fit.reason);
        let names: Vec<&str> = fit.coefficients.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, strings(&case["names"]), "{name}");
        let mut worst_estimate: f64 = 0.0;
        let mut worst_error: f64 = 0.0;
        for ((c, e), s) in fit
            .coefficients
            .iter()
            .zip(numbers(&case["estimates"]))
            .zip(numbers(&case["std_errors"]))
        {
            worst_estimate = worst_estimate.max(relative(c.estimate.expect("estimate"), e));
            worst_error = worst_error.max(relative(c.std_error.expect("std error"), s));
        }
        let mut worst_statistic: f64 = 0.0;
        for (ours, key) in [
            (fit.r_squared, "r_squared"),
            (fit.residual_sd, "residual_sd"),
            (fit.log_likelihood, "log_likelihood"),
        ] {
            if let Some(theirs) = case[key].as_f64() {
                worst_statistic = worst_statistic.max(relative(ours.expect(key), theirs));
            }
        }
        let condition = relative(
            fit.condition_number,
            case["condition_number"].as_f64().expect("condition"),
        );
        println!(
            "{name}: estimates {worst_estimate:.1e}, std errors {worst_error:.1e}, \
             fit statistics {worst_statistic:.1e}, condition number {condition:.1e}"
        );
        assert!(
            worst_estimate <= tolerance,
            "{name}: estimates differ by {worst_estimate:e}"
        );
        assert!(
            worst_error <= tolerance,
            "{name}: std errors differ by {worst_error:e}"
        );
        assert!(
            worst_statistic <= tolerance,
            "{name}: statistics differ by {worst_statistic:e}"
        );
        assert!(
            condition <= 1e-6,
            "{name}: condition numbers differ by {condition:e}"
        );
    }
}
