//! `heartwood workflow …`: the maintained research workflows and their independent checks
//! (`catalog`, `check`, `assess`: read-only), and workflow runs inside a session (`start`,
//! `status`, `run`, `evaluate`, `accept`, `cancel`), through the gateway's typed commands.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use heartwood_events::CommandKind;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::workspace::{Assessment, CheckResult, CheckStatus, WorkspaceService};

mod catalog;
mod status;

use status::{
    awaiting_acceptance, execution_lines, failed_turn, print_acceptance, review_lines, status,
};

/// `heartwood workflow …`
#[derive(Subcommand)]
pub enum WorkflowCommand {
    /// List the workflow definitions, their stages, and whether every check is implemented.
    Catalog {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Validate a workflow definition file against this Heartwood's format and check
    /// registry, reporting every problem at once (nothing is changed).
    Validate {
        /// The definition file (JSON).
        file: std::path::PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one stage's checks on the project's current files (nothing is changed).
    Check {
        /// The definition id (see `heartwood workflow catalog`).
        definition: String,
        /// The stage id.
        stage: String,
        /// Also write the results to this file, to assess them again later.
        #[arg(long)]
        save: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Assess saved results: are they still evidence for the stage (complete, passing, and
    /// about the files as they are now)?
    Assess {
        /// The definition id.
        definition: String,
        /// The stage id.
        stage: String,
        /// Results written by `heartwood workflow check --save`.
        results: std::path::PathBuf,
    },
    /// Start a workflow run in a new session: the definition, and the research question.
    Start {
        /// The definition id (see `heartwood workflow catalog`).
        definition: String,
        /// The research question, in your words.
        question: String,
        /// An input at another path than the definition's: `ID=PATH` (repeatable).
        #[arg(long = "input", value_name = "ID=PATH")]
        inputs: Vec<String>,
        /// The new session's id (default: a fresh one); it must not be in use.
        #[arg(long)]
        session: Option<String>,
    },
    /// Where a workflow run stands: its stages, the latest checks, what can be done now.
    Status {
        /// The session (id, unique prefix, or `last`; default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the current stage as an agent turn, and follow it (as `exec` does).
    Run {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// Print JSON (the run's state afterwards; for `run`, one event per line).
        #[arg(long)]
        json: bool,
    },
    /// Run the current stage's independent checks on the files as they are now.
    Evaluate {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// Print JSON (the run's state afterwards; for `run`, one event per line).
        #[arg(long)]
        json: bool,
    },
    /// Accept the stage that awaits your acceptance, showing what is accepted and on which
    /// evidence. Scripts bind it to what they saw with --revision and --fingerprint (as
    /// `status` prints them); without them, the stage and checks shown now are accepted.
    Accept {
        /// The session (id, unique prefix, or `last`; default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// The run revision shown.
        #[arg(long, requires = "fingerprint")]
        revision: Option<u64>,
        /// The assessment fingerprint shown.
        #[arg(long, requires = "revision")]
        fingerprint: Option<String>,
        /// Print JSON (the run's state afterwards; for `run`, one event per line).
        #[arg(long)]
        json: bool,
    },
    /// Cancel the run (no work may be active and no set waiting).
    Cancel {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// Print JSON (the run's state afterwards; for `run`, one event per line).
        #[arg(long)]
        json: bool,
    },
    /// Have the current stage's files reviewed: they are captured by digest, a turn asks the
    /// review specialist, and Heartwood verifies its proposals with its own checks.
    Review {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// Print JSON (one event per line).
        #[arg(long)]
        json: bool,
    },
    /// Consent to run the waiting review batch's reviewers at once, exactly as previewed
    /// (offered only where an operator qualified this model route). The batch still runs only
    /// once you allow its set, and only if the preview still holds then.
    Parallel {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// The preview's digest, as shown (default: the one shown now, printed first).
        preview: Option<String>,
        /// Print JSON (the run's state afterwards).
        #[arg(long)]
        json: bool,
    },
    /// Correct a verified finding of the latest review: plan it (the destination must be a new
    /// path), then, once the corrected file is written there, recheck it; with `--apply`, bind
    /// the rechecked correction in place of the stage's output (checked and accepted again).
    Correct {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// The finding's number in the review (from 0, as `workflow review` lists them).
        #[arg(long, default_value_t = 0)]
        finding: u32,
        /// Where the corrected file goes (a new project-relative path).
        #[arg(long = "to")]
        destination: String,
        /// Bind the correction (after a fresh recheck) instead of only planning it.
        #[arg(long)]
        apply: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Draw the model the latest checks judged (training and held-out points, the fitted line,
    /// the held-out predictions, the training-mean comparator, the leave-one-group-out
    /// slopes) from the files the checks read, as SVG.
    Figure {
        /// The session (default: the latest).
        #[arg(default_value = "last")]
        session: String,
        /// Write the SVG to this file (default: print it).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// Print the figure's series as JSON instead.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a workflow command.
pub fn run(project: &ProjectContext, command: WorkflowCommand) -> Result<ExitCode> {
    match command {
        WorkflowCommand::Start {
            definition,
            question,
            inputs,
            session,
        } => start(project, definition, question, inputs, session),
        WorkflowCommand::Status { session, json } => status(project, &session, json),
        WorkflowCommand::Run { session, json } => {
            let (session, workflow) = current(project, &session)?;
            let revision = workflow.revision;
            let code = crate::exec::follow_command(
                project,
                session.clone(),
                CommandKind::WorkflowRun { revision },
                json,
            )?;
            let (_, w) = current(project, session.as_str())?;
            if !json {
                review_lines(&w);
            }
            // A turn that ended without a usable outcome is a failed stage, whatever the
            // session's own state says.
            if let Some(failure) = failed_turn(&w) {
                eprintln!("heartwood: {failure}");
                return Ok(ExitCode::FAILURE);
            }
            Ok(code)
        }
        WorkflowCommand::Review { session, json } => {
            let (session, workflow) = current(project, &session)?;
            let revision = workflow.revision;
            let code = crate::exec::follow_command(
                project,
                session.clone(),
                CommandKind::WorkflowReview { revision },
                json,
            )?;
            if !json {
                review_lines(&current(project, session.as_str())?.1);
            }
            Ok(code)
        }
        WorkflowCommand::Correct {
            session,
            finding,
            destination,
            apply,
            json,
        } => correct(project, &session, finding, destination, (apply, json)),
        WorkflowCommand::Evaluate { session, json } => evaluate(project, &session, json),
        WorkflowCommand::Accept {
            session,
            revision,
            fingerprint,
            json,
        } => {
            let (session, workflow) = current(project, &session)?;
            let (revision, fingerprint) = match (revision, fingerprint) {
                (Some(revision), Some(fingerprint)) => (revision, fingerprint),
                _ => {
                    let (revision, fingerprint) = awaiting_acceptance(&session, &workflow)?;
                    if !json {
                        print_acceptance(&workflow);
                    }
                    (revision, fingerprint)
                }
            };
            act(
                project,
                &session,
                CommandKind::WorkflowAccept {
                    revision,
                    fingerprint,
                },
            )?;
            status(project, session.as_str(), json)
        }
        WorkflowCommand::Parallel {
            session,
            preview,
            json,
        } => parallel(project, &session, preview, json),
        WorkflowCommand::Cancel { session, json } => {
            let (session, workflow) = current(project, &session)?;
            let revision = workflow.revision;
            act(project, &session, CommandKind::WorkflowCancel { revision })?;
            if json {
                return status(project, session.as_str(), true);
            }
            say!("session {session}: the run was cancelled");
            Ok(ExitCode::SUCCESS)
        }
        WorkflowCommand::Figure { session, out, json } => {
            let (session, _) = current(project, &session)?;
            let gateway = heartwood_gateway::SessionGateway::new(project.clone());
            let figure = gateway.workflow_figure(&session)?.with_context(|| {
                "there is no model to draw yet: no model stage has been checked (run the model \
                 stage, then `heartwood workflow evaluate`)"
            })?;
            if json {
                say!("{}", serde_json::to_string_pretty(&figure)?);
            } else if let Some(out) = out {
                std::fs::write(&out, &figure.svg)
                    .with_context(|| format!("cannot write {}", out.display()))?;
                say!("wrote {}", out.display());
            } else {
                say_raw!("{}", figure.svg);
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkflowCommand::Catalog { json } => catalog::catalog(project, json),
        WorkflowCommand::Validate { file, json } => catalog::validate(&file, json),
        WorkflowCommand::Assess {
            definition,
            stage,
            results,
        } => {
            let text = std::fs::read(&results)
                .with_context(|| format!("cannot read {}", results.display()))?;
            let saved: Vec<CheckResult> = serde_json::from_slice(&text)
                .with_context(|| format!("{} does not hold check results", results.display()))?;
            let assessment =
                WorkspaceService::open(project)?.assess_stage(&definition, &stage, &saved)?;
            print_assessment(&assessment);
            Ok(if assessment.eligible {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        WorkflowCommand::Check {
            definition,
            stage,
            save,
            json,
        } => check(project, &definition, &stage, save.as_deref(), json),
    }
}

fn print_assessment(a: &Assessment) {
    say!(
        "\n{} {} / {}: {} (evidence {})",
        a.definition,
        a.version,
        a.stage,
        if a.eligible {
            "the evidence holds"
        } else {
            "not eligible"
        },
        &a.fingerprint[..16]
    );
    for problem in &a.problems {
        say!("    {problem}");
    }
    if a.eligible && a.researcher_review_required {
        say!(
            "    the stage also needs your acceptance; passing checks grant nothing by themselves"
        );
    }
}

/// Runs the current stage's checks and shows the run; checks that do not pass are a failed
/// step for scripts too (exit 7, the code of a not-eligible refusal), with what continues the
/// run.
fn evaluate(project: &ProjectContext, named: &str, json: bool) -> Result<ExitCode> {
    let (session, workflow) = current(project, named)?;
    let revision = workflow.revision;
    act(
        project,
        &session,
        CommandKind::WorkflowEvaluate { revision },
    )?;
    let shown = status(project, session.as_str(), json)?;
    let (_, w) = current(project, session.as_str())?;
    let Some(a) = w.assessment.as_ref().filter(|a| !a.eligible) else {
        return Ok(shown);
    };
    // Said as the refusal of accepting it would be, with what continues the run; the exit
    // code is the one a not-eligible refusal has.
    let not_eligible = heartwood_events::Refusal::NotEligible {
        stage: a.stage.clone(),
        problems: a.problems.clone(),
    };
    eprintln!(
        "heartwood: {not_eligible}{}",
        w.control(heartwood_events::CommandName::WorkflowRun)
            .map(|c| format!("; correct it, or run it again: {}", c.shell))
            .unwrap_or_default()
    );
    Ok(ExitCode::from(crate::refused::EXIT_NOT_ELIGIBLE))
}

/// The session named and its workflow run, or why there is none.
fn current(
    project: &ProjectContext,
    named: &str,
) -> Result<(
    heartwood_events::SessionId,
    heartwood_events::workflow::WorkflowView,
)> {
    let (session, projection) = current_projection(project, named)?;
    let workflow = projection.workflow.with_context(|| {
        format!("session {session} runs no workflow; `heartwood workflow start` starts one")
    })?;
    Ok((session, workflow))
}

/// The session named and its whole projection.
fn current_projection(
    project: &ProjectContext,
    named: &str,
) -> Result<(
    heartwood_events::SessionId,
    heartwood_events::SessionProjection,
)> {
    let session = heartwood_gateway::SessionAdmin::new(project).resolve(named)?;
    let gateway = heartwood_gateway::SessionGateway::new(project.clone());
    let projection = gateway.projection(&session)?;
    Ok((session, projection))
}

/// Submits one command that starts no run and fails with the gateway's reason if it was
/// refused.
pub(crate) fn act(
    project: &ProjectContext,
    session: &heartwood_events::SessionId,
    kind: heartwood_events::CommandKind,
) -> Result<()> {
    let gateway = heartwood_gateway::SessionGateway::new(project.clone());
    let command = heartwood_events::Command::new(
        heartwood_gateway::SessionGateway::new_command_id(),
        session.clone(),
        kind,
    );
    let receipt = gateway.submit_blocking(command);
    heartwood_cli::runtime::block_on(heartwood_cli::runtime::Workers::Two, gateway.close())?;
    Ok(crate::refused::applied(&receipt?.outcome)?)
}

fn start(
    project: &ProjectContext,
    definition: String,
    question: String,
    inputs: Vec<String>,
    session: Option<String>,
) -> Result<ExitCode> {
    let mut chosen = std::collections::BTreeMap::new();
    for input in inputs {
        let (id, path) = input
            .split_once('=')
            .with_context(|| format!("--input {input:?} is not ID=PATH"))?;
        chosen.insert(id.to_owned(), path.to_owned());
    }
    let session = match session {
        Some(id) => heartwood_events::SessionId::parse(&id)?,
        None => heartwood_gateway::SessionGateway::new_session_id(),
    };
    let kind = CommandKind::WorkflowStart {
        definition,
        question,
        inputs: chosen,
    };
    act(project, &session, kind)?;
    say!("session {session}: the run started");
    status(project, session.as_str(), false)
}

/// Plans, rechecks or (with `apply`) binds a correction of finding `finding`.
fn correct(
    project: &ProjectContext,
    session: &str,
    finding: u32,
    destination: String,
    (apply, json): (bool, bool),
) -> Result<ExitCode> {
    use heartwood_gateway::{CorrectionStep, RecheckResult};
    let (session, workflow) = current(project, session)?;
    if apply {
        let bind = heartwood_gateway::bind_correction(&workflow, finding, destination);
        act(project, &session, bind)?;
        return status(project, session.as_str(), json);
    }
    let step =
        heartwood_gateway::correction_step(project, &workflow, finding as usize, &destination)?;
    if json {
        say!("{}", serde_json::to_string_pretty(&step)?);
        return Ok(ExitCode::SUCCESS);
    }
    match step {
        CorrectionStep::Rechecked(recheck) => {
            say!(
                "recheck of {} ({} in place of {}): {}",
                recheck.plan.destination,
                recheck.plan.check,
                recheck.plan.original,
                recheck.result
            );
            for reason in &recheck.reasons {
                say!("  {reason}");
            }
            if recheck.result == RecheckResult::NotObserved {
                say!(
                    "bind it: heartwood workflow correct {session} --finding {finding} \
                     --to {} --apply",
                    recheck.plan.destination
                );
            }
        }
        CorrectionStep::Planned(plan) => say!(
            "write the corrected {} at {} ({} stays as it is), then run this again to \
             recheck it with {}",
            plan.artifact,
            plan.destination,
            plan.original,
            plan.check
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Consents to the waiting review batch's preview (the one shown now unless named).
fn parallel(
    project: &ProjectContext,
    session: &str,
    preview: Option<String>,
    json: bool,
) -> Result<ExitCode> {
    let (session, workflow) = current(project, session)?;
    let control = workflow
        .control(heartwood_events::CommandName::WorkflowReviewParallel)
        .with_context(|| {
            "no review batch waits to run at once in this session (none was previewed: the route is not qualified, or the batch was decided or consented to)"
        })?;
    let shown = control.fingerprint.clone().unwrap_or_default();
    if !json {
        execution_lines(&workflow);
    }
    let preview = preview.unwrap_or(shown);
    act(
        project,
        &session,
        CommandKind::WorkflowReviewParallel {
            revision: control.revision,
            preview,
        },
    )?;
    if !json {
        say!("consented; allow the set to run it: heartwood decide {session} allow");
    }
    status(project, session.as_str(), json)
}

/// Runs a stage's checks on the files now, saving the results where asked.
fn check(
    project: &ProjectContext,
    definition: &str,
    stage: &str,
    save: Option<&std::path::Path>,
    json: bool,
) -> Result<ExitCode> {
    let service = WorkspaceService::open(project)?;
    let results = service.check_stage(definition, stage)?;
    if let Some(path) = &save {
        std::fs::write(path, serde_json::to_vec_pretty(&results)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if json {
        say!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        for r in &results {
            let status = serde_json::to_value(r.status)?;
            say!("{:<22} {}", r.check, status.as_str().unwrap_or_default());
            for reason in &r.reasons {
                say!("    {reason}");
            }
            for claim in &r.claims {
                say!("    claim {}", claim.text);
            }
            for file in &r.inspected {
                say!(
                    "    read {} ({} bytes, sha256 {})",
                    file.path,
                    file.bytes,
                    &file.sha256[..16]
                );
            }
        }
    }
    if !json {
        print_assessment(&service.assess_checked(definition, stage, &results)?);
    }
    let all_passed = results.iter().all(|r| r.status == CheckStatus::Passed);
    Ok(if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
