//! Running the real `heartwood` binary in a project directory, shared by the CLI tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

/// Runs `heartwood ARGS` with `project` as the current directory.
pub fn heartwood(project: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(args)
        .current_dir(project)
        .output()
        .expect("run heartwood")
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
