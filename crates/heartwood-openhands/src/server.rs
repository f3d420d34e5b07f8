//! One OpenHands agent server process, owned: started on a loopback port with a session key of
//! its own, in its own process group, its output in a log beside its state; ready when its
//! `/ready` answers; killed with everything it started when dropped.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::{Installation, OpenHandsError};

/// How long a server may take to become ready (it imports a large Python package tree: about
/// 20 seconds on a busy two-core machine).
const READY_WITHIN: Duration = Duration::from_secs(180);

/// Starts the agent server as `python -m openhands.agent_server` would, with the adjustments
/// Heartwood needs (the script says which and why).
const LAUNCH: &str = include_str!("launch.py");

/// The variable that gives the server the specialists its `task` tool may start (see
/// [`specialists_json`]); no other sub-agent is registered.
pub const SPECIALISTS_VAR: &str = "HEARTWOOD_SPECIALISTS";

/// One specialist a `task` call may start: advisory and tool-free, on the agent's model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SpecialistRole {
    /// The role the `task` tool names (`subagent_type`).
    pub role: String,
    /// What it does, shown to the agent.
    pub description: String,
    /// Its instructions.
    pub system_prompt: String,
    /// Most model calls per task.
    pub max_iterations: u32,
}

/// The value of [`SPECIALISTS_VAR`] for `roles`.
pub fn specialists_json(roles: &[SpecialistRole]) -> String {
    serde_json::to_string(roles).unwrap_or_else(|_| "[]".to_owned())
}

/// A running agent server.
#[derive(Debug)]
pub struct AgentServer {
    child: Child,
    addr: SocketAddr,
    key: String,
    log: PathBuf,
    conversations: PathBuf,
    tmux_dir: PathBuf,
}

impl AgentServer {
    /// Starts a server whose conversations are stored under `state_dir/conversations`, with
    /// `env` as its whole environment (nothing else of this process's is inherited), and waits
    /// until it is ready. The variables named in `hidden` (the model key, under the name the
    /// model library reads) are in the server's environment but stripped from the terminal
    /// tool's, along with OpenHands' own session key.
    pub async fn start(
        installation: &Installation,
        state_dir: &Path,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        hidden: &[String],
    ) -> Result<AgentServer, OpenHandsError> {
        let server = |e: std::io::Error| OpenHandsError::Server(e.to_string());
        std::fs::create_dir_all(state_dir).map_err(server)?;
        let log = state_dir.join("agent-server.log");
        let output = std::fs::File::create(&log).map_err(server)?;
        let conversations = state_dir.join("conversations");
        // A server (or a command it started) left by a process that was killed still owns the
        // conversation; it goes before another starts on the same store.
        reap(&conversations);
        let port = free_port().map_err(server)?;
        let key = session_key()?;
        let tmux_dir = tmux_dir(state_dir).map_err(server)?;
        let child = Command::new(installation.python())
            .args(["-c", LAUNCH, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .current_dir(state_dir)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            // The key is for this process alone; it never reaches a file.
            .env("SESSION_API_KEY", &key)
            .env("OH_CONVERSATIONS_PATH", &conversations)
            .env("HEARTWOOD_TOOL_HIDDEN", hidden.join(","))
            .env("TMUX_TMPDIR", &tmux_dir)
            .stdin(Stdio::null())
            .stdout(output.try_clone().map_err(server)?)
            .stderr(output)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                OpenHandsError::Server(format!(
                    "cannot start {}: {e}",
                    installation.python().display()
                ))
            })?;
        let mut server = AgentServer {
            child,
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            key,
            log,
            conversations,
            tmux_dir,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn wait_ready(&mut self) -> Result<(), OpenHandsError> {
        let client = reqwest::Client::new();
        let url = format!("{}/ready", self.base_url());
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(OpenHandsError::Server(format!(
                    "the OpenHands agent server exited ({status}) before it was ready; its \
                     log: {}{}",
                    self.log.display(),
                    log_tail(&self.log)
                )));
            }
            let ready = client
                .get(&url)
                .header("X-Session-API-Key", &self.key)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(OpenHandsError::Server(format!(
                    "the OpenHands agent server was not ready within {}s; its log: {}",
                    READY_WITHIN.as_secs(),
                    self.log.display()
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The key every request carries.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the server writes its output.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id (the leader of its process group).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Stops the server and everything it started, including what left its process group
    /// (a terminal multiplexer's server does).
    pub async fn stop(mut self) {
        kill_group(&self.child);
        let _ = self.child.wait().await;
        reap(&self.conversations);
    }
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        kill_group(&self.child);
        reap(&self.conversations);
        // The multiplexer went with the reap; its socket is all the directory held.
        let _ = std::fs::remove_dir_all(&self.tmux_dir);
    }
}

/// Kills `child`'s process group: the server and the shells its tools started.
fn kill_group(child: &Child) {
    if let Some(group) = child
        .id()
        .and_then(|pid| rustix::process::Pid::from_raw(pid.cast_signed()))
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// Kills every process serving (or started by a server of) the conversation store
/// `conversations`. Best effort: a process that cannot be read is not one of ours to kill.
pub fn reap(conversations: &Path) {
    for pid in processes_of(conversations) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid.cast_signed()) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// The processes serving the conversation store `conversations`, or started by a server of
/// it: they carry its path in their environment.
pub fn processes_of(conversations: &Path) -> Vec<u32> {
    let wanted = format!("OH_CONVERSATIONS_PATH={}", conversations.display());
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    processes
        .flatten()
        .filter_map(|process| {
            let pid: u32 = process.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(process.path().join("environ")).ok()?;
            let ours = environ
                .split(|&b| b == 0)
                .any(|var| var == wanted.as_bytes());
            (ours && pid != own).then_some(pid)
        })
        .collect()
}

/// Where this server's terminal multiplexer keeps its socket: a private directory of this
/// user's named after the conversation store. OpenHands names its tmux socket alike for every
/// server, so without this every project's terminals shared one tmux server, which carried
/// the environment of whichever server started it and which a reap of that project's
/// processes took down under the others' running commands.
fn tmux_dir(state_dir: &Path) -> std::io::Result<PathBuf> {
    use sha2::Digest;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let state = std::fs::canonicalize(state_dir)?;
    let digest = sha2::Sha256::digest(state.as_os_str().as_encoded_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = base.join(format!("heartwood-tmux-{name}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    let owner = std::fs::metadata(&state)?.uid();
    if !meta.is_dir() || meta.uid() != owner || meta.permissions().mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a private directory of this user's; remove it and try again",
            dir.display()
        )));
    }
    Ok(dir)
}

/// A port nobody listens on now. Another process could take it before the server binds it;
/// the server then exits at once and [`AgentServer::start`] says so.
fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// 256 random bits, in hex: the key a server (or a relay it talks to) answers only to.
pub fn session_key() -> Result<String, OpenHandsError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| OpenHandsError::Server(format!("cannot draw a session key: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The last lines of a log, to say why a server died.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(
            "\n{}",
            lines.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }
}
