//! Heartwood's session journal: everything on disk for a session.
//!
//! This crate owns `.heartwood/sessions/<id>/`: the paired event + audit append with its
//! recovery intent and fsync discipline, the SHA-256 hash chain, fail-closed verification,
//! RFC 6962 Merkle checkpoints and consistency proofs, export bundles, command receipts, and
//! the one-writer-per-session lease. See `docs/journal-format.md` for the byte-level format.
//!
//! It is the only crate that touches session files. It must never interpret what events mean
//! (that is the gateway's reducer), and read-only operations ([`SessionStore::list`],
//! [`SessionReader`]) must never create a directory or a file.

mod checkpoint;
mod derived;
mod digest;
mod durable;
mod error;
mod event_head;
mod export;
#[cfg(feature = "test-faults")]
#[doc(hidden)]
pub mod faults;
mod intent;
mod layout;
mod lease;
mod line;
pub mod merkle;
mod meta;
mod reader;
mod receipt_repair;
mod receipts;
mod record;
mod recovery;
mod register;
pub mod shared;
mod store;
mod torn;
mod verify;
mod writer;

pub use checkpoint::{Checkpoint, CheckpointReport};
pub use digest::Digest;
pub use durable::sync_calls;
pub use error::{AuditError, Damage, DamageKind};
pub use export::{BundleFiles, JournalEnd};
pub use intent::BackendBytes;
pub use layout::{EXPORTS_DIR, RECEIPTS_FILE, SessionPaths};
pub use lease::WriterInfo;
pub use meta::SessionMeta;
pub use reader::SessionReader;
pub use receipt_repair::{RebuiltReceipt, ReceiptRepair};
pub use record::{AuditRecord, BadRecord, genesis};
pub use recovery::Recovery;
pub use shared::{SessionImage, SharedStore};
pub use store::{MetaUnreadable, SessionStore, SessionSummary};
pub use torn::TornTailCut;
pub use verify::Verified;
pub use writer::SessionWriter;

/// The longest event, audit or receipt line accepted, in bytes. Longer lines are refused when
/// written and reported as damage when read, so reading a session has bounded memory.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
