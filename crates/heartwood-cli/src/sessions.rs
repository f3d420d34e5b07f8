//! `heartwood sessions …`: list, show, verify, checkpoint, export, recover and remove sessions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use heartwood_gateway::{Checkpoint, ProjectContext, Recovery, SessionAdmin};

use crate::render;

/// The `sessions` subcommands.
#[derive(Subcommand)]
pub enum SessionsCommand {
    /// List sessions, most recently active first.
    Ls {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Show at most this many sessions.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Show one session's metadata, integrity and events.
    Show {
        /// The session id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Verify a session's hash chain; exits 0 only when it is intact.
    Verify {
        /// The session id.
        id: String,
        /// A checkpoint kept elsewhere; also proves the log still extends it.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
    },
    /// Print the session's current checkpoint as JSON, to keep somewhere safe.
    Checkpoint {
        /// The session id.
        id: String,
    },
    /// Write a self-contained export bundle and record the export in the session.
    Export {
        /// The session id.
        id: String,
    },
    /// Complete an append that a crash interrupted, then verify the session.
    Recover {
        /// The session id.
        id: String,
    },
    /// Delete a session and everything in it.
    Rm {
        /// The session id.
        id: String,
    },
}

/// Runs one `sessions` subcommand against the current project.
pub fn run(project: &ProjectContext, cmd: SessionsCommand) -> Result<ExitCode> {
    let admin = SessionAdmin::new(project);
    match cmd {
        SessionsCommand::Ls { json, limit } => list(&admin, json, limit),
        SessionsCommand::Show { id, json } => show(project, &admin, &id, json),
        SessionsCommand::Verify { id, checkpoint } => verify(&admin, &id, checkpoint.as_deref()),
        SessionsCommand::Checkpoint { id } => {
            println!("{}", serde_json::to_string_pretty(&admin.checkpoint(&id)?)?);
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Export { id } => {
            let report = admin.export(&id)?;
            println!(
                "exported to {} (recorded as event {})",
                report.bundle.display(),
                report.recorded_as
            );
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Recover { id } => {
            let report = admin.recover(&id)?;
            let count = report.count;
            if let Some(repair) = report.receipts {
                println!(
                    "session {id}: rebuilt the command receipts from the hash chain ({} kept, \
                     {} made again, {} damaged line(s) dropped); a refusal that was lost is \
                     considered afresh if its command is retried",
                    repair.kept, repair.rebuilt, repair.dropped
                );
            }
            match report.recovery {
                Recovery::Clean => {
                    println!("session {id}: nothing to recover; {count} events intact")
                }
                Recovery::CompletedAppend {
                    first_seq,
                    last_seq,
                } => println!(
                    "session {id}: completed the interrupted append of events \
                     {first_seq}..={last_seq}; {count} events intact"
                ),
                Recovery::DiscardedPartialIntent => println!(
                    "session {id}: discarded a recovery intent cut short before any event was \
                     written; {count} events intact"
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Rm { id } => {
            admin.remove(&id)?;
            println!("removed session {id}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(admin: &SessionAdmin, json: bool, limit: Option<usize>) -> Result<ExitCode> {
    let sessions = admin.listing(limit)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
    } else if sessions.is_empty() {
        println!("no sessions in this project yet");
    } else {
        let width = sessions
            .iter()
            .map(|s| s.id.as_str().len())
            .max()
            .unwrap_or(7)
            .max(7);
        println!(
            "{:<width$}  {:<24}  {:>6}  {:<22}  title",
            "session", "last activity", "events", "state"
        );
        for s in &sessions {
            let state = match (&s.pending, s.state) {
                (Some(_), _) => "waiting for a decision".to_owned(),
                (None, Some(state)) => state.as_str().replace('_', " "),
                (None, None) => "unreadable".to_owned(),
            };
            println!(
                "{:<width$}  {:<24}  {:>6}  {:<22}  {}",
                s.id,
                s.last_activity.as_deref().unwrap_or("-"),
                s.events,
                state,
                s.title.as_deref().unwrap_or("-")
            );
            if s.writer_pid.is_some() || s.interrupted || s.metadata_error.is_some() {
                println!("{:<width$}  {}", "", s.status);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(project: &ProjectContext, admin: &SessionAdmin, id: &str, json: bool) -> Result<ExitCode> {
    let view = admin.show(id)?;
    if json {
        let out = view.report();
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let meta = &view.meta;
        println!("session   {}", meta.id);
        println!("created   {}", meta.created_at);
        println!("backend   {}", meta.backend);
        match &view.integrity {
            Ok(v) => println!(
                "integrity intact: {} events, terminal hash {}",
                v.count, v.terminal_hash
            ),
            Err(e) => println!("integrity DAMAGED: {e}"),
        }
        println!();
        for event in &view.events {
            match event {
                Ok(e) => println!("{:>6}  {}  {}", e.seq, e.time, render::describe(e)),
                Err(err) => println!("     ?  unreadable event: {err}"),
            }
        }
        if let Some(projection) = &view.projection {
            println!();
            println!("status    {}", projection.status_line);
            if let Some(set) = &projection.pending {
                let review = heartwood_gateway::review::review_in(project, set);
                render::pending_set(&projection.session, set, &review);
            }
        }
    }
    Ok(if view.integrity.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn verify(admin: &SessionAdmin, id: &str, checkpoint: Option<&Path>) -> Result<ExitCode> {
    let retained = match checkpoint {
        None => None,
        Some(file) => {
            let text = std::fs::read(file)
                .with_context(|| format!("cannot read checkpoint {}", file.display()))?;
            let parsed: Checkpoint = serde_json::from_slice(&text)
                .with_context(|| format!("{} is not a Heartwood checkpoint", file.display()))?;
            Some(parsed)
        }
    };
    let (v, report) = admin.verify(id, retained.as_ref())?;
    match report {
        None => println!(
            "session {id} intact: {} events, terminal hash {}",
            v.count, v.terminal_hash
        ),
        Some(report) => println!(
            "session {id} intact: {} events, and it extends the checkpoint of {} events \
             (consistency proof of {} hashes verified)",
            v.count,
            report.checkpoint_count,
            report.proof.len()
        ),
    }
    Ok(ExitCode::SUCCESS)
}
