//! `terminal`: one persistent bash session in the project directory.
//!
//! A command is written to the shell as `{ command\n}; printf MARKER $?`, so bash parses the
//! marker as part of the same input before running anything and a program reading standard
//! input never swallows it. Output (stdout and stderr merged) is collected until the marker
//! appears or the soft timeout passes; then the command keeps running and the model gets the
//! output so far with exit code -1, and may answer it (`is_input`) or `reset` the shell. A
//! command running past the hard limit is killed with its whole process group. Output kept per
//! command is bounded: the head and the tail, with the middle counted but dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use super::Observation;
use super::sandbox::{Sandbox, SandboxLevel};

/// `terminal`'s arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalArgs {
    /// The command, or input text when `is_input` is set.
    pub command: String,
    /// Send `command` to the running program instead.
    #[serde(default)]
    pub is_input: bool,
    /// Soft timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Kill the shell and start a new one first.
    #[serde(default)]
    pub reset: bool,
    /// Ask to run outside the sandbox (the researcher must allow it; never automatic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxRequest>,
}

/// What a terminal call may ask of its confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxRequest {
    /// Run the command outside the sandbox, with the user's full access.
    Unsandboxed,
}

impl TerminalArgs {
    /// Whether the call asked to run outside the sandbox.
    pub fn asks_unsandboxed(&self) -> bool {
        self.sandbox == Some(SandboxRequest::Unsandboxed)
    }
}

/// The terminal's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalLimits {
    /// Soft timeout when the model gives none.
    pub default_timeout: Duration,
    /// Longest soft timeout the model may ask for.
    pub max_timeout: Duration,
    /// A command still running this long after it started is killed.
    pub hard_limit: Duration,
    /// Bytes of output kept from the start of a command's output.
    pub head_bytes: usize,
    /// Bytes of output kept from the end.
    pub tail_bytes: usize,
}

impl Default for TerminalLimits {
    fn default() -> Self {
        TerminalLimits {
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            hard_limit: Duration::from_secs(1800),
            head_bytes: 16 * 1024,
            tail_bytes: 16 * 1024,
        }
    }
}

struct Shell {
    child: Child,
    /// How the shell is confined; a command at another level gets a new shell.
    level: SandboxLevel,
    stdin: ChildStdin,
    output: mpsc::Receiver<Vec<u8>>,
    /// The command still running past its soft timeout: its marker and start time.
    running: Option<(String, Instant)>,
}

/// The persistent shell.
pub struct Terminal {
    root: PathBuf,
    sandbox: Sandbox,
    limits: TerminalLimits,
    shell: Option<Shell>,
    counter: u64,
    env: super::ToolEnvironment,
    /// The researcher's "stop now", looked at every [`INTERRUPT_POLL`] while a command runs.
    interrupt: super::InterruptHandle,
    /// Where complete lines of a running command's output go as they arrive (progress; the
    /// observation still carries the output).
    progress: Option<OutputSink>,
    /// The proxy to the hosts confined commands may reach, once a confined shell needed it.
    proxy: Option<heartwood_sandbox::network::Proxy>,
}

/// Receives a running command's output, a complete line at a time.
pub type OutputSink = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// How often a running command looks for an interruption.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// Output of one command: the head, the tail, and how much was dropped between them, plus a
/// window over the most recent bytes in which the end marker is looked for.
struct Captured {
    head: Vec<u8>,
    tail: Vec<u8>,
    dropped: usize,
    recent: Vec<u8>,
    head_limit: usize,
    tail_limit: usize,
}

/// Bytes of recent output searched for the end marker.
const MARKER_WINDOW: usize = 4096;

impl Captured {
    fn new(limits: &TerminalLimits) -> Self {
        Captured {
            head: Vec::new(),
            tail: Vec::new(),
            dropped: 0,
            recent: Vec::new(),
            head_limit: limits.head_bytes,
            tail_limit: limits.tail_bytes.max(MARKER_WINDOW),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.recent.extend_from_slice(bytes);
        if self.recent.len() > 2 * MARKER_WINDOW {
            self.recent.drain(..self.recent.len() - MARKER_WINDOW);
        }
        let mut rest = bytes;
        if self.head.len() < self.head_limit {
            let take = rest.len().min(self.head_limit - self.head.len());
            self.head.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
        self.tail.extend_from_slice(rest);
        if self.tail.len() > 2 * self.tail_limit {
            let excess = self.tail.len() - self.tail_limit;
            self.dropped += excess;
            self.tail.drain(..excess);
        }
    }

    /// Finds `marker`, an exit code and `__\n` in the recent output; removes the marker line
    /// (and the newline printed before it) from what is kept, and returns the exit code.
    fn take_marker(&mut self, marker: &str) -> Option<i32> {
        let at = find(&self.recent, marker.as_bytes())?;
        let rest = &self.recent[at + marker.len()..];
        let end = find(rest, b"__\n")?;
        let code = std::str::from_utf8(&rest[..end])
            .ok()?
            .parse()
            .unwrap_or(-1);
        let mut cut = at;
        if cut > 0 && self.recent[cut - 1] == b'\n' {
            cut -= 1;
        }
        let mut remove = self.recent.len() - cut;
        let from_tail = remove.min(self.tail.len());
        self.tail.truncate(self.tail.len() - from_tail);
        remove -= from_tail;
        let keep = self.head.len().saturating_sub(remove);
        self.head.truncate(keep);
        self.recent.clear();
        Some(code)
    }

    fn render(&mut self) -> String {
        let mut all = std::mem::take(&mut self.head);
        if self.dropped > 0 || self.tail.len() > self.tail_limit {
            let keep_from = self.tail.len().saturating_sub(self.tail_limit);
            let dropped = self.dropped + keep_from;
            all.extend_from_slice(
                format!("\n[... {dropped} bytes of output omitted ...]\n").as_bytes(),
            );
            all.extend_from_slice(&self.tail[keep_from..]);
        } else {
            all.extend_from_slice(&self.tail);
        }
        self.tail.clear();
        self.dropped = 0;
        String::from_utf8_lossy(&all).into_owned()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl Terminal {
    /// A terminal whose shell starts in `root` on first use, with only the variables `env`
    /// lets through (never the model route's credential, never anything off its list).
    pub fn with_environment(
        root: &Path,
        limits: TerminalLimits,
        env: super::ToolEnvironment,
    ) -> Self {
        Terminal {
            root: root.to_owned(),
            sandbox: Sandbox::new(root),
            limits,
            shell: None,
            counter: 0,
            env,
            interrupt: super::InterruptHandle::default(),
            progress: None,
            proxy: None,
        }
    }

    /// A terminal whose shell starts in `root` on first use, with the standard allowlist.
    pub fn new(root: &Path, limits: TerminalLimits) -> Self {
        Self::with_environment(root, limits, super::ToolEnvironment::default())
    }

    /// Confines the shells with `sandbox` instead of the project's default.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Sends complete lines of running commands' output to `sink` as they arrive.
    pub fn set_progress(&mut self, sink: OutputSink) {
        self.progress = Some(sink);
    }

    /// The handle that stops the running command (and its process group) now.
    pub fn interrupt_handle(&self) -> super::InterruptHandle {
        self.interrupt.clone()
    }

    /// Runs one request in a shell confined at `level` (input goes to the running program,
    /// wherever it runs).
    pub async fn run(&mut self, args: &TerminalArgs, level: SandboxLevel) -> Observation {
        if args.reset {
            self.stop().await;
            if args.command.trim().is_empty() {
                return Observation::ok("The shell was reset.");
            }
        }
        let soft = args
            .timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(self.limits.default_timeout, Duration::from_secs_f64)
            .min(self.limits.max_timeout);
        if args.is_input {
            return self.send_input(&args.command, soft).await;
        }
        if self.shell.as_ref().is_some_and(|s| s.running.is_some()) {
            return Observation::error(
                "a command is still running; answer it with is_input=true, wait for it by sending an empty input, or start over with reset=true",
            );
        }
        if let Err(refused) = syntax_check(&args.command).await {
            return Observation {
                exit_code: Some(2),
                ..Observation::error(refused.to_string())
            };
        }
        let restarted = match self.ensure_shell(level).await {
            Ok(restarted) => restarted,
            Err(e) => {
                return Observation::error(format!(
                    "could not start a shell ({}): {e}; the command did not run",
                    level.label()
                ));
            }
        };
        self.counter += 1;
        let marker = format!("__HEARTWOOD_DONE_{}_{}_", std::process::id(), self.counter);
        let script = format!(
            "{{ {}\n}}; printf '\\n{marker}%s__\\n' \"$?\"\n",
            args.command
        );
        let Some(shell) = self.shell.as_mut() else {
            return Observation::error("the shell is not running");
        };
        if let Err(e) = shell.stdin.write_all(script.as_bytes()).await {
            self.stop().await;
            return Observation::error(format!(
                "the shell stopped accepting input ({e}); it was reset, run the command again"
            ));
        }
        shell.running = Some((marker, Instant::now()));
        let mut observation = self.collect(soft).await;
        self.report_network(&mut observation);
        if restarted {
            observation.content = format!(
                "[a new shell started for this command ({}): its working directory and \
                 variables start fresh]\n{}",
                level.label(),
                observation.content
            );
        }
        observation
    }

    async fn send_input(&mut self, text: &str, soft: Duration) -> Observation {
        let Some(shell) = self.shell.as_mut().filter(|s| s.running.is_some()) else {
            return Observation::error("no command is running; run a command without is_input");
        };
        if !text.is_empty() {
            let line = if text.ends_with('\n') {
                text.to_owned()
            } else {
                format!("{text}\n")
            };
            if let Err(e) = shell.stdin.write_all(line.as_bytes()).await {
                return Observation::error(format!(
                    "the running program does not accept input ({e})"
                ));
            }
        }
        let mut observation = self.collect(soft).await;
        self.report_network(&mut observation);
        observation
    }

    /// Adds the connections the command asked for (each host, port, bytes and time, or why
    /// it was refused) to its result, which the journal keeps.
    fn report_network(&self, observation: &mut Observation) {
        let Some(proxy) = &self.proxy else { return };
        for connection in proxy.take_log() {
            observation
                .content
                .push_str(&format!("\n[{}]", connection.describe()));
        }
    }

    /// Gathers output until the running command's marker, the soft timeout, or the hard limit.
    async fn collect(&mut self, soft: Duration) -> Observation {
        let limits = self.limits;
        let Some(shell) = self.shell.as_mut() else {
            return Observation::error("the shell is not running");
        };
        let Some((marker, started)) = shell.running.clone() else {
            return Observation::error("no command is running");
        };
        let mut captured = Captured::new(&limits);
        let progress = self.progress.clone();
        let mut partial: Vec<u8> = Vec::new();
        let deadline = Instant::now() + soft;
        let hard_deadline = started + limits.hard_limit;
        loop {
            if let Some(code) = captured.take_marker(&marker) {
                shell.running = None;
                let out = captured.render();
                return Observation {
                    exit_code: Some(code),
                    ..output_observation(out, code)
                };
            }
            if self.interrupt.is_requested() {
                let out = captured.render();
                self.stop().await;
                return Observation {
                    exit_code: Some(-1),
                    stopped: true,
                    ..Observation::error(format!(
                        "{out}\n[interrupted by the researcher: the command was stopped with its processes, and the shell was reset]"
                    ))
                };
            }
            let now = Instant::now();
            let until = deadline.min(hard_deadline);
            if now >= until {
                break;
            }
            let wait = (until - now).min(INTERRUPT_POLL);
            match tokio::time::timeout(wait, shell.output.recv()).await {
                Ok(Some(bytes)) => {
                    captured.push(&bytes);
                    if let Some(sink) = &progress {
                        report_lines(sink, &mut partial, &bytes, &marker);
                    }
                }
                Ok(None) => {
                    let out = captured.render();
                    self.stop().await;
                    return Observation {
                        exit_code: Some(-1),
                        ..Observation::error(format!(
                            "{out}\n[the shell exited; a new one starts with the next command]"
                        ))
                    };
                }
                Err(_) => {}
            }
        }
        let out = captured.render();
        if Instant::now() >= hard_deadline {
            self.stop().await;
            return Observation {
                exit_code: Some(-1),
                ..Observation::error(format!(
                    "{out}\n[the command ran past the {}s hard limit and was killed with its processes; the shell was reset]",
                    limits.hard_limit.as_secs()
                ))
            };
        }
        Observation {
            exit_code: Some(-1),
            ..Observation::ok(format!(
                "{out}\n[the command is still running after {}s; send input with is_input=true (empty input waits longer), or reset=true to stop it]",
                soft.as_secs_f64()
            ))
        }
    }

    /// Starts a shell at `level` unless one runs there already; `Ok(true)` when a shell at
    /// another level had to make way for it.
    async fn ensure_shell(&mut self, level: SandboxLevel) -> std::io::Result<bool> {
        let replaced = match &self.shell {
            Some(shell) if shell.level == level => return Ok(false),
            Some(_) => {
                self.stop().await;
                true
            }
            None => false,
        };
        let network = self.env.network();
        let reach = level != SandboxLevel::Unsandboxed && !network.is_empty();
        if reach && self.proxy.is_none() {
            self.proxy = Some(heartwood_sandbox::network::Proxy::start(network)?);
        }
        let socket = self.proxy.as_ref().filter(|_| reach).map(|p| p.socket());
        // Building the view reads the project's directories (nested state): off the runtime.
        let sandbox = self.sandbox.clone().with_network(socket);
        let confined = tokio::task::spawn_blocking(move || {
            sandbox.wrap(level, "bash", &["--noprofile", "--norc"])
        })
        .await
        .map_err(std::io::Error::other)?
        .map_err(std::io::Error::other)?;
        let mut command = Command::new(&confined.program);
        command
            .args(&confined.args)
            .current_dir(&self.root)
            .env_clear()
            .envs(self.env.vars())
            .env("TERM", "dumb")
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("HISTFILE", "/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if level == SandboxLevel::ReadOnly {
            // What runs read-only ran without a person because it names a known reader: the
            // system's, never one a project environment on `PATH` provides.
            command.env("PATH", heartwood_sandbox::host::SYSTEM_PATH);
        }
        if level != SandboxLevel::Unsandboxed {
            // The host's temporary folder is not in the sandbox's view; its own `/tmp` is.
            command.env("TMPDIR", "/tmp");
            // The host's proxies are not reachable from the sandbox's network; Heartwood's is,
            // where the project names hosts.
            for var in [
                "http_proxy",
                "https_proxy",
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "no_proxy",
                "NO_PROXY",
            ] {
                command.env_remove(var);
            }
            if reach {
                for var in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
                    command.env(var, heartwood_sandbox::network::PROXY_URL);
                }
            }
        }
        let mut child = command.spawn()?;
        drop(confined);
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        // Everything after this line writes to stdout, so the output keeps its order.
        stdin.write_all(b"exec 2>&1\n").await?;
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(pump(stdout, tx));
        self.shell = Some(Shell {
            child,
            level,
            stdin,
            output: rx,
            running: None,
        });
        Ok(replaced)
    }

    /// Kills the shell and everything it started.
    pub async fn stop(&mut self) {
        if let Some(mut shell) = self.shell.take() {
            kill_group(&shell.child);
            let _ = shell.child.kill().await;
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(shell) = &self.shell {
            kill_group(&shell.child);
        }
    }
}

fn kill_group(child: &Child) {
    if let Some(pid) = child.id() {
        // The shell leads its own process group, so this reaches every program it started.
        // A confined shell's programs live in their own PID namespace and session: killing
        // the namespace's first process (bubblewrap's child) ends every one of them.
        // A signal, not a `kill` process: nothing to start, nothing to wait for.
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let signal = rustix::process::Signal::KILL;
        if let Some(group) = rustix::process::Pid::from_raw(pid.cast_signed()) {
            let _ = rustix::process::kill_process_group(group, signal);
        }
        for child in children
            .split_whitespace()
            .filter_map(|c| c.parse::<i32>().ok())
        {
            if let Some(child) = rustix::process::Pid::from_raw(child) {
                let _ = rustix::process::kill_process(child, signal);
            }
        }
    }
}

/// Sends the complete lines in `partial` + `bytes` to `sink`, keeping an unfinished line for
/// later; the end marker's line is Heartwood's, not the command's, and is left out.
fn report_lines(sink: &OutputSink, partial: &mut Vec<u8>, bytes: &[u8], marker: &str) {
    partial.extend_from_slice(bytes);
    let Some(end) = partial.iter().rposition(|b| *b == b'\n') else {
        // A line longer than the tail limit is reported as it stands.
        if partial.len() > 16 * 1024 {
            sink(&String::from_utf8_lossy(partial));
            partial.clear();
        }
        return;
    };
    let complete: Vec<u8> = partial.drain(..=end).collect();
    let text = String::from_utf8_lossy(&complete);
    let shown: String = text
        .split_inclusive('\n')
        .filter(|line| !line.contains(marker))
        .collect();
    if !shown.is_empty() {
        sink(&shown);
    }
}

async fn pump(mut stdout: tokio::process::ChildStdout, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn output_observation(out: String, code: i32) -> Observation {
    let text = if out.trim().is_empty() {
        format!("[no output; exit code {code}]")
    } else {
        format!("{out}\n[exit code {code}]")
    };
    if code == 0 {
        Observation::ok(text)
    } else {
        Observation::error(text)
    }
}

/// Refuses a command bash cannot parse, before it reaches the shell (where it would leave the
/// shell waiting for the rest of the command). The system's `bash`, never one on `PATH` (a
/// project's environment can put its own there), with a minimal environment, confined
/// read-only where the machine confines: parsing reads no project file, but nothing Heartwood
/// starts over the model's text runs on the host as itself.
async fn syntax_check(command: &str) -> Result<(), super::CommandRefused> {
    use super::CommandRefused;
    let command = command.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        // Parsing reads no project file: no project is shown (and none is walked for nested
        // state at every command).
        heartwood_sandbox::host::HostCommand::without_project("bash", &["-n", "-c", &command])
            .map_err(|e| CommandRefused::Unchecked(Box::new(e)))?
            .output()
            .map_err(|e| CommandRefused::Unchecked(Box::new(e)))
    })
    .await
    .map_err(|e| CommandRefused::Unchecked(Box::new(e)))??;
    if out.status.success() {
        Ok(())
    } else {
        Err(CommandRefused::Unparsable(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ))
    }
}
