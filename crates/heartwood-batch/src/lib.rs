//! Batches: one workflow (or task) over many items, each an ordinary session in its own
//! project, driven in process through the session gateway (the one door, as for any
//! interface): on a local pool, or one item per Slurm array task.
//!
//! It owns the manifest ([`manifest`]), the batch directory and each item's record
//! ([`record`]), the driver that moves an item on as far as it goes without a person
//! ([`drive`]), the local pool ([`pool`]), the Slurm job array and the scheduler's view
//! ([`slurm`]), where every item stands ([`status`]), a stage's acceptance for many items
//! ([`accept`]), and collecting results and the batch's RO-Crate ([`collect`], [`export`]).
//!
//! It must never keep rules of its own about sessions: what an item's session waits for,
//! whether its run was cut off and where its workflow run stands are read from the session's
//! projection; it never touches session files (the gateway's session record does), and reads
//! project files only through the gateway's confined workspace. It prints nothing: the
//! frontend that calls it says what happened.

pub mod accept;
pub mod collect;
pub mod drive;
mod error;
pub mod export;
pub mod manifest;
pub mod pool;
pub mod record;
pub mod route;
mod session;
pub mod slurm;
pub mod status;

pub use drive::Driver;
pub use error::{BatchError, Result};
pub use manifest::Manifest;
pub use record::{BatchDir, Phase, Record};
pub use route::{Connection, RouteConnector};

/// `text` quoted for a POSIX shell when it needs it.
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
