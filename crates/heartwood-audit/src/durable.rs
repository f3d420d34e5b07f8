//! File operations with the durability discipline the journal relies on: private permissions,
//! atomic replacement by rename, and fsync of both files and their directories.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::AuditError;
use crate::error::IoContext;

/// Creates a directory readable only by its owner; an existing directory is fine.
pub(crate) fn create_private_dir(path: &Path) -> Result<(), AuditError> {
    match fs::DirBuilder::new().mode(0o700).create(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        other => other.ctx("create directory", path),
    }
}

/// Creates `path` and any missing parents, each private to the owner.
pub(crate) fn create_private_dir_all(path: &Path) -> Result<(), AuditError> {
    fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(path)
        .ctx("create directory", path)
}

/// Flushes a directory's entries (new, renamed or removed files) to stable storage.
pub(crate) fn sync_dir(path: &Path) -> Result<(), AuditError> {
    SYNCS.fetch_add(1, Ordering::Relaxed);
    File::open(path)
        .and_then(|dir| dir.sync_all())
        .ctx("sync directory", path)
}

static SYNCS: AtomicU64 = AtomicU64::new(0);

/// Makes `file`'s data durable, counted in [`sync_calls`].
pub(crate) fn sync_data(file: &File) -> std::io::Result<()> {
    SYNCS.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "test-faults")]
    return crate::faults::sync(|| file.sync_data());
    #[cfg(not(feature = "test-faults"))]
    file.sync_data()
}

/// Appends all of `bytes` to `file` (a write point for injected faults in tests).
pub(crate) fn append(file: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    #[cfg(feature = "test-faults")]
    return crate::faults::write(bytes, |b| file.write_all(b));
    #[cfg(not(feature = "test-faults"))]
    file.write_all(bytes)
}

/// Writes all of `bytes` at `offset` (a write point for injected faults in tests).
pub(crate) fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    #[cfg(feature = "test-faults")]
    return crate::faults::write(bytes, |b| file.write_all_at(b, offset));
    #[cfg(not(feature = "test-faults"))]
    file.write_all_at(bytes, offset)
}

/// How many `fsync`/`fdatasync` calls this process's session journals have made: what the
/// benchmarks count to hold durability to its contract (a relaxed counter, nearly free).
pub fn sync_calls() -> u64 {
    SYNCS.load(Ordering::Relaxed)
}

/// Opens a file for appending, creating it private to the owner if missing.
pub(crate) fn open_append(path: &Path) -> Result<File, AuditError> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .ctx("open", path)
}

/// Opens a file for reading and writing in place, creating it private to the owner if missing.
pub(crate) fn open_read_write(path: &Path) -> Result<File, AuditError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .ctx("open", path)
}

/// A buffered reader over `path`; a file that does not exist reads as empty (a session's files
/// appear with its first append).
pub(crate) fn read_or_empty(
    path: &Path,
    capacity: usize,
) -> Result<std::io::BufReader<Box<dyn std::io::Read + Send>>, AuditError> {
    let inner: Box<dyn std::io::Read + Send> = match File::open(path) {
        Ok(file) => Box::new(file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Box::new(std::io::empty()),
        Err(e) => return Err(e).ctx("open", path),
    };
    Ok(std::io::BufReader::with_capacity(capacity, inner))
}

/// Replaces `path` with `bytes` atomically: a reader sees the old file or the new one, never a
/// mix, and after return the new one survives a crash.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .ctx("create", &tmp)?;
    let written = append(&mut file, bytes)
        .ctx("write", &tmp)
        .and_then(|()| sync_data(&file).ctx("sync", &tmp));
    if written.is_err() {
        // A failed replacement leaves the old file as it was and no temporary behind.
        let _ = fs::remove_file(&tmp);
    }
    written?;
    fs::rename(&tmp, path).ctx("rename into place", path)?;
    sync_dir(dir)
}

/// At most `max` bytes of `file` from `offset` on.
pub(crate) fn read_tail(file: &File, offset: u64, max: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let available = usize::try_from(len.saturating_sub(offset)).unwrap_or(usize::MAX);
    let mut tail = vec![0u8; available.min(max)];
    file.read_exact_at(&mut tail, offset)?;
    Ok(tail)
}

/// A reader of one journal file (or of what it will hold).
pub(crate) type Source = std::io::BufReader<Box<dyn std::io::Read + Send>>;
