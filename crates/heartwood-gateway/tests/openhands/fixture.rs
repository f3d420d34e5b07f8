//! What the OpenHands gateway tests share: the project on the scripted model with the
//! OpenHands engine, its session, and the waits and checks the scenarios use.

use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, Command, CommandId, CommandKind, Decision, Lifecycle, Outcome, Receipt,
    SessionId, SessionProjection,
};
use heartwood_gateway::config::{BackendKind, ProjectConfig, RouteCategory, RouteConfig};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_openhands::Installation;
use heartwood_testkit::{Script, ScriptedModelServer};

/// Generous: the agent server takes ~20 s to start on a busy two-core machine.
pub const WITHIN: Duration = Duration::from_secs(240);

pub fn installed() -> bool {
    match Installation::find() {
        Ok(_) => true,
        Err(e) if std::env::var_os("HEARTWOOD_REQUIRE_OPENHANDS").is_some() => {
            panic!("HEARTWOOD_REQUIRE_OPENHANDS is set: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

pub struct Fixture {
    pub project: tempfile::TempDir,
    pub model: ScriptedModelServer,
    pub gateway: SessionGateway,
    pub session: SessionId,
    pub next: std::cell::Cell<u32>,
}

impl Fixture {
    pub async fn new(script: Script) -> Fixture {
        let project = tempfile::tempdir().expect("project");
        Fixture::with_project(project, script).await
    }

    /// A fixture in `project` (a test whose script names the project's path makes it first).
    pub async fn with_project(project: tempfile::TempDir, script: Script) -> Fixture {
        let model = ScriptedModelServer::start(script).await.expect("model");
        let context = ProjectContext::at(project.path()).expect("a UTF-8 project path");
        ProjectConfig::set_route(
            &context,
            RouteConfig {
                category: RouteCategory::Compatible,
                base_url: model.base_url(),
                model: "scripted".into(),
                api_key_env: None,
                recording: None,
                max_input_tokens: 100_000,
                max_output_tokens: 1_000,
                timeout_secs: 60,
                prices: None,
            },
        )
        .expect("route");
        ProjectConfig::set_backend(&context, BackendKind::OpenHands).expect("backend");
        Fixture {
            gateway: SessionGateway::new(context),
            project,
            model,
            session: SessionId::parse("oh1").expect("id"),
            next: std::cell::Cell::new(0),
        }
    }

    pub fn context(&self) -> ProjectContext {
        ProjectContext::at(self.project.path()).expect("a UTF-8 project path")
    }

    pub fn submit_to(&self, gateway: &SessionGateway, kind: CommandKind) -> Receipt {
        let n = self.next.get() + 1;
        self.next.set(n);
        let id = CommandId::parse(&format!("c{n}")).expect("id");
        gateway
            .submit_blocking(Command::new(id, self.session.clone(), kind))
            .expect("submit")
    }

    pub fn task(&self, text: &str) -> Receipt {
        self.submit_to(
            &self.gateway,
            CommandKind::SubmitTask {
                text: text.into(),
                policy: ActionPolicy::AlwaysReview,
            },
        )
    }

    pub fn decide_with(
        &self,
        gateway: &SessionGateway,
        p: &SessionProjection,
        decision: Decision,
        reason: Option<&str>,
    ) -> Receipt {
        let set = p.pending.as_ref().expect("a pending set");
        self.submit_to(
            gateway,
            CommandKind::Decide {
                set_id: set.set_id.clone(),
                revision: set.revision,
                decision,
                reason: reason.map(str::to_owned),
            },
        )
    }

    /// Waits until the agent has stopped (anything but running, with any set published).
    pub async fn settled(&self) -> SessionProjection {
        let started = Instant::now();
        loop {
            let p = self.gateway.projection(&self.session).expect("projection");
            if p.lifecycle != Lifecycle::Running
                && (p.lifecycle != Lifecycle::WaitingForDecision || p.pending.is_some())
            {
                return p;
            }
            if started.elapsed() > WITHIN {
                let log = self
                    .project
                    .path()
                    .join(".heartwood/sessions/oh1/backend/agent-server.log");
                let log = std::fs::read_to_string(log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(60).collect();
                panic!(
                    "timed out; projection: {p:#?}\nthe agent server's log ends:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

pub fn applied(receipt: &Receipt) {
    assert!(
        matches!(receipt.outcome, Outcome::Applied { .. }),
        "{receipt:?}"
    );
}

pub fn commands(p: &SessionProjection) -> Vec<String> {
    p.pending
        .as_ref()
        .map(|set| {
            set.members
                .iter()
                .map(|m| {
                    serde_json::from_str::<serde_json::Value>(&m.arguments).expect("JSON")
                        ["command"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}
