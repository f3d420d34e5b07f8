//! The session gateway: the only door from Heartwood's interfaces (terminal, browser, notebook)
//! to sessions.
//!
//! Today it owns the [`ProjectContext`] (which project the process serves), the project's
//! [`config`] (the model route, written under a project-scoped lock), the read-only [`startup`]
//! planner, and [`SessionAdmin`], the administrative view of the project's sessions: list,
//! show, verify, checkpoint, export, recover, remove. Typed commands, the projection and the agent worker
//! arrive with the gateway issue and extend this crate rather than bypass it.
//!
//! It must never let an interface choose another project's directory, and it must never expose
//! the journal's writer to an interface.

mod admin;
pub mod config;
mod project;
pub mod startup;

pub use admin::{ExportReport, GatewayError, SessionAdmin, SessionView};
pub use heartwood_audit::{
    Checkpoint, CheckpointReport, Damage, DamageKind, Recovery, SessionMeta, SessionSummary,
    Verified,
};
pub use project::ProjectContext;
