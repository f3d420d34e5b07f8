//! The OpenAI chat-completions wire format (the part Heartwood uses), as our own serde types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// Instructions.
    System {
        /// The text.
        content: String,
    },
    /// The researcher (or the engine speaking for them).
    User {
        /// The text.
        content: String,
    },
    /// The model's earlier reply.
    Assistant {
        /// Its text, if any.
        #[serde(default)]
        content: Option<String>,
        /// Its tool calls.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result for one call.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The observation text.
        content: String,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the tool result must name.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

/// The function half of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool name.
    pub name: String,
    /// Arguments as JSON text (which may not be valid JSON).
    pub arguments: String,
}

fn function_kind() -> String {
    "function".to_owned()
}

impl ToolCall {
    /// A call of `name` with JSON-text `arguments`.
    pub fn new(id: &str, name: &str, arguments: &str) -> Self {
        ToolCall {
            id: id.to_owned(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            },
        }
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Name, description and JSON Schema of the parameters.
    pub function: FunctionSpec,
}

/// The function half of a [`ToolSpec`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionSpec {
    /// The tool name (Heartwood's own tools' names are static; a relayed request's are not).
    pub name: std::borrow::Cow<'static, str>,
    /// What the tool does, for the model.
    pub description: std::borrow::Cow<'static, str>,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

/// Token counts of one call or accumulated over many: the vocabulary's figures, which the
/// sessions' events carry too (the provider's own JSON is [`WireUsage`], converted into these).
pub use heartwood_events::UsageFigures as Usage;

/// The request body.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "<[ToolSpec]>::is_empty")]
    pub tools: &'a [ToolSpec],
    pub max_tokens: u64,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
}

/// A non-streamed response.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatCompletion {
    #[serde(default)]
    pub id: String,
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    pub message: ReplyMessage,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReplyMessage {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
}

/// One streamed chunk.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatChunk {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub delta: Delta,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    pub index: usize,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Usage as providers report it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CompletionDetails {
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl WireUsage {
    /// Usage from plain counts (the Responses API names them differently).
    pub fn from_counts(prompt: u64, completion: u64, cached: u64, reasoning: u64) -> Self {
        WireUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            prompt_tokens_details: Some(PromptDetails {
                cached_tokens: cached,
            }),
            completion_tokens_details: Some(CompletionDetails {
                reasoning_tokens: reasoning,
            }),
        }
    }

    pub fn into_usage(self, prices: Option<crate::model::Prices>) -> Usage {
        let cost_micros = prices.map_or(0, |p| {
            (self.prompt_tokens * p.prompt_micros_per_mtok
                + self.completion_tokens * p.completion_micros_per_mtok)
                / 1_000_000
        });
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cache_read_tokens: self.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            reasoning_tokens: self
                .completion_tokens_details
                .map_or(0, |d| d.reasoning_tokens),
            cost_micros,
            calls: 1,
            priced_calls: u64::from(prices.is_some()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Prices;

    #[test]
    fn provider_usage_maps_to_ours_with_cost_from_prices() {
        let wire: WireUsage = serde_json::from_value(serde_json::json!({
            "prompt_tokens": 2_000_000, "completion_tokens": 500_000,
            "prompt_tokens_details": {"cached_tokens": 1_000},
            "completion_tokens_details": {"reasoning_tokens": 300}
        }))
        .expect("usage");
        let prices = Prices {
            prompt_micros_per_mtok: 2_500_000,
            completion_micros_per_mtok: 10_000_000,
        };
        let usage = wire.into_usage(Some(prices));
        assert_eq!(
            (usage.cache_read_tokens, usage.reasoning_tokens, usage.calls),
            (1_000, 300, 1)
        );
        // 2M prompt tokens at 2.5 per million plus 0.5M completion at 10 per million = 10 units.
        assert_eq!(usage.cost_micros, 10_000_000);
        let mut total = Usage::default();
        total.add(&usage);
        total.add(&usage);
        assert_eq!((total.prompt_tokens, total.calls), (4_000_000, 2));
    }
}
