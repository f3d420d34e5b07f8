//! `heartwood replay`: run a recorded session's task again, with the model's recorded replies,
//! in a copy of the project's starting files, and compare what the tools observed.
//!
//! `heartwood replay ID` makes a fresh copy of the project's starting files beside the project
//! (from the Git commit the files matched when the task was given), or `--into DIR` uses a copy
//! you made; it installs the session's recording there, connects it to a replay route and gives
//! the task again under the same policy: every action set waits for a decision again, answered with
//! `heartwood decide` in DIR as usual. `--compare` then reports, action by action, whether the
//! replay observed the same results. A replay that leaves the recording (a file differed, so a
//! tool result differed) stops at that model call and says so.

use std::path::PathBuf;
use std::process::ExitCode;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use heartwood_events::{ActionState, ActionView, Event, SessionProjection};
use heartwood_gateway::config::{ProjectConfig, RouteConfig, install_recording};
use heartwood_gateway::{ProjectContext, SessionAdmin};

/// Arguments of `heartwood replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The recorded session (in this project).
    session: String,
    /// A folder holding the project's starting files, where the replay runs (default: a fresh
    /// copy made from the commit recorded with the task, beside the project).
    #[arg(long)]
    into: Option<PathBuf>,
    /// Compare the replay in DIR with the original instead of starting it.
    #[arg(long)]
    compare: bool,
}

/// Runs `heartwood replay`.
pub fn run(project: &ProjectContext, args: ReplayArgs) -> Result<ExitCode> {
    let admin = SessionAdmin::new(project);
    let view = admin.show(&args.session)?;
    let Some(original) = view.projection else {
        bail!(
            "session {} does not verify, so it cannot be replayed; run `heartwood sessions verify {}`",
            args.session,
            args.session
        );
    };
    let Some((task, policy, commit)) = view.events.iter().flatten().find_map(|e| match &e.event {
        Event::TaskSubmitted {
            text,
            policy,
            starting_commit,
        } => Some((text.clone(), *policy, starting_commit.clone())),
        _ => None,
    }) else {
        bail!("session {} was never given a task", args.session);
    };
    let recording = admin.recording(&args.session)?.with_context(|| {
        format!(
            "session {} has no recorded model replies to replay",
            args.session
        )
    })?;
    let into = match (args.into.clone(), commit) {
        (Some(dir), _) => dir,
        (None, _) if args.compare => default_copy(project, &args.session),
        (None, Some(commit)) => fresh_copy(project, &args.session, &commit)?,
        (None, None) => bail!(
            "session {} recorded no commit for its starting files (the project was not a Git work              tree, or had uncommitted changes, when the task was given); make a copy of the              starting files and pass it with --into DIR",
            args.session
        ),
    };
    std::env::set_current_dir(&into).with_context(|| format!("cannot enter {}", into.display()))?;
    let copy = ProjectContext::current()?;
    if args.compare {
        let replayed = SessionAdmin::new(&copy).show(&args.session)?;
        let Some(replayed) = replayed.projection else {
            bail!("the replay in {} does not verify", into.display());
        };
        return Ok(compare(&original, &replayed));
    }
    if std::fs::read_dir(copy.state_dir().join("sessions").join(&args.session))
        .is_ok_and(|mut d| d.next().is_some())
    {
        bail!(
            "{} already holds a session {}; replay into a fresh copy of the starting files",
            into.display(),
            args.session
        );
    }
    let name = format!("replay-{}.jsonl", args.session);
    let recording = install_recording(&copy, &name, &recording)?;
    ProjectConfig::set_route(&copy, RouteConfig::replay(recording))?;
    println!(
        "Replaying session {} in {} ({} policy); answer each decision with `heartwood decide` \
         there, then compare with `heartwood replay {} --into {} --compare`.",
        args.session,
        into.display(),
        policy.as_str(),
        args.session,
        into.display()
    );
    crate::exec::run_task_with(&copy, &args.session, &task, policy)
}

/// Compares the tool results of two sessions, action by action, in the order they ran.
fn compare(original: &SessionProjection, replayed: &SessionProjection) -> ExitCode {
    let ran = |p: &SessionProjection| -> Vec<ActionView> {
        p.actions
            .iter()
            .filter(|a| matches!(a.state, ActionState::Completed | ActionState::Failed))
            .cloned()
            .collect()
    };
    let (before, after) = (ran(original), ran(replayed));
    let mut differ = 0;
    for (i, old) in before.iter().enumerate() {
        let call = crate::tui::summary(&old.proposal.tool, &old.proposal.arguments);
        match after.get(i) {
            Some(new)
                if new.proposal.tool == old.proposal.tool
                    && new.proposal.arguments == old.proposal.arguments
                    && new.detail == old.detail
                    && new.exit_code == old.exit_code =>
            {
                println!("same     {call}");
            }
            Some(new) => {
                differ += 1;
                println!("differs  {call}");
                println!("           original: {}", first_line(old));
                println!("           replay:   {}", first_line(new));
            }
            None => {
                differ += 1;
                println!("missing  {call} (the replay did not get this far)");
            }
        }
    }
    println!(
        "\n{} of {} tool results match; the replay is {}",
        before.len() - differ,
        before.len(),
        replayed.status_line
    );
    if differ == 0 && after.len() == before.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn first_line(action: &ActionView) -> String {
    action
        .detail
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or("(no output)")
        .to_owned()
}

/// Where a replay's fresh copy goes by default: beside the project.
fn default_copy(project: &ProjectContext, session: &str) -> PathBuf {
    let name = project
        .root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".to_owned());
    project
        .root()
        .with_file_name(format!("{name}-replay-{session}"))
}

/// Writes the files of `commit` into a new folder beside the project.
fn fresh_copy(project: &ProjectContext, session: &str, commit: &str) -> Result<PathBuf> {
    let dir = default_copy(project, session);
    if dir.exists() {
        bail!(
            "{} already exists; remove it, or pass another folder with --into",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir)?;
    let mut archive = Command::new("git")
        .args([
            "--no-optional-locks",
            "-c",
            "core.hooksPath=/dev/null",
            "archive",
            "--format=tar",
            commit,
        ])
        .current_dir(project.root())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run git")?;
    let extracted = Command::new("tar")
        .args(["-x", "-C"])
        .arg(&dir)
        .stdin(
            archive
                .stdout
                .take()
                .context("git archive gave no output")?,
        )
        .status()
        .context("cannot run tar")?;
    let archived = archive.wait().context("git archive did not finish")?;
    if !extracted.success() || !archived.success() {
        bail!(
            "could not write the files of commit {commit} into {}",
            dir.display()
        );
    }
    println!(
        "The starting files (commit {commit}) are in {}.",
        dir.display()
    );
    Ok(dir)
}
