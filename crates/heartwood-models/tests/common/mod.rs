//! Shared by the model tests: a store holding a small model published the way an import does.

#![allow(dead_code)]

use std::path::Path;

use heartwood_models::digest::describe_file;
use heartwood_models::manifest::ModelSource;
use heartwood_models::store::{Provenance, WayIn};
use heartwood_models::transfer::{Transfer, TransferKind};
use heartwood_models::{Manifest, ModelStore, StoredModel};

pub fn quiet() -> Transfer {
    Transfer::detached(TransferKind::Import, "test")
}

/// Publishes `files` (the first must end in .gguf) as model `name` in the store of `project`.
pub fn publish(project: &Path, name: &str, files: &[(&str, Vec<u8>)]) -> StoredModel {
    let store = ModelStore::new(project);
    let staging = store.stage(None).expect("stage");
    let mut entries = Vec::new();
    for (path, bytes) in files {
        let target = staging.file(path).expect("path");
        std::fs::write(&target, bytes).expect("write");
        entries.push(describe_file(&target, path, &quiet()).expect("describe"));
    }
    let manifest = Manifest::of_payload(
        name,
        ModelSource::Files,
        "apache-2.0",
        entries,
        512,
        Some("chatml".into()),
    )
    .expect("manifest");
    let digest = manifest.digest();
    store
        .publish(
            staging,
            &manifest,
            Provenance::now(WayIn::Import, false, &digest),
            &quiet(),
        )
        .expect("publish")
}

/// Pseudo-random bytes (a fixed seed, so runs are comparable).
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..len).map(|_| rng.u8(..)).collect()
}

/// Entries left in the store's staging directory.
pub fn staged(project: &Path) -> Vec<String> {
    std::fs::read_dir(project.join(".heartwood/models/.staging"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
