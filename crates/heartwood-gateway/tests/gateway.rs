//! The session gateway against the scripted model server: real HTTP, real shell, real files,
//! real journal.

use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, ActionState, Command, CommandId, CommandKind, CommandName, Decision, Lifecycle,
    Outcome, Receipt, SessionId, SessionProjection,
};
use heartwood_gateway::config::{ProjectConfig, RouteCategory, RouteConfig};
use heartwood_gateway::{ProjectContext, SessionGateway, reducer};
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;

struct Fixture {
    project: tempfile::TempDir,
    server: ScriptedModelServer,
    gateway: SessionGateway,
    session: SessionId,
    next_command: std::cell::Cell<u32>,
}

impl Fixture {
    async fn new(script: Script) -> Self {
        let project = tempfile::tempdir().expect("project");
        std::fs::write(project.path().join("data.csv"), "id,y\n1,2\n").expect("write");
        let server = ScriptedModelServer::start(script).await.expect("server");
        let context = ProjectContext::at(project.path()).expect("a UTF-8 project path");
        ProjectConfig::set_route(&context, route(&server.base_url(), None)).expect("route");
        let gateway = SessionGateway::new(context);
        Fixture {
            project,
            server,
            gateway,
            session: SessionId::parse("s1").expect("id"),
            next_command: std::cell::Cell::new(0),
        }
    }

    fn command(&self, kind: CommandKind) -> Command {
        let n = self.next_command.get() + 1;
        self.next_command.set(n);
        let id = CommandId::parse(&format!("c{n}")).expect("id");
        Command::new(id, self.session.clone(), kind)
    }

    fn submit(&self, kind: CommandKind) -> Receipt {
        self.gateway.submit(self.command(kind)).expect("submit")
    }

    fn task(&self, text: &str) -> Receipt {
        self.submit(CommandKind::SubmitTask {
            text: text.into(),
            policy: ActionPolicy::AlwaysReview,
        })
    }

    fn projection(&self) -> SessionProjection {
        self.gateway.projection(&self.session).expect("projection")
    }

    /// Waits until the agent has stopped (anything but running, with any set published).
    async fn settled(&self) -> SessionProjection {
        self.until(|p| {
            p.lifecycle != Lifecycle::Running
                && (p.lifecycle != Lifecycle::WaitingForDecision || p.pending.is_some())
        })
        .await
    }

    async fn until(&self, done: impl Fn(&SessionProjection) -> bool) -> SessionProjection {
        let started = Instant::now();
        loop {
            let p = self.projection();
            if done(&p) {
                return p;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "timed out; projection: {p:#?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn decide(&self, p: &SessionProjection, decision: Decision, reason: Option<&str>) -> Receipt {
        let set = p.pending.as_ref().expect("a pending set");
        self.submit(CommandKind::Decide {
            set_id: set.set_id.clone(),
            revision: set.revision,
            decision,
            reason: reason.map(str::to_owned),
        })
    }
}

/// Waits (up to 30 s) until `session`, served by `gateway`, has finished.
async fn finished(gateway: &SessionGateway, session: &SessionId) -> SessionProjection {
    let started = Instant::now();
    loop {
        let p = gateway.projection(session).expect("projection");
        if p.lifecycle == Lifecycle::Finished {
            return p;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{p:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn route(base_url: &str, api_key_env: Option<&str>) -> RouteConfig {
    RouteConfig {
        category: RouteCategory::Compatible,
        base_url: base_url.into(),
        model: "scripted".into(),
        api_key_env: api_key_env.map(str::to_owned),
        recording: None,
        max_input_tokens: 100_000,
        max_output_tokens: 1_000,
        timeout_secs: 60,
        prices: None,
    }
}

fn two_actions() -> Turn {
    Turn::calls(&[
        ("terminal", json!({"command": "echo one >> ran.txt"})),
        ("terminal", json!({"command": "echo two >> ran.txt"})),
    ])
}

fn finish() -> Turn {
    Turn::calls(&[("finish", json!({"message": "done"}))])
}

fn refused(receipt: &Receipt) -> &str {
    match &receipt.outcome {
        Outcome::Refused { reason } => reason,
        Outcome::Applied { .. } => panic!("applied, expected a refusal: {receipt:?}"),
    }
}

fn applied(receipt: &Receipt) {
    assert!(
        matches!(receipt.outcome, Outcome::Applied { .. }),
        "{receipt:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_two_action_set_waits_whole_runs_once_and_replays_to_the_same_projection() {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    applied(&f.task("write the file"));
    let waiting = f.settled().await;
    assert_eq!(waiting.lifecycle, Lifecycle::WaitingForDecision);
    let set = waiting.pending.clone().expect("pending");
    assert_eq!(set.members.len(), 2, "the set is shown whole");
    assert!(
        waiting.allows(heartwood_events::CommandName::Decide)
            && !waiting.allows(heartwood_events::CommandName::SubmitTask)
    );
    assert!(
        !f.project.path().join("ran.txt").exists(),
        "ran before the decision"
    );

    applied(&f.decide(&waiting, Decision::AllowOnce, None));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    let ran = std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran");
    assert_eq!(ran, "one\ntwo\n", "each action ran exactly once");
    let states: Vec<ActionState> = done.actions.iter().map(|a| a.state).collect();
    assert_eq!(states, [ActionState::Completed; 3]);
    assert_eq!(done.usage.by_purpose[0].purpose, "agent");
    assert_eq!(done.usage.total.calls, 2);

    f.gateway.close().await;
    let stored = f.gateway.snapshot(&f.session, 0).expect("stored");
    let replayed = reducer::replay(f.session.clone(), stored.events.iter().map(|e| &**e));
    assert_eq!(
        serde_json::to_string(&replayed).expect("json"),
        serde_json::to_string(&done).expect("json"),
        "the projection of the stored session equals the live one"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_or_missing_decisions_and_a_second_task_are_refused_alike() {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    applied(&f.task("work"));
    let waiting = f.settled().await;
    let busy = f.task("another");
    assert!(
        refused(&busy).contains("decide the pending action set first"),
        "{busy:?}"
    );
    let set = waiting.pending.clone().expect("pending");
    let stale = f.submit(CommandKind::Decide {
        set_id: set.set_id.clone(),
        revision: set.revision - 1,
        decision: Decision::AllowOnce,
        reason: None,
    });
    assert!(refused(&stale).contains("stale"), "{stale:?}");
    assert!(
        !f.project.path().join("ran.txt").exists(),
        "a stale decision ran something"
    );
    assert_eq!(
        f.projection().pending,
        Some(set.clone()),
        "the set still waits"
    );
    applied(&f.decide(&waiting, Decision::AllowOnce, None));
    f.settled().await;
    let again = f.decide(&waiting, Decision::AllowOnce, None);
    assert!(refused(&again).contains("no action set"), "{again:?}");
    let ran = std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran");
    assert_eq!(
        ran.lines().count(),
        2,
        "a second decision ran the set again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_reaches_the_model_and_nothing_runs() {
    let f = Fixture::new(Script::of(vec![
        two_actions(),
        Turn::text("Understood, I will not write the file."),
    ]))
    .await;
    f.task("write the file");
    let waiting = f.settled().await;
    applied(&f.decide(&waiting, Decision::RejectAll, Some("not in this folder")));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished);
    assert!(!f.project.path().join("ran.txt").exists());
    let requests = f.server.requests();
    let told: Vec<String> = requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told.iter().all(|t| t.contains("not in this folder")),
        "{told:?}"
    );
    assert!(
        done.actions
            .iter()
            .all(|a| a.state == ActionState::Rejected)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn guidance_and_pause_reach_a_running_task() {
    let slow = |turn: Turn| turn.with_fault(Fault::ChunkDelayMs(150));
    let f = Fixture::new(Script::of(vec![
        slow(Turn::calls(&[("think", json!({"thought": "plan"}))])),
        slow(Turn::calls(&[("think", json!({"thought": "more"}))])),
        finish(),
    ]))
    .await;
    f.task("think it through");
    f.until(|p| p.lifecycle == Lifecycle::Running).await;
    applied(&f.submit(CommandKind::SendGuidance {
        text: "use the held-out split".into(),
    }));
    applied(&f.submit(CommandKind::Pause));
    let paused = f.settled().await;
    assert_eq!(paused.lifecycle, Lifecycle::Paused, "{paused:#?}");
    assert!(
        paused.allows(heartwood_events::CommandName::Resume)
            && !paused.allows(heartwood_events::CommandName::Pause)
    );
    applied(&f.submit(CommandKind::Resume));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    let guided = f.server.requests().iter().any(|r| {
        r["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == "use the held-out split")
    });
    assert!(guided, "the guidance never reached the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_command_id_acts_once() {
    let f = Fixture::new(Script::of(vec![Turn::text("hello")])).await;
    let command = f.command(CommandKind::SubmitTask {
        text: "say hello".into(),
        policy: ActionPolicy::AlwaysReview,
    });
    let first = f.gateway.submit(command.clone()).expect("submit");
    f.settled().await;
    let again = f.gateway.submit(command).expect("retry");
    assert_eq!(first, again);
    let done = f.settled().await;
    let tasks = done
        .conversation
        .iter()
        .filter(|m| m.text == "say hello")
        .count();
    assert_eq!(tasks, 1);
    assert_eq!(f.server.requests().len(), 1, "the retry reached the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_run_is_reported_and_the_gateway_keeps_serving() {
    let f = Fixture::new(Script::of(vec![
        Turn::fault(Fault::Status {
            status: 400,
            body: None,
            retry_after_secs: None,
        }),
        Turn::text("recovered"),
    ]))
    .await;
    f.task("first");
    let failed = f.settled().await;
    assert_eq!(failed.lifecycle, Lifecycle::Failed, "{failed:#?}");
    assert!(failed.last_error.is_some());
    applied(&f.task("second"));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished);
    assert_eq!(
        done.conversation.last().map(|m| m.text.as_str()),
        Some("recovered")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn low_risk_automation_is_refused_for_a_secret_backed_route() {
    let f = Fixture::new(Script::of(vec![Turn::text("hi")])).await;
    let context = ProjectContext::at(f.project.path()).expect("a UTF-8 project path");
    ProjectConfig::set_route(
        &context,
        route(&f.server.base_url(), Some("HEARTWOOD_TEST_MODEL_KEY")),
    )
    .expect("route");
    let receipt = f.submit(CommandKind::SubmitTask {
        text: "go".into(),
        policy: ActionPolicy::LowRiskAutomation,
    });
    assert!(
        refused(&receipt).contains("low-risk automation is refused"),
        "{receipt:?}"
    );
    assert_eq!(f.server.requests().len(), 0);
}

/// Appends `events` to the session's journal directly, as a gateway that stopped right after
/// journaling them (and before its engine heard of them) would have left it.
fn journal_only(
    project: &std::path::Path,
    session: &SessionId,
    events: Vec<heartwood_events::Event>,
) {
    let store = heartwood_audit::SessionStore::new(project);
    let (mut writer, _) = store.open_writer(session).expect("writer");
    writer.append(None, events).expect("append");
}

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

/// Removes the session's last journal line, as a process killed between two appends leaves it
/// (the chain stays intact: an intact prefix is a valid session).
fn cut_last_event(project: &std::path::Path, session: &SessionId) -> String {
    let dir = project.join(".heartwood/sessions").join(session.as_str());
    let mut cut = String::new();
    for name in ["events.jsonl", "audit.jsonl"] {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).expect("journal file");
        let mut lines: Vec<&str> = text.lines().collect();
        let last = lines.pop().expect("a line");
        if name == "events.jsonl" {
            cut = last.to_owned();
        }
        let mut kept = lines.join("\n");
        kept.push('\n');
        std::fs::write(&path, kept).expect("write");
    }
    cut
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
    // Looking at the session through the gateway takes it over (nobody serves it): serving it
    // republishes the set the engine waits on, which can then be decided.
    let next = SessionGateway::new(context);
    let p = next.projection(&f.session).expect("projection");
    let set = p.pending.clone().expect("the set is published again");
    assert_eq!(set.set_id, shown.set_id);
    assert_eq!(set.members, shown.members);
    let receipt = next
        .submit(Command::new(
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
        match next.submit(command) {
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

/// Rewrites the session's journal without its events for which `drop` holds, renumbered and
/// sealed again, as a journal written by a translation that produced fewer events would be.
fn rewrite_journal(
    project: &std::path::Path,
    session: &SessionId,
    drop: impl Fn(&heartwood_events::RecordedEvent) -> bool,
) {
    use heartwood_audit::{AuditRecord, Digest, genesis};
    let dir = project.join(".heartwood/sessions").join(session.as_str());
    let text = std::fs::read_to_string(dir.join("events.jsonl")).expect("events");
    let mut prev = genesis(session);
    let (mut events, mut audit) = (Vec::new(), Vec::new());
    let mut seq = 0u64;
    for line in text.lines() {
        let mut event = heartwood_events::RecordedEvent::decode(line.as_bytes()).expect("event");
        if drop(&event) {
            continue;
        }
        seq += 1;
        event.seq = heartwood_events::Seq::new(seq).expect("seq");
        let bytes = heartwood_events::to_canonical_bytes(&event).expect("canonical");
        let record = AuditRecord::seal(
            seq,
            event.event.kind(),
            event.time.as_str(),
            Digest::of(&bytes),
            prev,
        );
        prev = record.hash;
        events.extend_from_slice(&bytes);
        events.push(b'\n');
        audit.extend_from_slice(&record.to_line());
        audit.push(b'\n');
    }
    std::fs::write(dir.join("events.jsonl"), events).expect("write");
    std::fs::write(dir.join("audit.jsonl"), audit).expect("write");
    let _ = std::fs::remove_file(dir.join("derived.json"));
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
        .submit(Command::new(
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
        gateway.submit(Command::new(
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
            .submit(Command::new(
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
        .submit(Command::new(
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
            .submit(Command::new(
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

fn copy_example_project(to: &std::path::Path) {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        for entry in std::fs::read_dir(from).expect("read").flatten() {
            let target = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                std::fs::create_dir_all(&target).expect("mkdir");
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
    copy(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/projects/sleep-study"),
        to,
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
