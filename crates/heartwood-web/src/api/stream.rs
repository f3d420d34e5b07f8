//! A session's live updates, as server-sent events and over a WebSocket: one feed for both,
//! the events after `since` first, then every update as it happens.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use heartwood_events::{Change, SessionId, Suspended, Update};
use tokio::sync::{broadcast, mpsc};

use super::sessions::{Session, Since};
use crate::answer::{plain, status_of};
use crate::server::AppState;

/// Server-sent events: the events after `since`, then every update as it happens.
pub(super) async fn events(
    State(app): State<Arc<AppState>>,
    Session(id): Session,
    Query(Since { since }): Query<Since>,
) -> Response {
    let feed = match opened(app, id, since).await {
        Ok(feed) => feed,
        Err(refused) => return refused,
    };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        let text = feed.recv().await?;
        Some((Ok::<_, Infallible>(SseEvent::default().data(text)), feed))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The same updates over a WebSocket (the policy has checked its Origin).
pub(super) async fn websocket(
    State(app): State<Arc<AppState>>,
    Session(id): Session,
    Query(Since { since }): Query<Since>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let mut feed = match opened(app, id, since).await {
        Ok(feed) => feed,
        Err(refused) => return refused,
    };
    upgrade.on_upgrade(move |mut socket| async move {
        while let Some(text) = feed.recv().await {
            if socket.send(Message::Text(text.into())).await.is_err() {
                return;
            }
        }
    })
}

/// [`feed`], opened off the runtime's workers (the snapshot reads the journal).
async fn opened(
    app: Arc<AppState>,
    id: SessionId,
    since: u64,
) -> Result<mpsc::Receiver<String>, Response> {
    match tokio::task::spawn_blocking(move || feed(&app, &id, since)).await {
        Ok(Ok(feed)) => Ok(feed),
        Ok(Err(e)) => Err(plain(status_of(&e), &e.to_string())),
        Err(_) => Err(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request failed",
        )),
    }
}

/// One session's updates as JSON text, in order, for the event stream and the WebSocket alike:
/// the events after `since`, then every update as it happens (durable events the backlog already
/// carried are skipped). One task writes both, so live updates never overtake the backlog.
fn feed(
    app: &AppState,
    session: &SessionId,
    since: u64,
) -> Result<mpsc::Receiver<String>, heartwood_gateway::GatewayError> {
    let mut updates = app.gateway.subscribe(session)?;
    let first = app.gateway.snapshot(session, since)?;
    let (sender, receiver) = mpsc::channel(256);
    // The blocking pool's threads run inside the runtime: the writer task is spawned on it.
    tokio::spawn(async move {
        let mut last = first.revision;
        let backlog = first.events.into_iter().map(Update::event);
        // A client that connects while the run waits is told so at once, as one that was
        // following when it stopped was.
        let waiting = Suspended::of(&first.projection).map(|suspended| Update {
            revision: first.revision,
            transient_revision: first.transient_revision,
            change: Change::Suspended(suspended),
        });
        for update in backlog.chain(waiting) {
            let Ok(text) = serde_json::to_string(&update) else {
                continue;
            };
            if sender.send(text).await.is_err() {
                return;
            }
        }
        loop {
            let text = match updates.recv().await {
                Ok(update) => {
                    if let Change::Event { event } = &update.change {
                        if event.seq.get() <= last {
                            continue;
                        }
                        last = event.seq.get();
                    }
                    let Ok(text) = serde_json::to_string(&update) else {
                        continue;
                    };
                    text
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    serde_json::to_string(&Update::lagged(last)).unwrap_or_default()
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if sender.send(text).await.is_err() {
                return;
            }
        }
    });
    Ok(receiver)
}
