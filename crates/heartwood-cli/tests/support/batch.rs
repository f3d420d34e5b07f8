//! Batches for the batch tests: a template project, a manifest over `n` items each asking its
//! own lane of the scripted model server, and the `heartwood batch` commands.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// The marker item `k`'s task carries, so its requests take its own lane of the server.
pub fn marker(k: usize) -> String {
    format!("[item-{k:02}]")
}

/// The name of item `k`.
pub fn item(k: usize) -> String {
    format!("item-{k:02}")
}

/// Writes a template (with `data.txt`), one input per item, and a manifest over `n` items to
/// `root`; returns the manifest's path.
pub fn manifest(root: &Path, base_url: &str, n: usize, policy: &str, task: &str) -> PathBuf {
    std::fs::create_dir_all(root.join("template")).expect("template");
    std::fs::write(root.join("template/README.md"), "a study\n").expect("readme");
    std::fs::create_dir_all(root.join("inputs")).expect("inputs");
    let mut text = format!(
        "name = \"study\"\ntask = \"{task}\"\npolicy = \"{policy}\"\ntemplate = \"template\"\n\n\
         [route]\ncategory = \"compatible\"\nbase_url = \"{base_url}\"\nmodel = \"scripted\"\n\
         concurrency = 4\n"
    );
    for k in 0..n {
        std::fs::write(
            root.join(format!("inputs/{k}.txt")),
            "a\nb\nc\n".repeat(k + 1),
        )
        .expect("input");
        text.push_str(&format!(
            "\n[[items]]\nname = \"{}\"\ninputs = {{ \"data.txt\" = \"inputs/{k}.txt\" }}\n\
             task = \"{} {task}\"\n",
            item(k),
            marker(k)
        ));
    }
    let path = root.join("study.toml");
    std::fs::write(&path, text).expect("manifest");
    path
}

/// Runs `heartwood batch ARGS` in `root`, without blocking the runtime the server runs on.
pub async fn batch(root: &Path, args: &[&str]) -> Output {
    let mut all = vec!["batch"];
    all.extend(args);
    super::heartwood_async(root, &all).await
}

/// `heartwood batch status MANIFEST --json`.
pub async fn status(root: &Path, manifest: &Path) -> Value {
    let out = batch(root, &["status", &manifest.to_string_lossy(), "--json"]).await;
    assert!(out.status.success(), "{}", super::text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("status json")
}

/// The status row of item `k`.
pub fn row(status: &Value, k: usize) -> &Value {
    status["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|r| r["item"] == item(k).as_str())
        .expect("the item's row")
}

/// Runs a command a status row printed, as a researcher would paste it into a shell (with
/// the built `heartwood` first on PATH).
pub async fn run_printed(command: &str) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_heartwood"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    tokio::process::Command::new("sh")
        .args(["-c", command])
        .env("PATH", path)
        .output()
        .await
        .expect("sh")
}

/// The events of a session, in order (from `sessions show --json`).
pub fn events(project: &Path, session: &str) -> Vec<Value> {
    let out = super::heartwood(project, &["sessions", "show", session, "--json"]);
    assert!(out.status.success(), "{}", super::text(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
    shown["events"].as_array().expect("events").clone()
}

/// The event types of a session, in order.
pub fn event_types(project: &Path, session: &str) -> Vec<String> {
    events(project, session)
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect()
}

/// How many times each action of a session started running (from its journal), by action id.
pub fn runs_per_action(project: &Path, session: &str) -> std::collections::BTreeMap<u64, usize> {
    let mut runs = std::collections::BTreeMap::new();
    for e in events(project, session) {
        if e["type"] == "action_updated" && e["state"] == "running" {
            *runs
                .entry(e["action_id"].as_u64().expect("id"))
                .or_insert(0) += 1;
        }
    }
    runs
}

/// Every item's log in the batch directory `dir`, for a failure's message.
pub fn logs(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        out.push_str(&format!("--- {}\n", entry.path().display()));
        out.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
    }
    out
}
