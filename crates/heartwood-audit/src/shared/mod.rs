//! The shared session store: sessions kept in PostgreSQL so several `heartwood serve`
//! replicas (on one machine or many) serve the same sessions.
//!
//! The store keeps the journal's bytes exactly as the file store writes them (one row per
//! event: its event line and its audit line), the receipts' lines, the engine's log bytes the
//! journal's intents carry, and each session's `meta.json`. A replica that drives a session
//! takes its lease here ([`lease`]) and *materializes* the session into a private working
//! directory, where the ordinary file writer runs; every append then goes to the store first,
//! in one transaction that checks the lease's fencing token ([`Fence`]), and only then to the
//! working copy. The store is the truth; a working copy is a cache any replica can rebuild.
//!
//! This module must never let an append reach a working copy that the store refused: what a
//! replica shows as recorded is what every other replica reads.

mod image;
pub(crate) mod lease;
mod relay;
mod rows;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use postgres::{Client, NoTls};

use crate::AuditError;

pub use image::SessionImage;
pub(crate) use lease::Fence;
pub use relay::{Notice, Relayed, RelayedCommand, Relays};

/// How long a replica's lease on a session lasts without renewal, unless the deployment says
/// otherwise: long enough that a busy replica never loses it between renewals (every third of
/// it), short enough that a dead replica's sessions are taken over soon.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// How long connecting to the store may take before a request answers that it is unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Idle connections kept for reuse. Sessions driven at once each use one per append, and a
/// connection opened per append would cost more than the append; three replicas at this size
/// stay under PostgreSQL's default `max_connections` (100) only when they are not all busy, so
/// a deployment sizes `max_connections` to replicas × this (see docs/deployment.md).
const POOL: usize = 32;

/// A PostgreSQL session store, shared by the replicas that name the same database.
#[derive(Clone)]
pub struct SharedStore {
    inner: Arc<Inner>,
}

struct Inner {
    config: postgres::Config,
    /// The store as errors and listings name it (never its password).
    shown: String,
    /// This process's name in leases and relayed commands: host, pid and 32 random bits, so a
    /// restarted replica is a new holder and never mistakes an old lease for its own.
    holder: String,
    lease: Duration,
    idle: Mutex<Vec<Conn>>,
    schema_ready: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("store", &self.inner.shown)
            .field("holder", &self.inner.holder)
            .finish()
    }
}

impl SharedStore {
    /// The store at `url` (`postgres://user[:password]@host[:port]/database`). Connects to
    /// nothing yet: the first operation does, and creates the tables if they are missing.
    pub fn new(url: &str) -> Result<Self, AuditError> {
        let mut config: postgres::Config =
            url.parse()
                .map_err(|e: postgres::Error| AuditError::StoreUnavailable {
                    store: "(the --session-store URL)".into(),
                    detail: format!("the URL is not a PostgreSQL connection string: {e}"),
                })?;
        config.connect_timeout(CONNECT_TIMEOUT);
        // A store cut off by the network (a partition: nothing answers, nothing closes) is
        // found within about 15 s instead of the kernel's default of many minutes: sent data
        // unacknowledged for 10 s, or an idle connection whose probes go unanswered, drops
        // the connection, and the request answers that the store is unavailable.
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        config.keepalives_interval(Duration::from_secs(2));
        config.keepalives_retries(3);
        config.tcp_user_timeout(Duration::from_secs(10));
        config.application_name("heartwood");
        let shown = shown(&config);
        Ok(SharedStore {
            inner: Arc::new(Inner {
                config,
                shown,
                holder: holder_name(),
                lease: DEFAULT_LEASE,
                idle: Mutex::new(Vec::new()),
                schema_ready: Default::default(),
            }),
        })
    }

    /// The same store with leases that last `lease` without renewal. Call before use.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.lease = lease.max(Duration::from_millis(300));
        }
        self
    }

    /// The store as messages name it: user, host, port and database, never a password.
    pub fn shown(&self) -> &str {
        &self.inner.shown
    }

    /// This process's name as a lease holder.
    pub fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// How long a lease lasts without renewal.
    pub fn lease(&self) -> Duration {
        self.inner.lease
    }

    /// Runs `work` with a connection (from the pool, or a new one), creating the tables on
    /// first use. A connection that failed is dropped, never pooled again.
    pub(crate) fn with_client<T: Send>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, postgres::Error> + Send,
    ) -> Result<T, AuditError> {
        self.try_with_client(|client| work(client).map_err(|e| self.unavailable(e)))
    }

    /// [`SharedStore::with_client`] for work whose own failures are typed already.
    pub(crate) fn try_with_client<T: Send>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, AuditError> + Send,
    ) -> Result<T, AuditError> {
        off_runtime(|| self.pooled(work))
    }

    fn pooled<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        let pooled = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut client = match pooled.filter(|c| !c.is_closed()) {
            Some(client) => client,
            None => Conn(Some(self.connect_here()?)),
        };
        let result = work(&mut client);
        let broken = match &result {
            Err(AuditError::StoreUnavailable { .. }) => true,
            _ => client.is_closed(),
        };
        if !broken {
            let mut idle = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if idle.len() < POOL {
                idle.push(client);
            }
        }
        result
    }

    /// A new connection, with the tables in place.
    pub(crate) fn connect(&self) -> Result<Conn, AuditError> {
        off_runtime(|| self.connect_here()).map(|c| Conn(Some(c)))
    }

    fn connect_here(&self) -> Result<Client, AuditError> {
        let mut client = self
            .inner
            .config
            .connect(NoTls)
            .map_err(|e| self.unavailable(e))?;
        use std::sync::atomic::Ordering;
        if !self.inner.schema_ready.load(Ordering::Acquire) {
            create_schema(&mut client).map_err(|e| self.unavailable(e))?;
            self.inner.schema_ready.store(true, Ordering::Release);
        }
        Ok(client)
    }

    /// A client error as the store being unavailable, naming the store.
    pub(crate) fn unavailable(&self, e: postgres::Error) -> AuditError {
        AuditError::StoreUnavailable {
            store: self.inner.shown.clone(),
            detail: error_text(&e),
        }
    }
}

/// A connection that is never dropped on a thread driving asynchronous tasks: the client
/// says goodbye to the server by blocking on its own small runtime, which such a thread forbids.
pub(crate) struct Conn(Option<Client>);

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        // Only `Drop` takes the client out.
        self.0
            .as_ref()
            .expect("a connection is present until dropped")
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        self.0
            .as_mut()
            .expect("a connection is present until dropped")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            let _ = off_runtime(move || {
                drop(client);
                Ok::<(), AuditError>(())
            });
        }
    }
}

/// Runs `work` here, or on a thread of its own when this thread drives asynchronous tasks
/// (the agent's worker does, and appends from there): the synchronous client blocks on a
/// runtime of its own, which tokio refuses inside another. The caller blocks either way, as
/// it does for the journal's own `fsync`.
fn off_runtime<T: Send>(
    work: impl FnOnce() -> Result<T, AuditError> + Send,
) -> Result<T, AuditError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|scope| scope.spawn(work).join()).unwrap_or_else(|_| {
        Err(AuditError::StoreUnavailable {
            store: "the session store".into(),
            detail: "the thread talking to it stopped unexpectedly".into(),
        })
    })
}

/// The tables, created once by whichever replica comes first (an advisory lock keeps two
/// replicas starting together from racing on the catalog).
fn create_schema(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock(7237400580)", &[])?;
    tx.batch_execute(include_str!("schema.sql"))?;
    tx.commit()
}

/// The client's error with the server's own message when there is one.
fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    }
}

fn shown(config: &postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown-host".to_owned());
    let mut random = [0u8; 4];
    // Without entropy the pid and the time still tell this process from its predecessors.
    if getrandom::fill(&mut random).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        random = nanos.to_be_bytes();
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("{host}:{}:{hex}", std::process::id())
}
