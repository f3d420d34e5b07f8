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

use anyhow::{Context, Result, bail};
use heartwood_events::ActionView;
use heartwood_gateway::config::{ProjectConfig, RouteConfig, install_recording};
use heartwood_gateway::{ProjectContext, SessionAdmin};
use heartwood_gateway::{
    ReplayComparison, ReplayVerdict, compare_replay, replay_copy, write_starting_files,
};

/// Arguments of `heartwood replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The recorded session in this project (its id, a unique prefix, or `last`).
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
pub fn run(project: &ProjectContext, mut args: ReplayArgs) -> Result<ExitCode> {
    // `last` and a unique prefix name the session; the copy holds it under its full id.
    args.session = SessionAdmin::new(project)
        .resolve(&args.session)?
        .as_str()
        .to_owned();
    let source = SessionAdmin::new(project).replay_source(&args.session)?;
    let into = match (args.into.clone(), &source.starting_commit) {
        (Some(dir), _) => dir,
        (None, _) if args.compare => replay_copy(project, &args.session),
        (None, Some(commit)) => {
            let dir = replay_copy(project, &args.session);
            write_starting_files(project, commit, &dir)?;
            say!(
                "The starting files (commit {commit}) are in {}.",
                dir.display()
            );
            dir
        }
        (None, None) => bail!(
            "session {} recorded no commit for its starting files (the project was not a Git work \
             tree, or had uncommitted changes, when the task was given); make a copy of the \
             starting files and pass it with --into DIR",
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
        return Ok(print_comparison(&compare_replay(
            &source.original,
            &replayed,
        )));
    }
    let resumed = std::fs::read_dir(copy.state_dir().join("sessions").join(&args.session))
        .is_ok_and(|mut d| d.next().is_some());
    let first = if resumed {
        next_task(&copy, &args, &into, source.tasks.len())?
    } else {
        let name = format!("replay-{}.jsonl", args.session);
        let recording = install_recording(&copy, &name, &source.recording)?;
        ProjectConfig::set_route(&copy, RouteConfig::replay(recording))?;
        ProjectConfig::set_backend(&copy, source.engine)?;
        say!(
            "Replaying session {} in {} ({} task{}, {} policy); answer each decision with \
             `heartwood decide` there, then run this again to go on, and compare with \
             `heartwood replay {} --into {} --compare`.",
            args.session,
            into.display(),
            source.tasks.len(),
            if source.tasks.len() == 1 { "" } else { "s" },
            source.policy.as_str(),
            args.session,
            into.display()
        );
        0
    };
    // Every task in turn, each once the one before has finished; a task that stops (for a
    // decision, say) ends this run, and running it again goes on from there.
    for (n, (task, policy)) in source.tasks.iter().enumerate().skip(first) {
        if source.tasks.len() > 1 {
            say!("task {} of {}: {task}", n + 1, source.tasks.len());
        }
        let code = crate::exec::run_task_with(&copy, &args.session, task, *policy)?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Which recorded task the replay in `copy` goes on with: the first it was not given, once the
/// one before has finished; or why it cannot go on.
fn next_task(
    copy: &ProjectContext,
    args: &ReplayArgs,
    into: &std::path::Path,
    tasks: usize,
) -> Result<usize> {
    let replayed = SessionAdmin::new(copy).show(&args.session)?;
    let Some(p) = replayed.projection else {
        bail!("the replay in {} does not verify", into.display());
    };
    let given = replayed
        .events
        .iter()
        .flatten()
        .filter(|e| matches!(e.event, heartwood_events::Event::TaskSubmitted { .. }))
        .count();
    if given >= tasks {
        bail!(
            "{} already holds session {} with every one of its {tasks} task{} replayed; compare \
             with `heartwood replay {} --into {} --compare`, or replay into a fresh copy",
            into.display(),
            args.session,
            if tasks == 1 { "" } else { "s" },
            args.session,
            into.display()
        );
    }
    if p.lifecycle != heartwood_events::Lifecycle::Finished {
        bail!(
            "the replay in {} is {} at task {given} of {tasks}; answer it with `heartwood decide` \
             there, then run this again to go on",
            into.display(),
            p.lifecycle.as_str().replace('_', " ")
        );
    }
    Ok(given)
}

/// Prints a comparison; success when the replay observed exactly what the original did.
fn print_comparison(comparison: &ReplayComparison) -> ExitCode {
    for compared in &comparison.actions {
        let old = &compared.original;
        let call = &old.headline;
        match (compared.verdict, &compared.replayed) {
            (ReplayVerdict::Same, _) => say!("same     {call}"),
            (ReplayVerdict::Differs, Some(new)) => {
                say!("differs  {call}");
                say!("           original: {}", first_line(old));
                say!("           replay:   {}", first_line(new));
            }
            _ => say!("missing  {call} (the replay did not get this far)"),
        }
    }
    say!(
        "\n{} of {} tool results match; the replay is {}",
        comparison.matching(),
        comparison.actions.len(),
        comparison.replay_status
    );
    if comparison.identical() {
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
