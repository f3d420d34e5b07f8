//! [`ProjectError`]: why a project service (configuration, platform, sign-in, route checks,
//! local models, skills) failed, in words that say what to do next, and its [`ErrorKind`], the
//! kind every Heartwood error is sorted into so an interface can answer in its own terms (an
//! HTTP status, an exit code) without reading the message.

/// Why a project service failed. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The folder cannot be used as a project.
    #[error(transparent)]
    NoProject(#[from] ProjectUnusable),
    /// A configuration file is not valid TOML of the expected shape.
    #[error("{file} is not valid ({source}); {fix}")]
    Malformed {
        /// Which file, in words.
        file: String,
        /// What the parser said (boxed: it is large, and errors travel by value).
        #[source]
        source: Box<toml::de::Error>,
        /// What to do about it.
        fix: &'static str,
    },
    /// The configuration could not be written as TOML (a value TOML cannot hold).
    #[error("the configuration could not be written: {0}")]
    Encode(#[from] toml::ser::Error),
    /// There is no user configuration folder to keep this in.
    #[error(
        "no user configuration folder{purpose} (set HOME, XDG_CONFIG_HOME or HEARTWOOD_CONFIG_HOME)"
    )]
    NoConfigHome {
        /// What it was wanted for, as a phrase (` for the sign-in`), or empty.
        purpose: &'static str,
    },
    /// The model route is malformed, incomplete, or not allowed here.
    #[error(transparent)]
    Route(#[from] crate::RouteRefusal),
    /// What the request names is not there.
    #[error(transparent)]
    Absent(#[from] Absent),
    /// A price that is not one.
    #[error("{0:?} is not a price in dollars per million tokens (e.g. 0.15)")]
    NotAPrice(String),
    /// A recording's name that is not a plain file name.
    #[error("{0:?} is not a plain file name for a recording")]
    NotAFileName(String),
    /// The project's skills cannot be verified, so no agent starts on them.
    #[error("the project's skills cannot be verified ({0}); see `heartwood skills ls`")]
    SkillsUnverified(#[source] heartwood_skills::SkillError),
    /// Reading or writing a file failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being done, in words (`cannot read /p/.heartwood/config.toml`).
        doing: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A model service (or the subscription's sign-in service) failed, in the client's words.
    #[error(transparent)]
    ModelService(#[from] heartwood_agent::model::ModelError),
    /// The project's skills could not be read or were refused.
    #[error(transparent)]
    Skills(#[from] heartwood_skills::SkillError),
    /// A local model operation did not complete (nothing was published).
    #[error(transparent)]
    Models(#[from] heartwood_models::ModelError),
    /// A transfer's cancellation was not taken.
    #[error(transparent)]
    Cancel(#[from] heartwood_models::transfer::CancelRefused),
}

/// What a request names that is not there.
#[derive(Debug, thiserror::Error)]
pub enum Absent {
    /// No preset has this name.
    #[error("no preset is called {id:?}; the presets are {}", known.join(", "))]
    Preset {
        /// The name asked for.
        id: String,
        /// The presets there are.
        known: Vec<&'static str>,
    },
    /// The trusted model catalog has no such entry.
    #[error("the model catalog has no entry {id:?}{}", match catalog {
        Some(path) => format!(" ({})", path.display()),
        None => " (no catalog is installed: set HEARTWOOD_MODEL_CATALOG)".to_owned(),
    })]
    CatalogEntry {
        /// The entry asked for.
        id: String,
        /// The catalog read, if one is installed.
        catalog: Option<std::path::PathBuf>,
    },
    /// No stored model has this name.
    #[error("no model named {0} is in this project (see heartwood model list)")]
    Model(String),
    /// A model just published is not listed (the store changed underneath).
    #[error("model {0} vanished after publishing")]
    Vanished(String),
    /// The project's route is not a local model.
    #[error(
        "the project's model route is not a local model; choose one with heartwood model use NAME"
    )]
    LocalRoute,
    /// A skill a role needs is not active, approved and verified.
    #[error("the skill {0:?} is not active, approved and verified")]
    Skill(String),
    /// No sign-in was started.
    #[error("no sign-in is in progress; start one")]
    SignIn,
}

/// Why a folder cannot be used as a project.
#[derive(Debug, thiserror::Error)]
pub enum ProjectUnusable {
    /// The current directory could not be read.
    #[error("cannot use the current directory as a project: {0}")]
    CurrentDir(#[source] std::io::Error),
    /// Its path is not text.
    #[error(
        "the folder {} has a name that is not valid UTF-8; Heartwood shows and records project \
         paths as text, so move the project to a folder whose path is",
        .0.display()
    )]
    NotUtf8(std::path::PathBuf),
}

/// What kind of failure an error is, for an interface that must answer in its own terms (an
/// HTTP status, an exit code) without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No such session.
    NotFound,
    /// Another process holds the session; trying again later may succeed.
    Owned,
    /// The request itself is wrong (an id, a path, a reused command id).
    Invalid,
    /// The session's files are damaged or need recovery; nothing was done.
    Damaged,
    /// The project is not set up for this (no model route, a closed session).
    Unavailable,
    /// Reading or writing failed (a full disk, say).
    Io,
    /// The agent could not be started or driven.
    Backend,
    /// What was judged has changed since: judge it again before this can be done.
    Stale,
}

impl ProjectError {
    /// A failed file operation: `doing` says what, in words.
    pub fn io(doing: impl Into<String>, source: std::io::Error) -> Self {
        ProjectError::Io {
            doing: doing.into(),
            source,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        use heartwood_models::ModelError;
        match self {
            ProjectError::NoProject(_)
            | ProjectError::Absent(Absent::SignIn | Absent::LocalRoute)
            | ProjectError::Malformed { .. }
            | ProjectError::NoConfigHome { .. }
            | ProjectError::ModelService(_) => ErrorKind::Unavailable,
            ProjectError::Absent(_)
            | ProjectError::NotAPrice(_)
            | ProjectError::NotAFileName(_)
            | ProjectError::Encode(_)
            | ProjectError::Route(_)
            | ProjectError::SkillsUnverified(_) => ErrorKind::Invalid,
            ProjectError::Io { .. } => ErrorKind::Io,
            ProjectError::Skills(heartwood_skills::SkillError::Read { .. }) => ErrorKind::Io,
            ProjectError::Skills(_) => ErrorKind::Invalid,
            ProjectError::Cancel(e) => match e {
                heartwood_models::transfer::CancelRefused::Unknown(_) => ErrorKind::NotFound,
                heartwood_models::transfer::CancelRefused::NotRunning(_) => ErrorKind::Stale,
                heartwood_models::transfer::CancelRefused::Unwritten { .. } => ErrorKind::Io,
            },
            ProjectError::Models(e) => match e {
                ModelError::Io { .. } => ErrorKind::Io,
                ModelError::Integrity(_) => ErrorKind::Damaged,
                ModelError::Hub(_) | ModelError::Runtime(_) => ErrorKind::Unavailable,
                ModelError::Refused(_) | ModelError::Invalid(_) | ModelError::Cancelled => {
                    ErrorKind::Invalid
                }
            },
        }
    }
}
