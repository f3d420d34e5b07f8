//! `heartwood demo`: a first run that needs no model.
//!
//! It writes the example study from `fixtures/demo/` into a new folder, connects the folder to a
//! replay route serving the shipped recording of a real session (made by `cargo xtask
//! demo-recording` against the scripted model server), and runs the task: in the terminal
//! interface with the task typed in, or with `--exec` as plain output, where the demo answers
//! each decision itself (saying so) and verifies the session at the end.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use heartwood_events::Lifecycle;
use heartwood_gateway::config::{ProjectConfig, RouteConfig, install_recording};
use heartwood_gateway::{ProjectContext, SessionAdmin};

/// The study's files, as shipped in `fixtures/demo/project/`.
const FILES: [(&str, &str); 2] = [
    (
        "README.md",
        include_str!("../../../fixtures/demo/project/README.md"),
    ),
    (
        "data/cohort.csv",
        include_str!("../../../fixtures/demo/project/data/cohort.csv"),
    ),
];
/// The task the recording answers.
const TASK: &str = include_str!("../../../fixtures/demo/task.txt");
/// The recorded model replies.
const RECORDING: &str = include_str!("../../../fixtures/demo/recording.jsonl");
/// The demo's session id.
const SESSION: &str = "demo";
/// The most decisions the walkthrough answers before giving up (the recording has two).
const MAX_DECISIONS: usize = 5;

/// Arguments of `heartwood demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Where to put the example study (a new folder).
    #[arg(default_value = "heartwood-demo")]
    dir: PathBuf,
    /// Plain output instead of the terminal interface; decisions are answered by the demo.
    #[arg(long)]
    exec: bool,
}

/// Runs `heartwood demo`.
pub fn run(args: DemoArgs) -> Result<ExitCode> {
    let dir = create(&args.dir)?;
    std::env::set_current_dir(&dir).with_context(|| format!("cannot enter {}", dir.display()))?;
    let project = ProjectContext::current()?;
    let recording = install_recording(&project, "demo.jsonl", RECORDING.as_bytes())?;
    ProjectConfig::set_route(&project, RouteConfig::replay(recording))?;
    say!(
        "The example study is in {}; the agent's model replies are replayed from a recording.",
        dir.display()
    );
    if !args.exec {
        return crate::tui::run_with_input(project, Some(TASK.trim().to_owned()));
    }
    walkthrough(&project)
}

/// Runs the task headless, answering each decision with "allow once", then verifies.
fn walkthrough(project: &ProjectContext) -> Result<ExitCode> {
    let admin = SessionAdmin::new(project);
    say!("\nTask: {}", TASK.trim());
    let mut code = crate::exec::run_task(project, SESSION, TASK.trim())?;
    for _ in 0..MAX_DECISIONS {
        let view = admin.show(SESSION)?;
        let Some(projection) = view.projection else {
            bail!("the demo session cannot be verified");
        };
        let Some(set) = projection
            .pending
            .filter(|_| projection.lifecycle == Lifecycle::WaitingForDecision)
        else {
            break;
        };
        say!(
            "\n[demo] This is where you decide. The demo allows set {} (revision {}) once; \
             yours would be `heartwood decide {SESSION} --set {} --revision {} allow|reject`.\n",
            set.set_id,
            set.revision,
            set.set_id,
            set.revision
        );
        code = crate::exec::run_decision(project, SESSION, &set.set_id, set.revision)?;
    }
    let (verified, _) = admin.verify(SESSION, None)?;
    say!(
        "\nSession {SESSION} verified: {} events, hash chain intact (terminal hash {}).",
        verified.count,
        verified.terminal_hash
    );
    say!("Look around: cd {} && heartwood", project.root());
    Ok(code)
}

/// Makes the demo folder with the study's files; refuses a folder that already has files.
fn create(dir: &Path) -> Result<PathBuf> {
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!(
            "{} already exists and is not empty; name a new folder: heartwood demo OTHER-FOLDER",
            dir.display()
        );
    }
    for (path, text) in FILES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, text)
            .with_context(|| format!("cannot write {}", target.display()))?;
    }
    Ok(std::fs::canonicalize(dir)?)
}
