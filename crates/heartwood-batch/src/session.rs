//! One item's session, driven in this process: the gateway of the item's project (the one
//! door, as for any interface), the commands the driver submits to it and the wait for the run
//! each starts, with a line in the item's log for each. What a command came to is the
//! gateway's receipt and the session's projection, never an exit code or printed words.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use heartwood_events::{Command, CommandId, CommandKind, Outcome, Refusal, SessionId};
use heartwood_events::{SessionProjection, Snapshot};
use heartwood_gateway::{ProjectContext, SessionAdmin, SessionGateway};

use crate::error::{BatchError, Result};

/// The longest one run is followed before the driver looks again (it then goes on waiting):
/// a stage of a real study may take hours.
const RUN_WAIT: Duration = Duration::from_secs(3600);

/// Whether this process may drive the item's session.
pub(crate) enum Taken {
    /// The project holds no such session yet: the first command makes it.
    Fresh,
    /// This process serves it now.
    Here,
    /// Another Heartwood process holds it (its pid, when its lease says).
    Elsewhere(Option<u32>),
}

/// What the gateway did with a command.
pub(crate) enum Submitted {
    /// Recorded; its effects (a run) follow on the session.
    Applied,
    /// Refused, nothing changed: the gateway's reason.
    Refused(Refusal),
}

/// The item's session, through its project's gateway.
pub(crate) struct ItemSession<'d> {
    runtime: &'d tokio::runtime::Runtime,
    gateway: SessionGateway,
    admin: SessionAdmin,
    id: SessionId,
    project: PathBuf,
    log: File,
}

impl<'d> ItemSession<'d> {
    /// The gateway of `project`, for session `session`, logging to `log_path`.
    pub(crate) fn open(
        runtime: &'d tokio::runtime::Runtime,
        project: &Path,
        session: &str,
        log_path: &Path,
    ) -> Result<Self> {
        let context = ProjectContext::at(project).map_err(|e| BatchError::Gateway {
            what: format!("{} cannot be a project", project.display()),
            source: Box::new(e.into()),
        })?;
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir).map_err(BatchError::io("create", dir))?;
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(BatchError::io("open", log_path))?;
        Ok(ItemSession {
            runtime,
            admin: SessionAdmin::new(&context),
            gateway: SessionGateway::new(context),
            id: SessionId::parse(session)?,
            project: project.to_path_buf(),
            log,
        })
    }

    /// The session's id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The item's project.
    pub(crate) fn project(&self) -> &Path {
        &self.project
    }

    /// Takes the session to be served here: an append a crash cut is completed first, and
    /// serving reconciles a run its last process left open (recorded as interrupted).
    pub(crate) fn take(&mut self) -> Result<Taken> {
        let looked = self
            .admin
            .look(&self.id)
            .map_err(BatchError::gateway(format!(
                "cannot read session {}",
                self.id
            )))?;
        let Some((listing, _)) = looked else {
            return Ok(Taken::Fresh);
        };
        if listing.interrupted && listing.writer_pid.is_none() {
            self.admin
                .recover(self.id.as_str())
                .map_err(BatchError::gateway(format!(
                    "session {} has an interrupted append that could not be completed",
                    self.id
                )))?;
            self.note("completed an append a crash interrupted")?;
        }
        match self.gateway.serve(&self.id) {
            Ok(()) => Ok(Taken::Here),
            Err(e) if e.is_owned_elsewhere() => Ok(Taken::Elsewhere(listing.writer_pid)),
            Err(e) => Err(BatchError::gateway(format!(
                "cannot open session {}",
                self.id
            ))(e)),
        }
    }

    /// The session's projection now (`None` before it exists).
    pub(crate) fn look(&self) -> Result<Option<SessionProjection>> {
        if !self.gateway.exists(&self.id) {
            return Ok(None);
        }
        self.gateway
            .projection(&self.id)
            .map(Some)
            .map_err(BatchError::gateway(format!(
                "cannot read session {}",
                self.id
            )))
    }

    /// Submits `kind` as command `id` (fixed per item and step where a retry must act once),
    /// or under a new id.
    pub(crate) fn submit(&mut self, id: Option<&str>, kind: CommandKind) -> Result<Submitted> {
        let name = kind.name();
        let id = match id {
            Some(id) => CommandId::parse(id)?,
            None => SessionGateway::new_command_id(),
        };
        let command = Command::new(id.clone(), self.id.clone(), kind);
        let receipt = self
            .gateway
            .submit_blocking(command)
            .map_err(BatchError::gateway(format!("session {}", self.id)))?;
        Ok(match receipt.outcome {
            Outcome::Applied { .. } => {
                self.note(&format!("{name} ({id}): applied"))?;
                Submitted::Applied
            }
            Outcome::Refused(refusal) => {
                self.note(&format!("{name} ({id}): refused: {refusal}"))?;
                Submitted::Refused(refusal)
            }
        })
    }

    /// Waits until the session settles (finished, failed, paused, stopped, or waiting for a
    /// decision) and answers its snapshot then.
    pub(crate) fn follow(&mut self) -> Result<Snapshot> {
        loop {
            let snapshot = self
                .runtime
                .block_on(self.gateway.settled(&self.id, RUN_WAIT))
                .map_err(BatchError::gateway(format!(
                    "cannot follow session {}",
                    self.id
                )))?;
            if snapshot.is_settled() {
                self.note(&snapshot.projection.status_line)?;
                return Ok(snapshot);
            }
        }
    }

    /// Writes `line` to the item's log.
    pub(crate) fn note(&mut self, line: &str) -> Result<()> {
        writeln!(self.log, "# {line}").map_err(|source| BatchError::Io {
            what: "cannot write the item's log".to_owned(),
            source,
        })
    }

    /// Lets go of the session: its lease released, so a person (or another worker) can act.
    pub(crate) fn close(self) {
        self.runtime.block_on(self.gateway.close());
    }
}
