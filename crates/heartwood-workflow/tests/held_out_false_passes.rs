//! The false passes an outside probe found on held-out data, each planted in a real table (the
//! Grunfeld investment data, `fixtures/datasets/grunfeld/`) whose artifacts the exact-arithmetic
//! reference (`tests/reference.py`) writes: group labels spelled two ways, a repeated header,
//! an outcome offset by 10¹², values near 10¹⁶⁰, and a report that states the training fit as
//! held-out performance.

use std::path::Path;
use std::process::Command;

use heartwood_workflow::catalog;
use heartwood_workflow::evaluate::check_stage;
use heartwood_workflow::{CheckResult, Status};
use heartwood_workspace::Workspace;

/// The table as shipped: a header and rows of fields.
fn grunfeld() -> Vec<Vec<String>> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/datasets/grunfeld/grunfeld.csv");
    std::fs::read_to_string(path)
        .expect("the Grunfeld table")
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

const FIRM: usize = 1;
const YEAR: usize = 2;
const INVEST: usize = 3;
const VALUE: usize = 4;

/// A project on `table`, grouped by column `group`, holding out the rows whose group field is
/// exactly one of `held_out` (as a tool comparing labels byte for byte would), with every
/// artifact from the exact reference, the model fitted on `value`.
fn project(table: &[Vec<String>], group: &str, held_out: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for sub in ["data", "outputs", "analysis", "reports"] {
        std::fs::create_dir_all(d.join(sub)).expect("mkdir");
    }
    let csv: String = table.iter().map(|r| r.join(",") + "\n").collect();
    std::fs::write(d.join("data/cohort.csv"), csv).expect("table");
    let g = table[0]
        .iter()
        .position(|c| c == group)
        .expect("group column");
    let mut split = String::from("key,partition\n");
    for row in &table[1..] {
        let side = if held_out.contains(&row[g].as_str()) {
            "held_out"
        } else {
            "train"
        };
        split.push_str(&format!("{},{side}\n", row[0]));
    }
    std::fs::write(d.join("outputs/split.csv"), split).expect("split");
    let number = serde_json::json!({"type": "number", "required": true});
    let text = serde_json::json!({"type": "text", "required": true});
    let dictionary = serde_json::json!({
        "primary_key": "id",
        "group": group,
        "outcome": "invest",
        "predictors": ["value", "capital"],
        "held_out_groups": held_out,
        "columns": {
            "id": text, "firm": text, "year": number,
            "invest": number, "value": number, "capital": number
        }
    });
    std::fs::write(d.join("data/dictionary.json"), dictionary.to_string()).expect("dictionary");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(d)
        .arg("value")
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(d.join("analysis/fit.py"), "print('fitted')\n").expect("fit code");
    dir
}

fn stage(project: &Path, stage: &str) -> Vec<CheckResult> {
    let definition = catalog::definition("tabular-ols")
        .expect("catalog")
        .expect("definition");
    let workspace = Workspace::open(project).expect("workspace");
    check_stage(&workspace, &definition, stage).expect("stage")
}

fn result(project: &Path, stage_id: &str, check: &str) -> CheckResult {
    stage(project, stage_id)
        .into_iter()
        .find(|r| r.check == check)
        .expect("the check ran")
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(path, value.to_string()).expect("write");
}

/// Every row of `firm` from `year` on gets `spelling` as its label.
fn respell(table: &mut [Vec<String>], column: usize, from: &str, spelling: &str, year: u32) {
    for row in &mut table[1..] {
        if row[column] == from && row[YEAR].parse::<u32>().expect("year") >= year {
            row[column] = spelling.to_owned();
        }
    }
}

#[test]
fn the_shipped_table_passes_every_stage_it_can() {
    let p = project(&grunfeld(), "firm", &["US Steel"]);
    for (stage_id, check) in [
        ("readiness", "data_dictionary"),
        ("readiness", "readiness_report"),
        ("split", "group_disjoint_split"),
        ("model", "univariate_ols"),
    ] {
        let r = result(p.path(), stage_id, check);
        assert_eq!(r.status, Status::Passed, "{check}: {:?}", r.reasons);
    }
}

#[test]
fn group_labels_spelled_two_ways_fail_the_split_naming_both_spellings() {
    // Half of US Steel's years train under one spelling, the rest are held out under another.
    for (spelling, from) in [("US Steel ", "US Steel"), ("us steel", "US Steel")] {
        let mut table = grunfeld();
        respell(&mut table, FIRM, from, spelling, 1945);
        let p = project(&table, "firm", &[spelling]);
        for (stage_id, check) in [
            ("split", "group_disjoint_split"),
            ("model", "univariate_ols"),
        ] {
            let r = result(p.path(), stage_id, check);
            assert_eq!(r.status, Status::Failed, "{spelling:?}: {check} passed");
        }
        let split = result(p.path(), "split", "group_disjoint_split");
        // Both spellings are named, each with where it stands.
        let named = [
            format!("{from:?} (table line"),
            format!("{spelling:?} (table line"),
        ];
        assert!(
            split
                .reasons
                .iter()
                .any(|m| named.iter().all(|n| m.contains(n.as_str()))),
            "{named:?}: {:?}",
            split.reasons
        );
    }
    // Numbers spelled two ways: grouped by year, 1954 held out as "1954.0" for most firms.
    let mut table = grunfeld();
    for row in &mut table[1..] {
        if row[YEAR] == "1954" && row[FIRM] != "IBM" {
            row[YEAR] = "1954.0".into();
        }
    }
    let p = project(&table, "year", &["1954.0"]);
    let split = result(p.path(), "split", "group_disjoint_split");
    assert_eq!(split.status, Status::Failed);
    assert!(
        split
            .reasons
            .iter()
            .any(|m| m.contains("\"1954\" (table line") && m.contains("\"1954.0\" (")),
        "{:?}",
        split.reasons
    );
}

#[test]
fn a_repeated_header_is_refused_naming_the_column_and_both_positions() {
    let mut table = grunfeld();
    table[0][5] = "value".into();
    let p = project(&table, "firm", &["US Steel"]);
    for (stage_id, check) in [
        ("readiness", "data_dictionary"),
        ("readiness", "readiness_report"),
        ("split", "group_disjoint_split"),
        ("model", "univariate_ols"),
    ] {
        let r = result(p.path(), stage_id, check);
        assert_eq!(r.status, Status::Failed, "{check}: {:?}", r.reasons);
        assert!(
            r.reasons
                .iter()
                .any(|m| m.contains("\"value\" twice (columns 5 and 6)")),
            "{check}: {:?}",
            r.reasons
        );
    }
}

/// The table with the outcome in units of 10⁴ dollars (a residual scale of about 0.01) plus
/// 10¹²: the probe's offset, where the old allowance was 0.1.
fn offset_outcome() -> tempfile::TempDir {
    let mut table = grunfeld();
    for row in &mut table[1..] {
        let invest: f64 = row[INVEST].parse().expect("invest");
        row[INVEST] = format!("{:?}", 1e12 + invest / 1e4);
    }
    project(&table, "firm", &["US Steel"])
}

fn residual_scale(project: &Path) -> f64 {
    let scale: serde_json::Value = serde_json::from_slice(
        &std::fs::read(project.join("reference/scale.json")).expect("scale"),
    )
    .expect("json");
    scale["residual_scale"].as_f64().expect("number")
}

#[test]
fn an_outcome_offset_by_1e12_admits_no_shift_a_reader_would_call_wrong() {
    let correct = offset_outcome();
    let ols = result(correct.path(), "model", "univariate_ols");
    assert_eq!(ols.status, Status::Passed, "{:?}", ols.reasons);
    let sd = residual_scale(correct.path());
    assert!(
        sd < 0.1,
        "the probe's case needs a small residual scale: {sd}"
    );

    for shift in [3.0, 5.0] {
        let p = offset_outcome();
        edit_json(&p.path().join("outputs/model.json"), |m| {
            for prediction in m["held_out_predictions"].as_array_mut().expect("list") {
                let v = prediction["predicted"].as_f64().expect("number");
                prediction["predicted"] = serde_json::json!(v + shift * sd);
            }
        });
        let r = result(p.path(), "model", "univariate_ols");
        assert_eq!(r.status, Status::Failed, "{shift} SD: {:?}", r.reasons);
        assert!(r.reasons.iter().any(|m| m.contains("prediction for")));
    }
    for factor in [1.001, 1.004] {
        let p = offset_outcome();
        edit_json(&p.path().join("outputs/model.json"), |m| {
            let rmse = m["held_out_rmse"].as_f64().expect("rmse");
            m["held_out_rmse"] = serde_json::json!(rmse * factor);
        });
        let r = result(p.path(), "model", "univariate_ols");
        assert_ne!(r.status, Status::Passed, "RMSE ×{factor} passed");
        assert!(
            r.reasons.iter().any(|m| m.starts_with("held-out RMSE")),
            "×{factor}: {:?}",
            r.reasons
        );
    }
}

#[test]
fn values_near_1e160_are_unverified_where_they_overflow_never_failed() {
    let mut table = grunfeld();
    for row in &mut table[1..] {
        for c in [INVEST, VALUE] {
            let v: f64 = row[c].parse().expect("number");
            row[c] = format!("{:?}", v * 1e158);
        }
    }
    let p = project(&table, "firm", &["US Steel"]);
    let readiness = result(p.path(), "readiness", "readiness_report");
    assert_eq!(
        readiness.status,
        Status::Passed,
        "a correct readiness report: {:?}",
        readiness.reasons
    );
    let ols = result(p.path(), "model", "univariate_ols");
    assert_eq!(ols.status, Status::Unverified, "{:?}", ols.reasons);
    assert!(
        ols.reasons.iter().any(|m| m.contains("overflows")),
        "{:?}",
        ols.reasons
    );
}

#[test]
fn a_report_that_states_the_training_fit_as_held_out_performance_fails() {
    let p = project(&grunfeld(), "firm", &["US Steel"]);
    let ols = result(p.path(), "model", "univariate_ols");
    let figure = |name: &str| ols.figures[name].as_f64().expect(name);
    let (training, held_out) = (figure("training_r2"), figure("held_out_r2"));
    assert!(
        format!("{training:.2}") != format!("{held_out:.2}"),
        "the figures must differ for the test to mean anything: {training} {held_out}"
    );
    let report = |r2: f64| {
        format!(
            "# Investment and firm value\n\nAcross the firms, gross investment rises with market \
             value. On the held-out rows (US Steel) the model has R² = {r2:.2}. The relation carries over to a firm it never saw.\n"
        )
    };
    // The claims file binds the figure (line 3) to the held-out R², as the sentence does.
    let claims = |r2: f64| {
        serde_json::json!({"claims": [{"line": 3, "value": format!("{r2:.2}"),
            "quantity": "r_squared", "sample": "held_out"}]})
        .to_string()
    };
    std::fs::write(p.path().join("reports/final.md"), report(training)).expect("report");
    std::fs::write(p.path().join("reports/claims.json"), claims(training)).expect("claims");
    let r = result(p.path(), "report", "report_claims");
    assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
    assert!(
        r.reasons
            .iter()
            .any(|m| m.contains("it is the training figure")),
        "{:?}",
        r.reasons
    );
    assert_eq!(
        result(p.path(), "report", "nonempty_report").status,
        Status::Passed,
        "the report is written; only its claim is wrong"
    );

    std::fs::write(p.path().join("reports/final.md"), report(held_out)).expect("report");
    std::fs::write(p.path().join("reports/claims.json"), claims(held_out)).expect("claims");
    let r = result(p.path(), "report", "report_claims");
    assert_eq!(r.status, Status::Passed, "{:?}", r.reasons);
}
