//! Snapshot tests of every view, drawn on ratatui's `TestBackend` from projections the
//! gateway's reducer builds out of recorded events.

use heartwood_events::{
    ActionPolicy, ActionProposal, ActionSet, ActionSetId, ActionState, CommandKind, Decision,
    Event, Lifecycle, PlanTask, RecordedEvent, RiskLevel, Role, Seq, SessionId, UsageFigures,
};
use heartwood_gateway::Snapshot;
use heartwood_gateway::config::CredentialBoundary;
use heartwood_gateway::reducer;
use heartwood_gateway::startup::{Phase, RouteSummary, StartupPlan};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, ConnectForm, Focus, Intent, Screen, SessionRow};
use super::view;

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;

fn draw(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    terminal.draw(|f| view::render(f, app)).expect("draw");
    terminal.backend().to_string()
}

fn session() -> SessionId {
    SessionId::parse("s20261130-101500-4242-0").expect("id")
}

/// A snapshot of the session after `events` (numbered from 1), as the gateway would give it.
fn snapshot(events: Vec<Event>, streaming: &str) -> Snapshot {
    let recorded: Vec<RecordedEvent> = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| RecordedEvent::new(Seq::new(i as u64 + 1).expect("seq"), None, e))
        .collect();
    let projection = reducer::replay(session(), &recorded);
    Snapshot {
        events: Vec::new(),
        revision: projection.revision,
        projection,
        transient_revision: 0,
        streaming: streaming.to_owned(),
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
fn startup_asks_for_a_model_with_a_form() {
    let plan = StartupPlan {
        phase: Phase::ModelRequired,
        explanation: "No model is connected to this project yet.".into(),
        next_action:
            "Connect an OpenAI-compatible service below, or run `heartwood model connect`.".into(),
        route: None,
        sessions: 0,
    };
    let form = ConnectForm {
        base_url: "http://localhost:11434/v1".into(),
        model: "qwen2.5-co".into(),
        field: 1,
    };
    insta::assert_snapshot!(draw(&App::new(Screen::Startup { plan, form })));
}

#[test]
fn startup_explains_an_unreachable_service() {
    let plan = StartupPlan {
        phase: Phase::ConnectionRequired,
        explanation: "Nothing answers at http://127.0.0.1:9/v1 (connection refused).".into(),
        next_action: "Start the model service, then press Enter to check again.".into(),
        route: Some(RouteSummary {
            category: "compatible".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key_env: None,
            credential_boundary: CredentialBoundary::CredentialFree,
        }),
        sessions: 2,
    };
    insta::assert_snapshot!(draw(&App::new(Screen::Startup {
        plan,
        form: ConnectForm::default()
    })));
}

#[test]
fn the_session_list_marks_pending_decisions() {
    let row = |id: &str, when: &str, status: &str, pending| SessionRow {
        id: SessionId::parse(id).expect("id"),
        when: when.into(),
        status: status.into(),
        pending,
    };
    let rows = vec![
        row(
            "s20261130-101500-4242-0",
            "2026-11-30T10:15:00.000Z",
            "Waiting for your decision on 2 proposed actions (set set-4, revision 8).",
            true,
        ),
        row(
            "s20261129-170000-1111-0",
            "2026-11-29T17:00:00.000Z",
            "Finished.",
            false,
        ),
        row(
            "s20261128-090000-2222-0",
            "2026-11-28T09:00:00.000Z",
            "Failed: the model service refused the request",
            false,
        ),
    ];
    insta::assert_snapshot!(draw(&App::new(Screen::Sessions { rows, selected: 0 })));
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
fn a_pending_set_is_reviewed_whole() {
    let app = session_app(snapshot(pending_events(), ""));
    assert_eq!(
        app.focus,
        Focus::Review,
        "the review panel takes focus when a set appears"
    );
    insta::assert_snapshot!(draw(&app));
}

#[test]
fn rejecting_asks_for_a_reason_and_names_the_set_and_revision_shown() {
    let mut app = session_app(snapshot(pending_events(), ""));
    assert_eq!(app.on_key(key(KeyCode::Char('r'))), None);
    for c in "use the held-out groups".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!(draw(&app));
    let intent = app.on_key(key(KeyCode::Enter));
    assert_eq!(
        intent,
        Some(Intent::Submit(CommandKind::Decide {
            set_id: ActionSetId::parse("set-4").expect("id"),
            revision: 8,
            decision: Decision::RejectAll,
            reason: Some("use the held-out groups".into()),
        }))
    );
    let allow = app.on_key(key(KeyCode::Char('a')));
    assert!(matches!(
        allow,
        Some(Intent::Submit(CommandKind::Decide {
            decision: Decision::AllowOnce,
            revision: 8,
            ..
        }))
    ));
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
