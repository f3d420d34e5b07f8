//! What a crash, a close or a dropped gateway leaves behind is completed once by the next process: journaled decisions, tasks, unpublished sets, stage runs and settled reviews.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_journaled_before_a_crash_is_applied_once_by_the_next_process() {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    f.task("write the file");
    let waiting = f.settled().await;
    let set = waiting.pending.clone().expect("pending");
    f.gateway.close().await;
    journal_only(
        f.project.path(),
        &f.session,
        vec![heartwood_events::Event::DecisionRecorded {
            set_id: set.set_id,
            revision: set.revision,
            decision: Decision::AllowOnce,
            reason: None,
        }],
    );

    let next =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    next.serve(&f.session).expect("serve");
    let done = finished(&next, &f.session).await;
    let ran = std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran");
    assert_eq!(
        ran, "one\ntwo\n",
        "the journaled decision ran the set exactly once"
    );
    assert!(done.pending.is_none());
    next.close().await;
    // Reopening caught the journal up with the engine without repeating anything.
    let stored = next.snapshot(&f.session, 0).expect("stored");
    let proposals = stored
        .events
        .iter()
        .filter(|e| e.event.kind() == "action_proposed")
        .count();
    assert_eq!(proposals, 3, "two actions and finish, each recorded once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_journaled_before_a_crash_reaches_the_agent_in_the_next_process() {
    let f = Fixture::new(Script::of(vec![Turn::text("first"), Turn::text("second")])).await;
    f.task("one");
    f.settled().await;
    f.gateway.close().await;
    journal_only(
        f.project.path(),
        &f.session,
        vec![heartwood_events::Event::TaskSubmitted {
            text: "two".into(),
            policy: ActionPolicy::AlwaysReview,
            starting_commit: None,
        }],
    );
    let next =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    next.serve(&f.session).expect("serve");
    let started = Instant::now();
    loop {
        let p = next.projection(&f.session).expect("projection");
        if p.lifecycle == Lifecycle::Finished && p.conversation.len() == 4 {
            assert_eq!(p.conversation[3].text, "second");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{p:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let last = f.server.requests().last().expect("request").to_string();
    assert!(
        last.contains("\"two\""),
        "the journaled task never reached the model"
    );
    next.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_before_the_set_is_published_is_republished_by_the_next_process() {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    f.task("write the file");
    let waiting = f.settled().await;
    let shown = waiting.pending.clone().expect("pending");
    f.gateway.close().await;
    let cut = cut_last_event(f.project.path(), &f.session);
    assert!(cut.contains("action_set_pending"), "{cut}");

    let context = ProjectContext::at(f.project.path()).expect("a UTF-8 project path");
    let stored = heartwood_gateway::SessionAdmin::new(&context)
        .show(f.session.as_str())
        .expect("show")
        .projection
        .expect("verified");
    assert_eq!(stored.lifecycle, Lifecycle::WaitingForDecision);
    assert!(
        stored.pending.is_none(),
        "the crash window: waiting, no set"
    );
    // Looking at it changes nothing: nobody serves it, so it reads as stopped, saying how to
    // take it over.
    let next = SessionGateway::new(context);
    let seen = next.projection(&f.session).expect("projection");
    assert!(
        !next.serves_here(&f.session),
        "a read took the session over"
    );
    assert!(seen.interrupted && seen.pending.is_none(), "{seen:?}");
    assert!(
        seen.status_line.contains("sessions resume"),
        "{}",
        seen.status_line
    );
    // Taking it over explicitly republishes the set the engine waits on, which can then be
    // decided.
    next.serve(&f.session).expect("taken over");
    let p = next.projection(&f.session).expect("projection");
    let set = p.pending.clone().expect("the set is published again");
    assert_eq!(set.set_id, shown.set_id);
    assert_eq!(set.members, shown.members);
    let receipt = next
        .submit_blocking(Command::new(
            CommandId::parse("after-crash").expect("id"),
            f.session.clone(),
            CommandKind::Decide {
                set_id: set.set_id,
                revision: set.revision,
                decision: Decision::AllowOnce,
                reason: None,
            },
        ))
        .expect("decide");
    applied(&receipt);
    finished(&next, &f.session).await;
    let ran = std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran");
    assert_eq!(ran, "one\ntwo\n");
    next.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_the_gateway_mid_run_waits_for_the_worker_and_records_everything() {
    let slow = Turn::text("late but recorded").with_fault(Fault::ChunkDelayMs(100));
    let f = Fixture::new(Script::of(vec![slow])).await;
    f.task("answer slowly");
    // Close while the model is still streaming: the worker is paused at its next step, and
    // what it did before stopping is in the journal, not only in the engine's log.
    tokio::time::sleep(Duration::from_millis(150)).await;
    f.gateway.close().await;
    let stored = f.gateway.snapshot(&f.session, 0).expect("stored");
    assert!(
        stored
            .events
            .iter()
            .any(|e| matches!(&e.event, heartwood_events::Event::Message { text, .. } if text == "late but recorded")),
        "{:#?}",
        stored.projection
    );
    assert_eq!(stored.projection.lifecycle, Lifecycle::Finished);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_dropped_without_close_stops_its_workers_and_releases_its_leases() {
    let f = Fixture::new(Script::of(vec![
        Turn::text("never").with_fault(Fault::Silent),
        Turn::text("after the drop"),
    ]))
    .await;
    applied(&f.task("wait on a silent model"));
    let started = Instant::now();
    while f.server.requests().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "no model call");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let Fixture {
        project,
        server,
        gateway,
        session,
        ..
    } = f;
    drop(gateway);

    // The lease comes free without `close`, and the session continues in a new gateway.
    let next =
        SessionGateway::new(ProjectContext::at(project.path()).expect("a UTF-8 project path"));
    let started = Instant::now();
    let receipt = loop {
        let command = Command::new(
            CommandId::parse("after-drop").expect("id"),
            session.clone(),
            CommandKind::SubmitTask {
                text: "carry on".into(),
                policy: ActionPolicy::AlwaysReview,
            },
        );
        match next.submit_blocking(command) {
            Ok(receipt) => break receipt,
            Err(e) if e.is_owned_elsewhere() => {
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "still owned: {e}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    applied(&receipt);
    let done = finished(&next, &session).await;
    assert_eq!(
        done.conversation.last().map(|m| m.text.as_str()),
        Some("after the drop")
    );
    assert_eq!(server.requests().len(), 2);
    next.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reconciliation_by_identity_survives_a_translation_that_changed_shape() {
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[("think", json!({"thought": "first look"}))]),
        Turn::text("first answer"),
        Turn::text("second answer"),
    ]))
    .await;
    f.task("one");
    let first = f.settled().await;
    assert_eq!(first.lifecycle, Lifecycle::Finished);
    f.gateway.close().await;
    // An older translation that did not record usage: the journal lacks those events, while
    // the engine's log holds them. Counting would take the journal to be behind and append
    // (or refuse) the wrong events; by identity nothing is missing.
    rewrite_journal(f.project.path(), &f.session, |e| {
        e.event.kind() == "usage_recorded"
    });
    let before =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"))
            .snapshot(&f.session, 0)
            .expect("stored")
            .events
            .len();

    let next =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    let receipt = next
        .submit_blocking(Command::new(
            CommandId::parse("second-task").expect("id"),
            f.session.clone(),
            CommandKind::SubmitTask {
                text: "two".into(),
                policy: ActionPolicy::AlwaysReview,
            },
        ))
        .expect("submit");
    applied(&receipt);
    let done = finished(&next, &f.session).await;
    next.close().await;
    let stored = next.snapshot(&f.session, 0).expect("stored");
    let answers: Vec<&str> = done
        .conversation
        .iter()
        .filter(|m| m.role == heartwood_events::Role::Agent)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(
        answers,
        ["first answer", "second answer"],
        "nothing duplicated"
    );
    // Nothing of the first run was appended again: only the second task's events are new.
    let reopened: Vec<&str> = stored.events[before..]
        .iter()
        .map(|e| e.event.kind())
        .collect();
    assert_eq!(
        reopened.first().copied(),
        Some("task_submitted"),
        "{reopened:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stage_run_journaled_before_a_crash_is_dispatched_once_by_the_next_process() {
    let f = Fixture::new(Script::of(vec![finish()])).await;
    copy_example_project(f.project.path());
    applied(&f.submit(CommandKind::WorkflowStart {
        definition: "tabular-ols".into(),
        question: "Does sleep predict the score?".into(),
        inputs: Default::default(),
    }));
    let workflow = f.projection().workflow.expect("a workflow run");
    f.gateway.close().await;
    // The process stopped right after journaling the stage's turn, before its engine heard.
    journal_only(
        f.project.path(),
        &f.session,
        vec![
            heartwood_events::Event::TaskSubmitted {
                text: "run the readiness stage".into(),
                policy: ActionPolicy::AlwaysReview,
                starting_commit: None,
            },
            heartwood_events::Event::WorkflowStageStarted {
                run_id: workflow.run_id.clone(),
                stage: "readiness".into(),
            },
        ],
    );
    let next =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    next.serve(&f.session).expect("serve");
    let started = Instant::now();
    let w = loop {
        let p = next.projection(&f.session).expect("projection");
        let w = p.workflow.clone().expect("workflow");
        if p.lifecycle == Lifecycle::Finished {
            break w;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{p:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(
        w.stages[0].status,
        heartwood_events::workflow::StageStatus::AwaitingEvaluation
    );
    let requests = f.server.requests();
    assert_eq!(requests.len(), 1, "the stage's turn ran exactly once");
    assert!(requests[0].to_string().contains("run the readiness stage"));
    // Its checks are offered now, at the run's current revision.
    assert!(
        w.control(CommandName::WorkflowEvaluate)
            .is_some_and(|c| c.revision == w.revision)
    );
    next.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_settled_before_a_stop_is_assessed_by_the_next_process_without_a_model_call() {
    let f = Fixture::new(Script::of(Vec::new())).await;
    copy_example_project(f.project.path());
    applied(&f.submit(CommandKind::WorkflowStart {
        definition: "tabular-ols".into(),
        question: "Does sleep predict the score?".into(),
        inputs: Default::default(),
    }));
    let workflow = f.projection().workflow.expect("a workflow run");
    f.gateway.close().await;
    // The review's turn settled with the reviewer's proposals, and the process stopped before
    // assessing them.
    let proposals = json!({"proposals": [
        {"condition": "python_invalid", "path": "analysis/fit.py", "claim": "it does not parse"},
        {"condition": "other", "path": "reports/final.md", "claim": "vague"}
    ]});
    journal_only(
        f.project.path(),
        &f.session,
        vec![
            heartwood_events::Event::TaskSubmitted {
                text: "review the readiness stage".into(),
                policy: ActionPolicy::AlwaysReview,
                starting_commit: None,
            },
            heartwood_events::Event::WorkflowReviewStarted(Box::new(
                heartwood_events::workflow::ReviewStarted {
                    run_id: workflow.run_id.clone(),
                    review_id: "c-review".into(),
                    stage: "readiness".into(),
                    evidence: Vec::new(),
                },
            )),
            heartwood_events::Event::ActionProposed {
                action: heartwood_events::ActionProposal {
                    action_id: 2,
                    response_id: "r".into(),
                    tool: "task".into(),
                    arguments: json!({"subagent_type": "reviewer", "description": "review",
                        "prompt": "p"})
                    .to_string(),
                    risk: heartwood_events::RiskLevel::Low,
                    thought: None,
                    sandbox: None,
                },
            },
            heartwood_events::Event::ActionUpdated {
                action_id: 2,
                version: 2,
                state: heartwood_events::ActionState::Completed,
                detail: Some(proposals.to_string()),
                exit_code: None,
                changed_path: None,
            },
            heartwood_events::Event::LifecycleChanged {
                lifecycle: Lifecycle::Finished,
            },
        ],
    );
    let next =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    next.serve(&f.session).expect("serve");
    let w = next
        .projection(&f.session)
        .expect("projection")
        .workflow
        .expect("workflow");
    let assessed = w.reviews[0]
        .assessed
        .as_ref()
        .expect("assessed on reopening");
    assert_eq!(assessed.proposals.len(), 2);
    // Nothing was captured, so nothing can be verified; the claims stay claims.
    assert!(assessed.findings.is_empty());
    assert!(
        assessed
            .proposals
            .iter()
            .all(|p| p.verdict == heartwood_events::workflow::Verdict::Unverified)
    );
    assert!(f.server.requests().is_empty(), "no model call");
    next.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn looking_at_a_session_whose_append_a_crash_interrupted_completes_it_once() {
    let f = Fixture::new(Script::of(vec![Turn::text("first")])).await;
    f.task("one");
    f.settled().await;
    f.gateway.close().await;
    let context = ProjectContext::at(f.project.path()).expect("a UTF-8 project path");
    let admin = heartwood_gateway::SessionAdmin::new(&context);
    let (before, _) = admin.verify(f.session.as_str(), None).expect("intact");
    // A process dies right after the intent's fsync, before any of the append's data.
    let store = heartwood_audit::SessionStore::new(f.project.path());
    let (writer, _) = store.open_writer(&f.session).expect("writer");
    writer
        .crash_after_intent(vec![heartwood_events::Event::SessionRenamed {
            title: "renamed in the append".into(),
        }])
        .expect("intent");

    // Verification tells "intact, waiting for recovery" apart from damage.
    let waiting = admin
        .verify(f.session.as_str(), None)
        .expect_err("an append waits");
    let next_seq = before.count + 1;
    assert_eq!(waiting.interrupted_append(), Some((next_seq, next_seq)));
    assert!(
        waiting.to_string().contains("heartwood sessions recover"),
        "{waiting}"
    );
    assert!(
        admin.listing(None).expect("listing")[0]
            .status
            .contains("waiting for recovery"),
        "the listing says so"
    );

    // Looking at it shows the intact record and completes nothing; the next process to take
    // it over (a `serve`, any command) completes it.
    let next = SessionGateway::new(context.clone());
    let looked = next.snapshot(&f.session, 0).expect("the intact record");
    assert_eq!(looked.revision, before.count, "a read completed the append");
    assert!(
        looked
            .projection
            .status_line
            .contains("waiting for recovery"),
        "{}",
        looked.projection.status_line
    );
    next.serve(&f.session).expect("taken over");
    let seen = next
        .snapshot(&f.session, 0)
        .expect("taking it over completes it");
    assert_eq!(
        seen.projection.title.as_deref(),
        Some("renamed in the append")
    );
    next.close().await;
    let (after, _) = admin.verify(f.session.as_str(), None).expect("intact");
    assert_eq!(after.count, next_seq, "completed exactly once");
    let again = SessionGateway::new(context);
    assert_eq!(
        again
            .snapshot(&f.session, 0)
            .expect("snapshot")
            .events
            .len() as u64,
        next_seq
    );
    again.close().await;
}
