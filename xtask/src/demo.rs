//! `cargo xtask demo-recording`: makes `fixtures/demo/recording.jsonl`, the model replies
//! `heartwood demo` replays.
//!
//! It runs the demo task for real, through the session gateway and the native engine, in a fresh
//! copy of `fixtures/demo/project/`, against the scripted model server playing
//! `fixtures/model-scripts/demo.json`, allowing each proposed set once; then it keeps the
//! session's recorded exchanges. Run it again whenever the engine changes what the model is sent
//! (the system prompt, say): the demo test fails until the recording matches.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use heartwood_events::{ActionPolicy, Command, CommandKind, Decision, Lifecycle, SessionId};
use heartwood_gateway::config::{ProjectConfig, RouteConfig};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_testkit::{Script, ScriptedModelServer};

pub fn generate() -> Result<()> {
    let root = crate::workspace_root();
    let fixtures = root.join("fixtures/demo");
    let scratch = tempfile::tempdir()?;
    copy_dir(&fixtures.join("project"), scratch.path())?;
    let task = std::fs::read_to_string(fixtures.join("task.txt"))?;
    let script = Script::load(&root.join("fixtures/model-scripts/demo.json"))
        .map_err(|e| anyhow::anyhow!("fixtures/model-scripts/demo.json: {e}"))?;

    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let server = ScriptedModelServer::start(script).await?;
        let project = ProjectContext::at(scratch.path()).expect("a UTF-8 project path");
        ProjectConfig::set_route(
            &project,
            RouteConfig::compatible(&server.base_url(), "scripted"),
        )?;
        let gateway = SessionGateway::new(project);
        let session = SessionId::parse("demo")?;
        let submit = |kind| {
            gateway.submit_blocking(Command::new(
                SessionGateway::new_command_id(),
                session.clone(),
                kind,
            ))
        };
        submit(CommandKind::SubmitTask {
            text: task.trim().to_owned(),
            policy: ActionPolicy::AlwaysReview,
        })?;
        let started = Instant::now();
        loop {
            let p = gateway.projection(&session)?;
            match (p.lifecycle, &p.pending) {
                (Lifecycle::Finished, _) => break,
                (Lifecycle::WaitingForDecision, Some(set)) => {
                    submit(CommandKind::Decide {
                        set_id: set.set_id.clone(),
                        revision: set.revision,
                        decision: Decision::AllowOnce,
                        reason: None,
                    })?;
                }
                (Lifecycle::Failed | Lifecycle::Stuck, _) => {
                    bail!("the demo run stopped: {}", p.status_line)
                }
                _ => {}
            }
            if started.elapsed() > Duration::from_secs(60) {
                bail!("the demo run did not finish: {}", p.status_line);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        gateway.close().await;
        if server.remaining_turns() != 0 {
            bail!(
                "the run left {} scripted turns unused",
                server.remaining_turns()
            );
        }
        Ok::<_, anyhow::Error>(())
    })?;
    let recorded = scratch
        .path()
        .join(".heartwood/sessions/demo/backend/exchanges.jsonl");
    let target = fixtures.join("recording.jsonl");
    std::fs::copy(&recorded, &target).with_context(|| format!("copying {}", recorded.display()))?;
    println!("wrote {}", target.display());
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
