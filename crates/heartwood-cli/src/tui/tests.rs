//! Snapshot tests of every view, drawn on ratatui's `TestBackend` from projections the
//! gateway's reducer builds out of recorded events.

use heartwood_events::{
    ActionPolicy, ActionProposal, ActionSet, ActionSetId, ActionState, CommandKind, Decision,
    Event, Lifecycle, PlanTask, RecordedEvent, RiskLevel, Role, Seq, SessionId, UsageFigures,
};
use heartwood_gateway::config::CredentialBoundary;
use heartwood_gateway::reducer;
use heartwood_gateway::startup::{Phase, RouteSummary, StartupPlan};
use heartwood_gateway::{ProjectContext, Snapshot};
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

/// The platform of a laptop with no markers.
fn generic() -> heartwood_gateway::platform::PlatformSummary {
    heartwood_gateway::platform::detect(
        &heartwood_gateway::platform::Surroundings::simulated(&[], None),
        &[],
    )
}

#[test]
fn a_preset_fills_the_connect_form_and_the_key_variable_goes_with_it() {
    let plan = StartupPlan {
        pending_decisions: Vec::new(),
        stopped_sessions: Vec::new(),
        phase: Phase::ModelRequired,
        explanation: String::new(),
        next_action: String::new(),
        route: None,
        platform: generic(),
        sandbox: Default::default(),
        sessions: 0,
    };
    let mut app = App::new(Screen::Startup {
        plan: Box::new(plan),
        form: ConnectForm::default(),
        models: None,
    });
    // The cursor starts on the preset row; → picks the first preset (OpenAI).
    assert!(app.on_key(key(KeyCode::Right)).is_none());
    let screen = draw(&app);
    assert!(screen.contains("◂ OpenAI ▸"), "{screen}");
    assert!(screen.contains("OPENAI_API_KEY"), "{screen}");
    // The model is edited: down to the model row, remove a character, type another.
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Char('x')));
    match app.on_key(key(KeyCode::Enter)) {
        Some(Intent::Connect {
            preset,
            base_url,
            model,
            api_key_env,
        }) => {
            assert_eq!(preset, Some("openai"));
            assert_eq!(base_url, "https://api.openai.com/v1");
            assert_eq!(model, "gpt-4.1-minx");
            assert_eq!(api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        }
        _ => panic!("Enter did not connect"),
    }
    // ← back past the first preset is "your own service": the fields are cleared.
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Left));
    assert!(draw(&app).contains("none: your own service"));
}

#[test]
fn startup_asks_for_a_model_with_a_form() {
    let plan = StartupPlan {
        pending_decisions: Vec::new(),
        stopped_sessions: Vec::new(),
        phase: Phase::ModelRequired,
        explanation: "No model is connected to this project yet.".into(),
        next_action:
            "Connect an OpenAI-compatible service below, or run `heartwood model connect`.".into(),
        route: None,
        platform: generic(),
        sandbox: Default::default(),
        sessions: 0,
    };
    let form = ConnectForm {
        preset: None,
        base_url: "http://localhost:11434/v1".into(),
        model: "qwen2.5-co".into(),
        api_key_env: String::new(),
        field: 2,
    };
    insta::assert_snapshot!(draw(&App::new(Screen::Startup {
        plan: Box::new(plan),
        form,
        models: None,
    })));
}

#[test]
fn startup_explains_an_unreachable_service() {
    let plan = StartupPlan {
        pending_decisions: Vec::new(),
        stopped_sessions: Vec::new(),
        phase: Phase::ConnectionRequired,
        explanation: "Nothing answers at http://127.0.0.1:9/v1 (connection refused).".into(),
        next_action: "Start the model service, then press Enter to check again.".into(),
        route: Some(RouteSummary {
            category: "compatible".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key_env: None,
            credential_boundary: CredentialBoundary::CredentialFree,
            low_risk_automation: heartwood_gateway::platform::automation(
                CredentialBoundary::CredentialFree,
                None,
            ),
            prices: None,
            inherited_from: None,
        }),
        platform: generic(),
        sandbox: Default::default(),
        sessions: 2,
    };
    insta::assert_snapshot!(draw(&App::new(Screen::Startup {
        plan: Box::new(plan),
        form: ConnectForm::default(),
        models: None,
    })));
}

#[test]
fn startup_shows_local_models_and_a_transfer_with_its_gauge() {
    let folder = tempfile::tempdir().expect("project");
    let weights = folder.path().join("tiny.gguf");
    std::fs::write(&weights, b"GGUF tiny weights").expect("write");
    let project = ProjectContext::at(folder.path()).expect("project");
    let desk = heartwood_gateway::models::ModelDesk::new(&project);
    let options = heartwood_gateway::models::FileImport {
        name: Some("tiny".into()),
        license: "mit".into(),
        ..Default::default()
    };
    let paths = [weights];
    let review = desk.review_files(&paths, &options).expect("review");
    desk.import_files(&paths, &options, Some(&review.manifest_sha256))
        .expect("import");
    let moving = desk
        .transfers()
        .begin(heartwood_gateway::models::TransferKind::Download, "tiny");
    moving.set_total(100);
    std::thread::sleep(std::time::Duration::from_millis(300));
    moving.advance(40);
    let plan = StartupPlan {
        pending_decisions: Vec::new(),
        stopped_sessions: Vec::new(),
        phase: Phase::ComputeRequired,
        explanation: "the local model tiny is selected and its runtime is not running".into(),
        next_action: "heartwood model start".into(),
        route: None,
        platform: generic(),
        sandbox: Default::default(),
        sessions: 0,
    };
    let screen = draw(&App::new(Screen::Startup {
        plan: Box::new(plan),
        form: ConnectForm::default(),
        models: super::local_models(&project),
    }));
    assert!(screen.contains("Local models"), "{screen}");
    assert!(screen.contains("tiny · unvalidated · 17 B"), "{screen}");
    assert!(
        screen.contains("[========            ] download tiny: 40 B of 100 B (40%)"),
        "{screen}"
    );
    assert!(
        screen.contains("import tiny: done (published tiny)"),
        "{screen}"
    );
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

/// The acceptable run, then a review of its stage: one finding (two claims of it) and a claim
/// no check could observe.
fn reviewed_events() -> Vec<Event> {
    use heartwood_events::workflow::{
        AssessedProposal, Finding, ReviewAssessed, ReviewCondition, ReviewProposal, ReviewStarted,
        Verdict,
    };
    let claim = |condition, claim: &str, verdict| AssessedProposal {
        task_action: 9,
        proposal: ReviewProposal {
            condition,
            path: "analysis/fit.py".into(),
            claim: claim.into(),
        },
        verdict,
        reasons: Vec::new(),
    };
    let mut events = workflow_events("acceptable");
    events.extend([
        Event::WorkflowReviewStarted(Box::new(ReviewStarted {
            run_id: "w-1".into(),
            review_id: "c-review".into(),
            stage: "model".into(),
            evidence: Vec::new(),
        })),
        Event::WorkflowReviewAssessed(Box::new(ReviewAssessed {
            run_id: "w-1".into(),
            review_id: "c-review".into(),
            proposals: vec![
                claim(
                    ReviewCondition::PythonInvalid,
                    "fit.py does not parse",
                    Verdict::Verified,
                ),
                claim(
                    ReviewCondition::Other,
                    "the model is too simple",
                    Verdict::Unverified,
                ),
            ],
            findings: vec![Finding {
                condition: ReviewCondition::PythonInvalid,
                path: "analysis/fit.py".into(),
                check: "python_syntax".into(),
                severity: heartwood_events::workflow::Severity::Defect,
                observed: vec!["line 1: invalid syntax".into()],
                claims: vec![(9, "fit.py does not parse".into())],
            }],
            record_sha256: "0".repeat(64),
        })),
    ]);
    events
}

/// The events of a workflow run on the example study, up to `state`: `pending` (started),
/// `running` (a stage turn proposed an action), `unusable` (the turn ended with no outcome
/// and a check failed), `acceptable` (an outcome and passing checks), `exhausted` (the
/// actions limit used up while a set waited).
fn workflow_events(state: &str) -> Vec<Event> {
    use heartwood_events::catalog::Budget;
    use heartwood_events::workflow::{
        AssessmentView, BindingRole, CheckStatus, CheckView, InspectedFile, StageSpec,
        WorkflowBinding, WorkflowStart,
    };
    let stage = |id: &str, title: &str, actions: u32| StageSpec {
        id: id.into(),
        title: title.into(),
        researcher_gate: true,
        budget: Some(Budget {
            model_calls: 20,
            tokens: 200_000,
            actions,
            seconds: 900,
        }),
    };
    let mut events = vec![Event::WorkflowStarted(Box::new(WorkflowStart {
        run_id: "w-1".into(),
        definition: "tabular-ols".into(),
        version: "1.1.0".into(),
        title: "Tabular study".into(),
        question: "Does sleep predict the score?".into(),
        question_sha256: "0".repeat(64),
        bindings: vec![
            WorkflowBinding {
                id: "table".into(),
                path: "data/cohort.csv".into(),
                role: BindingRole::Input,
                sha256: Some("1".repeat(64)),
            },
            WorkflowBinding {
                id: "model".into(),
                path: "outputs/model.json".into(),
                role: BindingRole::Artifact,
                sha256: None,
            },
        ],
        stages: vec![
            stage(
                "model",
                "Univariate OLS",
                if state == "exhausted" { 1 } else { 30 },
            ),
            stage("report", "Written result", 10),
        ],
    }))];
    if state == "pending" {
        return events;
    }
    events.extend([
        task("Workflow “Tabular study”, stage “Univariate OLS”."),
        Event::WorkflowStageStarted {
            run_id: "w-1".into(),
            stage: "model".into(),
        },
        usage("agent", 1200),
        Event::ActionProposed {
            action: proposal(
                2,
                "terminal",
                r#"{"command":"python3 analysis/fit.py > outputs/model.json"}"#,
                RiskLevel::Medium,
            ),
        },
    ]);
    match state {
        "running" => return events,
        "exhausted" => {
            events.extend([
                Event::WorkflowBudgetExhausted {
                    run_id: "w-1".into(),
                    stage: "model".into(),
                    limit: "actions 1 of 1".into(),
                },
                lifecycle(Lifecycle::WaitingForDecision),
                Event::ActionSetPending {
                    set: ActionSet {
                        set_id: ActionSetId::parse("set-2").expect("id"),
                        revision: 7,
                        members: vec![proposal(
                            2,
                            "terminal",
                            r#"{"command":"python3 analysis/fit.py > outputs/model.json"}"#,
                            RiskLevel::Medium,
                        )],
                    },
                },
            ]);
            return events;
        }
        _ => {}
    }
    events.push(completed(2, 2, ""));
    let acceptable = state == "acceptable";
    if acceptable {
        events.extend([
            usage("agent", 1300),
            Event::ActionProposed {
                action: proposal(
                    3,
                    "finish",
                    r#"{"message":"Fitted.","outcome":{"status":"completed","artifacts":["outputs/model.json"],"notes":""}}"#,
                    RiskLevel::Low,
                ),
            },
            completed(3, 2, "Fitted."),
        ]);
    }
    events.push(lifecycle(Lifecycle::Finished));
    let check = |status: CheckStatus, reasons: Vec<String>| CheckView {
        check: "univariate_ols".into(),
        status,
        reasons,
        inspected: vec![InspectedFile {
            path: "outputs/model.json".into(),
            sha256: Some("2".repeat(64)),
        }],
    };
    events.push(Event::WorkflowStageEvaluated {
        run_id: "w-1".into(),
        assessment: Box::new(if acceptable {
            AssessmentView {
                stage: "model".into(),
                fingerprint: "f".repeat(64),
                eligible: true,
                problems: Vec::new(),
                checks: vec![check(CheckStatus::Passed, Vec::new())],
            }
        } else {
            let reason = "slope: reported 9.1, recomputed 7.045".to_owned();
            AssessmentView {
                stage: "model".into(),
                fingerprint: "e".repeat(64),
                eligible: false,
                problems: vec![
                    format!("univariate_ols failed: {reason}"),
                    "the stage turn ended without calling `finish` with its structured \
                     outcome, so it reports nothing the run can use; run the stage again"
                        .into(),
                ],
                checks: vec![check(CheckStatus::Failed, vec![reason])],
            }
        }),
    });
    events
}

#[test]
fn a_workflow_run_shows_each_state_with_its_budget_checks_and_keys() {
    let screen = draw(&session_app(snapshot(workflow_events("pending"), "")));
    assert!(screen.contains("○ Univariate OLS · pending"), "{screen}");
    assert!(screen.contains("F5  Run “Univariate OLS”"), "{screen}");
    insta::assert_snapshot!("workflow_pending", screen);

    let screen = draw(&session_app(snapshot(workflow_events("running"), "")));
    assert!(screen.contains("▶ Univariate OLS · running"), "{screen}");
    assert!(screen.contains("▱▱▱▱▱▱▱▱ actions 1 of 30"), "{screen}");
    assert!(
        !screen.contains("F5"),
        "no control while the turn runs: {screen}"
    );
    insta::assert_snapshot!("workflow_running", screen);

    let screen = draw(&session_app(snapshot(workflow_events("unusable"), "")));
    assert!(screen.contains("Checks not passed"), "{screen}");
    assert!(screen.contains("✘ univariate_ols"), "{screen}");
    assert!(screen.contains("slope: reported 9.1"), "{screen}");
    assert!(
        screen.contains("Turn: the stage turn ended without"),
        "{screen}"
    );
    assert!(screen.contains("F6  Check"), "{screen}");
    assert!(!screen.contains("F7"), "{screen}");
    insta::assert_snapshot!("workflow_unusable", screen);

    let screen = draw(&session_app(snapshot(workflow_events("acceptable"), "")));
    assert!(screen.contains("Checks passed"), "{screen}");
    assert!(screen.contains("Turn reported completed"), "{screen}");
    assert!(screen.contains("F7  Accept “Univariate OLS”"), "{screen}");
    insta::assert_snapshot!("workflow_acceptable", screen);

    // A review: what Heartwood verified apart from what the reviewer claimed.
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, 40)).expect("terminal");
    terminal
        .draw(|f| view::render(f, &session_app(snapshot(reviewed_events(), ""))))
        .expect("draw");
    let screen = terminal.backend().to_string();
    assert!(screen.contains("review of model: 1 finding"), "{screen}");
    assert!(
        screen.contains("✘ analysis/fit.py — python_syntax"),
        "{screen}"
    );
    assert!(screen.contains("? “the model is too simple”"), "{screen}");
    assert!(
        !screen.contains("? “fit.py does not parse”"),
        "a verified claim is a finding, not a proposal: {screen}"
    );
    insta::assert_snapshot!("workflow_reviewed", screen);

    // The review takes the screen while the set waits; the status line says what follows it.
    let exhausted = snapshot(workflow_events("exhausted"), "");
    assert!(
        exhausted
            .projection
            .status_line
            .contains("budget is used up (actions 1 of 1)"),
        "{}",
        exhausted.projection.status_line
    );
    let screen = draw(&session_app(exhausted));
    assert!(screen.contains("this set can still be decided"), "{screen}");
    insta::assert_snapshot!("workflow_exhausted", screen);
}

#[test]
fn accepting_a_stage_takes_a_second_press_and_submits_the_control_unchanged() {
    let mut app = session_app(snapshot(workflow_events("acceptable"), ""));
    let offered = app
        .snapshot()
        .and_then(|s| s.projection.workflow.as_ref())
        .and_then(|w| w.control(heartwood_events::CommandName::WorkflowAccept))
        .map(|c| c.submit.clone())
        .expect("an acceptance is offered");
    assert_eq!(app.on_key(key(KeyCode::F(7))), None);
    assert!(
        app.notice
            .as_deref()
            .is_some_and(|n| n.contains("Press F7 again")),
        "{:?}",
        app.notice
    );
    assert_eq!(
        app.on_key(key(KeyCode::F(7))),
        Some(Intent::Submit(offered))
    );
    // Another key between the presses disarms it.
    assert_eq!(app.on_key(key(KeyCode::F(7))), None);
    assert_eq!(app.on_key(key(KeyCode::Char('x'))), None);
    assert_eq!(app.on_key(key(KeyCode::F(7))), None);
    // A control the gateway does not offer now is not submitted.
    let mut running = session_app(snapshot(workflow_events("running"), ""));
    assert_eq!(running.on_key(key(KeyCode::F(5))), None);
    assert!(
        running
            .notice
            .as_deref()
            .is_some_and(|n| n.contains("not possible now"))
    );
}

#[test]
fn the_judged_model_is_drawn_as_a_chart_beside_its_checks() {
    use heartwood_events::workflow::{GroupSlopeView, InspectedFile, ModelFigure};
    let mut app = session_app(snapshot(workflow_events("acceptable"), ""));
    app.figure = Some(ModelFigure {
        stage: "model".into(),
        predictor: "sleep_hours".into(),
        outcome: "score".into(),
        train: vec![[5.0, 55.0], [6.0, 62.0], [7.0, 70.0], [8.0, 77.0]],
        held_out: vec![[6.5, 65.0], [9.0, 83.0]],
        predictions: vec![[6.5, 65.8], [9.0, 83.4]],
        line: [[5.0, 55.3], [9.0, 83.4]],
        x_range: [4.8, 9.2],
        y_range: [54.0, 85.0],
        training_mean: 66.0,
        slope: 7.045,
        group_slopes: vec![GroupSlopeView {
            group: "east".into(),
            slope: 6.857,
        }],
        inspected: vec![InspectedFile {
            path: "outputs/model.json".into(),
            sha256: Some("2".repeat(64)),
        }],
        svg: String::new(),
    });
    let mut terminal = Terminal::new(TestBackend::new(120, 44)).expect("terminal");
    terminal.draw(|f| view::render(f, &app)).expect("draw");
    let screen = terminal.backend().to_string();
    assert!(screen.contains("score against sleep_hours"), "{screen}");
    assert!(
        screen.contains("without each group: east 6.857"),
        "{screen}"
    );
    insta::assert_snapshot!("workflow_chart", screen);
    // A picture of other bytes than the ones judged is not drawn.
    if let Some(f) = app.figure.as_mut() {
        f.inspected[0].sha256 = Some("3".repeat(64));
    }
    terminal.draw(|f| view::render(f, &app)).expect("draw");
    assert!(
        !terminal
            .backend()
            .to_string()
            .contains("score against sleep_hours")
    );
}

#[test]
fn a_skill_under_review_is_shown_whole_and_a_approves_the_tree_shown() {
    let project = tempfile::tempdir().expect("project");
    std::fs::create_dir(project.path().join(".heartwood")).expect("state");
    let elsewhere = tempfile::tempdir().expect("skills");
    let dir = elsewhere.path().join("check-units");
    std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: check-units\ndescription: Check units first.\n---\nUNITS-BODY line\n",
    )
    .expect("write");
    std::fs::write(dir.join("scripts/units.py"), "print(1)\n").expect("write");
    let context = heartwood_gateway::ProjectContext::at(project.path()).expect("project");
    let skills = heartwood_gateway::skills::SkillsService::open(&context);
    skills.add_local(&dir).expect("add");
    let catalog = skills.catalog().expect("catalog");
    let detail = skills.show("check-units", None).expect("show");
    let digest = detail.view.digest.clone().expect("digest");

    let mut app = App::new(Screen::Skills {
        catalog: Box::new(catalog.clone()),
        selected: 0,
        detail: None,
        scroll: 0,
    });
    let list = draw(&app);
    assert!(list.contains("check-units"), "{list}");
    assert!(list.contains("needs review and approval"), "{list}");
    assert!(list.contains("group-disjoint-splits"), "{list}");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::ShowSkill {
            name: "check-units".into(),
            source: detail.view.source.clone()
        })
    );

    app.screen = Screen::Skills {
        catalog: Box::new(catalog),
        selected: 0,
        detail: Some(Box::new(detail.clone())),
        scroll: 0,
    };
    let shown = draw(&app);
    for expected in [
        "scripts/units.py  9 bytes",
        "SKILL.md",
        "UNITS-BODY line",
        "unreviewed",
        &digest[..40],
    ] {
        assert!(shown.contains(expected), "{expected:?} missing:\n{shown}");
    }
    assert_eq!(
        app.on_key(key(KeyCode::Char('a'))),
        Some(Intent::DecideSkill {
            decision: super::app::SkillDecision::Approve,
            name: "check-units".into(),
            source: detail.view.source.clone(),
            digest: Some(digest),
        })
    );
    assert_eq!(app.on_key(key(KeyCode::Esc)), None, "Esc closes the review");
    assert_eq!(app.on_key(key(KeyCode::Esc)), Some(Intent::Back));
}

/// A set of three commands, each a long script: at 80×24 the later ones start off screen.
fn long_set(project: &std::path::Path) -> Snapshot {
    let script = |n: u64| {
        let lines: Vec<String> = (0..30).map(|i| format!("echo step {n}.{i}")).collect();
        serde_json::json!({ "command": lines.join("\n") }).to_string()
    };
    pending_with(
        project,
        (4..7)
            .map(|id| proposal(id, "terminal", &script(id), RiskLevel::Medium))
            .collect(),
    )
}

fn draw_at(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal.draw(|f| view::render(f, app)).expect("draw");
    terminal.backend().to_string()
}

#[test]
fn allow_waits_until_every_member_was_on_screen() {
    let project = tempfile::tempdir().expect("project");
    let mut app = session_app(long_set(project.path()));
    let screen = draw_at(&app, 80, 24);
    assert!(screen.contains("not shown yet"), "{screen}");
    app.on_key(key(KeyCode::Char('a')));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        None,
        "allowed unseen actions"
    );
    assert!(
        app.notice.as_deref().unwrap_or_default().contains("#5, #6"),
        "{:?}",
        app.notice
    );
    // Reading on, a page at a time, shows every member; then allow goes through.
    for _ in 0..20 {
        app.on_key(key(KeyCode::PageDown));
        draw_at(&app, 80, 24);
    }
    assert!(app.unseen().is_empty(), "{:?}", app.unseen());
    app.on_key(key(KeyCode::Char('a')));
    assert!(matches!(
        app.on_key(key(KeyCode::Enter)),
        Some(Intent::Submit(CommandKind::Decide {
            decision: Decision::AllowOnce,
            ..
        }))
    ));
    // Where the whole set fits on screen, it is seen at once.
    let mut wide = session_app(long_set(project.path()));
    draw_at(&wide, 200, 120);
    wide.on_key(key(KeyCode::Char('a')));
    assert!(wide.on_key(key(KeyCode::Enter)).is_some());
}
