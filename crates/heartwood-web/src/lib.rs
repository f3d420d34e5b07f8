//! The browser interface's server: `heartwood serve`.
//!
//! This crate owns the ingress policy ([`ingress`]: which peers, hosts, origins, paths and
//! headers are served, and the launch [`capability`] every request must carry) and the HTTP
//! adapter over the session gateway's API ([`server`]). It keeps no session state and no
//! reducer: every answer comes from the gateway.
//!
//! It must never serve a request the policy refused, log or embed the capability, or take the
//! acting identity from a request body.

pub mod capability;
pub mod ingress;
pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;

pub use capability::Capability;
pub use ingress::{IngressPolicy, Mode};
pub use server::AppState;

/// Serves `state` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, state: Arc<AppState>) -> std::io::Result<()> {
    axum::serve(
        listener,
        server::router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}
