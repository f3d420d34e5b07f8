//! Test doubles that speak the real protocols, for Heartwood's own tests (a dev-dependency only).
//!
//! [`ScriptedModelServer`] is an OpenAI-compatible chat-completions server on `127.0.0.1:0`:
//! real TCP, real HTTP, streaming (SSE) and non-streaming. It answers each request with the
//! next [`Turn`] of a [`Script`], can inject faults (HTTP errors, a stream cut mid-chunk,
//! malformed tool arguments, slow chunks), and records every request body so a test can assert
//! what the model was sent. [`sessions`] makes real recorded sessions for interface tests.

mod script;
mod server;
pub mod sessions;

pub use script::{Fault, Script, ScriptedCall, ScriptedUsage, Turn};
pub use server::ScriptedModelServer;
