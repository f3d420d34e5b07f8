//! How a conversation is configured.

use std::path::PathBuf;

use super::{CondenserConfig, ConfirmationPolicy};
use crate::model::ModelRoute;
use crate::tools::TerminalLimits;

/// Everything a conversation is configured with.
#[derive(Debug, Clone)]
pub struct ConversationConfig {
    /// The model route.
    pub route: ModelRoute,
    /// The project the tools work in.
    pub project: PathBuf,
    /// Where the conversation persists (its log and task plan).
    pub dir: PathBuf,
    /// When action sets wait for a person.
    pub policy: ConfirmationPolicy,
    /// The system prompt.
    pub system_prompt: String,
    /// Most model calls in one run.
    pub max_iterations: u32,
    /// The terminal's bounds.
    pub terminal: TerminalLimits,
    /// Condensation settings; `None` never condenses.
    pub condenser: Option<CondenserConfig>,
    /// The JSON Schema of the `outcome` that `finish` must carry, for conversations that
    /// report a structured result (workflow stages); `None` for ordinary tasks.
    pub finish_outcome: Option<serde_json::Value>,
    /// The advisory specialists the `task` tool offers (none: no `task` tool).
    pub specialists: Vec<SpecialistConfig>,
    /// Directories outside the project the file editor reaches by absolute path (active
    /// skills' verified copies, read-only; data mounts, writable when declared so).
    pub outside: Vec<crate::tools::OutsideDirectory>,
    /// The environment the terminal's shell starts with (the route's credential is always
    /// left out as well).
    pub tool_env: crate::tools::ToolEnvironment,
}

/// One advisory specialist role: a child conversation, tool-free, on the parent's model route.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecialistConfig {
    /// The role id the `task` tool names.
    pub role: String,
    /// What it does (shown to the agent).
    pub description: String,
    /// Its instructions.
    pub system_prompt: String,
    /// Most model calls per task.
    pub max_iterations: u32,
    /// Most tokens per task (prompt and completion together).
    pub max_tokens: u64,
    /// The JSON Schema of the structured result its `finish` must carry; `None` for a
    /// plain-text answer.
    pub result_schema: Option<serde_json::Value>,
}

impl ConversationConfig {
    /// Defaults: always confirm, 100 calls per run, condense past 120 events keeping the first 2.
    pub fn new(route: ModelRoute, project: PathBuf, dir: PathBuf) -> Self {
        ConversationConfig {
            route,
            project,
            dir,
            policy: ConfirmationPolicy::AlwaysConfirm,
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            max_iterations: 100,
            terminal: TerminalLimits::default(),
            condenser: Some(CondenserConfig {
                max_events: 120,
                keep_first: 2,
            }),
            finish_outcome: None,
            specialists: Vec::new(),
            outside: Vec::new(),
            tool_env: crate::tools::ToolEnvironment::default(),
        }
    }
}

const DEFAULT_SYSTEM_PROMPT: &str = "You are a careful research engineer working in the researcher's project \
directory. Use the tools to inspect data, run commands and edit files. Keep a task plan with task_tracker for \
multi-step work. Every set of actions you propose is reviewed by the researcher before it runs; a rejected action \
did not run, so adjust your approach. Call finish with a short summary when the task is done.";
