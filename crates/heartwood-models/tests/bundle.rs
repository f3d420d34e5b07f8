//! Reproducible ZIP64 bundles: byte-identical re-export, a standard reader agrees with the
//! structure, a round trip through import, and a hostile-archive suite in which every archive
//! is refused and nothing is published.

mod common;

use std::path::{Path, PathBuf};

use heartwood_models::bundle;
use heartwood_models::store::{Provenance, WayIn};
use heartwood_models::{ModelError, ModelStore};

use common::{noise, publish, quiet, staged};

fn exported(dir: &Path) -> (tempfile::TempDir, PathBuf) {
    let project = tempfile::tempdir().expect("project");
    let model = publish(
        project.path(),
        "tiny",
        &[("a.gguf", noise(300_000, 1)), ("b.gguf", noise(70_000, 2))],
    );
    let out = dir.join("tiny.zip");
    bundle::export(&model, &out, &quiet()).expect("export");
    (project, out)
}

/// Imports `bundle` into a fresh project the way the gateway does; returns the project.
fn import(bundle: &Path) -> (tempfile::TempDir, Result<(), ModelError>) {
    let project = tempfile::tempdir().expect("project");
    let store = ModelStore::new(project.path());
    let result = bundle::inspect(bundle).and_then(|inspected| {
        let staging = inspected.unpack(&store, &quiet())?;
        let provenance = Provenance::now(WayIn::Bundle, false, &inspected.manifest_sha256);
        store
            .publish(staging, &inspected.manifest, provenance, &quiet())
            .map(|_| ())
    });
    (project, result)
}

#[test]
fn two_exports_are_byte_identical_and_a_standard_reader_agrees() {
    let dir = tempfile::tempdir().expect("dir");
    let (project, first) = exported(dir.path());
    let model = ModelStore::new(project.path())
        .get("tiny")
        .expect("get")
        .expect("stored");
    let second = dir.path().join("again.zip");
    // Later, from another process's point of view: the clock and file times must not matter.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    bundle::export(&model, &second, &quiet()).expect("export");
    assert_eq!(
        std::fs::read(&first).expect("read"),
        std::fs::read(&second).expect("read"),
        "re-export changed bytes"
    );

    let check = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             assert z.testzip() is None\n\
             assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())\n\
             print(','.join(z.namelist()))",
        ])
        .arg(&first)
        .output()
        .expect("python3");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).trim(),
        "heartwood-model.json,files/a.gguf,files/b.gguf"
    );

    let (imported, result) = import(&first);
    result.expect("a bundle imports");
    let copy = ModelStore::new(imported.path())
        .get("tiny")
        .expect("get")
        .expect("imported");
    assert_eq!(copy.manifest, model.manifest);
    assert_eq!(copy.validation().to_string(), "unvalidated");
    assert_eq!(
        std::fs::read(copy.file("a.gguf")).expect("read"),
        std::fs::read(model.file("a.gguf")).expect("read")
    );
}

#[test]
fn a_model_changed_after_publishing_is_not_exported() {
    let dir = tempfile::tempdir().expect("dir");
    let (project, _) = exported(dir.path());
    let model = ModelStore::new(project.path())
        .get("tiny")
        .expect("get")
        .expect("stored");
    let mut bytes = std::fs::read(model.file("b.gguf")).expect("read");
    bytes[10] ^= 1;
    std::fs::write(model.file("b.gguf"), bytes).expect("write");
    let out = dir.path().join("bad.zip");
    let err = bundle::export(&model, &out, &quiet()).expect_err("exported a damaged model");
    assert!(matches!(err, ModelError::Integrity(_)), "{err}");
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

fn rename(bytes: &mut [u8], from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    for at in find_all(bytes, from.as_bytes()) {
        bytes[at..at + from.len()].copy_from_slice(to.as_bytes());
    }
}

/// The central directory header of `name` (its name sits 46 bytes in).
fn central(bytes: &[u8], name: &str) -> usize {
    find_all(bytes, name.as_bytes())
        .into_iter()
        .map(|at| at - 46)
        .find(|&h| bytes[h..h + 4] == 0x0201_4b50u32.to_le_bytes())
        .expect("a central header")
}

#[test]
fn hostile_archives_are_refused_and_nothing_is_published() {
    let dir = tempfile::tempdir().expect("dir");
    let (_project, path) = exported(dir.path());
    let good = std::fs::read(&path).expect("read");

    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Mutation, &str)> = vec![
        (
            "path traversal",
            Box::new(|b| rename(b, "files/a.gguf", "../../a.gguf")),
            "unsafe path",
        ),
        (
            "absolute path",
            Box::new(|b| rename(b, "files/a.gguf", "/iles/a.gguf")),
            "unsafe path",
        ),
        (
            "symlink entry",
            Box::new(|b| {
                let h = central(b, "files/b.gguf");
                b[h + 38..h + 42].copy_from_slice(&(0o120_777u32 << 16).to_le_bytes());
            }),
            "link",
        ),
        (
            "duplicate names",
            Box::new(|b| rename(b, "files/b.gguf", "files/a.gguf")),
            "twice",
        ),
        (
            "size lie between headers",
            Box::new(|b| {
                // Both sizes in the central ZIP64 field grow by one; the local header disagrees.
                let h = central(b, "files/a.gguf");
                let extra = h + 46 + "files/a.gguf".len() + 4;
                for field in [extra, extra + 8] {
                    let size =
                        u64::from_le_bytes(b[field..field + 8].try_into().expect("8 bytes")) + 1;
                    b[field..field + 8].copy_from_slice(&size.to_le_bytes());
                }
            }),
            "size lie",
        ),
        (
            "digest mismatch with a matching CRC",
            Box::new(|b| {
                // One payload byte changed and both CRC-32 fields rewritten to match it: only
                // the manifest's SHA-256 can tell.
                let h = central(b, "files/b.gguf");
                let offset = u64::from_le_bytes(
                    b[h + 46 + 12 + 4 + 16..h + 46 + 12 + 4 + 24]
                        .try_into()
                        .expect("8 bytes"),
                ) as usize;
                let data = offset + 30 + 12 + 20;
                b[data + 5] ^= 0xff;
                let crc = crc32fast::hash(&b[data..data + 70_000]).to_le_bytes();
                b[offset + 14..offset + 18].copy_from_slice(&crc);
                b[h + 16..h + 20].copy_from_slice(&crc);
            }),
            "SHA-256",
        ),
        (
            "trailing bytes",
            Box::new(|b| b.extend_from_slice(b"appended")),
            "end-of-archive",
        ),
        (
            "truncated",
            Box::new(|b| b.truncate(b.len() / 2)),
            "not a valid",
        ),
    ];
    for (what, mutate, expected) in cases {
        let mut bytes = good.clone();
        mutate(&mut bytes);
        assert_ne!(bytes, good, "{what}: the mutation changed nothing");
        let hostile = dir.path().join("hostile.zip");
        std::fs::write(&hostile, &bytes).expect("write");
        let (project, result) = import(&hostile);
        let err = result.expect_err(what).to_string();
        assert!(err.contains(expected), "{what}: {err}");
        let store = ModelStore::new(project.path());
        assert!(store.list().expect("list").is_empty(), "{what}: published");
        assert!(
            staged(project.path()).is_empty(),
            "{what}: left {:?}",
            staged(project.path())
        );
        assert!(!project.path().join("a.gguf").exists() && !dir.path().join("a.gguf").exists());
    }
}
