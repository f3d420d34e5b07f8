//! The runtime launcher: llama-cpp-python's OpenAI-compatible server, installed from PyPI into
//! a virtual environment Heartwood makes (Debian 12 packages no llama.cpp server), started for
//! one stored model on a loopback port, with its log in `.heartwood/models/runtime.log` and its
//! process in `.heartwood/models/runtime.json`. The runtime gets no credentials: its
//! environment is cleared to what Python needs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::ModelError;
use crate::error::IoContext;
use crate::private::write_synced;
use crate::store::{ModelStore, StoredModel};

/// The pinned runtime package (built from source by pip: PyPI carries no wheel for it).
pub const PACKAGE: &str = "llama-cpp-python[server]==0.3.36";

const STATE: &str = "runtime.json";
const LOG: &str = "runtime.log";

/// Where the runtime's Python environment is.
#[derive(Debug, Clone)]
pub struct RuntimeInstall {
    venv: PathBuf,
}

impl RuntimeInstall {
    /// `$HEARTWOOD_MODELS_VENV`, else `models-venv` in this user's Heartwood cache.
    pub fn default_location() -> PathBuf {
        if let Some(venv) = std::env::var_os("HEARTWOOD_MODELS_VENV") {
            return PathBuf::from(venv);
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        cache.join("heartwood").join("models-venv")
    }

    /// The installed runtime, or what to run to install it.
    pub fn find() -> Result<RuntimeInstall, ModelError> {
        let venv = RuntimeInstall::default_location();
        let install = RuntimeInstall { venv };
        let ok = Command::new(install.python())
            .args(["-c", "import llama_cpp.server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            Ok(install)
        } else {
            Err(ModelError::Runtime(format!(
                "the local model runtime is not installed in {}; run heartwood model runtime \
                 install (it builds llama.cpp, which takes several minutes)",
                install.venv.display()
            )))
        }
    }

    /// Makes the environment with `python` and installs [`PACKAGE`]; pip's output goes to this
    /// process's.
    pub fn install(python: &Path) -> Result<RuntimeInstall, ModelError> {
        let venv = RuntimeInstall::default_location();
        let run = |command: &mut Command| -> Result<(), ModelError> {
            let status = command
                .status()
                .map_err(|e| ModelError::Runtime(format!("cannot run {command:?}: {e}")))?;
            if status.success() {
                Ok(())
            } else {
                Err(ModelError::Runtime(format!(
                    "{command:?} failed ({status})"
                )))
            }
        };
        run(Command::new(python).arg("-m").arg("venv").arg(&venv))?;
        run(Command::new(venv.join("bin").join("pip"))
            .args(["install", "--disable-pip-version-check", PACKAGE])
            // A portable build: the wheel may be cached and used on another CPU.
            .env(
                "CMAKE_ARGS",
                "-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF",
            )
            .env("CMAKE_BUILD_PARALLEL_LEVEL", parallelism()))?;
        RuntimeInstall::find()
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }
}

fn parallelism() -> String {
    std::thread::available_parallelism()
        .map_or(2, usize::from)
        .to_string()
}

/// A running runtime, as `runtime.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeState {
    /// The server's process id.
    pub pid: u32,
    /// Its loopback port.
    pub port: u16,
    /// The stored model it serves (also the model name it answers to).
    pub model: String,
    /// That model's manifest SHA-256.
    pub manifest_sha256: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// Its log file.
    pub log: PathBuf,
}

impl RuntimeState {
    /// Its OpenAI-compatible base URL.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// The runtime of this project's store, if its process is alive.
pub fn status(store: &ModelStore) -> Option<RuntimeState> {
    let bytes = std::fs::read(store.root().join(STATE)).ok()?;
    let state: RuntimeState = serde_json::from_slice(&bytes).ok()?;
    alive(state.pid).then_some(state)
}

/// Is `pid` a live llama-cpp-python server (not a reused pid, not a zombie)?
fn alive(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| cmdline.windows(16).any(|w| w == b"llama_cpp.server"))
}

/// Does the server on `port` answer and list `model`?
pub fn answers(port: u16, model: &str) -> bool {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build();
    let Ok(client) = client else { return false };
    let Ok(response) = client
        .get(format!("http://127.0.0.1:{port}/v1/models"))
        .send()
    else {
        return false;
    };
    response
        .json::<serde_json::Value>()
        .ok()
        .and_then(|v| v.get("data")?.as_array().cloned())
        .is_some_and(|data| {
            data.iter()
                .any(|m| m.get("id").and_then(|i| i.as_str()) == Some(model))
        })
}

/// Starts the runtime for `model` on `port` and waits up to `ready_within` for it to answer.
/// A runtime already serving that model on that port is returned as it is; one serving
/// something else must be stopped first.
pub fn start(
    store: &ModelStore,
    model: &StoredModel,
    port: u16,
    install: &RuntimeInstall,
    ready_within: Duration,
) -> Result<RuntimeState, ModelError> {
    let name = &model.manifest.name;
    if let Some(running) = status(store) {
        if &running.model == name && running.port == port && answers(port, name) {
            return Ok(running);
        }
        return Err(ModelError::Runtime(format!(
            "the runtime is already serving {} on port {}; stop it first (heartwood model stop)",
            running.model, running.port
        )));
    }
    if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", port)) {
        return Err(ModelError::Runtime(format!(
            "port {port} is taken ({e}); connect the model again to choose another \
             (heartwood model use {name})"
        )));
    }
    crate::private::private_dirs(store.root())?;
    let log = store.root().join(LOG);
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .ctx("open", &log)?;
    let mut command = Command::new(install.python());
    command
        .args(["-m", "llama_cpp.server", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--model")
        .arg(model.model_file())
        .args(["--model_alias", name, "--n_ctx"])
        .arg(model.manifest.runtime.context_length.to_string());
    if let Some(format) = &model.manifest.runtime.chat_format {
        command.args(["--chat_format", format]);
    }
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().ctx("open", &log)?)
        .stderr(log_file)
        .current_dir(store.root());
    // Its own process group: a Ctrl-C in the terminal that started it does not stop it.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(|e| {
        ModelError::Runtime(format!("cannot start {}: {e}", install.python().display()))
    })?;
    let state = RuntimeState {
        pid: child.id(),
        port,
        model: name.clone(),
        manifest_sha256: model.manifest.digest(),
        started_at: jiff::Timestamp::now().to_string(),
        log: log.clone(),
    };
    write_synced(
        &store.root().join(STATE),
        &serde_json::to_vec_pretty(&state).expect("plain JSON"),
    )?;
    let deadline = Instant::now() + ready_within;
    loop {
        if let Ok(Some(exit)) = child.try_wait() {
            let _ = std::fs::remove_file(store.root().join(STATE));
            return Err(ModelError::Runtime(format!(
                "the runtime exited ({exit}) before it answered; its log {} ends with:\n{}",
                log.display(),
                log_tail(&log)
            )));
        }
        if answers(port, name) {
            return Ok(state);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(store.root().join(STATE));
            return Err(ModelError::Runtime(format!(
                "the runtime did not answer within {} s; it was stopped. Its log {} ends with:\n{}",
                ready_within.as_secs(),
                log.display(),
                log_tail(&log)
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Stops this project's runtime (TERM, then KILL after ten seconds); false when none ran.
pub fn stop(store: &ModelStore) -> Result<bool, ModelError> {
    let state_path = store.root().join(STATE);
    let Some(state) = status(store) else {
        let _ = std::fs::remove_file(&state_path);
        return Ok(false);
    };
    let pid = rustix::process::Pid::from_raw(state.pid as i32)
        .ok_or_else(|| ModelError::Runtime(format!("{} is not a process id", state.pid)))?;
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(state.pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive(state.pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    std::fs::remove_file(&state_path).ctx("remove", &state_path)?;
    Ok(true)
}

/// The last lines of a log, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
