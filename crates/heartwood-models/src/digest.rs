//! Streaming SHA-256 of files, reporting progress to a transfer and stopping when it is
//! cancelled. The one place model bytes are hashed.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::ModelError;
use crate::error::IoContext;
use crate::manifest::{FileEntry, hex};
use crate::transfer::Transfer;

/// Read size: large enough that system calls are noise next to hashing.
pub const CHUNK: usize = 1 << 20;

/// Copies `reader` into `out` (when given) while hashing, in chunks, checking `transfer` for
/// cancellation; returns (bytes, SHA-256 hex, CRC-32). With an output, hashing runs on a
/// second thread beside the writes, so a copy costs about the slower of the two, not their sum.
pub fn copy_hashing(
    reader: &mut dyn Read,
    out: Option<&mut dyn Write>,
    limit: u64,
    transfer: &Transfer,
    path: &Path,
) -> Result<(u64, String, u32), ModelError> {
    let Some(out) = out else {
        let mut hasher = Hashers::default();
        let total = read_chunks(reader, limit, transfer, path, |chunk| {
            hasher.update(&chunk);
            Ok(())
        })?;
        let (sha256, crc) = hasher.finish();
        return Ok((total, sha256, crc));
    };
    std::thread::scope(|scope| {
        // A few chunks in flight bound the memory to a few MiB.
        let (chunks, received) = std::sync::mpsc::sync_channel::<Arc<Vec<u8>>>(4);
        let hashing = scope.spawn(move || {
            let mut hasher = Hashers::default();
            for chunk in received {
                hasher.update(&chunk);
            }
            hasher.finish()
        });
        let copied = read_chunks(reader, limit, transfer, path, |chunk| {
            let chunk = Arc::new(chunk);
            // The hashing thread only stops when this side hangs up.
            let _ = chunks.send(chunk.clone());
            out.write_all(&chunk).ctx("write", path)
        });
        drop(chunks);
        let (sha256, crc) = hashing.join().expect("hashing does not panic");
        copied.map(|total| (total, sha256, crc))
    })
}

#[derive(Default)]
struct Hashers {
    sha: Sha256,
    crc: crc32fast::Hasher,
}

impl Hashers {
    fn update(&mut self, bytes: &[u8]) {
        self.sha.update(bytes);
        self.crc.update(bytes);
    }

    fn finish(self) -> (String, u32) {
        (hex(&self.sha.finalize()), self.crc.finalize())
    }
}

/// Reads up to `limit` bytes in chunks of [`CHUNK`], handing each to `each` and counting it
/// on `transfer`; stops with [`ModelError::Cancelled`] when the transfer is cancelled.
fn read_chunks(
    reader: &mut dyn Read,
    limit: u64,
    transfer: &Transfer,
    path: &Path,
    mut each: impl FnMut(Vec<u8>) -> Result<(), ModelError>,
) -> Result<u64, ModelError> {
    let mut total = 0u64;
    while total < limit {
        if transfer.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let want = usize::try_from((limit - total).min(CHUNK as u64)).unwrap_or(CHUNK);
        let mut buffer = vec![0u8; want];
        let n = reader.read(&mut buffer).ctx("read", path)?;
        if n == 0 {
            break;
        }
        buffer.truncate(n);
        each(buffer)?;
        total += n as u64;
        transfer.advance(n as u64);
    }
    Ok(total)
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
