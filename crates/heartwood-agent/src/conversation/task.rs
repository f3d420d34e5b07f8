//! The `task` tool: a child conversation of a catalog role that answers the parent agent.
//!
//! The child is advisory and tool-free: it sees its role's instructions and the prompt the
//! parent wrote (only the evidence passed in it), and answers in text, or, for a role with a
//! result schema, by calling `finish` with a structured `result`. A missing or malformed
//! structured result fails the task whatever its prose says. Every model call is the parent's
//! route, recorded for replay and counted under the usage id `task:<action id>`; interrupting
//! the parent interrupts the child's model call.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Conversation, ConversationError, EventKind, SpecialistConfig};
use crate::model::{ChatMessage, ToolSpec};
use crate::tools::Observation;

/// The longest structured result kept: it travels whole in the action's record.
const MAX_RESULT_BYTES: usize = 3500;

/// How often a running child looks for the parent's interruption.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

impl Conversation {
    /// Runs the specialist `role` on `prompt` for the parent's action `action_id`; its answer
    /// (or why there is none) is the action's observation.
    pub(super) async fn run_task(
        &mut self,
        action_id: u64,
        role: &str,
        prompt: &str,
    ) -> Result<Observation, ConversationError> {
        let Some(spec) = self
            .config
            .specialists
            .iter()
            .find(|s| s.role == role)
            .cloned()
        else {
            let roles: Vec<&str> = self
                .config
                .specialists
                .iter()
                .map(|s| s.role.as_str())
                .collect();
            return Ok(Observation::error(format!(
                "there is no specialist {role:?} to ask; the roles are {}",
                if roles.is_empty() {
                    "none in this conversation".to_owned()
                } else {
                    roles.join(", ")
                }
            )));
        };
        let usage_id = format!("task:{action_id}");
        let tools = spec
            .result_schema
            .as_ref()
            .map(result_tool)
            .into_iter()
            .collect::<Vec<_>>();
        let mut messages = vec![
            ChatMessage::System {
                content: instructions(&spec),
            },
            ChatMessage::User {
                content: prompt.to_owned(),
            },
        ];
        let mut tokens = 0u64;
        let interrupt = self.toolbox.interrupt_handle();
        for _ in 0..spec.max_iterations {
            let mut quiet = |_: &str| {};
            let call = self.client.complete(&messages, &tools, &mut quiet);
            let reply = tokio::select! {
                reply = call => reply,
                () = async {
                    while !interrupt.is_requested() {
                        tokio::time::sleep(INTERRUPT_POLL).await;
                    }
                } => {
                    return Ok(Observation::error(format!(
                        "the {role} specialist was interrupted before it answered"
                    )));
                }
            };
            let reply = match reply {
                Ok(reply) => reply,
                Err(e) => {
                    return Ok(Observation::error(format!(
                        "the {role} specialist's model call failed: {e}"
                    )));
                }
            };
            if let Err(e) = self.recorder.record(&usage_id, &messages, &reply) {
                self.record(EventKind::Error {
                    message: format!("this model call could not be recorded for replay: {e}"),
                })?;
            }
            tokens += reply.usage.prompt_tokens + reply.usage.completion_tokens;
            self.record(EventKind::Usage {
                usage_id: usage_id.clone(),
                usage: reply.usage,
            })?;
            if tokens > spec.max_tokens {
                return Ok(Observation::error(format!(
                    "the {role} specialist used {tokens} tokens, over its limit of {}",
                    spec.max_tokens
                )));
            }
            let text = reply.content.clone().unwrap_or_default();
            if spec.result_schema.is_none() {
                if text.trim().is_empty() {
                    return Ok(Observation::error(format!(
                        "the {role} specialist gave an empty answer"
                    )));
                }
                return Ok(Observation::ok(text));
            }
            match reply
                .tool_calls
                .iter()
                .find(|c| c.function.name == "finish")
            {
                Some(call) => return Ok(structured(role, &call.function.arguments)),
                None => {
                    // Prose is not a structured result: ask once more, within the limit.
                    messages.push(ChatMessage::Assistant {
                        content: reply.content,
                        tool_calls: Vec::new(),
                    });
                    messages.push(ChatMessage::User {
                        content: "Answer by calling `finish` with your structured `result`; \
                                  prose is not read."
                            .to_owned(),
                    });
                }
            }
        }
        Ok(Observation::error(format!(
            "the {role} specialist gave no {} within its {} model calls",
            if spec.result_schema.is_some() {
                "structured result"
            } else {
                "answer"
            },
            spec.max_iterations
        )))
    }
}

fn instructions(spec: &SpecialistConfig) -> String {
    if spec.result_schema.is_some() {
        format!(
            "{}\n\nAnswer by calling `finish` with `result`, which must fit its schema.",
            spec.system_prompt
        )
    } else {
        spec.system_prompt.clone()
    }
}

/// The child's one tool, where a structured result is asked for.
fn result_tool(schema: &Value) -> ToolSpec {
    ToolSpec {
        kind: "function",
        function: crate::model::FunctionSpec {
            name: "finish",
            description: "Give your structured result.",
            parameters: json!({"type": "object", "properties": {"result": schema},
                "required": ["result"], "additionalProperties": false}),
        },
    }
}

/// The structured result in `finish`'s arguments, or the task's failure.
fn structured(role: &str, arguments: &str) -> Observation {
    let result = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|mut v| v.get_mut("result").map(Value::take))
        .filter(|r| r.is_object());
    match result {
        Some(result) if result.to_string().len() > MAX_RESULT_BYTES => Observation::error(format!(
            "the {role} specialist's structured result is over {MAX_RESULT_BYTES} bytes; ask \
             for fewer, shorter items"
        )),
        Some(result) => Observation::ok(result.to_string()),
        None => Observation::error(format!(
            "the {role} specialist's structured result is missing or not a JSON object, so the \
             task failed whatever its prose says"
        )),
    }
}
