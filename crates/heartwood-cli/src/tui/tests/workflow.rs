//! A workflow run on screen: each state with its budget, checks and keys, accepting a stage, the judged model's chart.

use super::*;

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
        source: None,
        definition_sha256: None,
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
        version: Some("1".into()),
        status,
        reasons,
        inspected: vec![InspectedFile {
            path: "outputs/model.json".into(),
            sha256: Some("2".repeat(64)),
        }],
        claims: Vec::new(),
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

    // (Four rows taller: the status line names every control, and the usage has its line.)
    let screen = draw_at(
        &session_app(snapshot(workflow_events("unusable"), "")),
        WIDTH,
        HEIGHT + 4,
    );
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
    use heartwood_events::workflow::{FigureValue, GroupSlopeView, InspectedFile, ModelFigure};
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
        values: vec![FigureValue {
            label: "held-out RMSE".into(),
            value: "0.6403".into(),
        }],
        svg: String::new(),
    });
    let mut terminal = Terminal::new(TestBackend::new(120, 44)).expect("terminal");
    terminal.draw(|f| view::render(f, &app)).expect("draw");
    let screen = terminal.backend().to_string();
    assert!(screen.contains("score against sleep_hours"), "{screen}");
    assert!(
        screen.contains("held-out RMSE 0.6403; slope without each group: east 6.857"),
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
