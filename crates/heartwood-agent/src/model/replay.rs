//! Model exchanges, recorded and replayed.
//!
//! Every model call a conversation makes is recorded in its own persistence (`exchanges.jsonl`
//! beside the log): a digest of the request's messages, and the reply (text, tool calls, usage).
//! A route with a recording serves those replies in order instead of calling a service, with
//! the text streamed to the same token callback and the same usage, and it refuses to go on the
//! moment a request differs from the recorded one: a different tool result means the model would
//! have seen something else, and the rest of the recording no longer applies.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ChatMessage, ModelError, ModelReply, ToolCall, Usage};

/// The name of the recording file in a conversation's directory.
pub const EXCHANGES_FILE: &str = "exchanges.jsonl";

/// One model call as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// Position among the conversation's model calls, from 1.
    pub call: u64,
    /// What the call was for: `agent`, `condenser`.
    pub purpose: String,
    /// SHA-256 of the request's messages (their JSON), so a replay can tell when it diverges.
    pub request_sha256: String,
    /// How many messages the request held.
    pub request_messages: usize,
    /// The provider's response id.
    pub response_id: String,
    /// The reply's text.
    pub content: Option<String>,
    /// The reply's tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// The call's usage.
    pub usage: Usage,
}

/// The digest a recording keeps of a request's messages.
pub fn request_digest(messages: &[ChatMessage]) -> String {
    let bytes = serde_json::to_vec(messages).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads a recording.
pub fn load(path: &Path) -> Result<Vec<Exchange>, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::Replay {
        detail: format!("cannot read the recording {}: {e}", path.display()),
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| ModelError::Replay {
                detail: format!(
                    "line {} of {} is not a model exchange: {e}",
                    i + 1,
                    path.display()
                ),
            })
        })
        .collect()
}

/// Appends exchanges to a conversation's recording.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    calls: u64,
}

impl Recorder {
    /// The recorder of the conversation persisted in `dir`, continuing its numbering.
    pub fn open(dir: &Path) -> Self {
        let path = dir.join(EXCHANGES_FILE);
        let calls = std::fs::read_to_string(&path)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count() as u64)
            .unwrap_or(0);
        Recorder { path, calls }
    }

    /// How many calls are recorded.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Records one call. A recording that cannot be written makes replay impossible but must
    /// not stop the research, so the error is returned for the caller to report.
    pub fn record(
        &mut self,
        purpose: &str,
        messages: &[ChatMessage],
        reply: &ModelReply,
    ) -> std::io::Result<()> {
        self.calls += 1;
        let exchange = Exchange {
            call: self.calls,
            purpose: purpose.to_owned(),
            request_sha256: request_digest(messages),
            request_messages: messages.len(),
            response_id: reply.response_id.clone(),
            content: reply.content.clone(),
            tool_calls: reply.tool_calls.clone(),
            usage: reply.usage,
        };
        let mut line = serde_json::to_vec(&exchange).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = crate::private::append(&self.path)?;
        file.write_all(&line)
    }
}

/// Serves a recording's replies in order.
#[derive(Debug, Clone)]
pub struct Replayer {
    exchanges: Arc<Vec<Exchange>>,
    next: Arc<Mutex<usize>>,
}

impl Replayer {
    /// A replayer over `exchanges`, starting after the first `position` of them (a conversation
    /// reopened mid-replay continues where it was).
    pub fn new(exchanges: Vec<Exchange>, position: usize) -> Self {
        Replayer {
            exchanges: Arc::new(exchanges),
            next: Arc::new(Mutex::new(position)),
        }
    }

    /// Continues after the first `position` exchanges.
    pub fn set_position(&self, position: usize) {
        *self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = position;
    }

    /// The recorded reply to `messages`, its text streamed to `on_token`; an error when the
    /// request is not the recorded one or the recording is used up.
    pub fn reply(
        &self,
        messages: &[ChatMessage],
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelReply, ModelError> {
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(exchange) = self.exchanges.get(*next) else {
            return Err(ModelError::Replay {
                detail: format!(
                    "the recording holds {} model calls and the run asked for another; the run \
                     went further than the recorded session did",
                    self.exchanges.len()
                ),
            });
        };
        let digest = request_digest(messages);
        if digest != exchange.request_sha256 {
            return Err(ModelError::Replay {
                detail: format!(
                    "the run diverged from the recording at model call {}: the request (\
                     {} messages) differs from the recorded one ({} messages), so a tool result \
                     or message before it was not what the recorded model saw; nothing after \
                     this point is replayed",
                    exchange.call,
                    messages.len(),
                    exchange.request_messages
                ),
            });
        }
        *next += 1;
        if let Some(text) = &exchange.content {
            for piece in text.split_inclusive(' ') {
                on_token(piece);
            }
        }
        Ok(ModelReply {
            response_id: exchange.response_id.clone(),
            content: exchange.content.clone(),
            tool_calls: exchange.tool_calls.clone(),
            usage: exchange.usage,
            finish_reason: Some(if exchange.tool_calls.is_empty() {
                "stop".to_owned()
            } else {
                "tool_calls".to_owned()
            }),
        })
    }
}
