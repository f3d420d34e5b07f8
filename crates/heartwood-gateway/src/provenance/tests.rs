//! The crate's mapping of journal lines to entities: tool actions described as the journal
//! holds them (command text redacted, edits by path, rejected ones not run), and check
//! entities at the version each check had when it ran.

use heartwood_events::workflow::{AssessmentView, CheckStatus, CheckView, InspectedFile};
use heartwood_events::{
    ActionProposal, ActionState, Event, RecordedEvent, RiskLevel, SandboxLevel, Seq,
};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::journal::Journal;
use super::runs::{self, FileIds, StageFiles, hex};

/// The journal's own bytes for `events`, numbered from 1.
fn journal_of(events: Vec<Event>) -> Journal {
    let mut text = Vec::new();
    for (n, event) in events.into_iter().enumerate() {
        let seq = Seq::new(n as u64 + 1).expect("seq");
        text.extend(serde_json::to_vec(&RecordedEvent::new(seq, None, event)).expect("encode"));
        text.push(b'\n');
    }
    Journal::read(&text).expect("journal")
}

fn proposed(action_id: u64, tool: &str, arguments: Value, sandbox: Option<SandboxLevel>) -> Event {
    Event::ActionProposed {
        action: ActionProposal {
            action_id,
            response_id: "r1".into(),
            tool: tool.into(),
            arguments: arguments.to_string(),
            risk: RiskLevel::Medium,
            thought: None,
            sandbox,
        },
    }
}

fn updated(action_id: u64, version: u32, state: ActionState, changed: Option<&str>) -> Event {
    Event::ActionUpdated {
        action_id,
        version,
        state,
        detail: None,
        exit_code: (state == ActionState::Completed && changed.is_none()).then_some(0),
        changed_path: changed.map(str::to_owned),
    }
}

fn entity<'a>(entities: &'a [Value], at: &str) -> &'a Value {
    entities
        .iter()
        .find(|e| e["@id"] == at)
        .unwrap_or_else(|| panic!("no {at} in {entities:#?}"))
}

fn property<'a>(entities: &'a [Value], action: &Value, name: &str) -> Option<&'a Value> {
    action["additionalProperty"]
        .as_array()?
        .iter()
        .filter_map(|p| entities.iter().find(|e| e["@id"] == p["@id"]))
        .find(|p| p["name"] == name)
        .map(|p| &p["value"])
}

#[test]
fn actions_are_described_as_the_journal_holds_them_with_keys_redacted_and_rejections_not_run() {
    let key = "sk-proj-planted0KEY0in0arguments";
    let bearer = "plantedbearertoken0123456789";
    let command = format!(
        "OPENAI_API_KEY={key} curl -H 'Authorization: Bearer {bearer}' https://example.org/x > data/x.csv"
    );
    let file_text = "# Notes\nThe plan, as written.\n";
    let journal = journal_of(vec![
        proposed(
            1,
            "terminal",
            json!({"command": command}),
            Some(SandboxLevel::ProjectWrite),
        ),
        proposed(
            2,
            "file_editor",
            json!({"command": "create", "path": "notes/plan.md", "file_text": file_text}),
            None,
        ),
        proposed(
            3,
            "terminal",
            json!({"command": "rm -rf data"}),
            Some(SandboxLevel::Unsandboxed),
        ),
        updated(1, 2, ActionState::Approved, None),
        updated(2, 2, ActionState::Approved, None),
        updated(3, 2, ActionState::Rejected, None),
        updated(1, 3, ActionState::Completed, None),
        updated(2, 3, ActionState::Completed, Some("notes/plan.md")),
    ]);
    let files: FileIds = [("notes/plan.md".to_owned(), "notes/plan.md".to_owned())].into();
    let acted = runs::actions(&journal.events, &files, &StageFiles::new());
    let all = serde_json::to_string(&acted.entities).expect("json");
    assert!(!all.contains(key) && !all.contains(bearer), "{all}");

    let ran = entity(&acted.entities, "#action-1");
    let text = property(&acted.entities, ran, "command").expect("command");
    assert_eq!(
        text,
        &json!(
            "OPENAI_API_KEY=[redacted] curl -H 'Authorization: Bearer [redacted]' https://example.org/x > data/x.csv"
        )
    );
    assert_eq!(
        property(&acted.entities, ran, "sandbox level"),
        Some(&json!("project_write"))
    );
    assert_eq!(property(&acted.entities, ran, "exit code"), Some(&json!(0)));
    assert_eq!(
        ran["actionStatus"]["@id"],
        "http://schema.org/CompletedActionStatus"
    );

    let edit = entity(&acted.entities, "#action-2");
    assert_eq!(
        property(&acted.entities, edit, "path"),
        Some(&json!("notes/plan.md"))
    );
    assert_eq!(
        property(&acted.entities, edit, "editor command"),
        Some(&json!("create"))
    );
    assert_eq!(
        property(&acted.entities, edit, "SHA-256 of the text written"),
        Some(&json!(hex(&sha2::Sha256::digest(file_text.as_bytes()))))
    );
    assert_eq!(edit["result"], json!([{"@id": "notes/plan.md"}]));

    let rejected = entity(&acted.entities, "#action-3");
    assert_eq!(
        rejected["actionStatus"]["@id"],
        "http://schema.org/PotentialActionStatus"
    );
    assert_eq!(rejected["description"], "rejected: not run");
    assert!(rejected.get("startTime").is_none() && rejected.get("endTime").is_none());
    assert_eq!(
        property(&acted.entities, rejected, "command"),
        Some(&json!("rm -rf data"))
    );
    assert_eq!(
        property(&acted.entities, rejected, "sandbox level"),
        Some(&json!("unsandboxed"))
    );
}

fn evaluated(checks: Vec<(&str, Option<&str>)>) -> Event {
    Event::WorkflowStageEvaluated {
        run_id: "w-1".into(),
        assessment: Box::new(AssessmentView {
            stage: "readiness".into(),
            fingerprint: "f".repeat(64),
            eligible: true,
            problems: Vec::new(),
            checks: checks
                .into_iter()
                .map(|(check, version)| CheckView {
                    check: check.into(),
                    version: version.map(str::to_owned),
                    status: CheckStatus::Passed,
                    reasons: Vec::new(),
                    inspected: vec![InspectedFile {
                        path: "data/cohort.csv".into(),
                        sha256: Some("a".repeat(64)),
                    }],
                    claims: Vec::new(),
                })
                .collect(),
        }),
    }
}

#[test]
fn a_check_is_exported_at_the_version_the_journal_recorded_not_this_builds() {
    // This build registers `data_dictionary` at version 1; the journal says the check that
    // answered was version 7, and an older line recorded no version at all.
    let registered = heartwood_workflow::registry::Registry::builtin()
        .lookup("data_dictionary", None)
        .expect("registered")
        .version;
    assert_ne!(registered, "7");
    let journal = journal_of(vec![
        evaluated(vec![("data_dictionary", Some("7"))]),
        evaluated(vec![("readiness_report", None)]),
    ]);
    let tools = super::build::check_tools(&journal);
    let recorded = entity(&tools, "#check-data_dictionary-v7");
    assert_eq!(recorded["softwareVersion"], "7");
    let unrecorded = entity(&tools, "#check-readiness_report");
    assert!(unrecorded.get("softwareVersion").is_none(), "{unrecorded}");
    assert!(tools.iter().all(|t| t["softwareVersion"] != registered));

    let acted = runs::actions(&journal.events, &FileIds::new(), &StageFiles::new());
    assert_eq!(
        entity(&acted.entities, "#check-1-1")["instrument"],
        json!({"@id": "#check-data_dictionary-v7"})
    );
    assert_eq!(
        entity(&acted.entities, "#check-2-1")["instrument"],
        json!({"@id": "#check-readiness_report"})
    );
}
