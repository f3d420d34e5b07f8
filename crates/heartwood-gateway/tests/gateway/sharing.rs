//! One session seen and acted on from several gateways and processes: rows, blank snapshots, the command channel, idle release.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn session_rows_come_from_a_cache_bound_to_the_journals_end() {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    f.task("write the file");
    let waiting = f.settled().await;
    assert!(waiting.pending.is_some());
    f.gateway.close().await;

    let next =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    let rows = next.rows(10).expect("rows");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].session, f.session);
    assert!(rows[0].pending, "{rows:?}");
    assert_eq!(rows[0].status_line, waiting.status_line);

    // The cache is a summary, never evidence: once the journal's end moves, it is ignored and
    // the row comes from verifying the session, which here finds the damage.
    let dir = f
        .project
        .path()
        .join(".heartwood/sessions")
        .join(f.session.as_str());
    let events = dir.join("events.jsonl");
    let mut bytes = std::fs::read(&events).expect("events");
    bytes.extend_from_slice(b"{\"forged\":true}\n");
    std::fs::write(&events, bytes).expect("write");
    let rows = next.rows(10).expect("rows");
    assert_eq!(rows[0].lifecycle, None, "{rows:?}");
    assert!(
        rows[0].status_line.starts_with("cannot be read"),
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_valid_id_with_no_session_yet_has_the_blank_snapshot_and_creates_nothing() {
    let f = Fixture::new(Script::default()).await;
    let fresh = SessionGateway::new_session_id();
    let snapshot = f.gateway.snapshot(&fresh, 0).expect("snapshot");
    assert_eq!(snapshot.revision, 0);
    assert!(snapshot.events.is_empty());
    assert_eq!(snapshot.projection.lifecycle, Lifecycle::Idle);
    assert_eq!(snapshot.projection.status_line, "Ready for a task.");
    assert!(
        snapshot
            .projection
            .allows(heartwood_events::CommandName::SubmitTask)
    );
    assert!(
        !f.project
            .path()
            .join(".heartwood/sessions")
            .join(fresh.as_str())
            .exists(),
        "a snapshot registered a session"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_gateway_reaches_a_served_session_through_its_channel_and_decisions_meet_in_one_order()
 {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    applied(&f.task("write the file"));
    let waiting = f.settled().await;
    let set = waiting.pending.clone().expect("pending");

    // Two other "interfaces" (each its own gateway, as another process would be).
    let context = || ProjectContext::at(f.project.path()).expect("a UTF-8 project path");
    let (second, third) = (
        SessionGateway::new(context()),
        SessionGateway::new(context()),
    );
    let live = second.snapshot(&f.session, u64::MAX).expect("snapshot");
    assert!(
        live.review.is_some(),
        "the snapshot comes from the serving process"
    );
    let mut updates = second
        .subscribe(&f.session)
        .expect("subscribe through the channel");

    let decide = |gateway: &SessionGateway, id: &str| {
        gateway.submit_blocking(Command::new(
            CommandId::parse(id).expect("id"),
            f.session.clone(),
            CommandKind::Decide {
                set_id: set.set_id.clone(),
                revision: set.revision,
                decision: Decision::AllowOnce,
                reason: None,
            },
        ))
    };
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| decide(&second, "from-second"));
        let b = scope.spawn(|| decide(&third, "from-third"));
        (a.join().expect("a"), b.join().expect("b"))
    });
    let (a, b) = (a.expect("answered"), b.expect("answered"));
    let applied_count = [&a, &b]
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Applied { .. }))
        .count();
    assert_eq!(applied_count, 1, "exactly one decision acts: {a:?} {b:?}");
    // A retry through the channel gets the first answer.
    let again = decide(&second, "from-second").expect("retry");
    assert_eq!(again.outcome, a.outcome);

    let done = f.until(|p| p.lifecycle == Lifecycle::Finished).await;
    assert_eq!(
        std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "the set ran once"
    );
    let mut saw_event = false;
    while let Ok(update) = updates.try_recv() {
        saw_event |= matches!(update.change, heartwood_gateway::Change::Event { .. });
    }
    assert!(saw_event, "updates reached the other gateway");
    assert_eq!(done.last_decision.map(|d| d.set_id), Some(set.set_id));
    f.gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_too_deep_for_a_socket_file_is_still_reached_through_its_channel() {
    let root = tempfile::tempdir().expect("root");
    // `.heartwood/sessions/s1/channel.sock` under this folder is far past the 107 bytes a
    // socket path may have.
    let project = root.path().join("a".repeat(60)).join("b".repeat(60));
    std::fs::create_dir_all(&project).expect("deep project");
    let server = ScriptedModelServer::start(Script::of(vec![two_actions(), finish()]))
        .await
        .expect("server");
    let context = || ProjectContext::at(&project).expect("a UTF-8 project path");
    ProjectConfig::set_route(&context(), route(&server.base_url(), None)).expect("route");
    let (owner, other) = (
        SessionGateway::new(context()),
        SessionGateway::new(context()),
    );
    let session = SessionId::parse("s1").expect("id");
    applied(
        &owner
            .submit_blocking(Command::new(
                CommandId::parse("task").expect("id"),
                session.clone(),
                CommandKind::SubmitTask {
                    text: "write the file".into(),
                    policy: ActionPolicy::AlwaysReview,
                },
            ))
            .expect("task"),
    );
    let started = Instant::now();
    let set = loop {
        if let Some(set) = owner.projection(&session).expect("projection").pending {
            break set;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no set");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // The other gateway is not told "owned": its decision reaches the owner.
    let decided = other
        .submit_blocking(Command::new(
            CommandId::parse("decide").expect("id"),
            session.clone(),
            CommandKind::Decide {
                set_id: set.set_id,
                revision: set.revision,
                decision: Decision::AllowOnce,
                reason: None,
            },
        ))
        .expect("reached the owner");
    applied(&decided);
    finished(&owner, &session).await;
    assert_eq!(
        std::fs::read_to_string(project.join("ran.txt")).expect("ran"),
        "one\ntwo\n"
    );
    assert!(
        !project.join(".heartwood/sessions/s1/channel.sock").exists(),
        "no socket file was made for the too-long path"
    );
    owner.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_is_released_and_its_followers_see_another_process_act_on_it() {
    let f = Fixture::new(Script::of(vec![
        two_actions(),
        finish(),
        Turn::text("again"),
    ]))
    .await;
    applied(&f.task("write the file"));
    let waiting = f.settled().await;
    let set = waiting.pending.clone().expect("pending");
    let mut updates = f.gateway.subscribe(&f.session).expect("follow");

    // Nothing is released while it has been idle for less than the grace.
    assert_eq!(f.gateway.release_idle(Duration::from_secs(3600)).await, 0);
    assert_eq!(f.gateway.release_idle(Duration::ZERO).await, 1);

    // Another process now takes the session itself (no channel to go through: nobody serves
    // it) and runs the set.
    let other =
        SessionGateway::new(ProjectContext::at(f.project.path()).expect("a UTF-8 project path"));
    applied(
        &other
            .submit_blocking(Command::new(
                CommandId::parse("elsewhere").expect("id"),
                f.session.clone(),
                CommandKind::Decide {
                    set_id: set.set_id.clone(),
                    revision: set.revision,
                    decision: Decision::AllowOnce,
                    reason: None,
                },
            ))
            .expect("decide"),
    );
    finished(&other, &f.session).await;
    other.close().await;

    // The first gateway's follower was told to look again, on the same receiver, and looking
    // shows what the other process did.
    let started = Instant::now();
    let mut told = false;
    while !told && started.elapsed() < Duration::from_secs(30) {
        match updates.try_recv() {
            Ok(_) => told = true,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert!(told, "the follower heard nothing");
    assert_eq!(f.projection().lifecycle, Lifecycle::Finished);
    assert_eq!(
        std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran"),
        "one\ntwo\n",
        "the set ran once"
    );
    // And the first gateway serves it again when it next acts.
    applied(&f.task("once more"));
    let done = f
        .until(|p| p.lifecycle == Lifecycle::Finished && p.conversation.len() > 3)
        .await;
    assert!(
        done.conversation.iter().any(|m| m.text == "again"),
        "{done:#?}"
    );
    f.gateway.close().await;
}
