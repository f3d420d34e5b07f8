//! Request bodies: read within [`MAX_BODY_BYTES`] and decoded by `serde` into the type the
//! route takes ([`JsonBody`]). A body over the bound is answered `413` after it was drained
//! (within bounds), so a client still sending it sees why; a body that is not the route's type
//! is answered `400` with serde's words for what was wrong.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;
use std::time::Duration;

use crate::answer::plain;

/// Most bytes of a request body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Most bytes of an oversized body read and discarded before its `413` is sent.
const DRAINED_BYTES: usize = 16 * MAX_BODY_BYTES;

/// Longest an oversized body is read for before its `413` is sent.
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// A JSON request body decoded into `T`.
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let Some(bytes) = read_body(request.into_body()).await else {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            ));
        };
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            plain(
                StatusCode::BAD_REQUEST,
                &format!("the request body is not what this route takes: {e}"),
            )
        })
    }
}

/// A request body of at most [`MAX_BODY_BYTES`], or `None` for a longer (or broken) one.
///
/// A longer body is read on and discarded, within bounds, before the caller answers: closing a
/// connection with unread bytes in it resets the connection, and a client still sending its body
/// would then lose the `413` that says why.
async fn read_body(body: Body) -> Option<Bytes> {
    use futures_util::StreamExt;
    let mut chunks = body.into_data_stream();
    let mut collected = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.ok()?;
        if collected.len() + chunk.len() > MAX_BODY_BYTES {
            let mut read = collected.len() + chunk.len();
            let _ = tokio::time::timeout(DRAIN_TIME, async {
                while let Some(Ok(chunk)) = chunks.next().await {
                    read += chunk.len();
                    if read > DRAINED_BYTES {
                        break;
                    }
                }
            })
            .await;
            return None;
        }
        collected.extend_from_slice(&chunk);
    }
    Some(Bytes::from(collected))
}
