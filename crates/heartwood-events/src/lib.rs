//! Heartwood's vocabulary: the plain data every other crate speaks.
//!
//! This crate owns validated identifiers ([`SessionId`], [`CommandId`], [`ActionSetId`],
//! [`Seq`]), the durable [`Event`] enum and its [`RecordedEvent`] envelope, the [`Command`]
//! enum interfaces submit, command [`Receipt`]s, the [`SessionProjection`] every interface
//! renders (with the action, decision, lifecycle and usage types it is made of), the other
//! wire types interfaces receive (updates, snapshots, session rows, the [`startup`] plan, the
//! [`platform`] summary, the workflow [`catalog`]), and the canonical JSON byte form that the audit chain hashes.
//!
//! It must never do I/O: no files, no clocks beyond reading "now" for a timestamp, no network.
//! Anything that touches a session directory lives in `heartwood-audit`.

mod action;
mod canonical;
pub mod catalog;
mod command;
mod decode;
mod event;
mod execution;
mod export;
mod id;
mod markdown;
pub mod platform;
mod projection;
mod receipt;
mod refusal;
mod review;
pub mod review_execution;
pub mod schema;
mod shell_lines;
pub mod startup;
mod time;
mod wire;
pub mod workflow;

pub use action::{
    ActionPolicy, ActionProposal, ActionSet, ActionState, Decision, Lifecycle, PlanStatus,
    PlanTask, RiskLevel, SandboxLevel, UsageFigures,
};
pub use canonical::{CanonicalError, to_canonical_bytes, to_canonical_value_bytes};
pub use command::{Command, CommandKind, CommandName};
pub use decode::DecodeError;
pub use event::{Event, EventKind, Origin, RecordedEvent, Role};
pub use execution::ExecutionStatus;
pub use export::{ExportFormat, ExportRequest};
pub use id::{ActionSetId, CommandId, IdError, Seq, SessionId};
pub use markdown::{Block, Inline};
pub use projection::{
    ActionView, ConversationEntry, DecisionView, NextStep, PurposeUsage, SessionProjection,
    SessionRow, SpecialistTaskView, Suggestion, UsageView, WaitKind, WaitsFor,
};
pub use receipt::{Outcome, Receipt};
pub use refusal::{MovedDuring, Refusal, RefusalClass, RunPart};
pub use review::{MemberReview, Preview, Review};
pub use shell_lines::{ShellLine, shell_lines};
pub use time::{NotTimestamp, Timestamp};
pub use wire::{Change, NewSession, Snapshot, Suspended, ToolOutput, Update};

/// Version of the event, command and receipt formats this build writes.
///
/// A reader refuses records whose `schema` is newer than this, naming both versions, rather
/// than guessing at fields it does not know.
pub const SCHEMA_VERSION: u32 = 1;
