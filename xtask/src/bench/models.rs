//! `cargo xtask bench models`: the model store's verification against a plain SHA-256 of the
//! same file (target ≥ 0.8 of its throughput), and writing a bundle (which verifies while it
//! copies) against a plain sequential write of the same bytes (target ≥ 0.5). Both are
//! measured in this run, on this disk, with a 512 MiB payload.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use heartwood_models::bundle;
use heartwood_models::digest::describe_file;
use heartwood_models::manifest::{Manifest, ModelSource};
use heartwood_models::store::{ModelStore, Provenance, WayIn};
use heartwood_models::transfer::{Transfer, TransferKind};
use sha2::{Digest, Sha256};

use super::{best_of, report};

const PAYLOAD: usize = 512 << 20;
const RUNS: usize = 3;

pub fn run() -> Result<()> {
    // Under the build directory, not /tmp: the figures are about a real disk.
    let base = crate::workspace_root().join("target");
    std::fs::create_dir_all(&base)?;
    let dir = tempfile::tempdir_in(&base)?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project)?;
    let mut rng = fastrand::Rng::with_seed(20);
    let payload: Vec<u8> = (0..PAYLOAD).map(|_| rng.u8(..)).collect();
    let source = dir.path().join("weights.gguf");
    std::fs::write(&source, &payload)?;
    let model = publish(&project, &source)?;
    let mb = PAYLOAD as f64 / f64::from(1u32 << 20);
    println!("payload {mb:.0} MiB, best of {RUNS} runs each");

    let raw_hash = best_of(RUNS, || {
        let mut file = std::fs::File::open(model.model_file())?;
        let mut sha = Sha256::new();
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            sha.update(&buffer[..n]);
        }
        std::hint::black_box(sha.finalize());
        Ok(())
    })?;
    let store = ModelStore::new(&project);
    let verify = best_of(RUNS, || {
        store.verify(&model, &quiet())?;
        Ok(())
    })?;
    report(
        "store verification",
        mb / verify,
        " MiB/s",
        "plain SHA-256 of the file",
        mb / raw_hash,
        0.8,
    );

    let raw_out = dir.path().join("raw.bin");
    let raw_write = best_of(RUNS, || {
        let mut file = std::fs::File::create(&raw_out)?;
        for chunk in payload.chunks(1 << 20) {
            file.write_all(chunk)?;
        }
        file.sync_all()?;
        Ok(())
    })?;
    std::fs::remove_file(&raw_out)?;
    let bundle_out = dir.path().join("model.zip");
    let bundle_write = best_of(RUNS, || {
        bundle::export(&model, &bundle_out, &quiet())?;
        Ok(())
    })?;
    report(
        "bundle write (verifying)",
        mb / bundle_write,
        " MiB/s",
        "plain sequential write",
        mb / raw_write,
        0.5,
    );
    Ok(())
}

fn quiet() -> Transfer {
    Transfer::detached(TransferKind::Verify, "bench")
}

fn publish(project: &Path, source: &Path) -> Result<heartwood_models::StoredModel> {
    let store = ModelStore::new(project);
    let staging = store.stage(None)?;
    std::fs::copy(source, staging.file("weights.gguf")?)?;
    let entry = describe_file(source, "weights.gguf", &quiet())?;
    let manifest = Manifest::of_payload(
        "bench",
        ModelSource::Files,
        "unknown",
        vec![entry],
        2048,
        None,
    )?;
    let digest = manifest.digest();
    store
        .publish(
            staging,
            &manifest,
            Provenance::now(WayIn::Import, false, &digest),
            &quiet(),
        )
        .context("publish")
}
