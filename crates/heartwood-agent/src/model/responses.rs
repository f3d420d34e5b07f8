//! The Responses API, as a ChatGPT subscription serves it: the conversation as input items, and
//! the streamed events folded into the same reply the chat-completions stream gives.

use serde_json::{Value, json};

use super::stream::{Assembler, Step};
use super::{ChatMessage, ModelError, ToolSpec};

/// The request body: system messages become the instructions, the rest input items; tools are
/// flat function definitions. Nothing is stored at the provider (`store: false`).
pub(crate) fn request_body(model: &str, messages: &[ChatMessage], tools: &[ToolSpec]) -> Value {
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    for message in messages {
        match message {
            ChatMessage::System { content } => instructions.push(content.as_str()),
            ChatMessage::User { content } => input.push(json!({
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": content}],
            })),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    input.push(json!({
                        "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                for call in tool_calls {
                    input.push(json!({
                        "type": "function_call", "call_id": call.id,
                        "name": call.function.name, "arguments": call.function.arguments,
                    }));
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => input.push(json!({
                "type": "function_call_output", "call_id": tool_call_id, "output": content,
            })),
        }
    }
    let tools: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.function.name,
                "description": tool.function.description,
                "parameters": tool.function.parameters,
            })
        })
        .collect();
    json!({
        "model": model,
        "instructions": instructions.join("\n\n"),
        "input": input,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "stream": true,
        "store": false,
    })
}

impl Assembler {
    /// Folds in one Responses API event: text deltas, finished function calls, and the final
    /// `response.completed` (with usage), which ends the reply; a failure event is an error.
    pub(crate) fn accept_response_event(
        &mut self,
        data: &str,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Step, ModelError> {
        let event: Value = serde_json::from_str(data).map_err(|e| ModelError::Malformed {
            detail: format!("a streamed event is not JSON: {e}"),
        })?;
        match event["type"].as_str().unwrap_or_default() {
            "response.created" => {
                self.set_response_id(event["response"]["id"].as_str().unwrap_or_default());
            }
            "response.output_text.delta" => {
                self.push_text(event["delta"].as_str().unwrap_or_default(), on_token);
            }
            "response.output_item.done" if event["item"]["type"] == "function_call" => {
                let item = &event["item"];
                self.push_call(
                    item["call_id"].as_str().unwrap_or_default(),
                    item["name"].as_str().unwrap_or_default(),
                    item["arguments"].as_str().unwrap_or_default(),
                );
            }
            "response.completed" => {
                let response = &event["response"];
                self.set_response_id(response["id"].as_str().unwrap_or_default());
                let usage = &response["usage"];
                if usage.is_object() {
                    let count = |v: &Value| v.as_u64().unwrap_or(0);
                    self.set_usage(super::wire::WireUsage::from_counts(
                        count(&usage["input_tokens"]),
                        count(&usage["output_tokens"]),
                        count(&usage["input_tokens_details"]["cached_tokens"]),
                        count(&usage["output_tokens_details"]["reasoning_tokens"]),
                    ));
                }
                self.finish_with("completed");
                return Ok(Step::Done);
            }
            "response.failed" | "response.incomplete" | "error" => {
                let message = event["response"]["error"]["message"]
                    .as_str()
                    .or_else(|| event["message"].as_str())
                    .unwrap_or("the service reported a failure");
                return Err(ModelError::Rejected {
                    status: 200,
                    detail: message.to_owned(),
                });
            }
            _ => {}
        }
        self.within_limits()?;
        Ok(Step::Continue)
    }
}
