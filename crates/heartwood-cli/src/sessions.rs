//! `heartwood sessions …`: list, show, verify, checkpoint, export, recover and remove sessions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use heartwood_gateway::{Checkpoint, ProjectContext, Recovery, SessionAdmin, SessionStoreChoice};

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
        /// The session id, a unique prefix of it, or `last`.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Verify a session's hash chain; exits 0 when it is intact, 3 when it is intact but an
    /// append a crash interrupted waits for recovery, 1 when it is damaged or cannot be read.
    Verify {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
        /// A checkpoint kept elsewhere; also proves the log still extends it.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
    },
    /// Print the session's current checkpoint as JSON, to keep somewhere safe.
    Checkpoint {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
    },
    /// Write a self-contained, verifiable export bundle, a readable Markdown transcript, or
    /// a Provenance Run RO-Crate (each recorded in the session with its destination).
    Export {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
        /// What to write.
        #[arg(long, value_enum, default_value_t = ExportFormat::Bundle)]
        format: ExportFormat,
        /// Where: a new directory for a bundle (it stays in the session's `exports/` too) or
        /// a crate, a file for a transcript (default: printed, and not recorded) or a crate ZIP.
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        /// Write the crate as one ZIP file.
        #[arg(long)]
        zip: bool,
        /// A project-relative path to keep out of the crate (listed by digest only); repeat.
        #[arg(long, value_name = "PATH")]
        private: Vec<String>,
    },
    /// Take over a session whose run was cut off (the process running it ended): serve it
    /// here, let its engine carry the run on or record where it stopped, and stay until it
    /// settles. Looking at a session never does this.
    Resume {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
    },
    /// Complete an append that a crash interrupted, then verify the session.
    Recover {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
    },
    /// Give a session a title of your own (it starts as its first task's first line).
    Rename {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
        /// The new title.
        #[arg(required = true, num_args = 1..)]
        title: Vec<String>,
    },
    /// Copy a session, byte for byte, between stores (`files` or a `postgres://` URL): it
    /// is verified before and after, and the destination must not hold it yet.
    Copy {
        /// The session id, a unique prefix of it, or `last` (in the source store).
        id: String,
        /// The store to copy from.
        #[arg(long, value_name = "STORE", default_value = "files")]
        from: String,
        /// The store to copy to.
        #[arg(long, value_name = "STORE")]
        to: String,
    },
    /// Delete a session and everything in it.
    Rm {
        /// The session id, a unique prefix of it, or `last`.
        id: String,
        /// Remove without asking (for scripts; without a terminal to ask on, it is required).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// What `sessions export` writes.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    /// The self-contained bundle an independent verifier checks.
    Bundle,
    /// A readable transcript: messages, proposed sets, decisions, results.
    Markdown,
    /// A Provenance Run RO-Crate 1.1 with the journal, its checkpoint and a verifier inside.
    RoCrate,
}

/// `sessions verify` and `sessions show`: the session is intact, and an append a crash
/// interrupted waits for recovery (as `exec` exits 3 when a decision waits for you).
pub const EXIT_AWAITING_RECOVERY: u8 = 3;

/// `heartwood sessions [--session-store URL] …`.
#[derive(clap::Args)]
pub struct SessionsArgs {
    /// Where the sessions are kept: `files` (the project's, the default) or a `postgres://`
    /// URL shared by `heartwood serve` replicas.
    #[arg(long, value_name = "URL", global = true)]
    session_store: Option<String>,
    #[command(subcommand)]
    command: SessionsCommand,
}

/// Runs one `sessions` subcommand against the current project, in the store it names.
pub fn run_in_store(project: &ProjectContext, args: SessionsArgs) -> Result<ExitCode> {
    let store = match &args.session_store {
        Some(url) => SessionStoreChoice::parse(url)?,
        None => SessionStoreChoice::Files,
    };
    if let SessionsCommand::Copy { id, from, to } = &args.command {
        let from = SessionAdmin::with_store(project, &SessionStoreChoice::parse(from)?);
        let to_store = SessionStoreChoice::parse(to)?;
        let to = SessionAdmin::with_store(project, &to_store);
        let count = from.copy_to(id, &to)?;
        say!(
            "copied session {id} to {} ({count} events, verified there)",
            to_store.shown()
        );
        return Ok(ExitCode::SUCCESS);
    }
    match store {
        SessionStoreChoice::Files => run(project, args.command),
        shared => run_with(
            project,
            SessionAdmin::with_store(project, &shared),
            args.command,
        ),
    }
}

/// Runs one `sessions` subcommand against the current project.
pub fn run(project: &ProjectContext, cmd: SessionsCommand) -> Result<ExitCode> {
    run_with(project, SessionAdmin::new(project), cmd)
}

fn run_with(
    project: &ProjectContext,
    admin: SessionAdmin,
    cmd: SessionsCommand,
) -> Result<ExitCode> {
    match cmd {
        SessionsCommand::Ls { json, limit } => list(&admin, json, limit),
        SessionsCommand::Show { id, json } => show(project, &admin, &id, json),
        SessionsCommand::Verify { id, checkpoint } => verify(&admin, &id, checkpoint.as_deref()),
        SessionsCommand::Checkpoint { id } => {
            say!("{}", serde_json::to_string_pretty(&admin.checkpoint(&id)?)?);
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Export {
            id,
            format,
            out,
            zip,
            private,
        } => export(&admin, &id, format, out, zip, private),
        SessionsCommand::Resume { id } => resume(project, &admin.resolve(&id)?),
        SessionsCommand::Recover { id } => {
            let id = admin.resolve(&id)?;
            let report = admin.recover(id.as_str())?;
            let count = report.count;
            let repaired = report.torn_tail.is_some() || report.receipts.is_some();
            if let Some(cut) = report.torn_tail {
                say!(
                    "session {id}: cut a torn tail from event {} on ({} bytes of an append a \
                     crash left incomplete, never acknowledged); the bytes are kept in {}",
                    cut.from_seq,
                    cut.bytes,
                    cut.kept_at.display()
                );
            }
            if let Some(repair) = report.receipts {
                say!(
                    "session {id}: rebuilt the command receipts from the hash chain ({} kept, \
                     {} made again, {} damaged line(s) dropped); a refusal that was lost is \
                     considered afresh if its command is retried",
                    repair.kept,
                    repair.rebuilt,
                    repair.dropped
                );
            }
            match report.recovery {
                Recovery::Clean if repaired => say!("session {id}: {count} events intact"),
                Recovery::Clean => {
                    say!("session {id}: nothing to recover; {count} events intact")
                }
                Recovery::CompletedAppend {
                    first_seq,
                    last_seq,
                } => say!(
                    "session {id}: completed the interrupted append of events \
                     {first_seq}..={last_seq}; {count} events intact"
                ),
                Recovery::DiscardedPartialIntent => say!(
                    "session {id}: discarded a recovery intent cut short before any event was \
                     written; {count} events intact"
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Rename { id, title } => {
            let id = admin.resolve(&id)?;
            let title = title.join(" ");
            crate::workflow::act(
                project,
                &id,
                heartwood_events::CommandKind::Rename { title },
            )?;
            let shown = heartwood_gateway::SessionGateway::new(project.clone())
                .projection(&id)?
                .title
                .unwrap_or_default();
            say!("session {id} is now titled \"{shown}\"");
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Copy { .. } => {
            anyhow::bail!("`sessions copy` names its stores with --from and --to")
        }
        SessionsCommand::Rm { id, yes } => {
            let id = admin.resolve(&id)?;
            if !yes && !confirmed_removal(&admin, &id)? {
                say!("kept session {id}");
                return Ok(ExitCode::FAILURE);
            }
            admin.remove(id.as_str())?;
            say!("removed session {id}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn export(
    admin: &SessionAdmin,
    id: &str,
    format: ExportFormat,
    out: Option<PathBuf>,
    zip: bool,
    private: Vec<String>,
) -> Result<ExitCode> {
    use heartwood_events::ExportFormat as Wire;
    if matches!(format, ExportFormat::Markdown) && out.is_none() {
        say_raw!("{}", admin.transcript(id)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(out) = &out
        && out.exists()
    {
        anyhow::bail!("{} already exists; name a new path", out.display());
    }
    let destination = match &out {
        Some(out) => Some(std::path::absolute(out)?.display().to_string()),
        None => None,
    };
    let request = heartwood_events::ExportRequest {
        format: match format {
            ExportFormat::Bundle => Wire::Bundle,
            ExportFormat::Markdown => Wire::Markdown,
            ExportFormat::RoCrate => Wire::RoCrate,
        },
        destination,
        zip,
        private,
    };
    let report = admin.export_as(id, &request)?;
    match (format, &report.destination) {
        (ExportFormat::Bundle, to) => {
            say!(
                "exported to {} (recorded as event {})",
                report.bundle.display(),
                report.recorded_as
            );
            if let Some(to) = to {
                say!("copied to {}", to.display());
            }
        }
        (_, Some(to)) => say!(
            "exported session {id} to {} (recorded as event {})",
            to.display(),
            report.recorded_as
        ),
        (_, None) => say!("exported (recorded as event {})", report.recorded_as),
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks on the terminal whether to remove session `id`, naming what it holds; refuses when
/// there is no terminal to ask on, since a removal cannot be undone.
fn confirmed_removal(admin: &SessionAdmin, id: &heartwood_events::SessionId) -> Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "removing session {id} deletes its whole record and cannot be undone; \
             nobody can be asked here (no terminal), so pass --yes to remove it"
        );
    }
    let listing = admin.listing(None)?.into_iter().find(|l| &l.id == id);
    let about = listing
        .map(|l| {
            let title = l.title.map(|t| format!("\"{t}\", ")).unwrap_or_default();
            format!(" ({title}{} events)", l.events)
        })
        .unwrap_or_default();
    say_raw!("Remove session {id}{about} and its whole record? This cannot be undone. [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

fn list(admin: &SessionAdmin, json: bool, limit: Option<usize>) -> Result<ExitCode> {
    let sessions = admin.listing(limit)?;
    if json {
        say!("{}", serde_json::to_string_pretty(&sessions)?);
    } else if sessions.is_empty() {
        say!("no sessions in this project yet");
    } else {
        let width = sessions
            .iter()
            .map(|s| s.id.as_str().len())
            .max()
            .unwrap_or(7)
            .max(7);
        say!(
            "{:<width$}  {:<14}  {:>6}  {:<22}  title",
            "session",
            "last activity",
            "events",
            "state"
        );
        for s in &sessions {
            let state = match (&s.pending, s.state) {
                (Some(_), _) => "waiting for a decision".to_owned(),
                // A settled agent whose workflow run waits is not "finished".
                _ if s.waits_for.is_some() => s
                    .waits_for
                    .as_ref()
                    .map(|w| w.kind.words().to_owned())
                    .unwrap_or_default(),
                _ if s.stopped => "stopped".to_owned(),
                (None, Some(state)) => state.as_str().replace('_', " "),
                (None, None) => "unreadable".to_owned(),
            };
            say!(
                "{:<width$}  {:<14}  {:>6}  {:<22}  {}",
                s.id,
                s.last_activity_ago
                    .as_deref()
                    .or(s.last_activity.as_deref())
                    .unwrap_or("-"),
                s.events,
                state,
                s.title.as_deref().unwrap_or("-")
            );
            if s.writer_pid.is_some() || s.interrupted || s.metadata_error.is_some() || s.stopped {
                say!("{:<width$}  {}", "", s.status);
            } else if let Some(w) = &s.waits_for {
                say!("{:<width$}  {}", "", w.text);
                if let Some(step) = w.steps.first() {
                    say!("{:<width$}  next: {}", "", step.shell);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The longest `sessions resume` stays with a run it took over (Ctrl-C pauses it sooner).
const RESUME_WAIT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Takes session `id` over explicitly (the gateway's `serve`), then follows it until it
/// settles and says where it stands.
fn resume(project: &ProjectContext, id: &heartwood_events::SessionId) -> Result<ExitCode> {
    heartwood_cli::runtime::block_on(heartwood_cli::runtime::Workers::Two, async {
        let gateway = heartwood_gateway::SessionGateway::new(project.clone());
        // Serving opens, verifies and reconciles the session's files: where blocking is allowed.
        let served = tokio::task::block_in_place(|| gateway.serve(id));
        let settled = match served {
            Ok(()) => tokio::select! {
                settled = gateway.settled(id, RESUME_WAIT) => settled.map(Some),
                _ = tokio::signal::ctrl_c() => Ok(None),
            },
            Err(e) => Err(e),
        };
        // Closing pauses a run still going (Ctrl-C) and lets the session go.
        gateway.close().await;
        let status = match settled? {
            Some(snapshot) => snapshot.projection.status_line,
            None => "paused at its next step (Ctrl-C)".to_owned(),
        };
        say!("session {id}: {status}");
        Ok(ExitCode::SUCCESS)
    })?
}

fn show(project: &ProjectContext, admin: &SessionAdmin, id: &str, json: bool) -> Result<ExitCode> {
    let view = admin.show(id)?;
    if json {
        let out = view.report();
        say!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let meta = &view.meta;
        say!("session   {}", meta.id);
        say!("created   {}", meta.created_at);
        say!("backend   {}", meta.backend);
        match &view.integrity {
            Ok(v) => say!(
                "integrity intact: {} events, terminal hash {}",
                v.count,
                v.terminal_hash
            ),
            Err(e) if view.interrupted_append().is_some() => {
                say!("integrity intact, waiting for recovery: {e}")
            }
            Err(e) => say!("integrity DAMAGED: {e}"),
        }
        say!();
        for event in &view.events {
            match event {
                Ok(e) => say!(
                    "{:>6}  {}  {}",
                    e.seq,
                    e.time,
                    heartwood_gateway::transcript_line(e)
                ),
                Err(err) => say!("     ?  unreadable event: {err}"),
            }
        }
        if let Some(projection) = &view.projection {
            say!();
            say!("status    {}", projection.status_line);
            if let Some(set) = &projection.pending {
                let review = heartwood_gateway::review_set(project, set);
                render::pending_set(&projection.session, set, &review);
            }
        }
    }
    Ok(match &view.integrity {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) if view.interrupted_append().is_some() => ExitCode::from(EXIT_AWAITING_RECOVERY),
        Err(_) => ExitCode::FAILURE,
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
    // `last` and prefixes are said back as the session they named.
    let id = admin.resolve(id)?;
    let (v, report) = match admin.verify(id.as_str(), retained.as_ref()) {
        Ok(verified) => verified,
        Err(e) => match e.interrupted_append() {
            Some((first, last)) => {
                say!(
                    "session {id} intact through event {}, with an interrupted append waiting \
                     for recovery: events {first}..={last} are held whole in its recovery \
                     journal and continue the chain intact{}, but a crash stopped their writer \
                     before they all reached the event and audit files. `heartwood sessions \
                     recover {id}` completes it (so does the next command that acts on the \
                     session)",
                    first.saturating_sub(1),
                    if retained.is_some() {
                        ", extending the checkpoint"
                    } else {
                        ""
                    }
                );
                return Ok(ExitCode::from(EXIT_AWAITING_RECOVERY));
            }
            None => return Err(e.into()),
        },
    };
    match report {
        None => say!(
            "session {id} intact: {} events, terminal hash {}",
            v.count,
            v.terminal_hash
        ),
        Some(report) => say!(
            "session {id} intact: {} events, and it extends the checkpoint of {} events \
             (consistency proof of {} hashes verified)",
            v.count,
            report.checkpoint_count,
            report.proof.len()
        ),
    }
    Ok(ExitCode::SUCCESS)
}
