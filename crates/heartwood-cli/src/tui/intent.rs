//! What a key asks the loop to do: the [`Intent`]s the screens produce and the loop carries out
//! through the gateway, kept apart from the screens' state so each screen names only this.

use heartwood_events::{CommandKind, SessionId};

/// Something the loop must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// Submit a command to the open session.
    Submit(CommandKind),
    /// Send typed text to the open session; the gateway decides what it means now.
    Say(String),
    /// Open a session.
    Open(SessionId),
    /// Start a new session.
    NewSession,
    /// Connect a model route.
    Connect {
        /// The preset's id, when one was chosen.
        preset: Option<&'static str>,
        /// Base URL.
        base_url: String,
        /// Model name.
        model: String,
        /// The key's environment variable, if any.
        api_key_env: Option<String>,
    },
    /// Plan startup again.
    Recheck,
    /// Show the project's skills.
    Skills,
    /// Open one skill for review.
    ShowSkill {
        /// Its name.
        name: String,
        /// Its source.
        source: String,
    },
    /// Decide on the skill under review.
    DecideSkill {
        /// What.
        decision: SkillDecision,
        /// Its name.
        name: String,
        /// Its source.
        source: String,
        /// The tree shown (what an approval binds to).
        digest: Option<String>,
    },
    /// Show the workflow catalog.
    Workflows,
    /// Start a run of a workflow in a new session.
    StartWorkflow {
        /// The definition's id.
        definition: String,
        /// The research question.
        question: String,
    },
    /// Show the project's changed files.
    Files,
    /// Show the diff of the changed file at this index of the workspace screen.
    ShowDiff(usize),
    /// Back to the session list.
    Back,
    /// Leave (a pending decision stays pending).
    Quit,
}

/// A decision on the skill under review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillDecision {
    /// Approve the exact tree shown.
    Approve,
    /// Give it to the agent.
    Activate,
    /// Stop giving it to the agent.
    Deactivate,
}
