//! What the example-project tests share: a fresh copy of a public example project
//! (`fixtures/projects/<name>`) to edit and check.

use std::path::{Path, PathBuf};

/// A temporary copy of the example project `name`.
pub fn example_project(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/projects")
        .join(name);
    copy(&fixture, dir.path());
    dir
}

fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("fixture") {
        let entry = entry.expect("entry");
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
