//! Whether this machine can confine, found once per process by starting a confined `true` with
//! the very view, filter and limits every tool process gets, and then once more through the
//! Landlock helper ([`crate::confine`]) to find whether that layer is on.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::confine::{self, LandlockLayer};
use crate::{Allowed, Sandbox, SandboxLevel, seccomp};

/// What this machine can enforce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSupport {
    /// Whether the confined levels are enforced.
    pub enforcing: bool,
    /// How (the program and what it uses), or why not and what to do.
    pub detail: String,
    /// Whether Landlock is layered under the view, and why not.
    #[serde(default)]
    pub landlock: LandlockLayer,
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
/// The Landlock layer is required alike, unless the kernel has none: a missing or failing
/// helper fails the test rather than leaving the layer out unseen.
pub fn required_by_test() -> bool {
    let found = support();
    if std::env::var_os("HEARTWOOD_REQUIRE_SANDBOX").is_some() {
        if !found.enforcing {
            panic!("the sandbox is required here: {}", found.detail);
        }
        if !found.landlock.on() && !found.landlock.kernel_without {
            panic!(
                "the sandbox's Landlock layer is required here: {}",
                found.landlock.detail
            );
        }
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
        landlock: LandlockLayer {
            detail: "no Landlock layer without the sandbox".to_owned(),
            ..LandlockLayer::default()
        },
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
    let mut args = sandbox.arguments(SandboxLevel::ReadOnly, None);
    args.extend(seccomp::arguments(&filters));
    args.extend(["--".into(), "/usr/bin/true".into()]);
    let tried = std::process::Command::new(&bwrap)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output();
    drop(filters);
    match tried {
        Ok(out) if out.status.success() => {
            let landlock = probe_landlock(&bwrap, &sandbox);
            SandboxSupport {
                enforcing: true,
                detail: format!(
                    "{}: an allow-listed view (system directories read-only, the project, a \
                     private /tmp and home); user, mount, PID, IPC, UTS, cgroup and network \
                     namespaces; a syscall filter; capabilities dropped; resource limits; {}",
                    bwrap.display(),
                    if landlock.on() {
                        format!("Landlock layered under the view ({})", landlock.detail)
                    } else {
                        format!("no Landlock layer: {}", landlock.detail)
                    }
                ),
                landlock,
            }
        }
        Ok(out) => refused(format!(
            "bubblewrap cannot create namespaces here ({}); enable unprivileged user namespaces \
             (sysctl kernel.unprivileged_userns_clone=1) or run where they are",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => refused(format!("bubblewrap at {} cannot run: {e}", bwrap.display())),
    }
}

/// Whether the Landlock layer works here: the helper found, and a confined `true` started
/// through it (the helper says the kernel's ABI, or that the kernel has no Landlock).
fn probe_landlock(bwrap: &Path, sandbox: &Sandbox) -> LandlockLayer {
    let helper = match confine::find_helper() {
        Ok(helper) => helper,
        Err(e) => {
            return LandlockLayer {
                detail: format!("{e}; commands are confined by the view alone"),
                ..LandlockLayer::default()
            };
        }
    };
    let tried = || -> Result<std::process::Output, crate::SandboxError> {
        let filters = seccomp::descriptors()?;
        let mut args = sandbox.arguments(SandboxLevel::ReadOnly, Some(&helper));
        args.extend(seccomp::arguments(&filters));
        args.push("--".into());
        args.extend(sandbox.rules(SandboxLevel::ReadOnly).into_arguments(true));
        args.push("/usr/bin/true".into());
        Ok(std::process::Command::new(bwrap)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()?)
    };
    let tried = tried();
    match tried {
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            if out.status.success() {
                LandlockLayer {
                    detail: format!("{said}, by {}", helper.display()),
                    helper: Some(helper),
                    kernel_without: false,
                }
            } else {
                LandlockLayer {
                    helper: None,
                    kernel_without: confine::kernel_without(out.status.code()),
                    detail: format!(
                        "{said} ({} under bubblewrap); commands are confined by the view alone",
                        helper.display()
                    ),
                }
            }
        }
        Err(e) => LandlockLayer {
            detail: format!("cannot try {}: {e}", helper.display()),
            ..LandlockLayer::default()
        },
    }
}

/// `bwrap` in the system's directories (never `PATH`: the project could put one there).
pub(crate) fn bwrap() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}
