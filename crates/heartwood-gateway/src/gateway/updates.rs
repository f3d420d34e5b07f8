//! A session's updates for an async caller: the stream half of the core API, beside
//! [`SessionGateway::submit`]. One stream per caller that follows the session wherever it is
//! served (here, by another process, or by nobody yet) and ends only with the gateway; a
//! caller that may have missed something is told `lagged`, and takes a snapshot.

use std::sync::Weak;
use std::time::Duration;

use futures_util::Stream;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::*;

/// How long a follower waits before following a feed that closed afresh, so a feed that keeps
/// closing at once cannot spin.
const FOLLOW_AGAIN: Duration = Duration::from_millis(250);

/// The updates of one session, from the moment [`SessionGateway::updates`] was called.
pub struct SessionUpdates {
    /// Weak, so a forgotten stream does not keep a closed gateway's workers alive.
    shared: Weak<Shared>,
    session: SessionId,
    receiver: broadcast::Receiver<Update>,
}

impl SessionGateway {
    /// `session`'s updates from now on: each durable event as it is recorded (naming the
    /// command that caused it), streamed text and output, `suspended` when the run stops for a
    /// decision, `execution_settled` when the agent stops. Watching is not acting: the
    /// session's writer lease is not taken.
    pub fn updates(&self, session: &SessionId) -> Result<SessionUpdates, GatewayError> {
        Ok(SessionUpdates {
            shared: Arc::downgrade(&self.shared),
            session: session.clone(),
            receiver: self.subscribe(session)?,
        })
    }
}

impl SessionUpdates {
    /// The session followed.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The next update; `None` once the gateway is gone. A `lagged` update means updates may
    /// have been missed (this caller fell behind, or the session's source changed): take a
    /// snapshot and carry on.
    pub async fn next(&mut self) -> Option<Update> {
        match self.receiver.recv().await {
            Ok(update) => Some(update),
            Err(RecvError::Lagged(_)) => Some(Update::lagged(0)),
            Err(RecvError::Closed) => {
                tokio::time::sleep(FOLLOW_AGAIN).await;
                let shared = self.shared.upgrade()?;
                let session = self.session.clone();
                // Finding the session's source may connect to its server: off the async thread.
                let subscribed = tokio::task::spawn_blocking(move || {
                    crate::follow::subscribe(&shared, &session)
                })
                .await
                .ok()?;
                self.receiver = subscribed;
                Some(Update::lagged(0))
            }
        }
    }

    /// The next update already here, without waiting; `None` when there is none now (or the
    /// feed closed: the next [`Self::next`] follows again).
    pub fn try_next(&mut self) -> Option<Update> {
        match self.receiver.try_recv() {
            Ok(update) => Some(update),
            Err(TryRecvError::Lagged(_)) => Some(Update::lagged(0)),
            Err(TryRecvError::Empty | TryRecvError::Closed) => None,
        }
    }

    /// These updates as a [`Stream`], for callers that combine streams.
    pub fn into_stream(self) -> impl Stream<Item = Update> + Send {
        futures_util::stream::unfold(self, |mut updates| async move {
            let update = updates.next().await?;
            Some((update, updates))
        })
    }
}
