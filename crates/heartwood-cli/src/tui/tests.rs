//! Snapshot tests of every view, drawn on ratatui's `TestBackend` from projections the
//! gateway's reducer builds out of recorded events.

use heartwood_events::{
    ActionPolicy, ActionProposal, ActionSet, ActionSetId, ActionState, CommandKind, Decision,
    Event, Lifecycle, PlanTask, RecordedEvent, RiskLevel, Role, Seq, SessionId, UsageFigures,
};
use heartwood_gateway::config::CredentialBoundary;
use heartwood_gateway::startup::{Phase, RouteSummary, StartupPlan};
use heartwood_gateway::{ProjectContext, Snapshot};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, ConnectForm, Focus, Screen, SessionRow};
use super::intent::Intent;
use super::view;

mod review;
mod startup;
mod workflow;

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;

fn draw(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    terminal.draw(|f| view::render(f, app)).expect("draw");
    terminal.backend().to_string()
}

fn draw_at(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal.draw(|f| view::render(f, app)).expect("draw");
    terminal.backend().to_string()
}

fn session() -> SessionId {
    SessionId::parse("s20261130-101500-4242-0").expect("id")
}

/// A snapshot of the session after `events` (numbered from 1), as the gateway would give it,
/// with the pending set (if any) reviewed against an empty project.
fn snapshot(events: Vec<Event>, streaming: &str) -> Snapshot {
    let empty = tempfile::tempdir().expect("tempdir");
    snapshot_in(empty.path(), events, streaming)
}

/// As [`snapshot`], with the pending set reviewed against the files in `project`.
fn snapshot_in(project: &std::path::Path, events: Vec<Event>, streaming: &str) -> Snapshot {
    let recorded: Vec<RecordedEvent> = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| RecordedEvent::new(Seq::new(i as u64 + 1).expect("seq"), None, e))
        .collect();
    let projection = heartwood_gateway::reduce(session(), &recorded);
    let project = heartwood_gateway::ProjectContext::at(project).expect("a UTF-8 path");
    let review = projection
        .pending
        .as_ref()
        .map(|set| heartwood_gateway::review_set(&project, set));
    Snapshot {
        events: Vec::new(),
        revision: projection.revision,
        durable: projection.revision,
        projection,
        transient_revision: 0,
        streaming: streaming.to_owned(),
        output: None,
        review,
    }
}

fn proposal(id: u64, tool: &str, arguments: &str, risk: RiskLevel) -> ActionProposal {
    ActionProposal {
        action_id: id,
        response_id: "r".into(),
        tool: tool.into(),
        arguments: arguments.into(),
        risk,
        thought: None,
        sandbox: None,
    }
}

fn task(text: &str) -> Event {
    Event::TaskSubmitted {
        text: text.into(),
        policy: ActionPolicy::AlwaysReview,
        starting_commit: None,
    }
}

fn lifecycle(l: Lifecycle) -> Event {
    Event::LifecycleChanged { lifecycle: l }
}

fn agent(text: &str) -> Event {
    Event::Message {
        role: Role::Agent,
        text: text.into(),
    }
}

fn completed(id: u64, version: u32, output: &str) -> Event {
    Event::ActionUpdated {
        action_id: id,
        version,
        state: ActionState::Completed,
        detail: Some(output.into()),
        exit_code: Some(0),
        changed_path: None,
    }
}

fn usage(purpose: &str, prompt: u64) -> Event {
    Event::UsageRecorded {
        purpose: purpose.into(),
        usage: UsageFigures {
            prompt_tokens: prompt,
            completion_tokens: 40,
            calls: 1,
            ..UsageFigures::default()
        },
    }
}

fn pending_events() -> Vec<Event> {
    let mut one = proposal(
        4,
        "terminal",
        r#"{"command":"python fit.py --split group"}"#,
        RiskLevel::Medium,
    );
    one.thought = Some("I'll fit the model on the training sites first.".into());
    let two = proposal(
        5,
        "file_editor",
        r##"{"command":"create","path":"reports/plan.md","file_text":"# Plan\n\nOLS\n"}"##,
        RiskLevel::Medium,
    );
    vec![
        Event::SessionRegistered {
            backend: "native".into(),
            workflow: None,
        },
        task("Fit OLS with a group-disjoint split"),
        lifecycle(Lifecycle::Running),
        usage("agent", 1200),
        Event::ActionProposed {
            action: one.clone(),
        },
        Event::ActionProposed {
            action: two.clone(),
        },
        lifecycle(Lifecycle::WaitingForDecision),
        Event::ActionSetPending {
            set: ActionSet {
                set_id: ActionSetId::parse("set-4").expect("id"),
                revision: 8,
                members: vec![one, two],
            },
        },
    ]
}

fn session_app(snapshot: Snapshot) -> App {
    let mut app = App::new(Screen::Session {
        id: session(),
        snapshot: None,
    });
    app.show_snapshot(snapshot);
    app
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn a_long_conversation_shows_its_latest_part() {
    let mut events = vec![task("Summarize every file")];
    for i in 0..2_000u64 {
        let id = 10 + i;
        events.push(Event::ActionProposed {
            action: proposal(
                id,
                "terminal",
                &format!(r#"{{"command":"wc -l data/part-{i}.csv"}}"#),
                RiskLevel::Low,
            ),
        });
        events.push(completed(
            id,
            2,
            &format!(
                "{} data/part-{i}.csv\nline two\nline three\nline four",
                100 + i
            ),
        ));
        events.push(agent(&format!(
            "Part {i} has {} rows; moving on to the next part of the data set.",
            100 + i
        )));
    }
    events.push(lifecycle(Lifecycle::Finished));
    insta::assert_snapshot!(draw(&session_app(snapshot(events, ""))));
}

#[test]
fn ctrl_c_while_the_agent_works_asks_before_quitting() {
    let mut events = pending_events();
    events.truncate(4);
    let mut app = session_app(snapshot(events, ""));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.on_key(ctrl_c), None);
    assert!(
        app.notice
            .as_deref()
            .is_some_and(|n| n.contains("Ctrl-C again"))
    );
    assert_eq!(app.on_key(ctrl_c), Some(Intent::Quit));
}

#[test]
fn typing_while_running_sends_guidance_and_streamed_text_shows() {
    let mut events = pending_events();
    events.truncate(4);
    events.push(Event::TaskPlanUpdated {
        tasks: vec![
            PlanTask {
                title: "Check readiness".into(),
                notes: String::new(),
                status: heartwood_events::PlanStatus::Done,
            },
            PlanTask {
                title: "Fit OLS".into(),
                notes: String::new(),
                status: heartwood_events::PlanStatus::InProgress,
            },
            PlanTask {
                title: "Write the report".into(),
                notes: String::new(),
                status: heartwood_events::PlanStatus::Todo,
            },
        ],
    });
    let mut app = session_app(snapshot(
        events,
        "I will fit the model on the training groups and",
    ));
    for c in "keep group 7 out".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!(draw(&app));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::Say("keep group 7 out".into()))
    );
}

#[test]
fn a_failed_run_says_why_in_plain_words() {
    let events = vec![
        task("Fit the model"),
        lifecycle(Lifecycle::Running),
        Event::ErrorRecorded {
            message: "the model service at http://127.0.0.1:9/v1 refused the connection; start it or run `heartwood status`".into(),
        },
        lifecycle(Lifecycle::Failed),
    ];
    insta::assert_snapshot!(draw(&session_app(snapshot(events, ""))));
}

#[test]
fn help_lists_the_keys() {
    let mut app = session_app(snapshot(pending_events(), ""));
    app.help = true;
    insta::assert_snapshot!(draw(&app));
}

#[test]
fn a_frame_of_a_ten_thousand_message_conversation_draws_only_what_shows() {
    let mut events = vec![task("Go")];
    for i in 0..10_000 {
        events.push(agent(&format!("message {i}")));
    }
    let app = session_app(snapshot(events, ""));
    let screen = draw(&app);
    assert!(screen.contains("message 9999"), "{screen}");
    assert!(!screen.contains("message 9000 "), "{screen}");
}

#[test]
fn the_agents_markdown_reads_as_formatted_text_not_markup() {
    let events = vec![
        task("Summarize the fit"),
        agent(
            "## Result\n\nThe slope is **-0.75** (*held-out* RMSE `0.94`).\n\n1. fit on the training sites\n2. predict the held-out site\n\n```python\nimport statistics\nprint(statistics.fmean([1.0, 2.0]))\n```",
        ),
        lifecycle(Lifecycle::Finished),
    ];
    let screen = draw(&session_app(snapshot(events, "")));
    assert!(
        !screen.contains("**") && !screen.contains("```"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn a_running_command_shows_its_output_so_far_and_how_long_it_has_run() {
    let events = vec![
        task("Count the rows"),
        lifecycle(Lifecycle::Running),
        Event::ActionProposed {
            action: proposal(
                4,
                "terminal",
                r#"{"command":"python count.py"}"#,
                RiskLevel::Low,
            ),
        },
        Event::ActionUpdated {
            action_id: 4,
            version: 2,
            state: ActionState::Running,
            detail: None,
            exit_code: None,
            changed_path: None,
        },
    ];
    let mut snap = snapshot(events, "");
    let started = snap.projection.actions[0]
        .started_at
        .clone()
        .expect("the reducer records when it started");
    snap.output = Some(heartwood_events::ToolOutput {
        action_id: 4,
        text: (1..=8).map(|i| format!("counted part {i}\n")).collect(),
    });
    let mut app = session_app(snap);
    app.now = Some(started);
    let screen = draw(&app);
    assert!(screen.contains("running for 0 s"), "{screen}");
    assert!(
        screen.contains("counted part 8") && !screen.contains("counted part 3"),
        "{screen}"
    );
    assert!(screen.contains("Esc stops it now"), "{screen}");
}
