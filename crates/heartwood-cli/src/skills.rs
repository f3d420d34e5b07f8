//! `heartwood skills ls | show | approve | activate | deactivate | add | remove | source add |
//! refresh`:
//! the project's Agent Skills, reviewed and decided on from the command line. Everything goes
//! through the gateway's skills service; this module only prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::skills::{SkillDetail, SkillView, SkillsService, SourceUrls};

/// The `skills` subcommands.
#[derive(Subcommand)]
pub enum SkillsCommand {
    /// List every skill the sources offer, with its source, status and tree digest.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill as you review it: its tree digest, files and SKILL.md.
    Show {
        /// The skill's name.
        name: String,
        /// The source, when several offer the name (`bundled`, `signed:NAME`, `local:PATH`).
        #[arg(long)]
        source: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve the exact tree you reviewed (`show` prints its digest); a changed tree needs a
    /// new approval.
    Approve {
        /// The skill's name.
        name: String,
        /// The full tree digest you reviewed (blake3:…).
        #[arg(long)]
        digest: String,
        /// The source, when several offer the name.
        #[arg(long)]
        source: Option<String>,
    },
    /// Give an approved skill to the agent from its next start.
    Activate {
        /// The skill's name.
        name: String,
        /// The source, when several offer the name.
        #[arg(long)]
        source: Option<String>,
    },
    /// Stop giving a skill to the agent.
    Deactivate {
        /// The skill's name.
        name: String,
    },
    /// Add a skill directory on this machine (always shown as unreviewed).
    Add {
        /// The skill's directory (holding SKILL.md).
        dir: PathBuf,
    },
    /// Signed skill sources (TUF repositories).
    #[command(subcommand)]
    Source(SourceCommand),
    /// Remove a local directory or a signed source (`local:PATH`, `signed:NAME`, as `ls` shows).
    Remove {
        /// The source.
        source: String,
    },
    /// Fetch and verify every signed source; revocations apply at once.
    Refresh,
}

/// The `skills source` subcommands.
#[derive(Subcommand)]
pub enum SourceCommand {
    /// Add a signed source, trusting the root metadata your deployment provides.
    Add {
        /// A name for it (lowercase letters, digits, hyphens).
        name: String,
        /// The deployment's root.json for this repository.
        #[arg(long)]
        root: PathBuf,
        /// Where its metadata is (https://, file://, or an absolute directory).
        #[arg(long)]
        metadata_url: String,
        /// Where its targets are.
        #[arg(long)]
        targets_url: String,
    },
}

/// Runs one `skills` subcommand.
pub fn run(project: &ProjectContext, cmd: SkillsCommand) -> Result<ExitCode> {
    let skills = SkillsService::open(project);
    match cmd {
        SkillsCommand::Ls { json } => {
            let catalog = skills.catalog()?;
            if json {
                say!("{}", serde_json::to_string_pretty(&catalog)?);
                return Ok(ExitCode::SUCCESS);
            }
            let width = catalog
                .skills
                .iter()
                .map(|s| s.name.len())
                .max()
                .unwrap_or(4)
                .max(4);
            say!("{:width$}  {:24}  {:18}  STATUS", "NAME", "SOURCE", "TREE");
            for skill in &catalog.skills {
                say!(
                    "{:width$}  {:24}  {:18}  {}",
                    skill.name,
                    short(&skill.source, 24),
                    skill.digest.as_deref().map_or("-", |d| short(d, 18)),
                    skill.status
                );
            }
            say!();
            for source in &catalog.sources {
                say!("source {}: {}", source.id, source.status);
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Show { name, source, json } => {
            let detail = skills.show(&name, source.as_deref())?;
            if json {
                say!("{}", serde_json::to_string_pretty(&detail)?);
            } else {
                print_detail(&detail);
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Approve {
            name,
            digest,
            source,
        } => {
            let view = skills.approve(&name, source.as_deref(), &digest)?;
            say!("approved {} at {}", view.name, digest);
            say!("activate it with `heartwood skills activate {}`", view.name);
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Activate { name, source } => {
            let view = skills.activate(&name, source.as_deref())?;
            say!("{}: {}", view.name, view.status);
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Deactivate { name } => {
            if skills.deactivate(&name)? {
                say!("{name} no longer reaches the agent (from its next start)");
            } else {
                say!("{name} was not active");
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Add { dir } => {
            let view = skills.add_local(&dir)?;
            say!("added {} from {}: {}", view.name, view.source, view.status);
            say!(
                "review it with `heartwood skills show {}` before approving",
                view.name
            );
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Source(SourceCommand::Add {
            name,
            root,
            metadata_url,
            targets_url,
        }) => {
            let root_bytes = std::fs::read(&root)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", root.display()))?;
            let urls = SourceUrls::parse(&metadata_url, &targets_url)?;
            let offered = skills.add_signed(&name, &root_bytes, urls)?;
            say!(
                "signed:{name} verified; it offers {} skill(s):",
                offered.len()
            );
            for skill in offered {
                say!("  {}: {}", skill.name, skill.status);
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Remove { source } => {
            if skills.remove_source(&source)? {
                say!("removed {source}; its skills no longer reach the agent");
            } else {
                say!("{source} was not a source of this project");
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Refresh => {
            let outcomes = skills.refresh()?;
            if outcomes.is_empty() {
                say!("no signed sources; add one with `heartwood skills source add`");
            }
            let mut refused = false;
            for outcome in outcomes {
                match outcome.refused {
                    None => say!("{}: verified and up to date", outcome.source),
                    Some(why) => {
                        refused = true;
                        say!("{}: refused: {why}", outcome.source);
                    }
                }
            }
            Ok(if refused {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

fn print_detail(detail: &SkillDetail) {
    let view: &SkillView = &detail.view;
    say!("{} ({})", view.name, view.status);
    say!("  source    {}", view.source);
    say!("  reviewed  {}", view.review);
    if let Some(digest) = &view.digest {
        say!("  tree      {digest}");
    }
    say!("  files:");
    for file in &view.files {
        if file.directory {
            say!("    {}/", file.path);
        } else {
            say!(
                "    {}  {} bytes{}",
                file.path,
                file.size,
                if file.executable { ", executable" } else { "" }
            );
        }
    }
    say!("\n----- SKILL.md -----\n{}", detail.skill_md.trim_end());
    say!("----- end -----");
    if let (Some(digest), false) = (&view.digest, view.approved) {
        say!(
            "\nto approve exactly this tree: heartwood skills approve {} --digest {digest}",
            view.name
        );
    }
}

/// `text` cut to at most `width` characters (a column of a table).
fn short(text: &str, width: usize) -> &str {
    match text.char_indices().nth(width.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > width => &text[..at],
        _ => text,
    }
}
