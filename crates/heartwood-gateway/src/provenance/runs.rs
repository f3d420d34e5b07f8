//! What happened, as actions: each stage execution (with its orchestration), each tool action
//! as the journal holds it (a command with its text and sandbox level, a file edit with its
//! path; a rejected one as not run), each check run over the files it read by digest, and
//! each decision and acceptance with the researcher as agent. Built from the decoded journal;
//! every action names the journal line it comes from (`identifier`: `seq N`).
//!
//! Command text and edited paths pass through the same credential redaction as a service's
//! error body before the journal records it (`heartwood_agent::model::redact_secret_shapes`),
//! since a crate is meant to leave the machine.

use std::collections::BTreeMap;

use heartwood_events::{ActionState, Decision, Event, RecordedEvent};
use serde_json::{Value, json};

use super::graph::{HEARTWOOD, RESEARCHER, id, ids, property};

/// The files by path: their entity ids.
pub type FileIds = BTreeMap<String, String>;

/// Per stage: the paths it consumes and produces.
pub type StageFiles = BTreeMap<String, (Vec<String>, Vec<String>)>;

/// The actions and what the root and the orchestration refer to.
#[derive(Default)]
pub struct Runs {
    /// Every action entity and its property values.
    pub entities: Vec<Value>,
    /// The stage executions' control actions.
    pub controls: Vec<String>,
    /// Every action id, for the root's `mentions`.
    pub mentioned: Vec<String>,
    /// Stages that ran.
    pub stages_ran: Vec<String>,
}

/// What a tool action did, from its arguments.
#[derive(Debug, PartialEq)]
enum What {
    /// A terminal command (or input sent to the running one), redacted.
    Command { text: String, input: bool },
    /// A file edit: the path, the editor's command, and the SHA-256 of the text it wrote
    /// when the arguments hold the whole of it (`create`).
    Edit {
        path: String,
        edit: String,
        wrote_sha256: Option<String>,
    },
    /// Any other tool: its arguments by digest (their text stays in the session's journal).
    Other { arguments_sha256: String },
}

/// Reads a tool call's arguments as the journal holds them. Both backends name the tools
/// `terminal` and `file_editor` with `command` and `path` fields.
fn describe(tool: &str, arguments: &str) -> What {
    use sha2::Digest as _;
    let redact = heartwood_agent::model::redact_secret_shapes;
    let parsed: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    match (tool, parsed["command"].as_str(), parsed["path"].as_str()) {
        ("terminal", Some(command), _) => What::Command {
            text: redact(command),
            input: parsed["is_input"] == true,
        },
        ("file_editor", Some(edit), Some(path)) => What::Edit {
            path: redact(path),
            edit: edit.to_owned(),
            wrote_sha256: (edit == "create")
                .then(|| parsed["file_text"].as_str())
                .flatten()
                .map(|t| hex(&sha2::Sha256::digest(t.as_bytes()))),
        },
        _ => What::Other {
            arguments_sha256: hex(&sha2::Sha256::digest(arguments.as_bytes())),
        },
    }
}

struct Tool {
    id: String,
    tool: String,
    start: String,
    end: String,
    state: ActionState,
    sandbox: Option<&'static str>,
    what: What,
    exit_code: Option<i64>,
    changed: Option<String>,
}

fn at(e: &RecordedEvent) -> String {
    format!("seq {}", e.seq.get())
}

fn refs(paths: &[String], files: &FileIds) -> Value {
    ids(paths
        .iter()
        .filter_map(|p| files.get(p))
        .map(String::as_str))
}

fn status(ok: bool) -> Value {
    id(if ok {
        "http://schema.org/CompletedActionStatus"
    } else {
        "http://schema.org/FailedActionStatus"
    })
}

/// Maps the events to actions.
pub fn actions(events: &[RecordedEvent], files: &FileIds, stage_files: &StageFiles) -> Runs {
    let mut runs = Runs::default();
    let mut tools: BTreeMap<u64, Tool> = BTreeMap::new();
    let mut open: Option<(String, String, usize)> = None; // (stage, entity id, index)
    let mut count: BTreeMap<String, u32> = BTreeMap::new();
    for e in events {
        let time = e.time.as_str().to_owned();
        match &e.event {
            Event::WorkflowStageStarted { stage, .. } => {
                close(&mut runs, &mut open, &time, false);
                let n = count.entry(stage.clone()).or_default();
                *n += 1;
                let at_id = format!("#stage-{stage}-{n}");
                let (consumes, produces) = stage_files.get(stage).cloned().unwrap_or_default();
                runs.entities.push(json!({
                    "@id": at_id, "@type": "CreateAction",
                    "name": format!("stage {stage}, execution {n}"),
                    "identifier": at(e), "instrument": id(&format!("#tool-{stage}")),
                    "agent": id(RESEARCHER), "startTime": time, "endTime": time,
                    "object": refs(&consumes, files), "result": refs(&produces, files),
                    "actionStatus": id("http://schema.org/ActiveActionStatus"),
                }));
                open = Some((stage.clone(), at_id.clone(), runs.entities.len() - 1));
                runs.mentioned.push(at_id.clone());
                let control = format!("#control-{stage}-{n}");
                runs.entities.push(json!({
                    "@id": control, "@type": "ControlAction",
                    "name": format!("orchestrate stage {stage}, execution {n}"),
                    "instrument": id(&format!("#step-{stage}")), "object": id(&at_id),
                }));
                runs.controls.push(control);
                if !runs.stages_ran.contains(stage) {
                    runs.stages_ran.push(stage.clone());
                }
            }
            Event::WorkflowStageEvaluated { assessment, .. } => {
                touch(&mut runs, &open, &time);
                for (i, check) in assessment.checks.iter().enumerate() {
                    let at_id = format!("#check-{}-{}", e.seq.get(), i + 1);
                    let read: Vec<String> =
                        check.inspected.iter().map(|f| f.path.clone()).collect();
                    let passed = check.status == heartwood_events::workflow::CheckStatus::Passed;
                    let mut entity = json!({
                        "@id": at_id, "@type": "AssessAction",
                        "name": format!("check {} on stage {}: {}", check.check, assessment.stage, check.status),
                        "identifier": at(e), "instrument": id(&check_tool_id(&check.check, check.version.as_deref())),
                        "agent": id(HEARTWOOD), "endTime": time,
                        "object": refs(&read, files), "actionStatus": status(passed),
                    });
                    if !check.reasons.is_empty() {
                        entity["error"] = json!(check.reasons.join("; "));
                    }
                    runs.entities.push(entity);
                    runs.mentioned.push(at_id);
                }
            }
            Event::WorkflowStageAccepted {
                stage,
                fingerprint,
                by_researcher,
                ..
            } => {
                let at_id = format!("#accept-{}", e.seq.get());
                let fp = format!("#fingerprint-{}", e.seq.get());
                let execution = open.as_ref().map(|o| o.1.clone());
                runs.entities.push(json!({
                    "@id": at_id, "@type": "AssessAction",
                    "name": format!("stage {stage} accepted"),
                    "identifier": at(e),
                    "agent": id(if *by_researcher { RESEARCHER } else { HEARTWOOD }),
                    "endTime": time, "object": ids(execution.as_deref()),
                    "actionStatus": status(true), "additionalProperty": ids([fp.as_str()]),
                }));
                runs.entities
                    .push(property(&fp, "fingerprint", fingerprint.as_str()));
                runs.mentioned.push(at_id);
                if open.as_ref().is_some_and(|o| &o.0 == stage) {
                    close(&mut runs, &mut open, &time, true);
                }
            }
            Event::ActionProposed { action } => {
                touch(&mut runs, &open, &time);
                tools.insert(
                    action.action_id,
                    Tool {
                        id: format!("#action-{}", action.action_id),
                        tool: action.tool.clone(),
                        start: time.clone(),
                        end: time,
                        state: ActionState::Proposed,
                        sandbox: action.sandbox.map(sandbox_name),
                        what: describe(&action.tool, &action.arguments),
                        exit_code: None,
                        changed: None,
                    },
                );
            }
            Event::ActionUpdated {
                action_id,
                state,
                exit_code,
                changed_path,
                ..
            } => {
                touch(&mut runs, &open, &time);
                if let Some(tool) = tools.get_mut(action_id) {
                    tool.state = *state;
                    tool.end = time;
                    tool.exit_code = exit_code.or(tool.exit_code);
                    tool.changed = changed_path.clone().or(tool.changed.take());
                }
            }
            Event::DecisionRecorded {
                set_id,
                decision,
                reason,
                ..
            } => {
                let members = members_of(events, set_id.as_str());
                let at_id = format!("#decision-{}", e.seq.get());
                let mut entity = json!({
                    "@id": at_id, "@type": "ChooseAction",
                    "name": match decision { Decision::AllowOnce => "allow once", Decision::RejectAll => "reject all" },
                    "identifier": at(e), "agent": id(RESEARCHER), "endTime": time,
                    "object": ids(members.iter().map(String::as_str)),
                    "actionStatus": status(true),
                });
                if let Some(reason) = reason {
                    entity["description"] = json!(reason);
                }
                runs.entities.push(entity);
                runs.mentioned.push(at_id);
            }
            _ => {}
        }
    }
    close(&mut runs, &mut open, "", false);
    for tool in tools.values() {
        push_tool(&mut runs, tool, files);
    }
    runs
}

fn members_of(events: &[RecordedEvent], set_id: &str) -> Vec<String> {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::ActionSetPending { set } if set.set_id.as_str() == set_id => Some(
                set.members
                    .iter()
                    .map(|m| format!("#action-{}", m.action_id))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

/// The action's status and, when it did not simply run, why in words.
fn tool_status(state: ActionState) -> (&'static str, Option<&'static str>) {
    match state {
        ActionState::Completed => ("CompletedActionStatus", None),
        ActionState::Failed => ("FailedActionStatus", Some("failed")),
        ActionState::Stopped => (
            "FailedActionStatus",
            Some("stopped by the researcher before it finished"),
        ),
        ActionState::Approved | ActionState::Running => (
            "ActiveActionStatus",
            Some("allowed; not finished when the session was exported"),
        ),
        ActionState::Rejected => ("PotentialActionStatus", Some("rejected: not run")),
        ActionState::Proposed => (
            "PotentialActionStatus",
            Some("awaiting the researcher's decision: not run"),
        ),
    }
}

fn push_tool(runs: &mut Runs, tool: &Tool, files: &FileIds) {
    let ran = !matches!(tool.state, ActionState::Rejected | ActionState::Proposed);
    let mut props: Vec<String> = Vec::new();
    let mut prop = |runs: &mut Runs, key: &str, name: &str, value: Value| {
        let at = format!("{}-{key}", tool.id);
        runs.entities.push(property(&at, name, value));
        props.push(at);
    };
    let name = match &tool.what {
        What::Command { text, input } => {
            prop(
                runs,
                "command",
                if *input {
                    "input sent to the running command"
                } else {
                    "command"
                },
                json!(text),
            );
            format!("{}: {}", tool.tool, first_line(text))
        }
        What::Edit {
            path,
            edit,
            wrote_sha256,
        } => {
            prop(runs, "path", "path", json!(path));
            prop(runs, "edit", "editor command", json!(edit));
            if let Some(digest) = wrote_sha256 {
                prop(runs, "wrote", "SHA-256 of the text written", json!(digest));
            }
            format!("{} {edit} {path}", tool.tool)
        }
        What::Other { arguments_sha256 } => {
            prop(
                runs,
                "arguments",
                "arguments SHA-256 (the text stays in the session's journal)",
                json!(arguments_sha256),
            );
            format!("{} action", tool.tool)
        }
    };
    if let Some(level) = tool.sandbox {
        prop(runs, "sandbox", "sandbox level", json!(level));
    }
    if let Some(code) = tool.exit_code {
        prop(runs, "exit", "exit code", json!(code));
    }
    let result = tool
        .changed
        .as_ref()
        .and_then(|p| files.get(p))
        .filter(|_| ran)
        .map(|f| vec![f.as_str()]);
    let (state, why) = tool_status(tool.state);
    let mut entity = json!({
        "@id": tool.id, "@type": "CreateAction", "name": name,
        "instrument": id(&format!("#agent-tool-{}", tool.tool)),
        "actionStatus": id(&format!("http://schema.org/{state}")),
        "result": ids(result.unwrap_or_default()),
        "additionalProperty": ids(props.iter().map(String::as_str)),
    });
    // An action that never ran has no start or end; its proposal time is when it was asked.
    if ran {
        entity["startTime"] = json!(tool.start);
        entity["endTime"] = json!(tool.end);
    }
    if let Some(why) = why {
        entity["description"] = json!(why);
    }
    runs.entities.push(entity);
    let instrument = format!("#agent-tool-{}", tool.tool);
    if !runs
        .entities
        .iter()
        .any(|e| e["@id"] == instrument.as_str())
    {
        runs.entities.push(json!({
            "@id": instrument, "@type": "SoftwareApplication",
            "name": format!("agent tool {}", tool.tool),
        }));
    }
    runs.mentioned.push(tool.id.clone());
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let short: String = line.chars().take(80).collect();
    if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// The open stage execution lasts at least until `time`.
fn touch(runs: &mut Runs, open: &Option<(String, String, usize)>, time: &str) {
    if let Some((_, _, at)) = open
        && let Some(entity) = runs.entities.get_mut(*at)
    {
        entity["endTime"] = json!(time);
    }
}

fn close(runs: &mut Runs, open: &mut Option<(String, String, usize)>, time: &str, ok: bool) {
    if let Some((_, _, at)) = open.take()
        && let Some(entity) = runs.entities.get_mut(at)
    {
        if !time.is_empty() {
            entity["endTime"] = json!(time);
        }
        entity["actionStatus"] = status(ok);
    }
}

fn sandbox_name(level: heartwood_events::SandboxLevel) -> &'static str {
    match level {
        heartwood_events::SandboxLevel::ReadOnly => "read_only",
        heartwood_events::SandboxLevel::ProjectWrite => "project_write",
        heartwood_events::SandboxLevel::Unsandboxed => "unsandboxed",
    }
}

/// The entity id of a check at the version the journal recorded for it (a journal written
/// before check versions were recorded names none).
pub fn check_tool_id(check: &str, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("#check-{check}-v{v}"),
        None => format!("#check-{check}"),
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
