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

use super::{Conversation, ConversationError, EventKind, InterruptHandle, SpecialistConfig};
use crate::model::{ChatMessage, ModelClient, ToolSpec};
use crate::tools::Observation;

/// The longest structured result kept: it travels whole in the action's record.
const MAX_RESULT_BYTES: usize = 3500;

/// How often a running child looks for the parent's interruption.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// One specialist task, ready to run: the parent's action, the role and the prompt.
#[derive(Clone)]
pub(super) struct ChildTask {
    action_id: u64,
    spec: SpecialistConfig,
    prompt: String,
}

impl ChildTask {
    /// The parent's action it answers.
    pub(super) fn action_id(&self) -> u64 {
        self.action_id
    }
}

/// What a child did: its answer (or why there is none) and every model call it made, which
/// the parent records (a child never writes the parent's log itself).
pub(super) struct ChildRun {
    pub(super) action_id: u64,
    pub(super) observation: Observation,
    calls: Vec<(Vec<ChatMessage>, crate::model::ModelReply)>,
}

impl Conversation {
    /// The task asked by a `task` call, or the observation that says why there is none.
    pub(super) fn child_task(
        &self,
        action_id: u64,
        role: &str,
        prompt: &str,
    ) -> Result<ChildTask, Observation> {
        let specialists = &self.config.specialists;
        match specialists.iter().find(|s| s.role == role) {
            Some(spec) => Ok(ChildTask {
                action_id,
                spec: spec.clone(),
                prompt: prompt.to_owned(),
            }),
            None => {
                let roles: Vec<&str> = specialists.iter().map(|s| s.role.as_str()).collect();
                Err(Observation::error(format!(
                    "there is no specialist {role:?} to ask; the roles are {}",
                    if roles.is_empty() {
                        "none in this conversation".to_owned()
                    } else {
                        roles.join(", ")
                    }
                )))
            }
        }
    }

    /// Runs the specialist `role` on `prompt` for the parent's action `action_id`; its answer
    /// (or why there is none) is the action's observation.
    pub(super) async fn run_task(
        &mut self,
        action_id: u64,
        role: &str,
        prompt: &str,
    ) -> Result<Observation, ConversationError> {
        let task = match self.child_task(action_id, role, prompt) {
            Ok(task) => task,
            Err(observation) => return Ok(observation),
        };
        let run = run_child(self.client.clone(), task, self.toolbox.interrupt_handle()).await;
        self.record_child(run)
    }

    /// Records what a child did: each model call (for replay, and its usage under
    /// `task:<action id>`), then returns its observation for the parent to record.
    pub(super) fn record_child(&mut self, run: ChildRun) -> Result<Observation, ConversationError> {
        let usage_id = format!("task:{}", run.action_id);
        for (messages, reply) in &run.calls {
            if let Err(e) = self.recorder.record(&usage_id, messages, reply) {
                self.record(EventKind::Error {
                    message: format!("this model call could not be recorded for replay: {e}"),
                })?;
            }
            self.record(EventKind::Usage {
                usage_id: usage_id.clone(),
                usage: reply.usage,
            })?;
        }
        Ok(run.observation)
    }
}

/// Asks one specialist on `client` outside any conversation, exactly as a `task` call would
/// (a route's qualification for parallel review runs this): its answer, or why there is none.
pub async fn ask_specialist(
    client: ModelClient,
    spec: SpecialistConfig,
    prompt: String,
) -> Observation {
    let task = ChildTask {
        action_id: 0,
        spec,
        prompt,
    };
    run_child(client, task, InterruptHandle::default())
        .await
        .observation
}

/// Runs one child to its answer on the parent's route. It owns what it uses, so several can
/// run at once; the parent's interruption stops it at its model call.
pub(super) async fn run_child(
    client: ModelClient,
    task: ChildTask,
    interrupt: InterruptHandle,
) -> ChildRun {
    let mut calls = Vec::new();
    let observation = ask(&client, &task, &interrupt, &mut calls).await;
    ChildRun {
        action_id: task.action_id,
        observation,
        calls,
    }
}

async fn ask(
    client: &ModelClient,
    task: &ChildTask,
    interrupt: &InterruptHandle,
    calls: &mut Vec<(Vec<ChatMessage>, crate::model::ModelReply)>,
) -> Observation {
    let spec = &task.spec;
    let role = &spec.role;
    let tools: Vec<ToolSpec> = spec
        .result_schema
        .as_ref()
        .map(result_tool)
        .into_iter()
        .collect();
    let mut messages = vec![
        ChatMessage::System {
            content: instructions(spec),
        },
        ChatMessage::User {
            content: task.prompt.clone(),
        },
    ];
    let mut tokens = 0u64;
    for _ in 0..spec.max_iterations {
        let mut quiet = |_: &str| {};
        let call = client.complete(&messages, &tools, &mut quiet);
        let reply = tokio::select! {
            reply = call => reply,
            () = async {
                while !interrupt.is_requested() {
                    tokio::time::sleep(INTERRUPT_POLL).await;
                }
            } => {
                return Observation::error(format!(
                    "the {role} specialist was interrupted before it answered"
                ));
            }
        };
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                return Observation::error(format!(
                    "the {role} specialist's model call failed: {e}"
                ));
            }
        };
        calls.push((messages.clone(), reply.clone()));
        tokens += reply.usage.prompt_tokens + reply.usage.completion_tokens;
        if tokens > spec.max_tokens {
            return Observation::error(format!(
                "the {role} specialist used {tokens} tokens, over its limit of {}",
                spec.max_tokens
            ));
        }
        let text = reply.content.clone().unwrap_or_default();
        if spec.result_schema.is_none() {
            if text.trim().is_empty() {
                return Observation::error(format!("the {role} specialist gave an empty answer"));
            }
            return Observation::ok(text);
        }
        match reply
            .tool_calls
            .iter()
            .find(|c| c.function.name == "finish")
        {
            Some(call) => return structured(role, &call.function.arguments),
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
    Observation::error(format!(
        "the {role} specialist gave no {} within its {} model calls",
        if spec.result_schema.is_some() {
            "structured result"
        } else {
            "answer"
        },
        spec.max_iterations
    ))
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
            name: "finish".into(),
            description: "Give your structured result.".into(),
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
