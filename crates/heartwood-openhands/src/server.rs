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

/// A running agent server.
#[derive(Debug)]
pub struct AgentServer {
    child: Child,
    addr: SocketAddr,
    key: String,
    log: PathBuf,
}

impl AgentServer {
    /// Starts a server whose conversations are stored under `state_dir/conversations`, with
    /// `env` added to its environment (the model key, under the name the model library reads),
    /// and waits until it is ready.
    pub async fn start(
        installation: &Installation,
        state_dir: &Path,
        env: &[(String, String)],
    ) -> Result<AgentServer, OpenHandsError> {
        let server = |e: std::io::Error| OpenHandsError::Server(e.to_string());
        std::fs::create_dir_all(state_dir).map_err(server)?;
        let log = state_dir.join("agent-server.log");
        let output = std::fs::File::create(&log).map_err(server)?;
        let port = free_port().map_err(server)?;
        let key = session_key()?;
        let child = Command::new(installation.python())
            .args([
                "-m",
                "openhands.agent_server",
                "--host",
                "127.0.0.1",
                "--port",
            ])
            .arg(port.to_string())
            .current_dir(state_dir)
            // The key is for this process alone; it never reaches a file.
            .env("SESSION_API_KEY", &key)
            .env("OH_CONVERSATIONS_PATH", state_dir.join("conversations"))
            .envs(env.iter().map(|(k, v)| (k, v)))
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

    /// Stops the server and everything it started.
    pub async fn stop(mut self) {
        kill_group(&self.child);
        let _ = self.child.wait().await;
    }
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        kill_group(&self.child);
    }
}

/// Kills `child`'s process group: the server and the shells its tools started.
fn kill_group(child: &Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A port nobody listens on now. Another process could take it before the server binds it;
/// the server then exits at once and [`AgentServer::start`] says so.
fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// 256 random bits, in hex.
fn session_key() -> Result<String, OpenHandsError> {
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
