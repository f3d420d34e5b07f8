//! Files and directories only the user can read: the store's staging, records and transfer
//! views are made through these.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use crate::ModelError;
use crate::error::IoContext;

/// Makes `dir` and its missing parents, readable by the user only.
pub(crate) fn private_dirs(dir: &Path) -> Result<(), ModelError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .ctx("create", dir)
}

/// Writes `bytes` to `path` (mode 0600) and syncs it.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    use std::io::Write;
    let mut file = fs::File::create(path).ctx("create", path)?;
    file.set_permissions(fs::Permissions::from_mode(0o600))
        .ctx("restrict", path)?;
    file.write_all(bytes).ctx("write", path)?;
    file.sync_all().ctx("sync", path)
}
