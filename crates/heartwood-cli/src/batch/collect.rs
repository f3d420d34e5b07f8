//! `heartwood batch collect`: every item's session chain verified and its accepted evidence
//! read again; only an item that verifies is summarised. One results table (CSV and JSON:
//! item, accepted stages, key figures from the accepted reports, evidence digests) and a short
//! report, in the batch directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use heartwood_events::workflow::{StageStatus, WorkflowView};
use heartwood_events::{Lifecycle, SessionProjection, WaitsFor};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::manifest::Manifest;
use super::record::{BatchDir, Phase, Record};

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

#[derive(Deserialize)]
struct Shown {
    projection: Option<SessionProjection>,
}

/// Verifies and summarises every item (and, with `ro_crate`, writes the batch's crate); exits 1
/// when any item could not be summarised.
pub fn collect(manifest: &Manifest, ro_crate: bool) -> Result<ExitCode> {
    let dir = BatchDir::of(manifest);
    let mut rows = Vec::new();
    let mut projects = Vec::new();
    for (index, item) in manifest.items.iter().enumerate() {
        let record = dir.record(index, item)?;
        eprint!("\rverifying {}/{}", index + 1, manifest.items.len());
        rows.push(row(&record));
        projects.push(record.project);
    }
    eprintln!();
    std::fs::create_dir_all(dir.root())?;
    let json_path = dir.root().join("results.json");
    std::fs::write(&json_path, serde_json::to_vec_pretty(&rows)?)
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    let csv_path = dir.root().join("results.csv");
    std::fs::write(&csv_path, csv(&rows))
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let report_path = dir.root().join("report.md");
    std::fs::write(&report_path, report(manifest, &rows))
        .with_context(|| format!("cannot write {}", report_path.display()))?;
    if ro_crate {
        super::crate_out::write(manifest, &dir, &rows, &projects)?;
    }
    let refused: Vec<&ResultRow> = rows.iter().filter(|r| !r.verified).collect();
    say!(
        "{} of {} items verified and summarised: {}, {}, {}",
        rows.len() - refused.len(),
        rows.len(),
        csv_path.display(),
        json_path.display(),
        report_path.display()
    );
    for r in &refused {
        say!(
            "  {}: not summarised: {}",
            r.item,
            r.refused.as_deref().unwrap_or("")
        );
    }
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
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
        row.refused = Some(why);
        row.accepted_stages.clear();
        row.figures.clear();
        row.evidence.clear();
    } else {
        row.verified = true;
    }
    row
}

/// Fills in what the item's session proves, or says why it proves nothing.
fn fill(row: &mut ResultRow, project: &Path, phase: Phase) -> Result<(), String> {
    let heartwood =
        |args: &[&str]| super::drive::heartwood_in(project, args).map_err(|e| format!("{e:#}"));
    let verified = heartwood(&["sessions", "verify", &row.session])?;
    if !verified.status.success() {
        let said = String::from_utf8_lossy(&verified.stderr);
        let said = said
            .trim()
            .strip_prefix("heartwood: ")
            .unwrap_or(said.trim());
        return Err(format!("its session does not verify: {said}"));
    }
    let shown = heartwood(&["sessions", "show", &row.session, "--json"])?;
    let projection = serde_json::from_slice::<Shown>(&shown.stdout)
        .ok()
        .and_then(|s| s.projection)
        .ok_or("its session's record cannot be read")?;
    row.lifecycle = Some(projection.lifecycle);
    row.waits_for = projection.waits_for.clone();
    row.state = state(phase, row.waits_for.as_ref()).to_owned();
    row.usage = Some(projection.usage.summary.clone()).filter(|s| !s.is_empty());
    if let Some(w) = &projection.workflow {
        evidence(row, project, w)?;
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
fn evidence(row: &mut ResultRow, project: &Path, w: &WorkflowView) -> Result<(), String> {
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
            let now = sha256_of(&project.join(&file.path)).map_err(|e| {
                format!(
                    "{} (accepted in stage {}) cannot be read: {e}",
                    file.path, stage.spec.id
                )
            })?;
            if &now != expected {
                return Err(format!(
                    "{} is not the file stage {} accepted (its bytes changed since)",
                    file.path, stage.spec.id
                ));
            }
            row.evidence.insert(file.path.clone(), now);
        }
    }
    let accepted: Vec<&String> = row.evidence.keys().collect();
    for path in accepted.iter().filter(|p| p.ends_with(".json")) {
        for (field, value) in figures(&project.join(path)) {
            row.figures.insert(format!("{path}:{field}"), value);
        }
    }
    Ok(())
}

/// The top-level numbers of a JSON object file, at most [`MAX_FIGURES_PER_FILE`], as written
/// (an integer stays one).
fn figures(path: &Path) -> Vec<(String, serde_json::Number)> {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= MAX_REPORT_BYTES);
    let Some(serde_json::Value::Object(map)) = small
        .then(|| std::fs::read(path).ok())
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
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

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
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
