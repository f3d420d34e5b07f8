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

/// Copies the directory tree `from` into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
