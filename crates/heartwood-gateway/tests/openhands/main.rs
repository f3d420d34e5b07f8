//! The gateway with the OpenHands backend: the same scenarios as the native engine's, against
//! the real agent server (the pinned environment) and the scripted model server. Without the
//! environment the tests say so and pass, unless `HEARTWOOD_REQUIRE_OPENHANDS` is set (as CI
//! does).

mod fixture;

use std::time::{Duration, Instant};

use fixture::{Fixture, WITHIN, applied, commands, installed};
use heartwood_events::workflow::OutcomeStatus;
use heartwood_events::{ActionState, CommandKind, Decision, Lifecycle, SessionId};
use heartwood_gateway::{SessionAdmin, SessionGateway};
use heartwood_testkit::{Script, Turn};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_set_is_shown_whole_rejected_with_a_reason_the_next_allowed_from_another_process_and_run_once()
 {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[
            ("terminal", json!({"command": "echo one >> ran.txt"})),
            ("terminal", json!({"command": "echo two >> ran.txt"})),
        ]),
        Turn::calls(&[("terminal", json!({"command": "echo three >> ran.txt"}))]),
        Turn::calls(&[("finish", json!({"message": "wrote three"}))]),
    ]))
    .await;
    applied(&f.task("write the file"));
    let waiting = f.settled().await;
    assert_eq!(
        waiting.lifecycle,
        Lifecycle::WaitingForDecision,
        "{waiting:#?}"
    );
    assert_eq!(
        commands(&waiting),
        ["echo one >> ran.txt", "echo two >> ran.txt"],
        "the set is shown whole"
    );
    assert!(
        !f.project.path().join("ran.txt").exists(),
        "ran before the decision"
    );

    applied(&f.decide_with(
        &f.gateway,
        &waiting,
        Decision::RejectAll,
        Some("write only three"),
    ));
    let next = f.settled().await;
    assert_eq!(commands(&next), ["echo three >> ran.txt"], "{next:#?}");
    let told = f.model.requests().last().map(ToString::to_string);
    assert!(
        told.is_some_and(|t| t.contains("write only three")),
        "the model was told why"
    );

    // The decision comes from another process's gateway, through the session's channel.
    let other = SessionGateway::new(f.context());
    applied(&f.decide_with(&other, &next, Decision::AllowOnce, None));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    assert_eq!(
        std::fs::read_to_string(f.project.path().join("ran.txt")).expect("ran"),
        "three\n",
        "only the allowed action ran, once"
    );
    let states: Vec<ActionState> = done
        .actions
        .iter()
        .filter(|a| a.proposal.tool == "terminal")
        .map(|a| a.state)
        .collect();
    assert_eq!(
        states,
        [
            ActionState::Rejected,
            ActionState::Rejected,
            ActionState::Completed
        ]
    );

    f.gateway.close().await;
    other.close().await;
    let admin = SessionAdmin::new(&f.context());
    admin
        .verify(f.session.as_str(), None)
        .expect("the session verifies");
    let stored = f.gateway.snapshot(&f.session, 0).expect("stored");
    let replayed = heartwood_gateway::reduce(f.session.clone(), stored.events.iter().map(|e| &**e));
    assert_eq!(replayed.lifecycle, Lifecycle::Finished);
    assert_eq!(replayed.actions.len(), done.actions.len());
    let store = f
        .project
        .path()
        .join(".heartwood/sessions/oh1/backend/conversations");
    assert!(
        store.is_dir(),
        "OpenHands' conversation store lives under the session's backend/"
    );
}

/// Waits until `path` holds `text`.
async fn until_file_holds(path: &std::path::Path, text: &str) {
    let started = Instant::now();
    while !std::fs::read_to_string(path).is_ok_and(|t| t.contains(text)) {
        assert!(
            started.elapsed() < WITHIN,
            "{} never held {text:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_agent_server_is_reported_restarted_by_the_next_command_and_nothing_runs_twice() {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "echo start >> ran.txt; sleep 20; echo end >> ran.txt"}),
        )]),
        Turn::text("The command was cut off; I will not run it again."),
        Turn::text("Nothing more to do."),
    ]))
    .await;
    applied(&f.task("run the slow command"));
    let waiting = f.settled().await;
    applied(&f.decide_with(&f.gateway, &waiting, Decision::AllowOnce, None));
    let ran = f.project.path().join("ran.txt");
    until_file_holds(&ran, "start").await;

    let store = f
        .project
        .path()
        .join(".heartwood/sessions/oh1/backend/conversations");
    let serving = heartwood_openhands::server::processes_of(&store);
    assert!(!serving.is_empty(), "the agent server carries its store");
    heartwood_openhands::server::reap(&store);
    let stopped = f.settled().await;
    assert!(
        stopped
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("stopped unexpectedly")),
        "{stopped:#?}"
    );

    applied(&f.task("go on"));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    assert_eq!(
        std::fs::read_to_string(&ran).expect("ran"),
        "start\n",
        "the cut-off command never ran again"
    );
    let cut = &done.actions[0];
    assert_eq!(cut.state, ActionState::Failed, "{:#?}", done.actions);
    assert!(
        cut.detail
            .as_deref()
            .is_some_and(|d| d.contains("without running it again")),
        "{cut:#?}"
    );
    f.gateway.close().await;
    let left: Vec<String> = heartwood_openhands::server::processes_of(&store)
        .into_iter()
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|cmd| String::from_utf8_lossy(&cmd).replace('\0', " "))
        .collect();
    assert!(
        left.is_empty(),
        "closing the session stopped its server: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn guidance_and_pause_reach_a_running_task_and_resuming_never_allows_a_set() {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "echo one >> ran.txt"}))])
            .with_fault(heartwood_testkit::Fault::ChunkDelayMs(500)),
        Turn::calls(&[("terminal", json!({"command": "echo two >> ran.txt"}))]),
        Turn::calls(&[("finish", json!({"message": "both written"}))]),
    ]))
    .await;
    applied(&f.task("write the file"));
    applied(&f.submit_to(
        &f.gateway,
        CommandKind::SendGuidance {
            text: "use the held-out split".into(),
        },
    ));
    applied(&f.submit_to(&f.gateway, CommandKind::Pause));
    let paused = f.settled().await;
    assert_eq!(paused.lifecycle, Lifecycle::Paused, "{paused:#?}");

    applied(&f.submit_to(&f.gateway, CommandKind::Resume));
    let mut p = f.settled().await;
    let ran = f.project.path().join("ran.txt");
    let mut allowed = 0;
    while p.lifecycle == Lifecycle::WaitingForDecision {
        assert_eq!(
            std::fs::read_to_string(&ran)
                .unwrap_or_default()
                .lines()
                .count(),
            allowed,
            "an action ran without its set being allowed"
        );
        applied(&f.decide_with(&f.gateway, &p, Decision::AllowOnce, None));
        allowed += 1;
        p = f.settled().await;
    }
    assert_eq!(p.lifecycle, Lifecycle::Finished, "{p:#?}");
    assert_eq!(
        std::fs::read_to_string(&ran).expect("ran"),
        "one\ntwo\n",
        "each allowed action ran once"
    );
    let guided = f
        .model
        .requests()
        .iter()
        .any(|r| r.to_string().contains("use the held-out split"));
    assert!(guided, "the guidance never reached the model");
    f.gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_now_pauses_and_the_cut_off_command_is_never_run_again() {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": "echo started >> ran.txt; sleep 15; echo end >> ran.txt"}),
        )]),
        Turn::text("Stopped as asked."),
    ]))
    .await;
    applied(&f.task("run the long job"));
    let waiting = f.settled().await;
    applied(&f.decide_with(&f.gateway, &waiting, Decision::AllowOnce, None));
    let ran = f.project.path().join("ran.txt");
    until_file_holds(&ran, "started").await;
    applied(&f.submit_to(&f.gateway, CommandKind::Interrupt));
    let stopped = f.settled().await;
    assert_eq!(stopped.lifecycle, Lifecycle::Paused, "{stopped:#?}");
    applied(&f.submit_to(&f.gateway, CommandKind::Resume));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    // Past the command's own end: it was killed, or it would have written again.
    tokio::time::sleep(Duration::from_secs(16)).await;
    assert_eq!(
        std::fs::read_to_string(&ran).expect("ran"),
        "started\n",
        "the stopped command neither went on nor ran again"
    );
    assert_eq!(
        done.actions[0].state,
        ActionState::Failed,
        "{:#?}",
        done.actions
    );
    f.gateway.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_stage_runs_on_openhands_and_its_finish_reports_the_structured_outcome() {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![Turn::calls(&[(
        "finish",
        json!({"message": "the readiness report is written", "outcome": {
            "status": "completed",
            "artifacts": ["reports/readiness.json"],
            "notes": "counts from the table"
        }}),
    )])]))
    .await;
    heartwood_testkit::copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/projects/sleep-study"),
        f.project.path(),
    );
    applied(&f.submit_to(
        &f.gateway,
        CommandKind::WorkflowStart {
            definition: "tabular-ols".into(),
            question: "Does sleep predict the score?".into(),
            inputs: Default::default(),
        },
    ));
    let started = f.gateway.projection(&f.session).expect("projection");
    let revision = started.workflow.expect("a workflow run").revision;
    applied(&f.submit_to(&f.gateway, CommandKind::WorkflowRun { revision }));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    let turn = done
        .workflow
        .and_then(|w| w.turn)
        .expect("the stage's turn");
    assert_eq!(turn.problem, None, "{turn:#?}");
    let reported = turn.outcome.expect("the outcome its finish carried");
    assert_eq!(reported.status, OutcomeStatus::Completed);
    assert_eq!(reported.artifacts, ["reports/readiness.json"]);
    assert_eq!(reported.notes, "counts from the table");

    // The model was offered a finish tool that takes the outcome, with its schema.
    let asked = f.model.requests();
    let finish = asked[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "finish")
        .cloned()
        .expect("a finish tool");
    let outcome = &finish["function"]["parameters"]["properties"]["outcome"];
    assert!(
        outcome["properties"]["status"].is_object()
            && outcome["properties"]["artifacts"].is_object(),
        "{finish:#}"
    );
    f.gateway.close().await;
}

/// The usage records of the session's journal as `gateway` has it, in order: (purpose,
/// prompt, completion, calls).
fn usage_records(gateway: &SessionGateway, session: &SessionId) -> Vec<(String, u64, u64, u64)> {
    gateway
        .snapshot(session, 0)
        .expect("stored")
        .events
        .iter()
        .filter_map(|e| match &e.event {
            heartwood_events::Event::UsageRecorded { purpose, usage } => Some((
                purpose.clone(),
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.calls,
            )),
            _ => None,
        })
        .collect()
}

/// "Run and stage budgets use the same observed usage": each model call OpenHands makes is
/// journaled as one usage record with that call's own figures (a cumulative figure is
/// differenced, never counted twice), including a call made by a server started again for a
/// decision from another process (which re-points the conversation at its relay), and the
/// last call of a run.
#[tokio::test(flavor = "multi_thread")]
async fn each_model_call_is_one_usage_record_with_its_own_figures() {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[("terminal", json!({"command": "echo one >> ran.txt"}))]).with_usage(100, 10),
        Turn::calls(&[("finish", json!({"message": "done"}))]).with_usage(230, 7),
    ]))
    .await;
    applied(&f.task("write the file"));
    let waiting = f.settled().await;
    assert_eq!(waiting.lifecycle, Lifecycle::WaitingForDecision);
    // The owner closes; another gateway answers, with a server of its own.
    f.gateway.close().await;
    let other = SessionGateway::new(f.context());
    applied(&f.decide_with(&other, &waiting, Decision::AllowOnce, None));
    let started = Instant::now();
    loop {
        let p = other.projection(&f.session).expect("projection");
        if p.lifecycle == Lifecycle::Finished {
            break;
        }
        assert!(started.elapsed() < WITHIN, "{p:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The run's end is shown as soon as the log says so; its last usage report is written
    // from another thread, and the run reads on until the log holds it.
    let mut records = usage_records(&other, &f.session);
    while records.len() < 2 && started.elapsed() < WITHIN {
        tokio::time::sleep(Duration::from_millis(50)).await;
        records = usage_records(&other, &f.session);
    }
    assert_eq!(
        records,
        [
            ("agent".to_owned(), 100, 10, 1),
            ("agent".to_owned(), 230, 7, 1)
        ],
        "one record per model call, with that call's figures"
    );
    let done = other.projection(&f.session).expect("projection");
    assert_eq!(done.usage.total.calls, 2);
    assert_eq!(done.usage.total.prompt_tokens, 330);
    other.close().await;
}

/// "The default tool contract enables the OpenHands terminal, project file editor, Task
/// Tracker, and sequential Task tool": the agent is offered `task` with the catalog's
/// specialists (and no other sub-agent), a call to the planner is answered by it (tool-free,
/// on the same route, with its own instructions), and the answer and the child's usage are
/// journaled as the native engine journals a specialist task.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_call_to_the_planner_is_answered_and_journaled_as_a_specialist_task() {
    if !installed() {
        return;
    }
    let f = Fixture::new(Script::of(vec![
        Turn::calls(&[(
            "task",
            json!({"description": "plan the analysis", "subagent_type": "planner",
                   "prompt": "The table has sleep and score columns. Plan the analysis."}),
        )])
        .with_usage(50, 5),
        Turn::text("1. Load the table. 2. Fit score on sleep by OLS.").with_usage(40, 12),
        Turn::calls(&[("finish", json!({"message": "planned"}))]).with_usage(60, 6),
    ]))
    .await;
    applied(&f.task("plan the analysis"));
    let waiting = f.settled().await;
    assert_eq!(
        waiting.lifecycle,
        Lifecycle::WaitingForDecision,
        "{waiting:#?}"
    );
    let offered = f.model.requests()[0]["tools"].clone();
    let task = offered
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .cloned()
        .expect("the task tool is offered");
    let told = task["function"]["description"].as_str().unwrap_or_default();
    assert!(
        told.contains("planner") && told.contains("reviewer"),
        "the catalog's specialists are its sub-agents: {told}"
    );
    assert!(
        !told.contains("general-purpose") && !told.contains("code-explorer"),
        "no sub-agent of OpenHands' own (with tools) is offered: {told}"
    );
    applied(&f.decide_with(&f.gateway, &waiting, Decision::AllowOnce, None));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    // The run's last usage report may be written after its end is shown (see the test above).
    let started = Instant::now();
    while usage_records(&f.gateway, &f.session).len() < 3 && started.elapsed() < WITHIN {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done = f.gateway.projection(&f.session).expect("projection");

    let asked = f.model.requests();
    assert_eq!(asked.len(), 3, "the parent, the planner, the parent");
    let child = asked[1].to_string();
    assert!(
        child.contains("advisory planning specialist") && child.contains("sleep and score"),
        "the planner got its instructions and the parent's prompt: {child}"
    );
    let child_tools: Vec<String> = asked[1]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        child_tools
            .iter()
            .all(|t| t != "terminal" && t != "file_editor" && t != "task"),
        "the planner is tool-free: {child_tools:?}"
    );

    let [consulted] = done.specialists.as_slice() else {
        panic!("one specialist task: {:#?}", done.specialists);
    };
    assert_eq!(consulted.role, "planner");
    assert_eq!(consulted.description, "plan the analysis");
    assert_eq!(consulted.state, ActionState::Completed);
    assert!(
        consulted
            .answer
            .as_deref()
            .is_some_and(|a| a.contains("Fit score on sleep by OLS")),
        "{consulted:#?}"
    );
    assert_eq!(
        (
            consulted.usage.prompt_tokens,
            consulted.usage.completion_tokens,
            consulted.usage.calls
        ),
        (40, 12, 1),
        "the planner's own call, under its task"
    );
    let mut records = usage_records(&f.gateway, &f.session);
    records.sort();
    let purpose = format!("task:{}", consulted.action_id);
    let mut expected = vec![
        ("agent".to_owned(), 50, 5, 1),
        ("agent".to_owned(), 60, 6, 1),
        (purpose, 40, 12, 1),
    ];
    expected.sort();
    assert_eq!(records, expected);
    f.gateway.close().await;
}

/// "A preview must never promise what the engine will not keep": the review says an edit
/// outside the project would fail, and on OpenHands it does. An allowed set whose editor
/// would write outside is refused by Heartwood before OpenHands confirms it (nothing in it
/// runs, and it is recorded as failed, not as the researcher's rejection); a path that leaves
/// the project only through a link an earlier member made is refused by the editor when it
/// runs. Nothing is written outside.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_outside_the_project_is_refused_and_nothing_is_written_there() {
    if !installed() {
        return;
    }
    let outside = tempfile::tempdir().expect("outside");
    let escaped = outside.path().join("escaped.txt");
    let f = Fixture::new(Script::of(vec![Turn::calls(&[
        ("terminal", json!({"command": "echo kept >> ran.txt"})),
        (
            "file_editor",
            json!({"command": "create", "path": escaped.to_str().expect("UTF-8"),
                   "file_text": "out"}),
        ),
    ])]))
    .await;
    // The second set names the project's path, known once the fixture exists.
    let through = f.project.path().join("link/through.txt");
    f.model.push_turns([
        Turn::calls(&[
            (
                "terminal",
                json!({"command": format!("ln -s {} link", outside.path().display())}),
            ),
            (
                "file_editor",
                json!({"command": "create", "file_text": "through",
                       "path": through.to_str().expect("UTF-8")}),
            ),
        ]),
        Turn::calls(&[("finish", json!({"message": "gave up"}))]),
    ]);
    applied(&f.task("write the files"));
    let waiting = f.settled().await;
    assert_eq!(
        waiting.lifecycle,
        Lifecycle::WaitingForDecision,
        "{waiting:#?}"
    );
    let review = f.gateway.snapshot(&f.session, 0).expect("snapshot").review;
    assert!(
        format!("{review:?}").contains("outside the project"),
        "the preview says the edit would fail: {review:?}"
    );
    applied(&f.decide_with(&f.gateway, &waiting, Decision::AllowOnce, None));
    let next = f.settled().await;
    assert_eq!(next.lifecycle, Lifecycle::WaitingForDecision, "{next:#?}");
    assert!(!escaped.exists(), "the editor wrote outside the project");
    assert!(
        !f.project.path().join("ran.txt").exists(),
        "nothing in a refused set runs"
    );
    let refused: Vec<_> = next.actions.iter().take(2).collect();
    assert!(
        refused.iter().all(|a| a.state == ActionState::Failed
            && a.detail
                .as_deref()
                .is_some_and(|d| d.contains("outside the project"))),
        "{refused:#?}"
    );
    let told = f.model.requests().last().map(ToString::to_string);
    assert!(
        told.is_some_and(|t| t.contains("outside the project")),
        "the model was told why"
    );

    // The link is made by the set's first member; the editor refuses when it runs.
    applied(&f.decide_with(&f.gateway, &next, Decision::AllowOnce, None));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    assert!(
        f.project.path().join("link").is_symlink(),
        "the link was made"
    );
    assert!(
        !outside.path().join("through.txt").exists(),
        "the editor wrote outside the project through a link"
    );
    let through_link = &done.actions[3];
    assert_eq!(through_link.state, ActionState::Failed, "{through_link:#?}");
    f.gateway.close().await;
}

/// "A preview must never promise what the engine will not keep. OpenHands' tools run confined
/// like the native engine's (its agent server inside the sandbox, at the level the set was
/// allowed), so the preview and the outcome agree" (issue 56, item 5); "Every engine confined
/// alike" (issue 51). The agent server runs in Heartwood's
/// sandbox at project-write (a person allowed the set): a command it runs writes the project,
/// and nothing else; Heartwood's own state is not there; the relay's key and the server's own
/// session key (which would let a command confirm a set itself) are in no environment the
/// commands it starts can read.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_servers_commands_run_in_the_sandbox_at_a_persons_level() {
    if !installed() || !heartwood_sandbox::required_by_test() {
        return;
    }
    let outside = tempfile::tempdir().expect("a folder outside the project");
    let escaped = outside.path().join("escaped.txt");
    let folder = tempfile::tempdir().expect("project");
    let project = folder.path().to_owned();
    let f = Fixture::with_project(folder, Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": format!(
                "echo inside > inside.txt; \
                 echo out > {escaped}; echo \"outside: $?\" >> seen.txt; \
                 cat .heartwood/sessions/oh1/events.jsonl > /dev/null 2>&1; \
                 echo \"journal: $?\" >> seen.txt; \
                 for p in /proc/[0-9]*; do \
                   if tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -Eq '^(OPENAI_API_KEY|SESSION_API_KEY|OH_SESSION_API_KEYS_[0-9]+)='; \
                   then echo \"key in: $(head -c 60 $p/cmdline | tr '\\0\\n' '  ')\" >> seen.txt; fi; \
                 done; echo end >> seen.txt; \
                 for m in json sitecustomize; do \
                   echo \"open('{project}/planted.txt', 'a').write('$m ran')\" \
                     > .heartwood/sessions/oh1/backend/server/$m.py; \
                 done",
                escaped = escaped.display(),
                project = project.display(),
            )}),
        )]),
        Turn::text("Done."),
        Turn::text("Nothing more."),
    ]))
    .await;
    applied(&f.task("try the walls"));
    let waiting = f.settled().await;
    let member = &waiting.pending.as_ref().expect("a pending set").members[0];
    assert_eq!(
        member.sandbox,
        Some(heartwood_events::SandboxLevel::ProjectWrite),
        "the review says where it will run: {member:#?}"
    );
    applied(&f.decide_with(&f.gateway, &waiting, Decision::AllowOnce, None));
    let done = f.settled().await;
    assert_eq!(done.lifecycle, Lifecycle::Finished, "{done:#?}");
    let read = |name: &str| std::fs::read_to_string(f.project.path().join(name));
    assert_eq!(read("inside.txt").expect("the command ran"), "inside\n");
    let seen = read("seen.txt").expect("the command reported");
    assert!(!escaped.exists(), "a write outside the project: {seen}");
    let lines: Vec<&str> = seen.lines().collect();
    assert!(
        lines[0].starts_with("outside: ") && lines[0] != "outside: 0",
        "{seen}"
    );
    assert!(
        lines[1].starts_with("journal: ") && lines[1] != "journal: 0",
        "Heartwood's journal is not in the view: {seen}"
    );
    assert_eq!(lines[2], "end", "no process shows the relay's key: {seen}");

    // The server's working folder is the commands' to write; what they planted there is gone
    // before the next server starts in it, and Python never looks there for modules.
    let store = project.join(".heartwood/sessions/oh1/backend/conversations");
    heartwood_openhands::server::reap(&store);
    let _ = f.settled().await;
    applied(&f.task("go on"));
    let again = f.settled().await;
    assert_eq!(again.lifecycle, Lifecycle::Finished, "{again:#?}");
    assert!(
        !project.join("planted.txt").exists(),
        "a module planted in the server's folder ran in the next server"
    );
    f.gateway.close().await;
}
