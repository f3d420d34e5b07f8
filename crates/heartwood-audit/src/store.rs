//! The project's session store: finding, listing, reading, opening and removing sessions under
//! `<project>/.heartwood/sessions/`, or in a shared PostgreSQL store (see [`crate::shared`]),
//! where this process drives a session from a working copy under
//! `<project>/.heartwood/replicas/<holder>/sessions/`. Callers see one store either way.

use std::path::{Path, PathBuf};

use heartwood_events::{RecordedEvent, SessionId, Timestamp};

use crate::error::IoContext;
use crate::intent::read_pending;
use crate::layout::{SESSIONS_DIR, STATE_DIR};
use crate::lease::WriterLease;
use crate::shared::{SessionImage, SharedStore};
use crate::{
    AuditError, RebuiltReceipt, ReceiptRepair, Recovery, SessionMeta, SessionPaths, SessionReader,
    SessionWriter, Verified, WriterInfo,
};

/// One line of a session listing. Gathered without verifying the session (that is
/// [`SessionReader::verify`]'s job) and without changing anything.
#[derive(Debug, Clone)]
pub struct SessionSummary {
    /// The session id.
    pub id: SessionId,
    /// The session's metadata, or why it could not be read.
    pub meta: Result<SessionMeta, MetaUnreadable>,
    /// Number of lines in `events.jsonl`.
    pub events: u64,
    /// When `events.jsonl` last changed.
    pub last_activity: Option<Timestamp>,
    /// Whether an append was interrupted and awaits recovery.
    pub interrupted: bool,
    /// The recorded writer, if its process still appears to be running.
    pub writer: Option<WriterInfo>,
}

/// Why a listed session's metadata could not be read (shared, so a listing stays cloneable).
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetaUnreadable {
    /// `meta.json` in the session's folder.
    #[error(transparent)]
    File(std::sync::Arc<AuditError>),
    /// The metadata a shared store keeps.
    #[error("meta.json in the store is not valid: {0}")]
    Store(std::sync::Arc<serde_json::Error>),
}

/// The sessions of one project.
#[derive(Debug, Clone)]
pub struct SessionStore {
    sessions_root: PathBuf,
    /// The shared store the sessions are kept in, when they are not kept in files.
    shared: Option<SharedStore>,
}

impl SessionStore {
    /// The store of the project rooted at `project_root`. Creates nothing.
    pub fn new(project_root: impl AsRef<Path>) -> Self {
        let project_root = project_root.as_ref();
        SessionStore {
            sessions_root: project_root.join(STATE_DIR).join(SESSIONS_DIR),
            shared: None,
        }
    }

    /// The sessions kept in `shared`, driven by this process from working copies under
    /// `<project>/.heartwood/replicas/<holder>/sessions` (created only when a session is
    /// opened for writing).
    pub fn in_shared(project_root: impl AsRef<Path>, shared: SharedStore) -> Self {
        let holder: String = shared
            .holder()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        SessionStore {
            sessions_root: project_root
                .as_ref()
                .join(STATE_DIR)
                .join("replicas")
                .join(holder)
                .join(SESSIONS_DIR),
            shared: Some(shared),
        }
    }

    /// The shared store, when the sessions are kept in one.
    pub fn shared(&self) -> Option<&SharedStore> {
        self.shared.as_ref()
    }

    /// `<project>/.heartwood/sessions`.
    pub fn sessions_root(&self) -> &Path {
        &self.sessions_root
    }

    /// The paths of session `id`.
    pub fn paths(&self, id: &SessionId) -> SessionPaths {
        SessionPaths::new(&self.sessions_root, id)
    }

    /// Whether session `id` is registered (its directory exists). Creates nothing. A shared
    /// store that cannot be reached holds nothing as far as this answer goes.
    pub fn exists(&self, id: &SessionId) -> bool {
        match &self.shared {
            Some(shared) => shared.exists(id).unwrap_or(false),
            None => self.paths(id).dir.is_dir(),
        }
    }

    /// Records that session id `id` was handed out (a shared store only: replicas serve the
    /// ids any of them issued; a file store's process remembers its own).
    pub fn record_issued(&self, id: &SessionId) -> Result<(), AuditError> {
        match &self.shared {
            Some(shared) => shared.issue(id),
            None => Ok(()),
        }
    }

    /// Whether another replica handed out session id `id` (always `false` for files).
    pub fn was_issued(&self, id: &SessionId) -> bool {
        self.shared
            .as_ref()
            .is_some_and(|shared| shared.issued(id).unwrap_or(false))
    }

    /// [`SessionStore::exists`], saying when a shared store cannot be reached instead of
    /// answering no.
    pub fn exists_checked(&self, id: &SessionId) -> Result<bool, AuditError> {
        match &self.shared {
            Some(shared) => shared.exists(id),
            None => Ok(self.paths(id).dir.is_dir()),
        }
    }

    /// The length in bytes of session `id`'s event log (`None` before it exists): what a
    /// process that follows a session nobody serves compares to notice that it moved on.
    /// Reads one file's metadata and creates nothing.
    pub fn journal_len(&self, id: &SessionId) -> Option<u64> {
        if let Some(shared) = &self.shared {
            return shared.journal_len(id).ok().flatten();
        }
        std::fs::metadata(self.paths(id).events)
            .ok()
            .map(|m| m.len())
    }

    /// Every session, most recently active first. A project without `.heartwood/` has none.
    pub fn list(&self) -> Result<Vec<SessionSummary>, AuditError> {
        if let Some(shared) = &self.shared {
            return shared.summaries();
        }
        let entries = match std::fs::read_dir(&self.sessions_root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).ctx("list", &self.sessions_root),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.ctx("list", &self.sessions_root)?;
            // Directories whose names are not valid ids were not made by Heartwood.
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| SessionId::parse(n).ok())
            else {
                continue;
            };
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(self.summarize(id)?);
            }
        }
        out.sort_by(|a, b| {
            b.last_activity
                .cmp(&a.last_activity)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(out)
    }

    /// Session `id`'s summary, as [`SessionStore::list`] gives it, or `None` before it exists.
    pub fn summary(&self, id: &SessionId) -> Result<Option<SessionSummary>, AuditError> {
        if let Some(shared) = &self.shared {
            return Ok(shared.summaries()?.into_iter().find(|s| &s.id == id));
        }
        if !self.exists(id) {
            return Ok(None);
        }
        self.summarize(id.clone()).map(Some)
    }

    fn summarize(&self, id: SessionId) -> Result<SessionSummary, AuditError> {
        let paths = self.paths(&id);
        let meta = SessionMeta::read(&paths.meta, &id)
            .map_err(|e| MetaUnreadable::File(std::sync::Arc::new(e)));
        let events = count_lines(&paths.events).unwrap_or(0);
        let last_activity = std::fs::metadata(&paths.events)
            .and_then(|m| m.modified())
            .ok()
            .and_then(Timestamp::from_system_time);
        let interrupted = read_pending(&paths.journal).is_ok_and(|p| p.in_flight(&paths).is_some());
        let writer = WriterInfo::read(&paths.writer).filter(WriterInfo::looks_alive);
        Ok(SessionSummary {
            id,
            meta,
            events,
            last_activity,
            interrupted,
            writer,
        })
    }

    /// Rebuilds session `id`'s `receipts.jsonl` from its chain (see [`ReceiptRepair`]); the
    /// caller's `describe` gives the command type and result for a command's last event.
    pub fn repair_receipts(
        &self,
        id: &SessionId,
        describe: &dyn Fn(&RecordedEvent) -> Option<RebuiltReceipt>,
    ) -> Result<ReceiptRepair, AuditError> {
        self.files_only("sessions repair")?;
        crate::receipt_repair::repair(id, &self.paths(id), describe)
    }

    /// Completes an interrupted append the intent describes, then cuts session `id`'s torn
    /// tail, an incomplete last append no intent can complete, keeping the cut bytes beside it
    /// (see [`TornTailCut`]). Returns what the completion did, and the cut (`None` when the
    /// session verifies after the completion). Damage that looks like a modification is
    /// refused.
    pub fn cut_torn_tail(
        &self,
        id: &SessionId,
    ) -> Result<(Recovery, Option<crate::TornTailCut>), AuditError> {
        self.files_only("sessions recover --cut-torn-tail")?;
        crate::torn::cut_torn_tail(id, &self.paths(id))
    }

    /// Opens a session read-only.
    pub fn reader(&self, id: &SessionId) -> Result<SessionReader, AuditError> {
        match &self.shared {
            Some(shared) => SessionReader::materialized(id, &shared.image(id)?),
            None => SessionReader::open(id, self.paths(id)),
        }
    }

    /// Opens an existing session for writing: takes the lease, completes an interrupted append,
    /// and verifies the session.
    pub fn open_writer(&self, id: &SessionId) -> Result<(SessionWriter, Recovery), AuditError> {
        match &self.shared {
            Some(shared) => self.open_shared(shared, id, None),
            None => SessionWriter::open(&self.sessions_root, id, self.paths(id), None, None),
        }
    }

    /// Opens session `id` for writing, registering it (served by `backend`) if it is new.
    pub fn create_or_open_writer(
        &self,
        id: &SessionId,
        backend: &str,
    ) -> Result<(SessionWriter, Recovery), AuditError> {
        match &self.shared {
            Some(shared) => self.open_shared(shared, id, Some(backend)),
            None => {
                SessionWriter::open(&self.sessions_root, id, self.paths(id), Some(backend), None)
            }
        }
    }

    /// Opens session `id` kept in `shared` for writing: registers it there if it is new (and
    /// `register` names its engine), takes its lease, and materializes it into this process's
    /// working copy, where the file writer verifies it as it verifies any session.
    fn open_shared(
        &self,
        shared: &SharedStore,
        id: &SessionId,
        register: Option<&str>,
    ) -> Result<(SessionWriter, Recovery), AuditError> {
        if let Some(backend) = register
            && !shared.exists(id)?
        {
            // Another replica registering it at the same moment is fine: one registration wins.
            shared.insert_session(id, &crate::register::registration_image(id, backend)?)?;
        }
        let taken = shared.take_lease(id)?;
        let fence = crate::shared::Fence::hold(shared.clone(), id.clone(), taken.token);
        let image = shared.image(id)?;
        let paths = self.paths(id);
        if paths.dir.exists() {
            std::fs::remove_dir_all(&paths.dir).ctx("remove the stale working copy", &paths.dir)?;
        }
        crate::register::place_image(&self.sessions_root, id, &paths, &image, "materializing")?;
        if taken.taken_over {
            // The previous holder never let go: its working copy is gone with it, and what its
            // engine did past the journal must be reconciled as after a crash.
            crate::durable::write_atomic(&paths.writer, b"{}")?;
        }
        SessionWriter::open(&self.sessions_root, id, paths, None, Some(fence))
    }

    /// Copies session `id`, byte for byte, from this store to `to`, which must not hold it
    /// yet: the source is verified first and the copy after, and the copy's lease is free.
    pub fn copy_to(&self, id: &SessionId, to: &SessionStore) -> Result<Verified, AuditError> {
        let source = self.reader(id)?;
        let verified = source.verify()?;
        let image = SessionImage::read_files(source.paths())?;
        let placed = match &to.shared {
            Some(shared) => shared.insert_session(id, &image)?,
            None => crate::register::place_image(
                &to.sessions_root,
                id,
                &to.paths(id),
                &image,
                "copying",
            )?,
        };
        if !placed {
            return Err(AuditError::AlreadyExists { id: id.clone() });
        }
        let copied = to.reader(id)?.verify()?;
        if copied.terminal_hash != verified.terminal_hash || copied.count != verified.count {
            return Err(AuditError::CheckpointMismatch {
                id: id.clone(),
                detail: "the copy does not end where the source does".into(),
            });
        }
        Ok(copied)
    }

    fn files_only(&self, action: &'static str) -> Result<(), AuditError> {
        match self.shared {
            Some(_) => Err(AuditError::FilesOnly { action }),
            None => Ok(()),
        }
    }

    /// Deletes a session and everything in it. Refused while another process owns it.
    pub fn remove(&self, id: &SessionId) -> Result<(), AuditError> {
        if let Some(shared) = &self.shared {
            return shared.remove(id);
        }
        let paths = self.paths(id);
        if !paths.dir.is_dir() {
            return Err(AuditError::NoSession { id: id.clone() });
        }
        let lease = WriterLease::acquire(id, &paths)?;
        std::fs::remove_dir_all(&paths.dir).ctx("remove", &paths.dir)?;
        drop(lease);
        crate::durable::sync_dir(&self.sessions_root)
    }
}

/// Counts newline-terminated lines in bounded memory.
fn count_lines(path: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut count = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(count);
        }
        count += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
    }
}
