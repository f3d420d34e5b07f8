//! Where a project's sessions are kept: in the project's files (the default), or in a shared
//! PostgreSQL store that several `heartwood serve` replicas use together. Interfaces name the
//! choice (`--session-store URL`); the gateway and the session administration act on it the
//! same way either way.

use std::time::Duration;

use heartwood_audit::{SessionStore, SharedStore};

use crate::GatewayError;

/// The store a gateway or an administration keeps its sessions in.
#[derive(Debug, Clone, Default)]
pub enum SessionStoreChoice {
    /// `<project>/.heartwood/sessions/`.
    #[default]
    Files,
    /// A PostgreSQL database shared by replicas.
    Shared(SharedStore),
}

impl SessionStoreChoice {
    /// The store `text` names: `files`, or a `postgres://` (`postgresql://`) URL. Connects to
    /// nothing yet.
    pub fn parse(text: &str) -> Result<Self, GatewayError> {
        if text == "files" {
            return Ok(SessionStoreChoice::Files);
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(SessionStoreChoice::Shared(SharedStore::new(text)?));
        }
        Err(GatewayError::Journal(
            heartwood_audit::AuditError::StoreUnavailable {
                store: "(the --session-store value)".into(),
                detail: "name `files` or a postgres:// URL".into(),
            },
        ))
    }

    /// The same store with leases of `lease` (a shared store only).
    pub fn with_lease(self, lease: Duration) -> Self {
        match self {
            SessionStoreChoice::Shared(shared) => {
                SessionStoreChoice::Shared(shared.with_lease(lease))
            }
            files => files,
        }
    }

    /// The store as messages name it (never a password).
    pub fn shown(&self) -> String {
        match self {
            SessionStoreChoice::Files => "files".into(),
            SessionStoreChoice::Shared(shared) => shared.shown().to_owned(),
        }
    }

    /// The session store of the project rooted at `root`.
    pub(crate) fn store(&self, root: &camino::Utf8Path) -> SessionStore {
        match self {
            SessionStoreChoice::Files => SessionStore::new(root),
            SessionStoreChoice::Shared(shared) => SessionStore::in_shared(root, shared.clone()),
        }
    }
}
