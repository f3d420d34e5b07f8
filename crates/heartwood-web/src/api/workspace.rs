//! The workspace routes, read-only: the tree, a file's text, the changed files and a file's
//! diff. Paths are checked by the workspace service; one it refuses is answered `422` with why.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use heartwood_gateway::workspace::{
    ChangeLimits, ChangeReport, DiffLimits, FileDiff, TextFile, TextLimits, Tree, TreeLimits,
    WorkspaceService,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Route, answers, of, read};
use crate::answer::{blocking, json_response, plain};
use crate::server::AppState;

pub(super) fn routes() -> Vec<Route> {
    vec![
        read(
            "/api/workspace/tree",
            "The project's files under `path`, within bounds.",
            answers::<Tree>(),
        )
        .query(of::<Place>())
        .served_by(|| get(tree)),
        read(
            "/api/workspace/file",
            "A file's text from its first line, within bounds (binary files show none).",
            answers::<TextFile>(),
        )
        .query(of::<Place>())
        .served_by(|| get(file)),
        read(
            "/api/workspace/changes",
            "The changed files: against HEAD in Git, else those the session's edits wrote.",
            answers::<ChangeReport>(),
        )
        .query(of::<Place>())
        .served_by(|| get(changes)),
        read(
            "/api/workspace/diff",
            "A file's diff against HEAD.",
            answers::<FileDiff>(),
        )
        .query(of::<Place>())
        .served_by(|| get(diff)),
        read(
            "/api/workspace/change_diff",
            "One changed file as the workspace view words it: against HEAD, or without Git \
             what the session's edits of it changed.",
            answers::<ChangeDiff>(),
        )
        .query(of::<Place>())
        .served_by(|| get(change_diff)),
    ]
}

/// Where in the workspace.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Place {
    /// A project-relative path (the project itself when empty).
    #[serde(default)]
    pub path: String,
    /// The session whose edits count, in a project without Git (the latest when absent).
    #[serde(default)]
    pub session: Option<String>,
}

/// One changed file's diff, in words and lines.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChangeDiff {
    /// The file.
    pub path: String,
    /// Its diff, or why there is none.
    pub text: String,
}

/// `read`'s answer from the project's workspace, worked out on the blocking pool.
async fn answer<T: Serialize>(
    app: Arc<AppState>,
    read: impl FnOnce(&WorkspaceService) -> Result<T, heartwood_gateway::GatewayError> + Send + 'static,
) -> Response {
    blocking(move || {
        let service = match app.gateway.workspace() {
            Ok(service) => service,
            Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        };
        match read(&service) {
            Ok(value) => json_response(StatusCode::OK, &value),
            Err(e) => plain(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        }
    })
    .await
}

async fn tree(State(app): State<Arc<AppState>>, Query(at): Query<Place>) -> Response {
    answer(app, move |w| w.tree(&at.path, TreeLimits::default())).await
}

async fn file(State(app): State<Arc<AppState>>, Query(at): Query<Place>) -> Response {
    answer(app, move |w| w.text(&at.path, 1, TextLimits::default())).await
}

async fn changes(State(app): State<Arc<AppState>>, Query(at): Query<Place>) -> Response {
    answer(app, move |w| {
        w.changes(at.session.as_deref(), ChangeLimits::default())
    })
    .await
}

async fn diff(State(app): State<Arc<AppState>>, Query(at): Query<Place>) -> Response {
    answer(app, move |w| w.diff(&at.path, DiffLimits::default())).await
}

async fn change_diff(State(app): State<Arc<AppState>>, Query(at): Query<Place>) -> Response {
    answer(app, move |w| {
        let text = w.change_diff(at.session.as_deref(), &at.path)?;
        Ok(ChangeDiff {
            path: at.path,
            text,
        })
    })
    .await
}
