//! The local-model routes: the stored models, the runtime and transfers (and a transfer's
//! cancellation, whichever process runs it); the deployment's trusted catalog; the review of a
//! catalog entry or of a hub repository at a revision (its exact manifest and SHA-256) and its
//! download, started once that SHA-256 is the one accepted.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use heartwood_gateway::model_catalog::{CatalogView, DownloadSource, StartedDownload};
use heartwood_gateway::models::{LocalModelsView, ModelDesk, Review};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Route, act, answers, of, read};
use crate::answer::{blocking, blocking_json, failure, json_response, plain};
use crate::body::JsonBody;
use crate::server::AppState;

pub(super) fn routes() -> Vec<Route> {
    vec![
        read(
            "/api/models",
            "The project's local models, the runtime and recent transfers.",
            answers::<LocalModelsView>(),
        )
        .served_by(|| get(view)),
        read(
            "/api/models/catalog",
            "The deployment's trusted catalog (or how to install one).",
            answers::<CatalogView>(),
        )
        .served_by(|| get(catalog)),
        act(
            "/api/models/review",
            "The exact manifest of a catalog entry (`catalog`) or of a hub repository at a \
             revision (`repository`, `revision`), its SHA-256 and whether it fits this machine.",
            answers::<Review>(),
        )
        .body(of::<DownloadSource>())
        .served_by(|| post(review)),
        act(
            "/api/models/download",
            "Starts the download of a catalog entry or a repository at a revision once its \
             manifest's SHA-256 is accepted (202 at once; its progress is in `GET api/models`).",
            answers::<StartedDownload>(),
        )
        .body(of::<ModelDownload>())
        .served_by(|| post(download)),
        act(
            "/api/models/cancel",
            "Cancels a running transfer by its `handle` (as `GET api/models` lists it), \
             whichever process runs it: nothing is published.",
            answers::<Cancelled>(),
        )
        .body(of::<TransferCancel>())
        .served_by(|| post(cancel)),
    ]
}

/// A download, with the license accepted.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ModelDownload {
    /// What to download.
    #[serde(flatten)]
    pub source: DownloadSource,
    /// The SHA-256 of the manifest reviewed: the license accepted is that manifest's.
    pub accept_license: String,
}

/// A transfer to cancel.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferCancel {
    /// Its handle.
    pub handle: String,
}

/// A cancellation taken: the worker stops between chunks and the transfer ends cancelled.
#[derive(Debug, serde::Serialize, JsonSchema)]
pub struct Cancelled {
    /// The transfer asked to stop.
    pub handle: String,
}

async fn view(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || ModelDesk::new(&app.project).view()).await
}

async fn catalog(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || heartwood_gateway::model_catalog::catalog(&app.project)).await
}

async fn review(
    State(app): State<Arc<AppState>>,
    JsonBody(asked): JsonBody<DownloadSource>,
) -> Response {
    blocking_json(move || asked.review(&ModelDesk::new(&app.project))).await
}

async fn cancel(
    State(app): State<Arc<AppState>>,
    JsonBody(asked): JsonBody<TransferCancel>,
) -> Response {
    blocking(
        move || match ModelDesk::new(&app.project).cancel_transfer(&asked.handle) {
            Ok(()) => json_response(
                StatusCode::OK,
                &Cancelled {
                    handle: asked.handle,
                },
            ),
            Err(e) => failure(e),
        },
    )
    .await
}

async fn download(
    State(app): State<Arc<AppState>>,
    body: Result<JsonBody<ModelDownload>, Response>,
) -> Response {
    let JsonBody(asked) = match body {
        Ok(body) => body,
        Err(refused) if refused.status() == StatusCode::BAD_REQUEST => {
            return plain(
                StatusCode::BAD_REQUEST,
                "a download names its `catalog` entry (or `repository` and `revision`) and \
                 `accept_license`: the SHA-256 of the manifest reviewed with POST \
                 api/models/review",
            );
        }
        Err(refused) => return refused,
    };
    blocking(move || {
        match heartwood_gateway::model_catalog::start_download_of(
            &app.project,
            &asked.source,
            &asked.accept_license,
        ) {
            Ok(started) => json_response(StatusCode::ACCEPTED, &started),
            Err(e) => failure(e),
        }
    })
    .await
}
