//! The coding tools, with OpenHands' names and parameter schemas: `terminal`, `file_editor`,
//! `task_tracker`, `think` and `finish`.
//!
//! [`ToolCallRequest::parse`] turns a model's tool call into a typed request (or an error the
//! model will see); [`risk`] rates it with deterministic rules; [`Toolbox::execute`] runs it.

mod editor;
mod environment;
mod interrupt;
mod paths;
mod pipeline;
mod refusal;
mod risk;
pub mod sandbox;
mod schema;
mod task_tracker;
mod terminal;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use editor::{EditorArgs, EditorCommand, FileEditor, insert_after, replace_once};
pub use environment::{STANDARD_ALLOW, ToolEnvironment};
pub use interrupt::InterruptHandle;
pub use paths::{OutsideDirectory, ProjectPaths};
pub use refusal::{CallRefused, CommandRefused, EditRefused, HostError, PathRefused};
pub use risk::{Risk, risk};
pub use sandbox::{SandboxLevel, SandboxSupport};
pub use schema::{SpecialistSpec, specs, specs_with_outcome, task_spec};
pub use task_tracker::TaskTrackerArgs;
pub use task_tracker::{Task, TaskPlan, TaskStatus};
pub use terminal::{OutputSink, SandboxRequest, Terminal, TerminalArgs, TerminalLimits};

/// A parsed, schema-checked tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum ToolCallRequest {
    /// Run a command in the persistent shell.
    Terminal(terminal::TerminalArgs),
    /// View or edit a file.
    FileEditor(editor::EditorArgs),
    /// View or replace the task plan.
    TaskTracker(task_tracker::TaskTrackerArgs),
    /// Think out loud; no effect.
    Think {
        /// The thought.
        thought: String,
    },
    /// Ask an advisory specialist (a child conversation of a catalog role, tool-free) about the
    /// evidence given; its answer is the observation.
    Task {
        /// The catalog role.
        subagent_type: String,
        /// A few words on what is asked (the action's headline).
        description: String,
        /// The whole request, with every piece of evidence the specialist may use.
        prompt: String,
    },
    /// End the task.
    Finish {
        /// The final message to the researcher.
        message: String,
        /// The structured report of a workflow stage's turn (validated by whoever asked for it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<Value>,
    },
}

impl ToolCallRequest {
    /// The confinement this call's process gets when run as `allowed` says (`None`: the call
    /// starts no process).
    pub fn sandbox_level(&self, allowed: sandbox::Allowed) -> Option<SandboxLevel> {
        match self {
            ToolCallRequest::Terminal(args) => {
                Some(sandbox::level_for(args.asks_unsandboxed(), allowed))
            }
            _ => None,
        }
    }
}

/// The optional argument every tool accepts: the model's one-line summary of the call.
pub const SUMMARY_ARGUMENT: &str = "summary";
/// The optional argument every tool accepts: the model's prediction of the call's risk.
pub const SECURITY_RISK_ARGUMENT: &str = "security_risk";

impl ToolCallRequest {
    /// Parses the model's arguments for `name`. The error is the observation the model gets.
    pub fn parse(name: &str, arguments: &str) -> Result<Self, CallRefused> {
        let value: Value = serde_json::from_str(if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        })
        .map_err(|source| CallRefused::NotJson {
            tool: name.to_owned(),
            source,
        })?;
        let Value::Object(mut fields) = value else {
            return Err(CallRefused::NotObject(name.to_owned()));
        };
        // OpenHands' tool contract adds these two to every tool; they describe the call and
        // change nothing it does (the summary is its headline in review).
        if let Some(summary) = fields.remove(SUMMARY_ARGUMENT)
            && !summary.is_string()
        {
            return Err(CallRefused::Summary(name.to_owned()));
        }
        if let Some(risk) = fields.remove(SECURITY_RISK_ARGUMENT)
            && !matches!(risk.as_str(), Some("LOW" | "MEDIUM" | "HIGH" | "UNKNOWN"))
        {
            return Err(CallRefused::SecurityRisk(name.to_owned()));
        }
        let value = Value::Object(fields);
        let unfit = |source: serde_json::Error| CallRefused::Unfit {
            tool: name.to_owned(),
            source,
        };
        Ok(match name {
            "terminal" => ToolCallRequest::Terminal(serde_json::from_value(value).map_err(unfit)?),
            "file_editor" => {
                ToolCallRequest::FileEditor(serde_json::from_value(value).map_err(unfit)?)
            }
            "task_tracker" => {
                ToolCallRequest::TaskTracker(serde_json::from_value(value).map_err(unfit)?)
            }
            "think" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    thought: String,
                }
                let args: Args = serde_json::from_value(value).map_err(unfit)?;
                ToolCallRequest::Think {
                    thought: args.thought,
                }
            }
            "task" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    subagent_type: String,
                    description: String,
                    prompt: String,
                }
                let args: Args = serde_json::from_value(value).map_err(unfit)?;
                ToolCallRequest::Task {
                    subagent_type: args.subagent_type,
                    description: args.description,
                    prompt: args.prompt,
                }
            }
            "finish" => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    message: String,
                    #[serde(default)]
                    outcome: Option<Value>,
                }
                let args: Args = serde_json::from_value(value).map_err(unfit)?;
                ToolCallRequest::Finish {
                    message: args.message,
                    outcome: args.outcome,
                }
            }
            other => {
                return Err(CallRefused::NoSuchTool(other.to_owned()));
            }
        })
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            ToolCallRequest::Terminal(_) => "terminal",
            ToolCallRequest::FileEditor(_) => "file_editor",
            ToolCallRequest::TaskTracker(_) => "task_tracker",
            ToolCallRequest::Think { .. } => "think",
            ToolCallRequest::Task { .. } => "task",
            ToolCallRequest::Finish { .. } => "finish",
        }
    }
}

/// The result of running a tool, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The text sent back to the model.
    pub content: String,
    /// Whether the tool failed (the model is told so in the text too).
    pub is_error: bool,
    /// For terminal commands: the exit code (-1 when the command is still running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// For successful file edits: the project-relative path changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_path: Option<String>,
    /// Whether the researcher stopped the tool before it finished (it neither succeeded nor
    /// failed on its own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

impl Observation {
    /// A successful observation.
    pub fn ok(content: impl Into<String>) -> Self {
        Observation {
            content: content.into(),
            is_error: false,
            exit_code: None,
            changed_path: None,
            stopped: false,
        }
    }

    /// A failed one.
    pub fn error(content: impl Into<String>) -> Self {
        Observation {
            content: content.into(),
            is_error: true,
            exit_code: None,
            changed_path: None,
            stopped: false,
        }
    }
}

/// Everything the tools need: the project, the shell, the editor's undo history, the plan.
pub struct Toolbox {
    paths: ProjectPaths,
    terminal: Terminal,
    editor: FileEditor,
    plan_file: std::path::PathBuf,
}

impl Toolbox {
    /// Tools working in `project`, keeping the task plan in `plan_file`. The shell starts with
    /// `env` only; `outside` directories are reached by their absolute path (edited only when
    /// writable).
    pub fn new(
        project: &std::path::Path,
        plan_file: std::path::PathBuf,
        limits: TerminalLimits,
        env: ToolEnvironment,
        outside: &[OutsideDirectory],
    ) -> std::io::Result<Self> {
        let paths = ProjectPaths::new(project)?.with_outside(outside)?;
        let sandbox = sandbox::Sandbox::new(paths.root())
            .reaching(outside.iter().map(|o| (o.path.clone(), o.writable)));
        Ok(Toolbox {
            terminal: Terminal::with_environment(paths.root(), limits, env).with_sandbox(sandbox),
            editor: FileEditor::new(paths.clone()),
            paths,
            plan_file,
        })
    }

    /// Sends complete lines of running commands' output to `sink` as they arrive.
    pub fn set_progress(&mut self, sink: OutputSink) {
        self.terminal.set_progress(sink);
    }

    /// The handle that interrupts the running command.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.terminal.interrupt_handle()
    }

    /// The project's paths.
    pub fn paths(&self) -> &ProjectPaths {
        &self.paths
    }

    /// Runs one request. `finish` and `think` are answered here; they touch nothing. A
    /// command runs confined at `level`, the one recorded with its proposal; a proposal
    /// recorded before levels existed runs as a person's allowance would have it.
    pub async fn execute(
        &mut self,
        request: &ToolCallRequest,
        level: Option<SandboxLevel>,
    ) -> Observation {
        match request {
            ToolCallRequest::Terminal(args) => {
                let level = level.unwrap_or_else(|| {
                    sandbox::level_for(args.asks_unsandboxed(), sandbox::Allowed::ByPerson)
                });
                self.terminal.run(args, level).await
            }
            ToolCallRequest::FileEditor(args) => self.editor.run(args),
            ToolCallRequest::TaskTracker(args) => task_tracker::run(&self.plan_file, args),
            ToolCallRequest::Think { .. } => Observation::ok("Your thought has been logged."),
            ToolCallRequest::Finish { message, .. } => Observation::ok(message.clone()),
            // A specialist runs in the conversation, which holds the model client.
            ToolCallRequest::Task { .. } => {
                Observation::error("a specialist task runs in its conversation, not the toolbox")
            }
        }
    }

    /// Stops the shell.
    pub async fn shutdown(&mut self) {
        self.terminal.stop().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_become_errors_the_model_can_act_on() {
        let err = ToolCallRequest::parse("terminal", "{\"command\": ")
            .expect_err("bad JSON")
            .to_string();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = ToolCallRequest::parse("terminal", r#"{"cmd": "ls"}"#)
            .expect_err("wrong field")
            .to_string();
        assert!(err.contains("schema"), "{err}");
        let err = ToolCallRequest::parse("file_editor", r#"{"command": "explode", "path": "a"}"#)
            .expect_err("bad command")
            .to_string();
        assert!(err.contains("schema"), "{err}");
        let err = ToolCallRequest::parse("browser", "{}")
            .expect_err("unknown tool")
            .to_string();
        assert!(err.contains("no tool named `browser`"), "{err}");
        assert_eq!(
            ToolCallRequest::parse("think", r#"{"thought": "hmm"}"#).map_err(|e| e.to_string()),
            Ok(ToolCallRequest::Think {
                thought: "hmm".into()
            })
        );
    }

    #[test]
    fn finish_carries_a_structured_outcome_where_one_is_asked_for() {
        let outcome =
            serde_json::json!({"type": "object", "properties": {"status": {"type": "string"}}});
        let specs = crate::tools::specs_with_outcome(Some(&outcome));
        let finish = specs
            .iter()
            .find(|t| t.function.name == "finish")
            .expect("finish");
        assert_eq!(finish.function.parameters["properties"]["outcome"], outcome);
        assert_eq!(
            finish.function.parameters["required"],
            serde_json::json!(["message", "outcome"])
        );
        let plain = crate::tools::specs();
        let plain = plain
            .iter()
            .find(|t| t.function.name == "finish")
            .expect("finish");
        assert!(
            plain.function.parameters["properties"]
                .get("outcome")
                .is_none()
        );
        let call = ToolCallRequest::parse(
            "finish",
            r#"{"message": "done", "outcome": {"status": "completed"}}"#,
        )
        .expect("an outcome is accepted");
        assert!(matches!(
            call,
            ToolCallRequest::Finish { outcome: Some(o), .. } if o["status"] == "completed"
        ));
    }

    #[test]
    fn openhands_summary_and_risk_prediction_are_accepted_and_nothing_else_is() {
        let call = ToolCallRequest::parse(
            "terminal",
            r#"{"command": "ls", "summary": "list the project", "security_risk": "LOW"}"#,
        )
        .expect("the contract's extra arguments are accepted");
        assert!(matches!(call, ToolCallRequest::Terminal(args) if args.command == "ls"));
        for tool in crate::tools::schema::specs() {
            let properties = &tool.function.parameters["properties"];
            assert!(
                properties.get(SUMMARY_ARGUMENT).is_some(),
                "{}",
                tool.function.name
            );
            assert!(properties.get(SECURITY_RISK_ARGUMENT).is_some());
        }
        let err = ToolCallRequest::parse("terminal", r#"{"command": "ls", "summary": 3}"#)
            .expect_err("a summary that is not text")
            .to_string();
        assert!(err.contains("summary"), "{err}");
        let err =
            ToolCallRequest::parse("terminal", r#"{"command": "ls", "security_risk": "NONE"}"#)
                .expect_err("an unknown risk")
                .to_string();
        assert!(err.contains("security_risk"), "{err}");
        let err = ToolCallRequest::parse("terminal", r#"{"command": "ls", "colour": "red"}"#)
            .expect_err("another unknown argument")
            .to_string();
        assert!(err.contains("schema") && err.contains("colour"), "{err}");
    }
}
