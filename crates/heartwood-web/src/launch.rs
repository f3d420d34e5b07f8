//! What `heartwood serve` keeps between runs for one project: the port it listened on and its
//! launch capability, so a bookmarked page (and a reload after the server restarted) still
//! reaches the project. It is kept in the user's own configuration folder, one file per
//! project (serving a folder creates nothing in it); the file is the owner's alone (0600), and
//! one anyone else could read is not trusted and a new secret is drawn. `--new-token` draws
//! one on purpose.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Capability;

/// Where the launch of the project at `root` is kept, under the user's configuration folder
/// `config_dir`: `serve/<digest of the project's path>.json`.
pub fn path_for(config_dir: &Path, root: &Path) -> PathBuf {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(root.as_os_str().as_encoded_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    config_dir.join("serve").join(format!("{name}.json"))
}

/// A saved launch: the port and the capability.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The port the server listened on.
    pub port: u16,
    /// The capability it accepted.
    pub capability: Capability,
}

#[derive(Serialize, Deserialize)]
struct Saved {
    port: u16,
    token: String,
}

/// The launch saved at `path`, when there is one only its owner can read.
pub fn load(path: &Path) -> Option<Launch> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let saved: Saved = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let well_formed = saved.token.len() == 64 && saved.token.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed.then(|| Launch {
        port: saved.port,
        capability: Capability::from_secret(&saved.token),
    })
}

/// Saves `launch` at `path`, private to its owner (its folder 0700), replacing what was there
/// whole.
pub fn save(path: &Path, launch: &Launch) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the launch file has no folder"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let temporary = dir.join(format!(".launch.{}", std::process::id()));
    let saved = Saved {
        port: launch.port,
        token: launch.capability.reveal().to_owned(),
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(&serde_json::to_vec(&saved)?)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_launch_comes_back_and_one_others_can_read_does_not() {
        let dir = tempfile::tempdir().expect("dir");
        let launch = Launch {
            port: 8765,
            capability: Capability::generate().expect("random"),
        };
        let path = path_for(dir.path(), Path::new("/projects/sleep"));
        assert_ne!(path, path_for(dir.path(), Path::new("/projects/other")));
        save(&path, &launch).expect("save");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let back = load(&path).expect("load");
        assert_eq!(back.port, 8765);
        assert!(back.capability.matches(launch.capability.reveal()));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(load(&path).is_none(), "a readable secret is not trusted");
        std::fs::write(&path, b"{\"port\": 1, \"token\": \"short\"}").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(load(&path).is_none(), "a malformed secret is not trusted");
    }
}
