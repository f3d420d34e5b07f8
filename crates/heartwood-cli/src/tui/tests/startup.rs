//! The first screens: connecting a model, an unreachable service, local models and their transfers, the session list.

use super::*;

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
        workflow_waits: Vec::new(),
        state_folder: Default::default(),
        parallel_review: Default::default(),
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
        workflow_waits: Vec::new(),
        state_folder: Default::default(),
        parallel_review: Default::default(),
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
        workflow_waits: Vec::new(),
        state_folder: Default::default(),
        parallel_review: Default::default(),
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
        workflow_waits: Vec::new(),
        state_folder: Default::default(),
        parallel_review: Default::default(),
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
        models: super::super::local_models(&project),
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
