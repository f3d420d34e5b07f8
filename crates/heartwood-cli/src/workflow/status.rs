//! `heartwood workflow status` and the lines the other workflow commands print from the same
//! view: the stages, the latest checks and review, how the review batch runs, what awaits
//! acceptance, and why a turn failed.

use std::process::ExitCode;

use anyhow::{Context, Result};
use heartwood_events::workflow::WorkflowView;
use heartwood_gateway::ProjectContext;

use super::current_projection;

/// Prints where the run stands: stages, the latest checks, and the commands that act now.
pub(super) fn status(project: &ProjectContext, named: &str, json: bool) -> Result<ExitCode> {
    let (session, projection) = current_projection(project, named)?;
    let pending = projection.pending.clone();
    let w = projection.workflow.with_context(|| {
        format!("session {session} runs no workflow; `heartwood workflow start` starts one")
    })?;
    if json {
        say!("{}", serde_json::to_string_pretty(&w)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!("{} {} — {}", w.definition, w.version, w.title);
    say!("question: {}", w.question);
    say!(
        "run revision {}{}",
        w.revision,
        if w.cancelled { " (cancelled)" } else { "" }
    );
    for stage in &w.stages {
        let current = w.current.as_deref() == Some(stage.spec.id.as_str());
        say!(
            "{} {:<14} {:<20} {}",
            if current { ">" } else { " " },
            stage.spec.id,
            stage.status.as_str(),
            stage.spec.title
        );
        if current && !stage.budget.is_empty() {
            let lines: Vec<String> = stage
                .budget
                .iter()
                .map(|l| format!("{} {}", l.label, l.text))
                .collect();
            say!("                 budget: {}", lines.join(" · "));
        }
    }
    if let Some(turn) = &w.turn {
        match (&turn.outcome, &turn.problem) {
            (_, Some(problem)) => say!("\nlatest turn: {problem}"),
            (Some(outcome), None) => say!(
                "\nlatest turn reported {}: wrote {}{}",
                outcome.status.as_str(),
                outcome.artifacts.join(", "),
                if outcome.notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", outcome.notes)
                }
            ),
            (None, None) => {}
        }
    }
    if let Some(a) = &w.assessment {
        say!(
            "\nchecks of {}: {} (fingerprint {})",
            a.stage,
            if a.eligible {
                "eligible"
            } else {
                "not eligible"
            },
            a.fingerprint
        );
        for check in &a.checks {
            say!("  {:<22} {}", check.check, check.status);
            for reason in &check.reasons {
                say!("      {reason}");
            }
            for claim in &check.claims {
                say!("      claim {}", claim.text);
            }
        }
        for problem in &a.problems {
            say!("  problem: {problem}");
        }
    }
    review_lines(&w);
    if !w.controls.is_empty() {
        say!();
    }
    for control in &w.controls {
        say!("{}: {}", control.label, control.shell);
    }
    // The stage's turn stands at a set of proposed actions: that decision comes first.
    if let Some(set) = &pending {
        say!(
            "\nThe stage waits for your decision on {} proposed action{}.",
            set.members.len(),
            if set.members.len() == 1 { "" } else { "s" }
        );
        crate::render::decide_commands(&session, set);
    }
    Ok(ExitCode::SUCCESS)
}

/// The revision and fingerprint of the stage awaiting acceptance now, or why none is.
pub(super) fn awaiting_acceptance(
    session: &heartwood_events::SessionId,
    w: &WorkflowView,
) -> Result<(u64, String)> {
    if let Some(control) = w.control(heartwood_events::CommandName::WorkflowAccept)
        && let heartwood_events::CommandKind::WorkflowAccept {
            revision,
            fingerprint,
        } = &control.submit
    {
        return Ok((*revision, fingerprint.clone()));
    }
    let Some(stage) = w.current_stage() else {
        anyhow::bail!(
            "session {session}'s run has no stage left to accept: every stage is accepted"
        );
    };
    let next: Vec<String> = w
        .controls
        .iter()
        .map(|c| format!("{}: {}", c.label, c.shell))
        .collect();
    anyhow::bail!(
        "stage {} of session {session} does not await acceptance: it is {}{}",
        stage.spec.id,
        stage.status.as_str(),
        if next.is_empty() {
            String::new()
        } else {
            format!("; what can be done now:\n  {}", next.join("\n  "))
        }
    )
}

/// What an acceptance without a fingerprint accepts: the stage, its checks and the files they
/// judged, by digest.
pub(super) fn print_acceptance(w: &WorkflowView) {
    let (Some(stage), Some(a)) = (w.current_stage(), &w.assessment) else {
        return;
    };
    say!(
        "accepting “{}” ({}) at run revision {} on its checks (fingerprint {}):",
        stage.spec.title,
        stage.spec.id,
        w.revision,
        &a.fingerprint[..a.fingerprint.len().min(12)]
    );
    for check in &a.checks {
        say!("  {:<22} {}", check.check, check.status);
    }
    let mut files: Vec<&heartwood_events::workflow::InspectedFile> =
        a.checks.iter().flat_map(|c| &c.inspected).collect();
    files.sort_by(|x, y| x.path.cmp(&y.path));
    files.dedup_by(|x, y| x.path == y.path);
    for file in files {
        say!(
            "  evidence {} {}",
            file.path,
            file.sha256
                .as_deref()
                .map_or("(unreadable)".to_owned(), |d| format!(
                    "sha256 {}…",
                    &d[..d.len().min(12)]
                ))
        );
    }
}

/// The latest review as the gateway says it: its findings (verified) apart from the
/// proposals (the reviewer's claims that no check verified).
pub(super) fn review_lines(w: &WorkflowView) {
    execution_lines(w);
    let Some(review) = w.reviews.last() else {
        return;
    };
    say!("\n{}", review.said.headline);
    for finding in &review.said.findings {
        say!("  FINDING  {finding}");
    }
    for proposal in &review.said.proposals {
        say!("  proposal {proposal}");
    }
}

/// How the latest review batch runs, as the gateway says it.
pub(super) fn execution_lines(w: &WorkflowView) {
    let Some(r) = &w.review_execution else {
        return;
    };
    say!("");
    for line in &r.said {
        say!("{line}");
    }
    if let Some(p) = r.preview.as_ref().filter(|_| !r.consented) {
        for f in &p.evidence {
            say!(
                "  evidence {} sha256 {}…",
                f.path,
                &f.sha256[..f.sha256.len().min(12)]
            );
        }
        if let Some(left) = p.model_calls_left {
            say!("  model calls left in the stage: {left}");
        }
        say!("  preview {}", p.digest);
    }
}

/// Why the stage's latest turn, now ended, failed (the gateway's word: no usable outcome, or
/// the stage reported blocked). `None` while it runs or when it completed.
pub(super) fn failed_turn(w: &WorkflowView) -> Option<String> {
    let turn = w.turn.as_ref().filter(|t| !t.open)?;
    let problem = turn.problem.as_ref()?;
    let stage = w
        .stages
        .iter()
        .find(|s| s.spec.id == turn.stage)
        .map_or(turn.stage.as_str(), |s| s.spec.title.as_str());
    Some(format!("stage “{stage}” failed: {problem}"))
}
