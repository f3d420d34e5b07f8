//! The confinement levels and which one a command runs at.

/// How a tool process is confined: the one vocabulary type every layer shares (the events
/// record it, this crate enforces it).
pub use heartwood_events::SandboxLevel;

/// Who let a command run, as far as its confinement goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// A person allowed its set.
    ByPerson,
    /// The risk rules let it run without review (the low-risk policy): read-only.
    ByRiskRules,
    /// A policy that reviews nothing (tests, batch deployments): the project, never more.
    WithoutReview,
}
