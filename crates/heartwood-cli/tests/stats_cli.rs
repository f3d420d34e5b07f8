//! `heartwood stats fit`, end to end with the real binary: a NIST dataset reproduced from its
//! decimal text through the CLI's JSON, the table and JSON shapes, `unreliable` as exit code 2,
//! and bad input refused with a message saying what to do.

mod support;

use serde_json::Value;
use support::{code, heartwood, text};

/// Norris.dat's data (y, x) as a CSV file in `dir`.
fn norris_csv(dir: &std::path::Path) -> std::path::PathBuf {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nist-strd/Norris.dat");
    let text = std::fs::read_to_string(source).expect("Norris.dat");
    // The header says the data are lines 61 to 96.
    let mut csv = String::from("y,x\n");
    for line in text.lines().skip(60).take(36) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        csv.push_str(&format!("{},{}\n", cells[0], cells[1]));
    }
    let path = dir.join("norris.csv");
    std::fs::write(&path, csv).expect("write");
    path
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", text(&out.stdout), text(&out.stderr)))
}

#[test]
fn norris_through_the_command_matches_nists_certified_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = norris_csv(dir.path());
    let out = heartwood(
        dir.path(),
        &[
            "stats",
            "fit",
            data.to_str().expect("utf-8"),
            "--outcome",
            "y",
            "--predictors",
            "x",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let fit = json(&out);
    assert_eq!(fit["status"], "ok");
    assert_eq!(fit["n"], 36);
    assert!(fit.get("reason").is_none());
    let coefficients = fit["coefficients"].as_array().expect("coefficients");
    assert_eq!(coefficients[0]["name"], "intercept");
    assert_eq!(coefficients[1]["name"], "x");
    let close = |value: &Value, certified: f64| {
        let v = value.as_f64().expect("a number");
        assert!(
            ((v - certified) / certified).abs() < 1e-12,
            "{v} vs {certified}"
        );
    };
    close(&coefficients[0]["estimate"], -0.262323073774029);
    close(&coefficients[1]["estimate"], 1.00211681802045);
    close(&coefficients[0]["std_error"], 0.232818234301152);
    close(&coefficients[1]["std_error"], 0.429796848199937E-03);
    close(&fit["residual_sd"], 0.884796396144373);
    close(&fit["r_squared"], 0.999993745883712);
    assert!(fit["condition_number"].as_f64().expect("condition") > 1.0);
    assert!(fit.get("log_likelihood").is_none());
}

#[test]
fn the_plain_output_is_a_readable_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = norris_csv(dir.path());
    let out = heartwood(
        dir.path(),
        &[
            "stats",
            "fit",
            data.to_str().expect("utf-8"),
            "--outcome",
            "y",
            "--predictors",
            "x",
            "--se",
            "hc3",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("hc3 standard errors"), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("intercept ")),
        "{table}"
    );
    assert!(
        table.contains("R²") && table.contains("status             ok"),
        "{table}"
    );
}

#[test]
fn clustered_logistic_regression_reports_a_log_likelihood() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut csv = String::from("passed,hours,school\n");
    for i in 0..60 {
        let hours = f64::from(i % 12) * 0.5;
        let passed = u8::from((i * 7 % 11) as f64 / 2.0 < hours);
        csv.push_str(&format!("{passed},{hours},s{}\n", i % 6));
    }
    std::fs::write(dir.path().join("exam.csv"), csv).expect("write");
    let out = heartwood(
        dir.path(),
        &[
            "stats",
            "fit",
            "exam.csv",
            "--outcome",
            "passed",
            "--predictors",
            "hours",
            "--family",
            "binomial",
            "--se",
            "cluster:school",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let fit = json(&out);
    assert_eq!(fit["status"], "ok", "{fit}");
    assert!(fit["log_likelihood"].as_f64().expect("log likelihood") < 0.0);
    assert!(fit.get("r_squared").is_none());
    assert_eq!(fit["clusters"], 6);
}

#[test]
fn collinear_predictors_are_unreliable_with_exit_code_two_and_no_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("twice.csv"),
        "y,a,b\n1,1,2\n2,2,4\n2.5,3,6\n4,4,8\n6,5,10\n",
    )
    .expect("write");
    let out = heartwood(
        dir.path(),
        &[
            "stats",
            "fit",
            "twice.csv",
            "--outcome",
            "y",
            "--predictors",
            "a,b",
            "--json",
        ],
    );
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let fit = json(&out);
    assert_eq!(fit["status"], "unreliable");
    assert!(
        fit["reason"]
            .as_str()
            .expect("reason")
            .contains("collinear")
    );
    assert!(fit["coefficients"][1]["estimate"].is_null());
    assert!(fit["condition_number"].as_f64().is_none_or(|c| c > 1e12));
}

/// Runs `stats fit` on `csv` with `args` and returns the exit code and standard error.
fn refused(csv: &str, args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.csv"), csv).expect("write");
    let mut all = vec!["stats", "fit", "t.csv"];
    all.extend_from_slice(args);
    let out = heartwood(dir.path(), &all);
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    (code(&out), text(&out.stderr))
}

#[test]
fn bad_input_exits_non_zero_with_what_to_do() {
    let (status, message) = refused(
        "y,x\n1,2\n2,3\n3,5\n",
        &["--outcome", "y", "--predictors", "z"],
    );
    assert_eq!(status, 1);
    assert!(
        message.contains("no column \"z\"") && message.contains("\"x\""),
        "{message}"
    );

    let (status, message) = refused(
        "y,x\n1,2\n2,three\n3,5\n",
        &["--outcome", "y", "--predictors", "x"],
    );
    assert_eq!(status, 1);
    assert!(
        message.contains("row 2 of column \"x\" is not a number"),
        "{message}"
    );
    assert!(message.contains("plain decimal"), "{message}");

    let (status, message) = refused(
        "y,x\n1,2\n2,\n3,5\n",
        &["--outcome", "y", "--predictors", "x"],
    );
    assert_eq!(status, 1);
    assert!(
        message.contains("empty") && message.contains("remove the row"),
        "{message}"
    );

    let (status, message) = refused(
        "y,a,b\n1,2,3\n2,3,1\n",
        &["--outcome", "y", "--predictors", "a,b"],
    );
    assert_eq!(status, 1);
    assert!(
        message.contains("3 coefficients but only 2 rows"),
        "{message}"
    );

    let (status, message) = refused("", &["--outcome", "y", "--predictors", "x"]);
    assert_eq!(status, 1);
    assert!(message.contains("empty"), "{message}");

    let (status, message) = refused("y,x\n", &["--outcome", "y", "--predictors", "x"]);
    assert_eq!(status, 1);
    assert!(message.contains("at least one data row"), "{message}");

    let (status, message) = refused(
        "y,x\n0,1\n1,2\n2,3\n",
        &[
            "--outcome",
            "y",
            "--predictors",
            "x",
            "--family",
            "binomial",
        ],
    );
    assert_eq!(status, 1);
    assert!(message.contains("must be 0 or 1"), "{message}");

    let (status, message) = refused(
        "y,x\n0,1\n1,2\n2,3\n",
        &["--outcome", "y", "--se", "robust"],
    );
    assert_ne!(status, 0);
    assert!(message.contains("cluster:COLUMN"), "{message}");
}
