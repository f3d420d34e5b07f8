//! Streaming SHA-256 of files, reporting progress to a transfer and stopping when it is
//! cancelled. The one place model bytes are hashed.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::ModelError;
use crate::error::IoContext;
use crate::manifest::{FileEntry, hex};
use crate::transfer::Transfer;

/// Read size: large enough that system calls are noise next to hashing.
pub const CHUNK: usize = 1 << 20;

/// Copies `reader` into `out` (when given) while hashing, in chunks, checking `transfer` for
/// cancellation; returns (bytes, SHA-256 hex, CRC-32).
pub fn copy_hashing(
    reader: &mut dyn Read,
    mut out: Option<&mut dyn Write>,
    limit: u64,
    transfer: &Transfer,
    path: &Path,
) -> Result<(u64, String, u32), ModelError> {
    let mut sha = Sha256::new();
    let mut crc = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; CHUNK];
    let mut total = 0u64;
    while total < limit {
        if transfer.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let want = usize::try_from((limit - total).min(CHUNK as u64)).unwrap_or(CHUNK);
        let n = reader.read(&mut buffer[..want]).ctx("read", path)?;
        if n == 0 {
            break;
        }
        let chunk = &buffer[..n];
        sha.update(chunk);
        crc.update(chunk);
        if let Some(out) = out.as_deref_mut() {
            out.write_all(chunk).ctx("write", path)?;
        }
        total += n as u64;
        transfer.advance(n as u64);
    }
    Ok((total, hex(&sha.finalize()), crc.finalize()))
}

/// Checks the file at `path` against `entry` (size first, then every byte).
pub fn verify_file(path: &Path, entry: &FileEntry, transfer: &Transfer) -> Result<(), ModelError> {
    let mut file = File::open(path).ctx("open", path)?;
    let size = file.metadata().ctx("stat", path)?.len();
    if size != entry.size {
        return Err(ModelError::Integrity(format!(
            "{} is {size} bytes; the manifest says {}",
            entry.path, entry.size
        )));
    }
    let (read, sha256, _) = copy_hashing(&mut file, None, u64::MAX, transfer, path)?;
    if read != entry.size || sha256 != entry.sha256 {
        return Err(ModelError::Integrity(format!(
            "{} does not match its SHA-256 in the manifest (expected {}, found {sha256})",
            entry.path, entry.sha256
        )));
    }
    Ok(())
}

/// The size and SHA-256 of the file at `path`, as a manifest entry named `name`.
pub fn describe_file(
    path: &Path,
    name: &str,
    transfer: &Transfer,
) -> Result<FileEntry, ModelError> {
    let mut file = File::open(path).ctx("open", path)?;
    let (size, sha256, _) = copy_hashing(&mut file, None, u64::MAX, transfer, path)?;
    Ok(FileEntry {
        path: name.to_owned(),
        size,
        sha256,
    })
}
