//! Research workflow contracts and the independent checks that decide them.
//!
//! This crate owns versioned workflow definitions (`definition`: inputs, ordered stages,
//! artifacts, check ids, researcher gates, budgets) and their validation, the read-only
//! [`catalog`], and the maintained deterministic checks ([`checks`]), which read the project only
//! through `heartwood-workspace` and answer `passed`, `failed` or `unverified` with the digest of
//! every byte they inspected, and the evidence [`gate`] that says whether results still hold.
//!
//! It must never run code from the project, trust a model's report of success, write to the
//! project, or answer `passed` beyond a limit or for a check it does not implement.

pub mod catalog;
pub mod check;
pub mod checks;
pub mod definition;
pub mod evaluate;
pub mod gate;
pub mod identity;
pub(crate) mod recent;
pub mod registry;
pub mod specialists;
pub mod table;

pub use check::{CheckResult, Status};
pub use definition::{Definition, DefinitionError};
pub use registry::Registry;
