//! Assembles a crate from an exported journal bundle and the project's files: the metadata
//! graph, the definition, the copied files, the journal and the verifier, written as a new
//! directory or ZIP.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use heartwood_audit::BundleFiles;
use heartwood_events::Event;
use heartwood_events::workflow::{BindingRole, WorkflowStart};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::files::{Carriage, ListedFile};
use super::graph::{self, HEARTWOOD, MODEL, RESEARCHER, id, ids, property};
use super::journal::Journal;
use super::runs::{self, FileIds, StageFiles, hex};
use super::{CrateError, CrateReport, JOURNAL_DIR, VERIFIER_NAME, VERIFIER_SCRIPT, archive};

/// What a crate is made from.
pub struct CrateSource<'a> {
    /// The project folder (files are read beneath it through the confined workspace).
    pub project_dir: &'a Path,
    /// The journal bundle just exported.
    pub bundle: &'a BundleFiles,
    /// The model route as `(category, model)`, when one is configured.
    pub route: Option<(String, String)>,
    /// Paths the researcher marks private.
    pub private: &'a [String],
    /// A new directory, or a new ZIP file when `zip`.
    pub destination: PathBuf,
    /// Whether to write one ZIP file.
    pub zip: bool,
}

/// Writes the crate and says where and how big.
pub fn write_crate(src: &CrateSource<'_>) -> Result<CrateReport, CrateError> {
    if src.destination.exists() {
        return Err(CrateError::Exists(src.destination.clone()));
    }
    let journal = Journal::read(&src.bundle.events)?;
    let Some((started, start)) = journal.started() else {
        return Err(CrateError::Journal(
            "the session runs no workflow, and a Provenance Run Crate maps a workflow run; \
             export a bundle or a transcript instead"
                .into(),
        ));
    };
    let definition = heartwood_workflow::catalog::definition(&start.definition)
        .ok()
        .flatten()
        .filter(|d| d.version == start.version);
    let definition_text = match &definition {
        Some(d) => serde_json::to_vec_pretty(d).unwrap_or_default(),
        None => serde_json::to_vec_pretty(start).unwrap_or_default(),
    };
    let (bound, touched) = paths_of(&journal, start);
    let workspace = heartwood_workspace::Workspace::open(src.project_dir).map_err(|e| {
        CrateError::ProjectFile {
            path: ".".into(),
            reason: e.to_string(),
        }
    })?;
    let listed = super::files::list(&workspace, &bound, &touched, src.private)?;
    let file_ids: FileIds = listed.iter().map(|f| (f.path.clone(), f.id())).collect();
    let stage_files = stage_files_of(definition.as_ref(), start);
    let acted = runs::actions(&journal.events, &file_ids, &stage_files);

    let mut out = Parts {
        graph: graph::fixed(src.route.as_ref().map(|(c, m)| (c.as_str(), m.as_str()))),
        ..Parts::default()
    };
    let workflow_path = format!("workflow/{}.json", start.definition);
    let workflow = workflow_entities(
        start,
        definition.as_ref(),
        &definition_text,
        &acted.stages_ran,
    );
    out.graph.extend(workflow);
    out.add(&workflow_path, definition_text);
    out.graph.extend(check_tools(&journal));
    for file in &listed {
        out.graph.push(file_entity(file, start));
        if let Some(content) = &file.content {
            out.add(&file.path, content.clone());
        }
    }
    let last_time = journal
        .events
        .last()
        .map(|e| e.time.as_str().to_owned())
        .unwrap_or_default();
    out.graph.extend(acted.entities.clone());
    let run_id = format!("#run-{}", start.run_id);
    let times = (started.time.as_str(), last_time.as_str());
    let run = run_entities(&journal, start, times, &listed, &run_id, &acted.controls);
    out.graph.extend(run);
    journal_parts(src.bundle, &journal, &mut out);
    let mut mentions = vec![run_id.clone(), "#orchestration".to_owned()];
    mentions.extend(acted.mentioned.iter().cloned());
    if src.route.is_some() {
        mentions.push(MODEL.into());
    }
    let root = root_entity(start, &src.bundle.meta, &out.parts, &mentions);
    out.graph.push(root);
    let Parts {
        graph, mut entries, ..
    } = out;
    entries.push(("ro-crate-metadata.json".into(), metadata_text(graph)));
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if src.zip {
        archive::write_zip(&src.destination, &entries)
    } else {
        archive::write_dir(&src.destination, &entries)
    }
}

/// What a crate is being made of: its metadata entities, its files, and which of them are
/// the root's parts.
#[derive(Default)]
struct Parts {
    graph: Vec<Value>,
    entries: Vec<(String, Vec<u8>)>,
    parts: Vec<String>,
}

impl Parts {
    fn add(&mut self, path: &str, bytes: Vec<u8>) {
        self.parts.push(path.to_owned());
        self.entries.push((path.to_owned(), bytes));
    }
}

/// Per stage of the definition: the paths it consumes and produces.
fn stage_files_of(
    definition: Option<&heartwood_workflow::definition::Definition>,
    start: &WorkflowStart,
) -> StageFiles {
    let path_of: BTreeMap<&str, &str> = start
        .bindings
        .iter()
        .map(|b| (b.id.as_str(), b.path.as_str()))
        .collect();
    let to_paths = |ids: &[String]| {
        ids.iter()
            .filter_map(|b| path_of.get(b.as_str()).map(|p| (*p).to_owned()))
            .collect::<Vec<_>>()
    };
    definition
        .into_iter()
        .flat_map(|d| d.stages.iter())
        .map(|s| (s.id.clone(), (to_paths(&s.consumes), to_paths(&s.produces))))
        .collect()
}

/// The definition as the computational workflow, with a step and a tool per stage that ran.
fn workflow_entities(
    start: &WorkflowStart,
    definition: Option<&heartwood_workflow::definition::Definition>,
    definition_text: &[u8],
    ran: &[String],
) -> Vec<Value> {
    let stages = graph::Stages {
        ran: definition
            .into_iter()
            .flat_map(|d| d.stages.iter())
            .filter(|s| ran.contains(&s.id))
            .map(|s| {
                (
                    s.id.as_str(),
                    s.title.as_str(),
                    s.consumes.clone(),
                    s.produces.clone(),
                )
            })
            .collect(),
    };
    let bindings: Vec<(String, String)> = start
        .bindings
        .iter()
        .map(|b| (b.id.clone(), format!("{} at {}", role(b.role), b.path)))
        .collect();
    let params = |r: BindingRole| {
        let of: Vec<String> = start
            .bindings
            .iter()
            .filter(|b| b.role == r)
            .map(|b| graph::param_of(&b.id))
            .collect();
        ids(of.iter().map(String::as_str))
    };
    let (mut out, steps, tools) = stages.entities(&bindings);
    out.push(json!({
        "@id": format!("workflow/{}.json", start.definition),
        "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
        "name": start.title, "version": start.version, "identifier": start.definition,
        "sha256": hex(&sha2::Sha256::digest(definition_text)),
        "contentSize": definition_text.len().to_string(),
        "encodingFormat": "application/json",
        "programmingLanguage": id("#heartwood-workflow"),
        "input": params(BindingRole::Input), "output": params(BindingRole::Artifact),
        "step": steps, "hasPart": tools,
    }));
    out
}

/// The journal's files and the verifier, described and added.
fn journal_parts(bundle: &BundleFiles, journal: &Journal, out: &mut Parts) {
    for (name, bytes, what) in [
        (
            "events.jsonl",
            journal.carried.clone(),
            "The event lines this crate's provenance rests on, byte for byte (the others are withheld; their audit records remain).",
        ),
        (
            "audit.jsonl",
            bundle.audit.clone(),
            "Every audit record of the session: the content-minimized hash chain.",
        ),
        (
            "meta.json",
            bundle.meta.clone(),
            "The session's registration.",
        ),
        (
            "checkpoint.json",
            bundle.checkpoint.clone(),
            "The journal's Merkle checkpoint (RFC 6962) at export.",
        ),
    ] {
        let path = format!("{JOURNAL_DIR}/{name}");
        out.graph.push(json!({
            "@id": path, "@type": "File", "name": name, "description": what,
            "sha256": hex(&sha2::Sha256::digest(&bytes)), "contentSize": bytes.len().to_string(),
            "encodingFormat": "application/json",
        }));
        out.add(&path, bytes);
    }
    out.graph.push(json!({
        "@id": VERIFIER_NAME, "@type": ["File", "SoftwareSourceCode"],
        "name": "Standalone verifier (Python 3, standard library only)",
        "description": "python3 verify_crate.py DIR_OR_ZIP: checks the journal chain and checkpoint, every file's digest, and that each acceptance rests on passed checks over these exact digests.",
        "programmingLanguage": id("#python"), "encodingFormat": "text/x-python",
        "sha256": hex(&sha2::Sha256::digest(VERIFIER_SCRIPT.as_bytes())),
        "contentSize": VERIFIER_SCRIPT.len().to_string(),
    }));
    out.add(VERIFIER_NAME, VERIFIER_SCRIPT.as_bytes().to_vec());
}

/// The root dataset.
fn root_entity(start: &WorkflowStart, meta: &[u8], parts: &[String], mentions: &[String]) -> Value {
    json!({
        "@id": "./", "@type": "Dataset",
        "name": format!("{} — Heartwood session {}", start.title, session_of(meta)),
        "description": format!("A Heartwood workflow run ({} {}) exported with its content-minimized journal, Merkle checkpoint and standalone verifier. Question SHA-256: {}.", start.definition, start.version, start.question_sha256),
        "datePublished": heartwood_events::Timestamp::now().as_str(),
        "license": id("https://spdx.org/licenses/CC-BY-4.0"),
        "conformsTo": ids(graph::PROFILES),
        "mainEntity": id(&format!("workflow/{}.json", start.definition)),
        "hasPart": ids(parts.iter().map(String::as_str)),
        "mentions": ids(mentions.iter().map(String::as_str)),
    })
}

/// `ro-crate-metadata.json`'s bytes.
fn metadata_text(graph: Vec<Value>) -> Vec<u8> {
    let metadata = json!({
        "@context": [
            "https://w3id.org/ro/crate/1.1/context",
            {
                "sha256": "http://schema.org/sha256",
                "resourceUsage": "https://w3id.org/ro/terms/workflow-run#resourceUsage",
            },
        ],
        "@graph": graph,
    });
    let mut text = serde_json::to_vec_pretty(&metadata).unwrap_or_default();
    text.push(b'\n');
    text
}

fn role(r: BindingRole) -> &'static str {
    match r {
        BindingRole::Input => "input",
        BindingRole::Artifact => "artifact",
    }
}

fn session_of(meta: &[u8]) -> String {
    serde_json::from_slice::<Value>(meta)
        .ok()
        .and_then(|m| m["id"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The bound paths (bindings and corrections) and the other paths the run touched.
fn paths_of(journal: &Journal, start: &WorkflowStart) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut bound: BTreeSet<String> = start.bindings.iter().map(|b| b.path.clone()).collect();
    let mut touched = BTreeSet::new();
    for e in &journal.events {
        match &e.event {
            Event::WorkflowCorrectionBound { to, .. } => {
                bound.insert(to.clone());
            }
            Event::ActionUpdated {
                changed_path: Some(p),
                ..
            } => {
                touched.insert(p.clone());
            }
            Event::WorkflowStageEvaluated { assessment, .. } => {
                for check in &assessment.checks {
                    touched.extend(check.inspected.iter().map(|f| f.path.clone()));
                }
            }
            _ => {}
        }
    }
    (bound, touched)
}

fn file_entity(file: &ListedFile, start: &WorkflowStart) -> Value {
    let mut entity = json!({
        "@id": file.id(), "sha256": file.sha256, "contentSize": file.bytes.to_string(),
    });
    match file.carriage {
        Carriage::Copied => {
            entity["@type"] = json!("File");
            entity["name"] = json!(file.path);
            if let Some(b) = start.bindings.iter().find(|b| b.path == file.path) {
                entity["exampleOfWork"] = id(&graph::param_of(&b.id));
            }
        }
        Carriage::Private => {
            entity["@type"] = json!("CreativeWork");
            entity["name"] = json!("a file the researcher marked private (withheld; digest only)");
        }
        Carriage::Unbound => {
            entity["@type"] = json!("CreativeWork");
            entity["name"] = json!("a file outside the run's bound set (withheld; digest only)");
        }
    }
    entity
}

/// A software entity per check and version that ran, the version as the journal recorded it
/// when the check ran (`workflow_stage_evaluated`), never this build's: a crate exported by a
/// later Heartwood still names the check that gave each answer.
pub(super) fn check_tools(journal: &Journal) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    for e in &journal.events {
        if let Event::WorkflowStageEvaluated { assessment, .. } = &e.event {
            seen.extend(
                assessment
                    .checks
                    .iter()
                    .map(|c| (c.check.clone(), c.version.clone())),
            );
        }
    }
    seen.iter()
        .map(|(c, version)| {
            let mut entity = json!({
                "@id": runs::check_tool_id(c, version.as_deref()), "@type": "SoftwareApplication",
                "name": format!("check {c}"), "identifier": c,
                "description": "A deterministic check of Heartwood's registry, run by the gateway on the exact bytes.",
            });
            match version {
                Some(v) => entity["softwareVersion"] = json!(v),
                None => {
                    entity["description"] = json!("A deterministic check of Heartwood's registry, run by the gateway on the exact bytes. Its version is not stated: the journal was written before Heartwood recorded check versions.");
                }
            }
            entity
        })
        .collect()
}

/// The run's own action and its orchestration, with the model usage.
fn run_entities(
    journal: &Journal,
    start: &WorkflowStart,
    (begun, ended): (&str, &str),
    listed: &[ListedFile],
    run_id: &str,
    controls: &[String],
) -> Vec<Value> {
    let mut usage = [0u64; 4];
    for e in &journal.events {
        if let Event::UsageRecorded { usage: u, .. } = &e.event {
            usage[0] += u.calls;
            usage[1] += u.prompt_tokens;
            usage[2] += u.completion_tokens;
            usage[3] += u.cost_micros;
        }
    }
    let accepted: BTreeSet<&str> = journal
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::WorkflowStageAccepted { stage, .. } => Some(stage.as_str()),
            _ => None,
        })
        .collect();
    let complete = start
        .stages
        .iter()
        .all(|s| accepted.contains(s.id.as_str()));
    let of_role = |role: BindingRole| {
        let paths: BTreeSet<&str> = start
            .bindings
            .iter()
            .filter(|b| b.role == role)
            .map(|b| b.path.as_str())
            .collect();
        listed
            .iter()
            .filter(|f| paths.contains(f.path.as_str()))
            .map(ListedFile::id)
            .collect::<Vec<_>>()
    };
    let names = [
        ("model_calls", "model calls"),
        ("prompt_tokens", "prompt tokens"),
        ("completion_tokens", "completion tokens"),
        ("cost_micros", "cost (millionths of the route's currency)"),
    ];
    let mut out: Vec<Value> = names
        .iter()
        .zip(usage)
        .enumerate()
        .map(|(n, ((key, name), v))| {
            let mut p = property(&format!("{run_id}-usage-{n}"), name, v);
            p["propertyID"] = json!(format!("https://w3id.org/heartwood/usage#{key}"));
            p
        })
        .collect();
    out.push(json!({
        "@id": run_id, "@type": "CreateAction",
        "name": format!("Run {} of {}", start.run_id, start.definition),
        "instrument": id(&format!("workflow/{}.json", start.definition)),
        "agent": id(RESEARCHER), "startTime": begun, "endTime": ended,
        "object": ids(of_role(BindingRole::Input).iter().map(String::as_str)),
        "result": ids(of_role(BindingRole::Artifact).iter().map(String::as_str)),
        "actionStatus": id(if complete { "http://schema.org/CompletedActionStatus" } else { "http://schema.org/ActiveActionStatus" }),
        "resourceUsage": ids((0..names.len()).map(|n| format!("{run_id}-usage-{n}")).collect::<Vec<_>>().iter().map(String::as_str)),
    }));
    out.push(json!({
        "@id": "#orchestration", "@type": "OrganizeAction",
        "name": "Heartwood's gateway orchestrating the run",
        "instrument": id(HEARTWOOD), "agent": id(RESEARCHER),
        "startTime": begun, "endTime": ended,
        "object": ids(controls.iter().map(String::as_str)), "result": id(run_id),
    }));
    out
}
