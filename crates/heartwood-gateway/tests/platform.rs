//! The platform boundary through the gateway, against the scripted model server: data mounts
//! reach the agent (read-only ones viewable and never written, writable ones written); a
//! platform's own model transport (a deployment file selects Carina with a transport the
//! scripted server plays) is asked for by the plan, qualified by a live synthetic request
//! before low-risk automation runs on it, and refused when stale or unqualified before any
//! session is registered; and an application-scrubbed key stays out of the terminal, the
//! journal and every interface payload. Tests that need the environment set run again in a
//! child process that starts with it.

use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, Command, CommandId, CommandKind, Decision, Lifecycle, Outcome, Receipt,
    SessionId, SessionProjection,
};
use heartwood_gateway::config::{ProjectConfig, RouteCategory, RouteConfig};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;

async fn until(
    gateway: &SessionGateway,
    session: &SessionId,
    done: impl Fn(&SessionProjection) -> bool,
) -> SessionProjection {
    let started = Instant::now();
    loop {
        let p = gateway.projection(session).expect("projection");
        if done(&p) {
            return p;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{p:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn command(session: &SessionId, n: u32, kind: CommandKind) -> Command {
    Command::new(
        CommandId::parse(&format!("c{n}")).expect("id"),
        session.clone(),
        kind,
    )
}

fn task(policy: ActionPolicy) -> CommandKind {
    CommandKind::SubmitTask {
        text: "look at the data".into(),
        policy,
    }
}

fn refused(receipt: &Receipt) -> String {
    match &receipt.outcome {
        Outcome::Refused(refusal) => refusal.to_string(),
        Outcome::Applied { .. } => panic!("applied, expected a refusal: {receipt:?}"),
    }
}

/// Allows every pending set of `session` until it finishes.
async fn allow_until_finished(gateway: &SessionGateway, session: &SessionId) -> SessionProjection {
    let mut n = 100;
    loop {
        let p = until(gateway, session, |p| {
            p.pending.is_some() || p.lifecycle == Lifecycle::Finished
        })
        .await;
        let Some(set) = p.pending else {
            return p;
        };
        n += 1;
        gateway
            .submit_blocking(command(
                session,
                n,
                CommandKind::Decide {
                    set_id: set.set_id.clone(),
                    revision: set.revision,
                    decision: Decision::AllowOnce,
                    reason: None,
                },
            ))
            .expect("decide");
        until(gateway, session, |p| {
            p.pending.as_ref().is_none_or(|s| s.set_id != set.set_id)
        })
        .await;
    }
}

/// The text of every tool result the model was sent in `request`.
fn tool_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn declared_mounts_are_readable_and_only_writable_ones_are_written() {
    let project = tempfile::tempdir().expect("project");
    let cohort = tempfile::tempdir().expect("read-only mount");
    let scratch = tempfile::tempdir().expect("writable mount");
    std::fs::write(cohort.path().join("cohort.csv"), "id,age\nA-17,64\n").expect("data");
    let cohort_dir = cohort.path().canonicalize().expect("real");
    let scratch_dir = scratch.path().canonicalize().expect("real");
    let cohort_file = cohort_dir.join("cohort.csv").to_string_lossy().into_owned();
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("file_editor", json!({"command": "view", "path": cohort_file}))]),
        Turn::calls(&[(
            "file_editor",
            json!({"command": "create", "path": cohort_dir.join("new.csv"), "file_text": "x"}),
        )]),
        Turn::calls(&[(
            "file_editor",
            json!({"command": "create", "path": scratch_dir.join("out/summary.txt"), "file_text": "n=1"}),
        )]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("server");
    let context = ProjectContext::at(project.path()).expect("project");
    ProjectConfig::set_route(
        &context,
        RouteConfig::compatible(&server.base_url(), "scripted"),
    )
    .expect("route");
    // Declared in the project's configuration, as a researcher on a workstation would.
    let config_path = project.path().join(".heartwood/config.toml");
    let mut text = std::fs::read_to_string(&config_path).expect("config");
    text.push_str(&format!(
        "\n[[data_mounts]]\npath = {:?}\npurpose = \"cohort extract\"\n\n\
         [[data_mounts]]\npath = {:?}\nwritable = true\n",
        cohort_dir.to_string_lossy(),
        scratch_dir.to_string_lossy()
    ));
    std::fs::write(&config_path, text).expect("config");
    let platform = heartwood_gateway::startup::plan(&context)
        .expect("plan")
        .platform;
    assert_eq!(platform.data_mounts.len(), 2, "{platform:#?}");
    assert!(
        platform
            .data_mounts
            .iter()
            .all(|m| m.present && m.declared_by == "project")
    );

    let gateway = SessionGateway::new(context);
    let session = SessionId::parse("s1").expect("id");
    gateway
        .submit_blocking(command(&session, 1, task(ActionPolicy::AlwaysReview)))
        .expect("task");
    let done = allow_until_finished(&gateway, &session).await;
    assert_eq!(done.lifecycle, Lifecycle::Finished);
    let requests = server.requests();
    assert!(
        tool_text(&requests[1]).contains("A-17,64"),
        "{}",
        tool_text(&requests[1])
    );
    let refused_write = tool_text(&requests[2]);
    assert!(refused_write.contains("read-only"), "{refused_write}");
    assert!(!cohort_dir.join("new.csv").exists());
    assert_eq!(
        std::fs::read_to_string(scratch_dir.join("out/summary.txt")).expect("written"),
        "n=1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_application_scrubbed_key_never_reaches_tools_journal_or_interfaces() {
    const KEY_VAR: &str = "HEARTWOOD_PLATFORM_TEST_KEY";
    const KEY: &str = "sk-never-show-7f3a9c";
    // The key must be in Heartwood's environment from the start, as a researcher's would be.
    if !heartwood_testkit::child::rerun_with(
        "an_application_scrubbed_key_never_reaches_tools_journal_or_interfaces",
        &[(KEY_VAR, KEY.as_ref())],
    ) {
        return;
    }
    let project = tempfile::tempdir().expect("project");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[(
            "terminal",
            json!({"command": format!("env; echo \"key=${{{KEY_VAR}:-absent}}\"")}),
        )]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("server");
    let context = ProjectContext::at(project.path()).expect("project");
    ProjectConfig::set_route(
        &context,
        RouteConfig {
            api_key_env: Some(KEY_VAR.into()),
            ..RouteConfig::compatible(&server.base_url(), "scripted")
        },
    )
    .expect("route");
    let gateway = SessionGateway::new(context.clone());
    let session = SessionId::parse("s1").expect("id");
    gateway
        .submit_blocking(command(&session, 1, task(ActionPolicy::AlwaysReview)))
        .expect("task");
    let done = allow_until_finished(&gateway, &session).await;
    assert_eq!(done.lifecycle, Lifecycle::Finished);

    // The service got the key; the command did not.
    assert!(
        server
            .authorizations()
            .iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {KEY}") as &str))
    );
    let observation = tool_text(&server.requests()[1]);
    assert!(observation.contains("key=absent"), "{observation}");
    assert!(!observation.contains(KEY));
    // Nothing durable holds it: every file under .heartwood/, journals included.
    for entry in heartwood_testkit::files_under(&project.path().join(".heartwood")) {
        let bytes = std::fs::read(&entry).expect("read");
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "{} holds the key",
            entry.display()
        );
    }
    // Nor any interface payload: the snapshot, the projection, the startup plan.
    let snapshot =
        serde_json::to_string(&gateway.snapshot(&session, 0).expect("snapshot")).expect("json");
    let plan = serde_json::to_string(&heartwood_gateway::startup::plan(&context).expect("plan"))
        .expect("json");
    for payload in [snapshot, serde_json::to_string(&done).expect("json"), plan] {
        assert!(!payload.contains(KEY));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_platform_transport_is_qualified_before_automation_and_a_stale_route_is_refused() {
    let platform_dir = tempfile::tempdir().expect("deployment");
    let deployment = platform_dir.path().join("platform.toml");
    if !heartwood_testkit::child::rerun_with(
        "a_platform_transport_is_qualified_before_automation_and_a_stale_route_is_refused",
        &[("HEARTWOOD_PLATFORM_FILE", deployment.as_os_str())],
    ) {
        return;
    }
    let deployment = std::path::PathBuf::from(
        std::env::var_os("HEARTWOOD_PLATFORM_FILE").expect("set for the child"),
    );
    let project = tempfile::tempdir().expect("project");
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::text("ready"),
        Turn::calls(&[("terminal", json!({"command": "echo automated"}))]),
        Turn::calls(&[("finish", json!({"message": "done"}))]),
    ]))
    .await
    .expect("server");
    std::fs::write(
        &deployment,
        format!(
            "platform = \"carina\"\n[model_transport]\nbase_url = \"{}\"\nmodel = \"scripted\"\n",
            server.base_url()
        ),
    )
    .expect("deployment");
    let context = ProjectContext::at(project.path()).expect("project");

    let plan = heartwood_gateway::startup::plan(&context).expect("plan");
    assert_eq!(plan.phase.as_str(), "connection_required", "{plan:#?}");
    assert!(plan.next_action.contains("--category research"));
    // A hosted route is not saved on this platform, whatever the service says.
    let hosted = RouteConfig {
        category: RouteCategory::Hosted,
        api_key_env: Some("SOME_KEY".into()),
        ..RouteConfig::compatible(&server.base_url(), "scripted")
    };
    let err = heartwood_gateway::route_check::connect(
        &context,
        hosted,
        true,
        heartwood_gateway::route_check::Scope::Project,
    )
    .expect_err("hosted refused on carina");
    assert!(err.to_string().contains("not allowed"), "{err}");

    let research = RouteConfig {
        category: RouteCategory::Research,
        ..RouteConfig::compatible(&server.base_url(), "scripted")
    };
    ProjectConfig::set_route(&context, research).expect("route");
    let plan = heartwood_gateway::startup::plan(&context).expect("plan");
    let route = plan.route.expect("route");
    assert_eq!(route.credential_boundary.as_str(), "platform_isolated");
    assert!(route.low_risk_automation.allowed, "{route:#?}");

    let gateway = SessionGateway::new(context.clone());
    let session = SessionId::parse("s1").expect("id");
    gateway
        .submit_blocking(command(&session, 1, task(ActionPolicy::LowRiskAutomation)))
        .expect("task");
    let done = until(&gateway, &session, |p| p.lifecycle == Lifecycle::Finished).await;
    assert!(done.pending.is_none());
    let requests = server.requests();
    assert!(
        requests[2]["messages"].to_string().contains("automated"),
        "the low-risk command ran without a decision"
    );
    let qualification = requests[0]["messages"].to_string();
    assert!(
        qualification.contains("connectivity check"),
        "{qualification}"
    );
    assert!(
        !qualification.contains("look at the data"),
        "the qualification request carries nothing of the project"
    );
    assert_eq!(
        requests.len(),
        3,
        "qualified once, then the task's two calls"
    );
    gateway.close().await;

    // The platform's operators move the transport: the saved route is stale, and refused
    // before an agent starts, with the next step.
    std::fs::write(
        &deployment,
        "platform = \"carina\"\n[model_transport]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"scripted\"\n",
    )
    .expect("deployment");
    let gateway = SessionGateway::new(context.clone());
    let receipt = gateway
        .submit_blocking(command(
            &SessionId::parse("s2").expect("id"),
            1,
            task(ActionPolicy::AlwaysReview),
        ))
        .expect("submit");
    let why = refused(&receipt);
    assert!(
        why.contains("not this platform's") && why.contains("--category research"),
        "{why}"
    );
    // A transport that does not answer never qualifies: automation is refused, and no
    // session is registered for the task.
    std::fs::write(
        &deployment,
        "platform = \"carina\"\n[model_transport]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    )
    .expect("deployment");
    ProjectConfig::set_route(
        &context,
        RouteConfig {
            category: RouteCategory::Research,
            ..RouteConfig::compatible("http://127.0.0.1:9/v1", "m")
        },
    )
    .expect("route");
    let s3 = SessionId::parse("s3").expect("id");
    let receipt = gateway
        .submit_blocking(command(&s3, 1, task(ActionPolicy::LowRiskAutomation)))
        .expect("submit");
    assert!(refused(&receipt).contains("qualification"), "{receipt:?}");
    assert!(project.path().join(".heartwood/sessions/s1").is_dir());
    assert!(
        !project.path().join(".heartwood/sessions/s3").exists(),
        "no session was registered"
    );
}
