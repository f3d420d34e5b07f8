//! `heartwood demo --exec`: the first run a new user makes, with no model anywhere, completes,
//! writes the report, and leaves a session that verifies.

mod support;

use support::{heartwood, text};

#[test]
fn the_demo_runs_the_recorded_session_and_its_record_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = heartwood(dir.path(), &["demo", "--exec", "study"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("[demo] This is where you decide"),
        "{stdout}"
    );
    assert!(stdout.contains("Session demo verified"), "{stdout}");
    let study = dir.path().join("study");
    let report = std::fs::read_to_string(study.join("reports/readiness.md")).expect("report");
    assert!(report.contains("Rows: 12 participants"), "{report}");
    let verify = heartwood(&study, &["sessions", "verify", "demo"]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));

    let again = heartwood(dir.path(), &["demo", "--exec", "study"]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("already exists and is not empty"));
}
