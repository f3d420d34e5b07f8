//! [`GatewayError`]: why a gateway operation failed, in words that say what to do next, and
//! its [`ErrorKind`] (heartwood-project's, shared by every error an interface sees), so an
//! interface can answer in its own terms (an HTTP status, an exit code) without reading the
//! message.

use heartwood_audit::AuditError;
use heartwood_events::IdError;
pub use heartwood_project::ErrorKind;
use heartwood_project::ProjectError;

/// Why a gateway operation failed. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A project service (configuration, platform, sign-in, route check, local models, skills)
    /// failed.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// An id did not parse.
    #[error(transparent)]
    BadId(#[from] IdError),
    /// The session journal refused the operation.
    #[error(transparent)]
    Journal(#[from] AuditError),
    /// A workflow definition or stage this needs is not there.
    #[error(transparent)]
    Workflow(#[from] WorkflowUnavailable),
    /// The session was closed in this process; submit a new task to reopen it.
    #[error("session {0} is closed; give it a new task to reopen it")]
    Closed(heartwood_events::SessionId),
    /// The agent engine could not be started or driven.
    #[error("the agent could not run: {0}")]
    Backend(#[from] BackendFailure),
    /// A stored event could not be read by this build.
    #[error("event {event} of the session cannot be read by this build: {source}")]
    Undecodable {
        /// Its place in the session, from 1.
        event: usize,
        /// Why.
        #[source]
        source: heartwood_events::DecodeError,
    },
    /// The session's record does not verify, so it cannot be used for this.
    #[error("session {id} does not verify, so {consequence}; run `heartwood sessions verify {id}`")]
    Unverified {
        /// The session.
        id: heartwood_events::SessionId,
        /// What that rules out, as a clause (`it cannot be replayed`).
        consequence: &'static str,
    },
    /// The session asked about cannot answer this (none by that name, or it lacks what is
    /// asked of it).
    #[error(transparent)]
    Session(#[from] SessionRefusal),
    /// A correction of the latest review's finding is refused.
    #[error(transparent)]
    Correction(#[from] CorrectionRefusal),
    /// Files that were judged changed since, so what was asked would misrepresent the judgement.
    #[error("{what} changed since {since}, so {consequence}")]
    Drifted {
        /// What changed (a path, or the files of something).
        what: String,
        /// Since when, as a clause (`its checks ran`).
        since: &'static str,
        /// What that means and what to do, as a clause.
        consequence: &'static str,
    },
    /// A replay's starting files could not be written.
    #[error("could not write the files of commit {commit} into {}: {source}", dir.display())]
    ReplayFiles {
        /// The commit the original session started from.
        commit: String,
        /// Where they were to go (removed again).
        dir: std::path::PathBuf,
        /// Why.
        #[source]
        source: heartwood_workspace::WorkspaceError,
    },
    /// A project file could not be shown.
    #[error(transparent)]
    Workspace(#[from] heartwood_workspace::WorkspaceError),
    /// The files a check reads could not be read, or hold no model to draw.
    #[error(transparent)]
    Evidence(#[from] heartwood_workflow::evaluate::ReadError),
    /// The model's picture could not be drawn (the plotting library's words).
    #[error("the picture could not be drawn: {0}")]
    Drawing(#[source] plotters::drawing::DrawingAreaErrorKind<std::io::Error>),
    /// Reading or writing a file outside the session failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being done, in words (`cannot create /tmp/replay`).
        doing: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// An RO-Crate could not be written or read.
    #[error(transparent)]
    Crate(#[from] crate::provenance::CrateError),
    /// Reaching the process that serves the session failed.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// The process serving the session refused or failed the request, for this reason.
    #[error("{message}")]
    Forwarded {
        /// What kind of failure it was there.
        kind: ErrorKind,
        /// Its message there.
        message: String,
    },
}

/// Why a request about a session cannot be answered: which session was meant is unclear, or it
/// lacks what the request needs.
#[derive(Debug, thiserror::Error)]
pub enum SessionRefusal {
    /// `last` was asked for and there are none.
    #[error("this project has no sessions yet")]
    NoSessions,
    /// The start of an id that several sessions share.
    #[error("{text:?} could mean any of {}; give more of the id", joined(matches))]
    Ambiguous {
        /// What was typed.
        text: String,
        /// The sessions it could mean.
        matches: Vec<heartwood_events::SessionId>,
    },
    /// The session runs no workflow.
    #[error("session {0} runs no workflow")]
    NoWorkflow(heartwood_events::SessionId),
    /// The file is not one the session's workflow run binds.
    #[error("{path:?} is not a file this workflow run binds; its files are {}", bound.join(", "))]
    NotBound {
        /// The path asked about.
        path: String,
        /// The paths the run binds.
        bound: Vec<String>,
    },
    /// The session was never given a task, so there is nothing to replay.
    #[error("session {0} was never given a task")]
    NoTask(heartwood_events::SessionId),
    /// The session's engine recorded no model replies, so there is nothing to replay.
    #[error("session {0} has no recorded model replies to replay")]
    NoRecording(heartwood_events::SessionId),
    /// A folder to be made already exists.
    #[error("{} already exists; remove it, or pass another folder with --into", .0.display())]
    Exists(std::path::PathBuf),
}

fn joined(ids: &[heartwood_events::SessionId]) -> String {
    ids.iter()
        .map(heartwood_events::SessionId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a correction of a review's finding cannot be planned or rechecked.
#[derive(Debug, thiserror::Error)]
pub enum CorrectionRefusal {
    /// The run has not been reviewed.
    #[error("the run has no review to correct")]
    NoReview,
    /// The latest review is still running.
    #[error("the latest review is not assessed yet")]
    NotAssessed,
    /// There is no finding with that number.
    #[error("the latest review has {count} findings; there is no finding {index}")]
    NoFinding {
        /// The number asked for.
        index: usize,
        /// How many findings there are.
        count: usize,
    },
    /// The finding's check covers no output at the finding's path.
    #[error("{check} covers no output at {path}, so nothing there can be corrected")]
    CoversNothing {
        /// The check.
        check: String,
        /// The finding's path.
        path: String,
    },
    /// The destination is not a project path.
    #[error("{destination:?}: {source}")]
    BadPath {
        /// The destination given.
        destination: String,
        /// Why it is no project path.
        #[source]
        source: heartwood_workspace::PathError,
    },
    /// The destination is a file the review captured or the run binds.
    #[error(
        "{0} is a file the review captured or the run binds; a correction goes to a new path \
         and every reviewed file is kept"
    )]
    Reviewed(String),
    /// A plan's destination exists already.
    #[error("{0} exists already; a correction goes to a new path")]
    Exists(String),
    /// A recheck's destination cannot be read.
    #[error("{0} cannot be read: write the correction there first")]
    NotWritten(String),
    /// The definition has no such check over the artifact.
    #[error("no {0} check")]
    NoCheck(String),
}

/// Why a workflow definition or stage could not be used.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowUnavailable {
    /// The maintained definitions did not load (a build defect).
    #[error("the workflow catalog cannot be read: {0}")]
    Catalog(#[from] heartwood_workflow::DefinitionError),
    /// No maintained definition has this id.
    #[error("no workflow definition {id:?}; `heartwood workflow catalog` lists them")]
    NoDefinition {
        /// The id asked for.
        id: String,
    },
    /// The definition has no stage with this id.
    #[error("{definition} has no stage {stage:?}; its stages are {}", stages.join(", "))]
    NoStage {
        /// The definition.
        definition: String,
        /// The stage asked for.
        stage: String,
        /// The stages it has.
        stages: Vec<String>,
    },
    /// The run has finished (or not begun) its stages.
    #[error("the run has no current stage")]
    NoCurrentStage,
    /// The definition file has problems.
    #[error("the workflow definition {id:?} ({location}) is not valid: {}; `heartwood workflow validate FILE` lists every problem", problems.join("; "))]
    Invalid {
        /// The id asked for.
        id: String,
        /// Where the file is.
        location: String,
        /// What is wrong.
        problems: Vec<String>,
    },
    /// The definition names checks this build's registry lacks.
    #[error("{id} is not supported here: it names checks this Heartwood's registry lacks: {}", missing.join(", "))]
    Unsupported {
        /// The definition.
        id: String,
        /// The missing checks.
        missing: Vec<String>,
    },
    /// The definition's bytes changed since the run bound them.
    #[error(
        "the workflow definition {id} ({location}) changed since the run started (bound sha256 {bound}, now {now}); the run cannot continue under another definition: restore the file or start a new run"
    )]
    DefinitionChanged {
        /// The definition.
        id: String,
        /// Where the file is.
        location: String,
        /// The digest the run bound.
        bound: String,
        /// The digest now.
        now: String,
    },
}

impl WorkflowUnavailable {
    /// `definition` has no stage `stage`.
    pub(crate) fn no_stage(definition: &heartwood_workflow::Definition, stage: &str) -> Self {
        WorkflowUnavailable::NoStage {
            definition: definition.id.clone(),
            stage: stage.to_owned(),
            stages: definition.stages.iter().map(|s| s.id.clone()).collect(),
        }
    }
}

/// Why the agent engine could not be started or driven.
#[derive(Debug, thiserror::Error)]
pub enum BackendFailure {
    /// A thread or runtime the agent runs on could not be started.
    #[error("cannot start the agent's {what}: {source}")]
    Start {
        /// `thread` or `runtime`.
        what: &'static str,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The thread a command ran on ended without answering.
    #[error("the command's thread failed: {0}")]
    Joined(#[source] tokio::task::JoinError),
    /// The OpenHands agent server could not be found, installed or driven.
    #[error(transparent)]
    OpenHands(#[from] heartwood_openhands::OpenHandsError),
    /// No Python new enough to install the OpenHands agent server.
    #[error(
        "no Python 3.12 or newer on PATH; install one (e.g. `apt-get install python3.12 \
         python3.12-venv`) or pass --python PATH"
    )]
    NoPython,
    /// The engine's own log disagrees with the session's record, so it cannot continue.
    #[error(
        "the agent's own log ({log}) does not match the session's record: {detail}. The \
         session's record may still verify (`heartwood sessions verify`), but the agent cannot \
         continue from a log that disagrees with it; export the session if you need it, and \
         give the task again in a new session"
    )]
    LogMismatch {
        /// Where the engine's log is.
        log: String,
        /// Where they differ.
        detail: String,
    },
    /// The engine refused or failed.
    #[error(transparent)]
    Engine(#[from] crate::backend::BackendError),
}

/// Why a request to the process serving a session failed.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The connection broke or timed out.
    #[error("the connection to the process serving the session was lost ({0}); try again")]
    Lost(#[source] std::io::Error),
    /// Its answer was not one this build reads.
    #[error("the process serving the session answered something unreadable: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// The request could not be written as JSON.
    #[error("the request could not be encoded for the process serving the session: {0}")]
    Encode(#[source] serde_json::Error),
    /// What the process serving the session was sent is not a channel request.
    #[error("not a channel request: {0}")]
    Malformed(#[source] serde_json::Error),
    /// A command for another session reached this session's channel.
    #[error("this channel serves session {serves}, not {asked}")]
    OtherSession {
        /// The session the channel serves.
        serves: heartwood_events::SessionId,
        /// The session the command named.
        asked: heartwood_events::SessionId,
    },
    /// No thread could be started to relay the session's updates.
    #[error("cannot follow the session: {0}")]
    Follow(#[source] std::io::Error),
}

impl GatewayError {
    /// The first and last event of an append a crash interrupted, when that is what this
    /// error reports: the session is otherwise intact (the events before the append verified,
    /// and the append's own bytes, waiting in the recovery journal, continue the chain) and
    /// waits for recovery, which the next process to act on it, or `heartwood sessions
    /// recover`, performs. Distinct from damage, which nothing completes.
    pub fn interrupted_append(&self) -> Option<(u64, u64)> {
        match self {
            GatewayError::Journal(AuditError::Interrupted {
                first_seq,
                last_seq,
                ..
            }) => Some((*first_seq, *last_seq)),
            _ => None,
        }
    }

    /// Whether another process holds the session (so waiting a moment and trying again may
    /// succeed, when that process is finishing a short command).
    pub fn is_owned_elsewhere(&self) -> bool {
        self.kind() == ErrorKind::Owned
    }

    /// A failure reaching another process's channel, as the `owned` error it stands in for
    /// (so the caller waits and retries, which command ids make safe); any other failure as it
    /// is.
    pub(crate) fn or_owned(self, owned: GatewayError) -> GatewayError {
        match self {
            GatewayError::Channel(_) => owned,
            other => other,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            GatewayError::BadId(_) | GatewayError::Workspace(_) | GatewayError::Evidence(_) => {
                ErrorKind::Invalid
            }
            GatewayError::Drawing(_) => ErrorKind::Backend,
            GatewayError::Channel(
                ChannelError::Malformed(_) | ChannelError::OtherSession { .. },
            ) => ErrorKind::Invalid,
            GatewayError::Io { .. } | GatewayError::Channel(_) => ErrorKind::Io,
            GatewayError::Crate(crate::provenance::CrateError::Exists(_)) => ErrorKind::Invalid,
            GatewayError::Crate(crate::provenance::CrateError::Unreadable(_)) => ErrorKind::Damaged,
            GatewayError::Crate(_) => ErrorKind::Io,
            GatewayError::Session(SessionRefusal::NoSessions) => ErrorKind::NotFound,
            GatewayError::Session(_) | GatewayError::Correction(_) => ErrorKind::Invalid,
            GatewayError::Project(e) => e.kind(),
            GatewayError::Forwarded { kind, .. } => *kind,
            GatewayError::Workflow(_) | GatewayError::Closed(_) => ErrorKind::Unavailable,
            GatewayError::ReplayFiles { .. } => ErrorKind::Io,
            GatewayError::Drifted { .. } => ErrorKind::Stale,
            GatewayError::Backend(_) => ErrorKind::Backend,
            GatewayError::Undecodable { .. } | GatewayError::Unverified { .. } => {
                ErrorKind::Damaged
            }
            GatewayError::Journal(e) => match e {
                AuditError::NoSession { .. } => ErrorKind::NotFound,
                AuditError::Owned { .. } => ErrorKind::Owned,
                AuditError::CommandIdReused { .. } | AuditError::TooLarge { .. } => {
                    ErrorKind::Invalid
                }
                AuditError::Io { .. }
                | AuditError::WriterFailed { .. }
                | AuditError::StoreUnavailable { .. } => ErrorKind::Io,
                AuditError::LeaseLost { .. } => ErrorKind::Owned,
                AuditError::FilesOnly { .. } | AuditError::AlreadyExists { .. } => {
                    ErrorKind::Invalid
                }
                AuditError::Damaged { .. }
                | AuditError::Interrupted { .. }
                | AuditError::CheckpointMismatch { .. }
                | AuditError::BadFile { .. }
                | AuditError::Encode(_) => ErrorKind::Damaged,
            },
        }
    }
}

/// The events a reader gave, or which one this build cannot read and why.
pub(crate) fn decoded(
    events: Vec<Result<heartwood_events::RecordedEvent, heartwood_events::DecodeError>>,
) -> Result<Vec<heartwood_events::RecordedEvent>, GatewayError> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            e.map_err(|source| GatewayError::Undecodable {
                event: i + 1,
                source,
            })
        })
        .collect()
}
