//! `cargo xtask bench review`: a review batch of three reviewers on a slow model, allowed one
//! after another (no qualification, or consent refused) and admitted to run at once. The model
//! is the scripted server with a fixed delay per streamed chunk of each reviewer's answer; the
//! reference is the same batch run sequentially in the same process, with the same delays.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use heartwood_agent::conversation::{
    ConfirmationPolicy, Conversation, ConversationConfig, ExecutionStatus, SpecialistConfig,
};
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;

const REVIEWERS: usize = 3;
/// Per streamed chunk of each reviewer's answer.
const DELAY_MS: u64 = 100;
const ROUNDS: usize = 3;

pub fn run() -> Result<()> {
    let dir = crate::workspace_root().join("target/bench-review");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let (mut sequential, mut parallel) = (Vec::new(), Vec::new());
    // Interleaved, so a busy moment of the machine falls on both alike.
    for round in 0..ROUNDS {
        sequential.push(runtime.block_on(batch(&dir.join(format!("seq-{round}")), None))?);
        parallel.push(runtime.block_on(batch(&dir.join(format!("par-{round}")), Some(REVIEWERS)))?);
    }
    let mean = |v: &[Duration]| v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64;
    let (s, p) = (mean(&sequential), mean(&parallel));
    let speedup = s / p;
    println!(
        "{:<34} {:>10.1} ms   one after another (not qualified): {:.1} ms   {:.2}× faster   goal ≥ 2.5×  {}",
        "review of 3 reviewers, at once",
        p * 1e3,
        s * 1e3,
        speedup,
        if speedup >= 2.5 { "ok" } else { "MISSED" }
    );
    Ok(())
}

/// Wall time from the allow to the batch's end: every reviewer answered, the parent finished.
async fn batch(dir: &Path, at_once: Option<usize>) -> Result<Duration> {
    let ask = |n: usize| {
        (
            "task",
            json!({"subagent_type": "reviewer", "description": format!("review {n}"),
                   "prompt": format!("file {n}: please review")}),
        )
    };
    let asks: Vec<(&str, serde_json::Value)> = (1..=REVIEWERS).map(ask).collect();
    let mut turns = vec![Turn::calls(&asks)];
    turns.extend((0..REVIEWERS).map(|_| {
        Turn::text("the plan holds; the held-out split is group-disjoint")
            .with_fault(Fault::ChunkDelayMs(DELAY_MS))
    }));
    turns.push(Turn::calls(&[("finish", json!({"message": "reviewed"}))]));
    let server = ScriptedModelServer::start_unrecorded(Script::of(turns)).await?;
    let project = dir.join("project");
    std::fs::create_dir_all(&project)?;
    let mut config = ConversationConfig::new(
        super::agent::route(&server),
        project,
        dir.join("conversation"),
    );
    config.policy = ConfirmationPolicy::AlwaysConfirm;
    config.condenser = None;
    config.specialists = vec![SpecialistConfig {
        role: "reviewer".into(),
        description: "reviews".into(),
        system_prompt: "You review.".into(),
        max_iterations: 2,
        max_tokens: 100_000,
        result_schema: None,
    }];
    let mut conversation = Conversation::open(config)?;
    conversation.send_message("Have the files reviewed.")?;
    if conversation.run().await? != ExecutionStatus::WaitingForConfirmation {
        bail!("the review batch was not proposed");
    }
    let started = Instant::now();
    match at_once {
        Some(n) => conversation.approve_pending_in_parallel(n)?,
        None => conversation.approve_pending()?,
    }
    let status = conversation.run().await?;
    let took = started.elapsed();
    if status != ExecutionStatus::Finished {
        bail!("the review stopped as {status:?}");
    }
    conversation.close().await;
    Ok(took)
}
