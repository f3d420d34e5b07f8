//! The accept loop: how many connections are served at once, and how long a connection may
//! take to send a request's headers (or sit idle between requests).
//!
//! `axum::serve` has neither limit, so a few hundred idle or slow-header connections could use
//! up the process's file descriptors and starve the researcher's own page. Here every
//! connection holds one of [`Limits::max_connections`] slots; past that a new connection gets
//! an immediate `503` with `Retry-After` and is closed, which is kinder than a hang. Each
//! connection is HTTP/1.1 (the page, the API, server-sent events and WebSocket upgrades all
//! use it) with hyper's header-read timer, which also runs while a kept-alive connection waits
//! for its next request. Connections that carry a response stream (SSE, WebSocket) are past
//! their headers and are not cut.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::server::{self, AppState};

/// The connection limits of one server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; past this new ones are refused with `503`.
    pub max_connections: usize,
    /// Time a connection has to send a request's headers, counted from when the server starts
    /// waiting for them (so also the idle limit between kept-alive requests).
    pub header_read_timeout: Duration,
}

impl Default for Limits {
    /// 256 connections (well under the default 1,024 descriptors), 10 seconds for headers.
    fn default() -> Self {
        Limits {
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
        }
    }
}

/// Descriptors kept for everything but connections: session files, the model client's
/// sockets, child processes' pipes.
const RESERVED_DESCRIPTORS: u64 = 256;

/// The most connections served at once, however many descriptors the system allows.
const MOST_CONNECTIONS: u64 = 4096;

impl Limits {
    /// The limits for a long-lived server: the process's soft descriptor limit is raised to its
    /// hard limit (as Go's runtime does; the soft default of 1,024 is a relic of `select`), and
    /// the connection limit is what that leaves after [`RESERVED_DESCRIPTORS`], at most
    /// [`MOST_CONNECTIONS`]. Where the limit cannot be read or raised, [`Limits::default`].
    pub fn for_this_process() -> Self {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        let raised = match (limit.current, limit.maximum) {
            (Some(current), maximum) if maximum.is_none_or(|max| current < max) => {
                let wanted = maximum.unwrap_or(MOST_CONNECTIONS + RESERVED_DESCRIPTORS);
                let raised = Rlimit {
                    current: Some(wanted),
                    maximum,
                };
                setrlimit(Resource::Nofile, raised).map_or(current, |()| wanted)
            }
            (Some(current), _) => current,
            (None, _) => MOST_CONNECTIONS + RESERVED_DESCRIPTORS,
        };
        let connections = raised
            .saturating_sub(RESERVED_DESCRIPTORS)
            .min(MOST_CONNECTIONS);
        let default = Limits::default();
        Limits {
            max_connections: usize::try_from(connections)
                .unwrap_or(default.max_connections)
                .max(default.max_connections.min(64)),
            ..default
        }
    }
}

/// Serves `state` on `listener` with `limits` until the process ends.
pub async fn serve(listener: TcpListener, state: Arc<AppState>, limits: Limits) -> io::Result<()> {
    let router = server::router(state);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors or a connection reset before it was accepted: wait a little
            // rather than spin, and keep serving.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tokio::spawn(refuse_busy(stream));
            continue;
        };
        let router = router.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(ConnectInfo(peer));
                router.clone().oneshot(request)
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            // A connection ending in an error (timeout, reset) concerns that client alone.
            let _ = connection.await;
            drop(slot);
        });
    }
}

/// Answers a connection over the limit with `503` and closes it.
async fn refuse_busy(mut stream: TcpStream) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
        Content-Type: text/plain; charset=utf-8\r\nContent-Length: 51\r\nConnection: close\r\n\r\n\
        heartwood serve is at its connection limit; retry.\n";
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(BUSY).await;
        let _ = stream.shutdown().await;
    })
    .await;
}
