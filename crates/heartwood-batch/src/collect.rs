//! Collecting a batch: every item's session chain verified (through the gateway's session
//! record) and its accepted evidence read again (through the confined workspace, beneath the
//! item's project); only an item that verifies is summarised. One results table (CSV and JSON:
//! item, accepted stages, key figures from the accepted reports, evidence digests) and a short
//! report, in the batch directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use heartwood_events::workflow::{StageStatus, WorkflowView};
use heartwood_events::{Lifecycle, WaitsFor};
use heartwood_gateway::workspace::TextLimits;
use heartwood_gateway::{ProjectContext, SessionAdmin, WorkspaceService};
use serde::Serialize;

use crate::error::{BatchError, Result};
use crate::manifest::Manifest;
use crate::record::{BatchDir, Phase, Record};

/// Figures read from one accepted JSON report, at most.
const MAX_FIGURES_PER_FILE: usize = 16;
/// The largest report read for figures.
const MAX_REPORT_BYTES: u64 = 4 << 20;

/// One item's line of results.
#[derive(Debug, Clone, Serialize)]
pub struct ResultRow {
    /// The item.
    pub item: String,
    /// Its session.
    pub session: String,
    /// Whether its chain verified and its evidence is the bytes that were accepted.
    pub verified: bool,
    /// Why it is not summarised, when it is not.
    pub refused: Option<String>,
    /// Where the item stands: `done`, `waiting` (its session waits for a person: see
    /// `waits_for`), `answered` (a person answered; `batch resume` goes on), `failed`,
    /// `interrupted`, `running` or `queued`. Never the agent's "finished" for an item whose
    /// run waits or failed.
    pub state: String,
    /// Why, in words (the batch's last word on it).
    pub detail: String,
    /// The command that moves it on, when a person must act.
    pub next: Option<String>,
    /// What its session waits for from a person, with the steps that continue it (the
    /// projection's `waits_for`).
    pub waits_for: Option<WaitsFor>,
    /// Where its session's agent stands (its last turn), when the session can be read.
    pub lifecycle: Option<Lifecycle>,
    /// Accepted workflow stages, in order.
    pub accepted_stages: Vec<String>,
    /// Numbers from the accepted JSON reports (`file:field`), integers kept as integers.
    pub figures: BTreeMap<String, serde_json::Number>,
    /// The accepted evidence: path → SHA-256.
    pub evidence: BTreeMap<String, String>,
    /// Usage and cost.
    pub usage: Option<String>,
}

/// What a collection wrote.
#[derive(Debug, Clone)]
pub struct Collected {
    /// One row per item, in the manifest's order.
    pub rows: Vec<ResultRow>,
    /// The results as CSV.
    pub csv: PathBuf,
    /// The results as JSON.
    pub json: PathBuf,
    /// The report.
    pub report: PathBuf,
    /// Each item's project, in the manifest's order.
    pub projects: Vec<PathBuf>,
}

/// Verifies and summarises every item, writing the results table and report; `progress` is
/// told each item's position as it is verified.
pub fn collect(manifest: &Manifest, mut progress: impl FnMut(usize, usize)) -> Result<Collected> {
    let dir = BatchDir::of(manifest);
    let mut rows = Vec::new();
    let mut projects = Vec::new();
    for (index, item) in manifest.items.iter().enumerate() {
        let record = dir.record(index, item)?;
        progress(index + 1, manifest.items.len());
        rows.push(row(&record));
        projects.push(record.project);
    }
    std::fs::create_dir_all(dir.root()).map_err(BatchError::io("create", dir.root()))?;
    let json = dir.root().join("results.json");
    let bytes = serde_json::to_vec_pretty(&rows).map_err(|source| BatchError::Json {
        path: json.clone(),
        what: "a results table",
        source,
    })?;
    std::fs::write(&json, bytes).map_err(BatchError::io("write", &json))?;
    let csv_path = dir.root().join("results.csv");
    std::fs::write(&csv_path, csv(&rows)).map_err(BatchError::io("write", &csv_path))?;
    let report_path = dir.root().join("report.md");
    std::fs::write(&report_path, report(manifest, &rows))
        .map_err(BatchError::io("write", &report_path))?;
    Ok(Collected {
        rows,
        csv: csv_path,
        json,
        report: report_path,
        projects,
    })
}

fn row(record: &Record) -> ResultRow {
    let mut row = ResultRow {
        item: record.item.clone(),
        session: record.session.clone(),
        verified: false,
        refused: None,
        state: record.phase.as_str().to_owned(),
        detail: record.detail.clone(),
        next: record.next.clone(),
        waits_for: None,
        lifecycle: None,
        accepted_stages: Vec::new(),
        figures: BTreeMap::new(),
        evidence: BTreeMap::new(),
        usage: None,
    };
    if let Err(why) = fill(&mut row, &record.project, record.phase) {
        row.refused = Some(why.to_string());
        row.accepted_stages.clear();
        row.figures.clear();
        row.evidence.clear();
    } else {
        row.verified = true;
    }
    row
}

/// Why an item's session proves nothing, as its row's `refused` says it.
#[derive(Debug, thiserror::Error)]
enum Unproven {
    #[error("{} cannot be a project: {source}", project.display())]
    NotAProject {
        project: PathBuf,
        source: heartwood_gateway::ProjectError,
    },
    #[error("its session cannot be read: {0}")]
    Unreadable(#[source] heartwood_gateway::GatewayError),
    #[error("its session does not verify: {0}")]
    DoesNotVerify(#[source] heartwood_gateway::GatewayError),
    #[error("its session's record cannot be read")]
    NoRecord,
    #[error("its project's files cannot be read: {0}")]
    Files(#[source] heartwood_gateway::GatewayError),
    #[error("{path} (accepted in stage {stage}) cannot be read")]
    EvidenceUnreadable { path: String, stage: String },
    #[error("{path} is not the file stage {stage} accepted (its bytes changed since)")]
    EvidenceChanged { path: String, stage: String },
}

/// Fills in what the item's session proves, or says why it proves nothing.
fn fill(row: &mut ResultRow, project: &Path, phase: Phase) -> Result<(), Unproven> {
    let context = ProjectContext::at(project).map_err(|source| Unproven::NotAProject {
        project: project.to_owned(),
        source,
    })?;
    let view = SessionAdmin::new(&context)
        .show(&row.session)
        .map_err(Unproven::Unreadable)?;
    if let Err(e) = view.integrity {
        return Err(Unproven::DoesNotVerify(e.into()));
    }
    let projection = view.projection.ok_or(Unproven::NoRecord)?;
    row.lifecycle = Some(projection.lifecycle);
    row.waits_for = projection.waits_for.clone();
    row.state = state(phase, row.waits_for.as_ref()).to_owned();
    row.usage = Some(projection.usage.summary.clone()).filter(|s| !s.is_empty());
    if let Some(w) = &projection.workflow {
        let files = WorkspaceService::open(&context).map_err(Unproven::Files)?;
        evidence(row, &files, w)?;
    }
    Ok(())
}

/// Where an item stands, from what the batch last saw and what its session waits for now: a
/// failure or an interruption stands (the batch judged it); otherwise a session that waits for
/// a person is waiting, and one the batch left waiting that no longer waits was answered.
fn state(phase: Phase, waits_for: Option<&WaitsFor>) -> &'static str {
    match (phase, waits_for) {
        (Phase::Failed | Phase::Interrupted, _) => phase.as_str(),
        (_, Some(_)) => "waiting",
        (Phase::Waiting, None) => "answered",
        (phase, None) => phase.as_str(),
    }
}

/// The accepted stages, their evidence read again, and the figures of their JSON reports.
fn evidence(
    row: &mut ResultRow,
    files: &WorkspaceService,
    w: &WorkflowView,
) -> Result<(), Unproven> {
    for stage in w
        .stages
        .iter()
        .filter(|s| s.status == StageStatus::Accepted)
    {
        row.accepted_stages.push(stage.spec.id.clone());
        for file in &stage.accepted_evidence {
            let Some(expected) = &file.sha256 else {
                continue;
            };
            let now = files
                .snapshot(std::slice::from_ref(&file.path), None)
                .ok()
                .and_then(|s| s.files.into_iter().next())
                .ok_or_else(|| Unproven::EvidenceUnreadable {
                    path: file.path.clone(),
                    stage: stage.spec.id.clone(),
                })?
                .sha256;
            if &now != expected {
                return Err(Unproven::EvidenceChanged {
                    path: file.path.clone(),
                    stage: stage.spec.id.clone(),
                });
            }
            row.evidence.insert(file.path.clone(), now);
        }
    }
    let accepted: Vec<String> = row.evidence.keys().cloned().collect();
    for path in accepted.iter().filter(|p| p.ends_with(".json")) {
        for (field, value) in figures(files, path) {
            row.figures.insert(format!("{path}:{field}"), value);
        }
    }
    Ok(())
}

/// The top-level numbers of a JSON object file, at most [`MAX_FIGURES_PER_FILE`], as written
/// (an integer stays one); nothing from a file larger than [`MAX_REPORT_BYTES`].
fn figures(files: &WorkspaceService, path: &str) -> Vec<(String, serde_json::Number)> {
    let limits = TextLimits {
        max_bytes: MAX_REPORT_BYTES,
        max_lines: usize::MAX,
    };
    let Some(serde_json::Value::Object(map)) = files
        .text(path, 0, limits)
        .ok()
        .filter(|t| !t.truncated)
        .and_then(|t| serde_json::from_str(&t.content).ok())
    else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::Number(n) => Some((k.clone(), n.clone())),
            _ => None,
        })
        .take(MAX_FIGURES_PER_FILE)
        .collect()
}

/// The table: one row per item, one column per figure any item reports (`file:field`, in
/// order), empty where an item has none.
fn csv(rows: &[ResultRow]) -> String {
    let columns: std::collections::BTreeSet<&String> =
        rows.iter().flat_map(|r| r.figures.keys()).collect();
    let mut header: Vec<String> = [
        "item",
        "session",
        "verified",
        "refused",
        "state",
        "waits_for",
        "next",
        "accepted_stages",
    ]
    .iter()
    .map(|h| (*h).to_owned())
    .collect();
    header.extend(columns.iter().map(|c| (*c).clone()));
    header.extend(["evidence".to_owned(), "usage".to_owned()]);
    let mut out = header
        .iter()
        .map(|c| csv_cell(c))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in rows {
        let evidence: Vec<String> = r.evidence.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut cells = vec![
            r.item.clone(),
            r.session.clone(),
            r.verified.to_string(),
            r.refused.clone().unwrap_or_default(),
            r.state.clone(),
            r.waits_for
                .as_ref()
                .map(|w| w.kind.words().to_owned())
                .unwrap_or_default(),
            r.next.clone().unwrap_or_default(),
            r.accepted_stages.join(";"),
        ];
        cells.extend(
            columns
                .iter()
                .map(|c| r.figures.get(*c).map(figure_text).unwrap_or_default()),
        );
        cells.extend([evidence.join(";"), r.usage.clone().unwrap_or_default()]);
        let cells: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// A figure as written for people: a whole number as an integer (`12`, not `12.000000`),
/// anything else in the shortest form that reads back as the same double.
fn figure_text(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    // Beyond 2^53 a double's digits are not all meaningful: written as it is.
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn report(manifest: &Manifest, rows: &[ResultRow]) -> String {
    let verified = rows.iter().filter(|r| r.verified).count();
    let mut out = format!(
        "# Batch {}\n\n{} items; {verified} verified and summarised, {} not.\n\n",
        manifest.name,
        rows.len(),
        rows.len() - verified
    );
    out.push_str(
        "Each summarised item's session chain verified (`heartwood sessions verify`) and every \
         file its accepted stages relied on still has the bytes that were accepted.\n\n",
    );
    out.push_str(
        "| item | state | waits for, or why | accepted stages | figures |\n|---|---|---|---|---|\n",
    );
    for r in rows.iter().filter(|r| r.verified) {
        let figures: Vec<String> = r
            .figures
            .iter()
            .map(|(k, v)| format!("{}={}", k.rsplit(':').next().unwrap_or(k), figure_text(v)))
            .collect();
        // A failure is said as the batch judged it; a wait as the session says it.
        let waits = match (r.state.as_str(), &r.waits_for) {
            ("failed" | "interrupted", _) => r.detail.clone(),
            (_, Some(w)) => w.text.clone(),
            _ => "-".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.item,
            r.state,
            waits.replace('|', "\\|"),
            if r.accepted_stages.is_empty() {
                "-".to_owned()
            } else {
                r.accepted_stages.join(", ")
            },
            figures.join(", ")
        ));
    }
    let refused: Vec<&ResultRow> = rows.iter().filter(|r| !r.verified).collect();
    if !refused.is_empty() {
        out.push_str("\n## Not summarised\n\n");
        for r in refused {
            out.push_str(&format!(
                "- {}: {}\n",
                r.item,
                r.refused.as_deref().unwrap_or("")
            ));
        }
    }
    out
}
