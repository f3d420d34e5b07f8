//! A workflow a lab writes itself (issue 54): a definition in the project's `workflows/`
//! folder, validated, listed as the project's own with its digest, started, worked by the
//! scripted model, checked and accepted, with its digest in the record; a run refuses to
//! continue once the file changes. And issue 56 item 6, the seed's rule "a definition with a
//! missing evaluator is not advertised as supported": a definition naming a check the registry
//! lacks is listed unsupported, saying which, and cannot start.

use std::path::Path;

use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};

use super::status;
use super::support::{code, connect_scripted, heartwood, heartwood_async, text};

const LAB: &str = r#"{
  "schema": 1,
  "id": "lab-split",
  "version": "0.1.0",
  "title": "Our lab's split review",
  "inputs": [
    {"id": "table", "path": "data/cohort.csv", "description": "the cohort"},
    {"id": "dictionary", "path": "data/dictionary.json", "description": "column roles"}
  ],
  "artifacts": [
    {"id": "split", "path": "outputs/split.csv", "description": "key,partition for every row"}
  ],
  "stages": [
    {
      "id": "split", "title": "Group-disjoint split",
      "consumes": ["table", "dictionary"], "produces": ["split"],
      "checks": [{"check": "group_disjoint_split", "version": "1",
                  "reads": ["table", "dictionary", "split"], "covers": ["split"]}],
      "researcher_gate": true,
      "budget": {"model_calls": 7, "tokens": 50000, "actions": 5, "seconds": 300}
    }
  ]
}
"#;

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn entry<'a>(catalog: &'a Value, id: &str) -> &'a Value {
    catalog
        .as_array()
        .expect("catalog")
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed: {catalog:#}"))
}

fn finish_split() -> Turn {
    Turn::calls(&[(
        "finish",
        json!({"message": "Wrote the split.", "outcome": {
            "status": "completed", "artifacts": ["outputs/split.csv"], "notes": "by group"
        }}),
    )])
    .with_usage(100, 20)
}

fn write_split(keep: &Path) -> Turn {
    Turn::calls(&[(
        "terminal",
        json!({"command": format!("mkdir -p outputs && cat {} > outputs/split.csv", keep.display())}),
    )])
    .with_usage(100, 20)
}

/// The project's own definition: validated, listed as unreviewed with its digest, and a
/// definition naming a check the registry lacks is listed unsupported and refused at start.
fn lab_definition_is_validated_and_listed(project: &Path) -> String {
    let file = project.join("workflows/lab-split.json");
    let validated = heartwood(
        project,
        &["workflow", "validate", "workflows/lab-split.json"],
    );
    assert!(validated.status.success(), "{}", text(&validated.stdout));
    let digest = sha256(&std::fs::read(&file).expect("definition"));
    assert!(
        text(&validated.stdout).contains(&digest),
        "{}",
        text(&validated.stdout)
    );

    // Every problem at once: a bad path, an uncovered output, an unknown parameter.
    let broken = LAB
        .replace(
            r#""path": "outputs/split.csv""#,
            r#""path": "../split.csv""#,
        )
        .replace(
            r#""covers": ["split"]"#,
            r#""covers": [], "params": {"strict": true}"#,
        );
    let broken_file = project.join("broken.json");
    std::fs::write(&broken_file, broken).expect("write");
    let refused = heartwood(project, &["workflow", "validate", "broken.json"]);
    assert_eq!(code(&refused), 1);
    let said = text(&refused.stdout);
    assert!(said.contains("3 problems"), "{said}");
    assert!(said.contains("../split.csv") && said.contains("no check of the stage covers it"));
    assert!(said.contains("takes no parameters"), "{said}");
    std::fs::remove_file(&broken_file).expect("rm");

    let vibes = LAB
        .replace("lab-split", "lab-vibes")
        .replace("group_disjoint_split", "vibes_check");
    std::fs::write(project.join("workflows/lab-vibes.json"), vibes).expect("write");
    let catalog = heartwood(project, &["workflow", "catalog", "--json"]);
    let catalog: Value = serde_json::from_slice(&catalog.stdout).expect("json");
    let lab = entry(&catalog, "lab-split");
    assert_eq!(lab["source"], "project");
    assert_eq!(lab["location"], "workflows/lab-split.json");
    assert_eq!(lab["sha256"], digest.as_str());
    assert_eq!(lab["supported"], true);
    assert_eq!(entry(&catalog, "tabular-ols")["source"], "maintained");
    let vibes = entry(&catalog, "lab-vibes");
    assert_eq!(vibes["supported"], false);
    assert!(
        vibes["missing_checks"][0]
            .as_str()
            .is_some_and(|m| m.contains("vibes_check")),
        "{vibes:#}"
    );
    let listed = text(&heartwood(project, &["workflow", "catalog"]).stdout);
    assert!(
        listed.contains("project's own, unreviewed (workflows/lab-split.json)"),
        "{listed}"
    );
    assert!(listed.contains("registry lacks vibes_check"), "{listed}");
    // Issue 56 item 7: the budgets are in the catalog's text too.
    assert!(
        listed.contains("budget: 7 model calls · 50000 tokens · 5 actions · 300 s"),
        "{listed}"
    );
    let start = heartwood(project, &["workflow", "start", "lab-vibes", "Anything?"]);
    // Refused: the workflow cannot be used as given (exit 9).
    assert_eq!(code(&start), 9);
    assert!(
        text(&start.stderr).contains("not supported here"),
        "{}",
        text(&start.stderr)
    );
    std::fs::remove_file(project.join("workflows/lab-vibes.json")).expect("rm");
    digest
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lab_defined_workflow_runs_end_to_end_bound_to_its_digest() {
    let project = tempfile::tempdir().expect("project");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, project.path());
    let keep = project.path().join("good-split.csv");
    std::fs::rename(project.path().join("outputs/split.csv"), &keep).expect("keep");
    std::fs::create_dir_all(project.path().join("workflows")).expect("mkdir");
    std::fs::write(project.path().join("workflows/lab-split.json"), LAB).expect("write");
    let server = ScriptedModelServer::start(Script::of(vec![write_split(&keep), finish_split()]))
        .await
        .expect("server");
    connect_scripted(project.path(), &server.base_url());
    let digest = lab_definition_is_validated_and_listed(project.path());
    let started = heartwood(
        project.path(),
        &[
            "workflow",
            "start",
            "lab-split",
            "Is the split group-disjoint?",
        ],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    let w = status(project.path());
    assert_eq!(w["definition"], "lab-split");
    assert_eq!(w["source"], "project");
    assert_eq!(w["definition_sha256"], digest.as_str());

    let run = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));
    let evaluated = heartwood(project.path(), &["workflow", "evaluate"]);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    let w = status(project.path());
    assert_eq!(w["assessment"]["eligible"], true, "{w:#}");
    let check = &w["assessment"]["checks"][0];
    assert_eq!(check["check"], "group_disjoint_split");
    assert_eq!(
        check["version"], "1",
        "the record names the check's version"
    );
    let accepted = heartwood(
        project.path(),
        &[
            "workflow",
            "accept",
            "last",
            "--revision",
            &w["revision"].to_string(),
            "--fingerprint",
            w["assessment"]["fingerprint"].as_str().expect("fp"),
        ],
    );
    assert!(accepted.status.success(), "{}", text(&accepted.stderr));
    let w = status(project.path());
    assert_eq!(w["stages"][0]["status"], "accepted", "{w:#}");

    // The record: the run's first event binds the definition's digest and source.
    let sessions = project.path().join(".heartwood/sessions");
    let journal = std::fs::read_dir(&sessions)
        .expect("sessions")
        .filter_map(Result::ok)
        .map(|e| e.path().join("events.jsonl"))
        .find(|p| p.exists())
        .expect("a journal");
    let record = std::fs::read_to_string(journal).expect("journal");
    assert!(
        record.contains(&format!("\"definition_sha256\":\"{digest}\"")),
        "the record binds the definition's digest"
    );
    assert!(record.contains("\"source\":\"project\""));

    // A second run, then the definition file changes: the run refuses to continue.
    let again = heartwood(
        project.path(),
        &[
            "workflow",
            "start",
            "lab-split",
            "Again: is the split group-disjoint?",
        ],
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    let file = project.path().join("workflows/lab-split.json");
    std::fs::write(&file, LAB.replace("Our lab's", "My lab's")).expect("edit");
    let refused = heartwood_async(project.path(), &["workflow", "run"]).await;
    // Refused: the definition cannot be used as bound (exit 9).
    assert_eq!(code(&refused), 9, "{}", text(&refused.stdout));
    assert!(
        text(&refused.stderr).contains("changed since the run started"),
        "{}",
        text(&refused.stderr)
    );
}
