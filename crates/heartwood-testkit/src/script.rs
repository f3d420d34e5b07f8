//! The script a [`crate::ScriptedModelServer`] follows, usually loaded from
//! `fixtures/model-scripts/<name>.json`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The replies, in order: request `n` gets turn `n`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns.
    pub turns: Vec<Turn>,
}

/// One reply.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Assistant text.
    #[serde(default)]
    pub content: Option<String>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Token usage to report (streamed in the final chunk).
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
    /// A fault to inject instead of (or while) replying.
    #[serde(default)]
    pub fault: Option<Fault>,
}

/// A scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool name.
    pub name: String,
    /// Arguments as a JSON value; sent as its JSON text.
    #[serde(default)]
    pub arguments: Value,
    /// Arguments sent verbatim instead (for malformed JSON).
    #[serde(default)]
    pub raw_arguments: Option<String>,
}

/// Token counts to report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// A fault to inject.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Answer with this HTTP status and error body; the turn is used up.
    Status {
        /// The status code.
        status: u16,
        /// The error body (OpenAI style `{"error": {...}}`); a generic one if absent.
        #[serde(default)]
        body: Option<Value>,
        /// A `Retry-After` header, in seconds.
        #[serde(default)]
        retry_after_secs: Option<u64>,
    },
    /// Stream this many events of the reply, then half of the next one, then end the body.
    CutAfterChunks(usize),
    /// Wait this long before each streamed event (unstreamed: as long as all of them, before
    /// the answer).
    ChunkDelayMs(u64),
    /// Answer 200 with a body that is not a chat completion.
    Garbage,
    /// Accept the request and never answer (a service that hangs).
    Silent,
}

impl Script {
    /// Loads `fixtures/model-scripts/<name>.json` from the workspace.
    pub fn fixture(name: &str) -> Script {
        let path = fixtures_dir().join(format!("{name}.json"));
        Script::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Loads a script file.
    pub fn load(path: &Path) -> Result<Script, String> {
        let text = std::fs::read(path).map_err(|e| e.to_string())?;
        serde_json::from_slice(&text).map_err(|e| e.to_string())
    }

    /// A script of the given turns.
    pub fn of(turns: Vec<Turn>) -> Script {
        Script { turns }
    }
}

impl Turn {
    /// A plain assistant message.
    pub fn text(content: &str) -> Turn {
        Turn {
            content: Some(content.to_owned()),
            ..Turn::default()
        }
    }

    /// A reply that calls these tools.
    pub fn calls(calls: &[(&str, Value)]) -> Turn {
        Turn {
            tool_calls: calls
                .iter()
                .map(|(name, arguments)| ScriptedCall {
                    name: (*name).to_owned(),
                    arguments: arguments.clone(),
                    raw_arguments: None,
                })
                .collect(),
            ..Turn::default()
        }
    }

    /// A turn that is only a fault.
    pub fn fault(fault: Fault) -> Turn {
        Turn {
            fault: Some(fault),
            ..Turn::default()
        }
    }

    /// This turn with a fault added.
    pub fn with_fault(mut self, fault: Fault) -> Turn {
        self.fault = Some(fault);
        self
    }

    /// This turn with usage added.
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Turn {
        self.usage = Some(ScriptedUsage {
            prompt_tokens,
            completion_tokens,
            ..ScriptedUsage::default()
        });
        self
    }
}

/// `<workspace>/fixtures/model-scripts`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/model-scripts")
}
