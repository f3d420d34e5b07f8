//! A crate's bytes on disk: a new directory, or one ZIP file (stored entries, a fixed
//! timestamp, sorted names, so the same crate gives the same bytes), and both read back for
//! verification. The ZIP is the plain PKZIP form every unzip, Python's `zipfile` and
//! repository importers read.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use super::{CrateError, CrateReport};

/// The most entries or bytes a crate read back may hold.
const MAX_ENTRIES: usize = 100_000;

/// Writes every entry under a new directory (staged, then renamed into place).
pub fn write_dir(to: &Path, entries: &[(String, Vec<u8>)]) -> Result<CrateReport, CrateError> {
    let staging = staging_of(to);
    let written = (|| {
        fs::create_dir_all(&staging).map_err(CrateError::io("create", &staging))?;
        let mut bytes = 0u64;
        for (name, content) in entries {
            let path = staging.join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(CrateError::io("create", parent))?;
            }
            fs::write(&path, content).map_err(CrateError::io("write", &path))?;
            bytes += content.len() as u64;
        }
        Ok(bytes)
    })();
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    fs::rename(&staging, to).map_err(CrateError::io("move into place", to))?;
    Ok(CrateReport {
        path: to.to_owned(),
        files: entries.len(),
        bytes,
    })
}

fn staging_of(to: &Path) -> std::path::PathBuf {
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    to.with_file_name(format!(".staging-{name}"))
}

/// Writes every entry into one new ZIP file.
pub fn write_zip(to: &Path, entries: &[(String, Vec<u8>)]) -> Result<CrateReport, CrateError> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, content) in entries {
        let offset = u32::try_from(out.len()).map_err(|_| too_big())?;
        let size = u32::try_from(content.len()).map_err(|_| too_big())?;
        let crc = crc32(content);
        let header = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend_from_slice(&sig.to_le_bytes());
            if central {
                h.extend_from_slice(&0x031eu16.to_le_bytes()); // made by: Unix, 3.0
            }
            for v in [20u16, 0x0800, 0, 0, 0x5821] {
                h.extend_from_slice(&v.to_le_bytes()); // version, UTF-8 names, stored, 1980 time/date
            }
            for v in [crc, size, size] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            if central {
                for v in [0u16, 0, 0] {
                    h.extend_from_slice(&v.to_le_bytes());
                }
                h.extend_from_slice(&(0o100644u32 << 16).to_le_bytes());
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend_from_slice(content);
        central.extend(header(0x0201_4b50, true));
    }
    let start = u32::try_from(out.len()).map_err(|_| too_big())?;
    let count = u16::try_from(entries.len()).map_err(|_| too_big())?;
    let central_len = central.len() as u32;
    out.extend(central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    for v in [0u16, 0, count, count] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&central_len.to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(CrateError::io("create", to))?;
    file.write_all(&out).map_err(CrateError::io("write", to))?;
    Ok(CrateReport {
        path: to.to_owned(),
        files: entries.len(),
        bytes: out.len() as u64,
    })
}

fn too_big() -> CrateError {
    CrateError::Unreadable(
        "the crate is too big for one ZIP file (4 GiB, 65535 files); export a directory".into(),
    )
}

/// Reads a crate directory or ZIP into its entries, by crate-relative name.
pub fn read(from: &Path) -> Result<BTreeMap<String, Vec<u8>>, CrateError> {
    if from.is_dir() {
        let mut out = BTreeMap::new();
        read_dir(from, "", &mut out)?;
        return Ok(out);
    }
    let bytes = fs::read(from).map_err(CrateError::io("read", from))?;
    read_zip(&bytes).ok_or_else(|| {
        CrateError::Unreadable(format!(
            "{} is not a crate directory or a ZIP this verifier reads",
            from.display()
        ))
    })
}

fn read_dir(
    dir: &Path,
    prefix: &str,
    out: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), CrateError> {
    for entry in fs::read_dir(dir).map_err(CrateError::io("list", dir))? {
        let entry = entry.map_err(CrateError::io("list", dir))?;
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let kind = entry
            .file_type()
            .map_err(CrateError::io("inspect", entry.path()))?;
        if kind.is_dir() {
            read_dir(&entry.path(), &format!("{name}/"), out)?;
        } else if kind.is_file() {
            if out.len() >= MAX_ENTRIES {
                return Err(CrateError::Unreadable(
                    "the crate holds too many files".into(),
                ));
            }
            out.insert(
                name,
                fs::read(entry.path()).map_err(CrateError::io("read", entry.path()))?,
            );
        }
    }
    Ok(())
}

fn u16_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize)
}

fn u32_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// Stored entries only (what [`write_zip`] writes).
fn read_zip(b: &[u8]) -> Option<BTreeMap<String, Vec<u8>>> {
    let end = (0..b.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(b, i) == Some(0x0605_4b50))?;
    let count = u16_at(b, end + 10)?;
    let mut at = u32_at(b, end + 16)?;
    let mut out = BTreeMap::new();
    for _ in 0..count.min(MAX_ENTRIES) {
        if u32_at(b, at)? != 0x0201_4b50 || u16_at(b, at + 10)? != 0 {
            return None;
        }
        let size = u32_at(b, at + 20)?;
        let (name_len, extra, comment) = (
            u16_at(b, at + 28)?,
            u16_at(b, at + 30)?,
            u16_at(b, at + 32)?,
        );
        let local = u32_at(b, at + 42)?;
        let name = String::from_utf8(b.get(at + 46..at + 46 + name_len)?.to_vec()).ok()?;
        let data = local + 30 + u16_at(b, local + 26)? + u16_at(b, local + 28)?;
        out.insert(name, b.get(data..data + size)?.to_vec());
        at += 46 + name_len + extra + comment;
    }
    Some(out)
}

/// CRC-32 (IEEE), as ZIP needs it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (!(crc & 1)).wrapping_add(1));
        }
    }
    !crc
}
