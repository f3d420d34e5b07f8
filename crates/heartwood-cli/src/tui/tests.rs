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
    let projection = reducer::replay(session(), &recorded);
    let project = heartwood_gateway::ProjectContext::at(project).expect("a UTF-8 path");
    let review = projection
        .pending
        .as_ref()
        .map(|set| heartwood_gateway::review::review_in(&project, set));
    Snapshot {
        events: Vec::new(),
        revision: projection.revision,
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
        pending_decisions: Vec::new(),
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
    insta::assert_snapshot!(draw(&App::new(Screen::Startup {
        plan: Box::new(plan),
        form
    })));
}

#[test]
fn startup_explains_an_unreachable_service() {
    let plan = StartupPlan {
        pending_decisions: Vec::new(),
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
        plan: Box::new(plan),
        form: ConnectForm::default()
    })));
}

#[test]
fn the_session_list_marks_pending_decisions() {
    let row = |id: &str, when: &str, status: &str, pending| SessionRow {
        title: Some(format!("Task of {id}")),
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
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        None,
        "r then Enter asks for a reason"
    );
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
    app.focus = Focus::Review;
    assert_eq!(app.on_key(key(KeyCode::Char('a'))), None, "a only arms");
    let allow = app.on_key(key(KeyCode::Enter));
    assert!(matches!(
        allow,
        Some(Intent::Submit(CommandKind::Decide {
            decision: Decision::AllowOnce,
            revision: 8,
            ..
        }))
    ));
}

/// A pending set of the given members (ids from 4), reviewed against `project`.
fn pending_with(project: &std::path::Path, members: Vec<ActionProposal>) -> Snapshot {
    let revision = 4 + members.len() as u64 + 2;
    let mut events = vec![
        Event::SessionRegistered {
            backend: "native".into(),
            workflow: None,
        },
        task("Tidy the analysis"),
    ];
    events.extend(
        members
            .iter()
            .map(|m| Event::ActionProposed { action: m.clone() }),
    );
    events.push(lifecycle(Lifecycle::WaitingForDecision));
    events.push(Event::ActionSetPending {
        set: ActionSet {
            set_id: ActionSetId::parse("set-4").expect("id"),
            revision,
            members,
        },
    });
    snapshot_in(project, events, "")
}

#[test]
fn the_review_shows_every_line_of_a_command_and_the_diff_of_an_edit() {
    let project = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        project.path().join("analyze.py"),
        "import csv\nrows = list(csv.reader(open('data/a.csv')))\nprint(len(rows))\n",
    )
    .expect("write");
    let members = vec![
        proposal(
            4,
            "terminal",
            r#"{"command":"cd data\nls -l\npython -c \"import os; os.remove('data/a.csv')\"","summary":"look at the data, then delete a.csv"}"#,
            RiskLevel::High,
        ),
        proposal(
            5,
            "file_editor",
            r#"{"command":"str_replace","path":"analyze.py","old_str":"print(len(rows))","new_str":"print(len(rows) - 1)  # without the header"}"#,
            RiskLevel::Medium,
        ),
        proposal(
            6,
            "file_editor",
            r#"{"command":"str_replace","path":"analyze.py","old_str":"not in the file","new_str":"x"}"#,
            RiskLevel::Medium,
        ),
    ];
    let app = session_app(pending_with(project.path(), members));
    let screen = draw(&app);
    // The destructive last line and the risk label are on screen, not cut off.
    assert!(screen.contains("os.remove('data/a.csv')"), "{screen}");
    assert!(screen.contains("[high risk]"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_large_created_file_is_cut_with_a_count_and_the_rest_scrolls() {
    let project = tempfile::tempdir().expect("tempdir");
    let text: String = (1..=1_000).map(|i| format!("line {i}\n")).collect();
    let arguments = serde_json::json!({"command": "create", "path": "big.txt", "file_text": text});
    let members = vec![proposal(
        4,
        "file_editor",
        &arguments.to_string(),
        RiskLevel::Medium,
    )];
    let mut app = session_app(pending_with(project.path(), members));
    let top = draw(&app);
    assert!(top.contains("+ line 1 "), "{top}");
    for _ in 0..50 {
        app.on_key(key(KeyCode::PageDown));
    }
    let bottom = draw(&app);
    assert!(bottom.contains("+ line 400"), "{bottom}");
    assert!(!bottom.contains("+ line 401"), "{bottom}");
    assert!(bottom.contains("600 more lines not shown here"), "{bottom}");
}

#[test]
fn typing_while_a_set_waits_decides_nothing() {
    for sentence in ["add more checks", "run the tests again", "ok", "yes do it"] {
        let mut app = session_app(snapshot(pending_events(), ""));
        assert_eq!(app.focus, Focus::Review);
        for c in sentence.chars() {
            assert_eq!(
                app.on_key(key(KeyCode::Char(c))),
                None,
                "{c:?} decided something"
            );
        }
        // Enter after the sentence sends it as text; it never decides.
        match app.on_key(key(KeyCode::Enter)) {
            None => {}
            Some(Intent::Say(text)) => assert_eq!(text, sentence),
            other => panic!("{sentence:?} then Enter gave {other:?}"),
        }
        if sentence.len() > 1 {
            assert_eq!(app.focus, Focus::Input, "typing moved to the message line");
        }
    }
    // An armed allow is shown, and any key but Enter cancels it.
    let mut app = session_app(snapshot(pending_events(), ""));
    app.on_key(key(KeyCode::Char('a')));
    let armed = draw(&app);
    assert!(
        armed.contains("Press Enter to allow all 2 actions once"),
        "{armed}"
    );
    assert_eq!(app.on_key(key(KeyCode::Down)), None);
    assert_eq!(app.on_key(key(KeyCode::Enter)), None);
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

#[test]
fn a_workflow_run_shows_its_stages_checks_and_what_to_do_next() {
    use heartwood_events::workflow::{
        AssessmentView, BindingRole, StageSpec, WorkflowBinding, WorkflowStart,
    };
    let stage = |id: &str, title: &str| StageSpec {
        id: id.into(),
        title: title.into(),
        researcher_gate: true,
        budget: Some(heartwood_events::catalog::Budget {
            model_calls: 20,
            tokens: 200_000,
            actions: 30,
            seconds: 900,
        }),
    };
    let events = vec![
        Event::WorkflowStarted(Box::new(WorkflowStart {
            run_id: "w-1".into(),
            definition: "tabular-ols".into(),
            version: "1.1.0".into(),
            title: "Tabular study".into(),
            question: "Does sleep predict the score?".into(),
            question_sha256: "0".repeat(64),
            bindings: vec![WorkflowBinding {
                id: "table".into(),
                path: "data/cohort.csv".into(),
                role: BindingRole::Input,
                sha256: Some("1".repeat(64)),
            }],
            stages: vec![
                stage("readiness", "Data readiness"),
                stage("plan", "Analysis plan"),
            ],
        })),
        task("Workflow stage readiness"),
        Event::WorkflowStageStarted {
            run_id: "w-1".into(),
            stage: "readiness".into(),
        },
        lifecycle(Lifecycle::Finished),
        Event::WorkflowStageEvaluated {
            run_id: "w-1".into(),
            assessment: Box::new(AssessmentView {
                stage: "readiness".into(),
                fingerprint: "f".repeat(16),
                eligible: false,
                problems: vec!["readiness_report failed: rows is 99, the table has 12".into()],
                checks: Vec::new(),
            }),
        },
    ];
    let screen = draw(&session_app(snapshot(events, "")));
    assert!(screen.contains("◆ Data readiness · awaiting"), "{screen}");
    assert!(screen.contains("checks not passed"), "{screen}");
    assert!(screen.contains("heartwood workflow evaluate"), "{screen}");
    insta::assert_snapshot!(screen);
}
