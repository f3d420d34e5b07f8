//! A project and a running server, shared by the web tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use heartwood_gateway::ProjectContext;
use heartwood_gateway::config::{ProjectConfig, RouteConfig};
use heartwood_web::{AppState, Capability, IngressPolicy, Mode};

/// Connects `project` to the OpenAI-compatible service at `base_url`.
pub fn connect_model(project: &Path, base_url: &str) {
    ProjectConfig::set_route(
        &ProjectContext::at(project).expect("a UTF-8 project path"),
        RouteConfig::compatible(base_url, "scripted"),
    )
    .expect("route");
}

/// Serves `project` on a free loopback port in `mode`, requiring `capability`.
pub async fn serve(
    project: &Path,
    mode: Mode,
    capability: Capability,
) -> (SocketAddr, Arc<AppState>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let context = ProjectContext::at(project).expect("a UTF-8 project path");
    let state = Arc::new(AppState::new(
        context,
        IngressPolicy::new(mode, addr.port(), capability),
    ));
    tokio::spawn(heartwood_web::serve(listener, Arc::clone(&state)));
    (addr, state)
}

/// The `node_modules` holding playwright-core, or `None` (outside CI) to skip.
pub fn node_path() -> Option<String> {
    let node_path = std::env::var("HEARTWOOD_NODE_PATH").unwrap_or_default();
    if Path::new(&node_path).join("playwright-core").is_dir() {
        return Some(node_path);
    }
    // CI always has it (.ci/run installs it); a developer machine may not.
    assert!(
        std::env::var_os("CI").is_none(),
        "HEARTWOOD_NODE_PATH must name a node_modules with playwright-core"
    );
    eprintln!("skipped: no playwright-core; run .ci/run once, or set HEARTWOOD_NODE_PATH");
    None
}

/// Runs a Chromium scenario script with `args`; its standard output, once it succeeded.
pub async fn chromium(
    node_path: &str,
    script: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    patience_ms: &str,
) -> String {
    let out = tokio::process::Command::new("node")
        .arg(script)
        .args(args.iter().map(|a| a.as_ref()))
        .env("NODE_PATH", node_path)
        .env("PATIENCE_MS", patience_ms)
        .output()
        .await
        .expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
