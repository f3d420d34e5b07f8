//! The Python environment OpenHands runs in: found where Heartwood installs it, or where
//! `HEARTWOOD_OPENHANDS_VENV` points, and made with the exact versions this build was tested
//! with (`requirements.lock`, used as pip constraints, so nothing is resolved afresh).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::OpenHandsError;

/// The packages, by name and version; their dependencies are pinned by [`LOCK`].
pub const PACKAGES: [&str; 3] = [
    "openhands-agent-server==1.58.2",
    "openhands-sdk==1.58.2",
    "openhands-tools==1.58.2",
];

/// Every package of a working environment, exactly (`pip freeze`).
pub const LOCK: &str = include_str!("../requirements.lock");

/// The oldest Python the packages support.
const MIN_PYTHON: (u32, u32) = (3, 12);

/// A Python environment with the agent server installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    venv: PathBuf,
}

impl Installation {
    /// Where Heartwood keeps the environment: `HEARTWOOD_OPENHANDS_VENV`, else
    /// `$XDG_CACHE_HOME/heartwood/openhands-venv` (`~/.cache/...`).
    pub fn default_location() -> PathBuf {
        if let Some(venv) = std::env::var_os("HEARTWOOD_OPENHANDS_VENV") {
            return PathBuf::from(venv);
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        cache.join("heartwood").join("openhands-venv")
    }

    /// The environment at [`Installation::default_location`], if the agent server is importable
    /// there. Looked up on disk, not imported: this runs when a session's engine opens (under
    /// its lock) and for every `heartwood status`, and importing the package takes Python
    /// seconds; a broken environment is reported by the server that cannot start in it.
    pub fn find() -> Result<Installation, OpenHandsError> {
        let venv = Installation::default_location();
        let installation = Installation { venv: venv.clone() };
        let found = std::fs::read_dir(venv.join("lib"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|python| python.path().join("site-packages").join("openhands"))
            .any(|openhands| {
                openhands.join("agent_server").is_dir() && openhands.join("tools").is_dir()
            });
        if found && installation.python().is_file() {
            Ok(installation)
        } else {
            Err(OpenHandsError::NotInstalled(format!(
                "no OpenHands environment at {}; install it with \
                 `heartwood backend install openhands`",
                venv.display()
            )))
        }
    }

    /// The environment at `venv`, if the agent server is importable there.
    pub fn at(venv: &Path) -> Result<Installation, OpenHandsError> {
        let installation = Installation {
            venv: venv.to_path_buf(),
        };
        let imported = Command::new(installation.python())
            .args(["-c", "import openhands.agent_server, openhands.tools"])
            .output();
        match imported {
            Ok(out) if out.status.success() => Ok(installation),
            Ok(out) => Err(OpenHandsError::NotInstalled(format!(
                "the OpenHands agent server is not importable in {}: {}; install it with \
                 `heartwood backend install openhands`",
                venv.display(),
                last_line(&out.stderr)
            ))),
            Err(_) => Err(OpenHandsError::NotInstalled(format!(
                "no OpenHands environment at {}; install it with \
                 `heartwood backend install openhands`",
                venv.display()
            ))),
        }
    }

    /// Makes the environment at `venv` with `python` (at least 3.12) and the pinned packages,
    /// printing pip's progress to this process's output.
    pub fn install(venv: &Path, python: &Path) -> Result<Installation, OpenHandsError> {
        let version = python_version(python).ok_or_else(|| {
            OpenHandsError::NotInstalled(format!("{} does not run", python.display()))
        })?;
        if version < MIN_PYTHON {
            return Err(OpenHandsError::NotInstalled(format!(
                "{} is Python {}.{}; the OpenHands agent server needs {}.{} or newer",
                python.display(),
                version.0,
                version.1,
                MIN_PYTHON.0,
                MIN_PYTHON.1
            )));
        }
        run(Command::new(python).arg("-m").arg("venv").arg(venv))?;
        let lock = venv.join("heartwood-requirements.lock");
        std::fs::write(&lock, LOCK)
            .map_err(|e| OpenHandsError::NotInstalled(format!("{}: {e}", lock.display())))?;
        let pip = venv.join("bin").join("pip");
        run(Command::new(&pip)
            .args(["install", "--disable-pip-version-check", "-c"])
            .arg(&lock)
            .args(PACKAGES))?;
        Installation::at(venv)
    }

    /// A Python new enough for the packages, for [`Installation::install`]: on `PATH`
    /// (`python3.12`, the version this build was tested with, then `python3.13`, `python3`),
    /// else one pyenv installed but did not select (`$PYENV_ROOT` or `~/.pyenv`).
    pub fn find_python() -> Option<PathBuf> {
        let on_path = ["python3.12", "python3.13", "python3"].map(PathBuf::from);
        on_path
            .into_iter()
            .chain(pyenv_pythons())
            .find(|candidate| python_version(candidate).is_some_and(|v| v >= MIN_PYTHON))
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }

    /// The environment's directory.
    pub fn venv(&self) -> &Path {
        &self.venv
    }

    /// The directories a confined server reads its interpreter and packages from: the
    /// environment, and the Python it was made with (a venv links to that interpreter and reads
    /// its standard library; pyenv's sits under the home, which the sandbox does not show).
    /// Both are absolute paths; the base is the `home` pyvenv.cfg names, one level up from its
    /// `bin`.
    pub fn directories(&self) -> Vec<PathBuf> {
        let mut directories = vec![std::fs::canonicalize(&self.venv).unwrap_or(self.venv.clone())];
        let config = std::fs::read_to_string(self.venv.join("pyvenv.cfg")).unwrap_or_default();
        let base = config
            .lines()
            .filter_map(|line| line.split_once('='))
            .find(|(key, _)| key.trim() == "home")
            .map(|(_, home)| PathBuf::from(home.trim()))
            .filter(|home| home.is_absolute())
            .and_then(|home| std::fs::canonicalize(home).ok())
            .and_then(|bin| bin.parent().map(Path::to_path_buf))
            .filter(|prefix| prefix.parent().is_some());
        directories.extend(base);
        directories
    }
}

/// The interpreters pyenv installed, 3.12 first, then newer ones, oldest first.
fn pyenv_pythons() -> Vec<PathBuf> {
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")));
    let Some(Ok(versions)) = root.map(|root| std::fs::read_dir(root.join("versions"))) else {
        return Vec::new();
    };
    let mut found: Vec<((u32, u32), PathBuf)> = versions
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let mut parts = name.split('.').map(str::parse::<u32>);
            let version = (parts.next()?.ok()?, parts.next()?.ok()?);
            Some((version, entry.path().join("bin").join("python3")))
        })
        .filter(|(version, _)| *version >= MIN_PYTHON)
        .collect();
    found.sort_by_key(|(version, _)| (*version != MIN_PYTHON, *version));
    found.into_iter().map(|(_, python)| python).collect()
}

fn python_version(python: &Path) -> Option<(u32, u32)> {
    let out = Command::new(python)
        .args([
            "-c",
            "import sys; print(sys.version_info[0], sys.version_info[1])",
        ])
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace().map(str::parse);
    Some((parts.next()?.ok()?, parts.next()?.ok()?))
}

fn run(command: &mut Command) -> Result<(), OpenHandsError> {
    let status = command
        .status()
        .map_err(|e| OpenHandsError::NotInstalled(format!("{command:?}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(OpenHandsError::NotInstalled(format!(
            "{command:?} failed ({status})"
        )))
    }
}

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no detail")
        .trim()
        .to_owned()
}
