//! Advisory specialists through the `task` tool, end to end with the real binary and the
//! scripted model server: the child sees its role's instructions and the prompt and nothing
//! else, has no tools, answers on the parent's route, and its lineage, answer and usage are in
//! the session's projection; a review in a workflow conversation answers with structured
//! proposals, and one without them fails the task whatever its prose says.

mod support;

use std::path::Path;

use heartwood_testkit::{Script, Turn};
use serde_json::{Value, json};
use support::{code, finish, heartwood, heartwood_async, project_with, session_of, text};

fn projection(project: &Path, session: &str) -> Value {
    let shown = heartwood(project, &["sessions", "show", session, "--json"]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let view: Value = serde_json::from_slice(&shown.stdout).expect("json");
    view["projection"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planning_specialist_answers_from_only_what_it_was_given() {
    let (project, server) = project_with(Script::of(vec![
        Turn::calls(&[(
            "task",
            json!({"subagent_type": "planner", "description": "plan the fit",
                   "prompt": "The table has columns sleep_hours and score. Plan a fit."}),
        )]),
        // The child's one model call.
        Turn::text("1. Split by site. 2. Fit score on sleep_hours.").with_usage(300, 40),
        finish("Planned with the specialist."),
    ]))
    .await;
    let ran = heartwood_async(project.path(), &["exec", "plan the analysis"]).await;
    assert_eq!(code(&ran), 3, "{}{}", text(&ran.stdout), text(&ran.stderr));
    let session = session_of(&ran);
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stderr));

    // The parent was offered the task tool with the catalog's enabled roles only.
    let requests = server.requests();
    let offered = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .expect("the task tool is offered")
        .clone();
    let roles = &offered["function"]["parameters"]["properties"]["subagent_type"]["enum"];
    assert_eq!(roles, &json!(["planner", "reviewer"]), "{offered:#}");
    // The child saw its instructions and the prompt, nothing of the parent's conversation,
    // and no tools.
    let child = &requests[1];
    let messages = child["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "{child:#}");
    assert!(
        messages[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("planning specialist"))
    );
    assert_eq!(
        messages[1]["content"],
        "The table has columns sleep_hours and score. Plan a fit."
    );
    assert!(
        !child.to_string().contains("plan the analysis"),
        "{child:#}"
    );
    assert!(
        child
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty))
    );
    // The parent read the answer as the task's result.
    assert!(requests[2].to_string().contains("Split by site"));

    let p = projection(project.path(), &session);
    let task = &p["specialists"][0];
    assert_eq!(task["role"], "planner", "{p:#}");
    assert_eq!(task["state"], "completed");
    assert!(
        task["answer"]
            .as_str()
            .is_some_and(|a| a.starts_with("1. Split by site"))
    );
    assert_eq!(task["usage"]["prompt_tokens"], 300);
    assert_eq!(task["usage"]["calls"], 1);
    let purposes: Vec<&str> = p["usage"]["by_purpose"]
        .as_array()
        .expect("usage")
        .iter()
        .filter_map(|u| u["purpose"].as_str())
        .collect();
    assert!(
        purposes.contains(&format!("task:{}", task["action_id"]).as_str()),
        "{purposes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_in_a_workflow_answers_with_proposals_or_fails() {
    let project = tempfile::tempdir().expect("project");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    heartwood_testkit::copy_dir(&fixture, project.path());
    let review = |prompt: &str| {
        Turn::calls(&[(
            "task",
            json!({"subagent_type": "reviewer", "description": "review the report",
                   "prompt": prompt}),
        )])
    };
    let server = heartwood_testkit::ScriptedModelServer::start(Script::of(vec![
        review("reports/readiness.json says rows: 12."),
        // The child answers with structured proposals.
        Turn::calls(&[(
            "finish",
            json!({"result": {"proposals": [{"condition": "other",
                "path": "reports/readiness.json", "claim": "the counts look low"}]}}),
        )]),
        review("Look again."),
        // Prose twice, never the structured result: the task fails.
        Turn::text("Everything is fine, I checked it all."),
        Turn::text("Really, it is fine."),
        Turn::text("Trust me."),
        finish("Reviewed."),
    ]))
    .await
    .expect("server");
    support::connect_scripted(project.path(), &server.base_url());
    let started = heartwood(
        project.path(),
        &[
            "workflow",
            "start",
            "tabular-ols",
            "Does sleep predict the score?",
        ],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    let run = heartwood_async(project.path(), &["workflow", "run"]).await;
    assert_eq!(code(&run), 3, "{}{}", text(&run.stdout), text(&run.stderr));
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 3, "{}", text(&decided.stdout));
    let decided = heartwood_async(project.path(), &["decide", "--last", "allow"]).await;
    assert_eq!(code(&decided), 0, "{}", text(&decided.stdout));

    // The review child was offered one tool: `finish`, with the proposal schema.
    let child = &server.requests()[1];
    let tools = child["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 1);
    assert!(
        tools[0].to_string().contains("plan_incompatible"),
        "{child:#}"
    );

    let p = projection(project.path(), "last");
    let tasks = p["specialists"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2, "{p:#}");
    assert_eq!(tasks[0]["state"], "completed");
    assert_eq!(
        tasks[0]["proposals"][0]["claim"], "the counts look low",
        "{p:#}"
    );
    assert_eq!(tasks[1]["state"], "failed", "{p:#}");
    assert!(
        tasks[1]["answer"]
            .as_str()
            .is_some_and(|a| a.contains("no structured result")),
        "{p:#}"
    );
}
