//! The store's rows: registering a session, inserting an append's bytes, reading a session
//! back as a [`SessionImage`], listing and removing. Reads of one session run in one
//! repeatable-read transaction, so its events and receipts come from the same moment.

use heartwood_events::{SessionId, Timestamp};
use postgres::{IsolationLevel, Transaction};

use super::{SessionImage, SharedStore};
use crate::intent::Intent;
use crate::{AuditError, SessionMeta, SessionSummary, WriterInfo};

/// The channel on which the store announces every commit to a session's journal.
pub(crate) const JOURNAL_CHANNEL: &str = "heartwood_journal";

/// Inserts the rows an append's intent describes, and announces it. Runs inside the
/// transaction that checked the writer's fencing token.
pub(crate) fn insert_intent(
    tx: &mut Transaction<'_>,
    id: &str,
    token: i64,
    intent: &Intent,
) -> Result<(), postgres::Error> {
    let image = SessionImage {
        events: intent.events.as_bytes().to_vec(),
        audit: intent.audit.as_bytes().to_vec(),
        ..Default::default()
    };
    let insert = tx.prepare(
        "INSERT INTO heartwood_journal (session, seq, event_line, audit_line, token) \
         VALUES ($1, $2, $3, $4, $5)",
    )?;
    for (i, (event, audit)) in image.journal_lines().enumerate() {
        let seq = (intent.first_seq + i as u64) as i64;
        tx.execute(&insert, &[&id, &seq, &event, &audit, &token])?;
    }
    if !intent.receipts.is_empty() {
        tx.execute(
            "INSERT INTO heartwood_receipts (session, offset_before, line) VALUES ($1, $2, $3)",
            &[
                &id,
                &(intent.receipts_len as i64),
                &intent.receipts.as_bytes(),
            ],
        )?;
    }
    if let Some(backend) = &intent.backend {
        tx.execute(
            "INSERT INTO heartwood_backend (session, file, offset_before, bytes) \
             VALUES ($1, $2, $3, $4)",
            &[
                &id,
                &backend.file,
                &(backend.len as i64),
                &backend.bytes.as_bytes(),
            ],
        )?;
    }
    tx.execute(
        "UPDATE heartwood_sessions SET last_activity = now() WHERE id = $1",
        &[&id],
    )?;
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&JOURNAL_CHANNEL, &format!("{id} {}", intent.last_seq)],
    )?;
    Ok(())
}

impl SharedStore {
    /// Adds session `id` with every byte of `image`, its lease free. `Ok(false)`: the store
    /// holds a session with this id already (left as it was).
    pub fn insert_session(&self, id: &SessionId, image: &SessionImage) -> Result<bool, AuditError> {
        self.with_client(|c| {
            let mut tx = c.transaction()?;
            let added = tx.execute(
                "INSERT INTO heartwood_sessions (id, meta) VALUES ($1, $2) \
                 ON CONFLICT (id) DO NOTHING",
                &[&id.as_str(), &image.meta],
            )?;
            if added == 0 {
                return Ok(false);
            }
            let insert = tx.prepare(
                "INSERT INTO heartwood_journal (session, seq, event_line, audit_line, token) \
                 VALUES ($1, $2, $3, $4, 0)",
            )?;
            for (i, (event, audit)) in image.journal_lines().enumerate() {
                tx.execute(&insert, &[&id.as_str(), &(i as i64 + 1), &event, &audit])?;
            }
            if !image.receipts.is_empty() {
                tx.execute(
                    "INSERT INTO heartwood_receipts (session, offset_before, line) \
                     VALUES ($1, 0, $2)",
                    &[&id.as_str(), &image.receipts],
                )?;
            }
            for (file, bytes) in &image.backend {
                tx.execute(
                    "INSERT INTO heartwood_backend (session, file, offset_before, bytes) \
                     VALUES ($1, $2, 0, $3)",
                    &[&id.as_str(), file, bytes],
                )?;
            }
            tx.execute(
                "INSERT INTO heartwood_leases (session, holder, token, expires_at, released) \
                 VALUES ($1, '', 0, now(), true)",
                &[&id.as_str()],
            )?;
            tx.commit()?;
            Ok(true)
        })
    }

    /// Records that a replica handed out session id `id`, so every replica serves it before
    /// its first command registers it.
    pub fn issue(&self, id: &SessionId) -> Result<(), AuditError> {
        self.with_client(|c| {
            c.execute(
                "INSERT INTO heartwood_issued (id) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&id.as_str()],
            )
        })
        .map(|_| ())
    }

    /// Whether a replica handed out session id `id`.
    pub fn issued(&self, id: &SessionId) -> Result<bool, AuditError> {
        self.with_client(|c| {
            c.query_opt(
                "SELECT 1 FROM heartwood_issued WHERE id = $1",
                &[&id.as_str()],
            )
        })
        .map(|row| row.is_some())
    }

    /// Whether the store holds session `id`.
    pub fn exists(&self, id: &SessionId) -> Result<bool, AuditError> {
        self.with_client(|c| {
            c.query_opt(
                "SELECT 1 FROM heartwood_sessions WHERE id = $1",
                &[&id.as_str()],
            )
        })
        .map(|row| row.is_some())
    }

    /// The number of session `id`'s events (`None` before it exists): what a follower compares
    /// to notice that the session moved on.
    pub fn journal_len(&self, id: &SessionId) -> Result<Option<u64>, AuditError> {
        self.with_client(|c| {
            c.query_opt(
                "SELECT (SELECT count(*) FROM heartwood_journal j WHERE j.session = s.id) \
                 FROM heartwood_sessions s WHERE s.id = $1",
                &[&id.as_str()],
            )
        })
        .map(|row| row.map(|r| r.get::<_, i64>(0) as u64))
    }

    /// Every byte of session `id`, read at one moment.
    pub fn image(&self, id: &SessionId) -> Result<SessionImage, AuditError> {
        let found = self.with_client(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let Some(meta) = tx.query_opt(
                "SELECT meta FROM heartwood_sessions WHERE id = $1",
                &[&id.as_str()],
            )?
            else {
                return Ok(None);
            };
            let mut image = SessionImage {
                meta: meta.get(0),
                ..Default::default()
            };
            for row in tx.query(
                "SELECT event_line, audit_line FROM heartwood_journal WHERE session = $1 \
                 ORDER BY seq",
                &[&id.as_str()],
            )? {
                image.events.extend_from_slice(row.get(0));
                image.events.push(b'\n');
                image.audit.extend_from_slice(row.get(1));
                image.audit.push(b'\n');
            }
            for row in tx.query(
                "SELECT line FROM heartwood_receipts WHERE session = $1 ORDER BY offset_before",
                &[&id.as_str()],
            )? {
                image.receipts.extend_from_slice(row.get(0));
            }
            for row in tx.query(
                "SELECT file, bytes FROM heartwood_backend WHERE session = $1 \
                 ORDER BY file, offset_before",
                &[&id.as_str()],
            )? {
                let file: String = row.get(0);
                let bytes: &[u8] = row.get(1);
                match image.backend.last_mut() {
                    Some((last, log)) if *last == file => log.extend_from_slice(bytes),
                    _ => image.backend.push((file, bytes.to_vec())),
                }
            }
            tx.commit()?;
            Ok(Some(image))
        })?;
        found.ok_or_else(|| AuditError::NoSession { id: id.clone() })
    }

    /// Every session, most recently active first.
    pub fn summaries(&self) -> Result<Vec<SessionSummary>, AuditError> {
        let rows = self.with_client(|c| {
            c.query(
                "SELECT s.id, s.meta, \
                   (SELECT count(*) FROM heartwood_journal j WHERE j.session = s.id), \
                   to_char(s.last_activity AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), \
                   (SELECT holder FROM heartwood_leases l WHERE l.session = s.id \
                      AND NOT l.released AND l.expires_at > now()) \
                 FROM heartwood_sessions s ORDER BY s.last_activity DESC, s.id",
                &[],
            )
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let id = SessionId::parse(row.get::<_, &str>(0)).ok()?;
                let meta = serde_json::from_slice::<SessionMeta>(row.get(1))
                    .map_err(|e| crate::MetaUnreadable::Store(std::sync::Arc::new(e)));
                let holder: Option<String> = row.get(4);
                Some(SessionSummary {
                    meta,
                    events: row.get::<_, i64>(2) as u64,
                    last_activity: Timestamp::parse(row.get::<_, &str>(3)).ok(),
                    interrupted: false,
                    writer: holder.map(|h| {
                        let (host, pid) = super::lease::split_holder(&h);
                        WriterInfo {
                            pid: pid.unwrap_or(0),
                            host,
                            started: Timestamp::now(),
                        }
                    }),
                    id,
                })
            })
            .collect())
    }

    /// Deletes session `id` and everything in it; refused while a replica holds its lease.
    pub fn remove(&self, id: &SessionId) -> Result<(), AuditError> {
        if let Some(holder) = self.lease_holder(id)? {
            let (host, pid) = super::lease::split_holder(&holder);
            return Err(AuditError::Owned {
                id: id.clone(),
                pid,
                host: Some(host),
            });
        }
        let removed = self.with_client(|c| {
            c.execute(
                "DELETE FROM heartwood_sessions WHERE id = $1",
                &[&id.as_str()],
            )
        })?;
        match removed {
            0 => Err(AuditError::NoSession { id: id.clone() }),
            _ => Ok(()),
        }
    }
}
