//! The answers' common forms: JSON, plain text, a gateway failure by its kind, and work done on
//! the blocking pool. Every route and the body reader answer through these.

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// `work`'s answer, worked out on the blocking pool: the gateway's calls block (journal appends
/// with fsync, verification, `git`, file reads) and never run on the runtime's workers.
pub(crate) async fn blocking(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

/// The HTTP status for a gateway failure, by its kind (never by its message).
pub(crate) fn status_of(e: &heartwood_gateway::GatewayError) -> StatusCode {
    use heartwood_gateway::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Owned | ErrorKind::Unavailable => StatusCode::CONFLICT,
        ErrorKind::Invalid => StatusCode::BAD_REQUEST,
        ErrorKind::Damaged => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Io => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Backend => StatusCode::BAD_GATEWAY,
        ErrorKind::Stale => StatusCode::CONFLICT,
    }
}

/// `work`'s value as JSON (200), or its failure with the status of its kind; worked out on the
/// blocking pool, as every handler that reads files does.
pub(crate) async fn blocking_json<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Response
where
    T: serde::Serialize,
    E: Into<heartwood_gateway::GatewayError>,
{
    blocking(move || match work() {
        Ok(value) => json_response(StatusCode::OK, &value),
        Err(e) => failure(e),
    })
    .await
}

/// A gateway (or project service) failure as a plain-text answer with the status of its kind.
pub(crate) fn failure(e: impl Into<heartwood_gateway::GatewayError>) -> Response {
    let e = e.into();
    plain(status_of(&e), &e.to_string())
}

pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(bytes),
        )
            .into_response(),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

pub(crate) fn plain(status: StatusCode, text: &str) -> Response {
    (status, format!("{text}\n")).into_response()
}

/// The page a browser without the launch capability gets for a page address (a bookmark
/// opened in a fresh browser): 401, what to do, and a field for the token that comes back to
/// the same address with `?token=` (which sets the cookie and lands on that page). It holds no
/// secret and runs no script.
pub(crate) fn sign_in_page(reason: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Heartwood: open the launch link</title>\
         <style>body{{font:16px system-ui,sans-serif;max-width:36em;margin:2em auto;padding:0 1em}}\
         input{{font:inherit;width:100%;box-sizing:border-box;padding:.4em}}\
         button{{font:inherit;margin-top:.6em;padding:.4em 1em}}\
         @media (prefers-color-scheme: dark){{body{{background:#0d1117;color:#e6edf3}}}}</style>\
         <main><h1>Open Heartwood with its launch link</h1><p>{}.</p>\
         <form method=\"get\"><label for=\"token\">Launch token (the part after \
         <code>?token=</code>)</label><input id=\"token\" name=\"token\" \
         autocomplete=\"off\" required><button type=\"submit\">Open this page</button>\
         </form></main></html>",
        reason.replace('&', "&amp;").replace('<', "&lt;")
    );
    (
        StatusCode::UNAUTHORIZED,
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}
