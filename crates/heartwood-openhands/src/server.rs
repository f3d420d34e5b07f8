//! One OpenHands agent server process, owned: started in Heartwood's sandbox (its terminal and
//! file editor run in the server, so confining the server confines them), with a session key
//! of its own, in its own process group, its output in a log beside its state; reached through
//! a Unix socket ([`Rendezvous`]), since its loopback port is in the sandbox's own network
//! namespace; ready when its `/ready` answers; killed with everything it started when dropped.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use heartwood_sandbox::{Sandbox, SandboxLevel};
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

/// The socket Heartwood reaches the server's API through, in the [`Rendezvous`] directory.
const SERVER_SOCKET: &str = "server.sock";

/// The socket the model relay listens on, in the [`Rendezvous`] directory.
const MODEL_SOCKET: &str = "model.sock";

/// The file the server's secrets are handed over in, in the [`Rendezvous`] directory; the
/// launcher removes it as it starts.
const SECRETS_FILE: &str = "secrets.json";

/// The [`Rendezvous`] folder's name in the session's engine folder.
const MEETING_DIR: &str = "meeting";

/// Where a server and Heartwood meet: Unix sockets in a private folder of the session's
/// (`meeting/` beside the conversation store), bound into the server's sandbox. Heartwood
/// reaches the server's API through one; the server reaches the model relay through the other,
/// at a loopback port inside its own network namespace (the launcher forwards both). Sockets
/// are named through `/proc/self/fd/<the folder>/…` on both sides, so a socket's address stays
/// within its 108 bytes however deep the project lies; the folder is inside the project's
/// `.heartwood/`, so what a confined command leaves there is not outside the project.
#[derive(Debug, Clone)]
pub struct Rendezvous {
    dir: PathBuf,
    /// The folder, held open while a relay or server may name a socket through it.
    handle: Arc<std::fs::File>,
    model_port: u16,
}

impl Rendezvous {
    /// The meeting place of the server keeping its state in `state_dir`, with stale sockets
    /// of an earlier server removed.
    pub fn prepare(state_dir: &Path) -> Result<Rendezvous, OpenHandsError> {
        use std::os::unix::fs::PermissionsExt;
        let server = |e: std::io::Error| OpenHandsError::Server(e.to_string());
        let dir = state_dir.join(MEETING_DIR);
        std::fs::create_dir_all(&dir).map_err(server)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(server)?;
        for socket in [SERVER_SOCKET, MODEL_SOCKET] {
            match std::fs::remove_file(dir.join(socket)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(server(e)),
                _ => {}
            }
        }
        Ok(Rendezvous {
            handle: Arc::new(std::fs::File::open(&dir).map_err(server)?),
            dir,
            model_port: free_port().map_err(server)?,
        })
    }

    /// `name` in the folder, by a path short enough for a socket's address.
    fn short(&self, name: &str) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}/{name}", self.handle.as_raw_fd()))
    }

    /// Where the model relay listens (valid while this value lives).
    pub fn model_socket(&self) -> PathBuf {
        self.short(MODEL_SOCKET)
    }

    /// The base URL the server's model library is given: the relay, as the launcher forwards
    /// it to the server's loopback.
    pub fn model_base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.model_port)
    }

    fn server_socket(&self) -> PathBuf {
        self.short(SERVER_SOCKET)
    }

    fn secrets_file(&self) -> PathBuf {
        self.dir.join(SECRETS_FILE)
    }

    /// Writes `secrets` for the launcher to take (a private file in a private directory).
    fn hand_over(&self, secrets: &[(String, String)]) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.secrets_file();
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let map: serde_json::Map<String, serde_json::Value> = secrets
            .iter()
            .map(|(name, value)| (name.clone(), serde_json::Value::from(value.as_str())))
            .collect();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(serde_json::Value::Object(map).to_string().as_bytes())
    }
}

/// How a server is confined: the sandbox around the project it works in, and the level it
/// runs at. Every set the server runs was allowed by a person (the engine confirms every set),
/// so that is project-write where the machine confines ([`heartwood_sandbox::level_for`]), and
/// unsandboxed where it cannot.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The view around the project (with the data mounts the tools reach).
    pub sandbox: Sandbox,
    /// The level the server and everything it starts run at.
    pub level: SandboxLevel,
}

/// A running agent server.
#[derive(Debug)]
pub struct AgentServer {
    child: Child,
    socket: PathBuf,
    /// The meeting folder, held open: `socket` names it through `/proc/self/fd`.
    meeting: Arc<std::fs::File>,
    key: String,
    log: PathBuf,
    conversations: PathBuf,
}

impl AgentServer {
    /// Starts a server whose conversations are stored under `state_dir/conversations`, confined
    /// as `confinement` says, met at `rendezvous`, with `env` as its whole environment (nothing
    /// else of this process's is inherited), and waits until it is ready. `secrets` (the
    /// relay's key, under the name the model library reads) join the server's environment
    /// through a file the launcher reads and removes before anything runs, never through the
    /// environment the sandbox's first process is started with (every process in the sandbox
    /// could read that one), and are stripped from the terminal tool's, along with OpenHands'
    /// own session key.
    pub async fn start(
        installation: &Installation,
        state_dir: &Path,
        rendezvous: &Rendezvous,
        confinement: Confinement,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        secrets: &[(String, String)],
    ) -> Result<AgentServer, OpenHandsError> {
        let server = |e: std::io::Error| OpenHandsError::Server(e.to_string());
        let log = state_dir.join("agent-server.log");
        let conversations = state_dir.join("conversations");
        // The server's own files (settings, terminal events) go where its relative defaults
        // put them, under its working directory: here, never the project.
        let working = state_dir.join("server");
        let port = free_port().map_err(server)?;
        let key = session_key()?;
        let mut secrets = secrets.to_vec();
        // The key is for this process alone; it never reaches a file but this one, which the
        // launcher removes.
        secrets.push(("SESSION_API_KEY".to_owned(), key.clone()));
        let hidden: Vec<&str> = secrets.iter().map(|(name, _)| name.as_str()).collect();
        let hidden = hidden.join(",");
        let python = installation.python();
        let program = python
            .to_str()
            .ok_or_else(|| OpenHandsError::Server(format!("{} is not UTF-8", python.display())))?
            .to_owned();
        let args: Vec<String> = ["-I", "-c", LAUNCH, "--host", "127.0.0.1", "--port"]
            .into_iter()
            .map(str::to_owned)
            .chain([port.to_string()])
            .collect();
        let level = confinement.level;
        // The server reads its interpreter and writes its store, its working files and the
        // meeting place's sockets; the rest of Heartwood's state stays out of its view.
        let sandbox = confinement
            .sandbox
            .reaching(installation.directories().into_iter().map(|d| (d, false)))
            .reaching([
                (conversations.clone(), true),
                (working.clone(), true),
                (rendezvous.dir.clone(), true),
            ]);
        // Files, `/proc` and the project's directories (the view's nested state) are read and
        // written here: off the runtime, in one go.
        let (state, meeting) = (state_dir.to_owned(), rendezvous.clone());
        let (stored, worked, logged) = (conversations.clone(), working.clone(), log.clone());
        let (output, tmux_dir, confined) = tokio::task::spawn_blocking(move || {
            let output = std::fs::File::create(&logged).map_err(server)?;
            fresh_state(&stored, &worked).map_err(server)?;
            meeting.hand_over(&secrets).map_err(server)?;
            // A confined server's multiplexer keeps its socket in the sandbox's own `/tmp`.
            let tmux_dir = if level == SandboxLevel::Unsandboxed {
                tmux_dir(&state).map_err(server)?
            } else {
                PathBuf::from("/tmp")
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let confined = sandbox.wrap(level, &program, &args).map_err(|e| {
                OpenHandsError::Server(format!("cannot confine the agent server: {e}"))
            })?;
            Ok::<_, OpenHandsError>((output, tmux_dir, confined))
        })
        .await
        .map_err(|e| OpenHandsError::Server(e.to_string()))??;
        let child = Command::new(&confined.program)
            .args(&confined.args)
            .current_dir(&working)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("OH_CONVERSATIONS_PATH", &conversations)
            .env("HEARTWOOD_TOOL_HIDDEN", hidden)
            .env("HEARTWOOD_WORKING_DIR", &working)
            .env("HEARTWOOD_MEETING", &rendezvous.dir)
            .env("HEARTWOOD_MODEL_PORT", rendezvous.model_port.to_string())
            .env("TMUX_TMPDIR", &tmux_dir)
            .stdin(Stdio::null())
            .stdout(output.try_clone().map_err(server)?)
            .stderr(output)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                OpenHandsError::Server(format!("cannot start {}: {e}", confined.program.display()))
            })?;
        // bubblewrap has read its syscall filter once the child runs.
        drop(confined.into_filters());
        let mut server = AgentServer {
            child,
            socket: rendezvous.server_socket(),
            meeting: Arc::clone(&rendezvous.handle),
            key,
            log,
            conversations,
        };
        let ready = server.wait_ready().await;
        // Read by now if the launcher ran at all; never left for a later process to find.
        let _ = std::fs::remove_file(rendezvous.secrets_file());
        ready?;
        Ok(server)
    }

    async fn wait_ready(&mut self) -> Result<(), OpenHandsError> {
        let client = self.http()?;
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

    /// The meeting folder's handle, for a client whose requests name the socket through it.
    pub(crate) fn meeting(&self) -> Arc<std::fs::File> {
        Arc::clone(&self.meeting)
    }

    /// An HTTP client that reaches this server (through its socket, whatever the URL's host).
    pub fn http(&self) -> Result<reqwest::Client, OpenHandsError> {
        reqwest::Client::builder()
            .unix_socket(self.socket.as_path())
            .build()
            .map_err(|e| OpenHandsError::Server(format!("cannot make an HTTP client: {e}")))
    }

    /// The URL requests name (the host is a placeholder: [`AgentServer::http`] connects
    /// through the socket).
    pub fn base_url(&self) -> String {
        "http://openhands.invalid".to_owned()
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
        // The multiplexer went with the reap. The meeting place stays: the relay of the next
        // server may already listen there.
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

/// Readies a server's folders: a server (or a command it started) left by a process that was
/// killed still owns the conversation store `conversations`, so it goes before another starts
/// on it, and so does its lease on each conversation; the working folder `working` is emptied,
/// since the commands a server runs can write there and the next server reads its settings
/// file from there as it starts.
fn fresh_state(conversations: &Path, working: &Path) -> std::io::Result<()> {
    reap(conversations);
    release_leases(conversations);
    match std::fs::remove_dir_all(working) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::create_dir_all(conversations)?;
    std::fs::create_dir_all(working)
}

/// The file in a conversation's folder that names the server owning it.
const LEASE_FILE: &str = "owner_lease.json";

/// Removes the ownership leases of the conversations in `conversations`, once no server of
/// the store runs ([`reap`]). A server records itself by host name and process id; every
/// confined server has the sandbox's host name and the same process id in its own PID
/// namespace, so the next one would take the lease of a dead one for its own live process and
/// refuse the conversation until the lease expired.
fn release_leases(conversations: &Path) {
    for conversation in std::fs::read_dir(conversations)
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_file(conversation.path().join(LEASE_FILE));
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

/// Where an unconfined server's terminal multiplexer keeps its socket: a private directory of
/// this user's named after the state directory. OpenHands names its tmux socket alike for
/// every server, so without a directory of its own every project's terminals shared one tmux
/// server, which carried the environment of whichever server started it and which a reap of
/// that project's processes took down under the others' running commands. (A confined
/// server's is in its sandbox's own `/tmp`.)
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
