//! What the researcher sees of running and proposed actions: an edit's diff, a stopped command's partial output, output streamed and never journaled.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_is_reviewed_as_a_diff_and_a_file_changed_before_the_decision_shows_the_set_again()
{
    let edit = Turn::calls(&[(
        "file_editor",
        json!({"command": "str_replace", "path": "data.csv", "old_str": "1,2", "new_str": "1,3",
               "summary": "correct the first outcome", "security_risk": "LOW"}),
    )]);
    let f = Fixture::new(Script::of(vec![edit, finish()])).await;
    applied(&f.task("fix the outcome"));
    let waiting = f.settled().await;
    let set = waiting.pending.clone().expect("pending");
    let review = f
        .gateway
        .snapshot(&f.session, u64::MAX)
        .expect("snapshot")
        .review
        .expect("a review of the pending set");
    assert_eq!(review.revision, set.revision);
    let member = &review.members[0];
    assert_eq!(member.headline, "correct the first outcome");
    assert_eq!(member.predicted_risk.as_deref(), Some("LOW"));
    match &member.preview {
        heartwood_events::Preview::Diff {
            path,
            unified,
            added,
            removed,
            ..
        } => {
            assert_eq!(path, "data.csv");
            assert!(
                unified.contains("-1,2\n") && unified.contains("+1,3\n"),
                "{unified}"
            );
            assert_eq!((*added, *removed), (1, 1));
        }
        other => panic!("expected a diff, got {other:?}"),
    }
    assert_eq!(waiting.actions[0].headline, "correct the first outcome");

    // The file changes after the set was shown: allowing the old review is refused, and the
    // set is shown again with a fresh diff.
    std::fs::write(f.project.path().join("data.csv"), "id,y\n1,2\n9,9\n").expect("write");
    let refusal = f.decide(&waiting, Decision::AllowOnce, None);
    assert!(
        refused(&refusal).contains("data.csv changed"),
        "{refusal:?}"
    );
    let again = f.projection();
    let shown_again = again.pending.clone().expect("still pending");
    assert!(shown_again.revision > set.revision);
    // A stale decision, typed: the files that changed and the revision to decide now.
    assert_eq!(
        refusal.outcome.refusal(),
        Some(&heartwood_events::Refusal::StaleDecision {
            set_id: set.set_id.clone(),
            revision: set.revision,
            pending_set_id: shown_again.set_id.clone(),
            pending_revision: shown_again.revision,
            changed: vec!["data.csv".into()],
        })
    );
    let fresh = f
        .gateway
        .snapshot(&f.session, u64::MAX)
        .expect("snapshot")
        .review
        .expect("review");
    assert_eq!(fresh.revision, shown_again.revision);
    applied(&f.decide(&again, Decision::AllowOnce, None));
    f.until(|p| p.lifecycle == Lifecycle::Finished).await;
    assert_eq!(
        std::fs::read_to_string(f.project.path().join("data.csv")).expect("read"),
        "id,y\n1,3\n9,9\n"
    );
    f.gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_now_kills_the_running_command_records_its_partial_output_and_pauses() {
    let long = Turn::calls(&[(
        "terminal",
        json!({"command": "echo started; sleep 30.4321 & echo $! > child.pid; wait", "timeout": 60}),
    )]);
    let f = Fixture::new(Script::of(vec![long, finish()])).await;
    applied(&f.task("run the long job"));
    let waiting = f.settled().await;
    applied(&f.decide(&waiting, Decision::AllowOnce, None));
    f.until(|p| p.actions.iter().any(|a| a.state == ActionState::Running))
        .await;
    let pid_file = f.project.path().join("child.pid");
    let started = Instant::now();
    while !pid_file.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the command never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let asked = Instant::now();
    applied(&f.submit(CommandKind::Interrupt));
    let paused = f.until(|p| p.lifecycle == Lifecycle::Paused).await;
    let took = asked.elapsed();
    eprintln!("stop now took {took:?}");
    // Killed, not waited for: the command had 30 s to go.
    assert!(took < Duration::from_secs(15), "{took:?}");
    let action = &paused.actions[0];
    assert_eq!(action.state, ActionState::Stopped, "stopped, not failed");
    let detail = action.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("started"),
        "the partial output is kept: {detail}"
    );
    assert!(detail.contains("interrupted by the researcher"), "{detail}");
    // Everything the command started went: the background sleep is gone too. It is found by
    // its command line, since inside the sandbox its pid is its namespace's, not the host's.
    // (A killed process lingers as a zombie until it is reaped; that is not alive.)
    let alive = || heartwood_testkit::processes_running("sleep\u{0}30.4321");
    let waited = Instant::now();
    while !alive().is_empty() && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        alive().is_empty(),
        "the command's child survived: {:?}",
        alive()
    );
    assert!(paused.allows(heartwood_events::CommandName::Resume));
    let recorded = f.gateway.snapshot(&f.session, 0).expect("snapshot");
    assert!(
        recorded
            .events
            .iter()
            .any(|e| e.event == heartwood_events::Event::InterruptRequested {}),
        "the journal records the researcher's stop"
    );
    f.gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_commands_output_streams_before_it_ends_and_is_never_journaled() {
    let slow = Turn::calls(&[(
        "terminal",
        json!({"command": "for i in 1 2 3; do echo line $i; sleep 0.2; done"}),
    )]);
    let f = Fixture::new(Script::of(vec![slow, finish()])).await;
    applied(&f.task("print slowly"));
    let waiting = f.settled().await;
    let mut updates = f.gateway.subscribe(&f.session).expect("subscribe");
    applied(&f.decide(&waiting, Decision::AllowOnce, None));
    let mut streamed = String::new();
    let mut seen_while_running = false;
    let started = Instant::now();
    loop {
        let update = tokio::time::timeout(Duration::from_secs(20), updates.recv())
            .await
            .expect("an update")
            .expect("open");
        match update.change {
            heartwood_gateway::Change::Output { text, .. } => {
                streamed.push_str(&text);
                let live = f.gateway.snapshot(&f.session, u64::MAX).expect("snapshot");
                seen_while_running |= live.output.is_some_and(|o| o.text.contains("line 1"));
            }
            heartwood_gateway::Change::ExecutionSettled { .. } => break,
            _ => {}
        }
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    assert!(
        streamed.contains("line 1\n") && streamed.contains("line 3\n"),
        "{streamed:?}"
    );
    assert!(
        !streamed.contains("__HEARTWOOD_DONE"),
        "the end marker leaked: {streamed:?}"
    );
    assert!(
        seen_while_running,
        "a snapshot shows the output while the command runs"
    );
    let done = f.until(|p| p.lifecycle == Lifecycle::Finished).await;
    assert!(done.actions[0].started_at.is_some());
    let after = f.gateway.snapshot(&f.session, 0).expect("snapshot");
    assert!(after.output.is_none(), "output is transient");
    f.gateway.close().await;
}
