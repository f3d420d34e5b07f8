//! The batch's RO-Crate: each verified item exported as its own crate by its project's
//! session record (so each export is recorded in the item's session), then one crate over
//! them with the results table as a dataset.

use std::path::{Path, PathBuf};

use heartwood_events::{ExportFormat, ExportRequest};
use heartwood_gateway::{BatchItem, CrateReport, write_batch_crate};
use heartwood_gateway::{ProjectContext, SessionAdmin};

use crate::collect::Collected;
use crate::error::{BatchError, Result};
use crate::manifest::Manifest;
use crate::record::BatchDir;

/// Writes `<batch dir>/ro-crate/` from the verified rows of `collected`.
pub fn write(manifest: &Manifest, collected: &Collected) -> Result<CrateReport> {
    let dir = BatchDir::of(manifest);
    let destination = dir.root().join("ro-crate");
    if destination.exists() {
        return Err(BatchError::Crate(format!(
            "{} already exists; move it aside to write the batch's crate again",
            destination.display()
        )));
    }
    let staging = dir.root().join(".ro-crate-items");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(BatchError::io("create", &staging))?;
    let written = export_items(&staging, collected).and_then(|items| {
        let items: Vec<BatchItem<'_>> = items
            .iter()
            .map(|(name, krate)| BatchItem { name, krate })
            .collect();
        let read = |path: &Path| std::fs::read(path).map_err(BatchError::io("read", path));
        let tables = [
            ("results.csv", read(&collected.csv)?, "text/csv"),
            ("results.json", read(&collected.json)?, "application/json"),
        ];
        write_batch_crate(&destination, &manifest.name, &items, &tables)
            .map_err(|e| BatchError::Crate(e.to_string()))
    });
    let _ = std::fs::remove_dir_all(&staging);
    written
}

fn export_items(staging: &Path, collected: &Collected) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for (row, project) in collected.rows.iter().zip(&collected.projects) {
        if !row.verified || row.accepted_stages.is_empty() {
            continue;
        }
        let krate = staging.join(&row.item);
        let context = ProjectContext::at(project).map_err(|e| BatchError::Gateway {
            what: format!("{} cannot be a project", project.display()),
            source: Box::new(e.into()),
        })?;
        let request = ExportRequest {
            format: ExportFormat::RoCrate,
            destination: Some(krate.display().to_string()),
            ..ExportRequest::default()
        };
        SessionAdmin::new(&context)
            .export_as(&row.session, &request)
            .map_err(BatchError::gateway(format!(
                "item {}: its crate could not be written",
                row.item
            )))?;
        out.push((row.item.clone(), krate));
    }
    Ok(out)
}
