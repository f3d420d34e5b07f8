//! What the batch crate's tests share: a route connector that saves the manifest's scripted
//! route into each item's project through the gateway's project configuration (the command
//! line's option parser is not in this crate), manifests over real template projects, and the
//! pool running items in this process.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use heartwood_batch::{Connection, Driver, Manifest, Record, RouteConnector, pool};
use heartwood_gateway::ProjectContext;
use heartwood_gateway::config::{ProjectConfig, RouteCategory, RouteConfig};

/// Saves the scripted route (`--base-url`) into each project, as `model connect` would.
pub struct ScriptedRoute;

impl RouteConnector for ScriptedRoute {
    fn problem(&self, connect_args: &[String]) -> Option<String> {
        (!connect_args.iter().any(|a| a == "--base-url")).then(|| "no --base-url".to_owned())
    }

    fn connect(
        &self,
        connect_args: &[String],
        project: &Path,
    ) -> heartwood_batch::Result<Connection> {
        let base_url = connect_args
            .iter()
            .skip_while(|a| *a != "--base-url")
            .nth(1)
            .cloned()
            .unwrap_or_default();
        let context = ProjectContext::at(project).expect("a project");
        ProjectConfig::set_route(
            &context,
            RouteConfig {
                category: RouteCategory::Compatible,
                base_url,
                model: "scripted".into(),
                api_key_env: None,
                recording: None,
                max_input_tokens: 100_000,
                max_output_tokens: 1_000,
                timeout_secs: 60,
                prices: None,
            },
        )
        .expect("route saved");
        Ok(Connection::Connected("the scripted route".to_owned()))
    }
}

/// The marker item `k`'s text carries, so its requests take its own lane of the server.
pub fn marker(k: usize) -> String {
    format!("[item-{k:02}]")
}

/// The name of item `k`.
pub fn item(k: usize) -> String {
    format!("item-{k:02}")
}

/// A manifest at `root/study.toml`: `head` (what every item does), the scripted route, and
/// `items` (each item's own lines after its name).
pub fn manifest(root: &Path, head: &str, base_url: &str, items: &[String]) -> PathBuf {
    let mut text = format!(
        "name = \"study\"\n{head}\ntemplate = \"template\"\n\n[route]\ncategory = \
         \"compatible\"\nbase_url = \"{base_url}\"\nmodel = \"scripted\"\nconcurrency = 4\n"
    );
    for (k, extra) in items.iter().enumerate() {
        text.push_str(&format!("\n[[items]]\nname = \"{}\"\n{extra}\n", item(k)));
    }
    let path = root.join("study.toml");
    std::fs::write(&path, text).expect("manifest");
    path
}

/// Loads the manifest as the batch reads it.
pub fn load(path: &Path) -> Manifest {
    Manifest::load(path, &ScriptedRoute).unwrap_or_else(|e| panic!("{e}"))
}

/// Drives every item of `manifest` in this process, `jobs` at once, off the caller's runtime;
/// the records by item index.
pub async fn drive_all(manifest: &Manifest, jobs: usize) -> Vec<Record> {
    let manifest = manifest.clone();
    tokio::task::spawn_blocking(move || {
        let driver = Driver::new(&manifest, &ScriptedRoute).expect("driver");
        let indices: Vec<usize> = (0..manifest.items.len()).collect();
        let mut records = pool::run(&indices, jobs, |i| driver.drive(i), |_, _| {});
        records.sort_by_key(|r| r.index);
        records
    })
    .await
    .expect("the pool")
}

/// Drives item `index` alone, off the caller's runtime.
pub async fn drive_one(manifest: &Manifest, index: usize) -> Record {
    let manifest = manifest.clone();
    tokio::task::spawn_blocking(move || {
        Driver::new(&manifest, &ScriptedRoute)
            .expect("driver")
            .drive(index)
            .unwrap_or_else(|e| panic!("{e}"))
    })
    .await
    .expect("the driver")
}

/// The event types of a session, in order, from its verified record.
pub fn event_types(project: &Path, session: &str) -> Vec<String> {
    let context = ProjectContext::at(project).expect("a project");
    let view = heartwood_gateway::SessionAdmin::new(&context)
        .show(session)
        .expect("the session");
    view.events
        .iter()
        .flatten()
        .filter_map(|e| {
            let json = serde_json::to_value(e).ok()?;
            json["type"].as_str().map(str::to_owned)
        })
        .collect()
}
