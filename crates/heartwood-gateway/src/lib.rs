//! The session gateway: the only door from Heartwood's interfaces (terminal, browser, notebook)
//! to sessions.
//!
//! It owns [`SessionGateway`] (typed commands in, one projection out, the agent on a supervised
//! worker per active session), the agent-[`backend`] port and its [`native`] implementation,
//! the one [`reducer`], the [`translate`]ion of the native engine's events into durable
//! events, the read-only [`workspace`] service, session [`replay`], the Markdown
//! [`transcript`], and [`SessionAdmin`], the administrative view of the project's sessions:
//! list, show, verify, checkpoint, export, recover, remove.
//!
//! The [`stats`] reference (heartwood-stats: linear and logistic models) is reached here too:
//! interfaces read a table through it and print the fit.
//!
//! The project's services (which project, its configuration, platform, sign-in, route checks,
//! the startup planner, local models, skills) are heartwood-project's, below this crate; they
//! are re-exported here so that interfaces keep one door.
//!
//! It must never let an interface choose another project's directory, and it must never expose
//! the journal's writer to an interface.

mod admin;
pub mod backend;
mod channel;
mod content;
pub mod correction;
mod error;
mod export;
mod figure;
mod follow;
mod gateway;
mod live;
pub mod markdown;
pub mod native;
pub mod openhands;
pub mod parallel_review;
pub mod preview;
pub mod provenance;
pub mod reducer;
mod relay;
pub mod replay;
mod reproduction;
pub mod review;
mod review_evidence;
pub mod session_diff;
pub mod startup;
pub mod stats;
mod store_choice;
pub mod transcript;
pub mod translate;
mod worker;
mod worker_link;
mod workflow_run;
pub mod workspace;

/// How many updates a slow subscriber may fall behind before it is told it lagged (and should
/// take a snapshot): one figure for a live session's broadcast, a followed session's feed and
/// a channel subscription, so a relay never drops what its source kept.
pub(crate) const UPDATE_QUEUE: usize = 1024;

pub use admin::{
    EventLine, ExportReport, IntegrityReport, PendingListing, RecoverReport, SessionAdmin,
    SessionListing, SessionReport, SessionView,
};
pub use error::{
    BackendFailure, ChannelError, CorrectionRefusal, GatewayError, SessionRefusal,
    WorkflowUnavailable,
};
// The project's services live below the sessions, in heartwood-project; interfaces reach
// them through this door like everything else.
pub use gateway::{IDLE_RELEASE, SessionFollow, SessionGateway, SessionUpdates};
pub use heartwood_audit::{
    Checkpoint, CheckpointReport, Damage, DamageKind, ReceiptRepair, Recovery, SessionMeta,
    SessionSummary, TornTailCut, Verified,
};
pub use heartwood_events as events;
pub use heartwood_events::{Change, Snapshot, Update};
pub use heartwood_project::{
    ErrorKind, ProjectContext, ProjectError, ProjectUnusable, config, model_catalog, models,
    platform, presets, route_check, route_request, skills, subscription,
};
pub use live::blank_snapshot;
pub use native::NATIVE_BACKEND;
pub use openhands::OPENHANDS_BACKEND;
pub use store_choice::SessionStoreChoice;
pub use workspace::WorkspaceService;
