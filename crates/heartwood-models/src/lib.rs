//! Local model artifacts for Heartwood's `local` route: one choice contract with four ways in
//! (a trusted catalog entry, a pinned Hugging Face download, a raw import of local files, a
//! transferred bundle) and one way out (the project's model store under `.heartwood/models/`,
//! checked by the resource planner and run by the runtime launcher).
//!
//! Every way in ends in [`store::ModelStore::publish`], which verifies every byte against the
//! [`manifest::Manifest`] before an atomic rename; nothing half-written is ever selectable.
//! Long work reports through one [`transfer::Transfer`] handle, which every interface renders.
//! The gateway is the only caller.

pub mod bundle;
pub mod catalog;
pub mod digest;
mod error;
pub mod hub;
pub mod manifest;
pub mod planner;
mod private;
pub mod runtime;
pub mod store;
pub mod transfer;

pub use error::ModelError;
pub use manifest::{FileEntry, Manifest, ModelSource};
pub use store::{ModelStore, StoredModel};
