//! `heartwood batch collect`: every item's session verified and its accepted evidence read
//! again (heartwood-batch does it); what was written, and which items were not summarised.

use std::process::ExitCode;

use anyhow::Result;
use heartwood_batch::Manifest;
use heartwood_batch::collect::collect as gather;

/// Verifies and summarises every item (and, with `ro_crate`, writes the batch's crate); exits 1
/// when any item could not be summarised.
pub fn collect(manifest: &Manifest, ro_crate: bool) -> Result<ExitCode> {
    let collected = gather(manifest, |n, of| eprint!("\rverifying {n}/{of}"))?;
    eprintln!();
    if ro_crate {
        let report = heartwood_batch::export::write(manifest, &collected)?;
        say!(
            "wrote the batch's RO-Crate to {} ({} files, {} bytes); check it with `heartwood crate verify {}`",
            report.path.display(),
            report.files,
            report.bytes,
            report.path.display()
        );
    }
    let rows = &collected.rows;
    let refused: Vec<_> = rows.iter().filter(|r| !r.verified).collect();
    say!(
        "{} of {} items verified and summarised: {}, {}, {}",
        rows.len() - refused.len(),
        rows.len(),
        collected.csv.display(),
        collected.json.display(),
        collected.report.display()
    );
    for r in &refused {
        say!(
            "  {}: not summarised: {}",
            r.item,
            r.refused.as_deref().unwrap_or("")
        );
    }
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
