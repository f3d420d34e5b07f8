//! OpenHands' agent server (`heartwood-openhands`) behind the [`AgentBackend`] port.
//!
//! The engine's log is the server's conversation store under the session's `backend/`
//! (`conversations/<id>/events/`), read from disk: reconciling a session with it, and showing a
//! set it waits on, need no running server. Each stored event becomes the native engine's
//! event kind it stands for, and the native [`Translator`] turns those into Heartwood events,
//! so both engines reach the journal through one translation. Entries are numbered by their
//! place in the server's log and identified by the SHA-256 of their stored bytes.
//!
//! The server itself starts on the first command that needs it (a task, a decision, a run),
//! one per session, and stops with the session. What the researcher asks for while no server
//! runs (a message, a decision) is applied when the next run starts it; until then the log does
//! not hold it, which is what reconciliation expects of a message not yet delivered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use heartwood_events::ActionPolicy;
use heartwood_openhands::server::{SPECIALISTS_VAR, SpecialistRole, specialists_json};
use heartwood_openhands::{
    AgentServer, Client, Confinement, ConversationSpec, ConversationStore, ExecutionStatus,
    Installation, OpenHandsError, Rendezvous,
};
use heartwood_sandbox::{Allowed, Sandbox, SandboxLevel};

use crate::GatewayError;
use crate::backend::{
    AgentBackend, BackendControls, BackendEntry, BackendError, BackendFactory, BackendFuture,
    BackendSink, BackendSpec, PendingActions, RunStop,
};
use crate::error::BackendFailure;
use crate::translate::proposal_of;

mod confine;
mod log;
mod relay;

use log::{CUT_OFF, Log};

pub use heartwood_openhands::server::processes_of;

pub use heartwood_project::config::OPENHANDS_BACKEND;

/// The most agent steps one run may take.
const MAX_ITERATIONS: u32 = 500;

/// How often a run asks the server where it is.
const POLL: Duration = Duration::from_millis(100);

/// How long the store may lag behind the status the server reported.
const STORE_CATCH_UP: Duration = Duration::from_secs(10);

/// How long a failed request waits to see whether the server is dying (see
/// `server_exits_within`).
const DEATH_SEEN_WITHIN: Duration = Duration::from_secs(2);

/// Opens OpenHands conversations.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenHandsBackendFactory;

impl BackendFactory for OpenHandsBackendFactory {
    fn name(&self) -> &'static str {
        OPENHANDS_BACKEND
    }

    fn open(&self, spec: BackendSpec) -> Result<Box<dyn AgentBackend>, BackendError> {
        let installation = Installation::find().map_err(oh_error)?;
        let store = ConversationStore::new(spec.state_dir.join("conversations").as_std_path());
        let conversation = store.conversation().map_err(oh_error)?;
        let mut log = Log::for_project(spec.project.clone());
        let restored = match &conversation {
            Some(id) => log.read(&store, id).map_err(oh_error)?,
            None => Vec::new(),
        };
        Ok(Box::new(OpenHandsBackend {
            restored_upto: log.read_upto,
            untaken: restored,
            policy: spec.policy,
            spec,
            installation,
            store,
            conversation,
            server: None,
            relay: None,
            log,
            controls: Arc::new(Controls::default()),
            sink: None,
            queued_messages: Vec::new(),
            queued_decision: None,
            policy_sent: None,
            reports_before_server: 0,
        }))
    }
}

/// A decision taken while no server ran, applied when the next run starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Queued {
    Allow,
    Reject(String),
}

struct OpenHandsBackend {
    spec: BackendSpec,
    installation: Installation,
    store: ConversationStore,
    /// The conversation's id (its directory's name), once one was started.
    conversation: Option<String>,
    server: Option<(AgentServer, Client)>,
    /// The relay the server reaches the model through; one per server, since the server is
    /// told its port.
    relay: Option<relay::ModelRelay>,
    log: Log,
    /// Entries read from the log and not yet taken or given to the sink.
    untaken: Vec<BackendEntry>,
    restored_upto: u64,
    controls: Arc<Controls>,
    sink: Option<Arc<dyn BackendSink>>,
    queued_messages: Vec<String>,
    queued_decision: Option<Queued>,
    policy: ActionPolicy,
    policy_sent: Option<ActionPolicy>,
    /// The usage reports the log held when the running server started: the server writes one
    /// report per completion its relay answers, after it, so a run has been read whole when
    /// the log holds this many more reports than the relay answered completions.
    reports_before_server: u64,
}

/// Requests from outside the worker, acted on by the run in progress at its next poll.
#[derive(Default)]
struct Controls {
    pause: AtomicBool,
    interrupt: AtomicBool,
    guidance: Mutex<Vec<String>>,
}

impl Controls {
    fn take_guidance(&self) -> Vec<String> {
        std::mem::take(&mut *self.guidance.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl BackendControls for Controls {
    fn pause(&self) {
        self.pause.store(true, Ordering::SeqCst);
    }

    /// OpenHands pauses between steps, after the model call in flight: the nearest it has.
    fn pause_before_model(&self) {
        self.pause();
    }

    fn withdraw_pause(&self) {
        self.pause.store(false, Ordering::SeqCst);
        self.interrupt.store(false, Ordering::SeqCst);
    }

    fn interrupt(&self) {
        self.interrupt.store(true, Ordering::SeqCst);
    }

    fn guide(&self, text: &str) {
        self.guidance
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(text.to_owned());
    }
}

impl OpenHandsBackend {
    /// Reads what the log gained, for the sink or the next [`AgentBackend::take_entries`].
    fn refresh(&mut self) -> Result<Vec<BackendEntry>, BackendError> {
        let mut entries = std::mem::take(&mut self.untaken);
        if let Some(id) = &self.conversation {
            entries.extend(self.log.read(&self.store, id).map_err(oh_error)?);
        }
        Ok(entries)
    }

    /// Gives what the log gained to the sink, and marks it durable (the server wrote each event
    /// file before this read it).
    fn deliver(&mut self) -> Result<(), BackendError> {
        let entries = self.refresh()?;
        match &self.sink {
            Some(sink) if !entries.is_empty() => {
                for entry in entries {
                    sink.entry(entry);
                }
                // The server wrote each event file itself; a journal that failed has paused
                // the run already.
                let _ = sink.durable(None);
            }
            Some(_) => {}
            None => self.untaken = entries,
        }
        Ok(())
    }

    /// The running server and its client, started (again, after a crash) if needed. A server
    /// that died between runs cut nothing off, so the run goes on with a new one rather than
    /// failing on the old one's closed socket.
    async fn server(&mut self) -> Result<Client, BackendError> {
        if let Some((server, client)) = &mut self.server
            && server.is_running()
        {
            let client = client.clone();
            if client.answers().await || !self.server_exits_within(DEATH_SEEN_WITHIN).await {
                return Ok(client);
            }
        }
        self.server = None;
        let state_dir = self.spec.state_dir.as_std_path();
        let rendezvous = Rendezvous::prepare(state_dir).map_err(oh_error)?;
        // The route's key stays in this process, where the relay's model client reads it (a
        // key that is not set refused the command before the worker started).
        let relay = self.start_relay(&rendezvous).await?;
        // The model library reads its key from its conventional variable: the relay's own key,
        // by environment only, never written to the conversation's settings.
        let key = relay.key().to_owned();
        self.relay = Some(relay);
        // The server gets the tools' allowlisted environment (never the route's own variable)
        // and the key under the model library's name, as a secret its terminal tool never
        // sees.
        let mut env = self
            .spec
            .tool_env
            .clone()
            .hiding(self.spec.route.api_key_env.iter().cloned())
            .vars();
        // The `task` tool's sub-agents: the catalog's specialists, and only those.
        env.push((
            SPECIALISTS_VAR.into(),
            specialists_json(&self.specialists()).into(),
        ));
        let server = AgentServer::start(
            &self.installation,
            state_dir,
            &rendezvous,
            self.confinement(),
            &env,
            &[("OPENAI_API_KEY".to_owned(), key)],
        )
        .await
        .map_err(oh_error)?;
        let client = Client::new(&server).map_err(oh_error)?;
        self.server = Some((server, client.clone()));
        // Everything an earlier server wrote is read before this one's first completion.
        self.deliver()?;
        self.reports_before_server = self.log.usage_reports;
        // A restarted server has the conversation's policy from its store, not from us.
        self.policy_sent = None;
        // And its model as it was created: at the relay of the server before, which is gone.
        if let Some(id) = &self.conversation {
            client
                .switch_llm(id, &self.conversation_spec())
                .await
                .map_err(oh_error)?;
        }
        Ok(client)
    }

    /// The relay the server reaches the route through, started afresh with each server.
    async fn start_relay(
        &self,
        rendezvous: &Rendezvous,
    ) -> Result<relay::ModelRelay, BackendError> {
        let route = self.spec.route.model_route(self.spec.project.as_std_path());
        let recordings = self.spec.state_dir.as_std_path();
        relay::ModelRelay::start(route, recordings, self.spec.project.as_str(), rendezvous).await
    }

    /// Where the server runs: in the project's sandbox, with the data mounts the native
    /// engine's tools reach, at the level a person's allowance gives (every set waits for
    /// one), so its terminal and file editor are held as the native engine's are.
    fn confinement(&self) -> Confinement {
        let sandbox = Sandbox::new(self.spec.project.as_std_path()).reaching(
            self.spec
                .data_mounts
                .iter()
                .map(|m| (m.path.clone(), m.writable)),
        );
        Confinement {
            sandbox,
            level: server_level(),
        }
    }

    /// What the conversation is told about its model, tools and policy.
    fn conversation_spec(&self) -> ConversationSpec {
        // Before the server's first start there is no relay yet; nothing is started then.
        let base_url = self.relay.as_ref().map(|r| r.base_url().to_owned());
        ConversationSpec {
            model: format!("openai/{}", relay::RELAYED_MODEL),
            base_url,
            working_dir: self.spec.project.to_string(),
            // The risk rules that let a reader run unreviewed belong to the native engine's
            // terminal (each command in its own read-only sandbox); OpenHands' server holds one
            // sandbox for the conversation, at a person's level, so every set waits for one.
            confirm_every_action: true,
            max_iterations: MAX_ITERATIONS,
            // Skills as of the conversation's creation: OpenHands keeps its agent's
            // configuration with the conversation.
            system_suffix: Some(self.spec.skills.prompt_section()),
            // Micro-dollars per million tokens, as dollars per token.
            cost_per_token: self.spec.route.prices.map(|p| {
                (
                    p.input_micros_per_mtok as f64 / 1e12,
                    p.output_micros_per_mtok as f64 / 1e12,
                )
            }),
            // A workflow stage's turn reports its outcome through `finish`, as on the native
            // engine; the stage's checks still judge the files themselves.
            finish_outcome: self.spec.finish_outcome.clone(),
            task_tool: !self.specialists().is_empty(),
        }
    }

    /// The specialists a `task` call may start, as the native engine offers them: the
    /// registered roles whose skills are all active and verified, with those skills in their
    /// instructions. They answer in text (a review's structured proposals are the native
    /// engine's only).
    fn specialists(&self) -> Vec<SpecialistRole> {
        self.spec
            .specialists
            .iter()
            .filter_map(|s| Some((s, self.spec.skills.injected(&s.skills).ok()?)))
            .map(|(s, skills)| SpecialistRole {
                role: s.role.clone(),
                description: s.description.clone(),
                system_prompt: format!("{}{skills}", s.system_prompt),
                max_iterations: s.max_iterations,
            })
            .collect()
    }

    /// The conversation's id, starting the conversation on the first run.
    async fn conversation(&mut self, client: &Client) -> Result<String, BackendError> {
        if let Some(id) = &self.conversation {
            return Ok(id.clone());
        }
        let info = client
            .start_conversation(&self.conversation_spec())
            .await
            .map_err(oh_error)?;
        self.policy_sent = Some(self.policy);
        // Only a conversation created with the route's prices reports costs that are known; one
        // restored from an earlier run keeps whatever it was created with, so it stays unpriced.
        self.log.priced = self.spec.route.prices.is_some();
        let id = info.id.replace('-', "");
        self.conversation = Some(id.clone());
        Ok(id)
    }

    /// Runs; a failure because the server died says so (and the next run starts another).
    async fn run_once(&mut self) -> Result<RunStop, BackendError> {
        let outcome = self.run_inner().await;
        if outcome.is_err() && self.server_exits_within(DEATH_SEEN_WITHIN).await {
            return Err(self.server_died());
        }
        outcome
    }

    /// Whether the server has exited, or does within `grace`: a killed server's connections
    /// close while it is torn down, a moment before its exit can be collected, so a failed
    /// request is given that moment before it is taken for anything else.
    async fn server_exits_within(&mut self, grace: Duration) -> bool {
        let started = Instant::now();
        loop {
            let Some((server, _)) = self.server.as_mut() else {
                return false;
            };
            if !server.is_running() {
                return true;
            }
            if started.elapsed() >= grace {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Forgets a server that died, and says so.
    fn server_died(&mut self) -> BackendError {
        self.server = None;
        let log = self.spec.state_dir.join("agent-server.log");
        BackendError::ServerStopped {
            log: log.to_string(),
        }
    }

    async fn run_inner(&mut self) -> Result<RunStop, BackendError> {
        let client = self.server().await?;
        let id = self.conversation(&client).await?;
        // A server that stopped mid-action leaves it without a result, and a new server would
        // run it again when the conversation resumes: it is resolved first, never rerun.
        if self.log.cut_off() {
            client
                .respond(&id, false, Some(CUT_OFF))
                .await
                .map_err(oh_error)?;
            self.deliver()?;
        }
        let mut before = client.info(&id).await.map_err(oh_error)?.leaf_event_id;
        if self.policy_sent != Some(self.policy) {
            client.set_confirmation(&id, true).await.map_err(oh_error)?;
            self.policy_sent = Some(self.policy);
        }
        self.deliver()?;
        let decision = match self.queued_decision.take() {
            // The researcher's allow covers what the review showed; an edit outside the
            // project is refused before OpenHands is told to confirm anything.
            Some(Queued::Allow) => Some(
                confine::refusal(&self.spec.project, &self.log.waiting())
                    .await
                    .map_or(Queued::Allow, Queued::Reject),
            ),
            other => other,
        };
        match &decision {
            Some(Queued::Allow) => client.respond(&id, true, None).await,
            Some(Queued::Reject(reason)) => client.respond(&id, false, Some(reason)).await,
            None => Ok(()),
        }
        .map_err(oh_error)?;
        let mut messages = std::mem::take(&mut self.queued_messages);
        messages.extend(self.controls.take_guidance());
        for text in &messages {
            client
                .send_message(&id, text, false)
                .await
                .map_err(oh_error)?;
        }
        // OpenHands takes a run request on a conversation waiting for confirmation as its
        // confirmation. Actions can come to wait without a decision being asked for (a pause
        // lands while the model call that proposes them is in flight): those are shown for
        // review, never run by a resume.
        if decision.is_none() && !self.log.waiting().is_empty() {
            self.catch_up(ExecutionStatus::WaitingForConfirmation)
                .await?;
            return Ok(RunStop::WaitingForDecision);
        }
        // An allowed set runs at once; anything else needs the loop started.
        if decision != Some(Queued::Allow) {
            client.run(&id).await.map_err(oh_error)?;
        }
        loop {
            if self.controls.interrupt.swap(false, Ordering::SeqCst) {
                self.controls.pause.store(false, Ordering::SeqCst);
                // The interrupt cancels the running tool; the server then waits up to 5 s for
                // the cancelled run to wind down, during which, under load, the agent can reach
                // its next model call. So the pause is sent at once beside it (a moment later,
                // so the cancellation is first): it waits for the step to end and stops the
                // agent before it asks the model again (a no-op once paused).
                let pause_soon = async {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    client.pause(&id).await
                };
                let (interrupted, paused) = tokio::join!(client.interrupt(&id), pause_soon);
                interrupted.map_err(oh_error)?;
                paused.map_err(oh_error)?;
            } else if self.controls.pause.swap(false, Ordering::SeqCst) {
                client.pause(&id).await.map_err(oh_error)?;
            }
            for text in self.controls.take_guidance() {
                client
                    .send_message(&id, &text, false)
                    .await
                    .map_err(oh_error)?;
            }
            self.deliver()?;
            let alive = self
                .server
                .as_mut()
                .is_some_and(|(server, _)| server.is_running());
            if !alive {
                return Err(self.server_died());
            }
            let info = client.info(&id).await.map_err(oh_error)?;
            let status = info.execution_status;
            if status.is_stopped() && info.leaf_event_id != before {
                // Guidance that arrived as the agent finished continues the run with it.
                let late = self.controls.take_guidance();
                if status == ExecutionStatus::Finished && !late.is_empty() {
                    for text in &late {
                        client
                            .send_message(&id, text, true)
                            .await
                            .map_err(oh_error)?;
                    }
                    before = info.leaf_event_id;
                    continue;
                }
                self.catch_up(status).await?;
                return Ok(match status {
                    ExecutionStatus::WaitingForConfirmation => RunStop::WaitingForDecision,
                    ExecutionStatus::Paused => RunStop::Paused,
                    ExecutionStatus::Error | ExecutionStatus::Stuck => RunStop::Stopped,
                    _ => RunStop::Finished,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Reads the log until it records the status the server reported (it writes the event as
    /// it changes the status; the two are not one step) and the usage of every completion the
    /// relay answered: the server writes a completion's usage report from another thread, as
    /// late as after the run has stopped, and a run that returned without it left that call
    /// out of the journal and the budgets.
    async fn catch_up(&mut self, status: ExecutionStatus) -> Result<(), BackendError> {
        let started = Instant::now();
        loop {
            self.deliver()?;
            let answered = self.relay.as_ref().map_or(0, relay::ModelRelay::served);
            let reported = self
                .log
                .usage_reports
                .saturating_sub(self.reports_before_server);
            let read_whole = self.log.status == Some(status) && reported >= answered;
            if read_whole || started.elapsed() > STORE_CATCH_UP {
                return Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl AgentBackend for OpenHandsBackend {
    fn received_inputs(&self) -> Vec<String> {
        self.log.inputs.clone()
    }

    fn restored_upto(&self) -> u64 {
        self.restored_upto
    }

    fn entry_digest(&self, id: u64) -> Option<String> {
        let index = usize::try_from(id.checked_sub(1)?).ok()?;
        self.log.digests.get(index).cloned()
    }

    fn take_entries(&mut self) -> Vec<BackendEntry> {
        // A store that cannot be read now is read again at the next run, which reports it.
        self.refresh().unwrap_or_default()
    }

    fn is_running(&self) -> bool {
        self.server.is_some() && self.log.status == Some(ExecutionStatus::Running)
    }

    fn pending(&self) -> Option<PendingActions> {
        if self.queued_decision.is_some() {
            return None;
        }
        let waiting = self.log.waiting();
        if waiting.is_empty() {
            return None;
        }
        Some(PendingActions {
            action_ids: waiting.iter().map(|a| a.id).collect(),
            members: waiting.into_iter().filter_map(proposal_of).collect(),
        })
    }

    fn attach(&mut self, sink: Arc<dyn BackendSink>) {
        self.sink = Some(sink);
    }

    fn controls(&self) -> Arc<dyn BackendControls> {
        self.controls.clone()
    }

    fn set_policy(&mut self, policy: ActionPolicy) {
        self.policy = policy;
    }

    fn send_message(&mut self, text: &str) -> Result<(), BackendError> {
        self.queued_messages.push(text.to_owned());
        Ok(())
    }

    fn approve_pending(&mut self) -> Result<(), BackendError> {
        self.queued_decision = Some(Queued::Allow);
        Ok(())
    }

    fn reject_pending(&mut self, reason: &str) -> Result<(), BackendError> {
        self.queued_decision = Some(Queued::Reject(reason.to_owned()));
        Ok(())
    }

    fn run(&mut self) -> BackendFuture<'_, Result<RunStop, BackendError>> {
        Box::pin(self.run_once())
    }

    fn close(self: Box<Self>) -> BackendFuture<'static, ()> {
        Box::pin(async move {
            if let Some((server, _)) = self.server {
                server.stop().await;
            }
        })
    }

    fn log_location(&self) -> String {
        match &self.conversation {
            Some(id) => self.store.events_dir(id).display().to_string(),
            None => self.store.root().display().to_string(),
        }
    }
}

/// The level OpenHands' server, and so its terminal and file editor, runs at: a person's
/// allowance (project-write where the machine confines, unsandboxed where it cannot).
pub(crate) fn server_level() -> SandboxLevel {
    heartwood_sandbox::level_for(false, Allowed::ByPerson)
}

fn oh_error(error: OpenHandsError) -> BackendError {
    BackendError::engine(error)
}

/// Where OpenHands is installed for this user, or why it cannot be used (with what to run).
pub fn installation() -> Result<std::path::PathBuf, GatewayError> {
    Installation::find()
        .map(|found| found.venv().to_path_buf())
        .map_err(|e| GatewayError::Backend(e.into()))
}

/// Installs the pinned OpenHands agent server into this user's cache (or
/// `HEARTWOOD_OPENHANDS_VENV`) with `python`, or the first Python 3.12+ on `PATH`; pip's
/// progress goes to this process's output. Returns where it is.
pub fn install(python: Option<std::path::PathBuf>) -> Result<std::path::PathBuf, GatewayError> {
    let python = python
        .or_else(Installation::find_python)
        .ok_or(GatewayError::Backend(BackendFailure::NoPython))?;
    Installation::install(&Installation::default_location(), &python)
        .map(|done| done.venv().to_path_buf())
        .map_err(|e| GatewayError::Backend(e.into()))
}
