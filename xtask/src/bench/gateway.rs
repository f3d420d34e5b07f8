//! `cargo xtask bench gateway`: what the gateway adds to each durable event (append + reduce +
//! publish) beyond the journal append itself, snapshot latency for a 10,000-event session, and
//! memory.
//!
//! The per-event overhead is measured on a memory-backed directory (`/dev/shm` when present),
//! where `fsync` costs next to nothing, so the difference between the gateway path and the bare
//! journal append is the gateway's own work rather than disk noise.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use heartwood_audit::SessionStore;
use heartwood_events::{
    ActionProposal, ActionState, Event, Lifecycle, RiskLevel, Role, SessionId, UsageFigures,
};
use heartwood_gateway::{ProjectContext, SessionGateway};

use super::peak_rss_kib;

const EVENTS: usize = 2_000;
const BIG_SESSION: usize = 10_000;
const REPEATS: usize = 7;

pub fn run() -> Result<()> {
    let scratch = scratch_dir()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let _guard = runtime.enter();

    // Interleaved best-of: both sides see the same disturbances on a shared machine.
    let (mut bare, mut gateway) = (f64::INFINITY, f64::INFINITY);
    for round in 0..REPEATS {
        let dir = scratch.join(format!("round-{round}"));
        std::fs::create_dir_all(&dir)?;
        bare = bare.min(bare_appends(&dir)?);
        gateway = gateway.min(gateway_records(&dir)?);
        std::fs::remove_dir_all(&dir)?;
    }
    let overhead_ms = (gateway - bare) / EVENTS as f64 * 1e3;
    println!(
        "{:<40} {:>9.4} ms   target < 0.2 ms  {}   (journal append alone {:.4} ms/event on {})",
        "gateway overhead per durable event",
        overhead_ms.max(0.0),
        if overhead_ms < 0.2 { "ok" } else { "MISSED" },
        bare / EVENTS as f64 * 1e3,
        scratch.display()
    );

    // An agent run through the gateway, on the real disk: how many sync calls a step costs
    // (counted through the journal writer and the engine's log, not timed), and its wall time.
    let steps_dir = crate::workspace_root().join("target/bench-gateway-steps");
    if steps_dir.exists() {
        std::fs::remove_dir_all(&steps_dir)?;
    }
    std::fs::create_dir_all(&steps_dir)?;
    let (syncs, step_secs, bare_secs) = runtime.block_on(agent_steps(&steps_dir))?;
    println!(
        "{:<40} {:>9.2}      target <= 1.5   {}   (journal and engine log together, {THINKS}-step think script)",
        "sync calls per agent step",
        syncs,
        if syncs <= 1.5 { "ok" } else { "MISSED" },
    );
    println!(
        "{:<40} {:>9.3} ms   (a bare HTTP round trip to the same scripted server: {:.3} ms; on {})",
        "wall time per agent step",
        step_secs * 1e3,
        bare_secs * 1e3,
        steps_dir.display()
    );
    std::fs::remove_dir_all(&steps_dir)?;
    strace_steps(&steps_dir)?;

    let review_dir = scratch.join("review");
    std::fs::create_dir_all(&review_dir)?;
    let review_ms = review_of_ten_edits(&review_dir)?;
    println!(
        "{:<40} {review_ms:>9.2} ms   target < 20 ms  {}",
        "review of 10 edits on 1 MB files",
        if review_ms < 20.0 { "ok" } else { "MISSED" }
    );

    let dir = scratch.join("snapshot");
    std::fs::create_dir_all(&dir)?;
    let project = ProjectContext::at(&dir).expect("a UTF-8 project path");
    let id = SessionId::parse("bench-10k")?;
    {
        let gateway = SessionGateway::new(project.clone());
        for chunk in workload(BIG_SESSION).chunks(100) {
            gateway.bench_record(&id, chunk.to_vec())?;
        }
        let live = best(|| {
            let s = gateway.snapshot(&id, 0)?;
            check(s.events.len())
        })?;
        report_snapshot("snapshot, live 10,000-event session", live);
        runtime.block_on(gateway.close());
    }
    let cold_gateway = SessionGateway::new(project);
    let cold = best(|| {
        let s = cold_gateway.snapshot(&id, 0)?;
        check(s.events.len())
    })?;
    report_snapshot("snapshot, stored session (verify+replay)", cold);
    let out = std::process::Command::new(std::env::current_exe()?)
        .args(["bench-child", "gateway-memory"])
        .arg(scratch.join("memory"))
        .output()
        .context("running the memory benchmark")?;
    if !out.status.success() {
        bail!(
            "memory run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let figures = String::from_utf8_lossy(&out.stdout);
    let mut numbers = figures.split_whitespace().map(str::parse::<f64>);
    let (Some(Ok(before)), Some(Ok(after))) = (numbers.next(), numbers.next()) else {
        bail!("unexpected memory output {figures:?}");
    };
    println!(
        "{:<40} {:>9.1} MiB  ({:.1} MiB before the session; {:.2} KiB per event)",
        "peak memory, live 10,000-event session",
        after / 1024.0,
        before / 1024.0,
        (after - before) / BIG_SESSION as f64
    );
    std::fs::remove_dir_all(&scratch)?;
    Ok(())
}

/// A child step: serve a 10,000-event session live and print peak memory before and after.
/// The same run in a child process under `strace`, counting every sync system call the
/// process makes (session creation, the route's config and closing included), so the figure
/// does not rest on the counters of the code it measures.
fn strace_steps(dir: &Path) -> Result<()> {
    let label = "sync calls per agent step (strace)";
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        println!("{label:<40} not measured: strace is not installed (apt-get install strace)");
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let trace = dir.with_extension("strace");
    let out = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=fsync,fdatasync,sync,syncfs,sync_file_range",
            "-o",
        ])
        .arg(&trace)
        .arg(std::env::current_exe()?)
        .args(["bench-child", "gateway-steps"])
        .arg(dir)
        .output()
        .context("running the agent steps under strace")?;
    if !out.status.success() {
        bail!(
            "the traced run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let calls = std::fs::read_to_string(&trace)?
        .lines()
        .filter(|l| l.contains("sync") && !l.contains("resumed>"))
        .count();
    let steps = (THINKS + 1) as f64;
    let per_step = calls as f64 / steps;
    println!(
        "{label:<40} {per_step:>9.2}      target <= 1.5   {}   ({calls} calls for the whole process, {THINKS}-step think script)",
        if per_step <= 1.5 { "ok" } else { "MISSED" },
    );
    std::fs::remove_file(&trace)?;
    std::fs::remove_dir_all(dir)?;
    Ok(())
}

/// `bench-child gateway-steps DIR`: the agent run of [`agent_steps`], alone in its process.
pub fn steps_child(dir: &Path) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(agent_steps(dir))?;
    Ok(())
}

pub fn child(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let _guard = runtime.enter();
    let gateway = SessionGateway::new(ProjectContext::at(dir).expect("a UTF-8 project path"));
    let before = peak_rss_kib()?;
    let id = SessionId::parse("memory")?;
    for chunk in workload(BIG_SESSION).chunks(100) {
        gateway.bench_record(&id, chunk.to_vec())?;
    }
    let snapshot = gateway.snapshot(&id, 0)?;
    check(snapshot.events.len())?;
    println!("{before} {}", peak_rss_kib()?);
    Ok(())
}

fn check(events: usize) -> Result<()> {
    if events != BIG_SESSION + 1 {
        bail!(
            "snapshot held {events} events, expected {}",
            BIG_SESSION + 1
        );
    }
    Ok(())
}

/// Think steps in the agent run (plus one `finish`), within the engine's default call limit.
const THINKS: usize = 90;

/// Runs the think script through the gateway; returns sync calls per step, seconds per step,
/// and seconds per bare model round trip.
async fn agent_steps(dir: &Path) -> Result<(f64, f64, f64)> {
    use heartwood_events::{ActionPolicy, Command, CommandId, CommandKind};
    use heartwood_gateway::config::{ProjectConfig, RouteConfig};
    use heartwood_testkit::{Script, ScriptedModelServer, Turn};

    let mut turns: Vec<Turn> = (0..THINKS).map(super::agent::think).collect();
    turns.push(Turn::calls(&[(
        "finish",
        serde_json::json!({"message": "done"}),
    )]));
    let server = ScriptedModelServer::start_unrecorded(Script::of(turns)).await?;
    let project = ProjectContext::at(dir).expect("a UTF-8 project path");
    ProjectConfig::set_route(
        &project,
        RouteConfig {
            max_input_tokens: 1_000_000,
            ..RouteConfig::compatible(&server.base_url(), "scripted")
        },
    )?;
    let gateway = SessionGateway::new(project);
    let id = SessionId::parse("steps")?;
    let syncs = || heartwood_audit::sync_calls() + heartwood_agent::conversation::log_sync_calls();
    let before = syncs();
    let start = Instant::now();
    let receipt = gateway.submit_blocking(Command::new(
        CommandId::parse("bench-task")?,
        id.clone(),
        CommandKind::SubmitTask {
            text: "Check the data.".into(),
            policy: ActionPolicy::AlwaysReview,
        },
    ))?;
    if let heartwood_events::Outcome::Refused(reason) = receipt.outcome {
        bail!("the benchmark task was refused: {reason}");
    }
    loop {
        let p = gateway.projection(&id)?;
        match p.lifecycle {
            Lifecycle::Finished => break,
            Lifecycle::Running => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
            other => bail!("the benchmark run stopped as {other:?}: {}", p.status_line),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let used = syncs() - before;
    gateway.close().await;
    let steps = (THINKS + 1) as f64;
    let bare = super::agent::bare_calls(THINKS + 1).await? / steps;
    Ok((used as f64 / steps, secs / steps, bare))
}

/// Milliseconds to compute the review of a set of 10 edits on 1 MB files (read through the
/// confined reader, each diffed), best of [`REPEATS`].
fn review_of_ten_edits(dir: &Path) -> Result<f64> {
    use heartwood_events::{ActionProposal, ActionSet, ActionSetId, RiskLevel};
    let line = "0123456789,abcdefghij,0.5,1.25,2.5,group-7,the quick brown fox jumps over\n";
    let mut members = Vec::new();
    for i in 0..10u64 {
        let mut text = String::with_capacity(1 << 20);
        while text.len() < 1 << 20 {
            text.push_str(line);
        }
        text.push_str(&format!("marker {i}\n"));
        std::fs::write(dir.join(format!("f{i}.csv")), &text)?;
        members.push(ActionProposal {
            action_id: i + 1,
            response_id: "r".into(),
            tool: "file_editor".into(),
            arguments: serde_json::json!({
                "command": "str_replace", "path": format!("f{i}.csv"),
                "old_str": format!("marker {i}"), "new_str": format!("marker {i} (edited)")
            })
            .to_string(),
            risk: RiskLevel::Medium,
            thought: None,
            sandbox: None,
        });
    }
    let set = ActionSet {
        set_id: ActionSetId::parse("set-1")?,
        revision: 1,
        members,
    };
    let project = ProjectContext::at(dir)?;
    let workspace = heartwood_workspace::Workspace::open(dir)?;
    let mut diffs = 0;
    let secs = best(|| {
        let review = heartwood_gateway::review_set_with(project.root(), Some(&workspace), &set);
        diffs = review
            .members
            .iter()
            .filter(|m| matches!(m.preview, heartwood_events::Preview::Diff { .. }))
            .count();
        Ok(())
    })?;
    anyhow::ensure!(
        diffs == 10,
        "only {diffs} of 10 edits were previewed as diffs"
    );
    Ok(secs * 1e3)
}

fn report_snapshot(what: &str, secs: f64) {
    let ms = secs * 1e3;
    println!(
        "{what:<40} {ms:>9.2} ms   target < 20 ms  {}",
        if ms < 20.0 { "ok" } else { "MISSED" }
    );
}

fn best(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// Seconds to append the workload one event at a time straight to the journal.
fn bare_appends(dir: &Path) -> Result<f64> {
    let store = SessionStore::new(dir);
    let (mut writer, _) = store.create_or_open_writer(&SessionId::parse("bare")?, "native")?;
    let events = workload(EVENTS);
    let start = Instant::now();
    for event in events {
        writer.append(None, vec![event])?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Seconds to record the same workload through the gateway, with a subscriber listening.
fn gateway_records(dir: &Path) -> Result<f64> {
    let gateway = SessionGateway::new(ProjectContext::at(dir).expect("a UTF-8 project path"));
    let id = SessionId::parse("gateway")?;
    gateway.bench_record(&id, vec![Event::RunResumed {}])?;
    let mut updates = gateway.subscribe(&id)?;
    let drain = std::thread::spawn(move || {
        let mut n = 0usize;
        while updates.blocking_recv().is_ok() {
            n += 1;
        }
        n
    });
    let events = workload(EVENTS);
    let start = Instant::now();
    for event in events {
        gateway.bench_record(&id, vec![event])?;
    }
    let secs = start.elapsed().as_secs_f64();
    let handle = tokio::runtime::Handle::current();
    handle.block_on(gateway.close());
    drop(gateway);
    let _ = drain.join();
    Ok(secs)
}

/// A realistic mix: each step is a usage record, a proposal, its approval, start and result,
/// and now and then a message or a lifecycle change.
fn workload(n: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(n);
    let mut step = 0u64;
    while out.len() < n {
        step += 1;
        let action_id = step;
        let mut batch = vec![
            Event::UsageRecorded {
                purpose: "agent".into(),
                usage: UsageFigures {
                    prompt_tokens: 1_200 + step,
                    completion_tokens: 80,
                    calls: 1,
                    ..UsageFigures::default()
                },
            },
            Event::ActionProposed {
                action: ActionProposal {
                    action_id,
                    response_id: format!("resp-{step}"),
                    tool: "terminal".into(),
                    arguments: format!(
                        r#"{{"command":"python analysis.py --split {step} --out results/step-{step}.csv"}}"#
                    ),
                    risk: RiskLevel::Medium,
                    thought: Some("Run the next split and keep its predictions.".into()),
                    sandbox: None,
                },
            },
        ];
        for (version, state) in [
            (2, ActionState::Approved),
            (3, ActionState::Running),
            (4, ActionState::Completed),
        ] {
            batch.push(Event::ActionUpdated {
                action_id,
                version,
                state,
                detail: (state == ActionState::Completed)
                    .then(|| "rows: 1200\nr2: 0.41\nwrote results/step.csv\n".repeat(4)),
                exit_code: (state == ActionState::Completed).then_some(0),
                changed_path: None,
            });
        }
        if step.is_multiple_of(5) {
            batch.push(Event::Message {
                role: Role::Agent,
                text: "The held-out R² is stable across splits; continuing with the next one."
                    .into(),
            });
            batch.push(Event::LifecycleChanged {
                lifecycle: Lifecycle::Running,
            });
        }
        out.extend(batch);
    }
    out.truncate(n);
    // The run ends: a stored session whose run is still open reads as cut off (nobody serves
    // it), which is not the read this measures.
    if let Some(last) = out.last_mut() {
        *last = Event::LifecycleChanged {
            lifecycle: Lifecycle::Finished,
        };
    }
    out
}

/// A memory-backed directory when there is one (so fsync costs ~nothing), else under target/.
fn scratch_dir() -> Result<std::path::PathBuf> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.join(format!("heartwood-bench-{}", std::process::id()))
    } else {
        crate::workspace_root().join("target/bench-gateway")
    };
    if base.exists() {
        std::fs::remove_dir_all(&base)?;
    }
    std::fs::create_dir_all(&base)?;
    Ok(base)
}
