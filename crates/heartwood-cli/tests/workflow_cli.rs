//! `heartwood workflow`, on the example research project shipped in `fixtures/projects/`.

mod support;

use std::path::Path;

use serde_json::Value;
use support::{heartwood, text};

#[test]
fn the_example_project_checks_and_a_planted_leak_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, dir.path());

    let catalog = heartwood(dir.path(), &["workflow", "catalog", "--json"]);
    let entries: Value = serde_json::from_slice(&catalog.stdout).expect("json");
    assert_eq!(entries[0]["id"], "tabular-ols");

    let split = heartwood(dir.path(), &["workflow", "check", "tabular-ols", "split"]);
    assert!(split.status.success(), "{}", text(&split.stdout));
    assert!(text(&split.stdout).contains("group_disjoint_split   passed"));
    let model = heartwood(
        dir.path(),
        &["workflow", "check", "tabular-ols", "model", "--json"],
    );
    let results: Value = serde_json::from_slice(&model.stdout).expect("json");
    let ols = results
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["check"] == "univariate_ols")
        .expect("ols");
    assert_eq!(ols["status"], "passed", "{ols}");
    assert_eq!(
        ols["inspected"].as_array().map(Vec::len),
        Some(5),
        "the model is checked against the plan, and the plan is bound by digest"
    );

    for stage in ["readiness", "plan", "split", "model", "report"] {
        let out = heartwood(dir.path(), &["workflow", "check", "tabular-ols", stage]);
        assert!(out.status.success(), "{stage}: {}", text(&out.stdout));
        assert!(
            text(&out.stdout).contains("the evidence holds"),
            "{}",
            text(&out.stdout)
        );
    }

    // Evidence saved now goes stale when an input changes afterwards.
    let saved = dir.path().join("split-results.json");
    let save = saved.to_str().expect("utf-8");
    heartwood(
        dir.path(),
        &["workflow", "check", "tabular-ols", "split", "--save", save],
    );
    let fresh = heartwood(
        dir.path(),
        &["workflow", "assess", "tabular-ols", "split", save],
    );
    assert!(fresh.status.success(), "{}", text(&fresh.stdout));
    let table = dir.path().join("data/cohort.csv");
    let edited = std::fs::read_to_string(&table)
        .expect("table")
        .replace("p01,north,34", "p01,north,35");
    std::fs::write(&table, edited).expect("write");
    let stale = heartwood(
        dir.path(),
        &["workflow", "assess", "tabular-ols", "split", save],
    );
    assert!(!stale.status.success());
    assert!(
        text(&stale.stdout).contains("stale: data/cohort.csv changed"),
        "{}",
        text(&stale.stdout)
    );

    let path = dir.path().join("outputs/split.csv");
    let leaked = std::fs::read_to_string(&path)
        .expect("split")
        .replace("p10,held_out", "p10,train");
    std::fs::write(&path, leaked).expect("write");
    let split = heartwood(dir.path(), &["workflow", "check", "tabular-ols", "split"]);
    assert!(!split.status.success());
    assert!(
        text(&split.stdout).contains("both sides of the split"),
        "{}",
        text(&split.stdout)
    );

    // A saved result edited to say "passed" is not evidence: assess runs the checks again.
    heartwood(
        dir.path(),
        &["workflow", "check", "tabular-ols", "split", "--save", save],
    );
    let forged = std::fs::read_to_string(&saved)
        .expect("saved")
        .replace("\"failed\"", "\"passed\"");
    std::fs::write(&saved, forged).expect("write");
    let assessed = heartwood(
        dir.path(),
        &["workflow", "assess", "tabular-ols", "split", save],
    );
    assert!(!assessed.status.success(), "{}", text(&assessed.stdout));
    assert!(
        !text(&assessed.stdout).contains("the evidence holds"),
        "{}",
        text(&assessed.stdout)
    );
    assert!(
        text(&assessed.stdout).contains("changed after they were written"),
        "{}",
        text(&assessed.stdout)
    );
    assert!(
        !dir.path().join(".heartwood").exists(),
        "checking created state"
    );
}
