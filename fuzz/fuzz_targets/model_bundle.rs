//! A model bundle (ZIP64) as `heartwood model import BUNDLE.zip` reads it: inspecting any bytes
//! never panics, and a bundle that passes inspection unpacks its payload into a staging
//! directory with every CRC-32 and SHA-256 checked, or is refused; nothing is published.
#![no_main]

use heartwood_models::ModelStore;
use heartwood_models::transfer::{Transfer, TransferKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let path = dir.path().join("bundle.zip");
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    let Ok(inspected) = heartwood_models::bundle::inspect(&path) else {
        return;
    };
    assert_eq!(inspected.manifest_sha256.len(), 64);
    let store = ModelStore::new(dir.path());
    let transfer = Transfer::detached(TransferKind::Import, "fuzz");
    let _ = inspected.unpack(&store, &transfer);
});
