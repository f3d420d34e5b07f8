//! The second layer under bubblewrap's mount namespace: Landlock, from the same allow-list as
//! the view, applied inside the sandbox by Heartwood's own helper program (`heartwood-confine`).
//!
//! Owns: the rules a confined process runs under ([`Rules`]: paths and resource limits), the
//! helper's whole work ([`main`]: restrict itself, set the limits, leave no inherited
//! descriptor above 2 to the program, then `exec` it), where Heartwood finds the helper
//! ([`find_helper`]), and whether the layer is on here ([`LandlockLayer`]).
//!
//! Why a program of ours inside, after bubblewrap: Landlock forbids mounting, so it cannot be
//! applied before bubblewrap builds the view, and a domain is inherited across `exec`, so the
//! helper restricts itself and becomes the program. Why it also does the shell prelude's work
//! ([`crate::launcher`]) where it runs: it is already a process inside the view, and a `bash`
//! started after it only to set three limits and close descriptors doubled the cost of every
//! confined start. Why arguments rather than a descriptor: the rules are paths the view
//! already shows, and `ps` inside says what a process was held to.
//!
//! What the layer adds to the view: the view's `/dev` is a writable tmpfs bubblewrap makes (any
//! file or node could be created there, at every level) and a bind mount is writable or not as
//! a whole; the ruleset names what may be written, beneath which directory, and is checked by
//! the kernel at every open, even through a descriptor opened before the mounts were made.
//! File rights are pinned at ABI 5: a later ABI's rights (connecting to a named socket, ABI 9)
//! stay unhandled, so the proxy's socket ([`crate::network::SOCKET_INSIDE`]) stays reachable.

use std::ffi::OsString;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, LandlockStatus, PathBeneath, PathFd, PathFdError, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};
use serde::{Deserialize, Serialize};

use crate::Limits;

/// The helper's program name, as `cargo install` puts it beside `heartwood`.
pub const HELPER: &str = "heartwood-confine";

/// Where the helper appears inside the sandbox (bound read-only before the root is).
pub const HELPER_INSIDE: &str = "/run/heartwood/confine";

/// An explicit path to the helper, for an installation that keeps it elsewhere.
pub const HELPER_VARIABLE: &str = "HEARTWOOD_CONFINE";

/// The exit status of a helper that could not confine (the program did not start), as the
/// prelude's when it cannot set the limits.
const CANNOT_CONFINE: u8 = 125;

/// The exit status of a helper on a kernel without Landlock.
const KERNEL_WITHOUT: u8 = 3;

/// The flag that carries the resource limits, `MEMORY:PROCESSES:FILE` (bytes, count, bytes).
const LIMITS_FLAG: &str = "--limits";

/// Where the helper finds the descriptors it was started with.
const OWN_DESCRIPTORS: &str = "/proc/self/fd";

/// The file rights the rules are written for: every right up to ABI 5 (files, directories,
/// renames across directories, truncation, device `ioctl`s).
const FILE_ABI: ABI = ABI::V5;

/// How a rule grants a hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    /// Read files, list directories, execute programs: the system's directories, a project
    /// or directory reached read-only.
    Read,
    /// Everything: the private `/tmp` and home, a project or directory written at project-write.
    Write,
    /// Open what exists for reading and writing, create nothing: `/dev`'s nodes and `/proc`.
    Open,
    /// List directories, read no file: the whole view from `/`.
    List,
}

impl Grant {
    fn flag(self) -> &'static str {
        match self {
            Grant::Read => "--read",
            Grant::Write => "--write",
            Grant::Open => "--open",
            Grant::List => "--list",
        }
    }

    fn parse(flag: &str) -> Option<Grant> {
        [Grant::Read, Grant::Write, Grant::Open, Grant::List]
            .into_iter()
            .find(|g| g.flag() == flag)
    }

    fn access(self) -> landlock::BitFlags<AccessFs> {
        match self {
            Grant::Read => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
            Grant::Write => AccessFs::from_all(FILE_ABI),
            Grant::Open => {
                AccessFs::ReadFile
                    | AccessFs::ReadDir
                    | AccessFs::WriteFile
                    | AccessFs::Truncate
                    | AccessFs::IoctlDev
            }
            Grant::List => AccessFs::ReadDir.into(),
        }
    }
}

/// The rules for one confined process, as the helper's arguments.
#[derive(Debug, Default)]
pub(crate) struct Rules(Vec<OsString>);

impl Rules {
    fn grant(&mut self, grant: Grant, path: &Path) {
        self.0.push(grant.flag().into());
        self.0.push(path.as_os_str().to_owned());
    }

    /// Read and execute beneath `path`.
    pub(crate) fn read(&mut self, path: &Path) {
        self.grant(Grant::Read, path);
    }

    /// Read and write beneath `path`.
    pub(crate) fn write(&mut self, path: &Path) {
        self.grant(Grant::Write, path);
    }

    /// What every confined process uses besides its directories: listing any directory of the
    /// view (`ls /`, `find /`: the view holds only the allow-list, and a listing reads no
    /// file), `/dev`'s nodes (open, never create; its `/dev/shm` is the sandbox's own, for
    /// POSIX shared memory and semaphores) and `/proc` (its own mount; `/proc/sys` stays
    /// read-only by the view).
    pub(crate) fn devices(&mut self) {
        self.grant(Grant::List, Path::new("/"));
        self.grant(Grant::Open, Path::new("/dev"));
        self.grant(Grant::Write, Path::new("/dev/shm"));
        self.grant(Grant::Open, Path::new("/proc"));
    }

    /// The resource limits the helper sets before it becomes the program (what the shell
    /// prelude's `ulimit`s set where there is no helper).
    pub(crate) fn limits(&mut self, limits: &Limits) {
        self.0.push(LIMITS_FLAG.into());
        self.0.push(
            format!(
                "{}:{}:{}",
                limits.memory_bytes, limits.processes, limits.file_bytes
            )
            .into(),
        );
    }

    /// The helper's arguments up to the program (`--report` first where asked).
    pub(crate) fn into_arguments(self, report: bool) -> Vec<OsString> {
        let mut out = vec![OsString::from(HELPER_INSIDE)];
        if report {
            out.push("--report".into());
        }
        out.extend(self.0);
        out.push("--".into());
        out
    }
}

/// Whether the Landlock layer is on here, found with the sandbox's probe.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockLayer {
    /// The helper every confined process starts through; `None` when the layer is off.
    pub helper: Option<PathBuf>,
    /// Whether the kernel has no Landlock to apply (the one reason the layer may be off on a
    /// correct installation).
    pub kernel_without: bool,
    /// What the layer is (the kernel's ABI), or why it is off and what to do.
    pub detail: String,
}

impl LandlockLayer {
    /// Whether confined processes run under Landlock too.
    pub fn on(&self) -> bool {
        self.helper.is_some()
    }
}

/// Why Heartwood has no helper to start.
#[derive(Debug, thiserror::Error)]
pub enum HelperMissing {
    /// `HEARTWOOD_CONFINE` names no file.
    #[error("${HELPER_VARIABLE} ({}) is not an absolute path to a file", .0.display())]
    Variable(PathBuf),
    /// The running program's path is unknown.
    #[error("the running program's path is unknown: {0}")]
    Exe(std::io::Error),
    /// Not in any place looked at.
    #[error(
        "{HELPER} is not at {}; it is built with the heartwood command (cargo build -p \
         heartwood-cli --bins, or cargo install --path crates/heartwood-cli, which installs both)",
        .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" or ")
    )]
    NotFound(Vec<PathBuf>),
}

/// The helper: `HEARTWOOD_CONFINE` when set, else `heartwood-confine` beside the running
/// program or in its folder's parent (a test executable runs from `target/<profile>/deps`,
/// the helper is built into `target/<profile>`).
pub fn find_helper() -> Result<PathBuf, HelperMissing> {
    if let Some(path) = std::env::var_os(HELPER_VARIABLE).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_absolute() && path.is_file() {
            Ok(path)
        } else {
            Err(HelperMissing::Variable(path))
        };
    }
    let exe = std::env::current_exe().map_err(HelperMissing::Exe)?;
    let beside = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let places: Vec<PathBuf> = [Some(beside.as_path()), beside.parent()]
        .into_iter()
        .flatten()
        .map(|dir| dir.join(HELPER))
        .collect();
    match places.iter().find(|p| p.is_file()) {
        Some(found) => Ok(found.clone()),
        None => Err(HelperMissing::NotFound(places)),
    }
}

/// Why the helper could not confine and start the program.
#[derive(Debug, thiserror::Error)]
enum ConfineError {
    #[error(
        "usage: {HELPER} [--report] [--limits MEMORY:PROCESSES:FILE] \
         [--read|--write|--open|--list PATH]... -- PROGRAM [ARG]..."
    )]
    Usage,
    #[error("cannot open {path} for a rule: {source}")]
    Path {
        path: String,
        #[source]
        source: PathFdError,
    },
    #[error("cannot apply the Landlock ruleset: {0}")]
    Ruleset(#[from] RulesetError),
    #[error(
        "this kernel does not enforce Landlock (not built in, or not enabled at boot: add \
         landlock to the lsm= list)"
    )]
    KernelWithout,
    #[error("cannot set the resource limits: {0}")]
    Limits(#[source] std::io::Error),
    #[error("cannot close the descriptors inherited above 2: {0}")]
    Descriptors(#[source] std::io::Error),
    #[error("cannot start {program}: {source}")]
    Exec {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// The helper's program: leave the program no descriptor above 2, restrict this process with
/// the rules its arguments name, set the limits, then become the program. Returns only when
/// that failed (the program never ran unconfined).
pub fn main() -> ExitCode {
    let error = confine(std::env::args_os().skip(1));
    eprintln!("{HELPER}: {error}");
    ExitCode::from(match error {
        ConfineError::KernelWithout => KERNEL_WITHOUT,
        _ => CANNOT_CONFINE,
    })
}

/// The helper's arguments up to the program.
#[derive(Debug, Default, PartialEq, Eq)]
struct Parsed {
    report: bool,
    /// Address space, processes, file size.
    limits: Option<[u64; 3]>,
    rules: Vec<(Grant, PathBuf)>,
}

/// Reads the arguments up to `--`; `None` when they are not the helper's.
fn parse(args: &mut impl Iterator<Item = OsString>) -> Option<Parsed> {
    let mut parsed = Parsed::default();
    loop {
        let arg = args.next()?;
        if arg == "--" {
            return Some(parsed);
        }
        if arg == "--report" {
            parsed.report = true;
            continue;
        }
        let value = args.next()?;
        if arg == LIMITS_FLAG {
            parsed.limits = Some(parse_limits(value.to_str()?)?);
            continue;
        }
        let grant = arg.to_str().and_then(Grant::parse)?;
        parsed.rules.push((grant, PathBuf::from(value)));
    }
}

fn parse_limits(text: &str) -> Option<[u64; 3]> {
    let mut parts = text.split(':').map(|p| p.parse::<u64>().ok());
    let limits = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(limits)
}

fn confine(mut args: impl Iterator<Item = OsString>) -> ConfineError {
    let Some(parsed) = parse(&mut args) else {
        return ConfineError::Usage;
    };
    let Some(program) = args.next() else {
        return ConfineError::Usage;
    };
    // Before the ruleset: the rules need not grant `/proc` for the helper to list its own
    // descriptors.
    if let Err(e) = close_inherited() {
        return ConfineError::Descriptors(e);
    }
    match restrict(&parsed.rules) {
        Ok(abi) if parsed.report => eprintln!("Landlock {abi}"),
        Ok(_) => {}
        Err(e) => return e,
    }
    if let Some(limits) = parsed.limits
        && let Err(e) = set_limits(limits)
    {
        return ConfineError::Limits(e);
    }
    let source = std::process::Command::new(&program).args(args).exec();
    ConfineError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

/// Sets each limit, hard and soft alike (as `ulimit -HS`): address space, processes, file size.
fn set_limits([memory, processes, file]: [u64; 3]) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    for (resource, value) in [
        (Resource::As, memory),
        (Resource::Nproc, processes),
        (Resource::Fsize, file),
    ] {
        let limit = Rlimit {
            current: Some(value),
            maximum: Some(value),
        };
        setrlimit(resource, limit)?;
    }
    Ok(())
}

/// Marks every descriptor above 2 close-on-exec, so the program starts with none of those
/// bubblewrap passed on (one Heartwood's own parent left open, say). Marked, not closed:
/// nothing in this process is closed under an owner's feet, and the `exec` that follows
/// closes them all (what the helper opens after this, it opens close-on-exec).
fn close_inherited() -> std::io::Result<()> {
    let open: Vec<RawFd> = std::fs::read_dir(OWN_DESCRIPTORS)?
        .map(|entry| entry.map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())))
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .filter(|fd| *fd > 2)
        .collect();
    for fd in open {
        // A raw number because these descriptors belong to no one here (nix 0.29's `fcntl`
        // takes one without `unsafe`); setting a flag moves or closes nothing.
        let set = nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
        match set {
            // The listing's own descriptor, closed since.
            Ok(_) | Err(nix::errno::Errno::EBADF) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Applies the ruleset to this process; the kernel's ABI and how fully it is enforced.
fn restrict(rules: &[(Grant, PathBuf)]) -> Result<String, ConfineError> {
    let mut created = Ruleset::default()
        .handle_access(AccessFs::from_all(FILE_ABI))?
        // Signals and abstract sockets to processes outside the domain (ABI 6); below ABI 6
        // the PID and network namespaces already separate both.
        .scope(Scope::from_all(ABI::V6))?
        .create()?;
    for (grant, path) in rules {
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            // What does not exist inside grants nothing.
            Err(PathFdError::OpenCall { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                continue;
            }
            Err(source) => {
                return Err(ConfineError::Path {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let mut access = grant.access();
        if !path.is_dir() {
            access &= AccessFs::from_file(FILE_ABI);
        }
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    let status = created.restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available {
            kernel_abi: Some(v),
            ..
        } => format!("ABI {v}"),
        LandlockStatus::Available { effective_abi, .. } => {
            // `V7` is the crate's name for ABI 7.
            format!(
                "ABI {}",
                format!("{effective_abi:?}").trim_start_matches('V')
            )
        }
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => {
            return Err(ConfineError::KernelWithout);
        }
    };
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(format!("{abi}, fully enforced")),
        RulesetStatus::PartiallyEnforced => Ok(format!("{abi}, enforced as far as it goes")),
        RulesetStatus::NotEnforced => Err(ConfineError::KernelWithout),
    }
}

/// Whether a probe's failure means the kernel has no Landlock.
pub(crate) fn kernel_without(status: Option<i32>) -> bool {
    status == Some(i32::from(KERNEL_WITHOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grant_reads_back_from_its_flag() {
        for grant in [Grant::Read, Grant::Write, Grant::Open, Grant::List] {
            assert_eq!(Grant::parse(grant.flag()), Some(grant));
        }
        assert_eq!(Grant::parse("--anything"), None);
    }

    #[test]
    fn read_and_open_grants_create_nothing() {
        let create = AccessFs::MakeReg | AccessFs::MakeDir | AccessFs::MakeChar | AccessFs::MakeSym;
        assert!((Grant::Read.access() & create).is_empty());
        assert!((Grant::Open.access() & create).is_empty());
        assert_eq!(Grant::List.access(), AccessFs::ReadDir);
        assert!(!(Grant::Read.access()).contains(AccessFs::WriteFile));
        assert!(Grant::Write.access().contains(create));
    }

    /// The limits and grants a sandbox writes are the ones the helper reads.
    #[test]
    fn the_helper_reads_back_the_limits_and_grants_the_rules_write() {
        let limits = Limits {
            memory_bytes: 1 << 33,
            processes: 12,
            file_bytes: 1 << 20,
            ..Limits::default()
        };
        let mut rules = Rules::default();
        rules.limits(&limits);
        rules.read(Path::new("/usr"));
        rules.write(Path::new("/tmp"));
        let program = OsString::from("/usr/bin/true");
        let mut args = rules
            .into_arguments(true)
            .into_iter()
            .skip(1)
            .chain([program.clone()]);
        let parsed = parse(&mut args).expect("the helper's own arguments");
        let expected = Parsed {
            report: true,
            limits: Some([1 << 33, 12, 1 << 20]),
            rules: vec![
                (Grant::Read, PathBuf::from("/usr")),
                (Grant::Write, PathBuf::from("/tmp")),
            ],
        };
        assert_eq!(parsed, expected);
        assert_eq!(args.next(), Some(program));
        for bad in ["1:2", "1:2:3:4", "1:x:3", "", "-1:2:3"] {
            assert_eq!(parse_limits(bad), None, "{bad}");
        }
    }

    #[test]
    fn arguments_without_a_program_are_refused_before_anything_is_applied() {
        let args = ["--read", "/usr", "--"].map(OsString::from);
        assert!(matches!(confine(args.into_iter()), ConfineError::Usage));
        let args = ["--bogus", "/usr", "--", "/usr/bin/true"].map(OsString::from);
        assert!(matches!(confine(args.into_iter()), ConfineError::Usage));
        let args = ["--limits", "1:2", "--", "/usr/bin/true"].map(OsString::from);
        assert!(matches!(confine(args.into_iter()), ConfineError::Usage));
    }
}
