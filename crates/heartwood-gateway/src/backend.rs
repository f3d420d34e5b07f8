//! The agent-backend port: what the gateway needs from an engine, in Heartwood's vocabulary.
//!
//! The gateway drives every engine through [`AgentBackend`] and hears from it through a
//! [`BackendSink`]; it never sees an engine's own event types. A backend keeps its own log
//! (the engine's private state, beside the journal) and translates each entry of that log into
//! Heartwood [`Event`]s itself, naming the entry each came from ([`Origin`]), so the gateway
//! can reconcile the journal with the backend by identity after a crash. The native engine
//! (`native`) is the first implementation; an OpenHands bridge is meant to be the
//! second, and nothing in the gateway would change for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use camino::Utf8PathBuf;
use heartwood_events::{ActionPolicy, ActionProposal, Event, Origin};

use crate::config::RouteConfig;

/// A boxed future, so the port stays object-safe.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a backend could not do what it was asked; every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The engine's server process stopped; the next command starts it again.
    #[error(
        "the OpenHands agent server stopped unexpectedly (its log: {log}); the next command \
         starts it again"
    )]
    ServerStopped {
        /// Where its log is.
        log: String,
    },
    /// The engine failed, in its own terms.
    #[error(transparent)]
    Engine(Box<dyn std::error::Error + Send + Sync>),
}

impl BackendError {
    /// The engine's own error.
    pub fn engine(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        BackendError::Engine(Box::new(error))
    }
}

/// Why a durability point made nothing durable; the backend stops before acting.
#[derive(Debug, thiserror::Error)]
pub enum NotDurable {
    /// The session's owner let it go (it was closed or its process is shutting down).
    #[error("the session is no longer served; open it again to continue the run")]
    NotServed,
    /// The engine's log gained bytes that are not text, so the journal cannot carry them.
    #[error(
        "the engine's log holds bytes that are not UTF-8; the run stopped before acting (the \
         session's journal is intact)"
    )]
    NotText,
    /// The journal's append failed; the worker was paused.
    #[error(transparent)]
    Journal(Box<crate::GatewayError>),
}

/// One entry of the backend's own log, translated: the Heartwood events it stands for (often
/// one, sometimes none or several) and the entry they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendEntry {
    /// The log entry and the digest of its stored form.
    pub origin: Origin,
    /// What the entry means in Heartwood's vocabulary.
    pub events: Vec<Event>,
}

/// The actions a backend waits on a decision for.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingActions {
    /// The backend's ids for the waiting actions, in proposal order.
    pub action_ids: Vec<u64>,
    /// The actions as the researcher reviews them.
    pub members: Vec<ActionProposal>,
}

/// Where a backend learns what it needs to open a session's conversation.
#[derive(Debug, Clone)]
pub struct BackendSpec {
    /// The model route the agent uses.
    pub route: RouteConfig,
    /// The project the agent works in.
    pub project: Utf8PathBuf,
    /// The session's directory for the backend's own state (`backend/` beside the journal).
    pub state_dir: Utf8PathBuf,
    /// Which actions wait for the researcher.
    pub policy: ActionPolicy,
    /// The JSON Schema of the structured outcome `finish` must carry (workflow sessions).
    pub finish_outcome: Option<serde_json::Value>,
    /// The advisory specialists the agent may consult (registered roles of the catalog).
    pub specialists: Vec<heartwood_workflow::specialists::Specialist>,
    /// The skills revalidated for this start: active, approved at their exact tree, verified
    /// and unrevoked.
    pub skills: crate::skills::AgentSkills,
    /// The environment the agent's terminal tool may see (the route's credential is left out
    /// besides).
    pub tool_env: heartwood_agent::tools::ToolEnvironment,
    /// Directories outside the project the agent may reach (the platform's and the project's
    /// data mounts that are present).
    pub data_mounts: Vec<heartwood_agent::tools::OutsideDirectory>,
}

/// What a backend reports while it runs. Implemented by the gateway for each session; a
/// backend holds it for as long as it runs and needs nothing else of the gateway.
pub trait BackendSink: Send + Sync {
    /// An entry was appended to the backend's log. Its events are numbered and shown now and
    /// made durable at the next [`BackendSink::durable`].
    fn entry(&self, entry: BackendEntry);
    /// A durability point (an action is about to start, a set about to wait, a call about to
    /// return): the journal catches up in one append. `log` is what the backend's own log
    /// gained since the last point when the backend leaves its durability to the journal (one
    /// sync a step, not two); `None` when the log is durable already. `Err` says why nothing
    /// is durable, and the backend must stop before acting.
    fn durable(&self, log: Option<heartwood_audit::BackendBytes>) -> Result<(), NotDurable>;
    /// Streamed model text, shown and never recorded.
    fn token(&self, text: &str);
    /// Complete lines a running action printed, shown and never recorded (its record keeps
    /// the output when it ends).
    fn output(&self, action_id: u64, text: &str);
}

/// Handles that act on a running backend from outside its task (thread-safe, cheap).
pub trait BackendControls: Send + Sync {
    /// Asks the agent to pause at its next step.
    fn pause(&self);
    /// Asks the agent to pause before its next model call, once the actions already allowed
    /// have run (a workflow stage that used up its budget).
    fn pause_before_model(&self);
    /// Withdraws a pause (or an interruption) no run acted on yet.
    fn withdraw_pause(&self);
    /// Stops now: kills the running tool (its whole process group), records its action with
    /// the partial output, and pauses.
    fn interrupt(&self);
    /// Gives the agent guidance at its next step (or, if it has just finished, continues the
    /// run with it).
    fn guide(&self, text: &str);
}

/// How the run a backend was asked for stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStop {
    /// The agent finished the task (or has nothing to do).
    Finished,
    /// Actions wait for a decision ([`AgentBackend::pending`]).
    WaitingForDecision,
    /// The agent paused between steps.
    Paused,
    /// The agent stopped on an error or because it was stuck; its log says why.
    Stopped,
}

/// One session's agent engine.
///
/// Calls come from one task at a time (the session's worker); [`BackendControls`] come from
/// anywhere. Every method that changes the conversation writes the backend's log durably
/// before it returns.
pub trait AgentBackend: Send {
    /// The researcher's messages the backend has received, in order.
    fn received_inputs(&self) -> Vec<String>;
    /// The last log entry that was already in the log when the backend was opened (0 for
    /// none); entries after it were written by this process, opening included.
    fn restored_upto(&self) -> u64;
    /// The digest of the stored form of log entry `id`, if the log holds it.
    fn entry_digest(&self, id: u64) -> Option<String>;
    /// Every log entry not yet returned by this method or given to the sink, translated in
    /// order (once: the translation may depend on earlier entries). Called right after opening
    /// it returns exactly what the log held then.
    fn take_entries(&mut self) -> Vec<BackendEntry>;
    /// Whether a run is in progress by the backend's own state (not the journal's).
    fn is_running(&self) -> bool;
    /// The actions waiting on a decision, if any.
    fn pending(&self) -> Option<PendingActions>;

    /// Where the backend reports entries, durability points and tokens from now on.
    fn attach(&mut self, sink: Arc<dyn BackendSink>);
    /// Handles for pause and guidance.
    fn controls(&self) -> Arc<dyn BackendControls>;
    /// Which actions wait for the researcher from now on.
    fn set_policy(&mut self, policy: ActionPolicy);
    /// Gives the agent the researcher's message (a task or guidance).
    fn send_message(&mut self, text: &str) -> Result<(), BackendError>;
    /// Allows every pending action once.
    fn approve_pending(&mut self) -> Result<(), BackendError>;
    /// Whether the pending set is an advisory batch this engine can run at once (two or more
    /// distinct specialist tasks of tool-free roles, none started). An engine that runs every
    /// set in order says no.
    fn pending_is_advisory_batch(&self) -> bool {
        false
    }
    /// Allows every pending action once, running an advisory batch up to `at_most` at once;
    /// any other set, or an engine that cannot, runs in order.
    fn approve_pending_in_parallel(&mut self, at_most: usize) -> Result<(), BackendError> {
        let _ = at_most;
        self.approve_pending()
    }
    /// Rejects every pending action, with the researcher's reason.
    fn reject_pending(&mut self, reason: &str) -> Result<(), BackendError>;
    /// Runs until the agent finishes, waits for a decision, pauses or stops.
    fn run(&mut self) -> BackendFuture<'_, Result<RunStop, BackendError>>;
    /// Closes the conversation (stops its tools) and releases its state.
    fn close(self: Box<Self>) -> BackendFuture<'static, ()>;
    /// Where the backend's own log lives, for messages.
    fn log_location(&self) -> String;
}

/// Opens a session's backend.
pub trait BackendFactory: Send + Sync {
    /// The backend's name, recorded in each session's metadata.
    fn name(&self) -> &'static str;
    /// Opens (or creates) the conversation kept in `spec.state_dir`.
    fn open(&self, spec: BackendSpec) -> Result<Box<dyn AgentBackend>, BackendError>;
}
