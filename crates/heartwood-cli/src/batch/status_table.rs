//! `heartwood batch status`: one row per item (state in words, stage, last check, wall time,
//! usage), as heartwood-batch reads where each stands now.

use std::process::ExitCode;

use anyhow::Result;
use heartwood_batch::status::{Row, counts_line, gather};
use heartwood_batch::{Manifest, Phase, slurm};

/// Prints the status table (or JSON).
pub fn print(manifest: &Manifest, json: bool) -> Result<ExitCode> {
    let status = gather(manifest)?;
    if json {
        say!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "batch {} ({} items) in {}",
        status.batch,
        status.items.len(),
        status.dir
    );
    say!("{}", counts_line(&status.counts));
    if let Some(e) = &status.scheduler_error {
        say!("scheduler: {e}");
    }
    let width = status
        .items
        .iter()
        .map(|r| r.item.len())
        .max()
        .unwrap_or(4)
        .max(4);
    say!(
        "\n{:<width$}  {:<11}  {:<12}  {:<28}  {:>7}  USAGE",
        "ITEM",
        "STATE",
        "STAGE",
        "LAST CHECK",
        "WALL"
    );
    for r in &status.items {
        let state = match &r.scheduler {
            Some(t) if slurm::is_live(&t.state) && r.phase != Phase::Running => {
                format!("{} ({})", r.phase.as_str(), t.state.to_lowercase())
            }
            _ => r.phase.as_str().to_owned(),
        };
        say!(
            "{:<width$}  {:<11}  {:<12}  {:<28}  {:>7}  {}",
            r.item,
            state,
            r.stage.as_deref().unwrap_or("-"),
            clip(r.last_check.as_deref().unwrap_or("-"), 28),
            wall(r.wall_seconds),
            r.usage.as_deref().unwrap_or("-")
        );
    }
    let attention: Vec<&Row> = status
        .items
        .iter()
        .filter(|r| matches!(r.phase, Phase::Waiting | Phase::Failed | Phase::Interrupted))
        .collect();
    if !attention.is_empty() {
        say!();
    }
    for r in attention {
        say!("{} ({}): {}", r.item, r.phase.as_str(), r.detail);
        if let Some(next) = &r.next {
            say!("    {next}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn wall(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else if seconds < 3600.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}
