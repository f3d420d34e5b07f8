//! OpenHands' agent server as a Heartwood engine, below the gateway (layer 2, beside
//! `heartwood-agent`).
//!
//! [`Installation`] finds (or makes) the pinned Python environment that holds
//! `openhands-agent-server`; [`AgentServer`] owns one server process, confined in Heartwood's
//! sandbox and reached through a Unix socket ([`Rendezvous`]), with a per-process session key,
//! in its own process group, killed with it; [`Client`] speaks the
//! server's REST API with typed requests, and [`events`] reads its event and state types (never
//! its prose). Translating those events into Heartwood's, and the [`AgentBackend`] port, belong
//! to the gateway, as they do for the native engine.
//!
//! [`AgentBackend`]: https://docs.rs/heartwood-gateway

pub mod client;
pub mod events;
pub mod install;
pub mod server;
pub mod store;

pub use client::{Client, ConversationSpec, ExecutionStatus};
pub use install::Installation;
pub use server::{AgentServer, Confinement, Rendezvous};
pub use store::{ConversationStore, StoredEvent};

/// Why the OpenHands engine could not do what it was asked; the text says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum OpenHandsError {
    /// No usable installation.
    #[error("{0}")]
    NotInstalled(String),
    /// The server process could not be started, or stopped answering.
    #[error("{0}")]
    Server(String),
    /// A request was refused or its answer could not be read.
    #[error("{0}")]
    Api(String),
    /// The conversation store on disk could not be read, or is not as the server writes it.
    #[error("{0}")]
    Store(String),
}
