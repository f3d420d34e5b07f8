//! Test doubles that speak the real protocols, for Heartwood's own tests (a dev-dependency only).
//!
//! [`ScriptedModelServer`] is an OpenAI-compatible chat-completions server on `127.0.0.1:0`:
//! real TCP, real HTTP, streaming (SSE) and non-streaming. It answers each request with the
//! next [`Turn`] of a [`Script`], can inject faults (HTTP errors, a stream cut mid-chunk,
//! malformed tool arguments, slow chunks), and records every request body so a test can assert
//! what the model was sent. [`sessions`] makes real recorded sessions for interface tests;
//! [`load`] puts a running server under load over real TCP; [`child`] runs a test again in a
//! child process with environment variables set. The same server also plays ChatGPT's sign-in
//! service and Responses endpoint ([`chatgpt`]).

pub mod chatgpt;
pub mod child;
pub mod hub;
pub mod load;
pub mod postgres;
mod script;
mod server;
pub mod sessions;

pub use script::{Fault, Script, ScriptedCall, ScriptedUsage, Turn};
pub use server::{ScriptedModelServer, event_stream_body};

/// Copies the folder `from` into `to`, recursively (a fixture project into a scratch one).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Every regular file under `dir`, at any depth (for tests that search what was written).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}

/// The pids (in this process's namespace) of live processes whose command line, its arguments
/// joined by NUL, contains `pattern`: how a test finds a program a sandboxed command started,
/// whose own pid is its namespace's. Zombies (killed, not yet reaped) do not count.
pub fn processes_running(pattern: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            let dir = std::path::Path::new("/proc").join(pid.to_string());
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            let zombie = std::fs::read_to_string(dir.join("status")).is_ok_and(|s| {
                s.lines()
                    .any(|l| l.starts_with("State:") && l.contains('Z'))
            });
            !zombie && String::from_utf8_lossy(&cmdline).contains(pattern)
        })
        .collect()
}
