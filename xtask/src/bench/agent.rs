//! `cargo xtask bench agent`: the engine's own cost per step (scripted model, zero latency) and
//! its memory over a long conversation.
//!
//! A step is one model call proposing one `think` action plus running it, so the tool does no
//! work of its own. The reference is the same model calls made bare: the same growing message
//! lists sent by the model client alone to the same kind of scripted server. The engine's
//! overhead is the difference, per step: deriving the model's view from the log, recording
//! events durably, confirmation and bookkeeping.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use heartwood_agent::conversation::{
    ConfirmationPolicy, Conversation, ConversationConfig, ExecutionStatus, RunTiming,
};
use heartwood_agent::model::{ChatMessage, ModelClient, ModelRoute};
use heartwood_testkit::{Script, ScriptedModelServer, Turn};
use serde_json::json;

use super::peak_rss_kib;

const STEPS: usize = 1_000;

pub fn run() -> Result<()> {
    let dir = crate::workspace_root().join("target/bench-agent");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let (bare, timing) = runtime.block_on(async {
        let bare = bare_calls(STEPS).await?;
        let timing = conversation(&dir.join("timed"), STEPS).await?;
        Ok::<_, anyhow::Error>((bare, timing))
    })?;
    let calls = timing.model_calls.max(1) as f64;
    let overhead_ms = timing.engine().as_secs_f64() / calls * 1e3;
    println!(
        "{:<34} {:>10.3} ms   target < 1 ms  {}   (model calls {:.3} ms each; the same calls made bare: {:.3} ms)",
        "engine overhead per step",
        overhead_ms,
        if overhead_ms < 1.0 { "ok" } else { "MISSED" },
        timing.model.as_secs_f64() / calls * 1e3,
        bare / STEPS as f64 * 1e3,
    );

    // Memory in fresh processes at three lengths: linear growth keeps the per-step cost flat.
    let mut previous: Option<(usize, f64)> = None;
    for steps in [250, 500, 1_000] {
        let out = std::process::Command::new(std::env::current_exe()?)
            .args(["bench-child", &format!("agent-{steps}")])
            .arg(dir.join(format!("memory-{steps}")))
            .output()
            .context("running the memory benchmark")?;
        if !out.status.success() {
            bail!(
                "agent memory run failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let kib: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
        let growth = previous.map_or(String::new(), |(s, k)| {
            format!(
                "  +{:.1} KiB per extra step",
                (kib - k) / (steps - s) as f64
            )
        });
        println!(
            "{:<34} {:>10.1} MiB{growth}",
            format!("peak memory, {steps}-step conversation"),
            kib / 1024.0
        );
        previous = Some((steps, kib));
    }
    Ok(())
}

/// A child step: run an `n`-step conversation in this process and print its peak memory.
pub fn child(steps: usize, dir: &Path) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(conversation(dir, steps))?;
    println!("{}", peak_rss_kib()?);
    Ok(())
}

pub(crate) fn route(server: &ScriptedModelServer) -> ModelRoute {
    ModelRoute {
        max_retries: 0,
        ..ModelRoute::compatible(&server.base_url(), "scripted")
    }
}

pub(crate) fn think(i: usize) -> Turn {
    Turn::calls(&[(
        "think",
        json!({"thought": format!("step {i}: check the next column's range")}),
    )])
    .with_usage(1_000, 20)
}

pub(crate) async fn bare_calls(n: usize) -> Result<f64> {
    let server =
        ScriptedModelServer::start_unrecorded(Script::of((0..n).map(think).collect())).await?;
    let client = ModelClient::new(route(&server))?;
    let tools = heartwood_agent::tools::specs();
    let mut messages = vec![
        ChatMessage::System {
            content: ConversationConfig::new(route(&server), ".".into(), ".".into()).system_prompt,
        },
        ChatMessage::User {
            content: "Check the data.".into(),
        },
    ];
    let start = Instant::now();
    for _ in 0..n {
        let reply = client
            .complete(&messages, &tools, &mut |_: &str| {})
            .await?;
        // Grow the history as the engine does: the reply's calls and one result per call.
        for call in &reply.tool_calls {
            messages.push(ChatMessage::Tool {
                tool_call_id: call.id.clone(),
                content: "Your thought has been logged.".into(),
            });
        }
        let results = messages.split_off(messages.len() - reply.tool_calls.len());
        messages.push(ChatMessage::Assistant {
            content: reply.content,
            tool_calls: reply.tool_calls,
        });
        messages.extend(results);
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Runs an `n`-step conversation; returns where its time went.
async fn conversation(dir: &Path, n: usize) -> Result<RunTiming> {
    let mut turns: Vec<Turn> = (0..n).map(think).collect();
    turns.push(Turn::calls(&[("finish", json!({"message": "done"}))]));
    let server = ScriptedModelServer::start_unrecorded(Script::of(turns)).await?;
    let project = dir.join("project");
    std::fs::create_dir_all(&project)?;
    let mut config = ConversationConfig::new(route(&server), project, dir.join("conversation"));
    config.policy = ConfirmationPolicy::NeverConfirm;
    config.max_iterations = u32::try_from(n + 10)?;
    config.condenser = None;
    let mut conversation = Conversation::open(config)?;
    conversation.send_message("Check the data.")?;
    let status = conversation.run().await?;
    if status != ExecutionStatus::Finished {
        bail!("the benchmark conversation stopped as {status:?}");
    }
    let timing = conversation.timing();
    conversation.close().await;
    Ok(timing)
}
