//! One writer across machines: a session's lease row (holder, fencing token, expiry) and the
//! [`Fence`] a writer carries, through which every append reaches the store.
//!
//! Taking a lease is one statement: it succeeds only when the row is free (released or
//! expired) and bumps the token, so of two replicas racing for it exactly one wins, and the
//! loser's token (if it ever had one) is no longer current. Every append locks the lease row,
//! checks that its token is current and unexpired, inserts its rows and extends the expiry, in
//! one transaction: a replica that was paused or cut off past its expiry cannot append, even
//! if it does not know yet that it lost the session.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use heartwood_events::SessionId;

use super::SharedStore;
use crate::AuditError;
use crate::intent::Intent;

/// A lease this process took: its token, and whether the previous holder let go cleanly.
pub(crate) struct Taken {
    pub token: i64,
    /// The previous holder's lease expired rather than being released: it crashed, was killed
    /// or was cut off, so its engine's log may hold what the journal never recorded.
    pub taken_over: bool,
}

impl SharedStore {
    /// Takes session `id`'s lease, or reports who holds it.
    pub(crate) fn take_lease(&self, id: &SessionId) -> Result<Taken, AuditError> {
        let lease_ms = i64::try_from(self.lease().as_millis()).unwrap_or(i64::MAX);
        let taken = self.with_client(|c| {
            c.query_opt(
                "UPDATE heartwood_leases SET holder = $2, token = token + 1, \
                 expires_at = now() + $3::float8 * interval '1 millisecond', released = false \
                 WHERE session = $1 AND (released OR expires_at < now()) \
                 RETURNING token, (SELECT NOT released FROM heartwood_leases l2 \
                                   WHERE l2.session = $1)",
                &[&id.as_str(), &self.holder(), &(lease_ms as f64)],
            )
        })?;
        if let Some(row) = taken {
            // The sub-select reads the row as it was before this update.
            return Ok(Taken {
                token: row.get(0),
                taken_over: row.get::<_, Option<bool>>(1).unwrap_or(false),
            });
        }
        let holder = self.with_client(|c| {
            c.query_opt(
                "SELECT holder FROM heartwood_leases WHERE session = $1",
                &[&id.as_str()],
            )
        })?;
        match holder {
            None => Err(AuditError::NoSession { id: id.clone() }),
            Some(row) => {
                let holder: String = row.get(0);
                let (host, pid) = split_holder(&holder);
                Err(AuditError::Owned {
                    id: id.clone(),
                    pid,
                    host: Some(host),
                })
            }
        }
    }

    /// The replica that holds session `id`'s lease now, if one does.
    pub fn lease_holder(&self, id: &SessionId) -> Result<Option<String>, AuditError> {
        self.with_client(|c| {
            c.query_opt(
                "SELECT holder FROM heartwood_leases WHERE session = $1 \
                 AND NOT released AND expires_at > now()",
                &[&id.as_str()],
            )
        })
        .map(|row| row.map(|r| r.get(0)))
    }
}

/// A holder name's host and pid (`host:pid:random`).
pub(crate) fn split_holder(holder: &str) -> (String, Option<u32>) {
    let mut parts = holder.split(':');
    let host = parts.next().unwrap_or_default().to_owned();
    let pid = parts.next().and_then(|p| p.parse().ok());
    (host, pid)
}

/// A writer's hold on a session in the store: every append goes through [`Fence::append`].
/// A thread renews the lease every third of its length while the fence lives; dropping the
/// fence stops it, and [`Fence::release`] lets the next replica take the session at once.
pub(crate) struct Fence {
    store: SharedStore,
    id: SessionId,
    token: i64,
    lost: Arc<AtomicBool>,
    stop_renewing: Option<mpsc::Sender<()>>,
    released: bool,
}

impl Fence {
    /// Holds `token` on session `id`, renewing it in the background.
    pub fn hold(store: SharedStore, id: SessionId, token: i64) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel::<()>();
        let renewer = (store.clone(), id.clone(), Arc::clone(&lost));
        let period = store.lease() / 3;
        let spawned = std::thread::Builder::new()
            .name("heartwood-lease".into())
            .spawn(move || renew_until_stopped(renewer, token, period, stopped));
        Fence {
            store,
            id,
            token,
            lost,
            // Without a renewer the lease still lasts its length, and each append extends it.
            stop_renewing: spawned.ok().map(|_| stop),
            released: false,
        }
    }

    /// The fencing token this writer carries.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// Records `intent`'s bytes in the store, in one transaction that first checks this
    /// writer's token is current and unexpired. Nothing reaches the working copy unless this
    /// succeeded.
    pub fn append(&mut self, intent: &Intent) -> Result<(), AuditError> {
        let lease_ms = self.store.lease().as_millis() as f64;
        let id = self.id.as_str();
        let token = self.token;
        let outcome = self.store.try_with_client(|client| {
            let mut tx = client
                .transaction()
                .map_err(|e| self.store.unavailable(e))?;
            let check = tx
                .query_opt(
                    "SELECT expires_at > now(), (SELECT coalesce(max(seq), 0) \
                     FROM heartwood_journal WHERE session = $1) \
                     FROM heartwood_leases WHERE session = $1 AND token = $2 FOR UPDATE",
                    &[&id, &token],
                )
                .map_err(|e| self.store.unavailable(e))?;
            let last: i64 = match check {
                None => return Err(self.lost("another replica took the session over")),
                Some(row) if !row.get::<_, bool>(0) => {
                    return Err(self.lost("its lease expired before this append"));
                }
                Some(row) => row.get(1),
            };
            if last as u64 + 1 != intent.first_seq && !intent.events.is_empty() {
                return Err(self.lost(&format!(
                    "the store's journal ends at event {last}, this replica's at event {}",
                    intent.first_seq - 1
                )));
            }
            super::rows::insert_intent(&mut tx, id, token, intent)
                .and_then(|()| {
                    tx.execute(
                        "UPDATE heartwood_leases SET expires_at = now() + \
                         $3::float8 * interval '1 millisecond' WHERE session = $1 AND token = $2",
                        &[&id, &token, &lease_ms],
                    )
                })
                .and_then(|_| tx.commit())
                .map_err(|e| self.store.unavailable(e))
        });
        if let Err(AuditError::LeaseLost { .. }) = &outcome {
            self.lost.store(true, Ordering::Release);
        }
        outcome
    }

    fn lost(&self, detail: &str) -> AuditError {
        AuditError::LeaseLost {
            id: self.id.clone(),
            detail: detail.to_owned(),
        }
    }

    /// Lets go of the lease. `clean`: the working copy was reconciled and closed, so the next
    /// holder is not told this one crashed. Best effort: an unreleased lease expires anyway.
    pub fn release(&mut self, clean: bool) {
        self.stop_renewing.take();
        if std::mem::replace(&mut self.released, true) {
            return;
        }
        let _ = self.store.with_client(|c| {
            c.execute(
                "UPDATE heartwood_leases SET expires_at = now(), released = $3 \
                 WHERE session = $1 AND token = $2",
                &[&self.id.as_str(), &self.token, &clean],
            )
        });
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        // A fence dropped without a clean release (a writer that failed to open, say) lets the
        // session go as a crash would: the next holder reconciles.
        self.release(false);
    }
}

fn renew_until_stopped(
    (store, id, lost): (SharedStore, SessionId, Arc<AtomicBool>),
    token: i64,
    period: Duration,
    stopped: mpsc::Receiver<()>,
) {
    let lease_ms = store.lease().as_millis() as f64;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
        let renewed = store.with_client(|c| {
            c.execute(
                "UPDATE heartwood_leases SET expires_at = now() + $3::float8 * interval '1 millisecond' \
                 WHERE session = $1 AND token = $2 AND NOT released AND expires_at > now()",
                &[&id.as_str(), &token, &lease_ms],
            )
        });
        // Gone for good: the next append is refused by the store in any case. An unreachable
        // store is tried again: the lease may still be ours when it returns.
        if let Ok(0) = renewed {
            lost.store(true, Ordering::Release);
            return;
        }
    }
}
