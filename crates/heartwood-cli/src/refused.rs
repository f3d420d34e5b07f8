//! A refusal as the command line reports it: the gateway's sentence on standard error and an
//! exit code chosen by the refusal's kind, so a script (and `heartwood batch`) acts on what
//! kind of refusal it was, never on its words. The codes are documented in the README.

use heartwood_events::{Refusal, RefusalClass};

/// A refused command looked at something that moved on: look again, and decide again.
pub const EXIT_STALE: u8 = 5;
/// The session does not take the command as it stands now (busy, closed, nothing pending, not
/// at that point of the run).
pub const EXIT_NOT_NOW: u8 = 6;
/// The stage's checks (or a correction's recheck) do not pass. `workflow evaluate` exits with
/// it too when the checks it ran do not pass.
pub const EXIT_NOT_ELIGIBLE: u8 = 7;
/// The agent cannot be served: no model route, an unset key, an unreachable service.
pub const EXIT_AGENT_UNAVAILABLE: u8 = 8;
/// What the command says cannot be used: empty text, a workflow input that cannot be read.
pub const EXIT_INVALID_INPUT: u8 = 9;

/// A command the gateway refused, as an error the binary's `main` reports with the exit code
/// of its kind.
#[derive(Debug)]
pub struct Refused(pub Refusal);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused: {}", self.0)
    }
}

impl std::error::Error for Refused {}

impl Refused {
    /// The exit code of the refusal's class; 1 for one this build cannot type.
    pub fn exit_code(&self) -> u8 {
        match self.0.class() {
            RefusalClass::Stale => EXIT_STALE,
            RefusalClass::NotNow => EXIT_NOT_NOW,
            RefusalClass::NotEligible => EXIT_NOT_ELIGIBLE,
            RefusalClass::AgentUnavailable => EXIT_AGENT_UNAVAILABLE,
            RefusalClass::InvalidInput => EXIT_INVALID_INPUT,
            RefusalClass::Other => 1,
        }
    }
}

/// `Err` with the refusal when `outcome` is one.
pub fn applied(outcome: &heartwood_events::Outcome) -> Result<(), Refused> {
    match outcome.refusal() {
        Some(refusal) => Err(Refused(refusal.clone())),
        None => Ok(()),
    }
}
