//! Whether this machine can confine, found once per process by starting a confined `true` with
//! the very view, filter and limits every tool process gets.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::{Allowed, Sandbox, SandboxLevel, seccomp};

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

/// For tests that need confinement: `true` where this machine confines; where it cannot, a
/// panic when `HEARTWOOD_REQUIRE_SANDBOX` is set (CI installs bubblewrap and sets it, so such a
/// test fails there rather than passing by running nothing), else `false` with the reason.
pub fn required_by_test() -> bool {
    let found = support();
    if !found.enforcing && std::env::var_os("HEARTWOOD_REQUIRE_SANDBOX").is_some() {
        panic!("the sandbox is required here: {}", found.detail);
    }
    if !found.enforcing {
        eprintln!("SKIPPED: no sandbox on this machine: {}", found.detail);
    }
    found.enforcing
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

fn refused(detail: String) -> SandboxSupport {
    SandboxSupport {
        enforcing: false,
        detail,
    }
}

fn probe() -> SandboxSupport {
    let Some(bwrap) = bwrap() else {
        return refused(
            "bubblewrap (bwrap) is not installed, so commands cannot be confined; install it \
             (Debian and Ubuntu: apt-get install bubblewrap)"
                .to_owned(),
        );
    };
    if let Err(e) = seccomp::available() {
        return refused(format!("{e}; commands cannot be confined here"));
    }
    let sandbox = Sandbox::new(Path::new("/usr")).with_home(None);
    let filters = match seccomp::descriptors() {
        Ok(filters) => filters,
        Err(e) => return refused(e.to_string()),
    };
    let mut args = sandbox.arguments(SandboxLevel::ReadOnly);
    args.extend(seccomp::arguments(&filters));
    args.extend(["--".into(), "/usr/bin/true".into()]);
    let tried = std::process::Command::new(&bwrap)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output();
    drop(filters);
    match tried {
        Ok(out) if out.status.success() => SandboxSupport {
            enforcing: true,
            detail: format!(
                "{}: an allow-listed view (system directories read-only, the project, a private \
                 /tmp and home); user, mount, PID, IPC, UTS, cgroup and network namespaces; a \
                 syscall filter; capabilities dropped; resource limits",
                bwrap.display()
            ),
        },
        Ok(out) => refused(format!(
            "bubblewrap cannot create namespaces here ({}); enable unprivileged user namespaces \
             (sysctl kernel.unprivileged_userns_clone=1) or run where they are",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => refused(format!("bubblewrap at {} cannot run: {e}", bwrap.display())),
    }
}

/// `bwrap` in the system's directories (never `PATH`: the project could put one there).
pub(crate) fn bwrap() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}
