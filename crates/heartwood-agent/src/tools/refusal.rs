//! Why a tool refused a call, as values: the model reads each one's text as the call's
//! observation, so every message says what was wrong and what to send instead.

use std::path::PathBuf;

/// Why the host of a conversation could not make its log durable, in the host's own terms (the
/// engine knows nothing of the host's journal, so it carries the host's error as it is).
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// Why a path the model gave may not be used.
#[derive(Debug, thiserror::Error)]
pub enum PathRefused {
    /// Empty, or holding a NUL byte.
    #[error("the path is empty or contains a NUL byte")]
    Empty,
    /// Absolute, and not under the project's root.
    #[error("{given} is outside the project ({}); use a path inside it", root.display())]
    OutsideProject {
        /// The path as given.
        given: String,
        /// The project's root.
        root: PathBuf,
    },
    /// Names `.heartwood/` or `.git/` on its way.
    #[error("{given} is inside {part}, which the tools may not touch")]
    Reserved {
        /// The path as given.
        given: String,
        /// The reserved directory it names.
        part: String,
    },
    /// Its `..` climb above the project's root.
    #[error("{0} leads outside the project")]
    LeadsOutside(String),
    /// A root or prefix component in a relative spelling.
    #[error("{0} is not a path inside the project")]
    NotInside(String),
    /// Its existing part could not be resolved.
    #[error("cannot resolve {given}: {source}")]
    Unresolvable {
        /// The path as given.
        given: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A symbolic link on the way leads out of the project.
    #[error("{0} leads outside the project through a symbolic link")]
    ThroughLink(String),
    /// A symbolic link on the way leads into `.heartwood/` or `.git/`.
    #[error("{0} leads into Heartwood's or Git's private state")]
    PrivateState(String),
    /// An edit inside a directory declared read-only.
    #[error("{given} is read-only ({what}); view it, do not edit it")]
    ReadOnly {
        /// The path as given.
        given: String,
        /// What the directory is.
        what: String,
    },
    /// `.` or `..` in a path outside the project.
    #[error("{0} must be a plain path (no `.` or `..`)")]
    NotPlain(String),
    /// A symbolic link leads out of a declared outside directory.
    #[error("{given} leads out of {what}")]
    LeavesDirectory {
        /// The path as given.
        given: String,
        /// What the directory is.
        what: String,
    },
    /// A path in a declared outside directory that cannot be read.
    #[error("cannot read {given}: {source}")]
    Unreadable {
        /// The path as given.
        given: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A resolved path under no directory the tools know.
    #[error("{} is outside the project", .0.display())]
    Unplaced(PathBuf),
    /// The directory a path lies in could not be opened.
    #[error("cannot open {}: {source}", base.display())]
    CannotOpen {
        /// The directory.
        base: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// Why the file editor refused a call.
#[derive(Debug, thiserror::Error)]
pub enum EditRefused {
    /// The path may not be used.
    #[error(transparent)]
    Path(#[from] PathRefused),
    /// A command came without an argument it needs.
    #[error("`{command}` needs `{argument}`")]
    Missing {
        /// The command.
        command: &'static str,
        /// The argument it needs.
        argument: &'static str,
    },
    /// `create` on a path that exists.
    #[error("{0} already exists; use `str_replace` or `insert` to change it")]
    Exists(String),
    /// A file operation failed.
    #[error("cannot {action} {shown}: {source}")]
    Io {
        /// What the editor was doing, as a verb phrase.
        action: &'static str,
        /// The path as shown.
        shown: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `undo_edit` with nothing to undo.
    #[error("there is no edit of {0} to undo")]
    NothingToUndo(String),
    /// `str_replace` with an empty `old_str`.
    #[error("`str_replace` needs a non-empty `old_str`")]
    EmptyOldStr,
    /// `old_str` is not in the file.
    #[error(
        "`old_str` does not occur in {0}; view the file and copy the text exactly, including whitespace"
    )]
    OldStrMissing(String),
    /// `old_str` is in the file more than once.
    #[error(
        "`old_str` occurs {count} times in {shown} (lines {lines}); include more surrounding text so it matches exactly once"
    )]
    OldStrRepeated {
        /// The path as shown.
        shown: String,
        /// How many times.
        count: usize,
        /// Where, as comma-separated line numbers.
        lines: String,
    },
    /// `insert_line` past the file's end.
    #[error("{shown} has {lines} lines; `insert_line` must be between 0 and {lines}")]
    LineOutOfRange {
        /// The path as shown.
        shown: String,
        /// The file's line count.
        lines: usize,
    },
    /// Not a regular file.
    #[error("{0} is not a regular file")]
    NotFile(String),
    /// Over the editor's size limit.
    #[error("{shown} is over the editor's {limit}-byte limit; use the terminal")]
    TooLarge {
        /// The path as shown.
        shown: String,
        /// The limit.
        limit: u64,
    },
    /// New content over the editor's size limit.
    #[error("the new content is over the editor's {0}-byte limit")]
    ContentTooLarge(u64),
    /// Not UTF-8 text.
    #[error("{0} is not UTF-8 text; use the terminal to inspect it")]
    NotText(String),
    /// A `view_range` outside the file.
    #[error("`view_range` must be [start, end] with 1 <= start <= end <= {0} (or end -1)")]
    ViewRange(usize),
    /// A `view_range` that is not two numbers.
    #[error("`view_range` must have exactly two numbers")]
    ViewRangeShape,
}

/// Why a tool call's arguments were refused before any tool ran.
#[derive(Debug, thiserror::Error)]
pub enum CallRefused {
    /// The arguments are not JSON.
    #[error(
        "the arguments for `{tool}` are not valid JSON ({source}); send a JSON object that fits the tool's schema"
    )]
    NotJson {
        /// The tool.
        tool: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The arguments are JSON but not an object.
    #[error("the arguments for `{0}` must be a JSON object")]
    NotObject(String),
    /// `summary` is not a string.
    #[error("`summary` for `{0}` must be a string: about ten words saying what this action does")]
    Summary(String),
    /// `security_risk` is not one of the four ratings.
    #[error("`security_risk` for `{0}` must be one of LOW, MEDIUM, HIGH or UNKNOWN")]
    SecurityRisk(String),
    /// The arguments do not fit the tool's schema.
    #[error("the arguments do not fit `{tool}`'s schema: {source}")]
    Unfit {
        /// The tool.
        tool: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// No tool has this name.
    #[error(
        "there is no tool named `{0}`; the tools are terminal, file_editor, task_tracker, think, task (where specialists are offered) and finish"
    )]
    NoSuchTool(String),
    /// An action id the conversation's log does not hold.
    #[error("action {0} is not in the log")]
    NotInLog(u64),
}

/// Why the terminal refused a command before it reached the shell.
#[derive(Debug, thiserror::Error)]
pub enum CommandRefused {
    /// The syntax check itself could not run.
    #[error("could not check the command's syntax: {0}")]
    Unchecked(Box<dyn std::error::Error + Send + Sync>),
    /// bash cannot parse the command.
    #[error("bash cannot parse the command: {0}")]
    Unparsable(String),
}
