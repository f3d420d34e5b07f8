//! The browser interface's server: `heartwood serve`.
//!
//! This crate owns the ingress policy ([`ingress`]: which peers, hosts, origins, paths and
//! headers are served, and the launch [`capability`] every request must carry), the session ids it [`minted`], the accept
//! loop's connection limits ([`listener`]), the HTTP adapter over the session gateway's API
//! ([`server`] frames every request; [`api`] declares every route once, typed, and serves it),
//! and the published description of that API ([`schema`]). It keeps no session state and no
//! reducer: every answer comes from the gateway.
//!
//! It must never serve a request the policy refused, log or embed the capability, or take the
//! acting identity from a request body.

mod answer;
pub mod api;
mod body;
pub mod capability;
pub mod ingress;
pub mod launch;
pub mod listener;
pub mod minted;
mod page;
pub mod schema;
pub mod server;

use std::sync::Arc;

pub use capability::Capability;
pub use ingress::{IngressPolicy, Mode};
pub use listener::Limits;
pub use server::AppState;

/// Serves `state` on `listener` with [`Limits::for_this_process`] until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, state: Arc<AppState>) -> std::io::Result<()> {
    listener::serve(listener, state, Limits::for_this_process()).await
}
