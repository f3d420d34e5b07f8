//! The tool definitions offered to the model, with OpenHands' names and parameters.

use serde_json::json;

use crate::model::{FunctionSpec, ToolSpec};

fn tool(
    name: &'static str,
    description: &'static str,
    mut parameters: serde_json::Value,
) -> ToolSpec {
    // OpenHands' contract: every tool takes an optional one-line summary and an optional risk
    // prediction. Heartwood rates risk itself; the prediction is shown, never trusted.
    if let Some(properties) = parameters["properties"].as_object_mut() {
        properties.insert(
            super::SUMMARY_ARGUMENT.into(),
            json!({"type": "string", "description": "About ten words: what this action does. Shown to the researcher as the action's headline."}),
        );
        properties.insert(
            super::SECURITY_RISK_ARGUMENT.into(),
            json!({"type": "string", "enum": ["LOW", "MEDIUM", "HIGH", "UNKNOWN"], "description": "Your prediction of this action's risk."}),
        );
    }
    ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        },
    }
}

/// Every tool, in the order offered.
pub fn specs() -> Vec<ToolSpec> {
    specs_with_outcome(None)
}

/// Every tool, with `finish` requiring an `outcome` argument of the given JSON Schema when
/// one is given (the structured report a workflow stage's turn ends with).
pub fn specs_with_outcome(outcome: Option<&serde_json::Value>) -> Vec<ToolSpec> {
    let mut finish = json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"], "additionalProperties": false});
    if let Some(outcome) = outcome {
        finish["properties"]["outcome"] = outcome.clone();
        finish["required"] = json!(["message", "outcome"]);
    }
    vec![
        tool(
            "terminal",
            "Run a bash command in a persistent shell in the project directory. State (cwd, variables) \
             persists between calls. A command still running at the timeout returns exit code -1 with the \
             output so far: send more input with is_input=true, or reset=true to start a new shell. \
             Commands run in a sandbox: they can write only inside the project (nothing at all when run \
             without review), cannot read Heartwood's state or the user's credentials, and see no other \
             processes. Only when a command cannot work there, ask with sandbox=\"unsandboxed\"; the \
             researcher decides.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "The command, or the input text when is_input is true."},
                "is_input": {"type": "boolean", "description": "Send the text to the running program instead of starting a command.", "default": false},
                "timeout": {"type": "number", "description": "Seconds to wait before returning with exit code -1 (soft timeout)."},
                "reset": {"type": "boolean", "description": "Kill the shell and start a new one.", "default": false},
                "sandbox": {"type": "string", "enum": ["unsandboxed"], "description": "Ask to run outside the sandbox, with the user's full access; the researcher must allow it."}
            }, "required": ["command"], "additionalProperties": false}),
        ),
        tool(
            "file_editor",
            "View, create and edit files in the project. `view` shows a file with line numbers or lists a \
             directory two levels deep; `create` writes a new file; `str_replace` replaces exactly one \
             occurrence of old_str; `insert` adds new_str after insert_line; `undo_edit` reverts the last edit. \
             Paths are project-relative; .heartwood/ and .git/ are off limits.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                "path": {"type": "string"},
                "file_text": {"type": "string"},
                "old_str": {"type": "string"},
                "new_str": {"type": "string"},
                "insert_line": {"type": "integer", "minimum": 0},
                "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
            }, "required": ["command", "path"], "additionalProperties": false}),
        ),
        tool(
            "task_tracker",
            "Keep a task plan: `view` shows it, `plan` replaces it with task_list.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "enum": ["view", "plan"]},
                "task_list": {"type": "array", "items": {"type": "object", "properties": {
                    "title": {"type": "string"},
                    "notes": {"type": "string"},
                    "status": {"type": "string", "enum": ["todo", "in_progress", "done"]}
                }, "required": ["title", "status"], "additionalProperties": false}}
            }, "required": ["command"], "additionalProperties": false}),
        ),
        tool(
            "think",
            "Think through a problem step by step. Changes nothing.",
            json!({"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"], "additionalProperties": false}),
        ),
        tool(
            "finish",
            "Finish the task with a message to the researcher.",
            finish,
        ),
    ]
}

/// A specialist role as the `task` tool offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecialistSpec {
    /// The role id.
    pub role: String,
    /// What it does.
    pub description: String,
}

/// The `task` tool (OpenHands' name and shape) for these roles.
pub fn task_spec(roles: &[SpecialistSpec]) -> ToolSpec {
    let ids: Vec<&str> = roles.iter().map(|r| r.role.as_str()).collect();
    let described: Vec<String> = roles
        .iter()
        .map(|r| format!("`{}`: {}", r.role, r.description))
        .collect();
    tool(
        "task",
        "Ask an advisory specialist. It sees only the prompt you give it (paste every piece of \
         evidence it needs), runs no tools and changes nothing; its answer comes back as the \
         result.",
        json!({"type": "object", "properties": {
            "subagent_type": {"type": "string", "enum": ids, "description": described.join("; ")},
            "description": {"type": "string", "description": "A few words: what you ask."},
            "prompt": {"type": "string", "description": "The whole request, with the evidence."}
        }, "required": ["subagent_type", "description", "prompt"], "additionalProperties": false}),
    )
}
