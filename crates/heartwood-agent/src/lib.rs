//! The native agent engine: Heartwood's default backend.
//!
//! This crate owns the model client for OpenAI-compatible chat completions ([`model`]), the
//! coding tools ([`tools`]), and conversations ([`conversation`]): the agent loop with grouped
//! confirmation, pause, rejection, persistence and condensation.
//!
//! It knows nothing of sessions, audit or user interfaces: the gateway drives it and turns its
//! events into Heartwood's durable events. It must never write an API key anywhere: routes hold
//! the *name* of the variable that holds the key.

pub mod conversation;
pub mod model;
mod private;
pub mod tools;
