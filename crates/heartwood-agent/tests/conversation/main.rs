//! Conversations against the scripted model server: real HTTP, real shell, real files.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use heartwood_agent::conversation::{
    CondenserConfig, ConfirmationPolicy, Conversation, ConversationConfig, ConversationState,
    EventKind, ExecutionStatus, model_view,
};
use heartwood_agent::model::ModelRoute;
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::{Value, json};

mod batches;

struct Fixture {
    project: tempfile::TempDir,
    state: tempfile::TempDir,
    server: ScriptedModelServer,
}

impl Fixture {
    async fn new(script: Script) -> Self {
        let project = tempfile::tempdir().expect("project");
        std::fs::create_dir(project.path().join("data")).expect("mkdir");
        std::fs::write(
            project.path().join("data/cohort.csv"),
            "id,group,y\n1,a,2.0\n2,b,3.5\n",
        )
        .expect("write");
        let state = tempfile::tempdir().expect("state");
        let server = ScriptedModelServer::start(script).await.expect("server");
        Fixture {
            project,
            state,
            server,
        }
    }

    fn config(&self, policy: ConfirmationPolicy) -> ConversationConfig {
        let route = ModelRoute {
            initial_backoff: Duration::from_millis(5),
            max_retries: 0,
            ..ModelRoute::compatible(&self.server.base_url(), "scripted")
        };
        let mut config = ConversationConfig::new(
            route,
            self.project.path().to_owned(),
            self.state.path().join("conv"),
        );
        config.policy = policy;
        config
    }

    fn open(&self, policy: ConfirmationPolicy) -> Conversation {
        Conversation::open(self.config(policy)).expect("open")
    }

    fn file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project.path().join(rel)).ok()
    }

    /// The tool messages of request `n` (0-based), as (tool_call_id, content).
    fn tool_messages(&self, n: usize) -> Vec<(String, String)> {
        self.server.requests()[n]["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                (
                    m["tool_call_id"].as_str().unwrap_or("").to_owned(),
                    m["content"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }
}

fn batch_of_two() -> Turn {
    Turn::calls(&[
        (
            "terminal",
            json!({"command": "echo ran >> side-effects.txt"}),
        ),
        (
            "file_editor",
            json!({"command": "create", "path": "notes.md", "file_text": "hello\n"}),
        ),
    ])
}

fn statuses(conversation: &Conversation) -> Vec<ExecutionStatus> {
    conversation
        .events()
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Status { status } => Some(status),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_task_runs_a_command_edits_a_file_and_finishes() {
    let f = Fixture::new(Script::fixture("run-and-edit")).await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    let tokens = Arc::new(Mutex::new(String::new()));
    let sink = tokens.clone();
    conversation.on_token(move |t| sink.lock().expect("lock").push_str(t));
    conversation
        .send_message("Check that data/cohort.csv is ready.")
        .expect("message");
    let status = conversation.run().await.expect("run");
    assert_eq!(status, ExecutionStatus::Finished);
    assert_eq!(
        f.file("reports/readiness.md").as_deref(),
        Some("# Readiness\n\nrows: 3\n")
    );
    assert_eq!(
        tokens.lock().expect("lock").as_str(),
        "I'll look at the data first."
    );

    // The command's output reached the model in the next request.
    let results = f.tool_messages(1);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].1.contains("3 data/cohort.csv"),
        "{:?}",
        results[0]
    );
    let usage = conversation.usage();
    assert_eq!(usage["agent"].prompt_tokens, 410 + 520 + 600);
    assert_eq!(usage["agent"].cache_read_tokens, 400);
    assert_eq!(usage["agent"].calls, 3);
    assert_eq!(f.server.remaining_turns(), 0);

    // The view sent with the last request (kept up to date step by step) is exactly the view
    // derived from the log as it stood then.
    let events = conversation.events();
    let last_call = events
        .iter()
        .rposition(|e| matches!(&e.kind, EventKind::Usage { usage_id, .. } if usage_id == "agent"))
        .expect("a model call");
    let before = &events[..last_call];
    let derived = model_view(
        &f.config(ConfirmationPolicy::NeverConfirm).system_prompt,
        before,
        &ConversationState::replay(before),
    );
    let sent = f.server.requests().last().expect("a request")["messages"].clone();
    assert_eq!(serde_json::to_value(&derived).expect("json"), sent);
    conversation.close().await;
}

#[tokio::test]
async fn a_host_that_keeps_the_log_durable_receives_every_byte_once_in_order() {
    let f = Fixture::new(Script::fixture("run-and-edit")).await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    let tails = Arc::new(Mutex::new(Vec::new()));
    let sink = tails.clone();
    conversation.durable_by_host(move |tail| {
        sink.lock().expect("lock").push(tail);
        Ok(())
    });
    conversation
        .send_message("Check that data/cohort.csv is ready.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    let tails = tails.lock().expect("lock").clone();
    // A durability point before each tool and one at the end: the host saw them all.
    assert!(tails.len() >= 3, "{} durability points", tails.len());
    let log = std::fs::read(f.state.path().join("conv").join(tails[0].file)).expect("log");
    let mut offset = tails[0].offset;
    let mut joined = log[..offset as usize].to_vec();
    for tail in &tails {
        assert_eq!(tail.offset, offset, "the tails follow each other");
        offset += tail.bytes.len() as u64;
        joined.extend_from_slice(&tail.bytes);
    }
    assert_eq!(joined, log, "the host saw every byte of the log, once");
}

#[tokio::test]
async fn a_host_that_cannot_keep_the_log_durable_stops_the_run_before_a_tool() {
    let f = Fixture::new(Script::fixture("run-and-edit")).await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    // The message is durable; the disk fills before the first tool.
    let mut points = 0;
    conversation.durable_by_host(move |_| {
        points += 1;
        if points == 1 {
            Ok(())
        } else {
            Err("the disk is full".into())
        }
    });
    conversation
        .send_message("Check that data/cohort.csv is ready.")
        .expect("message");
    let error = conversation
        .run()
        .await
        .expect_err("a run that cannot be durable");
    assert!(error.to_string().contains("the disk is full"), "{error}");
    assert_eq!(f.file("reports/readiness.md"), None, "no tool ran");
}

#[tokio::test]
async fn a_two_call_batch_waits_whole_and_both_rejections_reach_the_model() {
    let f = Fixture::new(Script::of(vec![
        batch_of_two(),
        Turn::text("Understood, I will not write files."),
    ]))
    .await;
    let mut conversation = f.open(ConfirmationPolicy::AlwaysConfirm);
    conversation
        .send_message("Write some notes.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::WaitingForConfirmation
    );
    let pending = conversation.pending_actions();
    assert_eq!(pending.len(), 2, "the whole batch waits");
    let response_ids: Vec<_> = pending
        .iter()
        .map(|e| match &e.kind {
            EventKind::Action { response_id, .. } => response_id.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        response_ids[0], response_ids[1],
        "one reply, one response id"
    );
    assert!(
        f.file("side-effects.txt").is_none() && f.file("notes.md").is_none(),
        "nothing ran"
    );

    conversation
        .reject_pending("not in this project")
        .expect("reject");
    assert_eq!(conversation.state().status, ExecutionStatus::Idle);
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    let results = f.tool_messages(1);
    assert_eq!(results.len(), 2, "both rejections were sent: {results:?}");
    assert!(
        results
            .iter()
            .all(|(_, text)| text.contains("rejected") && text.contains("not in this project"))
    );
    assert!(
        f.file("side-effects.txt").is_none() && f.file("notes.md").is_none(),
        "a rejected action ran"
    );
    conversation.close().await;
}

#[tokio::test]
async fn an_approved_batch_runs_each_call_exactly_once() {
    let f = Fixture::new(Script::of(vec![
        batch_of_two(),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let mut conversation = f.open(ConfirmationPolicy::AlwaysConfirm);
    conversation
        .send_message("Write some notes.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::WaitingForConfirmation
    );
    conversation.approve_pending().expect("approve");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    assert_eq!(f.file("side-effects.txt").as_deref(), Some("ran\n"));
    assert_eq!(f.file("notes.md").as_deref(), Some("hello\n"));
    assert!(
        conversation.approve_pending().is_err(),
        "nothing left to approve"
    );
    conversation.close().await;
}

#[tokio::test]
async fn a_conversation_reopened_while_waiting_still_waits_and_runs_once_when_approved() {
    let f = Fixture::new(Script::of(vec![
        batch_of_two(),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let first_pending = {
        let mut conversation = f.open(ConfirmationPolicy::AlwaysConfirm);
        conversation
            .send_message("Write some notes.")
            .expect("message");
        assert_eq!(
            conversation.run().await.expect("run"),
            ExecutionStatus::WaitingForConfirmation
        );
        let ids: Vec<u64> = conversation
            .pending_actions()
            .iter()
            .map(|e| e.id)
            .collect();
        conversation.close().await;
        ids
    };
    let mut reopened = f.open(ConfirmationPolicy::AlwaysConfirm);
    assert_eq!(
        reopened.state().status,
        ExecutionStatus::WaitingForConfirmation
    );
    assert_eq!(
        reopened
            .pending_actions()
            .iter()
            .map(|e| e.id)
            .collect::<Vec<_>>(),
        first_pending
    );
    assert_eq!(
        reopened.run().await.expect("run"),
        ExecutionStatus::WaitingForConfirmation,
        "no decision yet"
    );
    reopened.approve_pending().expect("approve");
    assert_eq!(
        reopened.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    reopened.close().await;

    let again = f.open(ConfirmationPolicy::AlwaysConfirm);
    assert_eq!(again.state().status, ExecutionStatus::Finished);
    assert!(again.pending_actions().is_empty());
    assert_eq!(
        f.file("side-effects.txt").as_deref(),
        Some("ran\n"),
        "an action ran twice"
    );
    assert_eq!(f.server.requests().len(), 2);
    again.close().await;
}

#[tokio::test]
async fn pause_takes_effect_between_steps_and_run_resumes() {
    let step = |n: u32| {
        Turn::calls(&[(
            "terminal",
            json!({"command": format!("echo step{n} >> steps.txt")}),
        )])
    };
    let f = Fixture::new(Script::of(vec![
        step(1),
        step(2),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    let pause = conversation.pause_handle();
    conversation.on_event(move |event, _| {
        if matches!(event.kind, EventKind::Observation { .. }) {
            pause.pause();
        }
    });
    conversation
        .send_message("Do three steps.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Paused
    );
    assert_eq!(
        f.file("steps.txt").as_deref(),
        Some("step1\n"),
        "paused after the first step"
    );
    assert_eq!(f.server.requests().len(), 1);
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Paused
    );
    assert_eq!(f.file("steps.txt").as_deref(), Some("step1\nstep2\n"));
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    assert!(statuses(&conversation).contains(&ExecutionStatus::Paused));
    conversation.close().await;
}

#[tokio::test]
async fn malformed_tool_arguments_become_an_error_the_model_sees() {
    let mut bad = Turn::calls(&[("terminal", json!(null))]);
    bad.tool_calls[0].raw_arguments = Some("{\"command\": \"ls".to_owned());
    let f = Fixture::new(Script::of(vec![
        bad,
        Turn::calls(&[("finish", json!({"message": "ok"}))]),
    ]))
    .await;
    let mut conversation = f.open(ConfirmationPolicy::AlwaysConfirm);
    conversation.send_message("List files.").expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    let results = f.tool_messages(1);
    assert!(results[0].1.contains("not valid JSON"), "{results:?}");
    conversation.close().await;
}

#[tokio::test]
async fn model_faults_end_the_run_in_error_with_a_classified_message() {
    let auth = Turn::fault(Fault::Status {
        status: 401,
        body: Some(json!({"error": {"message": "bad key"}})),
        retry_after_secs: None,
    });
    let f = Fixture::new(Script::of(vec![auth])).await;
    let mut conversation = f.open(ConfirmationPolicy::AlwaysConfirm);
    conversation.send_message("Hello.").expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Error
    );
    let message = conversation
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error { message } => Some(message.clone()),
            _ => None,
        })
        .expect("an error event");
    assert!(message.contains("refused the credentials"), "{message}");
    conversation.send_message("Try again.").expect("message");
    assert_eq!(conversation.state().status, ExecutionStatus::Idle);
    conversation.close().await;
}

#[tokio::test]
async fn a_condensation_replaces_old_history_in_the_next_request() {
    let step = |n: u32| {
        Turn::calls(&[(
            "terminal",
            json!({"command": format!("echo OLD-OUTPUT-{n}")}),
        )])
    };
    let f = Fixture::new(Script::of(vec![
        step(1),
        step(2),
        step(3),
        Turn::text("SUMMARY: ran three echo commands.").with_usage(50, 10),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let mut config = f.config(ConfirmationPolicy::NeverConfirm);
    config.condenser = Some(CondenserConfig {
        max_events: 16,
        keep_first: 2,
    });
    let mut conversation = Conversation::open(config).expect("open");
    conversation
        .send_message("Run some echoes.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );

    let requests = f.server.requests();
    assert_eq!(requests.len(), 5);
    let condenser_request = requests[3].to_string();
    assert!(
        condenser_request.contains("OLD-OUTPUT-1"),
        "the condenser saw the old history"
    );
    let next: Value = requests[4].clone();
    let text = next.to_string();
    assert!(text.contains("SUMMARY: ran three echo commands."), "{text}");
    assert!(
        !text.contains("OLD-OUTPUT-1"),
        "forgotten history was still sent: {text}"
    );
    assert!(
        text.contains("Run some echoes."),
        "the first message is kept"
    );
    assert_eq!(conversation.usage()["condenser"].prompt_tokens, 50);
    assert!(
        conversation
            .events()
            .iter()
            .any(|e| matches!(e.kind, EventKind::Condensation { .. }))
    );
    conversation.close().await;
}

#[tokio::test]
async fn the_agent_is_stopped_when_it_repeats_itself_without_progress() {
    let same = || Turn::calls(&[("terminal", json!({"command": "echo same"}))]);
    let f = Fixture::new(Script::of(vec![same(), same(), same()])).await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    conversation.send_message("Loop.").expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Stuck
    );
    conversation.close().await;
}

#[tokio::test]
async fn calls_after_finish_are_dropped_and_the_iteration_limit_stops_a_run() {
    let f = Fixture::new(Script::of(vec![Turn::calls(&[
        ("terminal", json!({"command": "echo before >> order.txt"})),
        ("finish", json!({"message": "done"})),
        ("terminal", json!({"command": "echo after >> order.txt"})),
    ])]))
    .await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    conversation.send_message("Finish up.").expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    let tools: Vec<String> = conversation
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Action { tool, .. } => Some(tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        ["terminal", "finish"],
        "the call after finish was kept"
    );
    assert_eq!(f.file("order.txt").as_deref(), Some("before\n"));
    conversation.close().await;

    let step = |n: u32| Turn::calls(&[("think", json!({"thought": format!("thought {n}")}))]);
    let f = Fixture::new(Script::of(vec![step(1), step(2), step(3)])).await;
    let mut config = f.config(ConfirmationPolicy::NeverConfirm);
    config.max_iterations = 2;
    let mut conversation = Conversation::open(config).expect("open");
    conversation.send_message("Think a lot.").expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Error
    );
    assert_eq!(f.server.requests().len(), 2, "the limit allowed more calls");
    let limit = conversation.events().iter().any(|e| matches!(&e.kind, EventKind::Error { message } if message.contains("limit of 2 model calls")));
    assert!(limit);
    conversation.close().await;
}

#[tokio::test]
async fn guidance_sent_while_running_reaches_the_model_at_the_next_step() {
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "echo working"}))]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let mut conversation = f.open(ConfirmationPolicy::NeverConfirm);
    let guidance = conversation.guidance_handle();
    conversation.on_event(move |event, _| {
        if matches!(event.kind, EventKind::Observation { .. }) {
            guidance.send("Use the held-out rows only for evaluation.");
        }
    });
    conversation
        .send_message("Fit the model.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    let second = f.server.requests()[1]["messages"].to_string();
    assert!(
        second.contains("Use the held-out rows only for evaluation."),
        "{second}"
    );
    conversation.close().await;
}

#[tokio::test]
async fn the_routes_credential_is_hidden_from_the_agents_shell() {
    // HEARTWOOD_TEST_MODEL_KEY is set for test processes by `.cargo/config.toml`.
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "echo \"[${HEARTWOOD_TEST_MODEL_KEY:-}]\""}),
        )]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let mut config = f.config(ConfirmationPolicy::NeverConfirm);
    config.route.api_key_env = Some("HEARTWOOD_TEST_MODEL_KEY".to_owned());
    let mut conversation = Conversation::open(config).expect("open");
    conversation
        .send_message("Print the key.")
        .expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    assert_eq!(
        f.server.authorizations()[0].as_deref(),
        Some("Bearer sk-test-secret-123")
    );
    let results = f.tool_messages(1);
    assert!(
        results[0].1.starts_with("[]"),
        "the shell could read the key: {results:?}"
    );
    let log = std::fs::read_to_string(f.state.path().join("conv/events.jsonl")).expect("log");
    assert!(
        !log.contains("sk-test-secret-123"),
        "the key reached the conversation log"
    );
    conversation.close().await;
}

/// What the shell printed for `echo [$HEARTWOOD_TEST_MODEL_KEY] [$HOME]` under `tool_env`.
async fn shell_sees(tool_env: heartwood_agent::tools::ToolEnvironment) -> String {
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "echo \"[${HEARTWOOD_TEST_MODEL_KEY:-}] [${HOME:+home}]\""}),
        )]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await;
    let mut config = f.config(ConfirmationPolicy::NeverConfirm);
    config.tool_env = tool_env;
    let mut conversation = Conversation::open(config).expect("open");
    conversation.send_message("Print them.").expect("message");
    assert_eq!(
        conversation.run().await.expect("run"),
        ExecutionStatus::Finished
    );
    conversation.close().await;
    f.tool_messages(1)[0].1.clone()
}

#[tokio::test]
async fn a_variable_off_the_allowlist_never_reaches_a_command_and_an_allowed_one_does() {
    // HEARTWOOD_TEST_MODEL_KEY is set for test processes by `.cargo/config.toml`; no route
    // names it here, so only the allowlist decides.
    let standard = shell_sees(heartwood_agent::tools::ToolEnvironment::default()).await;
    assert!(standard.starts_with("[] [home]"), "{standard}");
    // A prefix never passes a name that looks secret; naming it exactly does.
    let prefixed = shell_sees(
        heartwood_agent::tools::ToolEnvironment::default()
            .allowing(["HEARTWOOD_TEST_*".to_owned()]),
    )
    .await;
    assert!(prefixed.starts_with("[] [home]"), "{prefixed}");
    let allowed = shell_sees(
        heartwood_agent::tools::ToolEnvironment::default()
            .allowing(["HEARTWOOD_TEST_MODEL_KEY".to_owned()]),
    )
    .await;
    assert!(
        allowed.starts_with("[sk-test-secret-123] [home]"),
        "{allowed}"
    );
}
