//! A session's live updates, as server-sent events and over a WebSocket: both are the gateway's
//! one way to follow a session ([`heartwood_gateway::SessionGateway::follow`]), the events
//! after `since` first, then every update as it happens; this module only words it for HTTP.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use heartwood_events::{Change, SessionId};

use super::session_path::{Session, Since};
use crate::answer::{plain, status_of};
use crate::server::AppState;

/// Server-sent events: the events after `since`, then every update as it happens. Each event
/// carries its sequence number as the SSE id, so a client that reconnects (with
/// `Last-Event-ID`) resumes after the last event it got, missing and repeating none.
pub(super) async fn events(
    State(app): State<Arc<AppState>>,
    Session(id): Session,
    Query(Since { since }): Query<Since>,
    headers: HeaderMap,
) -> Response {
    let since = last_event_id(&headers).unwrap_or(since);
    let follow = match opened(&app, &id, since).await {
        Ok(follow) => follow,
        Err(refused) => return refused,
    };
    let stream = futures_util::stream::unfold(follow, |mut follow| async move {
        loop {
            let update = follow.next().await?;
            let Ok(text) = serde_json::to_string(&update) else {
                continue;
            };
            let mut sse = SseEvent::default();
            if let Change::Event { event } = &update.change {
                sse = sse.id(event.seq.to_string());
            }
            return Some((Ok::<_, Infallible>(sse.data(text)), follow));
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The event id a reconnecting `EventSource` sends: the sequence number of the last event it
/// got.
fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("last-event-id")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The same updates over a WebSocket (the policy has checked its Origin).
pub(super) async fn websocket(
    State(app): State<Arc<AppState>>,
    Session(id): Session,
    Query(Since { since }): Query<Since>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let mut follow = match opened(&app, &id, since).await {
        Ok(follow) => follow,
        Err(refused) => return refused,
    };
    upgrade.on_upgrade(move |mut socket| async move {
        while let Some(update) = follow.next().await {
            let Ok(text) = serde_json::to_string(&update) else {
                continue;
            };
            if socket.send(Message::Text(text.into())).await.is_err() {
                return;
            }
        }
    })
}

/// The session followed from `since` through the gateway's one stream (see
/// [`heartwood_gateway::SessionFollow`]: backlog, live updates, lags recovered, each event
/// once in order), or the answer that refuses it.
async fn opened(
    app: &AppState,
    id: &SessionId,
    since: u64,
) -> Result<heartwood_gateway::SessionFollow, Response> {
    app.gateway
        .follow(id, since)
        .await
        .map_err(|e| plain(status_of(&e), &e.to_string()))
}
