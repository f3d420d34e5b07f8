//! A signed source's skill bundle as the unpacker reads it: any bytes are refused or unpacked
//! within the limits into a new directory under the one given, never beside or above it.
#![no_main]

use heartwood_skills::tree::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(parent) = tempfile::tempdir() else {
        return;
    };
    let limits = Limits::default();
    if heartwood_skills::bundle::unpack(bytes, parent.path(), &limits).is_ok() {
        let outside = parent.path().parent().map(|p| p.to_owned());
        for entry in walk(parent.path()) {
            assert!(entry.starts_with(parent.path()), "{entry:?} is outside {outside:?}");
        }
    }
});

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}
