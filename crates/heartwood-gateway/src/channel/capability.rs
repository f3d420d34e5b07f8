//! The channel's capability: a random secret the serving process writes (0600) into the user's
//! private socket directory, outside every sandbox's view, and that every client presents as
//! its first line. Besides the peer's user and the lease holder's process: a process of the
//! same user that cannot read the file (a confined command, whichever project it runs in) can
//! neither read a session nor steer it, even where it can reach the socket.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The first line a client sends.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Hello {
    pub(super) capability: String,
}

/// A capability issued by the serving process; dropping it removes the file.
pub(super) struct Capability {
    path: PathBuf,
    secret: String,
}

/// Where the capability of the channel listening at `socket` is kept.
fn location(socket: &Path) -> std::io::Result<PathBuf> {
    super::private_file(socket, "capability")
}

impl Capability {
    /// Draws a new capability for the channel at `socket` and writes it, readable by this user
    /// only, replacing one an ended owner left.
    pub(super) fn issue(socket: &Path) -> std::io::Result<Capability> {
        let mut random = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut random)?;
        let secret: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let path = location(socket)?;
        let staged = path.with_extension(format!("{}.tmp", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staged)?;
        file.write_all(secret.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&staged, &path)?;
        Ok(Capability { path, secret })
    }

    /// The capability a client presents for the channel at `socket`.
    pub(super) fn read(socket: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(location(socket)?)
    }

    /// Whether `presented` is this capability (compared in time independent of where the
    /// first difference is).
    pub(super) fn admits(&self, presented: &str) -> bool {
        let (a, b) = (self.secret.as_bytes(), presented.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl Drop for Capability {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
