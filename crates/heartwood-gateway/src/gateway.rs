//! [`SessionGateway`]: typed commands in, one projection out.
//!
//! `submit` checks a command against the receipts (a retried id gets its first answer) and the
//! projection's `available_commands` (the same rules for every interface), then acts: through
//! the session's worker for agent work, through the journal for the rest. Every answer is a
//! receipt, refusals included, so a retry is refused the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use heartwood_audit::{SessionStore, SessionSummary};
use heartwood_events::{Command, Event, Receipt, SessionId, SessionProjection, SessionRow};
use tokio::sync::broadcast;

use crate::backend::BackendFactory;
use crate::config::{BackendKind, ProjectConfig};
use crate::error::decoded;
use crate::live::Live;
use crate::native::NativeBackendFactory;
use crate::openhands::OpenHandsBackendFactory;
use crate::worker_link::{Stopping, WorkerLink};
use crate::{GatewayError, ProjectContext, reducer};
use heartwood_events::{Snapshot, Update};

mod command;
mod follow_from;
mod read;
mod settle;
mod updates;

pub use follow_from::SessionFollow;
pub use updates::SessionUpdates;

/// How long [`SessionGateway::close`] waits for a busy agent to reach its next step before it
/// stops it.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// How long a session an interface serves may sit idle before [`SessionGateway::release_idle`]
/// lets it go: long enough that answering a set just shown does not bounce the lease.
pub const IDLE_RELEASE: Duration = Duration::from_secs(2);

/// The gateway of one project: the only way an interface reaches its sessions.
///
/// Its methods, by what an interface does with them:
///
/// - **Open and close**: [`new`](Self::new), [`with_store`](Self::with_store) (sessions in a
///   shared store), [`project`](Self::project), [`close`](Self::close).
/// - **Name sessions and commands**: [`new_session_id`](Self::new_session_id),
///   [`new_command_id`](Self::new_command_id); a replica on a shared store also
///   [`record_issued`](Self::record_issued) the ids it hands out and asks
///   [`exists`](Self::exists), [`exists_checked`](Self::exists_checked) and
///   [`was_issued`](Self::was_issued).
/// - **Act**: [`submit`](Self::submit) (or [`submit_blocking`](Self::submit_blocking) off a
///   runtime) is the one command path; [`serve`](Self::serve) takes over a run nobody serves,
///   [`stop_now`](Self::stop_now) interrupts one, [`release_idle`](Self::release_idle) lets
///   settled sessions go, [`serves_here`](Self::serves_here) says which this process holds.
/// - **Read**: [`current`](Self::current) (async) and [`snapshot`](Self::snapshot) (blocking)
///   give the projection with what is live, [`projection`](Self::projection) the projection
///   alone, [`rows`](Self::rows) the session list, [`settled`](Self::settled) waits until a
///   run stops. A read never takes a session over.
/// - **Follow**: [`updates`](Self::updates) is the stream every interface follows;
///   [`follow`](Self::follow) and [`follow_durable`](Self::follow_durable) add the backlog
///   from a revision, [`subscribe`](Self::subscribe) is the raw feed under them.
/// - **Research services' reads**: [`workflow_figure`](Self::workflow_figure),
///   [`workflow_preview`](Self::workflow_preview), [`workspace`](Self::workspace) (the
///   project's files, changes attributed to these sessions), and
///   [`startup_plan`](Self::startup_plan).
/// - **Sign-in to a subscription route**: [`start_sign_in`](Self::start_sign_in),
///   [`poll_sign_in`](Self::poll_sign_in), [`sign_in_status`](Self::sign_in_status).
/// - **Engines**: [`with_backend`](Self::with_backend) serves every session with an engine of
///   the caller's (the [`backend`](crate::backend) port); `bench_record` exists only for
///   `cargo xtask bench gateway` (feature `bench`).
///
/// ```
/// use heartwood_gateway::events::{CommandName, Lifecycle};
/// use heartwood_gateway::{ProjectContext, SessionGateway};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let folder = tempfile::tempdir()?;
/// let gateway = SessionGateway::new(ProjectContext::at(folder.path())?);
/// // An interface mints a session id and shows its (blank) snapshot before the first task.
/// let session = SessionGateway::new_session_id();
/// let snapshot = gateway.snapshot(&session, 0)?;
/// assert_eq!(snapshot.projection.lifecycle, Lifecycle::Idle);
/// assert!(snapshot.projection.allows(CommandName::SubmitTask));
/// // Looking created nothing.
/// assert!(gateway.rows(10)?.is_empty());
/// gateway.close().await;
/// # Ok(())
/// # }
/// ```
pub struct SessionGateway {
    shared: Arc<Shared>,
}

/// Which engine serves each session.
#[derive(Clone)]
enum Backends {
    /// The one each session recorded; new sessions get the project's configured engine.
    Configured,
    /// This one, for every session (an embedder's or a test's engine).
    Fixed(Arc<dyn BackendFactory>),
}

impl Backends {
    /// The engine a session created now records.
    fn for_new_session(&self, project: &ProjectContext) -> Result<&'static str, GatewayError> {
        match self {
            Backends::Fixed(factory) => Ok(factory.name()),
            Backends::Configured => Ok(ProjectConfig::load(project)?.backend.name()),
        }
    }

    /// The factory for a session that recorded engine `name`; a session is never continued
    /// by an engine other than the one whose log it reconciles with.
    fn factory(&self, name: &str) -> Result<Arc<dyn BackendFactory>, command::WorkerRefusal> {
        use command::WorkerRefusal::{OtherEngine, UnknownEngine};
        match self {
            Backends::Fixed(factory) if factory.name() == name => Ok(Arc::clone(factory)),
            Backends::Fixed(factory) => Err(OtherEngine {
                session: name.to_owned(),
                served: factory.name(),
            }),
            Backends::Configured => match BackendKind::from_name(name) {
                Some(BackendKind::Native) => Ok(Arc::new(NativeBackendFactory)),
                Some(BackendKind::OpenHands) => Ok(Arc::new(OpenHandsBackendFactory)),
                None => Err(UnknownEngine(name.to_owned())),
            },
        }
    }
}

/// What a gateway holds. Shared with the command channels of the sessions it serves (weakly:
/// a channel never keeps a gateway alive), which act through the same methods.
pub(crate) struct Shared {
    project: ProjectContext,
    store: SessionStore,
    backends: Backends,
    live: Mutex<HashMap<SessionId, Arc<Live>>>,
    stopping: Mutex<Vec<Stopping>>,
    /// Held while a session is being opened (see `attach`) or released (see `release_idle`).
    opening: Mutex<()>,
    /// The updates of each session followed in this process (see [`crate::follow`]).
    feeds: Mutex<HashMap<SessionId, crate::follow::Feed>>,
    /// Platform model transports (base URL, model) that passed their qualification request.
    qualified: Mutex<std::collections::HashSet<(String, String)>>,
    /// A ChatGPT sign-in an interface started.
    sign_in: crate::subscription::SignInDesk,
}

impl crate::channel::Served for Shared {
    fn submit(self: Arc<Self>, command: Command) -> Result<Receipt, GatewayError> {
        SessionGateway::from_shared(self).submit_blocking(command)
    }

    fn snapshot(
        self: Arc<Self>,
        session: &SessionId,
        since: u64,
    ) -> Result<Snapshot, GatewayError> {
        SessionGateway::from_shared(self).snapshot(session, since)
    }

    fn served_updates(&self, session: &SessionId) -> Option<broadcast::Receiver<Update>> {
        Shared::served_updates(self, session)
    }

    fn journal_moved(&self, session: Option<&SessionId>) {
        let feeds = self.feeds();
        match session {
            Some(session) => feeds.get(session).iter().for_each(|f| f.journal_moved()),
            None => feeds.values().for_each(crate::follow::Feed::journal_moved),
        }
    }
}

impl Shared {
    /// The followed sessions' feeds.
    pub(crate) fn feeds(&self) -> MutexGuard<'_, HashMap<SessionId, crate::follow::Feed>> {
        lock(&self.feeds)
    }

    /// The live updates of `session` if this process serves it.
    pub(crate) fn served_updates(
        &self,
        session: &SessionId,
    ) -> Option<broadcast::Receiver<Update>> {
        let live = lock(&self.live).get(session).cloned()?;
        Some(live.subscribe())
    }

    /// A connection to the process serving `session`, if one serves its channel.
    pub(crate) fn remote(&self, session: &SessionId) -> Option<crate::channel::Client> {
        // The server must be the process the lease names, when it names one yet.
        let holder = self
            .store
            .reader(session)
            .ok()
            .and_then(|r| r.writer())
            .map(|w| w.pid);
        crate::channel::Client::connect(&self.store.paths(session).channel, holder)
    }

    /// Whether sessions are kept in a store other replicas share, which announces every
    /// commit (so a follower need not poll it often).
    pub(crate) fn announces_commits(&self) -> bool {
        self.store.shared().is_some()
    }

    /// The length of `session`'s event log, if it exists.
    pub(crate) fn journal_len(&self, session: &SessionId) -> Option<u64> {
        self.store.journal_len(session)
    }
}

impl Drop for Shared {
    /// A gateway dropped without [`SessionGateway::close`] still stops its workers (at their
    /// next await point) and so releases every lease once they have: nothing keeps a session
    /// owned after its gateway is gone. Staged events are flushed as each session is dropped;
    /// a run cut off this way is recorded as interrupted by the next process that opens it.
    fn drop(&mut self) {
        let sessions: Vec<Arc<Live>> = lock(&self.live).drain().map(|(_, l)| l).collect();
        for live in sessions {
            // Nobody answers through this gateway any more: other processes are told the
            // session is owned (and retry) until the lease is free.
            live.lock().set_channel(None);
            let worker = live.lock().take_worker();
            if let Some(stopped) = worker.and_then(WorkerLink::abort) {
                // The worker reaches its session weakly; this keeps the session (and its
                // lease) until the worker has stopped writing the backend's log, so whatever
                // it wrote reaches the journal first.
                std::thread::spawn(move || {
                    let _ = stopped.blocking_recv();
                    drop(live);
                });
            }
        }
    }
}

impl std::fmt::Debug for SessionGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGateway")
            .field("project", &self.shared.project.root())
            .finish()
    }
}

impl SessionGateway {
    /// The gateway for `project`. Each active session's agent runs on a thread of its own, so
    /// the gateway needs no runtime of its caller; [`SessionGateway::close`] is async only
    /// because it waits for those threads, with any runtime.
    pub fn new(project: ProjectContext) -> Self {
        SessionGateway {
            shared: Arc::new(Shared {
                store: SessionStore::new(project.root()),
                project,
                backends: Backends::Configured,
                live: Mutex::new(HashMap::new()),
                stopping: Mutex::new(Vec::new()),
                opening: Mutex::new(()),
                feeds: Mutex::new(HashMap::new()),
                qualified: Mutex::new(std::collections::HashSet::new()),
                sign_in: Default::default(),
            }),
        }
    }

    /// Starts a ChatGPT sign-in: the code and page to show. Blocks while the service is asked.
    pub fn start_sign_in(&self) -> Result<crate::subscription::Pending, GatewayError> {
        Ok(self.shared.sign_in.start()?)
    }

    /// The sign-in in progress, if any (what to show; never its handle).
    pub(crate) fn sign_in_pending(&self) -> Option<crate::subscription::Pending> {
        self.shared.sign_in.pending()
    }

    /// Who is signed in and the sign-in in progress (reads the sign-in file: blocks).
    pub fn sign_in_status(&self) -> Result<crate::subscription::SignInStatus, GatewayError> {
        Ok(crate::subscription::SignInStatus {
            signed_in: crate::subscription::status()?,
            pending: self.sign_in_pending(),
        })
    }

    /// Polls the sign-in in progress (at most once per the service's interval; blocks while
    /// the service is asked).
    pub fn poll_sign_in(&self) -> Result<crate::subscription::Progress, GatewayError> {
        Ok(self.shared.sign_in.poll()?)
    }

    /// A handle on the same gateway, for a session's command channel.
    pub(crate) fn from_shared(shared: Arc<Shared>) -> Self {
        SessionGateway { shared }
    }

    /// The same gateway with sessions served by `backends` instead of the native engine.
    /// Sessions record the backend's name; one served by another backend before is refused
    /// rather than continued by a different engine.
    pub fn with_backend(mut self, backends: Arc<dyn BackendFactory>) -> Self {
        // Before any session is served nothing else holds the shared state.
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.backends = Backends::Fixed(backends);
        }
        self
    }

    /// The same gateway with its sessions kept in `store` (a shared PostgreSQL store lets
    /// several replicas serve the same sessions). Call before any session is served.
    pub fn with_store(mut self, store: &crate::SessionStoreChoice) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.store = store.store(shared.project.root());
        }
        // This replica runs what the others forward to it for as long as the gateway lives.
        if let Some(shared) = self.shared.store.shared() {
            let served: Arc<dyn crate::channel::Served> = self.shared.clone();
            crate::relay::serve(shared.clone(), Arc::downgrade(&served));
        }
        self
    }

    /// A fresh session id, in the one format every interface mints: the time to the second and
    /// 32 random bits (`s20261204-015300-3f9a2c01`), so ids sort by creation, stay short enough
    /// to read, and two processes do not pick the same one.
    pub fn new_session_id() -> SessionId {
        fresh_id("s")
    }

    /// A fresh command id, unique in the same way as [`SessionGateway::new_session_id`].
    pub fn new_command_id() -> heartwood_events::CommandId {
        let id = fresh_id("c");
        heartwood_events::CommandId::parse(id.as_str()).expect("a fresh id is valid")
    }

    /// The project this gateway serves.
    pub fn project(&self) -> &ProjectContext {
        &self.shared.project
    }

    /// Administration of the sessions this gateway keeps, in whichever store it keeps them
    /// (a replica on a shared store reads the store, not its working copies).
    pub(crate) fn admin(&self) -> crate::SessionAdmin {
        crate::SessionAdmin::over(&self.shared.project, self.shared.store.clone())
    }

    /// What the project needs before work starts, counting the sessions this gateway keeps.
    pub fn startup_plan(&self) -> Result<crate::startup::StartupPlan, GatewayError> {
        crate::startup::plan_over(&self.shared.project, &self.admin())
    }

    /// The project's files, with changes attributed from the sessions this gateway keeps.
    pub fn workspace(&self) -> Result<crate::workspace::WorkspaceService, GatewayError> {
        crate::workspace::WorkspaceService::with_admin(&self.shared.project, self.admin())
    }

    /// Whether the project holds session `id` on disk.
    pub fn exists(&self, id: &SessionId) -> bool {
        self.shared.store.exists(id)
    }

    /// Records that an interface handed out session id `id`, so every replica sharing this
    /// gateway's store serves it (nothing to do for sessions kept in files).
    pub fn record_issued(&self, id: &SessionId) -> Result<(), GatewayError> {
        Ok(self.shared.store.record_issued(id)?)
    }

    /// [`SessionGateway::exists`], failing when the shared store cannot be reached (so an
    /// interface answers "unavailable", not "no such session").
    pub fn exists_checked(&self, id: &SessionId) -> Result<bool, GatewayError> {
        Ok(self.shared.store.exists_checked(id)?)
    }

    /// Whether another replica sharing this gateway's store handed out session id `id`.
    pub fn was_issued(&self, id: &SessionId) -> bool {
        self.shared.store.was_issued(id)
    }

    /// Whether this process serves `session` (holds its lease and runs its agent here), so
    /// closing this gateway would pause a run of it that is going.
    pub fn serves_here(&self, session: &SessionId) -> bool {
        lock(&self.shared.live).contains_key(session)
    }

    /// The project's sessions, most recently active first.
    pub(crate) fn sessions(&self) -> Result<Vec<SessionSummary>, GatewayError> {
        Ok(self.shared.store.list()?)
    }

    /// Makes sure the session is served somewhere, serving it here (taking its lease, and
    /// reconciling it with its engine) if nobody does, so the state a caller reads next is
    /// where the agent really stands. A session that does not exist yet is fine.
    ///
    /// This is how a run whose process ended is taken over ("resume"): reads never do it (a
    /// snapshot shows such a run stopped, saying so), so an interface calls this, or submits
    /// a command, when the researcher acts. Serving it completes an append a crash
    /// interrupted, and its engine carries the run on or records where it stopped.
    pub fn serve(&self, session: &SessionId) -> Result<(), GatewayError> {
        if !self.shared.store.exists(session) {
            return Ok(());
        }
        match self.attach(session, false) {
            Ok(_) => Ok(()),
            Err(e) if e.is_owned_elsewhere() && self.remote(session).is_some() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Lets go of every session this process serves that has sat idle (settled, nothing
    /// staged) for at least `grace`: its agent worker, its command channel and its writer
    /// lease, so the next process to act takes it directly. Subscribers here keep following it
    /// (see `follow.rs`); the next command here serves it again. Long-running
    /// interfaces (the terminal interface, `heartwood serve`) call this now and then; returns
    /// how many sessions were released.
    pub async fn release_idle(&self, grace: Duration) -> usize {
        // Releasing flushes and closes journals (fsync): off the caller's async thread.
        let shared = Arc::clone(&self.shared);
        let (done, released) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("heartwood-release".into())
            .spawn(move || {
                let _ = done.send(SessionGateway::from_shared(shared).release_idle_now(grace));
            });
        if spawned.is_err() {
            return 0;
        }
        let Ok((released, stopping)) = released.await else {
            return 0;
        };
        for worker in stopping {
            worker.finish(CLOSE_GRACE).await;
        }
        released
    }

    /// The blocking half of [`Self::release_idle`]: the sessions released, and their workers
    /// on their way out.
    fn release_idle_now(&self, grace: Duration) -> (usize, Vec<Stopping>) {
        let mut stopping = Vec::new();
        let mut released = 0;
        // No session is opened meanwhile, so none is released half-way through its open.
        let _opening = lock(&self.shared.opening);
        let served: Vec<(SessionId, Arc<Live>)> = lock(&self.shared.live)
            .iter()
            .map(|(id, live)| (id.clone(), Arc::clone(live)))
            .collect();
        for (id, live) in served {
            if !live.lock().idle_for(grace) {
                continue;
            }
            // Out of the map first: a command that finds it later serves it afresh.
            lock(&self.shared.live).remove(&id);
            let mut core = live.lock();
            if !core.idle_for(grace) {
                drop(core);
                lock(&self.shared.live).insert(id, live);
                continue;
            }
            if let Some(worker) = core.take_worker() {
                stopping.push(worker.shut_down());
            }
            core.release();
            released += 1;
        }
        (released, stopping)
    }

    /// Stops every worker and releases every session's lease. A running agent is paused at
    /// its next step; one still busy after `CLOSE_GRACE` is cancelled and its run recorded
    /// as interrupted. Writers are released only after their workers have stopped, so nothing
    /// a worker does goes unrecorded.
    pub async fn close(&self) {
        let sessions: Vec<Arc<Live>> = lock(&self.shared.live).drain().map(|(_, l)| l).collect();
        let stopping = std::mem::take(&mut *lock(&self.shared.stopping));
        for stopping in stopping {
            stopping.finish(CLOSE_GRACE).await;
        }
        for live in sessions {
            let worker = live.lock().take_worker();
            if let Some(worker) = worker
                && worker.shut_down().finish(CLOSE_GRACE).await
            {
                let reason = "the Heartwood process serving this session closed while the agent \
                              was working; the run was stopped there. Give the task again, or \
                              continue with a new one"
                    .to_owned();
                live.lock().interrupted(reason);
            }
            live.lock().release();
        }
    }

    /// Stops the session's agent now, at its next await point (a model call, a tool's output),
    /// and records the run as interrupted with `reason`. Nothing already started runs again.
    pub async fn stop_now(&self, session: &SessionId, reason: &str) -> Result<(), GatewayError> {
        let Some(live) = lock(&self.shared.live).get(session).cloned() else {
            return Ok(());
        };
        let worker = live.lock().take_worker();
        if let Some(worker) = worker {
            worker.shut_down().cancel().await;
        }
        live.lock().interrupted(reason.to_owned());
        Ok(())
    }

    /// Benchmark hook: records events on a session exactly as the agent worker does (append,
    /// reduce, publish), registering the session if needed. Only with the `bench` feature:
    /// interfaces reach sessions through [`SessionGateway::submit`] alone.
    #[cfg(feature = "bench")]
    #[doc(hidden)]
    pub fn bench_record(
        &self,
        session: &SessionId,
        events: Vec<Event>,
    ) -> Result<(), GatewayError> {
        self.attach(session, true)?.lock().record(events)
    }

    /// A connection to the process serving `session`, if one serves its channel.
    fn remote(&self, session: &SessionId) -> Option<crate::channel::Client> {
        self.shared.remote(session)
    }

    /// The live session, opening it (and taking its lease) if this process does not serve it.
    ///
    /// The map of live sessions is never held while a session is opened (verified, replayed,
    /// reconciled): other sessions' snapshots and commands go on meanwhile. Opens are taken one
    /// at a time, so two callers never open the same session twice.
    fn attach(&self, session: &SessionId, register: bool) -> Result<Arc<Live>, GatewayError> {
        let served = lock(&self.shared.live).get(session).cloned();
        if let Some(found) = served {
            return Ok(found);
        }
        let _opening = lock(&self.shared.opening);
        let served = lock(&self.shared.live).get(session).cloned();
        if let Some(found) = served {
            return Ok(found);
        }
        let (writer, _recovery) = if register {
            // The first session may be what creates `.heartwood/`: with its ignore file.
            self.shared.project.prepare_state_dir()?;
            self.shared.store.create_or_open_writer(
                session,
                self.shared.backends.for_new_session(&self.shared.project)?,
            )?
        } else {
            self.shared.store.open_writer(session)?
        };
        let events = decoded(self.shared.store.reader(session)?.events()?)?;
        let channel_path = writer.paths().channel.clone();
        let opened = Live::new(writer, events, self.shared.project.root());
        crate::follow::hand_over(&self.shared, session, &opened);
        let served: Arc<dyn crate::channel::Served> = self.shared.clone();
        opened.lock().set_channel(crate::channel::serve(
            &channel_path,
            Arc::downgrade(&served),
            session.clone(),
        ));
        // The journal says a run was on, or that a set was about to be published, but nobody
        // served it: the process that ran it stopped. The worker's reconciliation finds out
        // what the engine last did, and publishes the set the engine waits on. What the worker
        // needs is read before the lock.
        let unsettled = !opened.lock().projection().is_settled();
        if unsettled {
            let kit = self.worker_kit(&opened, None);
            let mut core = opened.lock();
            if let Err(reason) = self.ensure_worker(&opened, &mut core, kit) {
                let reason = format!(
                    "the run stopped when the Heartwood process serving it ended, and it cannot \
                     continue here: {reason}"
                );
                core.record(vec![Event::RunInterrupted { reason }])?;
            }
        }
        // A review that settled while no process served it (or whose assessment a stop cut
        // short) is assessed now from the evidence it retained, with no model call.
        let due = {
            let core = opened.lock();
            crate::review_evidence::due(core.projection()).zip(core.projection().workflow.clone())
        };
        if let Some(((review, proposals), workflow)) = due {
            let assessed =
                crate::review_evidence::assess(&self.shared.project, &workflow, &review, proposals);
            opened
                .lock()
                .record(vec![Event::WorkflowReviewAssessed(Box::new(assessed))])?;
        }
        lock(&self.shared.live).insert(session.clone(), Arc::clone(&opened));
        Ok(opened)
    }
}

fn fresh_id(prefix: &str) -> SessionId {
    let mut random = [0u8; 4];
    if getrandom::fill(&mut random).is_err() {
        // No entropy source: this process and a counter still keep ids apart.
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        random = (std::process::id().rotate_left(16) ^ n).to_be_bytes();
    }
    let time = heartwood_events::Timestamp::now().digits();
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let id = format!(
        "{prefix}{}-{}-{hex}",
        &time[..8.min(time.len())],
        &time[8.min(time.len())..14.min(time.len())],
    );
    SessionId::parse(&id).expect("digits, letters and '-' form a valid id")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// A session served here, with one event.
    fn served(gateway: &SessionGateway, name: &str) -> (SessionId, Arc<Live>) {
        let id = SessionId::parse(name).expect("id");
        let live = gateway.attach(&id, true).expect("attach");
        live.lock()
            .record(vec![Event::PauseRequested {}])
            .expect("record");
        (id, live)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_session_whose_lock_is_held_does_not_stall_another_sessions_reads() {
        let project = tempfile::tempdir().expect("tempdir");
        let gateway = Arc::new(SessionGateway::new(
            ProjectContext::at(project.path()).expect("a UTF-8 project path"),
        ));
        let (_, slow) = served(&gateway, "slow");
        let (other, other_live) = served(&gateway, "other");
        let revision = other_live.lock().projection().revision;
        let (stored, stored_live) = served(&gateway, "stored");
        drop(stored_live);
        // "stored" becomes a session on disk that this gateway does not serve.
        if let Some(live) = lock(&gateway.shared.live).remove(&stored) {
            live.lock().release();
        }

        let held = slow.lock();
        let (done, answers) = mpsc::channel();
        let reader = Arc::clone(&gateway);
        std::thread::spawn(move || {
            let served = reader.snapshot(&other, 0).map(|s| s.revision);
            let on_disk = reader.snapshot(&stored, 0).map(|s| s.revision);
            let listed = reader.rows(10).map(|rows| rows.len());
            let _ = done.send((served, on_disk, listed));
        });
        // A generous bound that only a deadlock exceeds; the reads take milliseconds.
        let (served, on_disk, listed) = answers
            .recv_timeout(Duration::from_secs(20))
            .expect("another session's reads waited on the held lock");
        drop(held);
        assert!(revision > 0);
        assert_eq!(served.expect("served snapshot"), revision);
        assert_eq!(on_disk.expect("stored snapshot"), revision);
        assert_eq!(listed.expect("rows"), 3);
    }
}
