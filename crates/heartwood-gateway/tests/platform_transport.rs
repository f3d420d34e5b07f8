//! A platform's own model transport through the gateway (a deployment file selects Carina
//! with a transport served by the scripted model server): the plan asks for it, a hosted route
//! is not saved, the research route is platform-isolated and qualified by a live synthetic
//! request before low-risk automation runs on it, and a stale route (the operators moved the
//! transport) or one that fails qualification is refused before any session is registered.
//!
//! `HEARTWOOD_PLATFORM_FILE` is read from the process environment, so the test runs in a child
//! process that starts with it set.

use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, Command, CommandId, CommandKind, Lifecycle, Outcome, Receipt, SessionId,
    SessionProjection,
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
        Outcome::Refused { reason } => reason.clone(),
        Outcome::Applied { .. } => panic!("applied, expected a refusal: {receipt:?}"),
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
        .submit(command(&session, 1, task(ActionPolicy::LowRiskAutomation)))
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
        .submit(command(
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
        .submit(command(&s3, 1, task(ActionPolicy::LowRiskAutomation)))
        .expect("submit");
    assert!(refused(&receipt).contains("qualification"), "{receipt:?}");
    assert!(project.path().join(".heartwood/sessions/s1").is_dir());
    assert!(
        !project.path().join(".heartwood/sessions/s3").exists(),
        "no session was registered"
    );
}
