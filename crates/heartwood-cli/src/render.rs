//! How events and pending sets read in a terminal. Rendering only: what an event means for the
//! session comes from the gateway's projection.

use heartwood_events::{ActionSet, Event, RecordedEvent, SessionId};

/// One line for a durable event.
pub fn describe(e: &RecordedEvent) -> String {
    match &e.event {
        Event::SessionRegistered { backend, .. } => {
            format!("session registered (backend {backend})")
        }
        Event::Message { role, text } => format!("{}: {}", role.as_str(), short(text, 200)),
        Event::ExportRecorded { bundle, count, .. } => {
            format!("exported {count} events to {bundle}")
        }
        Event::SessionClosed {} => "session closed".to_owned(),
        Event::TaskSubmitted { text, policy, .. } => {
            format!("task ({}): {}", policy.as_str(), short(text, 200))
        }
        Event::GuidanceSent { text } => format!("guidance: {}", short(text, 200)),
        Event::PauseRequested {} => "pause requested".to_owned(),
        Event::RunResumed {} => "resumed".to_owned(),
        Event::LifecycleChanged { lifecycle } => {
            format!("agent is {}", lifecycle.as_str().replace('_', " "))
        }
        Event::ActionProposed { action } => format!(
            "proposed #{} {} {}",
            action.action_id,
            action.tool,
            short(&action.arguments, 160)
        ),
        Event::ActionUpdated {
            action_id,
            state,
            detail,
            exit_code,
            changed_path,
            ..
        } => {
            let state = serde_json::to_value(state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
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
    }
}

/// Prints a pending set whole, and the exact commands that answer it.
pub fn pending_set(session: &SessionId, set: &ActionSet) {
    println!(
        "\nThe agent proposes {} action{} (set {}, revision {}). Nothing runs until you decide:",
        set.members.len(),
        if set.members.len() == 1 { "" } else { "s" },
        set.set_id,
        set.revision
    );
    for member in &set.members {
        if let Some(thought) = &member.thought {
            println!("  agent: {}", short(thought, 400));
        }
        let risk = serde_json::to_value(member.risk)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        println!(
            "  #{} {} [{risk} risk] {}",
            member.action_id, member.tool, member.arguments
        );
    }
    let base = format!(
        "heartwood decide {session} --set {} --revision {}",
        set.set_id, set.revision
    );
    println!("\nAllow all of them once:  {base} allow");
    println!("Reject all of them:      {base} reject --reason \"why\"");
}

fn short(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', "⏎");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max).collect();
    format!("{cut}…")
}
