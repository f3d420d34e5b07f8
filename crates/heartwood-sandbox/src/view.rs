//! The view a confined process gets, built from an allow-list: the system's read-only
//! directories, the project (read-only or writable by level), the directories declared to the
//! tools by exact path, a private `/tmp` and an empty home (both size-bounded), a minimal
//! `/dev` and its own `/proc`. Nothing else of the host exists inside: no rest of the home, no
//! `/run`, `/var`, `/mnt`, `/media` or `/srv`, no other project, no socket.
//!
//! Every namespace bubblewrap offers is new (user where allowed, mount, PID, IPC, UTS, cgroup
//! and network), the process dies with Heartwood, starts a new session, has every capability
//! dropped, runs under the syscall filter ([`crate::seccomp`]) and the resource limits, and
//! starts with every inherited descriptor above 2 closed. Where the Landlock layer is on
//! ([`crate::confine`]), the first program inside is Heartwood's helper, which restricts itself
//! with rules from the same allow-list, sets the limits and leaves no inherited descriptor
//! before it becomes the program; where it is off, a shell prelude ([`crate::launcher`]) does
//! the limits and descriptors.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::confine::{HELPER_INSIDE, Rules};
use crate::launcher::{Limits, PRELUDE_NAME, prelude};
use crate::system::system_program;
use crate::{SandboxError, SandboxLevel, seccomp, support};

/// The system's directories every confined process sees read-only (each where it exists).
const SYSTEM_DIRECTORIES: [&str; 3] = ["/usr", "/etc", "/opt"];

/// Top-level names that are usually links into `/usr` (merged-`/usr` systems) or directories.
const SYSTEM_LINKS: [&str; 6] = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// What a system name is on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SystemEntry {
    /// A directory, bound read-only at its own path.
    Directory,
    /// A link (into `/usr` on a merged-`/usr` system), made again inside with the same target.
    Link(PathBuf),
}

/// The system's directories and top-level links as they are here, the directories first, read
/// once per process: the view and the Landlock rules of every confined start are built from
/// the same reading (each start read the host's root twice before).
fn system_layout() -> &'static [(&'static str, SystemEntry)] {
    static LAYOUT: OnceLock<Vec<(&'static str, SystemEntry)>> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        let directories = SYSTEM_DIRECTORIES
            .into_iter()
            .filter(|dir| Path::new(dir).is_dir())
            .map(|dir| (dir, SystemEntry::Directory));
        let links = SYSTEM_LINKS.into_iter().filter_map(|name| {
            let meta = std::fs::symlink_metadata(name).ok()?;
            if meta.file_type().is_symlink() {
                Some((name, SystemEntry::Link(std::fs::read_link(name).ok()?)))
            } else {
                meta.is_dir().then_some((name, SystemEntry::Directory))
            }
        });
        directories.chain(links).collect()
    })
}

/// Locations under the project that confined processes never see: Heartwood's own state, at
/// the top and in every project nested inside (its journal, configuration and channel).
const PROJECT_HIDDEN: &str = ".heartwood";

/// Folders that cannot be a project the sandbox shows alone.
const TOO_BROAD: [&str; 7] = [
    "/", "/tmp", "/var/tmp", "/dev/shm", "/home", "/run", "/root",
];

/// How many directories the look for nested `.heartwood` and `.git` folders reads at most.
const MAX_WALK: usize = 50_000;

/// Where the shells of one project are confined.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    /// Directories outside the project the tools reach (active skills' verified copies, data
    /// mounts, declared toolchains): bound at their own paths, writable only when declared so
    /// and the level writes.
    outside: Vec<(PathBuf, bool)>,
    /// Locations inside what is visible that stay covered (a deployment's own secrets inside a
    /// data mount, say).
    hidden: Vec<PathBuf>,
    /// The private home, when there is one to give.
    home: Option<PathBuf>,
    limits: Limits,
    /// The network proxy's socket on the host, when commands may reach named hosts.
    network: Option<PathBuf>,
    /// Whether the root is a project, whose nested `.heartwood/` and `.git` folders are looked
    /// for; a system directory standing in for "no project" has none, and walking it (all of
    /// `/usr`) cost more than the command.
    project: bool,
}

/// A program ready to start confined: run `program` with `args`, and keep this value alive until
/// the child has started (it holds the syscall filters bubblewrap reads).
#[derive(Debug)]
pub struct Confined {
    /// What to execute.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    _filters: Vec<OwnedFd>,
}

impl Confined {
    /// The syscall filters, to hold until a child built from `program` and `args` started.
    pub fn into_filters(self) -> Vec<OwnedFd> {
        self._filters
    }
}

impl Sandbox {
    /// Confinement around the project at `root`, with an empty private home at `$HOME`.
    pub fn new(root: &Path) -> Self {
        Sandbox {
            root: root.to_owned(),
            outside: Vec::new(),
            hidden: Vec::new(),
            home: std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            limits: Limits::default(),
            network: None,
            project: true,
        }
    }

    /// A root that is a system directory shown as it is, not a project: nothing is looked for
    /// inside it (for a program that reads no project file).
    pub(crate) fn without_project_state(mut self) -> Self {
        self.project = false;
        self
    }

    /// Commands reach the network only through the proxy listening at `socket` (see
    /// [`crate::network`]); without it they have none.
    pub fn with_network(mut self, socket: Option<PathBuf>) -> Self {
        self.network = socket;
        self
    }

    /// Also reaches `directories` (path, writable), even where they lie inside a hidden
    /// location (an active skill's copy under `.heartwood/`).
    pub fn reaching(mut self, directories: impl IntoIterator<Item = (PathBuf, bool)>) -> Self {
        self.outside.extend(directories);
        self
    }

    /// Also covers `paths` where they lie inside what the sandbox sees.
    pub fn hiding(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.hidden.extend(paths);
        self
    }

    /// The private home's path (`None`: no home at all).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Other resource limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits confined processes run under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The directories besides the system's and the project that confined processes see, and
    /// whether each is writable at project-write.
    pub fn reached(&self) -> &[(PathBuf, bool)] {
        &self.outside
    }

    /// The program and arguments that run `program args` at `level`. Unsandboxed runs the
    /// program itself; a confined level on a machine that cannot confine is refused. `program`
    /// is a name in the system's directories or an absolute path.
    pub fn wrap(
        &self,
        level: SandboxLevel,
        program: &str,
        args: &[&str],
    ) -> Result<Confined, SandboxError> {
        if level != SandboxLevel::Unsandboxed && self.too_broad() {
            return Err(SandboxError::ProjectTooBroad {
                root: self.root.display().to_string(),
            });
        }
        let program = if program.starts_with('/') {
            PathBuf::from(program)
        } else {
            system_program(program)?
        };
        if level == SandboxLevel::Unsandboxed {
            return Ok(Confined {
                program,
                args: args.iter().map(OsString::from).collect(),
                _filters: Vec::new(),
            });
        }
        let found = support();
        let bwrap = support::bwrap()
            .filter(|_| found.enforcing)
            .ok_or_else(|| SandboxError::Unavailable(found.detail.clone()))?;
        let filters = seccomp::descriptors()?;
        let helper = found.landlock.helper.as_deref();
        let mut out = self.arguments(level, helper);
        out.extend(seccomp::arguments(&filters));
        out.push("--".into());
        // With the helper, it sets the limits and leaves no inherited descriptor, and a shell
        // starts only for the network bridge; without, the shell prelude does all of it.
        let shell = match helper {
            Some(_) => {
                out.extend(self.rules(level).into_arguments(false));
                self.network.is_some().then(|| prelude(None, true))
            }
            None => Some(prelude(Some(&self.limits), self.network.is_some())),
        };
        if let Some(shell) = shell {
            out.push(system_program("bash")?.into_os_string());
            out.extend(["-c".into(), shell.into(), PRELUDE_NAME.into()]);
            if self.network.is_some() {
                out.push(crate::network::BRIDGE.into());
            }
        }
        out.push(program.into_os_string());
        out.extend(args.iter().map(OsString::from));
        Ok(Confined {
            program: bwrap,
            args: out,
            _filters: filters,
        })
    }

    /// bubblewrap's arguments for the view at `level`, up to the program; with `helper`, the
    /// Landlock helper bound read-only at [`HELPER_INSIDE`].
    pub(crate) fn arguments(&self, level: SandboxLevel, helper: Option<&Path>) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        let mut arg = |words: &[&dyn AsRef<OsStr>]| {
            out.extend(words.iter().map(|w| w.as_ref().to_owned()));
        };
        arg(&[&"--unshare-all", &"--hostname", &"heartwood-sandbox"]);
        arg(&[
            &"--die-with-parent",
            &"--new-session",
            &"--cap-drop",
            &"ALL",
        ]);
        for (name, entry) in system_layout() {
            match entry {
                SystemEntry::Directory => arg(&[&"--ro-bind", name, name]),
                SystemEntry::Link(target) => arg(&[&"--symlink", target, name]),
            }
        }
        arg(&[&"--dev", &"/dev", &"--proc", &"/proc"]);
        // The kernel's settings are the host's, whatever the namespaces: where Heartwood runs as
        // root, a writable `/proc/sys` would let a "reader" set `kernel.core_pattern` and run a
        // program on the host at the next crash. Read-only, as is the SysRq trigger.
        arg(&[&"--ro-bind", &"/proc/sys", &"/proc/sys"]);
        arg(&[
            &"--ro-bind-try",
            &"/proc/sysrq-trigger",
            &"/proc/sysrq-trigger",
        ]);
        let tmp_size = self.limits.tmp_bytes.to_string();
        arg(&[&"--size", &tmp_size, &"--tmpfs", &"/tmp"]);
        if let Some(home) = self.home.as_deref().filter(|h| self.home_is_private(h)) {
            let size = self.limits.home_bytes.to_string();
            arg(&[&"--size", &size, &"--tmpfs", &home]);
        }
        let bind = if level == SandboxLevel::ProjectWrite {
            "--bind"
        } else {
            "--ro-bind"
        };
        arg(&[&bind, &self.root, &self.root]);
        let nested = if self.project {
            nested_state(&self.root)
        } else {
            Nested::default()
        };
        if level == SandboxLevel::ProjectWrite {
            // Every repository's own folder, nested ones too: hooks and configuration there
            // run on the host at the researcher's next `git commit`.
            for git in &nested.git {
                arg(&[&"--ro-bind", git, git]);
            }
        }
        // Hidden folders become empty and, once what is reached inside them is bound, read-only.
        let mut remount = Vec::new();
        for secret in nested
            .heartwood
            .into_iter()
            .chain(self.hidden.iter().cloned())
        {
            let Ok(meta) = std::fs::symlink_metadata(&secret) else {
                continue;
            };
            if meta.file_type().is_symlink() || !self.visible(&secret) {
                continue;
            }
            if meta.is_dir() {
                arg(&[&"--tmpfs", &secret]);
                remount.push(secret);
            } else {
                arg(&[&"--ro-bind", &"/dev/null", &secret]);
            }
        }
        for (dir, writable) in &self.outside {
            if !dir.is_dir() {
                continue;
            }
            let bind = if *writable && level == SandboxLevel::ProjectWrite {
                "--bind"
            } else {
                "--ro-bind"
            };
            arg(&[&bind, dir, dir]);
        }
        for path in &remount {
            arg(&[&"--remount-ro", path]);
        }
        if let Some(socket) = &self.network {
            arg(&[&"--bind", socket, &crate::network::SOCKET_INSIDE]);
        }
        if let Some(helper) = helper {
            arg(&[&"--ro-bind", &helper, &HELPER_INSIDE]);
        }
        // The root itself (a fresh directory bubblewrap made) takes no new files.
        arg(&[&"--remount-ro", &"/", &"--chdir", &self.root]);
        out
    }

    /// The Landlock rules for the view at `level`, with the resource limits the helper sets:
    /// the same allow-list, read-only except the private `/tmp` and home, and the project and
    /// directories written at project-write. Hidden locations and `.git` folders inside a
    /// writable one stay read-only by the view alone (Landlock only adds permissions beneath a
    /// directory, never takes them back).
    pub(crate) fn rules(&self, level: SandboxLevel) -> Rules {
        let mut rules = Rules::default();
        rules.limits(&self.limits);
        for (name, entry) in system_layout() {
            // A link into /usr is covered there; a real directory is bound as it is.
            if *entry == SystemEntry::Directory {
                rules.read(Path::new(name));
            }
        }
        rules.devices();
        rules.write(Path::new("/tmp"));
        if let Some(home) = self.home.as_deref().filter(|h| self.home_is_private(h)) {
            rules.write(home);
        }
        let writes = level == SandboxLevel::ProjectWrite;
        if writes {
            rules.write(&self.root);
        } else {
            rules.read(&self.root);
        }
        for (dir, writable) in &self.outside {
            if *writable && writes {
                rules.write(dir);
            } else {
                rules.read(dir);
            }
        }
        rules
    }

    /// Whether the project folder is one that cannot be shown alone.
    fn too_broad(&self) -> bool {
        let home = self.home.as_deref();
        TOO_BROAD.iter().any(|b| self.root == Path::new(b)) || home == Some(self.root.as_path())
    }

    /// Whether the home can be an empty directory of its own: not the root, not the project or
    /// a place inside it (the project stays visible), not under a system directory (which is
    /// read-only and shown as it is).
    fn home_is_private(&self, home: &Path) -> bool {
        home.is_absolute()
            && home != Path::new("/")
            && !home.starts_with(&self.root)
            && !SYSTEM_DIRECTORIES.iter().any(|d| home.starts_with(d))
            && !home.starts_with("/tmp")
    }

    /// Whether `path` lies inside something the sandbox shows (the project or a reached
    /// directory); anything else is not there to cover.
    fn visible(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.outside.iter().any(|(d, _)| path.starts_with(d))
    }
}

/// The `.heartwood` and `.git` folders in the project, at the top and nested, found by
/// reading directories (links are not followed; neither kind is looked inside), up to
/// [`MAX_WALK`] directories, the top ones first.
#[derive(Default)]
struct Nested {
    heartwood: Vec<PathBuf>,
    git: Vec<PathBuf>,
}

fn nested_state(root: &Path) -> Nested {
    let mut found = Nested::default();
    let mut queue = std::collections::VecDeque::from([root.to_owned()]);
    let mut read = 0;
    while let Some(dir) = queue.pop_front() {
        read += 1;
        if read > MAX_WALK {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if name == PROJECT_HIDDEN {
                found.heartwood.push(entry.path());
            } else if name == ".git" && !kind.is_symlink() {
                found.git.push(entry.path());
            } else if kind.is_dir() {
                queue.push_back(entry.path());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project's nested state is found and covered; a system directory standing in for "no
    /// project" is not walked (the syntax check's, at every command).
    #[test]
    fn nested_state_is_looked_for_in_a_project_only() {
        let root = tempfile::tempdir().expect("test fixture");
        let nested = root.path().join("sub/.heartwood");
        std::fs::create_dir_all(&nested).expect("test fixture");
        let covers = |sandbox: &Sandbox| {
            sandbox
                .arguments(SandboxLevel::ReadOnly, None)
                .windows(2)
                .any(|w| w[0] == "--tmpfs" && Path::new(&w[1]) == nested)
        };
        assert!(covers(&Sandbox::new(root.path())));
        assert!(!covers(&Sandbox::new(root.path()).without_project_state()));
    }

    /// The view and the Landlock rules show the same system directories, read once: each
    /// directory bound read-only and granted read, each link made again and granted nothing of
    /// its own (its target is), and `/usr` always there.
    #[test]
    fn the_view_and_the_rules_read_the_same_system_layout() {
        let root = tempfile::tempdir().expect("test fixture");
        let sandbox = Sandbox::new(root.path());
        let view = sandbox.arguments(SandboxLevel::ReadOnly, None);
        let rules = sandbox.rules(SandboxLevel::ReadOnly).into_arguments(false);
        let has = |args: &[OsString], words: &[&OsStr]| {
            args.windows(words.len())
                .any(|w| w.iter().zip(words).all(|(a, b)| a.as_os_str() == *b))
        };
        let layout = system_layout();
        assert!(layout.contains(&("/usr", SystemEntry::Directory)));
        for (name, entry) in layout {
            let name = OsStr::new(name);
            let granted = has(&rules, &[OsStr::new("--read"), name]);
            match entry {
                SystemEntry::Directory => {
                    assert!(
                        has(&view, &[OsStr::new("--ro-bind"), name, name]),
                        "{name:?}"
                    );
                    assert!(granted, "{name:?}");
                }
                SystemEntry::Link(target) => {
                    assert!(has(
                        &view,
                        &[OsStr::new("--symlink"), target.as_os_str(), name]
                    ));
                    assert!(!granted, "{name:?}");
                }
            }
        }
        assert!(std::ptr::eq(layout, system_layout()), "read once");
    }
}
