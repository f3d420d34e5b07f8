//! `meta.json`: what a session is, written once when it is registered.

use std::path::Path;

use heartwood_events::{SCHEMA_VERSION, SessionId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::AuditError;
use crate::error::IoContext;

/// A session's descriptive metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionMeta {
    /// Format version of this file.
    pub schema: u32,
    /// The session id (also its directory name).
    pub id: SessionId,
    /// When the session was registered.
    pub created_at: Timestamp,
    /// The agent backend serving the session.
    pub backend: String,
    /// The workflow definition the session runs, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
}

impl SessionMeta {
    /// Metadata for a session registered now.
    pub fn new(id: SessionId, backend: &str, workflow: Option<String>) -> Self {
        SessionMeta {
            schema: SCHEMA_VERSION,
            id,
            created_at: Timestamp::now(),
            backend: backend.to_owned(),
            workflow,
        }
    }

    /// Reads `meta.json`, checking that it names the session whose directory holds it.
    pub(crate) fn read(path: &Path, expected: &SessionId) -> Result<Self, AuditError> {
        let bytes = std::fs::read(path).ctx("read", path)?;
        let bad = |detail: String| AuditError::BadFile {
            path: path.to_owned(),
            detail,
        };
        let meta: SessionMeta = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if meta.schema == 0 {
            return Err(bad("format version 0 does not exist".into()));
        }
        if meta.schema > SCHEMA_VERSION {
            return Err(bad(format!(
                "format version {} is newer than this Heartwood's {SCHEMA_VERSION}; upgrade Heartwood",
                meta.schema
            )));
        }
        if &meta.id != expected {
            return Err(bad(format!(
                "it names session \"{}\", not \"{}\"",
                meta.id, expected
            )));
        }
        Ok(meta)
    }
}

/// How long before its first event a session's `created_at` may lie: the registration and its
/// first event are written together, within a moment of each other.
const CREATED_BEFORE_FIRST_EVENT_MS: i64 = 60_000;

/// Checks `meta.json` against the verified chain: the session's first event is its
/// registration, naming the same backend and workflow, and `created_at` is the moment it was
/// made. A registered session always holds that event, so an empty chain is damage.
pub(crate) fn check(
    id: &SessionId,
    paths: &crate::SessionPaths,
    count: u64,
) -> Result<(), AuditError> {
    let damaged = |what: String| AuditError::Damaged {
        id: id.clone(),
        damage: crate::Damage {
            file: crate::layout::META_FILE,
            line: 1,
            what,
            kind: crate::DamageKind::Modification,
        },
    };
    let meta = match SessionMeta::read(&paths.meta, id) {
        Ok(meta) => meta,
        Err(AuditError::BadFile { detail, .. }) => {
            return Err(damaged(format!("meta.json is not valid ({detail})")));
        }
        Err(other) => return Err(other),
    };
    if count == 0 {
        return Err(damaged(
            "the session is registered but its record holds no events: events.jsonl and \
             audit.jsonl were emptied or deleted (remove the session with `heartwood sessions \
             rm` if it was never used)"
                .into(),
        ));
    }
    let mut reader = crate::durable::read_or_empty(&paths.events, 64 * 1024)?;
    let mut line = Vec::new();
    crate::line::read_line(&mut reader, &mut line, crate::MAX_LINE_BYTES)
        .ctx("read", &paths.events)?;
    let first = heartwood_events::RecordedEvent::decode(&line)
        .map_err(|e| damaged(format!("the first event cannot be read ({e})")))?;
    let heartwood_events::Event::SessionRegistered { backend, workflow } = &first.event else {
        return Err(damaged(format!(
            "the first event is {}, not the session's registration",
            first.event.kind()
        )));
    };
    if backend != &meta.backend || workflow != &meta.workflow {
        return Err(damaged(
            "meta.json's backend or workflow differs from the session's registration".into(),
        ));
    }
    let before = meta.created_at.millis_until(&first.time);
    if !before.is_some_and(|ms| (0..=CREATED_BEFORE_FIRST_EVENT_MS).contains(&ms)) {
        return Err(damaged(format!(
            "meta.json's created_at ({}) is not the time of the session's registration ({})",
            meta.created_at, first.time
        )));
    }
    Ok(())
}
