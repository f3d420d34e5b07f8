//! Administrative operations on the project's sessions. Read-only operations create nothing;
//! mutating ones take the session's writer lease for their duration and release it.

use heartwood_audit::{
    AuditError, Checkpoint, CheckpointReport, RECEIPTS_FILE, RebuiltReceipt, ReceiptRepair,
    Recovery, SessionMeta, SessionStore, SessionSummary, TornTailCut, Verified,
};
use heartwood_events::{DecodeError, RecordedEvent, SessionId, SessionProjection};

use crate::error::SessionRefusal;
use crate::{GatewayError, ProjectContext};

/// What [`SessionAdmin::recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoverReport {
    /// What completing an interrupted append did.
    pub recovery: Recovery,
    /// What rebuilding the command receipts did, when they were damaged.
    pub receipts: Option<ReceiptRepair>,
    /// What cutting a torn tail did, when the last append was incomplete with no intent.
    pub torn_tail: Option<TornTailCut>,
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
        Event::InterruptRequested {} => CommandKind::Interrupt,
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
        Event::SessionRenamed { title } => CommandKind::Rename {
            title: title.clone(),
        },
        Event::ExportRecorded {
            bundle,
            format: None,
            destination: None,
            ..
        } => {
            result = serde_json::json!({ "bundle": bundle, "destination": null });
            CommandKind::Export(Default::default())
        }
        // A transcript or crate export's receipt keeps its destination; its other parameters
        // (private paths, ZIP) are not in the event, so its content digest is left unknown.
        Event::ExportRecorded {
            bundle,
            destination,
            ..
        } => {
            return Some(RebuiltReceipt {
                command_type: heartwood_events::CommandName::Export.as_str().to_owned(),
                result: serde_json::json!({ "bundle": bundle, "destination": destination }),
                content_sha256: None,
            });
        }
        // A workflow command names the run revision it saw, which its events do not repeat:
        // its kind and result are rebuilt, its content digest is left unknown.
        event => return workflow_receipt_of(event),
    };
    Some(RebuiltReceipt {
        command_type: kind.name().to_owned(),
        result,
        content_sha256: Some(crate::content::content_digest(&kind)),
    })
}

/// [`receipt_of`] for the workflow commands' last events.
fn workflow_receipt_of(event: &heartwood_events::Event) -> Option<RebuiltReceipt> {
    use heartwood_events::{CommandName, Event};
    let (command, result) = match event {
        Event::WorkflowStarted(..) => (CommandName::WorkflowStart, serde_json::Value::Null),
        Event::WorkflowStageStarted { .. } => (CommandName::WorkflowRun, serde_json::Value::Null),
        Event::WorkflowStageEvaluated { assessment, .. } => (
            CommandName::WorkflowEvaluate,
            serde_json::to_value(assessment).unwrap_or_default(),
        ),
        Event::WorkflowStageAccepted { by_researcher, .. } => {
            // Eligible checks of a stage that asks no acceptance advance it within the
            // evaluation; there the evaluation's assessment is not in this event.
            let command = if *by_researcher {
                CommandName::WorkflowAccept
            } else {
                CommandName::WorkflowEvaluate
            };
            (command, serde_json::Value::Null)
        }
        Event::WorkflowCancelled { .. } => (CommandName::WorkflowCancel, serde_json::Value::Null),
        Event::WorkflowReviewStarted(..) => (CommandName::WorkflowReview, serde_json::Value::Null),
        Event::WorkflowCorrectionBound { .. } => {
            (CommandName::WorkflowCorrect, serde_json::Value::Null)
        }
        _ => return None,
    };
    Some(RebuiltReceipt {
        command_type: command.as_str().to_owned(),
        result,
        content_sha256: None,
    })
}

/// One line of a session listing, as `sessions ls --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionListing {
    /// The session id.
    pub id: SessionId,
    /// When the session was created (absent when its metadata cannot be read).
    pub created_at: Option<String>,
    /// The backend that serves it.
    pub backend: Option<String>,
    /// Lines in its journal.
    pub events: u64,
    /// When its journal last changed.
    pub last_activity: Option<String>,
    /// How long ago that was, in words (`3 min ago`).
    pub last_activity_ago: Option<String>,
    /// Its record says a run is on, but no process holds it: the process running it ended
    /// (a crash, a kill, a closed terminal) and the next instruction continues it.
    pub stopped: bool,
    /// Whether an append was interrupted and awaits recovery.
    pub interrupted: bool,
    /// The process that holds it open, if it still runs.
    pub writer_pid: Option<u32>,
    /// Why its metadata cannot be read, if it cannot.
    pub metadata_error: Option<String>,
    /// Where it stands, in words, with what to do when something is wrong.
    pub status: String,
    /// What it is about: its first task's first line.
    pub title: Option<String>,
    /// Where its agent stands (running, waiting for a decision, paused, failed, finished, ...),
    /// when its record can be read.
    pub state: Option<heartwood_events::Lifecycle>,
    /// The set waiting for a decision, if one does.
    pub pending: Option<PendingListing>,
    /// What it waits for from the researcher (a decision, a workflow stage's acceptance,
    /// correction, checks or next run) with the steps that continue it: the projection's
    /// `waits_for`, absent while another process holds it or it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<heartwood_events::WaitsFor>,
}

/// The set a listed session waits on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingListing {
    /// The set.
    pub set_id: heartwood_events::ActionSetId,
    /// The revision to decide.
    pub revision: u64,
    /// How many actions it holds.
    pub members: usize,
}

/// What a session with an append a crash interrupted says in lists: its record is intact, the
/// append waits in the recovery journal, and what completes it.
pub(crate) fn interrupted_status(id: &SessionId) -> String {
    format!(
        "interrupted append waiting for recovery (the record is intact): opening the session \
         completes it, as does `heartwood sessions recover {id}`"
    )
}

/// Why a run nobody serves is shown stopped, and how to take it over (see
/// [`crate::SessionGateway::serve`]): the words a read of it gives as its last error.
pub(crate) fn cut_off_reason(id: &SessionId) -> String {
    format!(
        "the Heartwood process running it ended mid-run and nobody serves it now; \
         `heartwood exec --session {id} \"go on\"` continues it, and `heartwood sessions \
         resume {id}` takes it over as it stands (its engine carries the run on or records \
         where it stopped)"
    )
}

/// Why a session whose record says a run is on is stopped, with the commands that continue
/// it, when no process holds it: the one that ran it ended (a crash, a kill, a closed terminal).
pub(crate) fn stopped_status(s: &SessionSummary, p: &SessionProjection) -> Option<String> {
    // The lease names who runs it; a run on record with no holder was cut off.
    if s.writer.is_some() || p.lifecycle != heartwood_events::Lifecycle::Running {
        return None;
    }
    Some(if s.interrupted {
        format!(
            "stopped mid-append: the Heartwood process running its task ended while writing; \
             `heartwood sessions recover {id}` completes the record, then `heartwood exec \
             --session {id} \"go on\"` continues it",
            id = s.id
        )
    } else {
        format!(
            "stopped: the Heartwood process running its task ended before the task finished; \
             `heartwood exec --session {} \"go on\"` continues it",
            s.id
        )
    })
}

impl SessionListing {
    fn of(s: &SessionSummary, projection: Option<&SessionProjection>) -> Self {
        let stopped_status = projection
            .filter(|_| s.meta.is_ok())
            .and_then(|p| stopped_status(s, p));
        let stopped = stopped_status.is_some();
        let status = match (&s.meta, &s.writer, s.interrupted) {
            (Ok(_), None, _) if stopped => stopped_status.unwrap_or_default(),
            (Err(e), _, _) => format!("unreadable metadata: {e}"),
            (Ok(_), Some(w), _) => format!("open in pid {}", w.pid),
            (Ok(_), None, true) => interrupted_status(&s.id),
            (Ok(_), None, false) => "closed".to_owned(),
        };
        SessionListing {
            id: s.id.clone(),
            created_at: s.meta.as_ref().ok().map(|m| m.created_at.to_string()),
            backend: s.meta.as_ref().ok().map(|m| m.backend.clone()),
            events: s.events,
            last_activity: s.last_activity.as_ref().map(|t| t.as_str().to_owned()),
            last_activity_ago: s
                .last_activity
                .as_ref()
                .and_then(|t| t.ago(&heartwood_events::Timestamp::now())),
            stopped,
            interrupted: s.interrupted,
            writer_pid: s.writer.as_ref().map(|w| w.pid),
            metadata_error: s.meta.as_ref().err().map(ToString::to_string),
            status: match projection {
                Some(p) if s.writer.is_none() && !s.interrupted && s.meta.is_ok() && !stopped => {
                    p.status_line.clone()
                }
                _ => status,
            },
            title: projection.and_then(|p| p.title.clone()),
            state: projection.map(|p| p.lifecycle),
            pending: projection
                .and_then(|p| p.pending.as_ref())
                .map(|set| PendingListing {
                    set_id: set.set_id.clone(),
                    revision: set.revision,
                    members: set.members.len(),
                }),
            waits_for: projection
                .filter(|_| s.writer.is_none() && !stopped)
                .and_then(|p| p.waits_for.clone()),
        }
    }
}

/// What verification found, as `sessions show --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IntegrityReport {
    /// Whether the chain verified.
    pub intact: bool,
    /// Events covered, when intact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The hash of the last audit record, when intact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_hash: Option<String>,
    /// The Merkle root over the audit records, when intact and computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merkle_root: Option<String>,
    /// The first damage, when not intact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One journal line: the event, or why it cannot be read.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum EventLine {
    /// A readable event.
    Event(RecordedEvent),
    /// A line that cannot be read.
    Unreadable {
        /// Why.
        error: String,
    },
}

/// One session whole, as `sessions show --json` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionReport {
    /// The session's metadata.
    pub meta: SessionMeta,
    /// What verification found.
    pub integrity: IntegrityReport,
    /// Every journal line, decoded independently.
    pub events: Vec<EventLine>,
    /// The projection, when the session is intact and every event could be read.
    pub projection: Option<SessionProjection>,
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
    /// The bundle directory (the session's `exports/` itself for a transcript).
    pub bundle: std::path::PathBuf,
    /// Where the export was written outside the session, when named.
    pub destination: Option<std::path::PathBuf>,
    /// The sequence number of the `export_recorded` event.
    pub recorded_as: u64,
}

/// The administrative view of one project's sessions.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let folder = tempfile::tempdir()?;
/// let project = heartwood_gateway::ProjectContext::at(folder.path())?;
/// let admin = heartwood_gateway::SessionAdmin::new(&project);
/// assert!(admin.listing(None)?.is_empty());
/// // A session that does not exist is an error that says so, not an empty one.
/// let missing = admin.show("s-none").unwrap_err();
/// assert_eq!(missing.kind(), heartwood_gateway::ErrorKind::NotFound);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SessionAdmin {
    store: SessionStore,
    project: ProjectContext,
}

impl SessionView {
    /// The first and last event of an append a crash interrupted, when that is all that keeps
    /// the session from verifying clean (see [`GatewayError::interrupted_append`]).
    pub fn interrupted_append(&self) -> Option<(u64, u64)> {
        match &self.integrity {
            Err(AuditError::Interrupted {
                first_seq,
                last_seq,
                ..
            }) => Some((*first_seq, *last_seq)),
            _ => None,
        }
    }

    /// The view as one serializable report.
    pub fn report(&self) -> SessionReport {
        let integrity = match &self.integrity {
            Ok(v) => IntegrityReport {
                intact: true,
                count: Some(v.count),
                terminal_hash: Some(v.terminal_hash.to_hex()),
                merkle_root: v.merkle_root.as_ref().map(|d| d.to_hex()),
                error: None,
            },
            Err(e) => IntegrityReport {
                intact: false,
                count: None,
                terminal_hash: None,
                merkle_root: None,
                error: Some(e.to_string()),
            },
        };
        SessionReport {
            meta: self.meta.clone(),
            integrity,
            events: self
                .events
                .iter()
                .map(|e| match e {
                    Ok(e) => EventLine::Event(e.clone()),
                    Err(err) => EventLine::Unreadable {
                        error: err.to_string(),
                    },
                })
                .collect(),
            projection: self.projection.clone(),
        }
    }
}

impl SessionAdmin {
    /// Administration for `project`'s sessions.
    pub fn new(project: &ProjectContext) -> Self {
        SessionAdmin {
            store: SessionStore::new(project.root()),
            project: project.clone(),
        }
    }

    /// Administration over the store a gateway keeps its sessions in.
    pub(crate) fn over(project: &ProjectContext, store: SessionStore) -> Self {
        SessionAdmin {
            store,
            project: project.clone(),
        }
    }

    /// Administration for `project`'s sessions kept in `store`.
    pub fn with_store(project: &ProjectContext, store: &crate::SessionStoreChoice) -> Self {
        SessionAdmin {
            store: store.store(project.root()),
            project: project.clone(),
        }
    }

    /// Copies session `id` byte for byte into `to`'s store (which must not hold it), verifying
    /// it before and after; returns the copy's event count.
    pub fn copy_to(&self, id: &str, to: &SessionAdmin) -> Result<u64, GatewayError> {
        let id = self.resolve(id)?;
        Ok(self.store.copy_to(&id, &to.store)?.count)
    }

    /// Sessions, most recently active first, at most `limit`.
    pub fn list(&self, limit: Option<usize>) -> Result<Vec<SessionSummary>, GatewayError> {
        let mut sessions = self.store.list()?;
        sessions.truncate(limit.unwrap_or(usize::MAX));
        Ok(sessions)
    }

    /// The session `text` names: `last` (the most recently active), an exact id, or the start
    /// of exactly one id or of its random tail. An ambiguous prefix lists the sessions it could mean.
    pub fn resolve(&self, text: &str) -> Result<SessionId, GatewayError> {
        if text != "last" {
            // A prefix of an id is itself a well-formed id; anything else is refused as such.
            SessionId::parse(text)?;
        }
        let sessions = self.store.list()?;
        if text == "last" {
            return sessions
                .into_iter()
                .next()
                .map(|s| s.id)
                .ok_or(SessionRefusal::NoSessions.into());
        }
        if let Some(exact) = sessions.iter().find(|s| s.id.as_str() == text) {
            return Ok(exact.id.clone());
        }
        // The start of an id, or the start of its random tail (`3f9a` for
        // `s20261204-015300-3f9a2c01`): the short handle a researcher reads off a list.
        let matching: Vec<&SessionId> = sessions
            .iter()
            .map(|s| &s.id)
            .filter(|id| {
                id.as_str().starts_with(text)
                    || id
                        .as_str()
                        .rsplit_once('-')
                        .is_some_and(|(_, tail)| tail.starts_with(text))
            })
            .collect();
        match matching.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(GatewayError::Journal(AuditError::NoSession {
                id: SessionId::parse(text)?,
            })),
            many => Err(SessionRefusal::Ambiguous {
                text: text.to_owned(),
                matches: many.iter().map(|id| (*id).clone()).collect(),
            }
            .into()),
        }
    }

    /// Sessions, most recently active first, at most `limit`, as listing lines.
    pub fn listing(&self, limit: Option<usize>) -> Result<Vec<SessionListing>, GatewayError> {
        Ok(self
            .list(limit)?
            .iter()
            .map(|s| SessionListing::of(s, self.projection_of(&s.id).as_ref()))
            .collect())
    }

    /// Session `id` as a listing line with its projection (the same cache-or-replay as
    /// [`SessionAdmin::listing`]), or `None` when the project holds no such session: what a
    /// program driving the session from outside reads between its commands.
    pub fn look(
        &self,
        id: &SessionId,
    ) -> Result<Option<(SessionListing, Option<SessionProjection>)>, GatewayError> {
        let Some(summary) = self.store.summary(id)? else {
            return Ok(None);
        };
        let projection = self.projection_of(id);
        Ok(Some((
            SessionListing::of(&summary, projection.as_ref()),
            projection,
        )))
    }

    /// The session's projection for a listing: the cache its last writer left when it still
    /// matches the journal, else its events replayed (unverified: `verify` is the check).
    fn projection_of(&self, id: &SessionId) -> Option<SessionProjection> {
        let reader = self.store.reader(id).ok()?;
        if let Some(cached) = reader.derived_as::<SessionProjection>() {
            return Some(cached);
        }
        let events: Vec<RecordedEvent> = reader.events().ok()?.into_iter().flatten().collect();
        Some(crate::reducer::replay(id.clone(), &events))
    }

    /// One session's metadata, integrity and events (`id` as [`SessionAdmin::resolve`] takes
    /// it).
    pub fn show(&self, id: &str) -> Result<SessionView, GatewayError> {
        let id = self.resolve(id)?;
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

    /// The session as a readable Markdown transcript (see `transcript.rs`). Only a
    /// session that verifies is transcribed: a transcript of a damaged record would read as
    /// trustworthy.
    pub fn transcript(&self, id: &str) -> Result<String, GatewayError> {
        self.transcript_until(id, u64::MAX)
    }

    /// [`SessionAdmin::transcript`] of the session's first `count` events (an export's, taken
    /// where the journal ended when it was asked for).
    pub(crate) fn transcript_until(&self, id: &str, count: u64) -> Result<String, GatewayError> {
        let id = self.resolve(id)?;
        let reader = self.store.reader(&id)?;
        reader.verify()?;
        let mut events = crate::error::decoded(reader.events()?)?;
        events.truncate(usize::try_from(count).unwrap_or(usize::MAX));
        let projection = crate::reducer::replay(id.clone(), events.iter());
        Ok(crate::transcript::markdown(
            id.as_str(),
            projection.title.as_deref(),
            &events,
        ))
    }

    /// Verifies a session, and checks it against a retained checkpoint when one is given.
    pub fn verify(
        &self,
        id: &str,
        retained: Option<&Checkpoint>,
    ) -> Result<(Verified, Option<CheckpointReport>), GatewayError> {
        let reader = self.store.reader(&self.resolve(id)?)?;
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
        Ok(self.store.reader(&self.resolve(id)?)?.checkpoint()?)
    }

    /// Writes an export bundle and records it in the session.
    pub fn export(&self, id: &str) -> Result<ExportReport, GatewayError> {
        self.export_as(id, &heartwood_events::ExportRequest::default())
    }

    /// Writes the export `request` asks for (a bundle, a transcript file, an RO-Crate) and
    /// records it in the session, naming its form and destination.
    pub fn export_as(
        &self,
        id: &str,
        request: &heartwood_events::ExportRequest,
    ) -> Result<ExportReport, GatewayError> {
        let id = self.resolve(id)?;
        let (mut writer, _) = self.store.open_writer(&id)?;
        let end = writer.end()?;
        let (event, result) = crate::export::perform(&end, &self.project, request, |count| {
            self.transcript_until(id.as_str(), count)
        })?;
        let seq = writer.append(None, vec![event])?;
        let bundle = result["bundle"].as_str().unwrap_or_default();
        Ok(ExportReport {
            bundle: writer.paths().exports.join(bundle),
            destination: result["destination"].as_str().map(std::path::PathBuf::from),
            recorded_as: seq.get(),
        })
    }

    /// Completes an interrupted append (if any), cuts a torn tail no intent describes (the
    /// bytes kept aside), rebuilds damaged command receipts from the chain, and verifies the
    /// session; returns what was done and how many events it holds.
    pub fn recover(&self, id: &str) -> Result<RecoverReport, GatewayError> {
        let id = self.resolve(id)?;
        // Completing an interrupted append comes first (under the lease), so that is what the
        // report says was done, even though reopening then finds nothing left to complete.
        let (completed, torn_tail) = self.store.cut_torn_tail(&id)?;
        let (receipts, opened) = match self.store.open_writer(&id) {
            Err(AuditError::Damaged { damage, .. }) if damage.file == RECEIPTS_FILE => {
                let repair = self.store.repair_receipts(&id, &receipt_of)?;
                (Some(repair), self.store.open_writer(&id)?)
            }
            opened => (None, opened?),
        };
        let (writer, reopened) = opened;
        let recovery = match completed {
            Recovery::Clean => reopened,
            completed => completed,
        };
        Ok(RecoverReport {
            recovery,
            receipts,
            torn_tail,
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
            Err(source) => Err(GatewayError::Io {
                doing: format!("cannot read {}", path.display()),
                source,
            }),
        }
    }

    /// Deletes a session.
    pub fn remove(&self, id: &str) -> Result<(), GatewayError> {
        Ok(self.store.remove(&self.resolve(id)?)?)
    }
}
