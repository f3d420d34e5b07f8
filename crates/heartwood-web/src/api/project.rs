//! The project's routes that no session owns: the page, health, the start plan, the workflow
//! catalog and the ChatGPT sign-in (its code and progress; never a token).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use heartwood_events::catalog::CatalogEntry;
use heartwood_events::startup::StartupPlan;
use heartwood_gateway::subscription::{Pending, Progress, SignInStatus};
use schemars::JsonSchema;
use serde::Serialize;

use super::{Answer, Route, act, answers, read};
use crate::answer::{blocking, blocking_json, json_response, plain};
use crate::server::AppState;

/// That the server takes requests.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    /// Always `true`.
    pub ok: bool,
}

pub(super) fn routes() -> Vec<Route> {
    let html = Answer::Media("text/html");
    vec![
        read("/", "The page.", html).served_by(|| get(page)),
        read("/s/{session}", "The page, opened on a session.", html).served_by(|| get(page)),
        read(
            "/api/health",
            "That the server takes requests (reads no session).",
            answers::<Health>(),
        )
        .served_by(|| get(health)),
        read(
            "/api/status",
            "What starting would do: the route, the engine, what is pending.",
            answers::<StartupPlan>(),
        )
        .served_by(|| get(status)),
        read(
            "/api/workflows",
            "The workflow catalog: every stage and what it writes.",
            answers::<Vec<CatalogEntry>>(),
        )
        .served_by(|| get(workflows)),
        read(
            "/api/signin",
            "Who is signed in to ChatGPT, and the sign-in in progress.",
            answers::<SignInStatus>(),
        )
        .served_by(|| get(sign_in_status)),
        act(
            "/api/signin",
            "Starts a ChatGPT sign-in: the code to type and where.",
            answers::<Pending>(),
        )
        .served_by(|| post(start_sign_in)),
        act(
            "/api/signin/poll",
            "Asks whether the sign-in in progress was approved.",
            answers::<Progress>(),
        )
        .served_by(|| post(poll_sign_in)),
    ]
}

/// Every session has its own address: the page opens it (a bookmark, a reload).
async fn page(State(app): State<Arc<AppState>>) -> Response {
    crate::page::page(app.policy.base_path())
}

async fn health() -> Response {
    json_response(StatusCode::OK, &Health { ok: true })
}

async fn status(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || app.gateway.startup_plan()).await
}

async fn workflows(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || heartwood_gateway::workflow_catalog(&app.project)).await
}

async fn sign_in_status(State(app): State<Arc<AppState>>) -> Response {
    blocking(move || match app.gateway.sign_in_status() {
        Ok(status) => json_response(StatusCode::OK, &status),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    })
    .await
}

async fn start_sign_in(State(app): State<Arc<AppState>>) -> Response {
    blocking(move || match app.gateway.start_sign_in() {
        Ok(pending) => json_response(StatusCode::OK, &pending),
        Err(e) => plain(StatusCode::BAD_GATEWAY, &e.to_string()),
    })
    .await
}

async fn poll_sign_in(State(app): State<Arc<AppState>>) -> Response {
    blocking(move || match app.gateway.poll_sign_in() {
        Ok(progress) => json_response(StatusCode::OK, &progress),
        Err(e) => plain(StatusCode::CONFLICT, &e.to_string()),
    })
    .await
}
