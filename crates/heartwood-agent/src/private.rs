//! The engine's own files are private to the researcher: its directory is created 0700 and
//! its files 0600, because they hold the whole conversation, tool output included.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

/// Creates `dir` (and missing parents) readable by its owner only; an existing `dir` is made
/// so too.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(0o700);
    builder.create(dir)?;
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

/// Options that create a file readable by its owner only.
pub(crate) fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    options.mode(0o600);
    options
}

/// Opens `path` for appending, creating it private.
pub(crate) fn append(path: &Path) -> io::Result<File> {
    options().create(true).append(true).open(path)
}

/// Writes `bytes` to a new private file at `path`, replacing any file there.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let _ = std::fs::remove_file(path);
    options()
        .create_new(true)
        .write(true)
        .open(path)?
        .write_all(bytes)
}
