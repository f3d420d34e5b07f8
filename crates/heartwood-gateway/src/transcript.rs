//! A session's record in words: one line per event ([`line`]), and a readable Markdown
//! transcript ([`markdown`]): the researcher's words, the agent's
//! replies, each proposed set with what its actions would do, the decision on it, and each
//! action's result. For reading and sharing; the verifiable record is the export bundle.
//!
//! Built here once so every interface that offers it (the CLI's `sessions export --format
//! markdown`, the notebook) gives the same text.

use std::fmt::Write;

use heartwood_events::{ActionProposal, Event, RecordedEvent, Role};

use crate::review::headline;

/// The transcript of `events` for session `title` (its first task, when it has one).
pub fn markdown(session: &str, title: Option<&str>, events: &[RecordedEvent]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}", title.unwrap_or("Heartwood session"));
    let _ = writeln!(out);
    let first = events.first().map(|e| e.time.to_string());
    let last = events.last().map(|e| e.time.to_string());
    let _ = writeln!(
        out,
        "Session `{session}`, {} events, from {} to {}.",
        events.len(),
        first.as_deref().unwrap_or("?"),
        last.as_deref().unwrap_or("?"),
    );
    let _ = writeln!(
        out,
        "This transcript is for reading; `heartwood sessions export {session}` writes the \
         verifiable record."
    );
    for e in events {
        let seq = e.seq.get();
        match &e.event {
            Event::TaskSubmitted { text, policy, .. } => {
                section(&mut out, &format!("Task ({})", policy.as_str()), seq);
                quote(&mut out, text);
            }
            Event::GuidanceSent { text } => {
                section(&mut out, "Guidance", seq);
                quote(&mut out, text);
            }
            Event::Message { role, text } => {
                let who = match role {
                    Role::Researcher => "You",
                    Role::Agent => "Agent",
                    Role::System => "Heartwood",
                };
                section(&mut out, who, seq);
                let _ = writeln!(out, "{}", text.trim_end());
            }
            Event::ActionSetPending { set } => {
                section(
                    &mut out,
                    &format!(
                        "Proposed set {} (revision {}, {} action{})",
                        set.set_id,
                        set.revision,
                        set.members.len(),
                        if set.members.len() == 1 { "" } else { "s" }
                    ),
                    seq,
                );
                for member in &set.members {
                    action(&mut out, member);
                }
            }
            Event::DecisionRecorded {
                set_id,
                revision,
                decision,
                reason,
            } => {
                let _ = writeln!(out);
                let reason = reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "**Decision** on set {set_id} (revision {revision}): {}{reason}",
                    decision.as_str().replace('_', " ")
                );
            }
            Event::ActionUpdated {
                action_id,
                state,
                detail,
                exit_code,
                changed_path,
                ..
            } => {
                let state = state.as_str();
                if state == "approved" || state == "running" {
                    continue;
                }
                let _ = writeln!(out);
                let exit = exit_code.map(|c| format!(", exit {c}")).unwrap_or_default();
                let wrote = changed_path
                    .as_deref()
                    .map(|p| format!(", wrote `{p}`"))
                    .unwrap_or_default();
                let _ = writeln!(out, "Action #{action_id}: **{state}**{exit}{wrote}");
                if let Some(detail) = detail.as_deref().filter(|d| !d.trim().is_empty()) {
                    fenced(&mut out, "text", detail);
                }
            }
            Event::ErrorRecorded { message } => {
                section(&mut out, "The run failed", seq);
                let _ = writeln!(out, "{message}");
            }
            Event::RunInterrupted { reason } => {
                section(&mut out, "The run was interrupted", seq);
                let _ = writeln!(out, "{reason}");
            }
            Event::TaskPlanUpdated { tasks } => {
                section(&mut out, "Task plan", seq);
                for task in tasks {
                    let _ = writeln!(out, "- [{}] {}", task.status.as_str(), task.title);
                }
            }
            Event::ExportRecorded { .. } => {
                let _ = writeln!(out, "\n*{}.*", exported(&e.event, "Exported", '`'));
            }
            Event::SessionRenamed { title } => {
                let _ = writeln!(out);
                let _ = writeln!(out, "*Titled \"{title}\".*");
            }
            Event::SessionRegistered { .. }
            | Event::SessionClosed {}
            | Event::PauseRequested {}
            | Event::InterruptRequested {}
            | Event::RunResumed {}
            | Event::LifecycleChanged { .. }
            | Event::ActionProposed { .. }
            | Event::UsageRecorded { .. }
            | Event::ContextCondensed { .. } => {}
            // The rest are a workflow run's events (`Event::is_workflow_run` lists them): one
            // line each.
            run_event => {
                debug_assert!(
                    run_event.is_workflow_run(),
                    "the transcript does not show {}",
                    run_event.kind()
                );
                let _ = writeln!(out);
                let _ = writeln!(out, "*{}*", line(e));
            }
        }
    }
    out
}

fn section(out: &mut String, title: &str, seq: u64) {
    let _ = writeln!(out);
    let _ = writeln!(out, "## {title} <sub>event {seq}</sub>");
    let _ = writeln!(out);
}

fn quote(out: &mut String, text: &str) {
    for line in text.trim_end().lines() {
        let _ = writeln!(out, "> {line}");
    }
}

/// One proposed action: its headline, and what it would do (the command, or the edit).
fn action(out: &mut String, member: &ActionProposal) {
    let _ = writeln!(
        out,
        "- #{} `{}` ({} risk): {}",
        member.action_id,
        member.tool,
        member.risk.as_str(),
        headline(&member.tool, &member.arguments)
    );
    let args: serde_json::Value = serde_json::from_str(&member.arguments).unwrap_or_default();
    let field = |k: &str| args.get(k).and_then(|v| v.as_str());
    match (member.tool.as_str(), field("command")) {
        ("terminal", Some(command)) => fenced(out, "sh", command),
        ("file_editor", _) => {
            if let Some(text) = field("file_text") {
                fenced(out, "", text);
            }
            if let (Some(old), Some(new)) = (field("old_str"), field("new_str")) {
                let diff: String = old
                    .lines()
                    .map(|l| format!("-{l}\n"))
                    .chain(new.lines().map(|l| format!("+{l}\n")))
                    .collect();
                fenced(out, "diff", &diff);
            }
        }
        _ => {}
    }
}

/// One line for a durable event, as the CLI's event lists and the notebook's `watch` print it.
pub fn line(e: &RecordedEvent) -> String {
    match &e.event {
        Event::SessionRegistered { backend, .. } => {
            format!("session registered (backend {backend})")
        }
        Event::Message { role, text } => format!("{}: {}", role.as_str(), short(text, 200)),
        Event::ExportRecorded { .. } => exported(&e.event, "exported", ' '),
        Event::SessionClosed {} => "session closed".to_owned(),
        Event::SessionRenamed { title } => format!("titled \"{title}\""),
        Event::TaskSubmitted { text, policy, .. } => {
            format!("task ({}): {}", policy.as_str(), short(text, 200))
        }
        Event::GuidanceSent { text } => format!("guidance: {}", short(text, 200)),
        Event::PauseRequested {} => "pause requested".to_owned(),
        Event::InterruptRequested {} => {
            "stop requested: the running action is interrupted and the agent pauses".to_owned()
        }
        Event::RunResumed {} => "resumed".to_owned(),
        Event::LifecycleChanged { lifecycle } => {
            format!("agent is {}", lifecycle.as_str().replace('_', " "))
        }
        Event::ActionProposed { action } => format!(
            "proposed #{} {}",
            action.action_id,
            headline(&action.tool, &action.arguments)
        ),
        Event::ActionUpdated {
            action_id,
            state,
            detail,
            exit_code,
            changed_path,
            ..
        } => {
            let state = state.as_str();
            let exit = exit_code
                .map(|c| format!(" (exit {c})"))
                .unwrap_or_default();
            let detail = detail
                .as_deref()
                .map(|d| format!(": {}", short(d, 160)))
                .unwrap_or_default();
            let wrote = changed_path
                .as_deref()
                .map(|p| format!(" (wrote {p})"))
                .unwrap_or_default();
            format!("action #{action_id} {state}{exit}{wrote}{detail}")
        }
        Event::ActionSetPending { set } => format!(
            "waiting for a decision on set {} (revision {}, {} actions)",
            set.set_id,
            set.revision,
            set.members.len()
        ),
        Event::DecisionRecorded {
            set_id,
            revision,
            decision,
            reason,
        } => {
            let reason = reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            format!(
                "decision on set {set_id} (revision {revision}): {}{reason}",
                decision.as_str()
            )
        }
        Event::TaskPlanUpdated { tasks } => format!("task plan: {} steps", tasks.len()),
        Event::UsageRecorded { purpose, usage } => format!(
            "usage ({purpose}): {} prompt + {} completion tokens",
            usage.prompt_tokens, usage.completion_tokens
        ),
        Event::ErrorRecorded { message } => format!("error: {message}"),
        Event::ContextCondensed { forgotten } => {
            format!("older history summarized for the model ({forgotten} events)")
        }
        Event::RunInterrupted { reason } => format!("run interrupted: {reason}"),
        // A workflow run's events, and its review batches.
        event => workflow_line(event),
    }
}

/// One line for a workflow run's event (and a review batch's); any other event by its kind.
fn workflow_line(event: &Event) -> String {
    match event {
        Event::WorkflowStarted(start) => format!(
            "workflow {} {} started: {}",
            start.definition,
            start.version,
            short(&start.question, 160)
        ),
        Event::WorkflowStageStarted { stage, .. } => format!("workflow stage {stage} started"),
        Event::WorkflowStageEvaluated { assessment, .. } => format!(
            "workflow stage {} checked: {}",
            assessment.stage,
            if assessment.eligible {
                "eligible".to_owned()
            } else {
                format!(
                    "not eligible ({})",
                    short(&assessment.problems.join("; "), 160)
                )
            }
        ),
        Event::WorkflowStageAccepted {
            stage,
            by_researcher,
            ..
        } => format!(
            "workflow stage {stage} accepted{}",
            if *by_researcher {
                " by the researcher"
            } else {
                " (its checks passed; no acceptance asked)"
            }
        ),
        Event::WorkflowBudgetExhausted { stage, limit, .. } => {
            format!("workflow stage {stage}: budget used up ({limit}); the agent was paused")
        }
        Event::WorkflowReproductionPrepared(r) => format!(
            "workflow stage {}: rerun #{} allowed alone, to write {} ({} protected files as relied on)",
            r.stage,
            r.action_id,
            r.destination,
            r.protected.len()
        ),
        Event::WorkflowReproductionCompleted(r) => format!(
            "workflow stage {}: rerun #{} completed{}, {} {}",
            r.stage,
            r.action_id,
            r.exit_code
                .map(|c| format!(" with exit code {c}"))
                .unwrap_or_default(),
            r.output.path,
            if r.output.sha256.is_some() {
                "written"
            } else {
                "not written"
            }
        ),
        Event::WorkflowReviewStarted(r) => format!(
            "workflow stage {}: review {} began, {} files captured",
            r.stage,
            r.review_id,
            r.evidence.len()
        ),
        Event::WorkflowReviewAssessed(r) => format!(
            "workflow review {} assessed by Heartwood: {} proposals, {} findings",
            r.review_id,
            r.proposals.len(),
            r.findings.len()
        ),
        Event::WorkflowCorrectionBound {
            artifact, from, to, ..
        } => format!("workflow correction bound: {artifact} is now {to} (rechecked; {from} kept)"),
        Event::WorkflowCancelled { .. } => "workflow cancelled".to_owned(),
        Event::ReviewExecutionPrepared {
            offer, reviewers, ..
        } => match offer {
            heartwood_events::review_execution::ReviewOffer::Parallel { preview } => format!(
                "review batch of {} previewed to run {} at once (preview {})",
                reviewers.len(),
                preview.parallelism,
                short(&preview.digest, 12)
            ),
            heartwood_events::review_execution::ReviewOffer::Sequential { why } => format!(
                "review batch of {} runs one after another: {why}",
                reviewers.len()
            ),
        },
        Event::ReviewParallelConsented { preview } => {
            format!("the researcher consented to preview {}", short(preview, 12))
        }
        Event::ReviewParallelAdmitted { parallelism, .. } => {
            format!("review batch admitted: {parallelism} at once")
        }
        Event::ReviewParallelRefused { reason, .. } => {
            format!("review batch not admitted at once: {reason}")
        }
        other => other.kind().replace('_', " "),
    }
}

/// `text` on one line (newlines shown as ⏎), at most `max` characters.
pub fn short(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', "⏎");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max).collect();
    format!("{cut}…")
}

/// `text` in a fenced block whose fence is longer than any backtick run inside it.
fn fenced(out: &mut String, language: &str, text: &str) {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out);
    let _ = writeln!(out, "{fence}{language}");
    let _ = writeln!(out, "{}", text.trim_end_matches('\n'));
    let _ = writeln!(out, "{fence}");
}

/// "Exported N events to X": the destination when the export named one, else the bundle.
fn exported(event: &Event, verb: &str, quote: char) -> String {
    let Event::ExportRecorded {
        bundle,
        count,
        destination,
        ..
    } = event
    else {
        return String::new();
    };
    let to = destination.as_deref().unwrap_or(bundle);
    let quote = quote.to_string().trim().to_owned();
    format!("{verb} {count} events to {quote}{to}{quote}")
}

#[cfg(test)]
mod tests {
    use super::fenced;

    #[test]
    fn a_fence_outlasts_the_backticks_inside_it() {
        let mut out = String::new();
        fenced(&mut out, "", "a ```` b");
        assert!(out.contains("`````\n"), "{out}");
    }
}
