//! Read-only access to one session. Nothing here creates, changes or locks a file.

use heartwood_events::{DecodeError, Receipt, RecordedEvent, SessionId};

use crate::error::IoContext;
use crate::intent::{Pending, completed_sources, read_pending};
use crate::line::{Line, read_line};
use crate::verify::{Tree, verify_session, verify_sources};
use crate::{
    AuditError, Checkpoint, CheckpointReport, Damage, MAX_LINE_BYTES, SessionMeta, SessionPaths,
    Verified, WriterInfo, checkpoint,
};

/// How many times a verification that met an append in flight is tried again.
const SETTLE_TRIES: u32 = 40;

/// The pause between those tries (an append takes a few `fsync`s).
const SETTLE_PAUSE: std::time::Duration = std::time::Duration::from_millis(25);

/// A read-only view of one session.
#[derive(Debug)]
pub struct SessionReader {
    id: SessionId,
    paths: SessionPaths,
    meta: SessionMeta,
    /// The private copy a session read from the shared store was written to, removed when the
    /// reader (and every clone of the handle) is gone.
    _scratch: Option<std::sync::Arc<tempfile::TempDir>>,
}

impl SessionReader {
    pub(crate) fn open(id: &SessionId, paths: SessionPaths) -> Result<Self, AuditError> {
        if !paths.dir.is_dir() {
            return Err(AuditError::NoSession { id: id.clone() });
        }
        let meta = SessionMeta::read(&paths.meta, id)?;
        Ok(SessionReader {
            id: id.clone(),
            paths,
            meta,
            _scratch: None,
        })
    }

    /// A reader of `image` (a session read from the shared store), written to a private
    /// temporary directory outside the project, so reading creates nothing in it.
    pub(crate) fn materialized(
        id: &SessionId,
        image: &crate::shared::SessionImage,
    ) -> Result<Self, AuditError> {
        let scratch = tempfile::Builder::new()
            .prefix("heartwood-view-")
            .tempdir()
            .ctx("create a temporary directory", &std::env::temp_dir())?;
        let paths = SessionPaths::new(scratch.path(), id);
        image.write_files(&paths.dir)?;
        let mut reader = SessionReader::open(id, paths)?;
        reader._scratch = Some(std::sync::Arc::new(scratch));
        Ok(reader)
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The session's metadata.
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// The session's file paths.
    pub fn paths(&self) -> &SessionPaths {
        &self.paths
    }

    /// The process recorded as the session's writer, if one is recorded.
    pub fn writer(&self) -> Option<WriterInfo> {
        WriterInfo::read(&self.paths.writer)
    }

    /// Verifies the whole session, failing closed on any damage. An append a crash
    /// interrupted (its intent durable in `journal.json`, its bytes not all in the data files)
    /// is [`AuditError::Interrupted`] only when the events before it are intact and its
    /// pending bytes continue the chain intact, so that completing it (the next writer does,
    /// or `heartwood sessions recover`) yields a session that verifies; otherwise the damage is
    /// reported as such.
    pub fn verify(&self) -> Result<Verified, AuditError> {
        self.verify_with(None, Tree::Skip)
    }

    fn verify_with(
        &self,
        leaves: Option<&mut Vec<crate::Digest>>,
        tree: Tree,
    ) -> Result<Verified, AuditError> {
        let (verified, pending) = self.examine(leaves, tree)?;
        match pending {
            Some(pending) => Err(self.interrupted(pending)),
            None => Ok(verified),
        }
    }

    fn interrupted(&self, (first_seq, last_seq): (u64, u64)) -> AuditError {
        AuditError::Interrupted {
            id: self.id.clone(),
            first_seq,
            last_seq,
        }
    }

    /// Verifies the session as it will stand once any interrupted append is completed, and
    /// says which events such an append holds (the first not yet wholly in the files, and the
    /// last). An append in flight in a live writer, or files that changed while they were read
    /// (the writer of a live session appends beside this reader), are looked at again, for up
    /// to a second, before they are reported; a crash's intent stays and is reported then;
    /// damage does not move and is reported at once.
    fn examine(
        &self,
        mut leaves: Option<&mut Vec<crate::Digest>>,
        tree: Tree,
    ) -> Result<(Verified, Option<(u64, u64)>), AuditError> {
        let mut tries = 0;
        loop {
            let before = self.append_state();
            if let Some(leaves) = leaves.as_deref_mut() {
                leaves.clear();
            }
            let pending = read_pending(&self.paths.journal)?;
            let in_flight = pending.in_flight(&self.paths);
            // A live writer finishes its append in a few milliseconds: wait for it before
            // verifying anything (a crash's append stays, and is verified once waited for).
            if in_flight.is_some() && tries < SETTLE_TRIES {
                tries += 1;
                std::thread::sleep(SETTLE_PAUSE);
                continue;
            }
            let outcome = match (&pending, in_flight) {
                (Pending::Intents(intents), Some(range)) => {
                    self.verify_completed(intents, range, leaves.as_deref_mut(), tree)
                }
                _ => verify_session(&self.id, &self.paths, leaves.as_deref_mut(), tree)
                    .map(|(verified, _)| verified),
            };
            let moved = self.append_state() != before;
            if outcome.is_err() && moved && tries < SETTLE_TRIES {
                tries += 1;
                std::thread::sleep(SETTLE_PAUSE);
                continue;
            }
            return outcome.map(|verified| (verified, in_flight));
        }
    }

    /// Verifies the files completed with the pending `intents`, as recovery would complete
    /// them, without writing anything. Damage in the pending events says so.
    fn verify_completed(
        &self,
        intents: &[crate::intent::Intent],
        (first_seq, _): (u64, u64),
        leaves: Option<&mut Vec<crate::Digest>>,
        tree: Tree,
    ) -> Result<Verified, AuditError> {
        let damaged = |damage: Damage| AuditError::Damaged {
            id: self.id.clone(),
            damage,
        };
        let sources = completed_sources(&self.paths, intents)?.map_err(damaged)?;
        match verify_sources(&self.id, &self.paths, sources, leaves, tree) {
            Ok((verified, _)) => Ok(verified),
            Err(AuditError::Damaged { mut damage, .. })
                if damage.file != crate::layout::RECEIPTS_FILE && damage.line >= first_seq =>
            {
                damage
                    .what
                    .push_str(" (in the interrupted append, whose bytes wait in journal.json)");
                Err(damaged(damage))
            }
            Err(e) => Err(e),
        }
    }

    /// The size and modification time of each file an append changes.
    fn append_state(&self) -> Vec<Option<(u64, Option<std::time::SystemTime>)>> {
        let paths = &self.paths;
        [
            &paths.journal,
            &paths.events,
            &paths.audit,
            &paths.receipts,
            &paths.meta,
        ]
        .iter()
        .map(|path| {
            std::fs::metadata(path)
                .ok()
                .map(|m| (m.len(), m.modified().ok()))
        })
        .collect()
    }

    /// The checkpoint of the session as it is now (after verifying it).
    pub fn checkpoint(&self) -> Result<Checkpoint, AuditError> {
        let verified = self.verify_with(None, Tree::Build)?;
        let root = verified
            .merkle_root
            .ok_or_else(|| AuditError::CheckpointMismatch {
                id: self.id.clone(),
                detail: "the Merkle tree was not built".into(),
            })?;
        Ok(Checkpoint::of(&self.id, &verified, root))
    }

    /// Verifies the session and checks it against an independently kept checkpoint.
    pub fn verify_against(
        &self,
        retained: &Checkpoint,
    ) -> Result<(Verified, CheckpointReport), AuditError> {
        let mut leaves = Vec::new();
        let (mut verified, pending) = self.examine(Some(&mut leaves), Tree::Skip)?;
        // An interrupted append is checked as it will be completed, and then still reported.
        let report = checkpoint::check(&self.id, retained, &verified, &leaves)?;
        if let Some(pending) = pending {
            return Err(self.interrupted(pending));
        }
        verified.merkle_root = Some(crate::merkle::root(&leaves));
        Ok((verified, report))
    }

    /// What the session's writer last left beside the journal with
    /// [`SessionWriter::store_derived`](crate::SessionWriter::store_derived), if the journal
    /// still ends where it did then. Not verified: a summary for listings, never evidence.
    pub fn derived(&self) -> Option<serde_json::Value> {
        crate::derived::load(&self.paths)
    }

    /// [`SessionReader::derived`], decoded as a `P` (none when it is stale or is not one).
    pub fn derived_as<P: serde::de::DeserializeOwned>(&self) -> Option<P> {
        crate::derived::load(&self.paths)
    }

    /// Decodes the session's events in order. Reading stops at the first line that is not a
    /// whole line; each whole line is decoded independently so an unknown kind is reported by
    /// name in its place. Call [`SessionReader::verify`] to establish that they are authentic.
    pub fn events(&self) -> Result<Vec<Result<RecordedEvent, DecodeError>>, AuditError> {
        let mut reader = crate::durable::read_or_empty(&self.paths.events, 64 * 1024)?;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while read_line(&mut reader, &mut buf, MAX_LINE_BYTES).ctx("read", &self.paths.events)?
            == Line::Complete
        {
            out.push(RecordedEvent::decode(&buf));
        }
        Ok(out)
    }

    /// Every command receipt, in no particular order.
    pub fn receipts(&self) -> Result<Vec<Receipt>, AuditError> {
        let (map, _) = crate::receipts::load(&self.id, &self.paths.receipts)?;
        Ok(map.into_values().collect())
    }
}
