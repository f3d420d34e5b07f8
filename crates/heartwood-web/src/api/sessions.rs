//! The session routes: the list, a new id, a snapshot, a workflow run's bound files and its
//! model's picture; and [`Session`], the path's session checked to be one the API serves.
//! Commands, typed text and the live updates have their own modules.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use heartwood_events::workflow::ModelFigure;
use heartwood_events::{NewSession, SessionRow, Snapshot, Suspended, Update};
use heartwood_gateway::BoundFilePreview;
use schemars::JsonSchema;
use serde::Deserialize;

use super::session_path::{Session, Since};
use super::{Answer, Route, act, answers, of, read};
use crate::answer::{blocking, blocking_json, failure, json_response, plain};
use crate::server::AppState;

/// The most sessions the list returns (most recently active first).
const LISTED_SESSIONS: usize = 200;

pub(super) fn routes() -> Vec<Route> {
    vec![
        read(
            "/api/sessions",
            "The project's sessions, most recently active first.",
            answers::<Vec<SessionRow>>(),
        )
        .served_by(|| get(list)),
        act(
            "/api/sessions",
            "A new session id (nothing exists on disk until its first command).",
            answers::<NewSession>(),
        )
        .served_by(|| post(mint)),
        read(
            "/api/sessions/{session}/snapshot",
            "The session's projection and its events after `since`; 202 while it waits for \
             a decision.",
            answers::<Snapshot>(),
        )
        .query(of::<Since>())
        .served_by(|| get(snapshot)),
        read(
            "/api/sessions/{session}/events",
            "Server-sent events: the events after `since`, then every update as it happens.",
            answers::<Update>(),
        )
        .query(of::<Since>())
        .served_by(|| get(super::stream::events)),
        read(
            "/api/sessions/{session}/ws",
            "The same updates as the event stream, over a WebSocket.",
            answers::<Update>(),
        )
        .query(of::<Since>())
        .served_by(|| get(super::stream::websocket)),
        read(
            "/api/sessions/{session}/workflow/preview",
            "A file the workflow run binds, as far as the bounds allow, with its evidence.",
            answers::<BoundFilePreview>(),
        )
        .query(of::<FileAt>())
        .served_by(|| get(preview)),
        read(
            "/api/sessions/{session}/workflow/figure.svg",
            "The picture of the model the run has just judged; 404 before one, 409 when its \
             files changed since.",
            Answer::Media("image/svg+xml"),
        )
        .served_by(|| get(figure)),
        read(
            "/api/sessions/{session}/workflow/figure",
            "The same picture's series and the figures the check recomputed, labelled, to \
             write beside it; 404 before a model, 409 when its files changed since.",
            answers::<ModelFigure>(),
        )
        .served_by(|| get(figure_values)),
    ]
    .into_iter()
    .chain(super::commands::routes())
    .collect()
}

/// A file by its project-relative path.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileAt {
    /// The path, relative to the project (`data/cohort.csv`).
    pub path: String,
}

async fn list(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || app.gateway.rows(LISTED_SESSIONS)).await
}

/// The server mints the id; callers cannot choose one. Replicas sharing a session store
/// record it there, so the next request may reach any of them.
async fn mint(State(app): State<Arc<AppState>>) -> Response {
    crate::answer::blocking(move || {
        let session = app.minted.mint();
        match app.gateway.record_issued(&session) {
            Ok(()) => json_response(StatusCode::CREATED, &NewSession { session }),
            Err(e) => crate::answer::failure(e),
        }
    })
    .await
}

async fn snapshot(
    State(app): State<Arc<AppState>>,
    Session(id): Session,
    Query(Since { since }): Query<Since>,
) -> Response {
    blocking(move || match app.gateway.snapshot(&id, since) {
        Ok(snapshot) => {
            // A run stopped for a decision is not an error: 202 with the pending set.
            let status = if Suspended::of(&snapshot.projection).is_some() {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            json_response(status, &snapshot)
        }
        Err(e) => failure(e),
    })
    .await
}

async fn preview(
    State(app): State<Arc<AppState>>,
    Session(id): Session,
    Query(FileAt { path }): Query<FileAt>,
) -> Response {
    blocking_json(move || app.gateway.workflow_preview(&id, &path)).await
}

/// The picture's data and recomputed figures, as JSON.
async fn figure_values(State(app): State<Arc<AppState>>, Session(id): Session) -> Response {
    blocking(move || match app.gateway.workflow_figure(&id) {
        Ok(Some(figure)) => json_response(StatusCode::OK, &figure),
        Ok(None) => plain(StatusCode::NOT_FOUND, NO_MODEL_YET),
        Err(e) => failure(e),
    })
    .await
}

const NO_MODEL_YET: &str = "there is no model to draw yet: no model stage has been checked";

/// The picture, as SVG (shown with `<img>`, so nothing in it runs).
async fn figure(State(app): State<Arc<AppState>>, Session(id): Session) -> Response {
    blocking(move || match app.gateway.workflow_figure(&id) {
        Ok(Some(figure)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            figure.svg,
        )
            .into_response(),
        Ok(None) => plain(StatusCode::NOT_FOUND, NO_MODEL_YET),
        Err(e) => failure(e),
    })
    .await
}
