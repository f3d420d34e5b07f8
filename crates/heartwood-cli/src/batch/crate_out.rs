//! `heartwood batch collect --ro-crate`: each verified item exported as its own RO-Crate (by
//! `heartwood sessions export` in the item's project, so each export is recorded there), then
//! one crate over them with the results table as a dataset.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use heartwood_gateway::provenance::{BatchItem, write_batch_crate};

use super::collect::ResultRow;
use super::manifest::Manifest;
use super::record::BatchDir;

/// Writes `<batch dir>/ro-crate/` from the verified rows.
pub fn write(
    manifest: &Manifest,
    dir: &BatchDir,
    rows: &[ResultRow],
    projects: &[PathBuf],
) -> Result<()> {
    let destination = dir.root().join("ro-crate");
    if destination.exists() {
        bail!(
            "{} already exists; move it aside to write the batch's crate again",
            destination.display()
        );
    }
    let staging = dir.root().join(".ro-crate-items");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)?;
    let written = export_items(&staging, rows, projects).and_then(|items| {
        let items: Vec<BatchItem<'_>> = items
            .iter()
            .map(|(name, krate)| BatchItem { name, krate })
            .collect();
        let tables = [
            (
                "results.csv",
                std::fs::read(dir.root().join("results.csv"))?,
                "text/csv",
            ),
            (
                "results.json",
                std::fs::read(dir.root().join("results.json"))?,
                "application/json",
            ),
        ];
        Ok(write_batch_crate(
            &destination,
            &manifest.name,
            &items,
            &tables,
        )?)
    });
    let _ = std::fs::remove_dir_all(&staging);
    let report = written?;
    say!(
        "wrote the batch's RO-Crate to {} ({} files, {} bytes); check it with `heartwood crate verify {}`",
        report.path.display(),
        report.files,
        report.bytes,
        report.path.display()
    );
    Ok(())
}

fn export_items(
    staging: &Path,
    rows: &[ResultRow],
    projects: &[PathBuf],
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for (row, project) in rows.iter().zip(projects) {
        if !row.verified || row.accepted_stages.is_empty() {
            continue;
        }
        let krate = staging.join(&row.item);
        let target = krate.display().to_string();
        let exported = super::drive::heartwood_in(
            project,
            &[
                "sessions",
                "export",
                &row.session,
                "--format",
                "ro-crate",
                "--out",
                &target,
            ],
        )?;
        if !exported.status.success() {
            bail!(
                "item {}: its crate could not be written: {}",
                row.item,
                String::from_utf8_lossy(&exported.stderr).trim()
            );
        }
        out.push((row.item.clone(), krate));
    }
    Ok(out)
}
