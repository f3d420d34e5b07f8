//! A whole accepted run exported as a Provenance Run RO-Crate: `heartwood crate verify` and
//! the crate's own Python verifier both pass it, name a changed file, metadata entry and
//! journal line, and no planted key or token is anywhere in its bytes. When the RO-Crate
//! venv is there (HEARTWOOD_ROCRATE_VENV), roc-validator finds no REQUIRED issue and the
//! `rocrate` library loads it.

use super::*;

const PLANTED: &str = "sk-planted-SECRET-7f3a9c";

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
    // A key in a file outside the bound set, and a token in a command's text.
    std::fs::write(root.join(".env"), format!("OPENAI_API_KEY={PLANTED}\n")).expect("env");
    let mut turns = Vec::new();
    for (command, wrote) in [
        (
            format!("cp stash/readiness.json reports/ # token {PLANTED}"),
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
    assert!(
        !all.windows(PLANTED.len()).any(|w| w == PLANTED.as_bytes()),
        "a planted secret leaked"
    );
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

    validate(&krate);
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

/// roc-validator at the REQUIRED level, and the `rocrate` library, from their venv.
fn validate(krate: &Path) {
    let Some(venv) = std::env::var_os("HEARTWOOD_ROCRATE_VENV") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true needs HEARTWOOD_ROCRATE_VENV"
        );
        eprintln!(
            "skipped: HEARTWOOD_ROCRATE_VENV is not set, so roc-validator and rocrate cannot run"
        );
        return;
    };
    let venv = Path::new(&venv);
    // Where w3id.org is out of reach, the 1.1 context comes from the venv (see .ci/run).
    let cache = tempfile::tempdir().expect("cache");
    let cache_path = cache.path().join("http");
    let context = venv.join("ro-crate-1.1-context.jsonld");
    if context.exists() {
        let seeder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/ro-crate/seed_validator_cache.py");
        let seeded = std::process::Command::new(venv.join("bin/python"))
            .arg(seeder)
            .arg(&cache_path)
            .arg(&context)
            .output()
            .expect("seed");
        assert!(seeded.status.success(), "{}", text(&seeded.stderr));
    }
    for profile in [
        "ro-crate-1.1",
        "provenance-run-crate-0.5",
        "workflow-run-crate-0.5",
        "process-run-crate-0.5",
    ] {
        let out = std::process::Command::new(venv.join("bin/rocrate-validator"))
            .args([
                "-y", "validate", "-p", profile, "-l", "required", "-f", "json",
            ])
            .args(["--skip-availability-check", "--cache-path"])
            .arg(&cache_path)
            .arg(krate)
            .output()
            .expect("rocrate-validator");
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{profile}: {}{}", text(&out.stdout), text(&out.stderr)));
        assert_eq!(report["passed"], true, "{profile}: {report:#}");
    }
    let loaded = std::process::Command::new(venv.join("bin/python"))
        .args(["-c", "import sys, rocrate.rocrate as r; c = r.ROCrate(sys.argv[1]); print(len(c.get_entities()), c.mainEntity.id)"])
        .arg(krate)
        .output()
        .expect("python");
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
    assert!(
        text(&loaded.stdout).contains("workflow/tabular-ols.json"),
        "{}",
        text(&loaded.stdout)
    );
}
