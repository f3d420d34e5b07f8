//! `heartwood batch review MANIFEST STAGE`: one workflow stage's checks for every item that
//! waits for its acceptance, side by side, and (with `--accept`) the eligible ones accepted in
//! one decision. The decision names the digest of what was shown (each item's run revision and
//! assessment fingerprint), so nothing is accepted that the researcher did not see; each item
//! is accepted with its own `heartwood workflow accept` in its own project, bound to its own
//! fingerprint, and the gateway checks each again (the bytes, the revision). Items that are
//! not eligible, or that the gateway refuses, are named with the reason.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use heartwood_events::workflow::AssessmentView;
use heartwood_events::{CommandName, SessionProjection, WaitKind};
use serde::Serialize;
use sha2::{Digest, Sha256};

use heartwood_batch::accept::{Accepted, accept, projection_of};
use heartwood_batch::{BatchDir, Manifest, shell_quote};

/// One item that waits for the stage's acceptance with eligible checks.
struct Eligible {
    item: String,
    project: std::path::PathBuf,
    session: String,
    revision: u64,
    fingerprint: String,
    assessment: AssessmentView,
}

/// What a review showed and, with `--accept`, what came of the decision: printed as text, or
/// whole as JSON (`--json`) for a script that drives the batch.
#[derive(Debug, Serialize)]
struct Reviewed {
    stage: String,
    /// The digest of what is offered: the decision that accepts it names it.
    digest: String,
    offered: Vec<Offered>,
    not_offered: Vec<NotOffered>,
    /// Present when a decision was given: `accepted` is false when nothing was accepted
    /// because what waits changed since the review the decision names.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<Decided>,
}

#[derive(Debug, Serialize)]
struct Offered {
    item: String,
    session: String,
    revision: u64,
    fingerprint: String,
    checks: Vec<CheckShown>,
}

#[derive(Debug, Serialize)]
struct CheckShown {
    check: String,
    status: String,
}

#[derive(Debug, Serialize)]
struct NotOffered {
    item: String,
    why: String,
}

#[derive(Debug, Serialize)]
struct Decided {
    given: String,
    current: bool,
    accepted: Vec<String>,
    refused: Vec<NotOffered>,
}

/// Shows the stage's checks for every item side by side; with `accept`, accepts the eligible
/// ones when `accept` is the digest of what is shown now. Exits 1 when any item was refused or
/// the decision named another review.
pub fn review(
    manifest: &Manifest,
    path: &Path,
    stage: &str,
    accept: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let dir = BatchDir::of(manifest);
    let mut eligible = Vec::new();
    let mut others = Vec::new();
    for (index, item) in manifest.items.iter().enumerate() {
        let record = dir.record(index, item)?;
        let projection = projection_of(&record);
        match projection.as_ref().and_then(|p| waiting_at(p, stage)) {
            Some((revision, fingerprint, assessment)) => eligible.push(Eligible {
                item: record.item.clone(),
                project: record.project.clone(),
                session: record.session.clone(),
                revision,
                fingerprint,
                assessment,
            }),
            None => others.push((record.item.clone(), why_not(projection.as_ref(), stage))),
        }
    }
    let digest = shown_digest(&eligible);
    let decision = match accept {
        None => None,
        Some(given) if given != digest => Some(Decided {
            given: given.to_owned(),
            current: false,
            accepted: Vec::new(),
            refused: Vec::new(),
        }),
        Some(given) => Some(accept_each(&eligible, given)?),
    };
    let failed = decision
        .as_ref()
        .is_some_and(|d| !d.current || !d.refused.is_empty());
    let reviewed = Reviewed {
        stage: stage.to_owned(),
        digest,
        offered: eligible.iter().map(offered).collect(),
        not_offered: others
            .into_iter()
            .map(|(item, why)| NotOffered { item, why })
            .collect(),
        decision,
    };
    if json {
        say!("{}", serde_json::to_string_pretty(&reviewed)?);
    } else {
        print_text(&reviewed, path, &eligible);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Accepts each eligible item in its own project, bound to its own revision and fingerprint;
/// the gateway checks each again.
fn accept_each(eligible: &[Eligible], given: &str) -> Result<Decided> {
    let mut decided = Decided {
        given: given.to_owned(),
        current: true,
        accepted: Vec::new(),
        refused: Vec::new(),
    };
    for e in eligible {
        match accept(&e.project, &e.session, e.revision, &e.fingerprint)? {
            Accepted::Yes => decided.accepted.push(e.item.clone()),
            Accepted::Refused(why) => decided.refused.push(NotOffered {
                item: e.item.clone(),
                why: why.to_string(),
            }),
        }
    }
    Ok(decided)
}

fn offered(e: &Eligible) -> Offered {
    Offered {
        item: e.item.clone(),
        session: e.session.clone(),
        revision: e.revision,
        fingerprint: e.fingerprint.clone(),
        checks: e
            .assessment
            .checks
            .iter()
            .map(|c| CheckShown {
                check: c.check.clone(),
                status: c.status.as_str().to_owned(),
            })
            .collect(),
    }
}

/// The review as text: the table, then what to type to accept, or what the decision did.
fn print_text(r: &Reviewed, path: &Path, eligible: &[Eligible]) {
    let others: Vec<(String, String)> = r
        .not_offered
        .iter()
        .map(|n| (n.item.clone(), n.why.clone()))
        .collect();
    print_table(&r.stage, eligible, &others);
    let stage = &r.stage;
    let Some(decided) = &r.decision else {
        if eligible.is_empty() {
            say!("no item waits for the acceptance of stage {stage}");
        } else {
            say!(
                "accept the {} eligible item{} in one decision (each bound to its own fingerprint \
                 shown): heartwood batch review {} {stage} --accept {}",
                eligible.len(),
                if eligible.len() == 1 { "" } else { "s" },
                shell_quote(&path.to_string_lossy()),
                r.digest
            );
        }
        return;
    };
    if !decided.current {
        eprintln!(
            "heartwood: the items changed since that review was shown (it named {}, what \
             waits now is {}): nothing was accepted; look again",
            decided.given, r.digest
        );
        return;
    }
    for item in &decided.accepted {
        say!("{item}: stage {stage} accepted");
    }
    for refused in &decided.refused {
        say!("{}: refused: {}", refused.item, refused.why);
    }
    say!(
        "then `heartwood batch resume {}` takes the accepted items on",
        shell_quote(&path.to_string_lossy())
    );
}

/// The run revision, fingerprint and assessment of a session that waits for the acceptance
/// of `stage` with eligible checks.
fn waiting_at(p: &SessionProjection, stage: &str) -> Option<(u64, String, AssessmentView)> {
    let waits = p.waits_for.as_ref()?;
    if waits.kind != WaitKind::WorkflowAcceptance || waits.stage.as_deref() != Some(stage) {
        return None;
    }
    let w = p.workflow.as_ref()?;
    let assessment = w
        .assessment
        .clone()
        .filter(|a| a.eligible && a.stage == stage)?;
    let control = w.control(CommandName::WorkflowAccept)?;
    Some((control.revision, control.fingerprint.clone()?, assessment))
}

/// Why an item is not offered for acceptance at `stage`, in words.
fn why_not(p: Option<&SessionProjection>, stage: &str) -> String {
    let Some(p) = p else {
        return "its session cannot be read (not started yet?)".to_owned();
    };
    match (
        &p.waits_for,
        p.workflow.as_ref().and_then(|w| w.current.clone()),
    ) {
        (Some(w), _) if w.stage.as_deref() == Some(stage) => {
            format!("not eligible: {}", w.kind.words())
        }
        (Some(w), Some(at)) => format!("at stage {at}, {}", w.kind.words()),
        (None, Some(at)) => format!("at stage {at}, not waiting for you ({})", p.status_line),
        (_, None) => format!("not at stage {stage} ({})", p.status_line),
    }
}

/// SHA-256 over what is offered, item by item: the name, revision and fingerprint. The first
/// 16 hex digits name it (enough to tell one review from another of the same batch).
fn shown_digest(eligible: &[Eligible]) -> String {
    let mut hasher = Sha256::new();
    for e in eligible {
        hasher.update(format!("{}\0{}\0{}\n", e.item, e.revision, e.fingerprint));
    }
    format!("{:x}", hasher.finalize())[..16].to_owned()
}

/// The checks of every eligible item side by side (one column per check), then the others.
fn print_table(stage: &str, eligible: &[Eligible], others: &[(String, String)]) {
    let mut checks: Vec<&str> = Vec::new();
    for e in eligible {
        for c in &e.assessment.checks {
            if !checks.contains(&c.check.as_str()) {
                checks.push(&c.check);
            }
        }
    }
    let width = eligible
        .iter()
        .map(|e| e.item.len())
        .chain(others.iter().map(|(i, _)| i.len()))
        .max()
        .unwrap_or(4)
        .max(4);
    say!(
        "stage {stage}: {} item{} wait{} for your acceptance",
        eligible.len(),
        if eligible.len() == 1 { "" } else { "s" },
        if eligible.len() == 1 { "s" } else { "" }
    );
    let mut header = format!("{:<width$}", "item");
    for c in &checks {
        header.push_str(&format!("  {c}"));
    }
    header.push_str("  fingerprint");
    say!("{header}");
    for e in eligible {
        let mut line = format!("{:<width$}", e.item);
        for c in &checks {
            let status = e
                .assessment
                .checks
                .iter()
                .find(|v| v.check == *c)
                .map_or("-", |v| v.status.as_str());
            line.push_str(&format!("  {status:<w$}", w = c.len()));
        }
        line.push_str(&format!(
            "  {}",
            &e.fingerprint[..e.fingerprint.len().min(16)]
        ));
        say!("{line}");
    }
    for (item, why) in others {
        say!("{item:<width$}  not offered: {why}");
    }
}
