//! What `batch review` reads and does for each item: its session's projection (read-only),
//! and a stage's acceptance submitted to the item's project's gateway, bound to the revision
//! and fingerprint the researcher was shown; the gateway checks each again.

use std::path::Path;

use heartwood_events::{Command, CommandKind, Outcome, Refusal, SessionId, SessionProjection};
use heartwood_gateway::{ProjectContext, SessionAdmin, SessionGateway};

use crate::error::{BatchError, Result};
use crate::record::Record;

/// The item's session's projection as it stands (read-only), or `None` when it cannot be
/// read or does not exist yet.
pub fn projection_of(record: &Record) -> Option<SessionProjection> {
    let context = ProjectContext::at(&record.project).ok()?;
    let id = SessionId::parse(&record.session).ok()?;
    SessionAdmin::new(&context).look(&id).ok()??.1
}

/// What the gateway did with an acceptance.
#[derive(Debug, Clone, PartialEq)]
pub enum Accepted {
    /// The stage is accepted.
    Yes,
    /// Refused, nothing changed: the gateway's reason.
    Refused(Refusal),
}

/// Accepts the current stage of `session` in `project`, bound to `revision` and
/// `fingerprint`.
pub fn accept(project: &Path, session: &str, revision: u64, fingerprint: &str) -> Result<Accepted> {
    let context = ProjectContext::at(project).map_err(|e| BatchError::Gateway {
        what: format!("{} cannot be a project", project.display()),
        source: Box::new(e.into()),
    })?;
    let gateway = SessionGateway::new(context);
    let command = Command::new(
        SessionGateway::new_command_id(),
        SessionId::parse(session)?,
        CommandKind::WorkflowAccept {
            revision,
            fingerprint: fingerprint.to_owned(),
        },
    );
    let receipt = gateway.submit_blocking(command);
    // Accepting starts no run: closing only lets go of the session's lease.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BatchError::Runtime)?;
    runtime.block_on(gateway.close());
    let receipt = receipt.map_err(BatchError::gateway(format!("session {session}")))?;
    Ok(match receipt.outcome {
        Outcome::Applied { .. } => Accepted::Yes,
        Outcome::Refused(refusal) => Accepted::Refused(refusal),
    })
}
