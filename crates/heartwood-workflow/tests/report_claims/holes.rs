//! The holes an outside reviewer found in `report_claims` with only the binary (about 250
//! reproducible cases on the sleep-study example, `holes.json`: each case's report, claims
//! file and the class of hole it belongs to; offset cases run on the example with the score
//! column offset by 10⁹ or 10¹², the model written by the reviewer's exact-arithmetic
//! script). Every case the reviewer saw pass while stating a wrong, unread or unbound figure
//! must now be `failed` or `unverified`, never `passed`.

use std::path::Path;

use heartwood_workflow::Status;

const EXAMPLE: &str = "../../fixtures/projects/sleep-study";

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn cases() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report_claims/holes.json");
    serde_json::from_slice(&std::fs::read(path).expect("holes.json")).expect("json")
}

/// The example project, offset as the case's name says, with the case's report and claims.
fn status(all: &serde_json::Value, case: &serde_json::Value) -> (Status, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE),
        dir.path(),
    );
    let name = case["case"].as_str().expect("name");
    let offset = if name.starts_with("o12") {
        Some("off12")
    } else if name.starts_with("o0") {
        Some("off9")
    } else {
        None
    };
    if let Some(offset) = offset {
        for (file, text) in all["offsets"][offset].as_object().expect("offset files") {
            std::fs::write(dir.path().join(file), text.as_str().expect("text")).expect("write");
        }
    }
    let p = dir.path();
    std::fs::write(
        p.join("reports/final.md"),
        case["report"].as_str().expect("report"),
    )
    .expect("report");
    std::fs::write(
        p.join("reports/claims.json"),
        case["claims"].as_str().expect("claims"),
    )
    .expect("claims");
    let r = super::result(p, "report", "report_claims");
    (r.status, r.reasons)
}

#[test]
fn every_hole_the_reviewer_found_is_failed_or_unverified() {
    let all = cases();
    let mut passed = Vec::new();
    let mut holes = 0;
    for case in all["cases"].as_array().expect("cases") {
        let (status, reasons) = status(&all, case);
        let name = case["case"].as_str().unwrap_or_default();
        eprintln!("{name}: {status:?} {reasons:?}");
        if let Some(hole) = case["hole"].as_str() {
            holes += 1;
            if status == Status::Passed {
                passed.push(format!("{name} ({hole})"));
            }
        }
    }
    assert!(holes > 100, "{holes}");
    assert!(passed.is_empty(), "still passed: {passed:#?}");
}

#[test]
fn the_shipped_example_report_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE),
        dir.path(),
    );
    let r = super::result(dir.path(), "report", "report_claims");
    assert_eq!(r.status, Status::Passed, "{:?}", r.reasons);
}

fn case_status(name: &str) -> (Status, Vec<String>) {
    let all = cases();
    let case = all["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["case"] == name)
        .unwrap_or_else(|| panic!("{name}"))
        .clone();
    status(&all, &case)
}

/// Words naming another coefficient, statistic, interval level, metric or sample than the
/// claim's, and a figure off by 900 at an offset of 10¹², fail outright.
#[test]
fn a_figure_whose_words_name_another_quantity_fails() {
    for name in [
        "c01_coefswap",
        "c02_se_as_est",
        "p06_ci_level_mismatch",
        "m02_mse",
        "m06_r_lower",
        "m07_comp_as_rmse",
        "z01_comment_sample",
        "z03_link_url_sample",
        "o12_ci_off900",
        "o12_int_off04",
        "n07_entity_minus",
    ] {
        let (status, reasons) = case_status(name);
        assert_eq!(status, Status::Failed, "{name}: {reasons:?}");
    }
}

/// Correct reports the reviewer wrote in the grammar still pass: bold figures, an interval in
/// brackets or with a dash, a table with an `n` column, a sentence wrapped in a quote, a
/// percentage R², all rows.
#[test]
fn correct_reports_in_the_grammar_pass() {
    for name in [
        "b01_correct",
        "f09_bold_md",
        "f12_ci_brackets",
        "p07_ci_dash",
        "f16_ci_neg_range",
        "f08_table_ok",
        "q02_blockquote_wrap_correct",
        "r15_rmse_pct",
        "x01_all",
        "o00_int_correct",
    ] {
        let (status, reasons) = case_status(name);
        assert_eq!(status, Status::Passed, "{name}: {reasons:?}");
    }
}

/// The sentences the agent's prompt gives as examples, and the shape of the benchmark's report
/// (`xtask/src/bench/workflow.rs`), pass on the example project.
#[test]
fn the_prompts_example_sentences_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE),
        dir.path(),
    );
    let report = "# Sleep and test scores\n\nThe held-out RMSE is 0.58.\n\
                  The slope is 7.05 (SE 0.32, 95% CI 6.28 to 7.81, p < 0.001).\n\
                  The held-out RMSE is 0.576 (n = 3). The slope on sleep_hours is 7.045.\n";
    let claims = serde_json::json!({"claims": [
        {"line": 3, "value": "0.58", "quantity": "rmse", "sample": "held_out"},
        {"line": 4, "value": "7.05", "quantity": "estimate", "coefficient": "sleep_hours"},
        {"line": 4, "value": "0.32", "quantity": "std_error", "coefficient": "sleep_hours"},
        {"line": 4, "value": "6.28", "quantity": "ci_lower", "coefficient": "sleep_hours"},
        {"line": 4, "value": "7.81", "quantity": "ci_upper", "coefficient": "sleep_hours"},
        {"line": 4, "value": "0.001", "quantity": "p_value", "coefficient": "sleep_hours"},
        {"line": 5, "value": "0.576", "quantity": "rmse", "sample": "held_out"},
        {"line": 5, "value": "3", "quantity": "n", "sample": "held_out"},
        {"line": 5, "value": "7.045", "quantity": "estimate", "coefficient": "sleep_hours"}
    ]});
    std::fs::write(dir.path().join("reports/final.md"), report).expect("report");
    std::fs::write(dir.path().join("reports/claims.json"), claims.to_string()).expect("claims");
    let r = super::result(dir.path(), "report", "report_claims");
    assert_eq!(r.status, Status::Passed, "{:?}", r.reasons);
}

/// Attacks on the grammar itself, each stating the training R² (0.986) while a reader takes it
/// for something else or cannot tell: never passed.
#[test]
fn a_figure_the_grammar_cannot_attribute_is_never_passed() {
    let all = cases();
    for (attack, report) in [
        (
            "sample in a heading",
            "# Sleep\n\n## Held-out site\n\nR² is\n0.986.\n",
        ),
        (
            "two samples",
            "# Sleep\n\nHeld-out data were set aside.\n\nThe training R² is 0.986\n(held-out data were set aside).\n",
        ),
        (
            "sample only in another column",
            "# Sleep\n\n| held-out | |\n|---|---|\n| R² | 0.986 |\n",
        ),
        (
            "metric after the figure",
            "# Sleep\n\nOn the training rows,\n\n0.986 is the R².\n",
        ),
        (
            "a statistic's name",
            "# Sleep\n\nOn the training rows\n\nR² 95% CI 0.986.\n",
        ),
        (
            "look-alike letters",
            "# Sleep\n\nIn training terms,\n\nthe h\u{435}ld-out R² is 0.986.\n",
        ),
    ] {
        // The claim binds the figure where it stands, honestly: only the words are at issue.
        let line = 1 + report
            .lines()
            .position(|l| l.contains("0.986"))
            .expect("the figure");
        let claims = serde_json::json!({"claims": [{"line": line, "value": "0.986",
            "quantity": "r_squared", "sample": "training"}]});
        let case = serde_json::json!({"case": attack, "report": report,
            "claims": claims.to_string()});
        let (status, reasons) = status(&all, &case);
        assert_eq!(
            status,
            Status::Unverified,
            "{attack}: {reasons:?}\n{report}"
        );
        assert!(
            !reasons
                .iter()
                .any(|r| r.contains("does not") && r.contains("figures read on that line")),
            "{attack}: {reasons:?}"
        );
    }
}
