//! The terminal interface in tmux (`send-keys`, `capture-pane`): one tmux server per test,
//! killed when the test ends.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
    /// How long a screen may take to appear (the OpenHands engine starts a Python server on
    /// its first run).
    pub patience: Duration,
}

impl Tmux {
    pub fn start(project: &Path) -> Self {
        Tmux::start_with(project, &[])
    }

    /// [`Tmux::start`] with environment variables set for the binary.
    pub fn start_with(project: &Path, vars: &[(&str, &str)]) -> Self {
        Tmux::start_sized(project, vars, (120, 40))
    }

    /// [`Tmux::start_with`] in a terminal of `(columns, rows)`.
    pub fn start_sized(project: &Path, vars: &[(&str, &str)], size: (u16, u16)) -> Self {
        // One server per test: tests in this file run side by side.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmux = Tmux {
            socket: format!("heartwood-test-{}-{n}", std::process::id()),
            patience: Duration::from_secs(30),
        };
        let env: String = vars.iter().map(|(k, v)| format!("{k}='{v}' ")).collect();
        let command = format!(
            "cd '{}' && exec env {env}'{}'",
            project.display(),
            env!("CARGO_BIN_EXE_heartwood")
        );
        let (columns, rows) = (size.0.to_string(), size.1.to_string());
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            &columns,
            "-y",
            &rows,
            &command,
        ]);
        tmux
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "tui"])
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend(keys);
        self.run(&args);
    }

    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "tui", "-l", text]);
    }

    /// From the empty session list: a new session, given `task`.
    pub async fn start_task(&self, task: &str) {
        self.wait_for("the session list", |s| s.contains("press n to start one"))
            .await;
        self.keys(&["n"]);
        self.wait_for("the session screen", |s| s.contains("Ready for a task"))
            .await;
        self.type_text(task);
        self.keys(&["Enter"]);
    }

    pub async fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < self.patience,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn running(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "tui"])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}
