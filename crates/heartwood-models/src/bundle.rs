//! Portable model bundles: a reproducible, uncompressed ZIP64 archive holding the canonical
//! manifest (`heartwood-model.json`, first) and the payload (`files/<path>`, in manifest order).
//!
//! Every entry uses the ZIP64 fields whatever its size, every timestamp is 1980-01-01 00:00 and
//! every mode 0644, so two exports of one model are byte-identical and the 4 GiB limits never
//! apply. The reader accepts only that shape: it checks the end records, every central and
//! local header against each other, names (no absolute path, `..`, link, directory or
//! duplicate), sizes against the manifest, and every CRC-32 and SHA-256, before the store
//! publishes anything.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::ModelError;
use crate::digest::copy_hashing;
use crate::error::IoContext;
use crate::manifest::{Manifest, check_path};
use crate::store::{ModelStore, StoredModel};
use crate::transfer::Transfer;

/// The manifest's entry name.
pub const MANIFEST_ENTRY: &str = "heartwood-model.json";
const FILES_PREFIX: &str = "files/";
/// 1980-01-01 in MS-DOS date format (the earliest ZIP can say), with time 00:00:00.
const DOS_DATE: u16 = (1 << 5) | 1;
const VERSION_NEEDED: u16 = 45;
/// Unix host, ZIP 4.5.
const VERSION_MADE_BY: u16 = (3 << 8) | 45;
/// Names are UTF-8.
const FLAG_UTF8: u16 = 0x0800;
const REGULAR_0644: u32 = 0o100_644 << 16;
const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const ZIP64_END_SIG: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const END_SIG: u32 = 0x0605_4b50;
const LOCAL_LEN: u64 = 30;
const END_LEN: u64 = 22;
const LOCATOR_LEN: u64 = 20;
const ZIP64_END_LEN: u64 = 56;
/// The manifest is small JSON; a larger entry is not a manifest.
const MAX_MANIFEST: u64 = 1 << 20;

/// One entry's place in a bundle.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    crc: u32,
    size: u64,
    header_offset: u64,
    data_offset: u64,
}

/// What an export wrote.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The bundle.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// The manifest's SHA-256.
    pub manifest_sha256: String,
}

/// Verifies `model` while writing it as a bundle at `out` (through a temporary file renamed
/// into place, so a failed export leaves nothing at `out`).
pub fn export(
    model: &StoredModel,
    out: &Path,
    transfer: &Transfer,
) -> Result<Exported, ModelError> {
    let manifest_bytes = model.manifest.canonical_bytes();
    transfer.set_total(model.manifest.payload_bytes());
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = parent.join(format!(
        ".{}.partial-{:08x}",
        out.file_name()
            .map_or("bundle".into(), |n| n.to_string_lossy()),
        fastrand::u32(..)
    ));
    let result = write_bundle(model, &manifest_bytes, &temp, transfer).and_then(|bytes| {
        std::fs::rename(&temp, out).ctx("rename into place", out)?;
        Ok(bytes)
    });
    match result {
        Ok(bytes) => Ok(Exported {
            path: out.to_path_buf(),
            bytes,
            manifest_sha256: model.manifest.digest(),
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

fn write_bundle(
    model: &StoredModel,
    manifest_bytes: &[u8],
    temp: &Path,
    transfer: &Transfer,
) -> Result<u64, ModelError> {
    let file = File::create(temp).ctx("create", temp)?;
    let mut out = BufWriter::with_capacity(crate::digest::CHUNK, file);
    let mut entries = Vec::with_capacity(model.manifest.files.len() + 1);
    let mut offset = 0u64;

    let quiet = Transfer::detached(crate::transfer::TransferKind::Export, "");
    /// One entry to write: its name, its bytes, their size and (for payload files) the
    /// SHA-256 they must have.
    struct Source<'a> {
        name: String,
        reader: Box<dyn Read + 'a>,
        size: u64,
        sha256: Option<&'a str>,
        path: PathBuf,
    }
    let mut sources = vec![Source {
        name: MANIFEST_ENTRY.to_owned(),
        reader: Box::new(manifest_bytes),
        size: manifest_bytes.len() as u64,
        sha256: None,
        path: temp.to_path_buf(),
    }];
    for file in &model.manifest.files {
        let path = model.file(&file.path);
        let reader = File::open(&path).ctx("open", &path)?;
        sources.push(Source {
            name: format!("{FILES_PREFIX}{}", file.path),
            reader: Box::new(reader),
            size: file.size,
            sha256: Some(&file.sha256),
            path,
        });
    }
    for Source {
        name,
        mut reader,
        size,
        sha256,
        path,
    } in sources
    {
        let header = local_header(&name, 0, size);
        out.write_all(&header).ctx("write", temp)?;
        let progress = if sha256.is_some() { transfer } else { &quiet };
        let (read, digest, crc) =
            copy_hashing(&mut reader, Some(&mut out), size + 1, progress, &path)?;
        if read != size || sha256.is_some_and(|expected| expected != digest) {
            return Err(ModelError::Integrity(format!(
                "{} no longer matches the model's manifest; nothing was exported (verify the \
                 model with heartwood model verify)",
                path.display()
            )));
        }
        // The CRC is known only after the data: patched into the header written before it.
        out.seek(SeekFrom::Start(offset + 14)).ctx("seek", temp)?;
        out.write_all(&crc.to_le_bytes()).ctx("write", temp)?;
        out.seek(SeekFrom::End(0)).ctx("seek", temp)?;
        entries.push(Entry {
            data_offset: offset + header.len() as u64,
            name,
            crc,
            size,
            header_offset: offset,
        });
        offset += header.len() as u64 + size;
    }
    let central_offset = offset;
    let mut tail = Vec::new();
    for entry in &entries {
        tail.extend_from_slice(&central_header(entry));
    }
    let central_size = tail.len() as u64;
    let zip64_end_offset = central_offset + central_size;
    let count = entries.len() as u64;
    put32(&mut tail, ZIP64_END_SIG);
    put64(&mut tail, ZIP64_END_LEN - 12);
    put16(&mut tail, VERSION_MADE_BY);
    put16(&mut tail, VERSION_NEEDED);
    put32(&mut tail, 0);
    put32(&mut tail, 0);
    put64(&mut tail, count);
    put64(&mut tail, count);
    put64(&mut tail, central_size);
    put64(&mut tail, central_offset);
    put32(&mut tail, ZIP64_LOCATOR_SIG);
    put32(&mut tail, 0);
    put64(&mut tail, zip64_end_offset);
    put32(&mut tail, 1);
    put32(&mut tail, END_SIG);
    put16(&mut tail, 0);
    put16(&mut tail, 0);
    put16(&mut tail, u16::MAX);
    put16(&mut tail, u16::MAX);
    put32(&mut tail, u32::MAX);
    put32(&mut tail, u32::MAX);
    put16(&mut tail, 0);
    out.write_all(&tail).ctx("write", temp)?;
    let file = out
        .into_inner()
        .map_err(|e| ModelError::io("write", temp, e.into_error()))?;
    file.sync_all().ctx("sync", temp)?;
    Ok(central_offset + tail.len() as u64)
}

fn local_header(name: &str, crc: u32, size: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(LOCAL_LEN as usize + name.len() + 20);
    put32(&mut h, LOCAL_SIG);
    put16(&mut h, VERSION_NEEDED);
    put16(&mut h, FLAG_UTF8);
    put16(&mut h, 0); // stored
    put16(&mut h, 0); // 00:00:00
    put16(&mut h, DOS_DATE);
    put32(&mut h, crc);
    put32(&mut h, u32::MAX);
    put32(&mut h, u32::MAX);
    put16(&mut h, name.len() as u16);
    put16(&mut h, 20);
    h.extend_from_slice(name.as_bytes());
    put16(&mut h, 1); // ZIP64 extended information
    put16(&mut h, 16);
    put64(&mut h, size);
    put64(&mut h, size);
    h
}

fn central_header(entry: &Entry) -> Vec<u8> {
    let mut h = Vec::with_capacity(46 + entry.name.len() + 28);
    put32(&mut h, CENTRAL_SIG);
    put16(&mut h, VERSION_MADE_BY);
    put16(&mut h, VERSION_NEEDED);
    put16(&mut h, FLAG_UTF8);
    put16(&mut h, 0);
    put16(&mut h, 0);
    put16(&mut h, DOS_DATE);
    put32(&mut h, entry.crc);
    put32(&mut h, u32::MAX);
    put32(&mut h, u32::MAX);
    put16(&mut h, entry.name.len() as u16);
    put16(&mut h, 28);
    put16(&mut h, 0); // comment
    put16(&mut h, 0); // disk
    put16(&mut h, 0); // internal attributes
    put32(&mut h, REGULAR_0644);
    put32(&mut h, u32::MAX);
    h.extend_from_slice(entry.name.as_bytes());
    put16(&mut h, 1);
    put16(&mut h, 24);
    put64(&mut h, entry.size);
    put64(&mut h, entry.size);
    put64(&mut h, entry.header_offset);
    h
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A little-endian cursor over bytes that fails closed on a short read.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Fields { bytes, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], ModelError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| refused("a header is cut short"))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    fn u16(&mut self) -> Result<u16, ModelError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2")))
    }
    fn u32(&mut self) -> Result<u32, ModelError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, ModelError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
}

fn refused(why: &str) -> ModelError {
    ModelError::Refused(format!("not a valid Heartwood model bundle: {why}"))
}

fn read_at(file: &mut File, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>, ModelError> {
    let mut bytes = vec![0u8; usize::try_from(len).map_err(|_| refused("a header is too large"))?];
    file.seek(SeekFrom::Start(offset)).ctx("seek", path)?;
    file.read_exact(&mut bytes).ctx("read", path)?;
    Ok(bytes)
}

/// A bundle whose structure, names and sizes have been checked (its data not yet).
pub struct Inspected {
    /// The manifest it carries.
    pub manifest: Manifest,
    /// The manifest's SHA-256: what a license decision is bound to.
    pub manifest_sha256: String,
    entries: Vec<Entry>,
    path: PathBuf,
}

/// Reads and checks a bundle's structure and manifest without reading its payload.
pub fn inspect(path: &Path) -> Result<Inspected, ModelError> {
    let mut file = File::open(path).ctx("open", path)?;
    let meta = file.metadata().ctx("stat", path)?;
    if !meta.is_file() {
        return Err(refused("it is not a regular file"));
    }
    let len = meta.len();
    if len < END_LEN + LOCATOR_LEN + ZIP64_END_LEN {
        return Err(refused("it is too short to be a ZIP64 archive"));
    }
    let end = read_at(&mut file, path, len - END_LEN, END_LEN)?;
    let mut f = Fields::new(&end);
    if f.u32()? != END_SIG {
        return Err(refused(
            "no end-of-archive record at its end (a comment or trailing bytes?)",
        ));
    }
    let (disk, cd_disk, _, _, _, _, comment) = (
        f.u16()?,
        f.u16()?,
        f.u16()?,
        f.u16()?,
        f.u32()?,
        f.u32()?,
        f.u16()?,
    );
    if disk != 0 || cd_disk != 0 || comment != 0 {
        return Err(refused("multi-disk archives and comments are not bundles"));
    }
    let locator = read_at(&mut file, path, len - END_LEN - LOCATOR_LEN, LOCATOR_LEN)?;
    let mut f = Fields::new(&locator);
    if f.u32()? != ZIP64_LOCATOR_SIG {
        return Err(refused("it has no ZIP64 end records"));
    }
    let _ = f.u32()?;
    let zip64_end_offset = f.u64()?;
    if zip64_end_offset != len - END_LEN - LOCATOR_LEN - ZIP64_END_LEN || f.u32()? != 1 {
        return Err(refused(
            "its ZIP64 end record is not where the locator says",
        ));
    }
    let zip64_end = read_at(&mut file, path, zip64_end_offset, ZIP64_END_LEN)?;
    let mut f = Fields::new(&zip64_end);
    if f.u32()? != ZIP64_END_SIG || f.u64()? != ZIP64_END_LEN - 12 {
        return Err(refused("its ZIP64 end record is malformed"));
    }
    let (_, _, _, _) = (f.u16()?, f.u16()?, f.u32()?, f.u32()?);
    let (count, total, cd_size, cd_offset) = (f.u64()?, f.u64()?, f.u64()?, f.u64()?);
    if count != total || !(2..=257).contains(&count) {
        return Err(refused("its entry count is out of range"));
    }
    if cd_offset.checked_add(cd_size) != Some(zip64_end_offset) || cd_size > count * 400 {
        return Err(refused(
            "its central directory is not where the end record says",
        ));
    }
    let central = read_at(&mut file, path, cd_offset, cd_size)?;
    let mut f = Fields::new(&central);
    let mut entries = Vec::new();
    let mut seen = HashSet::new();
    for _ in 0..count {
        let entry = central_entry(&mut f)?;
        if !seen.insert(entry.name.to_lowercase()) {
            return Err(refused(&format!("the name {:?} appears twice", entry.name)));
        }
        entries.push(entry);
    }
    if f.at != central.len() {
        return Err(refused(
            "its central directory has bytes past its last entry",
        ));
    }
    check_local_headers(&mut file, path, &mut entries, cd_offset)?;
    let manifest = checked_manifest(&mut file, path, &entries)?;
    Ok(Inspected {
        manifest_sha256: manifest.digest(),
        manifest,
        entries,
        path: path.to_path_buf(),
    })
}

/// Each local header must agree with the central one, and data ranges must not overlap or run
/// into the directory (at `cd_offset`); fills in where each entry's data starts.
fn check_local_headers(
    file: &mut File,
    path: &Path,
    entries: &mut [Entry],
    cd_offset: u64,
) -> Result<(), ModelError> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].header_offset);
    let mut next_free = 0u64;
    for i in order {
        let entry = &mut entries[i];
        if entry.header_offset < next_free {
            return Err(refused(&format!("{:?} overlaps another entry", entry.name)));
        }
        let fixed = read_at(file, path, entry.header_offset, LOCAL_LEN)?;
        let mut f = Fields::new(&fixed);
        if f.u32()? != LOCAL_SIG {
            return Err(refused(&format!("{:?} has no local header", entry.name)));
        }
        let (_, flags, method, _, _, crc) =
            (f.u16()?, f.u16()?, f.u16()?, f.u16()?, f.u16()?, f.u32()?);
        let (small_comp, small_size, name_len, extra_len) =
            (f.u32()?, f.u32()?, f.u16()?, f.u16()?);
        let rest = read_at(
            file,
            path,
            entry.header_offset + LOCAL_LEN,
            u64::from(name_len) + u64::from(extra_len),
        )?;
        let (name, extra) = rest.split_at(usize::from(name_len));
        let (size, comp, _) = zip64_sizes(extra, small_size, small_comp, None)?;
        if name != entry.name.as_bytes()
            || flags & !FLAG_UTF8 != 0
            || method != 0
            || crc != entry.crc
            || size != entry.size
            || comp != entry.size
        {
            return Err(refused(&format!(
                "the local header of {:?} disagrees with the central directory (a size lie?)",
                entry.name
            )));
        }
        entry.data_offset = entry.header_offset + LOCAL_LEN + rest.len() as u64;
        next_free = entry
            .data_offset
            .checked_add(entry.size)
            .filter(|&e| e <= cd_offset)
            .ok_or_else(|| {
                refused(&format!(
                    "{:?} claims more bytes than the archive holds",
                    entry.name
                ))
            })?;
    }
    Ok(())
}

/// The bundle's manifest (its first entry, canonical, matching its CRC-32), checked against the
/// payload entries that follow it: the same files, in order, with the same sizes.
fn checked_manifest(
    file: &mut File,
    path: &Path,
    entries: &[Entry],
) -> Result<Manifest, ModelError> {
    let first = &entries[0];
    if first.name != MANIFEST_ENTRY || first.size > MAX_MANIFEST {
        return Err(refused(&format!("its first entry is not {MANIFEST_ENTRY}")));
    }
    let manifest_bytes = read_at(file, path, first.data_offset, first.size)?;
    if crc32fast::hash(&manifest_bytes) != first.crc {
        return Err(ModelError::Integrity(format!(
            "{MANIFEST_ENTRY} does not match its CRC-32"
        )));
    }
    let manifest = Manifest::parse(&manifest_bytes)?;
    if manifest.canonical_bytes() != manifest_bytes {
        return Err(refused("its manifest is not in canonical form"));
    }
    let payload = &entries[1..];
    if payload.len() != manifest.files.len() {
        return Err(refused(&format!(
            "it holds {} payload entries; its manifest lists {} files",
            payload.len(),
            manifest.files.len()
        )));
    }
    for (entry, listed) in payload.iter().zip(&manifest.files) {
        if entry.name.strip_prefix(FILES_PREFIX) != Some(listed.path.as_str()) {
            return Err(refused(&format!(
                "entry {:?} is not {FILES_PREFIX}{}, the manifest's next file",
                entry.name, listed.path
            )));
        }
        if entry.size != listed.size {
            return Err(refused(&format!(
                "{} is {} bytes in the archive; its manifest says {} (a size lie)",
                listed.path, entry.size, listed.size
            )));
        }
    }
    Ok(manifest)
}

fn central_entry(f: &mut Fields<'_>) -> Result<Entry, ModelError> {
    if f.u32()? != CENTRAL_SIG {
        return Err(refused("a central directory entry is malformed"));
    }
    let (made_by, needed, flags, method, _, _) =
        (f.u16()?, f.u16()?, f.u16()?, f.u16()?, f.u16()?, f.u16()?);
    let crc = f.u32()?;
    let (small_comp, small_size) = (f.u32()?, f.u32()?);
    let (name_len, extra_len, comment_len) = (f.u16()?, f.u16()?, f.u16()?);
    let (_, _, external, small_offset) = (f.u16()?, f.u16()?, f.u32()?, f.u32()?);
    let name = std::str::from_utf8(f.take(usize::from(name_len))?)
        .map_err(|_| refused("an entry name is not UTF-8"))?
        .to_owned();
    let extra = f.take(usize::from(extra_len))?;
    f.take(usize::from(comment_len))?;
    check_path(&name)?;
    if needed > VERSION_NEEDED || flags & !FLAG_UTF8 != 0 {
        return Err(refused(&format!(
            "{name:?} is encrypted or uses features bundles never use"
        )));
    }
    if method != 0 {
        return Err(refused(&format!(
            "{name:?} is compressed; bundles are stored"
        )));
    }
    let unix_type = (external >> 16) & 0o170_000;
    if made_by >> 8 == 3 && unix_type != 0 && unix_type != 0o100_000 {
        return Err(refused(&format!(
            "{name:?} is a link or special file, not a regular file"
        )));
    }
    let (size, comp, offset) = zip64_sizes(extra, small_size, small_comp, Some(small_offset))?;
    if comp != size {
        return Err(refused(&format!(
            "{name:?} has different stored and original sizes (a size lie)"
        )));
    }
    Ok(Entry {
        name,
        crc,
        size,
        header_offset: offset.unwrap_or(0),
        data_offset: 0,
    })
}

/// Sizes (and offset) from the 32-bit fields, replaced from the ZIP64 extra field where they
/// are all ones.
fn zip64_sizes(
    extra: &[u8],
    small_size: u32,
    small_comp: u32,
    small_offset: Option<u32>,
) -> Result<(u64, u64, Option<u64>), ModelError> {
    let mut f = Fields::new(extra);
    let mut zip64 = None;
    while f.at < extra.len() {
        let (id, len) = (f.u16()?, f.u16()?);
        let data = f.take(usize::from(len))?;
        if id == 1 {
            zip64 = Some(data);
        }
    }
    let mut z = Fields::new(zip64.unwrap_or(&[]));
    let mut wide = |small: u32| -> Result<u64, ModelError> {
        if small == u32::MAX {
            z.u64()
        } else {
            Ok(u64::from(small))
        }
    };
    let size = wide(small_size)?;
    let comp = wide(small_comp)?;
    let offset = small_offset.map(&mut wide).transpose()?;
    Ok((size, comp, offset))
}

impl Inspected {
    /// Copies the payload into a staging directory of `store`, checking every CRC-32 and
    /// SHA-256, and returns it ready to publish. Nothing is published here.
    pub fn unpack(
        &self,
        store: &ModelStore,
        transfer: &Transfer,
    ) -> Result<crate::store::Staging, ModelError> {
        transfer.set_total(self.manifest.payload_bytes());
        let staging = store.stage(None)?;
        let result = (|| {
            let mut bundle = File::open(&self.path).ctx("open", &self.path)?;
            for (entry, file) in self.entries[1..].iter().zip(&self.manifest.files) {
                let target = staging.file(&file.path)?;
                let mut out = File::create(&target).ctx("create", &target)?;
                bundle
                    .seek(SeekFrom::Start(entry.data_offset))
                    .ctx("seek", &self.path)?;
                let mut data = (&mut bundle).take(entry.size);
                let (read, sha256, crc) =
                    copy_hashing(&mut data, Some(&mut out), entry.size, transfer, &self.path)?;
                out.sync_all().ctx("sync", &target)?;
                if read != entry.size || crc != entry.crc || sha256 != file.sha256 {
                    return Err(ModelError::Integrity(format!(
                        "{} in the bundle does not match its manifest's SHA-256 or its CRC-32 \
                         (damaged or altered in transit); nothing was imported",
                        file.path
                    )));
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(staging),
            Err(e) => {
                staging.discard();
                Err(e)
            }
        }
    }
}
