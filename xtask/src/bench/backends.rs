//! `cargo xtask bench backends`: the two engines side by side on the same script, through the
//! gateway: wall time per agent step against a bare round trip to the same scripted model
//! (the difference is the engine's own cost per step: its loop, its log, the translation, the
//! journal), and the memory each engine holds.
//!
//! The script is 90 `think` steps and a `finish` (a lone `think` needs no decision in either
//! engine), as in `bench gateway`: within the native engine's default of 100 model calls a run
//! and below its condensation threshold, so both engines make exactly the scripted calls. OpenHands runs in a warm server: one short task starts it first, so the figure is
//! the per-step cost, not Python's start-up (which is printed on its own).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use heartwood_events::{ActionPolicy, Command, CommandId, CommandKind, Lifecycle, SessionId};
use heartwood_gateway::config::{BackendKind, ProjectConfig, RouteConfig};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};

const STEPS: usize = 90;

pub fn run() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let bare_ms = runtime.block_on(super::agent::bare_calls(STEPS + 1))? / (STEPS + 1) as f64 * 1e3;
    println!(
        "{:<44} {bare_ms:>9.3} ms   (the reference: a bare HTTP round trip per step)",
        "bare model round trip"
    );
    let mut with_start = Vec::new();
    for kind in [BackendKind::Native, BackendKind::OpenHands] {
        if kind == BackendKind::OpenHands
            && let Err(why) = heartwood_gateway::openhands_installation()
        {
            println!("{:<44} not measured: {why}", "openhands");
            continue;
        }
        let figures = runtime.block_on(measure(kind))?;
        let overhead = figures.step_ms - bare_ms;
        println!(
            "{:<44} {:>9.3} ms   overhead over the bare round trip {:.3} ms/step",
            format!("{}: wall time per step", kind.name()),
            figures.step_ms,
            overhead.max(0.0),
        );
        println!(
            "{:<44} {:>9.1} MiB  (Heartwood's process grew {:.1} MiB; the engine's own processes {:.1} MiB)",
            format!("{}: memory", kind.name()),
            figures.heartwood_mib + figures.engine_mib,
            figures.heartwood_mib,
            figures.engine_mib,
        );
        if kind == BackendKind::OpenHands {
            println!(
                "{:<44} {:>9.1} s    (Python importing the agent server, once per session)",
                format!("{}: server start", kind.name()),
                figures.start_secs,
            );
        }
        // The session's start (the engine's process or task, the first call) shared out over
        // the run's steps: what a researcher waits for per step of a fresh session.
        let per_step =
            (figures.start_secs * 1e3 + figures.step_ms * (STEPS + 1) as f64) / (STEPS + 1) as f64;
        println!(
            "{:<44} {per_step:>9.3} ms   (the session's start, {:.3} s, shared over {} steps)",
            format!("{}: per step, start included", kind.name()),
            figures.start_secs,
            STEPS + 1,
        );
        with_start.push(per_step);
    }
    if let [native, openhands] = with_start[..] {
        let ratio = openhands / native;
        println!(
            "{:<44} {ratio:>9.1}×     target >= 50×   {}",
            "openhands / native per step, start included",
            if ratio >= 50.0 { "ok" } else { "MISSED" },
        );
    }
    Ok(())
}

struct Figures {
    step_ms: f64,
    heartwood_mib: f64,
    engine_mib: f64,
    /// The first task of a fresh session: the engine's start and one model call.
    start_secs: f64,
}

async fn measure(kind: BackendKind) -> Result<Figures> {
    let mut turns = vec![Turn::calls(&[(
        "finish",
        serde_json::json!({"message": "started"}),
    )])];
    turns.extend((0..STEPS).map(super::agent::think));
    turns.push(Turn::calls(&[(
        "finish",
        serde_json::json!({"message": "done"}),
    )]));
    let server = ScriptedModelServer::start_unrecorded(Script::of(turns)).await?;
    let dir = crate::workspace_root().join(format!("target/bench-backends-{}", kind.name()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let project = ProjectContext::at(&dir).expect("a UTF-8 project path");
    ProjectConfig::set_route(
        &project,
        RouteConfig {
            max_input_tokens: 1_000_000,
            ..RouteConfig::compatible(&server.base_url(), "scripted")
        },
    )?;
    ProjectConfig::set_backend(&project, kind)?;
    let gateway = SessionGateway::new(project);
    let id = SessionId::parse("steps")?;
    let rss_before = rss_kib(std::process::id());

    let started = Instant::now();
    task(&gateway, &id, "warm-up", "Say you have started.").await?;
    let start_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    task(&gateway, &id, "steps", "Check the data.").await?;
    let step_ms = started.elapsed().as_secs_f64() / (STEPS + 1) as f64 * 1e3;

    let heartwood_mib = (rss_kib(std::process::id()) - rss_before).max(0.0) / 1024.0;
    let store = dir.join(".heartwood/sessions/steps/backend/conversations");
    let engine_mib = heartwood_gateway::openhands_processes(&store)
        .into_iter()
        .map(rss_kib)
        .fold(0.0, |total, kib| total + kib)
        / 1024.0;
    gateway.close().await;
    std::fs::remove_dir_all(&dir)?;
    Ok(Figures {
        step_ms,
        heartwood_mib,
        engine_mib,
        start_secs,
    })
}

/// Gives the task and waits for it to finish.
async fn task(gateway: &SessionGateway, id: &SessionId, command: &str, text: &str) -> Result<()> {
    let receipt = gateway.submit_blocking(Command::new(
        CommandId::parse(command)?,
        id.clone(),
        CommandKind::SubmitTask {
            text: text.into(),
            policy: ActionPolicy::AlwaysReview,
        },
    ))?;
    if let heartwood_events::Outcome::Refused(reason) = receipt.outcome {
        bail!("the benchmark task was refused: {reason}");
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let p = gateway.projection(id)?;
        match p.lifecycle {
            Lifecycle::Finished => return Ok(()),
            Lifecycle::Running | Lifecycle::Idle if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            other => bail!("the benchmark run stopped as {other:?}: {}", p.status_line),
        }
    }
}

/// A process's resident memory, in KiB (0 when it cannot be read).
fn rss_kib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0.0)
}
