//! Registering a session: its first event (the registration) and `meta.json`, sealed before
//! the session exists in any store, so a registered session always holds a chain that starts
//! with its registration, in files or in the shared store alike.

use std::path::Path;

use heartwood_events::{Event, RecordedEvent, Seq, SessionId, to_canonical_bytes};

use crate::error::IoContext;
use crate::record::AuditRecord;
use crate::shared::SessionImage;
use crate::{AuditError, Digest, SessionMeta, SessionPaths, durable};

/// The bytes of a new session served by `backend`: its registration event, the event's audit
/// record, and `meta.json` carrying the registration's time.
pub(crate) fn registration_image(
    id: &SessionId,
    backend: &str,
) -> Result<SessionImage, AuditError> {
    let registered = RecordedEvent::new(
        Seq::new(1).map_err(|e| AuditError::BadFile {
            path: Path::new(crate::layout::EVENTS_FILE).to_owned(),
            detail: e.to_string(),
        })?,
        None,
        Event::SessionRegistered {
            backend: backend.to_owned(),
            workflow: None,
        },
    );
    let mut line = to_canonical_bytes(&registered)?;
    let record = AuditRecord::seal(
        1,
        registered.event.kind(),
        registered.time.as_str(),
        Digest::of(&line),
        crate::record::genesis(id),
    );
    line.push(b'\n');
    let mut record_line = record.to_line();
    record_line.push(b'\n');
    let mut meta = SessionMeta::new(id.clone(), backend, None);
    meta.created_at = registered.time.clone();
    let mut meta_bytes = serde_json::to_vec_pretty(&meta).unwrap_or_default();
    meta_bytes.push(b'\n');
    Ok(SessionImage {
        meta: meta_bytes,
        events: line,
        audit: record_line,
        ..Default::default()
    })
}

/// Creates the session directory with its `meta.json` already inside, by preparing it under a
/// hidden name and renaming it into place: a crash can never leave a session directory without
/// metadata. If another process created the session first, its directory is kept.
pub(crate) fn create_registered_dir(
    sessions_root: &Path,
    id: &SessionId,
    paths: &SessionPaths,
    backend: &str,
) -> Result<(), AuditError> {
    let image = registration_image(id, backend)?;
    place_image(sessions_root, id, paths, &image, "creating").map(|_| ())
}

/// Writes `image` as session `id`'s directory under a hidden name and renames it into place.
/// `Ok(false)`: a session directory with this id existed already and was kept.
pub(crate) fn place_image(
    sessions_root: &Path,
    id: &SessionId,
    paths: &SessionPaths,
    image: &SessionImage,
    stage: &str,
) -> Result<bool, AuditError> {
    durable::create_private_dir_all(sessions_root)?;
    let staging = sessions_root.join(format!(".{stage}-{id}-{}", std::process::id()));
    let written = image.write_files(&staging).and_then(|()| {
        // Only the journal's files are written by the image; nothing else is expected empty.
        durable::sync_dir(&staging)
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    match std::fs::rename(&staging, &paths.dir) {
        Ok(()) => durable::sync_dir(sessions_root).map(|()| true),
        Err(_) if paths.dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(false)
        }
        Err(e) => Err(e).ctx("create", &paths.dir),
    }
}
