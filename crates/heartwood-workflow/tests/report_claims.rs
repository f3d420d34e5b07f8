//! Every figure a report states is bound to a computed quantity; identity and tolerance by
//! rule. Defects a referee reading the report and the data would catch, planted in the Grunfeld
//! investment data (`fixtures/datasets/grunfeld/`, public domain), with reference figures
//! computed by statsmodels (`claims_reference.py` → `claims-reference.json`), never by the
//! check's code; and correct controls that must pass.

use std::path::Path;
use std::process::Command;

use heartwood_workflow::catalog;
use heartwood_workflow::evaluate::check_stage;
use heartwood_workflow::{CheckResult, Status};
use heartwood_workspace::Workspace;

#[path = "report_claims/holes.rs"]
mod holes;

const GRUNFELD: &str = "../../fixtures/datasets/grunfeld";

fn grunfeld() -> Vec<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(GRUNFELD)
        .join("grunfeld.csv");
    std::fs::read_to_string(path)
        .expect("the Grunfeld table")
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

/// The statsmodels figures for invest ~ value, US Steel held out.
fn reference() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(GRUNFELD)
        .join("claims-reference.json");
    serde_json::from_slice(&std::fs::read(path).expect("reference")).expect("json")
}

fn figure(reference: &serde_json::Value, path: &[&str]) -> f64 {
    path.iter()
        .fold(reference, |v, k| &v[*k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path:?}"))
}

/// A project on `table` (CRLF line ends and quoted text fields when `control_bytes`), grouped by
/// firm, holding out exactly the rows labelled one of `held_out`, with every artifact the exact
/// reference (`tests/reference.py`) writes for invest ~ value.
fn project(table: &[Vec<String>], held_out: &[&str], control_bytes: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for sub in ["data", "outputs", "analysis", "reports"] {
        std::fs::create_dir_all(d.join(sub)).expect("mkdir");
    }
    let csv: String = table
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let fields: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, f)| {
                    if control_bytes && i > 0 && c < 2 {
                        format!("\"{f}\"")
                    } else {
                        f.clone()
                    }
                })
                .collect();
            fields.join(",") + if control_bytes { "\r\n" } else { "\n" }
        })
        .collect();
    std::fs::write(d.join("data/cohort.csv"), csv).expect("table");
    let mut split = String::from("key,partition\n");
    for row in &table[1..] {
        let side = if held_out.contains(&row[1].as_str()) {
            "held_out"
        } else {
            "train"
        };
        split.push_str(&format!("{},{side}\n", row[0]));
    }
    std::fs::write(d.join("outputs/split.csv"), split).expect("split");
    let number = serde_json::json!({"type": "number", "required": true});
    let text = serde_json::json!({"type": "text", "required": true});
    let columns: serde_json::Map<String, serde_json::Value> = table[0]
        .iter()
        .map(|c| {
            let rule = if c == "id" || c == "firm" {
                &text
            } else {
                &number
            };
            (c.clone(), rule.clone())
        })
        .collect();
    let dictionary = serde_json::json!({
        "primary_key": "id", "group": "firm", "outcome": "invest",
        "predictors": ["value", "capital"], "held_out_groups": held_out, "columns": columns
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

fn result(project: &Path, stage: &str, check: &str) -> CheckResult {
    let definition = catalog::definition("tabular-ols")
        .expect("catalog")
        .expect("definition");
    let workspace = Workspace::open(project).expect("workspace");
    check_stage(&workspace, &definition, stage)
        .expect("stage")
        .into_iter()
        .find(|r| r.check == check)
        .expect("the check ran")
}

/// Writes a report and its claims (`(line, value, quantity, extra fields)`), and checks them.
fn claims_result(p: &Path, report: &str, claims: &[serde_json::Value]) -> CheckResult {
    std::fs::write(p.join("reports/final.md"), report).expect("report");
    let file = serde_json::json!({ "claims": claims });
    std::fs::write(p.join("reports/claims.json"), file.to_string()).expect("claims");
    result(p, "report", "report_claims")
}

fn claim(line: usize, value: &str, quantity: &str, more: serde_json::Value) -> serde_json::Value {
    let mut c = serde_json::json!({"line": line, "value": value, "quantity": quantity});
    if let (Some(c), Some(more)) = (c.as_object_mut(), more.as_object()) {
        c.extend(more.clone());
    }
    c
}

fn sample(s: &str) -> serde_json::Value {
    serde_json::json!({ "sample": s })
}

fn coefficient(name: &str) -> serde_json::Value {
    serde_json::json!({ "coefficient": name })
}

fn us_steel() -> tempfile::TempDir {
    project(&grunfeld(), &["US Steel"], false)
}

fn mentions(r: &CheckResult, words: &str) -> bool {
    r.reasons.iter().any(|m| m.contains(words))
}

#[test]
fn a_correct_report_with_every_kind_of_figure_passes() {
    let reference = reference();
    let f = |path: &[&str]| figure(&reference, path);
    // CRLF line ends and quoted fields in the table; an exponent in the report.
    let p = project(&grunfeld(), &["US Steel"], true);
    let report = format!(
        "# Investment and firm value\r\n\r\n## Results\r\n\r\nFitted on the training rows \
         (n = {}), the slope on value is {:.4} (SE \
         {:.5}, 95% CI {:.4} to {:.4}, p = {:.2e}).\r\nOn the held-out rows the held-out\r\n\
         RMSE is {:.1}.\r\n\r\n| sample | R² | MAE |\r\n|---|---|---|\r\n| training | {:.3} | \
         {:.2} |\r\n| held-out | {:.1}% | {:.2} |\r\n",
        f(&["n", "training"]),
        f(&["coefficients", "value", "estimate"]),
        f(&["coefficients", "value", "std_error"]),
        f(&["coefficients", "value", "ci_lower"]),
        f(&["coefficients", "value", "ci_upper"]),
        f(&["coefficients", "value", "p_value"]),
        f(&["held_out", "rmse"]),
        f(&["training", "r_squared"]),
        f(&["training", "mae"]),
        100.0 * f(&["held_out", "r_squared_vs_comparator"]),
        f(&["held_out", "mae"]),
    );
    let written = |path: &[&str], decimals: usize| format!("{:.*}", decimals, f(path));
    let value = coefficient("value");
    let claims = [
        claim(
            5,
            &f(&["n", "training"]).to_string(),
            "n",
            sample("training"),
        ),
        claim(
            5,
            &written(&["coefficients", "value", "estimate"], 4),
            "estimate",
            value.clone(),
        ),
        claim(
            5,
            &written(&["coefficients", "value", "std_error"], 5),
            "std_error",
            value.clone(),
        ),
        claim(
            5,
            &written(&["coefficients", "value", "ci_lower"], 4),
            "ci_lower",
            value.clone(),
        ),
        claim(
            5,
            &written(&["coefficients", "value", "ci_upper"], 4),
            "ci_upper",
            value.clone(),
        ),
        claim(
            5,
            &format!("{:.2e}", f(&["coefficients", "value", "p_value"])),
            "p_value",
            value,
        ),
        claim(
            7,
            &written(&["held_out", "rmse"], 1),
            "rmse",
            sample("held_out"),
        ),
        claim(
            11,
            &written(&["training", "r_squared"], 3),
            "r_squared",
            sample("training"),
        ),
        claim(
            11,
            &written(&["training", "mae"], 2),
            "mae",
            sample("training"),
        ),
        claim(
            12,
            &format!(
                "{:.1}%",
                100.0 * f(&["held_out", "r_squared_vs_comparator"])
            ),
            "r_squared",
            sample("held_out"),
        ),
        claim(
            12,
            &written(&["held_out", "mae"], 2),
            "mae",
            sample("held_out"),
        ),
    ];
    let r = claims_result(p.path(), &report, &claims);
    assert_eq!(r.status, Status::Passed, "{:?}\n{report}", r.reasons);
    assert_eq!(r.claims.len(), claims.len());
    assert!(
        r.claims.iter().all(|c| c.recomputed.is_some()),
        "{:?}",
        r.claims
    );
}

/// The training R² (0.767) presented as the held-out one, in four shapes the old reader let
/// through; the claims file each time binds it honestly to the training rows, or dishonestly
/// to the held-out ones.
#[test]
fn a_training_fit_presented_as_held_out_fails_however_it_is_written() {
    let training = format!("{:.2}", figure(&reference(), &["training", "r_squared"]));
    let p = us_steel();
    let shapes = [
        // Wrapped onto a second line.
        (
            format!("# Result\n\nOn the held-out rows the model\nhas R² = {training}.\n"),
            4,
        ),
        // A non-breaking Unicode hyphen.
        (
            format!("# Result\n\nHeld\u{2011}out R² is {training}.\n"),
            3,
        ),
        // The clause also mentions training.
        (
            format!(
                "# Result\n\nThe held-out RMSE is large and R², for the model trained on ten \
                 firms, is {training}.\n"
            ),
            3,
        ),
        // In a heading, above a results section that does not repeat it.
        (
            format!("# Result\n\n## Held-out R² = {training}\n\n## Results\n\nSee above.\n"),
            3,
        ),
        // In a Markdown table.
        (
            format!("# Result\n\n| sample | R² |\n|---|---|\n| held-out | {training} |\n"),
            5,
        ),
    ];
    for (n, (report, line)) in shapes.into_iter().enumerate() {
        for bound in ["training", "held_out"] {
            let claims = [claim(line, &training, "r_squared", sample(bound))];
            let r = claims_result(p.path(), &report, &claims);
            // Naming R² and RMSE before one figure is ambiguous, and words outside the results
            // language (`large`, `ten firms`) leave it unread: never passed, unverified.
            if n == 2 {
                assert_eq!(r.status, Status::Unverified, "{:?}\n{report}", r.reasons);
                continue;
            }
            assert_eq!(
                r.status,
                Status::Failed,
                "{bound}: {:?}\n{report}",
                r.reasons
            );
        }
        if n == 2 {
            continue;
        }
        let dishonest = claims_result(
            p.path(),
            &report,
            &[claim(line, &training, "r_squared", sample("held_out"))],
        );
        assert!(
            mentions(&dishonest, "it is the training figure") || mentions(&dishonest, "presents"),
            "{:?}",
            dishonest.reasons
        );
    }
}

#[test]
fn figures_no_claim_binds_or_heartwood_cannot_compute_are_unverified() {
    let p = us_steel();
    let report = "# Result\n\nThe held-out RMSE is 195.2, as in the 1950 study.\n";
    let r = claims_result(
        p.path(),
        report,
        &[claim(3, "195.2", "rmse", sample("held_out"))],
    );
    assert_eq!(r.status, Status::Unverified, "{:?}", r.reasons);
    assert!(mentions(&r, "1950 is bound to no claim"), "{:?}", r.reasons);
    let r = claims_result(
        p.path(),
        report,
        &[
            claim(3, "195.2", "rmse", sample("held_out")),
            claim(
                3,
                "1950",
                "other",
                serde_json::json!({"note": "the year of the study"}),
            ),
        ],
    );
    assert_eq!(r.status, Status::Unverified, "{:?}", r.reasons);
    assert!(
        mentions(&r, "cannot compute this figure"),
        "{:?}",
        r.reasons
    );
    // A claim whose line does not say what it claims fails.
    let r = claims_result(
        p.path(),
        report,
        &[claim(3, "195.3", "rmse", sample("held_out"))],
    );
    assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
}

#[test]
fn figures_whose_precision_cannot_tell_right_from_wrong_are_unverified() {
    let p = us_steel();
    // The held-out R² against the comparator is 0.65: "1" and "1,2" were accepted by rounding.
    for (written, says) in [("1", "at least two decimals"), ("1,2", "decimal point")] {
        let report = format!("# Result\n\nThe held-out R² is {written}.\n");
        let r = claims_result(
            p.path(),
            &report,
            &[claim(3, written, "r_squared", sample("held_out"))],
        );
        assert_eq!(r.status, Status::Unverified, "{written}: {:?}", r.reasons);
        assert!(mentions(&r, says), "{:?}", r.reasons);
    }
}

#[test]
fn other_quantities_are_computed_and_a_wrong_one_fails() {
    let reference = reference();
    let f = |path: &[&str]| figure(&reference, path);
    let p = us_steel();
    let mae = format!("{:.1}", f(&["held_out", "mae"]));
    let rmse = format!("{:.1}", f(&["held_out", "rmse"]));
    let upper = f(&["coefficients", "value", "ci_upper"]);
    let cases = [
        // A sample size.
        (
            "Fitted on 210 training rows.".to_owned(),
            claim(3, "210", "n", sample("training")),
        ),
        // An interval bound.
        (
            format!(
                "The slope's 95% CI is {:.3} to {:.3}.",
                upper - 0.02,
                upper + 0.01
            ),
            claim(
                3,
                &format!("{:.3}", upper + 0.01),
                "ci_upper",
                coefficient("value"),
            ),
        ),
        // A p-value.
        (
            "The intercept's p-value is 0.015.".to_owned(),
            claim(3, "0.015", "p_value", coefficient("intercept")),
        ),
        // The MAE under the RMSE's name, bound honestly and dishonestly.
        (
            format!("The held-out RMSE is {mae}."),
            claim(3, &mae, "mae", sample("held_out")),
        ),
        (
            format!("The held-out RMSE is {mae}."),
            claim(3, &mae, "rmse", sample("held_out")),
        ),
        // The RMSE under the MAE's name.
        (
            format!("The held-out mean absolute error is {rmse}."),
            claim(3, &rmse, "rmse", sample("held_out")),
        ),
    ];
    for (sentence, c) in cases {
        let report = format!("# Result\n\n{sentence}\n");
        let r = claims_result(p.path(), &report, &[c]);
        assert_eq!(r.status, Status::Failed, "{sentence}: {:?}", r.reasons);
    }
}

#[test]
fn look_alike_and_invisible_group_labels_fail_the_split_naming_both() {
    for spelling in [
        "US St\u{435}\u{435}l",
        "US\u{200B} Steel",
        "US\u{00A0}Steel",
    ] {
        let mut table = grunfeld();
        for row in &mut table[1..] {
            if row[1] == "US Steel" && row[2].parse::<u32>().expect("year") >= 1945 {
                row[1] = spelling.to_owned();
            }
        }
        let p = project(&table, &[spelling], false);
        let split = result(p.path(), "split", "group_disjoint_split");
        assert_eq!(
            split.status,
            Status::Failed,
            "{spelling:?}: {:?}",
            split.reasons
        );
        assert!(
            mentions(&split, &format!("{spelling:?} (")) && mentions(&split, "\"US Steel\" ("),
            "{:?}",
            split.reasons
        );
    }
}

#[test]
fn keys_and_headers_that_differ_only_in_white_space_are_refused() {
    let mut table = grunfeld();
    table[5][0] = "r001 ".into();
    let p = project(&table, &["US Steel"], false);
    let split = result(p.path(), "split", "group_disjoint_split");
    assert_eq!(split.status, Status::Failed, "{:?}", split.reasons);
    assert!(
        mentions(&split, "\"r001 \" (table line 6)"),
        "{:?}",
        split.reasons
    );

    let mut table = grunfeld();
    for (i, row) in table.iter_mut().enumerate() {
        row.push(if i == 0 { "value ".into() } else { "1".into() });
    }
    let p = project(&table, &["US Steel"], false);
    let dictionary = result(p.path(), "readiness", "data_dictionary");
    assert_eq!(
        dictionary.status,
        Status::Failed,
        "{:?}",
        dictionary.reasons
    );
    assert!(
        mentions(&dictionary, "\"value \""),
        "{:?}",
        dictionary.reasons
    );
}

#[test]
fn one_observation_on_both_sides_of_the_split_makes_it_unverified() {
    let mut table = grunfeld();
    // A US Steel year copied into General Motors under a new key.
    let steel = table
        .iter()
        .find(|r| r[1] == "US Steel")
        .expect("US Steel")
        .clone();
    let mut copy = steel.clone();
    copy[0] = "r221".into();
    copy[1] = "General Motors".into();
    table.push(copy);
    let p = project(&table, &["US Steel"], false);
    let split = result(p.path(), "split", "group_disjoint_split");
    assert_eq!(split.status, Status::Unverified, "{:?}", split.reasons);
    assert!(
        mentions(&split, "\"r221\"") && mentions(&split, &format!("{:?}", steel[0])),
        "{:?}",
        split.reasons
    );
}

#[test]
fn a_summary_is_judged_by_its_own_digits_not_the_columns_spread() {
    let mut table = grunfeld();
    // One firm-year with a huge market value: the column's spread is about 6.7e7.
    table[3][4] = "1000000000".into();
    let p = project(&table, &["US Steel"], false);
    assert_eq!(
        result(p.path(), "readiness", "readiness_report").status,
        Status::Passed
    );
    let path = p.path().join("reports/readiness.json");
    let mut readiness: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let mean = readiness["numeric"]["value"]["mean"]
        .as_f64()
        .expect("mean");
    readiness["numeric"]["value"]["mean"] = serde_json::json!(mean + 10.0);
    std::fs::write(&path, readiness.to_string()).expect("write");
    let r = result(p.path(), "readiness", "readiness_report");
    assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
}

#[test]
fn an_intercept_at_a_large_offset_is_judged_by_the_predictions_it_implies() {
    let mut table = grunfeld();
    // Investment in thousands, offset by 10⁹: the residual scale is about 0.1.
    for row in &mut table[1..] {
        let invest: f64 = row[3].parse().expect("invest");
        row[3] = format!("{}", 1e9 + invest / 1000.0);
    }
    let p = project(&table, &["US Steel"], false);
    assert_eq!(
        result(p.path(), "model", "univariate_ols").status,
        Status::Passed
    );
    let path = p.path().join("outputs/model.json");
    let mut model: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let intercept = model["intercept"].as_f64().expect("intercept");
    // Every prediction it implies moves by about 500 residual scales.
    model["intercept"] = serde_json::json!(intercept + 50.0);
    std::fs::write(&path, model.to_string()).expect("write");
    let r = result(p.path(), "model", "univariate_ols");
    assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
}
