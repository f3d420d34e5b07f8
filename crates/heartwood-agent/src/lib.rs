//! The native agent engine: Heartwood's default backend.
//!
//! This crate owns the model client for OpenAI-compatible chat completions ([`model`]).
//! Coding tools, grouped confirmation and conversation persistence follow in the same crate.
//!
//! It knows nothing of sessions, audit or user interfaces: the gateway drives it and turns its
//! events into Heartwood's durable events. It must never write an API key anywhere: routes hold
//! the *name* of the variable that holds the key.

pub mod model;
pub mod tools;
