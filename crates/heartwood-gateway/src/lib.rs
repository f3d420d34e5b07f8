//! The session gateway: the only door from Heartwood's interfaces (terminal, browser, notebook)
//! to sessions.
//!
//! It owns [`SessionGateway`] (typed commands in, one projection out, the agent on a supervised
//! worker per active session), the agent-[`backend`] port and its [`native`] implementation,
//! the one [`reducer`], the [`translate`]ion of the native engine's events into durable events, the [`ProjectContext`] (which project the process serves), the project's
//! [`config`] (the model route, written under a project-scoped lock), the read-only [`startup`]
//! planner, the [`route_check`] before a route is saved, the read-only [`workspace`] service, the project's Agent [`skills`], session [`replay`], the Markdown [`transcript`], and [`SessionAdmin`], the administrative view of the project's sessions: list,
//! show, verify, checkpoint, export, recover, remove.
//!
//! It must never let an interface choose another project's directory, and it must never expose
//! the journal's writer to an interface.

mod admin;
pub mod backend;
mod channel;
pub mod config;
pub mod correction;
mod engine_route;
mod error;
mod figure;
mod follow;
mod gateway;
mod live;
pub mod markdown;
pub mod model_catalog;
pub mod models;
pub mod native;
pub mod openhands;
mod own_runtime;
pub mod parallel_review;
pub mod platform;
pub mod presets;
pub mod preview;
mod project;
pub mod reducer;
pub mod replay;
mod reproduction;
pub mod review;
mod review_evidence;
pub mod route_check;
pub mod route_request;
pub mod session_diff;
pub mod skills;
pub mod startup;
pub mod subscription;
pub mod transcript;
pub mod translate;
mod worker;
mod worker_link;
mod workflow_run;
pub mod workspace;

pub use admin::{
    EventLine, ExportReport, IntegrityReport, PendingListing, RecoverReport, SessionAdmin,
    SessionListing, SessionReport, SessionView,
};
pub use error::{BackendFailure, ChannelError, ErrorKind, GatewayError, ProjectUnusable};
pub use gateway::{IDLE_RELEASE, SessionGateway};
pub use heartwood_audit::{
    Checkpoint, CheckpointReport, Damage, DamageKind, ReceiptRepair, Recovery, SessionMeta,
    SessionSummary, TornTailCut, Verified,
};
pub use heartwood_events as events;
pub use heartwood_events::{Change, Snapshot, Update};
pub use live::blank_snapshot;
pub use native::NATIVE_BACKEND;
pub use openhands::OPENHANDS_BACKEND;
pub use project::ProjectContext;
pub use workspace::WorkspaceService;
