//! The session writer: holds the lease and appends events, audit records and receipts as one
//! durable unit.
//!
//! Opening a writer takes the lease, completes an interrupted append if the recovery intent
//! describes one, and verifies the whole session before anything new is written (fail closed).
//! After any failed write the writer refuses further writes: an fsync error in particular may
//! mean the kernel dropped dirty pages, so retrying could record a log that is not what is on
//! disk. Reopening re-reads the truth from the files.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use heartwood_events::{
    CommandId, Event, Outcome, Receipt, RecordedEvent, Seq, SessionId, to_canonical_bytes,
};
use serde_json::Value;

use crate::error::IoContext;
use crate::intent::{BackendBytes, Intent, IntentFile};
use crate::merkle::RootBuilder;
use crate::record::AuditRecord;
use crate::recovery::{Recovery, recover};
use crate::shared::Fence;
use crate::verify::{Tree, verify_session};
use crate::{
    AuditError, Checkpoint, Digest, MAX_LINE_BYTES, SessionMeta, SessionPaths, Verified, durable,
    lease::WriterLease, receipts,
};

/// The chain's state after the last durable append.
struct Chain {
    count: u64,
    prev: Digest,
    /// The Merkle tree's compact state; `None` until a checkpoint or export first needs it.
    root: Option<RootBuilder>,
    events_len: u64,
    audit_len: u64,
    receipts_len: u64,
    last_time: Option<String>,
}

/// What one durable append wrote.
struct Committed {
    receipt: Option<Receipt>,
    events: Vec<RecordedEvent>,
}

/// An append, sealed and described, not yet written.
struct Prepared {
    recorded: Vec<RecordedEvent>,
    intent: Intent,
    sealed: Vec<Digest>,
    prev: Digest,
    last_time: Option<String>,
}

/// The exclusive writer of one session.
pub struct SessionWriter {
    id: SessionId,
    paths: SessionPaths,
    meta: SessionMeta,
    intent: IntentFile,
    events: File,
    audit: File,
    receipts_file: File,
    chain: Chain,
    receipts: HashMap<CommandId, Receipt>,
    /// Backend logs that pending intents made durable, synced with the data files.
    backend_logs: std::collections::BTreeSet<std::path::PathBuf>,
    failed: Option<String>,
    /// The hold on the session in the shared store, when it is kept there: every append goes
    /// to the store first, and reaches the files only once the store took it.
    fence: Option<Fence>,
    // Declared last so it is released after the files above are closed.
    lease: WriterLease,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("id", &self.id)
            .field("count", &self.chain.count)
            .finish()
    }
}

impl SessionWriter {
    /// Opens session `id` for writing, registering it first if it does not exist yet.
    pub(crate) fn open(
        sessions_root: &Path,
        id: &SessionId,
        paths: SessionPaths,
        register_backend: Option<&str>,
        fence: Option<Fence>,
    ) -> Result<(Self, Recovery), AuditError> {
        if !paths.dir.is_dir() {
            let Some(backend) = register_backend else {
                return Err(AuditError::NoSession { id: id.clone() });
            };
            crate::register::create_registered_dir(sessions_root, id, &paths, backend)?;
        }
        let lease = WriterLease::acquire(id, &paths)?;
        let meta = match (paths.meta.exists(), register_backend) {
            (true, _) => SessionMeta::read(&paths.meta, id)?,
            (false, Some(backend)) => {
                let meta = SessionMeta::new(id.clone(), backend, None);
                let mut bytes = serde_json::to_vec_pretty(&meta).unwrap_or_default();
                bytes.push(b'\n');
                durable::write_atomic(&paths.meta, &bytes)?;
                meta
            }
            (false, None) => {
                return Err(AuditError::BadFile {
                    path: paths.meta.clone(),
                    detail: "missing; the session was never fully registered".into(),
                });
            }
        };

        let (mut intent, created) = IntentFile::open(&paths.journal)?;
        let recovery = recover(id, &paths, &mut intent)?;
        let (verified, root) = verify_session(id, &paths, None, Tree::Skip)?;
        let (receipts, receipts_len) = receipts::load(id, &paths.receipts)?;
        let created =
            created | !paths.events.exists() | !paths.audit.exists() | !paths.receipts.exists();
        let events = durable::open_append(&paths.events)?;
        let audit = durable::open_append(&paths.audit)?;
        let receipts_file = durable::open_append(&paths.receipts)?;
        if created {
            durable::sync_dir(&paths.dir)?;
        }
        let chain = Chain {
            count: verified.count,
            prev: verified.terminal_hash,
            root,
            events_len: verified.events_len,
            audit_len: verified.audit_len,
            receipts_len,
            last_time: verified.last_time,
        };
        let writer = SessionWriter {
            id: id.clone(),
            paths,
            meta,
            intent,
            events,
            audit,
            receipts_file,
            chain,
            receipts,
            backend_logs: Default::default(),
            failed: None,
            fence,
            lease,
        };
        Ok((writer, recovery))
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The session's metadata.
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// Whether the process that wrote this session before ended without closing it (a crash
    /// or a kill): only then can other logs the session keeps be ahead of the journal.
    pub fn previous_writer_crashed(&self) -> bool {
        self.lease.inherited_from_crash()
    }

    /// The caller has reconciled every log the session keeps with the journal, so closing
    /// this writer may release the session as cleanly closed. Until then (and always after a
    /// failed write) the next writer is told the previous one crashed.
    pub fn mark_reconciled(&mut self) {
        if self.failed.is_none() {
            self.lease.mark_clean();
        }
    }

    /// The fencing token this writer's appends carry, when the session is kept in the shared
    /// store.
    pub fn fencing_token(&self) -> Option<i64> {
        self.fence.as_ref().map(Fence::token)
    }

    /// The session's files.
    pub fn paths(&self) -> &SessionPaths {
        &self.paths
    }

    /// Number of durable events.
    pub fn count(&self) -> u64 {
        self.chain.count
    }

    /// The checkpoint of everything appended so far. The first call after opening builds the
    /// Merkle tree from the log (opening skips it); later appends keep it current.
    pub fn checkpoint(&mut self) -> Result<Checkpoint, AuditError> {
        let merkle_root = self.merkle()?.root();
        Ok(Checkpoint {
            session: self.id.clone(),
            count: self.chain.count,
            terminal_hash: self.chain.prev,
            merkle_root,
        })
    }

    /// The compact Merkle state, built on first use.
    fn merkle(&mut self) -> Result<&mut RootBuilder, AuditError> {
        if self.chain.root.is_none() {
            let (_, root) = verify_session(&self.id, &self.paths, None, Tree::Build)?;
            self.chain.root = root;
        }
        self.chain
            .root
            .as_mut()
            .ok_or_else(|| AuditError::WriterFailed {
                id: self.id.clone(),
                cause: "the Merkle tree could not be built".into(),
            })
    }

    /// The receipt of an earlier command with this id, if there is one. A retry must name the
    /// same command type; reusing an id for another command is refused.
    pub fn receipt_for(
        &self,
        command_id: &CommandId,
        command_type: &str,
    ) -> Result<Option<&Receipt>, AuditError> {
        self.receipt_for_content(command_id, command_type, None)
    }

    /// The receipt of an earlier command with this id, whatever its type.
    pub fn receipt(&self, command_id: &CommandId) -> Option<&Receipt> {
        self.receipts.get(command_id)
    }

    /// [`SessionWriter::receipt_for`], also refusing a retry whose content (`content_sha256`,
    /// a digest the caller computes of what the command says) differs from the first one's.
    pub fn receipt_for_content(
        &self,
        command_id: &CommandId,
        command_type: &str,
        content_sha256: Option<&str>,
    ) -> Result<Option<&Receipt>, AuditError> {
        match self.receipts.get(command_id) {
            Some(r) if r.command_type != command_type => Err(AuditError::CommandIdReused {
                command_id: command_id.to_string(),
                first: r.command_type.clone(),
            }),
            Some(r)
                if content_sha256.is_some()
                    && r.content_sha256.is_some()
                    && r.content_sha256.as_deref() != content_sha256 =>
            {
                Err(AuditError::CommandIdReused {
                    command_id: command_id.to_string(),
                    first: format!("different {}", r.command_type),
                })
            }
            found => Ok(found),
        }
    }

    /// Appends events durably, returning the sequence number of the last one.
    pub fn append(
        &mut self,
        command: Option<&CommandId>,
        events: Vec<Event>,
    ) -> Result<Seq, AuditError> {
        let committed = self.commit(command, events, None)?;
        committed
            .events
            .last()
            .map(|e| e.seq)
            .ok_or_else(|| AuditError::BadFile {
                path: self.paths.events.clone(),
                detail: "an append must hold at least one event".into(),
            })
    }

    /// Appends events durably and returns them as recorded (with their sequence numbers and
    /// times), for a caller that keeps a live view of the session.
    pub fn append_recorded(
        &mut self,
        command: Option<&CommandId>,
        events: Vec<Event>,
    ) -> Result<Vec<RecordedEvent>, AuditError> {
        Ok(self.commit(command, events, None)?.events)
    }

    /// Appends the events a command produced together with its receipt, as one durable unit:
    /// after a crash either both are present or neither is.
    pub fn complete_command(
        &mut self,
        command_id: &CommandId,
        command_type: &str,
        events: Vec<Event>,
        result: Value,
    ) -> Result<Receipt, AuditError> {
        let (receipt, _) =
            self.complete_command_recorded(command_id, command_type, None, None, events, result)?;
        Ok(receipt)
    }

    /// [`SessionWriter::complete_command`], also returning the events as recorded; the receipt
    /// keeps `content_sha256` so a retry that changed the command is refused, and the `actor`
    /// the command acted for.
    pub fn complete_command_recorded(
        &mut self,
        command_id: &CommandId,
        command_type: &str,
        content_sha256: Option<&str>,
        actor: Option<&str>,
        events: Vec<Event>,
        result: Value,
    ) -> Result<(Receipt, Vec<RecordedEvent>), AuditError> {
        self.receipt_for_content(command_id, command_type, content_sha256)?;
        let n = events.len() as u64;
        let last_seq = if n == 0 {
            None
        } else {
            Seq::new(self.chain.count + n).ok()
        };
        let mut receipt = new_receipt(
            command_id,
            command_type,
            Outcome::Applied { last_seq, result },
        );
        receipt.content_sha256 = content_sha256.map(str::to_owned);
        receipt.actor = actor.map(str::to_owned);
        let committed = self.commit(Some(command_id), events, Some(receipt))?;
        let receipt = self.receipt_of(committed.receipt)?;
        Ok((receipt, committed.events))
    }

    fn receipt_of(&self, receipt: Option<Receipt>) -> Result<Receipt, AuditError> {
        receipt.ok_or_else(|| AuditError::WriterFailed {
            id: self.id.clone(),
            cause: "receipt lost".into(),
        })
    }

    /// Records that a command was refused, so a retry is refused the same way.
    pub fn refuse_command(
        &mut self,
        command_id: &CommandId,
        command_type: &str,
        content_sha256: Option<&str>,
        actor: Option<&str>,
        refusal: heartwood_events::Refusal,
    ) -> Result<Receipt, AuditError> {
        self.receipt_for_content(command_id, command_type, content_sha256)?;
        let mut receipt = new_receipt(command_id, command_type, Outcome::Refused(refusal));
        receipt.content_sha256 = content_sha256.map(str::to_owned);
        receipt.actor = actor.map(str::to_owned);
        let committed = self.commit(Some(command_id), Vec::new(), Some(receipt))?;
        self.receipt_of(committed.receipt)
    }

    /// Writes an export bundle of every event so far, then records it as an event. Returns the
    /// bundle's directory and the sequence number of the `export_recorded` event.
    pub fn export(
        &mut self,
        command: Option<&CommandId>,
    ) -> Result<(std::path::PathBuf, Seq), AuditError> {
        let (bundle, event) = self.write_export_bundle()?;
        let seq = self.append(command, vec![event])?;
        Ok((bundle, seq))
    }

    /// Where the journal ends now, for an export made from it without this writer.
    pub fn end(&self) -> Result<crate::JournalEnd, AuditError> {
        self.ensure_usable()?;
        let end = Verified {
            count: self.chain.count,
            terminal_hash: self.chain.prev,
            merkle_root: None,
            events_len: self.chain.events_len,
            audit_len: self.chain.audit_len,
            last_time: self.chain.last_time.clone(),
        };
        Ok(crate::JournalEnd::new(
            self.id.clone(),
            self.paths.clone(),
            end,
        ))
    }

    /// Writes an export bundle of every event so far and returns its directory with the
    /// `export_recorded` event the caller must append (with a command's receipt, say).
    pub fn write_export_bundle(&mut self) -> Result<(std::path::PathBuf, Event), AuditError> {
        self.end()?.write_bundle()
    }

    /// Leaves `payload` beside the journal, bound to where it ends now (see
    /// [`SessionReader::derived`](crate::SessionReader::derived)). Best effort: a cache that
    /// cannot be written is simply absent.
    pub fn store_derived(&self, payload: serde_json::Value) {
        if self.failed.is_none() {
            let _ = crate::derived::store(
                &self.paths,
                self.chain.events_len,
                self.chain.audit_len,
                self.chain.prev.to_hex(),
                payload,
            );
        }
    }

    /// Closes the writer and releases the lease (syncing the data files first: see `Drop`).
    pub fn close(self) {}

    /// Syncs the data files now and blanks the intents that covered them, reporting a failure
    /// (which stops the writer, as any failed write does). Appends are durable without this;
    /// it is for a caller that wants the data files themselves synced at a point of its choice.
    pub fn sync(&mut self) -> Result<(), AuditError> {
        self.ensure_usable()?;
        self.sync_data_files().inspect_err(|e| {
            self.failed = Some(e.to_string());
            self.lease.mark_unclean();
        })
    }

    /// Fault injection for tests: drops the writer as a crashed process would, syncing nothing.
    #[cfg(feature = "test-faults")]
    #[doc(hidden)]
    pub fn crash(mut self) {
        self.failed = Some("crashed (simulated)".into());
    }

    /// `Err` with the first failure once a write has failed: the writer refuses to continue.
    pub fn ensure_usable(&self) -> Result<(), AuditError> {
        match &self.failed {
            Some(cause) => Err(AuditError::WriterFailed {
                id: self.id.clone(),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The one write path: intent, data, fsync, clear.
    fn commit(
        &mut self,
        command: Option<&CommandId>,
        events: Vec<Event>,
        receipt: Option<Receipt>,
    ) -> Result<Committed, AuditError> {
        self.ensure_usable()?;
        let prepared = self.prepare(command, events, receipt.as_ref())?;
        self.commit_prepared(prepared, receipt)
    }

    /// Appends events a caller numbered and timed itself (so it could show them before they
    /// were durable), as one durable unit. They must continue the chain: the first is numbered
    /// [`SessionWriter::count`] + 1.
    pub fn append_numbered(&mut self, events: Vec<RecordedEvent>) -> Result<(), AuditError> {
        self.append_numbered_with(events, None)
    }

    /// [`SessionWriter::append_numbered`], making `backend`'s bytes durable in the same intent:
    /// the backend wrote them to its log in `backend/` already and does not sync that log
    /// itself, so a step costs one sync. A crash that lost them has them written again when
    /// the session is next opened for writing, before the backend reads its log.
    pub fn append_numbered_with(
        &mut self,
        events: Vec<RecordedEvent>,
        backend: Option<BackendBytes>,
    ) -> Result<(), AuditError> {
        let backend = backend.filter(|b| !b.bytes.is_empty());
        if events.is_empty() && backend.is_none() {
            return Ok(());
        }
        self.ensure_usable()?;
        let mut prepared = self.prepare_recorded(events, None)?;
        if let Some(bytes) = backend {
            let path = bytes.path(&self.paths).ok_or_else(|| AuditError::BadFile {
                path: self.paths.backend.clone(),
                detail: format!(
                    "{:?} is not a file name in the backend directory",
                    bytes.file
                ),
            })?;
            self.backend_logs.insert(path);
            prepared.intent.backend = Some(bytes);
        }
        self.commit_prepared(prepared, None).map(|_| ())
    }

    fn commit_prepared(
        &mut self,
        prepared: Prepared,
        receipt: Option<Receipt>,
    ) -> Result<Committed, AuditError> {
        if let Err(e) = self.write_durably(&prepared.intent) {
            self.failed = Some(e.to_string());
            self.lease.mark_unclean();
            return Err(e);
        }
        let Prepared {
            intent,
            sealed,
            prev,
            last_time,
            recorded,
        } = prepared;
        let count = sealed.len() as u64;
        self.chain.count += count;
        self.chain.prev = prev;
        if let Some(root) = self.chain.root.as_mut() {
            for hash in &sealed {
                root.push(hash);
            }
        }
        self.chain.events_len += intent.events.len() as u64;
        self.chain.audit_len += intent.audit.len() as u64;
        self.chain.receipts_len += intent.receipts.len() as u64;
        if last_time.is_some() {
            self.chain.last_time = last_time;
        }
        if let Some(receipt) = &receipt {
            self.receipts
                .insert(receipt.command_id.clone(), receipt.clone());
        }
        Ok(Committed {
            receipt,
            events: recorded,
        })
    }

    /// Seals events into their lines and audit records, and describes the append as an intent.
    fn prepare(
        &self,
        command: Option<&CommandId>,
        events: Vec<Event>,
        receipt: Option<&Receipt>,
    ) -> Result<Prepared, AuditError> {
        let first_seq = self.chain.count + 1;
        let recorded = events
            .into_iter()
            .enumerate()
            .map(|(i, event)| {
                let seq = Seq::new(first_seq + i as u64).map_err(|e| AuditError::BadFile {
                    path: self.paths.events.clone(),
                    detail: e.to_string(),
                })?;
                Ok(RecordedEvent::new(seq, command.cloned(), event))
            })
            .collect::<Result<Vec<_>, AuditError>>()?;
        self.prepare_recorded(recorded, receipt)
    }

    /// [`SessionWriter::prepare`] for events already numbered and timed, which must continue
    /// the chain (`seq` = count + 1, + 2, ...).
    fn prepare_recorded(
        &self,
        recorded: Vec<RecordedEvent>,
        receipt: Option<&Receipt>,
    ) -> Result<Prepared, AuditError> {
        let first_seq = self.chain.count + 1;
        let mut event_bytes = Vec::new();
        let mut audit_bytes = Vec::new();
        let mut prev = self.chain.prev;
        let mut sealed = Vec::with_capacity(recorded.len());
        let mut last_time = None;
        for (i, recorded) in recorded.iter().enumerate() {
            let seq = first_seq + i as u64;
            if recorded.seq.get() != seq {
                return Err(AuditError::BadFile {
                    path: self.paths.events.clone(),
                    detail: format!(
                        "an event numbered {} cannot follow event {}",
                        recorded.seq,
                        seq - 1
                    ),
                });
            }
            let line = to_canonical_bytes(recorded)?;
            if line.len() > MAX_LINE_BYTES {
                return Err(AuditError::TooLarge {
                    len: line.len(),
                    max: MAX_LINE_BYTES,
                });
            }
            let record = AuditRecord::seal(
                seq,
                recorded.event.kind(),
                recorded.time.as_str(),
                Digest::of(&line),
                prev,
            );
            event_bytes.extend_from_slice(&line);
            event_bytes.push(b'\n');
            audit_bytes.extend_from_slice(&record.to_line());
            audit_bytes.push(b'\n');
            prev = record.hash;
            sealed.push(record.hash);
            last_time = Some(recorded.time.as_str().to_owned());
        }
        let mut receipt_bytes = Vec::new();
        if let Some(receipt) = receipt {
            receipt_bytes = to_canonical_bytes(receipt)?;
            receipt_bytes.push(b'\n');
        }
        let count = sealed.len() as u64;
        // Canonical JSON is UTF-8 by construction.
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap_or_default();
        let intent = Intent {
            first_seq,
            last_seq: first_seq + count.saturating_sub(1),
            events_len: self.chain.events_len,
            audit_len: self.chain.audit_len,
            receipts_len: self.chain.receipts_len,
            events: text(event_bytes),
            audit: text(audit_bytes),
            receipts: text(receipt_bytes),
            backend: None,
        };
        Ok(Prepared {
            recorded,
            intent,
            sealed,
            prev,
            last_time,
        })
    }

    /// Fault injection for tests: records the recovery intent for `events` and then stops, as a
    /// crash right after the intent's fsync would, before any data byte is written.
    #[cfg(feature = "test-faults")]
    #[doc(hidden)]
    pub fn crash_after_intent(mut self, events: Vec<Event>) -> Result<(), AuditError> {
        let prepared = self.prepare(None, events, None)?;
        let recorded = self.intent.record(&prepared.intent);
        self.crash();
        recorded
    }

    /// Records the intent (the append's one sync), then appends to the data files; syncs
    /// them together only every [`crate::intent::SYNC_EVERY`] appends.
    fn write_durably(&mut self, intent: &Intent) -> Result<(), AuditError> {
        if let Some(fence) = self.fence.as_mut() {
            fence.append(intent)?;
        }
        self.intent.record(intent)?;
        let files = [
            (&mut self.events, &self.paths.events, &intent.events),
            (&mut self.audit, &self.paths.audit, &intent.audit),
            (
                &mut self.receipts_file,
                &self.paths.receipts,
                &intent.receipts,
            ),
        ];
        for (file, path, bytes) in files {
            if !bytes.is_empty() {
                durable::append(file, bytes.as_bytes()).ctx("append to", path)?;
            }
        }
        if self.intent.wants_sync() {
            self.sync_data_files()?;
        }
        Ok(())
    }

    /// Syncs the data files, after which the intents describing them are not needed.
    fn sync_data_files(&mut self) -> Result<(), AuditError> {
        for (file, path) in [
            (&self.events, &self.paths.events),
            (&self.audit, &self.paths.audit),
            (&self.receipts_file, &self.paths.receipts),
        ] {
            durable::sync_data(file).ctx("sync", path)?;
        }
        for path in std::mem::take(&mut self.backend_logs) {
            let file = File::open(&path).ctx("open", &path)?;
            durable::sync_data(&file).ctx("sync", &path)?;
        }
        self.intent.clear()
    }
}

impl Drop for SessionWriter {
    /// A writer that closes syncs what its intents still cover and blanks them, so a session
    /// nobody writes holds an empty `journal.json`. A writer that failed leaves them for the
    /// next open to complete.
    fn drop(&mut self) {
        if self.failed.is_none() && self.intent.has_pending() {
            let _ = self.sync_data_files();
        }
        if let Some(mut fence) = self.fence.take() {
            fence.release(self.failed.is_none() && !self.lease.is_unclean());
        }
    }
}

fn new_receipt(command_id: &CommandId, command_type: &str, outcome: Outcome) -> Receipt {
    Receipt::new(command_id.clone(), command_type, outcome)
}
