//! A real PostgreSQL server for tests: `initdb` and `pg_ctl` from Debian's packages, in a
//! temporary directory, on a free TCP port of 127.0.0.1, as an unprivileged user when the
//! test runs as root (PostgreSQL refuses to run as root). Stopped when dropped.
//!
//! Where it cannot start, [`PgServer::start_or_skip`] fails the test under `CI=true` and
//! otherwise returns `None` after printing the reason, so a developer without PostgreSQL still
//! runs the rest.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running PostgreSQL server.
#[derive(Debug)]
pub struct PgServer {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    run_as: Option<String>,
    _dir: tempfile::TempDir,
}

impl PgServer {
    /// Starts a server, or says why it could not (see the module's doc).
    pub fn start_or_skip() -> Option<PgServer> {
        match PgServer::start() {
            Ok(server) => Some(server),
            Err(reason) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("PostgreSQL is required under CI=true and could not start: {reason}")
            }
            Err(reason) => {
                eprintln!("skipped: PostgreSQL could not start here: {reason}");
                None
            }
        }
    }

    /// Starts a fresh server.
    pub fn start() -> Result<PgServer, String> {
        let bin =
            find_bin().ok_or("initdb and pg_ctl were not found (apt-get install postgresql)")?;
        let dir = tempfile::Builder::new()
            .prefix("heartwood-pg-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        let data = dir.path().join("data");
        let run_as = is_root().then(|| "nobody".to_owned());
        std::fs::create_dir(&data).map_err(|e| format!("data directory: {e}"))?;
        if let Some(user) = &run_as {
            // The unprivileged user must reach the data directory and own it.
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755));
            let chown = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(&data)
                .output()
                .map_err(|e| format!("chown: {e}"))?;
            if !chown.status.success() {
                return Err(format!("chown: {}", String::from_utf8_lossy(&chown.stderr)));
            }
        }
        let port = free_port()?;
        let server = PgServer {
            bin,
            data,
            port,
            run_as,
            _dir: dir,
        };
        let init = server.run(
            "initdb",
            &[
                "-D",
                &server.data_str(),
                "-A",
                "trust",
                "-U",
                "heartwood",
                "-E",
                "UTF8",
            ],
        )?;
        if !init.status.success() {
            return Err(format!("initdb: {}", String::from_utf8_lossy(&init.stderr)));
        }
        server.resume()?;
        Ok(server)
    }

    /// The connection URL of the server's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://heartwood@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server at once (`immediate`: as a crash would), keeping its data.
    pub fn stop(&self) {
        let _ = self.run(
            "pg_ctl",
            &["-D", &self.data_str(), "-m", "immediate", "-w", "stop"],
        );
    }

    /// Starts the stopped server again on the same port and data.
    pub fn resume(&self) -> Result<(), String> {
        let log = self.data.join("server.log");
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.data_str()
        );
        let started = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data_str(),
                "-l",
                &log.display().to_string(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )?;
        if !started.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!(
                "pg_ctl start: {}{log}",
                String::from_utf8_lossy(&started.stderr)
            ));
        }
        Ok(())
    }

    fn data_str(&self) -> String {
        self.data.display().to_string()
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let path = self.bin.join(program);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(&path);
                c
            }
            None => Command::new(&path),
        };
        command
            .args(args)
            .current_dir(&self.data)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .map_err(|e| format!("{program}: {e}"))
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The directory holding `initdb` and `pg_ctl`: on `PATH`, or Debian's versioned directory.
fn find_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    if let Some(dir) = on_path {
        // Debian links the programs; their real directory finds the server binary next to them.
        return std::fs::canonicalize(dir.join("initdb"))
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .or(Some(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}
