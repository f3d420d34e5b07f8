//! Skills reaching the agent, against the scripted model server: the active skill's description
//! and SKILL.md path are in the model's system prompt, an unapproved skill's are not, the agent
//! reads the skill's body through the file viewer (reviewed like any action), and the skill's
//! verified copy cannot be edited.

use std::time::{Duration, Instant};

use heartwood_events::{
    ActionPolicy, Command, CommandId, CommandKind, Decision, Lifecycle, SessionId,
    SessionProjection,
};
use heartwood_gateway::config::{ProjectConfig, RouteConfig};
use heartwood_gateway::skills::SkillsService;
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;

fn skill(
    parent: &std::path::Path,
    name: &str,
    description: &str,
    body: &str,
) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .expect("SKILL.md");
    dir
}

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

#[tokio::test(flavor = "multi_thread")]
async fn only_the_active_skill_reaches_the_system_prompt_and_its_body_is_read_through_the_viewer() {
    let project = tempfile::tempdir().expect("project");
    let elsewhere = tempfile::tempdir().expect("skills");
    let context = ProjectContext::at(project.path()).expect("project");
    let skills = SkillsService::open(&context);

    let approved = skill(
        elsewhere.path(),
        "check-units",
        "Check every measurement's units against the data dictionary before any model.",
        "UNITS-BODY: list each numeric column with its unit.",
    );
    let unapproved = skill(
        elsewhere.path(),
        "guess-outliers",
        "Drop outliers by eye without recording why.",
        "OUTLIER-BODY",
    );
    let view = skills.add_local(&approved).expect("add");
    let digest = view.digest.expect("digest");
    skills
        .approve("check-units", None, &digest)
        .expect("approve");
    assert!(
        skills
            .activate("check-units", None)
            .expect("activate")
            .active
    );
    skills.add_local(&unapproved).expect("add the second");
    let active = skills.for_agent().expect("for agent");
    let skill_md = active.0[0].dir.join("SKILL.md");
    let skill_md = skill_md.to_str().expect("utf-8").to_owned();

    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::calls(&[("file_editor", json!({"command": "view", "path": skill_md}))]),
        Turn::calls(&[(
            "file_editor",
            json!({"command": "create", "path": skill_md.replace("SKILL.md", "x.md"), "file_text": "no"}),
        )]),
        Turn::calls(&[("finish", json!({"message": "read the skill"}))]),
    ]))
    .await
    .expect("server");
    ProjectConfig::set_route(
        &context,
        RouteConfig::compatible(&server.base_url(), "scripted"),
    )
    .expect("route");
    let gateway = SessionGateway::new(context);
    let session = SessionId::parse("s1").expect("id");
    let command = |n: u32, kind| {
        Command::new(
            CommandId::parse(&format!("c{n}")).expect("id"),
            session.clone(),
            kind,
        )
    };
    gateway
        .submit_blocking(command(
            1,
            CommandKind::SubmitTask {
                text: "check the units".into(),
                policy: ActionPolicy::AlwaysReview,
            },
        ))
        .expect("task");
    for n in [2, 3] {
        let waiting = until(&gateway, &session, |p| p.pending.is_some()).await;
        let set = waiting.pending.as_ref().expect("set");
        gateway
            .submit_blocking(command(
                n,
                CommandKind::Decide {
                    set_id: set.set_id.clone(),
                    revision: set.revision,
                    decision: Decision::AllowOnce,
                    reason: None,
                },
            ))
            .expect("decide");
        until(&gateway, &session, |p| {
            p.pending.as_ref().is_none_or(|s| s.set_id != set.set_id)
        })
        .await;
    }
    let done = until(&gateway, &session, |p| p.lifecycle == Lifecycle::Finished).await;
    assert_eq!(done.lifecycle, Lifecycle::Finished);

    let requests = server.requests();
    let system = requests[0]["messages"][0]["content"]
        .as_str()
        .expect("system prompt")
        .to_owned();
    assert!(
        system.contains("check-units: Check every measurement's units"),
        "{system}"
    );
    assert!(system.contains(&skill_md), "{system}");
    assert!(!system.contains("guess-outliers"), "{system}");
    assert!(!system.contains("Drop outliers"), "{system}");
    assert!(!system.contains("UNITS-BODY"), "the body is read on demand");

    let tool_text = |request: &serde_json::Value| -> String {
        request["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        tool_text(&requests[1]).contains("UNITS-BODY"),
        "{}",
        tool_text(&requests[1])
    );
    let refused = tool_text(&requests[2]);
    assert!(refused.contains("read-only"), "{refused}");
    assert!(!active.0[0].dir.join("x.md").exists());
}
