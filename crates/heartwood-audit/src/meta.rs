//! `meta.json`: what a session is, written once when it is registered.

use std::path::Path;

use heartwood_events::{SCHEMA_VERSION, SessionId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::AuditError;
use crate::error::IoContext;

/// A session's descriptive metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
