//! A whole accepted run exported as a Provenance Run RO-Crate: `heartwood crate verify` and
//! the crate's own Python verifier both pass it, name a changed file, metadata entry and
//! journal line, and no planted key or token is anywhere in its bytes. When the RO-Crate
//! venv is there (HEARTWOOD_ROCRATE_VENV), roc-validator finds no REQUIRED issue and the
//! `rocrate` library loads it.

use super::*;

const PLANTED: &str = "sk-planted-SECRET-7f3a9c";
/// A token with no known prefix, found only by the `Bearer` before it.
const BEARER: &str = "plantedBearerToken0123456789";

async fn accepted_run(root: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, root);
    let artifacts = [
        "reports/readiness.json",
        "analysis/plan.json",
        "outputs/split.csv",
        "analysis/fit.py",
        "outputs/model.json",
        "reports/final.md",
        "reports/claims.json",
    ];
    std::fs::create_dir(root.join("stash")).expect("stash");
    for path in artifacts {
        let name = path.rsplit('/').next().expect("name");
        std::fs::rename(root.join(path), root.join("stash").join(name)).expect("stash it");
    }
    // A key in a file outside the bound set, and a key and a token in a command's text.
    std::fs::write(root.join(".env"), format!("OPENAI_API_KEY={PLANTED}\n")).expect("env");
    let mut turns = Vec::new();
    for (command, wrote) in [
        (
            format!(
                "OPENAI_API_KEY={PLANTED} cp stash/readiness.json reports/ # Authorization: Bearer {BEARER}"
            ),
            vec!["reports/readiness.json"],
        ),
        (
            "cp stash/plan.json analysis/".into(),
            vec!["analysis/plan.json"],
        ),
        (
            "cp stash/split.csv outputs/".into(),
            vec!["outputs/split.csv"],
        ),
        (
            "cp stash/fit.py analysis/ && cp stash/model.json outputs/".into(),
            vec!["analysis/fit.py", "outputs/model.json"],
        ),
        (
            "cp stash/final.md stash/claims.json reports/".into(),
            vec!["reports/final.md", "reports/claims.json"],
        ),
        (
            "cp stash/model.json outputs/model.reproduced.json".into(),
            vec!["outputs/model.reproduced.json"],
        ),
    ] {
        turns.extend(stage_turns(&command, &wrote));
    }
    let server = ScriptedModelServer::start(Script::of(turns))
        .await
        .expect("server");
    connect_scripted(root, &server.base_url());
    let started = heartwood(
        root,
        &[
            "workflow",
            "start",
            "tabular-ols",
            "Does sleep predict the test score?",
        ],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    for stage in [
        "readiness",
        "plan",
        "split",
        "model",
        "report",
        "reproduction",
    ] {
        run_and_allow(root).await;
        if stage == "split" {
            assert!(heartwood(root, &["workflow", "evaluate"]).status.success());
        } else {
            evaluate_and_accept(root);
        }
        assert_eq!(stage_status(&status(root), stage), "accepted");
    }
}

fn verify_both(root: &Path, krate: &Path) -> (bool, String) {
    let ours = heartwood(root, &["crate", "verify", &krate.display().to_string()]);
    let script = krate.join("verify_crate.py");
    let script = if script.exists() {
        script
    } else {
        root.join("crate/verify_crate.py")
    };
    let python = std::process::Command::new("python3")
        .arg(&script)
        .arg(krate)
        .output()
        .expect("python3");
    assert_eq!(
        ours.status.success(),
        python.status.success(),
        "{}\n{}{}",
        text(&ours.stdout),
        text(&python.stdout),
        text(&python.stderr)
    );
    (
        ours.status.success(),
        format!("{}{}", text(&ours.stdout), text(&python.stdout)),
    )
}

fn tampered(root: &Path, krate: &Path, name: &str, edit: impl FnOnce(&Path)) -> String {
    let copy = root.join(format!("tampered-{name}"));
    std::process::Command::new("cp")
        .arg("-r")
        .arg(krate)
        .arg(&copy)
        .status()
        .expect("cp");
    edit(&copy);
    let (ok, said) = verify_both(root, &copy);
    assert!(!ok, "a changed {name} passed:\n{said}");
    said
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accepted_run_exports_as_a_crate_that_verifies_and_names_each_change() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path();
    accepted_run(root).await;
    let krate = root.join("crate");
    let out = heartwood(
        root,
        &[
            "sessions", "export", "last", "--format", "ro-crate", "--out", "crate",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (ok, said) = verify_both(root, &krate);
    assert!(ok, "{said}");
    assert!(said.contains("6 acceptances"), "{said}");
    // The export is recorded with its destination.
    let shown = heartwood(
        root,
        &["sessions", "export", "last", "--format", "markdown"],
    );
    assert!(
        text(&shown.stdout).contains(&krate.display().to_string()),
        "{}",
        text(&shown.stdout)
    );

    // "The export path is itself recorded as an event": a transcript written to a file too.
    let md = heartwood(
        root,
        &[
            "sessions", "export", "last", "--format", "markdown", "--out", "t.md",
        ],
    );
    assert!(md.status.success(), "{}", text(&md.stderr));
    let shown = heartwood(
        root,
        &["sessions", "export", "last", "--format", "markdown"],
    );
    let to = root.join("t.md").display().to_string();
    assert!(text(&shown.stdout).contains(&to), "{}", text(&shown.stdout));

    // Nothing private: the planted key and token appear in no byte of the crate.
    let zip = root.join("crate.zip");
    let zipped = heartwood(
        root,
        &[
            "sessions",
            "export",
            "last",
            "--format",
            "ro-crate",
            "--out",
            "crate.zip",
            "--zip",
        ],
    );
    assert!(zipped.status.success(), "{}", text(&zipped.stderr));
    let mut all = std::fs::read(&zip).expect("zip");
    for entry in walk(&krate) {
        all.extend(std::fs::read(entry).expect("read"));
    }
    for planted in [PLANTED, BEARER] {
        assert!(
            !all.windows(planted.len()).any(|w| w == planted.as_bytes()),
            "a planted secret leaked: {planted}"
        );
    }
    described_as_recorded(&krate);
    assert!(verify_both(root, &zip).0);

    let said = tampered(root, &krate, "file", |c| {
        std::fs::write(c.join("outputs/model.json"), b"{}").expect("edit")
    });
    assert!(said.contains("outputs/model.json: changed"), "{said}");
    let said = tampered(root, &krate, "metadata", |c| {
        let path = c.join("ro-crate-metadata.json");
        let text = std::fs::read_to_string(&path).expect("metadata");
        let mut meta: Value = serde_json::from_str(&text).expect("json");
        for e in meta["@graph"].as_array_mut().expect("graph") {
            if e["@id"] == "reports/final.md" {
                e["sha256"] = json!("0".repeat(64));
            }
        }
        std::fs::write(&path, serde_json::to_vec(&meta).expect("json")).expect("write");
    });
    assert!(said.contains("reports/final.md: changed"), "{said}");
    let said = tampered(root, &krate, "check version", |c| {
        let path = c.join("ro-crate-metadata.json");
        let text = std::fs::read_to_string(&path).expect("metadata");
        let mut meta: Value = serde_json::from_str(&text).expect("json");
        for e in meta["@graph"].as_array_mut().expect("graph") {
            if e["@id"] == "#check-data_dictionary-v1" {
                e["softwareVersion"] = json!("2");
            }
        }
        std::fs::write(&path, serde_json::to_vec(&meta).expect("json")).expect("write");
    });
    assert!(
        said.contains(
            "the metadata states check data_dictionary at version \"2\", the journal recorded \"1\""
        ),
        "{said}"
    );
    let said = tampered(root, &krate, "journal", |c| {
        let path = c.join("journal/events.jsonl");
        let text = std::fs::read_to_string(&path).expect("events");
        std::fs::write(
            &path,
            text.replacen("\"by_researcher\":true", "\"by_researcher\":false", 1),
        )
        .expect("write");
    });
    assert!(said.contains("journal/events.jsonl line"), "{said}");

    support::rocrate::validate(
        &krate,
        &support::rocrate::PROFILES,
        Some("workflow/tabular-ols.json"),
    );
}

/// Each command is stated by its text (its secrets redacted) and sandbox level, and each check
/// at the version the journal recorded when it ran.
fn described_as_recorded(krate: &Path) {
    let meta: Value = serde_json::from_slice(
        &std::fs::read(krate.join("ro-crate-metadata.json")).expect("metadata"),
    )
    .expect("json");
    let graph = meta["@graph"].as_array().expect("graph");
    let by_id = |at: &str| graph.iter().find(|e| e["@id"] == at);
    let commands: Vec<(String, String)> = graph
        .iter()
        .filter(|e| {
            e["@type"] == "CreateAction" && e["instrument"]["@id"] == "#agent-tool-terminal"
        })
        .map(|e| {
            let props: Vec<&Value> = e["additionalProperty"]
                .as_array()
                .expect("properties")
                .iter()
                .filter_map(|p| by_id(p["@id"].as_str()?))
                .collect();
            let value = |name: &str| {
                props
                    .iter()
                    .find(|p| p["name"] == name)
                    .and_then(|p| p["value"].as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            (value("command"), value("sandbox level"))
        })
        .collect();
    let redacted = (
        "OPENAI_API_KEY=[redacted] cp stash/readiness.json reports/ # Authorization: Bearer [redacted]".to_owned(),
        "project_write".to_owned(),
    );
    assert!(commands.contains(&redacted), "{commands:#?}");
    assert!(
        commands.contains(&(
            "cp stash/plan.json analysis/".to_owned(),
            "project_write".to_owned()
        )),
        "{commands:#?}"
    );

    let events = std::fs::read_to_string(krate.join("journal/events.jsonl")).expect("events");
    let mut seen = 0;
    for line in events.lines() {
        let event: Value = serde_json::from_str(line).expect("event");
        for check in event["assessment"]["checks"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (id, version) = (check["check"].as_str().expect("id"), &check["version"]);
            let version = version.as_str().expect("this build records check versions");
            let tool = by_id(&format!("#check-{id}-v{version}"))
                .unwrap_or_else(|| panic!("no entity for {id} {version}"));
            assert_eq!(tool["softwareVersion"], version, "{tool}");
            seen += 1;
        }
    }
    assert!(seen > 0, "no check ran: {events}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        if entry.path().is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}
