//! Where Heartwood finds the programs it starts itself, and the environment they start with:
//! the system's directories only, never `PATH`.

use std::path::{Path, PathBuf};

use crate::SandboxError;

/// The directories Heartwood finds its helper programs in, in order.
pub const SYSTEM_BIN: [&str; 4] = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];

/// The environment every helper program starts with, and nothing else.
pub const MINIMAL_ENV: [(&str, &str); 2] = [("PATH", SYSTEM_PATH), ("LC_ALL", "C")];

/// The search path of programs Heartwood trusts: the system's directories only.
pub const SYSTEM_PATH: &str = "/usr/bin:/bin";

/// `name` in the system's directories.
pub fn system_program(name: &str) -> Result<PathBuf, SandboxError> {
    let plain = !name.is_empty() && !name.contains('/');
    SYSTEM_BIN
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|p| plain && p.is_file())
        .ok_or_else(|| SandboxError::ProgramMissing {
            program: name.to_owned(),
        })
}
