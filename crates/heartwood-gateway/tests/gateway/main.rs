//! The session gateway against the scripted model server: real HTTP, real shell, real files,
//! real journal.

use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, ActionState, Command, CommandId, CommandKind, CommandName, Decision, Lifecycle,
    Outcome, Receipt, Refusal, SessionId, SessionProjection,
};
use heartwood_gateway::config::{ProjectConfig, RouteCategory, RouteConfig};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;

mod actions;
mod recovery;
mod sharing;

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
        self.gateway
            .submit_blocking(self.command(kind))
            .expect("submit")
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

fn refused(receipt: &Receipt) -> String {
    match &receipt.outcome {
        Outcome::Refused(refusal) => refusal.to_string(),
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
    let replayed = heartwood_gateway::reduce(f.session.clone(), stored.events.iter().map(|e| &**e));
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
    // Typed on the receipt: each refusal carries its kind and what an interface acts on.
    assert_eq!(
        busy.outcome.refusal(),
        Some(&Refusal::Busy {
            command: CommandName::SubmitTask,
            lifecycle: Lifecycle::WaitingForDecision,
            available: waiting.available_commands.clone(),
        })
    );
    assert_eq!(
        stale.outcome.refusal(),
        Some(&Refusal::StaleDecision {
            set_id: set.set_id.clone(),
            revision: set.revision - 1,
            pending_set_id: set.set_id.clone(),
            pending_revision: set.revision,
            changed: Vec::new(),
        })
    );
    let blank = f.submit(CommandKind::SendGuidance { text: " ".into() });
    assert_eq!(blank.outcome.refusal(), Some(&Refusal::EmptyText));
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
    assert!(
        matches!(
            again.outcome.refusal(),
            Some(Refusal::NothingPending { .. })
        ),
        "{again:?}"
    );
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
    let first = f.gateway.submit_blocking(command.clone()).expect("submit");
    f.settled().await;
    let again = f.gateway.submit_blocking(command).expect("retry");
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

fn copy_example_project(to: &std::path::Path) {
    heartwood_testkit::copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/projects/sleep-study"),
        to,
    );
}

#[test]
fn last_in_a_project_without_sessions_is_not_found_and_says_so() {
    let folder = tempfile::tempdir().expect("project");
    let context = ProjectContext::at(folder.path()).expect("a UTF-8 project path");
    let admin = heartwood_gateway::SessionAdmin::new(&context);
    let err = admin.show("last").expect_err("there is no last session");
    assert_eq!(err.kind(), heartwood_gateway::ErrorKind::NotFound, "{err}");
    assert_eq!(err.to_string(), "this project has no sessions yet");
    // A start of an id that names nothing is not found either; an empty folder made nothing.
    let unknown = admin.show("s2026").expect_err("no such session");
    assert_eq!(
        unknown.kind(),
        heartwood_gateway::ErrorKind::NotFound,
        "{unknown}"
    );
    assert!(!folder.path().join(".heartwood").exists());
}

/// Typed text is one command through `submit`: a task in a new session, guidance while a set
/// waits, each recorded under the `say` command's one receipt, and a retry answered from it.
#[tokio::test(flavor = "multi_thread")]
async fn typed_text_is_one_command_that_means_what_the_session_says() {
    let f = Fixture::new(Script::of(vec![two_actions(), finish()])).await;
    let say = |text: &str| CommandKind::Say {
        text: text.into(),
        policy: ActionPolicy::AlwaysReview,
    };
    let blank = f.submit(say("  "));
    assert_eq!(blank.outcome.refusal(), Some(&Refusal::EmptyText));

    let task = f.command(say("work"));
    let first = f.gateway.submit_blocking(task.clone()).expect("say");
    applied(&first);
    assert_eq!(first.command(), Some(CommandName::Say));
    let waiting = f.settled().await;
    assert_eq!(waiting.lifecycle, Lifecycle::WaitingForDecision);
    // A retry while the session means something else by the text: answered as it was.
    let again = f.gateway.submit_blocking(task).expect("retry");
    assert_eq!(again, first, "a retried say acts once");

    let guided = f.submit(say("keep group 7 out"));
    applied(&guided);
    let events = f.gateway.snapshot(&f.session, 0).expect("snapshot").events;
    let said: Vec<&str> = events
        .iter()
        .filter(|e| e.command.as_ref() == Some(&guided.command_id))
        .map(|e| e.event.kind())
        .collect();
    assert_eq!(said, ["guidance_sent"], "guidance while a set waits");
    let tasks = events
        .iter()
        .filter(|e| e.event.kind() == "task_submitted")
        .count();
    assert_eq!(tasks, 1, "the retry submitted no second task");
    applied(&f.decide(&waiting, Decision::AllowOnce, None));
    f.settled().await;
}
