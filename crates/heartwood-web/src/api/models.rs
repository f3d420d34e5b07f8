//! The local-model routes: the stored models, the runtime and transfers; the deployment's
//! trusted catalog; a catalog entry's review (its exact manifest and SHA-256) and its download,
//! started once that SHA-256 is the one accepted.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use heartwood_gateway::model_catalog::{CatalogView, StartedDownload};
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
            "A catalog entry's exact manifest, its SHA-256 and whether it fits this machine.",
            answers::<Review>(),
        )
        .body(of::<CatalogReview>())
        .served_by(|| post(review)),
        act(
            "/api/models/download",
            "Starts a catalog entry's download once its manifest's SHA-256 is accepted \
             (202 at once; its progress is in `GET api/models`).",
            answers::<StartedDownload>(),
        )
        .body(of::<CatalogDownload>())
        .served_by(|| post(download)),
    ]
}

/// A catalog entry to review.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogReview {
    /// The entry's id.
    pub catalog: String,
}

/// A catalog entry to download, with the license accepted.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogDownload {
    /// The entry's id.
    pub catalog: String,
    /// The SHA-256 of the manifest reviewed: the license accepted is that manifest's.
    pub accept_license: String,
}

async fn view(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || ModelDesk::new(&app.project).view()).await
}

async fn catalog(State(app): State<Arc<AppState>>) -> Response {
    blocking_json(move || heartwood_gateway::model_catalog::catalog(&app.project)).await
}

async fn review(
    State(app): State<Arc<AppState>>,
    JsonBody(asked): JsonBody<CatalogReview>,
) -> Response {
    blocking_json(move || ModelDesk::new(&app.project).review_catalog(&asked.catalog, None)).await
}

async fn download(
    State(app): State<Arc<AppState>>,
    body: Result<JsonBody<CatalogDownload>, Response>,
) -> Response {
    let JsonBody(asked) = match body {
        Ok(body) => body,
        Err(refused) if refused.status() == StatusCode::BAD_REQUEST => {
            return plain(
                StatusCode::BAD_REQUEST,
                "a download names its `catalog` entry and `accept_license`: the SHA-256 of the \
                 manifest reviewed with POST api/models/review",
            );
        }
        Err(refused) => return refused,
    };
    blocking(move || {
        match heartwood_gateway::model_catalog::start_download(
            &app.project,
            &asked.catalog,
            &asked.accept_license,
        ) {
            Ok(started) => json_response(StatusCode::ACCEPTED, &started),
            Err(e) => failure(e),
        }
    })
    .await
}
