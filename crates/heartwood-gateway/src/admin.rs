//! Administrative operations on the project's sessions. Read-only operations create nothing;
//! mutating ones take the session's writer lease for their duration and release it.

use heartwood_audit::{
    AuditError, Checkpoint, CheckpointReport, RECEIPTS_FILE, RebuiltReceipt, ReceiptRepair,
    Recovery, SessionMeta, SessionStore, SessionSummary, Verified,
};
use heartwood_events::{DecodeError, RecordedEvent, SessionId, SessionProjection};

use crate::{GatewayError, ProjectContext};

/// What [`SessionAdmin::recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoverReport {
    /// What completing an interrupted append did.
    pub recovery: Recovery,
    /// What rebuilding the command receipts did, when they were damaged.
    pub receipts: Option<ReceiptRepair>,
    /// Events the session holds, intact.
    pub count: u64,
}

/// The command a command's last event shows it was, with its result: the inverse of what
/// [`crate::SessionGateway::submit`] records for each command.
fn receipt_of(event: &RecordedEvent) -> Option<RebuiltReceipt> {
    use heartwood_events::{CommandKind, Event};
    let mut result = serde_json::Value::Null;
    let kind = match &event.event {
        Event::TaskSubmitted { text, policy, .. } => CommandKind::SubmitTask {
            text: text.clone(),
            policy: *policy,
        },
        Event::GuidanceSent { text } => CommandKind::SendGuidance { text: text.clone() },
        Event::PauseRequested {} => CommandKind::Pause,
        Event::RunResumed {} => CommandKind::Resume,
        Event::DecisionRecorded {
            set_id,
            revision,
            decision,
            reason,
        } => CommandKind::Decide {
            set_id: set_id.clone(),
            revision: *revision,
            decision: *decision,
            reason: reason.clone(),
        },
        Event::SessionClosed {} => CommandKind::Close,
        Event::ExportRecorded { bundle, .. } => {
            result = serde_json::json!({ "bundle": bundle });
            CommandKind::Export
        }
        _ => return None,
    };
    Some(RebuiltReceipt {
        command_type: kind.name().to_owned(),
        result,
        content_sha256: Some(crate::gateway::content_digest(&kind)),
    })
}

/// One session, as `show` presents it.
#[derive(Debug)]
pub struct SessionView {
    /// The session's metadata.
    pub meta: SessionMeta,
    /// The verification result; an error describes the first damage.
    pub integrity: Result<Verified, AuditError>,
    /// Every whole event line, decoded independently.
    pub events: Vec<Result<RecordedEvent, DecodeError>>,
    /// The projection, when the session is intact and every event could be read.
    pub projection: Option<SessionProjection>,
}

/// What an export produced.
#[derive(Debug, Clone)]
pub struct ExportReport {
    /// The bundle directory.
    pub bundle: std::path::PathBuf,
    /// The sequence number of the `export_recorded` event.
    pub recorded_as: u64,
}

/// The administrative view of one project's sessions.
#[derive(Debug, Clone)]
pub struct SessionAdmin {
    store: SessionStore,
}

impl SessionAdmin {
    /// Administration for `project`'s sessions.
    pub fn new(project: &ProjectContext) -> Self {
        SessionAdmin {
            store: SessionStore::new(project.root()),
        }
    }

    /// Sessions, most recently active first, at most `limit`.
    pub fn list(&self, limit: Option<usize>) -> Result<Vec<SessionSummary>, GatewayError> {
        let mut sessions = self.store.list()?;
        sessions.truncate(limit.unwrap_or(usize::MAX));
        Ok(sessions)
    }

    /// One session's metadata, integrity and events.
    pub fn show(&self, id: &str) -> Result<SessionView, GatewayError> {
        let id = SessionId::parse(id)?;
        let reader = self.store.reader(&id)?;
        let integrity = reader.verify();
        let events = reader.events()?;
        let readable: Option<Vec<&RecordedEvent>> =
            events.iter().map(|e| e.as_ref().ok()).collect();
        let projection = match (&integrity, readable) {
            (Ok(_), Some(readable)) => Some(crate::reducer::replay(id, readable)),
            _ => None,
        };
        Ok(SessionView {
            meta: reader.meta().clone(),
            integrity,
            events,
            projection,
        })
    }

    /// Verifies a session, and checks it against a retained checkpoint when one is given.
    pub fn verify(
        &self,
        id: &str,
        retained: Option<&Checkpoint>,
    ) -> Result<(Verified, Option<CheckpointReport>), GatewayError> {
        let reader = self.store.reader(&SessionId::parse(id)?)?;
        Ok(match retained {
            None => (reader.verify()?, None),
            Some(checkpoint) => {
                let (verified, report) = reader.verify_against(checkpoint)?;
                (verified, Some(report))
            }
        })
    }

    /// The session's current checkpoint.
    pub fn checkpoint(&self, id: &str) -> Result<Checkpoint, GatewayError> {
        Ok(self.store.reader(&SessionId::parse(id)?)?.checkpoint()?)
    }

    /// Writes an export bundle and records it in the session.
    pub fn export(&self, id: &str) -> Result<ExportReport, GatewayError> {
        let (mut writer, _) = self.store.open_writer(&SessionId::parse(id)?)?;
        let (bundle, seq) = writer.export(None)?;
        Ok(ExportReport {
            bundle,
            recorded_as: seq.get(),
        })
    }

    /// Completes an interrupted append (if any), rebuilds damaged command receipts from the
    /// chain, and verifies the session; returns what was done and how many events it holds.
    pub fn recover(&self, id: &str) -> Result<RecoverReport, GatewayError> {
        let id = SessionId::parse(id)?;
        let (receipts, opened) = match self.store.open_writer(&id) {
            Err(AuditError::Damaged { damage, .. }) if damage.file == RECEIPTS_FILE => {
                let repair = self.store.repair_receipts(&id, &receipt_of)?;
                (Some(repair), self.store.open_writer(&id)?)
            }
            opened => (None, opened?),
        };
        let (writer, recovery) = opened;
        Ok(RecoverReport {
            recovery,
            receipts,
            count: writer.count(),
        })
    }

    /// The model exchanges the session's engine recorded (for a replay route), or `None` when
    /// it recorded none.
    pub fn recording(&self, id: &str) -> Result<Option<Vec<u8>>, GatewayError> {
        let id = SessionId::parse(id)?;
        // Read-only, and the engine's own file: a reader of the session proves it exists first.
        let reader = self.store.reader(&id)?;
        let path = reader
            .paths()
            .backend
            .join(heartwood_agent::model::replay::EXCHANGES_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(GatewayError::Unreadable(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    /// Deletes a session.
    pub fn remove(&self, id: &str) -> Result<(), GatewayError> {
        Ok(self.store.remove(&SessionId::parse(id)?)?)
    }
}
