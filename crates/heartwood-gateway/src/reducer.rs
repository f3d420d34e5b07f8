//! The one reducer: durable events in, [`SessionProjection`] out.
//!
//! Live sessions and replays of stored sessions both go through [`apply`], so the projection an
//! interface sees after a restart is exactly the one it saw live. It is pure: no clock, no I/O,
//! nothing but the event and the projection so far.

use heartwood_events::{
    ActionPolicy, ActionState, ActionView, CommandName, ConversationEntry, DecisionView, Event,
    Lifecycle, PurposeUsage, RecordedEvent, Role, SessionId, SessionProjection, Suggestion,
    WaitKind,
};

/// The projection of a stored session's events.
pub fn replay<'a>(
    session: SessionId,
    events: impl IntoIterator<Item = &'a RecordedEvent>,
) -> SessionProjection {
    let mut projection = SessionProjection::empty(session);
    for event in events {
        apply(&mut projection, event);
    }
    derive(&mut projection);
    projection
}

/// Applies one durable event and refreshes the derived fields.
pub fn apply_one(p: &mut SessionProjection, recorded: &RecordedEvent) {
    apply(p, recorded);
    derive(p);
}

/// Applies one event without refreshing the derived fields (replay derives once at the end).
fn apply(p: &mut SessionProjection, recorded: &RecordedEvent) {
    let seq = recorded.seq.get();
    p.revision = seq;
    match &recorded.event {
        Event::SessionRegistered { .. } => {}
        Event::Message { role, text } => say(p, seq, *role, text),
        Event::ExportRecorded { .. } => p.exports += 1,
        Event::SessionClosed {} => p.closed = true,
        Event::SessionRenamed { title } => p.title = Some(title_of(title)),
        Event::TaskSubmitted { text, policy, .. } => {
            if p.title.is_none() {
                p.title = Some(title_of(text));
            }
            say(p, seq, Role::Researcher, text);
            p.policy = *policy;
            p.closed = false;
            p.last_error = None;
            p.interrupted = false;
            p.lifecycle = Lifecycle::Running;
        }
        Event::GuidanceSent { text } => say(p, seq, Role::Researcher, text),
        Event::PauseRequested {} if p.lifecycle == Lifecycle::Running => {
            p.stopping = Some("pausing after the current step".to_owned());
        }
        Event::InterruptRequested {} if p.lifecycle == Lifecycle::Running => {
            p.stopping = Some("stopping the running action now".to_owned());
        }
        Event::PauseRequested {} | Event::InterruptRequested {} => {}
        Event::RunResumed {} => {
            p.lifecycle = Lifecycle::Running;
            p.interrupted = false;
        }
        // The engine passes through idle when a new message reaches a finished conversation
        // and after a rejection, and the worker then runs it at once: while a run is on, idle
        // is a step inside it, not where the session rests. Showing it would tell an interface
        // the run ended before it began.
        Event::LifecycleChanged {
            lifecycle: Lifecycle::Idle,
        } if p.lifecycle == Lifecycle::Running => {}
        Event::LifecycleChanged { lifecycle } => {
            p.lifecycle = *lifecycle;
            p.stopping = None;
            p.interrupted &= *lifecycle == Lifecycle::Failed;
            if *lifecycle != Lifecycle::WaitingForDecision {
                p.pending = None;
            }
        }
        Event::ActionProposed { action } => action_proposed(p, action, seq),
        Event::ActionUpdated {
            action_id,
            version,
            state,
            detail,
            exit_code,
            changed_path,
        } => {
            if let Ok(i) = p
                .actions
                .binary_search_by_key(action_id, |a| a.proposal.action_id)
            {
                let update = ActionUpdate {
                    version: *version,
                    state: *state,
                    detail,
                    exit_code: *exit_code,
                    changed_path,
                };
                action_updated(&mut p.actions[i], update, recorded);
            }
        }
        Event::ActionSetPending { set } => {
            p.pending = Some(set.clone());
            p.lifecycle = Lifecycle::WaitingForDecision;
        }
        Event::DecisionRecorded {
            set_id,
            revision,
            decision,
            reason,
        } => {
            p.pending = None;
            p.last_decision = Some(DecisionView {
                set_id: set_id.clone(),
                revision: *revision,
                decision: *decision,
                reason: reason.clone(),
                seq,
            });
            // The worker continues the run at once: with the actions, or with the rejection.
            p.lifecycle = Lifecycle::Running;
        }
        Event::TaskPlanUpdated { tasks } => p.task_plan.clone_from(tasks),
        Event::UsageRecorded { purpose, usage } => usage_recorded(p, purpose, usage),
        Event::ErrorRecorded { message } => {
            // In the conversation too, so the failure stays in the history where it happened.
            say(p, seq, Role::System, &format!("The run failed: {message}"));
            p.last_error = Some(message.clone());
        }
        Event::ContextCondensed { .. } => {}
        Event::WorkflowBudgetExhausted { limit, .. } => {
            say(
                p,
                seq,
                Role::System,
                &format!(
                    "The stage's budget is used up ({limit}): the agent pauses, and this stage \
                     gets no further model continuation. Evaluate what it wrote, or cancel the run."
                ),
            );
            if p.lifecycle == Lifecycle::Running {
                p.stopping = Some("pausing: the stage's budget is used up".to_owned());
            }
        }
        Event::RunInterrupted { reason } => {
            say(
                p,
                seq,
                Role::System,
                &format!("The run was interrupted: {reason}"),
            );
            p.last_error = Some(reason.clone());
            p.stopping = None;
            if p.run_is_open() {
                p.lifecycle = Lifecycle::Failed;
                p.interrupted = true;
            }
        }
        // The rest are a workflow run's own events (`Event::is_workflow_run` lists them): the
        // run's fold below applies them.
        run_event => debug_assert!(
            run_event.is_workflow_run(),
            "the reducer does not apply {}",
            run_event.kind()
        ),
    }
    // A workflow run follows every event: its own, and the turn's actions, usage and time.
    crate::workflow_view::apply(p, recorded);
    crate::review_execution::apply(p, recorded);
}

/// A proposed action joins the list, kept in id order.
fn action_proposed(p: &mut SessionProjection, action: &heartwood_events::ActionProposal, seq: u64) {
    let view = ActionView {
        headline: crate::review::headline(&action.tool, &action.arguments),
        proposal: action.clone(),
        proposed_seq: seq,
        version: 1,
        state: ActionState::Proposed,
        detail: None,
        exit_code: None,
        changed_path: None,
        started_at: None,
    };
    // Ids only grow, so pushing keeps the list sorted; the search covers odd logs.
    match p
        .actions
        .binary_search_by_key(&action.action_id, |a| a.proposal.action_id)
    {
        Ok(i) => p.actions[i] = view,
        Err(i) => p.actions.insert(i, view),
    }
}

/// What an `ActionUpdated` event says about one action.
struct ActionUpdate<'a> {
    version: u32,
    state: ActionState,
    detail: &'a Option<String>,
    exit_code: Option<i64>,
    changed_path: &'a Option<String>,
}

/// An action moves on: its state, what it printed, and the file it changed (kept once known).
fn action_updated(action: &mut ActionView, update: ActionUpdate<'_>, recorded: &RecordedEvent) {
    action.version = update.version;
    if update.state == ActionState::Running && action.state != ActionState::Running {
        action.started_at = Some(recorded.time.clone());
    }
    action.state = update.state;
    action.detail.clone_from(update.detail);
    action.exit_code = update.exit_code;
    if update.changed_path.is_some() {
        action.changed_path.clone_from(update.changed_path);
    }
}

/// Model usage adds to the total and to its purpose's line, and the summary follows.
fn usage_recorded(
    p: &mut SessionProjection,
    purpose: &str,
    usage: &heartwood_events::UsageFigures,
) {
    p.usage.total.add(usage);
    match p.usage.by_purpose.iter_mut().find(|u| u.purpose == purpose) {
        Some(line) => line.usage.add(usage),
        None => p.usage.by_purpose.push(PurposeUsage {
            purpose: purpose.to_owned(),
            label: purpose_label(purpose),
            usage: *usage,
        }),
    }
    p.usage.summary = usage_summary(&p.usage.total);
}

/// A session's title from the text that started it: its first line, at most 80 characters.
pub(crate) fn title_of(text: &str) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let mut title: String = first.trim().chars().take(80).collect();
    if first.trim().chars().count() > 80 {
        title.push('…');
    }
    title
}

fn say(p: &mut SessionProjection, seq: u64, role: Role, text: &str) {
    // The researcher's words are shown as typed; the agent's are Markdown.
    let blocks = if role == Role::Agent {
        crate::markdown::blocks(text)
    } else {
        Vec::new()
    };
    let speaker = match role {
        Role::Researcher => "you",
        Role::Agent => "agent",
        Role::System => "heartwood",
    };
    p.conversation.push(ConversationEntry {
        seq,
        role,
        speaker: speaker.to_owned(),
        text: text.to_owned(),
        blocks,
    });
}

/// A label for people for a usage purpose.
fn purpose_label(purpose: &str) -> String {
    match purpose {
        "agent" => "Agent".to_owned(),
        "condenser" => "History summaries".to_owned(),
        other => match other.strip_prefix("task:") {
            Some(id) => format!("Specialist task #{id}"),
            None => other.to_owned(),
        },
    }
}

/// `p` as a run nobody serves reads to a reader: the process running it ended mid-run, so it
/// is stopped (interrupted, `reason` saying how to take it over), as the next process to serve
/// it records unless its engine can carry it on. Nothing is recorded: a read changes nothing.
pub(crate) fn as_cut_off(p: &mut SessionProjection, reason: String) {
    if !p.run_is_open() {
        return;
    }
    p.lifecycle = Lifecycle::Failed;
    p.interrupted = true;
    p.stopping = None;
    p.last_error = Some(reason);
    derive(p);
}

/// Refreshes what follows from the rest: activity, available commands, status line and
/// suggestions. These rules are the single source of "what may happen now" for every interface.
fn derive(p: &mut SessionProjection) {
    p.available_commands = available_commands(p).to_vec();
    p.text_means = p
        .text_commands("", p.policy)
        .first()
        .map_or(CommandName::SubmitTask, |k| k.command_name());
    p.activity = activity(p);
    p.status_line = status_line(p);
    p.suggestions = suggestions(p);
    p.specialists = specialists(p);
    crate::workflow_view::derive(p);
    crate::review_execution::derive(p);
    p.waits_for = crate::workflow_view::waits_for(p);
    if let Some(w) = p
        .waits_for
        .as_ref()
        .filter(|w| w.kind != WaitKind::Decision)
    {
        p.status_line = w.text.clone();
    }
}

/// Each `task` action as the specialist task it started: role, state, answer, usage.
fn specialists(p: &SessionProjection) -> Vec<heartwood_events::SpecialistTaskView> {
    p.actions
        .iter()
        .filter(|a| a.proposal.tool == "task")
        .map(|a| {
            let args: serde_json::Value =
                serde_json::from_str(&a.proposal.arguments).unwrap_or_default();
            let field = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
            let purpose = format!("task:{}", a.proposal.action_id);
            let answer = (a.state == ActionState::Completed)
                .then(|| a.detail.clone())
                .flatten();
            // A review answers with structured proposals; anything else is a summary.
            let proposals = answer
                .as_deref()
                .and_then(|text| {
                    serde_json::from_str::<heartwood_events::workflow::ReviewProposals>(text).ok()
                })
                .map(|r| r.proposals);
            heartwood_events::SpecialistTaskView {
                action_id: a.proposal.action_id,
                role: field("subagent_type"),
                description: field("description"),
                state: a.state,
                answer: answer
                    .or_else(|| a.detail.clone().filter(|_| a.state == ActionState::Failed)),
                proposals,
                usage: p
                    .usage
                    .by_purpose
                    .iter()
                    .find(|u| u.purpose == purpose)
                    .map(|u| u.usage)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

fn available_commands(p: &SessionProjection) -> &'static [CommandName] {
    use CommandName::{
        Close, Decide, Export, Interrupt, Pause, Rename, Resume, SendGuidance, SubmitTask,
    };
    match p.lifecycle {
        _ if p.closed => &[SubmitTask, Export, Rename],
        Lifecycle::Idle | Lifecycle::Finished | Lifecycle::Failed | Lifecycle::Stuck => {
            &[SubmitTask, Export, Close, Rename]
        }
        Lifecycle::Running => &[SendGuidance, Pause, Interrupt, Export, Rename],
        Lifecycle::Paused => &[Resume, SendGuidance, Export, Close, Rename],
        Lifecycle::WaitingForDecision if p.pending.is_some() => {
            &[Decide, SendGuidance, Export, Close, Rename]
        }
        // Settling: the set is published once the agent has stopped.
        Lifecycle::WaitingForDecision => &[SendGuidance, Export, Rename],
    }
}

fn activity(p: &SessionProjection) -> String {
    if let Some(action) = p
        .actions
        .iter()
        .rev()
        .find(|a| a.state == ActionState::Running)
    {
        return format!("running {}", action.proposal.tool);
    }
    match p.lifecycle {
        Lifecycle::Running => "thinking".to_owned(),
        Lifecycle::WaitingForDecision => "waiting for your decision".to_owned(),
        Lifecycle::Paused => "paused".to_owned(),
        _ => String::new(),
    }
}

fn status_line(p: &SessionProjection) -> String {
    if p.closed {
        return "Closed. Give a new task to continue this session.".to_owned();
    }
    match p.lifecycle {
        Lifecycle::Idle if p.conversation.is_empty() => "Ready for a task.".to_owned(),
        Lifecycle::Idle => "Idle: the last run ended; give the next task.".to_owned(),
        Lifecycle::Running => {
            let automation = if p.policy == ActionPolicy::LowRiskAutomation {
                " Low-risk actions run without review in this task."
            } else {
                ""
            };
            match &p.stopping {
                Some(stopping) => format!("Working ({}); {stopping}.{automation}", p.activity),
                None => format!("Working ({}).{automation}", p.activity),
            }
        }
        Lifecycle::Paused => "Paused between steps; resume to continue.".to_owned(),
        Lifecycle::WaitingForDecision => match &p.pending {
            Some(set) => format!(
                "Waiting for your decision on {} proposed action{} (set {}, revision {}).",
                set.members.len(),
                if set.members.len() == 1 { "" } else { "s" },
                set.set_id,
                set.revision
            ),
            None => "The agent is settling its proposal.".to_owned(),
        },
        Lifecycle::Finished => "Finished.".to_owned(),
        Lifecycle::Failed if p.interrupted => format!(
            "Stopped: {}",
            p.last_error.as_deref().unwrap_or("the run was cut off")
        ),
        Lifecycle::Failed => format!(
            "Failed: {}",
            p.last_error.as_deref().unwrap_or("see the last error")
        ),
        Lifecycle::Stuck => "Stopped: the agent repeated itself without progress.".to_owned(),
    }
}

fn suggestions(p: &SessionProjection) -> Vec<Suggestion> {
    use CommandName::{Decide, Export, Interrupt, Resume, SendGuidance, SubmitTask};
    let typed = |text: &str, command: CommandName| Suggestion {
        text: text.to_owned(),
        command: Some(command),
        shell: None,
    };
    let shell = |text: &str, command: String| Suggestion {
        text: text.to_owned(),
        command: None,
        shell: Some(command),
    };
    match p.lifecycle {
        Lifecycle::WaitingForDecision if p.pending.is_some() => vec![
            typed(
                "Review every action in the set, then allow it once or reject it all",
                Decide,
            ),
            typed("Reject with a reason to steer the agent", Decide),
        ],
        Lifecycle::Running => vec![
            typed(
                "Send guidance if the agent is heading the wrong way",
                SendGuidance,
            ),
            typed("Stop the running action now", Interrupt),
        ],
        Lifecycle::Paused => vec![
            typed("Resume the task", Resume),
            typed("Send guidance before resuming", SendGuidance),
        ],
        Lifecycle::Failed => vec![
            typed(
                "Read the error, fix the cause, then give the task again",
                SubmitTask,
            ),
            shell("Check the model connection", "heartwood status".to_owned()),
        ],
        Lifecycle::Stuck => vec![typed(
            "Give the agent more specific guidance in a new task",
            SubmitTask,
        )],
        Lifecycle::Finished => vec![
            shell(
                "Review what changed in the project",
                format!("heartwood workspace changes --session {}", p.session),
            ),
            Suggestion {
                shell: Some(format!("heartwood sessions export {}", p.session)),
                ..typed("Export the session for the record", Export)
            },
        ],
        Lifecycle::Idle => vec![typed("Describe the task for the agent", SubmitTask)],
        Lifecycle::WaitingForDecision => Vec::new(),
    }
}

/// Usage in words: tokens, then the cost in dollars, or "cost unknown" when any call had no
/// price (a sum that silently left calls out would read as a real, smaller cost).
pub(crate) fn usage_summary(total: &heartwood_events::UsageFigures) -> String {
    let tokens = format!(
        "{} tokens in, {} out",
        thousands(total.prompt_tokens),
        thousands(total.completion_tokens)
    );
    let cost = if total.calls == 0 {
        return String::new();
    } else if total.priced_calls >= total.calls {
        format!("${}", dollars(total.cost_micros))
    } else if total.priced_calls == 0 {
        "cost unknown (no price set)".to_owned()
    } else {
        format!(
            "cost unknown ({} of {} calls unpriced)",
            total.calls - total.priced_calls,
            total.calls
        )
    };
    format!("{tokens} · {cost}")
}

/// `n` with thousands separated by commas.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Millionths of a dollar as dollars: cents for a dollar or more, four decimals below (a few
/// calls to a cheap model cost fractions of a cent, which "$0.00" would hide).
fn dollars(micros: u64) -> String {
    let ten_thousandths = (micros + 50) / 100;
    if ten_thousandths < 10_000 {
        format!("0.{ten_thousandths:04}")
    } else {
        let cents = (micros + 5_000) / 10_000;
        format!("{}.{:02}", cents / 100, cents % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heartwood_events::{ActionProposal, ActionSet, ActionSetId, RiskLevel, Seq};

    fn recorded(seq: u64, event: Event) -> RecordedEvent {
        RecordedEvent::new(Seq::new(seq).expect("seq"), None, event)
    }

    #[test]
    fn a_decision_is_available_only_while_a_set_is_pending() {
        let id = SessionId::parse("s").expect("id");
        let proposal = ActionProposal {
            action_id: 2,
            response_id: "r".into(),
            tool: "terminal".into(),
            arguments: "{}".into(),
            risk: RiskLevel::Medium,
            thought: None,
            sandbox: None,
        };
        let mut events = vec![
            recorded(
                1,
                Event::TaskSubmitted {
                    text: "t".into(),
                    policy: ActionPolicy::AlwaysReview,
                    starting_commit: None,
                },
            ),
            recorded(
                2,
                Event::ActionProposed {
                    action: proposal.clone(),
                },
            ),
            recorded(
                3,
                Event::LifecycleChanged {
                    lifecycle: Lifecycle::WaitingForDecision,
                },
            ),
        ];
        let settling = replay(id.clone(), &events);
        assert!(
            !settling.allows(CommandName::Decide),
            "decide offered before the set is published"
        );
        assert!(!settling.allows(CommandName::SubmitTask));
        events.push(recorded(
            4,
            Event::ActionSetPending {
                set: ActionSet {
                    set_id: ActionSetId::parse("set-2").expect("id"),
                    revision: 4,
                    members: vec![proposal],
                },
            },
        ));
        let waiting = replay(id, &events);
        assert!(waiting.allows(CommandName::Decide));
        assert!(
            waiting.status_line.contains("set set-2, revision 4"),
            "{}",
            waiting.status_line
        );
        assert!(waiting.suggestions.len() <= 3);
    }

    #[test]
    fn usage_is_said_in_money_only_when_every_call_had_a_price() {
        use heartwood_events::UsageFigures;
        let figures = |calls, priced_calls, cost_micros| UsageFigures {
            prompt_tokens: 1_234_567,
            completion_tokens: 890,
            calls,
            priced_calls,
            cost_micros,
            ..UsageFigures::default()
        };
        assert_eq!(usage_summary(&figures(0, 0, 0)), "");
        assert_eq!(
            usage_summary(&figures(3, 3, 1_999_999)),
            "1,234,567 tokens in, 890 out · $2.00"
        );
        assert_eq!(
            usage_summary(&figures(3, 3, 999_990)),
            "1,234,567 tokens in, 890 out · $1.00"
        );
        assert_eq!(
            usage_summary(&figures(3, 3, 1_234)),
            "1,234,567 tokens in, 890 out · $0.0012"
        );
        assert_eq!(
            usage_summary(&figures(3, 0, 0)),
            "1,234,567 tokens in, 890 out · cost unknown (no price set)"
        );
        assert_eq!(
            usage_summary(&figures(3, 2, 500)),
            "1,234,567 tokens in, 890 out · cost unknown (1 of 3 calls unpriced)"
        );
    }

    #[test]
    fn usage_accumulates_in_total_and_per_purpose_with_labels() {
        let id = SessionId::parse("s").expect("id");
        let usage = |purpose: &str, tokens| Event::UsageRecorded {
            purpose: purpose.into(),
            usage: heartwood_events::UsageFigures {
                prompt_tokens: tokens,
                calls: 1,
                ..Default::default()
            },
        };
        let events = [
            recorded(1, usage("agent", 10)),
            recorded(2, usage("condenser", 5)),
            recorded(3, usage("agent", 7)),
        ];
        let p = replay(id, &events);
        assert_eq!(p.usage.total.prompt_tokens, 22);
        assert_eq!(p.usage.total.calls, 3);
        let agent = &p.usage.by_purpose[0];
        assert_eq!(
            (agent.label.as_str(), agent.usage.prompt_tokens),
            ("Agent", 17)
        );
        assert_eq!(p.usage.by_purpose[1].label, "History summaries");
    }

    #[test]
    fn a_pause_or_stop_asked_for_mid_step_is_acknowledged_until_the_step_ends() {
        let id = SessionId::parse("s").expect("id");
        let task = recorded(
            1,
            Event::TaskSubmitted {
                text: "t".into(),
                policy: heartwood_events::ActionPolicy::AlwaysReview,
                starting_commit: None,
            },
        );
        for (asked, says) in [
            (Event::PauseRequested {}, "pausing after the current step"),
            (
                Event::InterruptRequested {},
                "stopping the running action now",
            ),
        ] {
            let events = vec![task.clone(), recorded(2, asked)];
            let p = replay(id.clone(), &events);
            assert!(p.status_line.contains(says), "{}", p.status_line);
            let mut events = events;
            events.push(recorded(
                3,
                Event::LifecycleChanged {
                    lifecycle: Lifecycle::Paused,
                },
            ));
            let p = replay(id.clone(), &events);
            assert_eq!(p.stopping, None);
            assert!(p.allows(CommandName::Resume));
        }
    }
}
