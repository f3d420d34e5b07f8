//! Read-only access to one session. Nothing here creates, changes or locks a file.

use heartwood_events::{DecodeError, Receipt, RecordedEvent, SessionId};

use crate::error::IoContext;
use crate::intent::read_pending;
use crate::line::{Line, read_line};
use crate::verify::{Tree, verify_session};
use crate::{
    AuditError, Checkpoint, CheckpointReport, MAX_LINE_BYTES, SessionMeta, SessionPaths, Verified,
    WriterInfo, checkpoint,
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
        })
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

    /// Verifies the whole session, failing closed on any damage or on an interrupted append
    /// that has not been completed yet.
    pub fn verify(&self) -> Result<Verified, AuditError> {
        self.verify_with(None, Tree::Skip)
    }

    /// Verifies; a failure that met an append in flight (its intent, or files that changed
    /// while they were read: the writer of a live session appends beside this reader) is tried
    /// again, for up to a second, before it is reported. A crash's intent stays and is
    /// reported; damage does not move and is reported at once.
    fn verify_with(
        &self,
        mut leaves: Option<&mut Vec<crate::Digest>>,
        tree: Tree,
    ) -> Result<Verified, AuditError> {
        let mut tries = 0;
        loop {
            let before = self.append_state();
            let outcome = match read_pending(&self.paths.journal)?.in_flight(&self.paths) {
                Some((first_seq, last_seq)) => Err(AuditError::Interrupted {
                    id: self.id.clone(),
                    first_seq,
                    last_seq,
                }),
                _ => {
                    if let Some(leaves) = leaves.as_deref_mut() {
                        leaves.clear();
                    }
                    verify_session(&self.id, &self.paths, leaves.as_deref_mut(), tree)
                        .map(|(verified, _)| verified)
                }
            };
            let in_flight = matches!(outcome, Err(AuditError::Interrupted { .. }))
                || self.append_state() != before;
            if outcome.is_err() && in_flight && tries < SETTLE_TRIES {
                tries += 1;
                std::thread::sleep(SETTLE_PAUSE);
                continue;
            }
            return outcome;
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
        let mut verified = self.verify_with(Some(&mut leaves), Tree::Skip)?;
        let report = checkpoint::check(&self.id, retained, &verified, &leaves)?;
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
