//! Tool process confinement: every shell the terminal tool starts runs at one [`SandboxLevel`],
//! enforced by the kernel through bubblewrap (`bwrap`), never by reading the command.
//!
//! What each level enforces (see `docs/security.md`):
//! - both confined levels: a mount namespace whose root is the host's, read-only; a private
//!   `/tmp`; the project bound at its own path (read-only or writable); Heartwood's own state
//!   (`.heartwood/`, the user's Heartwood configuration with its sign-in tokens, the owner
//!   channel's directory) and the user's secret locations (`~/.ssh`, cloud credentials,
//!   keyrings, browser profiles) covered by empty directories or `/dev/null`; `.git` read-only;
//!   a PID namespace with its own `/proc`, so no other process's environment or memory can be
//!   read; every capability dropped, no new privileges, a new session (no terminal injection);
//! - [`SandboxLevel::ReadOnly`]: no writes anywhere but the private `/tmp`, and no network;
//! - [`SandboxLevel::ProjectWrite`]: writes inside the project (and `/tmp`) only; network on;
//! - [`SandboxLevel::Unsandboxed`]: a plain process, only by the researcher's explicit
//!   approval of an action that asked for it.
//!
//! Where bubblewrap is missing or the kernel refuses its namespaces, [`support`] says so and
//! why; the engine then runs no command without a person's decision, and every proposal says
//! it would run unsandboxed (fail closed, never silently weaker).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// How a tool process is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLevel {
    /// Reads the project; writes only a private scratch `/tmp`; no network.
    ReadOnly,
    /// Writes inside the project and scratch only.
    ProjectWrite,
    /// Not confined: only by the researcher's explicit approval.
    Unsandboxed,
}

impl SandboxLevel {
    /// The level in words, as every interface shows it.
    pub fn describe(self) -> &'static str {
        match self {
            SandboxLevel::ReadOnly => "read-only sandbox (no writes, no network)",
            SandboxLevel::ProjectWrite => "sandbox: writes only inside the project",
            SandboxLevel::Unsandboxed => "UNSANDBOXED: full access as your user",
        }
    }
}

/// What this machine can enforce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSupport {
    /// Whether the confined levels are enforced.
    pub enforcing: bool,
    /// How (the program and what it uses), or why not and what to do.
    pub detail: String,
}

/// Whether this machine can confine tool processes, found once per process: `bwrap` must be
/// installed and must be able to start a confined `true` here.
pub fn support() -> &'static SandboxSupport {
    static FOUND: OnceLock<SandboxSupport> = OnceLock::new();
    FOUND.get_or_init(probe)
}

fn probe() -> SandboxSupport {
    let Some(bwrap) = bwrap() else {
        return SandboxSupport {
            enforcing: false,
            detail: "bubblewrap (bwrap) is not installed, so commands cannot be confined; \
                     install it (Debian and Ubuntu: apt-get install bubblewrap)"
                .to_owned(),
        };
    };
    let tried = std::process::Command::new(&bwrap)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--unshare-net",
            "--cap-drop",
            "ALL",
            "--",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output();
    match tried {
        Ok(out) if out.status.success() => SandboxSupport {
            enforcing: true,
            detail: format!(
                "{}: mount, PID and network namespaces; read-only root, capabilities dropped",
                bwrap.display()
            ),
        },
        Ok(out) => SandboxSupport {
            enforcing: false,
            detail: format!(
                "bubblewrap cannot create namespaces here ({}); enable unprivileged user \
                 namespaces (sysctl kernel.unprivileged_userns_clone=1) or run where they are",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        },
        Err(e) => SandboxSupport {
            enforcing: false,
            detail: format!("bubblewrap at {} cannot run: {e}", bwrap.display()),
        },
    }
}

/// `bwrap` on the usual paths (never `PATH` alone: the project could put one there).
fn bwrap() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Who let a command run, as far as its confinement goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// A person allowed its set.
    ByPerson,
    /// The risk rules let it run without review (the low-risk policy): read-only.
    ByRiskRules,
    /// A policy that reviews nothing (tests, batch deployments): the project, never more.
    WithoutReview,
}

/// The level a terminal call runs at: read-only when the risk rules ran it without a person,
/// unsandboxed only when it asked to be and a person allowed it, else project-write. Where the
/// machine cannot confine, every command is unsandboxed (and the engine has it wait for a
/// person).
pub fn level_for(unsandboxed_asked: bool, allowed: Allowed) -> SandboxLevel {
    if !support().enforcing {
        return SandboxLevel::Unsandboxed;
    }
    match allowed {
        Allowed::ByPerson if unsandboxed_asked => SandboxLevel::Unsandboxed,
        Allowed::ByPerson | Allowed::WithoutReview => SandboxLevel::ProjectWrite,
        Allowed::ByRiskRules => SandboxLevel::ReadOnly,
    }
}

/// Secret locations under the home directory, covered in every confined level.
const HOME_SECRETS: [&str; 22] = [
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".config/gh",
    ".config/heartwood",
    ".config/google-chrome",
    ".config/chromium",
    ".mozilla",
    ".local/share/keyrings",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".huggingface/token",
    ".cache/huggingface/token",
];

/// Where the shells of one project are confined.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    /// Directories outside the project the tools reach (active skills' verified copies, data
    /// mounts): bound at their own paths, writable only when declared so and the level writes.
    outside: Vec<(PathBuf, bool)>,
    /// More locations to cover: Heartwood's configuration folder when it is elsewhere, the
    /// owner channel's directory.
    hidden: Vec<PathBuf>,
}

impl Sandbox {
    /// Confinement around the project at `root`.
    pub fn new(root: &Path) -> Self {
        let mut hidden: Vec<PathBuf> = Vec::new();
        for var in ["HEARTWOOD_CONFIG_HOME", "XDG_RUNTIME_DIR"] {
            if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                hidden.push(PathBuf::from(dir));
            }
        }
        if let Some(config) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            hidden.push(PathBuf::from(config).join("heartwood"));
        }
        if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            let home = PathBuf::from(home);
            hidden.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
        }
        Sandbox {
            root: root.to_owned(),
            outside: Vec::new(),
            hidden,
        }
    }

    /// Also reaches `directories` (path, writable), even where they lie inside a hidden
    /// location (an active skill's copy under `.heartwood/`).
    pub fn reaching(mut self, directories: impl IntoIterator<Item = (PathBuf, bool)>) -> Self {
        self.outside.extend(directories);
        self
    }

    /// Also covers `paths` (a deployment's own secret locations).
    pub fn hiding(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.hidden.extend(paths);
        self
    }

    /// The program and arguments that run `program args` at `level`. Unsandboxed runs the
    /// program itself; a confined level on a machine that cannot confine is refused.
    pub fn wrap(
        &self,
        level: SandboxLevel,
        program: &str,
        args: &[&str],
    ) -> Result<(PathBuf, Vec<String>), String> {
        if level == SandboxLevel::Unsandboxed {
            return Ok((
                PathBuf::from(program),
                args.iter().map(|a| (*a).to_owned()).collect(),
            ));
        }
        let found = support();
        let bwrap = bwrap()
            .filter(|_| found.enforcing)
            .ok_or_else(|| found.detail.clone())?;
        let mut out: Vec<String> = Vec::new();
        let mut arg = |words: &[&str]| out.extend(words.iter().map(|w| (*w).to_owned()));
        arg(&["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        arg(&["--tmpfs", "/tmp", "--unshare-pid", "--new-session"]);
        arg(&["--cap-drop", "ALL"]);
        if level == SandboxLevel::ReadOnly {
            arg(&["--unshare-net"]);
        }
        let root = self.root.to_string_lossy().into_owned();
        let bind = if level == SandboxLevel::ProjectWrite {
            "--bind"
        } else {
            "--ro-bind"
        };
        arg(&[bind, &root, &root]);
        let git = self.root.join(".git");
        if level == SandboxLevel::ProjectWrite && git.exists() {
            let git = git.to_string_lossy().into_owned();
            arg(&["--ro-bind", &git, &git]);
        }
        // Hidden folders become empty and, once what is reached inside them is bound, read-only.
        let mut remount = Vec::new();
        for secret in std::iter::once(self.root.join(".heartwood")).chain(self.hidden.clone()) {
            // Under a fresh `/tmp` (and outside the project) a location is already gone.
            let gone = secret.starts_with("/tmp") && !secret.starts_with(&self.root);
            let Ok(meta) = std::fs::symlink_metadata(&secret) else {
                continue;
            };
            if gone || meta.file_type().is_symlink() {
                continue;
            }
            let path = secret.to_string_lossy().into_owned();
            if meta.is_dir() {
                arg(&["--tmpfs", &path]);
                remount.push(path);
            } else {
                arg(&["--ro-bind", "/dev/null", &path]);
            }
        }
        for (dir, writable) in &self.outside {
            if !dir.is_dir() {
                continue;
            }
            let dir = dir.to_string_lossy().into_owned();
            let bind = if *writable && level == SandboxLevel::ProjectWrite {
                "--bind"
            } else {
                "--ro-bind"
            };
            arg(&[bind, &dir, &dir]);
        }
        for path in &remount {
            arg(&["--remount-ro", path]);
        }
        arg(&["--chdir", &root, "--", program]);
        out.extend(args.iter().map(|a| (*a).to_owned()));
        Ok((bwrap, out))
    }
}
