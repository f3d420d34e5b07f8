//! Where an API request names its session: the path's session, answered 400 or 404 unless this
//! server minted it or it is on disk, and the `since` a reader of its events gives.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use heartwood_events::SessionId;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::plain;
use crate::server::AppState;

/// The events a reader has: it is sent those after.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Since {
    /// The last event sequence number the reader has (0 for none).
    #[serde(default)]
    pub since: u64,
}

/// The session a path names, when the API serves it: minted by this server or on disk.
/// Anything else is answered 400 (not an id) or 404 (an id nobody registered), so a caller can
/// never create a session under an id of its choosing.
pub(crate) struct Session(pub SessionId);

impl FromRequestParts<Arc<AppState>> for Session {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let Path(id) = Path::<String>::from_request_parts(parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        let app = Arc::clone(app);
        // Whether it is on disk is a file system question: asked off the runtime's workers.
        match tokio::task::spawn_blocking(move || app.known(&id)).await {
            Ok(Ok(id)) => Ok(Session(id)),
            Ok(Err((status, why))) => Err(plain(status, &why)),
            Err(_) => Err(plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request failed",
            )),
        }
    }
}
