//! The session gateway: the only door from Heartwood's interfaces (terminal, browser, notebook,
//! batch) to sessions. It must never let an interface choose another project's directory, and
//! it must never expose the journal's writer to an interface.
//!
//! # A walk through the facade
//!
//! Everything an interface needs is named at this crate's root; the modules behind it are
//! private. It comes in three groups, read in this order:
//!
//! 1. **The session core.** [`SessionGateway`] is one project's gateway: typed commands go in
//!    through [`SessionGateway::submit`] and come back as receipts; one projection comes out,
//!    as a [`Snapshot`] ([`SessionGateway::current`], [`SessionGateway::snapshot`]) and as a
//!    stream of [`Update`]s ([`SessionGateway::updates`], [`SessionGateway::follow`]). Each
//!    active session's agent runs on a supervised worker; the session's journal is written by
//!    the gateway alone, and [`reduce`] is the one fold of its events into the projection.
//!    [`SessionAdmin`] is the administrative view of the same sessions (list, show, verify,
//!    checkpoint, export, recover, remove), [`SessionStoreChoice`] says where they are kept,
//!    and [`GatewayError`] (with its [`ErrorKind`]) is every refusal and failure. A pending
//!    action set's review ([`review_set`]) and a session's record in words
//!    ([`transcript_line`]) are worded here once for every interface. The wire vocabulary
//!    (commands, events, receipts, the projection) is [`events`], the heartwood-events crate.
//!    The engines behind the sessions are named by [`NATIVE_BACKEND`] and
//!    [`OPENHANDS_BACKEND`]; OpenHands is installed with [`install_openhands`].
//! 2. **The research services built on the core.** Workflow runs (the definitions a project
//!    can start: [`workflow_catalog`]; a run's figures and bound-file previews:
//!    [`SessionGateway::workflow_figure`], [`BoundFilePreview`]), the corrections of reviewed
//!    findings ([`correction_step`]), parallel review's qualification ([`qualify_route`]),
//!    the provenance RO-Crate ([`verify_crate`]) and replay ([`compare_replay`]); a stage's
//!    review evidence and a reproduction's rerun are judged inside commands, with no function
//!    of their own here. Each service reads the session core's projection and the project's
//!    files through the confined [`WorkspaceService`]; none writes a journal but through a
//!    command.
//! 3. **The project's services**, from the crates below the sessions (heartwood-project,
//!    heartwood-workspace, heartwood-stats), re-exported here so that interfaces keep one door.
//!
//! Interfaces name no module of this crate but a few namespaces, each because it carries a
//! lower crate's vocabulary whose names would collide at the root (`workspace::Change` and
//! [`Change`], `stats::Status` and `workspace::CheckStatus`, two `CatalogView`s):
//!
//! - [`events`]: heartwood-events, the wire types.
//! - heartwood-project's services: [`config`], [`models`], [`model_catalog`], [`platform`],
//!   [`presets`], [`route_check`], [`route_request`], [`skills`], [`subscription`], and
//!   [`startup`] (its planner, told what this project's sessions are).
//! - [`workspace`]: the project's files through heartwood-workspace (limits, trees, diffs).
//! - [`stats`]: the statistics reference over heartwood-stats (interfaces never name that
//!   crate).
//! - [`backend`]: the agent-backend port, for whoever adds an engine
//!   ([`SessionGateway::with_backend`]); no interface needs it.

// The session core: commands in (gateway), the live session and its worker, the one reducer,
// the channels and relays between processes, following a session, its administration.
mod admin;
mod channel;
mod content;
mod error;
mod export;
mod follow;
mod gateway;
mod live;
mod markdown;
mod reducer;
mod relay;
mod review;
mod session_diff;
mod store_choice;
mod transcript;
mod worker;
mod worker_link;

// The engines behind the backend port, and the translation of their events.
pub mod backend;
mod native;
mod openhands;
mod translate;

// The research services built on the core, and the parts of the projection they fold.
mod correction;
mod figure;
mod parallel_review;
mod preview;
mod provenance;
mod replay;
mod reproduction;
mod review_evidence;
mod review_execution;
mod workflow_definitions;
mod workflow_run;
mod workflow_view;

// Services over the crates below the sessions.
pub mod startup;
pub mod stats;
pub mod workspace;

/// How many updates a slow subscriber may fall behind before it is told it lagged (and should
/// take a snapshot): one figure for a live session's broadcast, a followed session's feed and
/// a channel subscription, so a relay never drops what its source kept.
pub(crate) const UPDATE_QUEUE: usize = 1024;

// 1. The session core.
pub use admin::{
    EventLine, ExportReport, IntegrityReport, PendingListing, RecoverReport, SessionAdmin,
    SessionListing, SessionReport, SessionView,
};
pub use error::{
    BackendFailure, ChannelError, CorrectionRefusal, ErrorKind, GatewayError, SessionRefusal,
    WorkflowUnavailable,
};
pub use gateway::{IDLE_RELEASE, SessionFollow, SessionGateway, SessionUpdates};
pub use heartwood_audit::{
    Checkpoint, CheckpointReport, Damage, DamageKind, ReceiptRepair, Recovery, SessionMeta,
    SessionSummary, TornTailCut, Verified,
};
pub use heartwood_events as events;
pub use heartwood_events::{Change, Snapshot, Update};
pub use live::blank_snapshot;
/// The one reducer: a session's recorded events folded into its projection, the same fold a
/// live session applies event by event.
pub use reducer::replay as reduce;
// The review of a pending action set, as every interface shows it: `review_set` reads the
// project through its confined workspace, `review_set_with` through the one given.
pub use review::{review as review_set_with, review_in as review_set};
pub use store_choice::SessionStoreChoice;
// A session's record in words: one line per event, and text shortened for a line.
pub use transcript::{line as transcript_line, short as shortened};
pub use workspace::WorkspaceService;
// The engines: their names, and OpenHands (optional) found, installed and its servers listed.
pub use native::NATIVE_BACKEND;
pub use openhands::{
    OPENHANDS_BACKEND, install as install_openhands, installation as openhands_installation,
    processes_of as openhands_processes,
};

// 2. The research services built on the session core.
// The correction of a verified finding: `correction_step` plans it before the corrected
// file is written and rechecks it once it is; `bind_correction` is the command that binds it.
pub use correction::{
    CorrectionPlan, CorrectionStep, Recheck, RecheckResult, bind as bind_correction,
    step as correction_step,
};
// Parallel review's qualification: the operator's evidence file and the qualifying run.
pub use parallel_review::evidence::{
    EvidenceError, QUALIFICATIONS_VAR, configured as qualification_evidence,
};
pub use parallel_review::qualify::{
    QualifyError, QualifyOptions, QualifyRecord, QualifyReport, run_connected as qualify_route,
};
pub use preview::{BoundFilePreview, FileEvidence};
pub use provenance::{
    BatchItem, CrateError, CrateReport, CrateVerdict, verify_crate, write_batch_crate,
};
// A replay of a recorded session: its starting files written out again, and the
// action-by-action comparison with the original.
pub use replay::{
    ComparedAction, ReplayComparison, ReplaySource, Verdict as ReplayVerdict,
    compare as compare_replay, default_copy as replay_copy, write_starting_files,
};
// The workflow definitions a project can start (maintained, deployment, project), and the
// check of one definition.
pub use workflow_definitions::{
    DEPLOYMENT_DIR_VAR, shared_workflow_catalog, validate_definition, workflow_catalog,
};

// 3. The project's services, from heartwood-project below the sessions.
pub use heartwood_project::{
    ProjectContext, ProjectError, ProjectUnusable, config, model_catalog, models, platform,
    presets, route_check, route_request, skills, subscription,
};
