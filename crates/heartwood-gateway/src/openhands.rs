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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use heartwood_agent::conversation::{AgentEvent, EventKind, ExecutionStatus, Speaker};
use heartwood_agent::model::Usage;
use heartwood_agent::tools::{Observation, ToolCallRequest, risk};
use heartwood_events::{ActionPolicy, Origin};
use heartwood_openhands::events::Event as OhEvent;
use heartwood_openhands::{
    AgentServer, Client, ConversationSpec, ConversationStore, ExecutionStatus as OhStatus,
    Installation, OpenHandsError, StoredEvent,
};

use crate::GatewayError;
use crate::backend::{
    AgentBackend, BackendControls, BackendEntry, BackendError, BackendFactory, BackendFuture,
    BackendSink, BackendSpec, PendingActions, RunStop,
};
use crate::translate::{Translator, proposal_of};

pub use heartwood_openhands::server::processes_of;

/// The backend name recorded for sessions OpenHands serves.
pub const OPENHANDS_BACKEND: &str = "openhands";

/// The most agent steps one run may take.
const MAX_ITERATIONS: u32 = 500;

/// How often a run asks the server where it is.
const POLL: Duration = Duration::from_millis(100);

/// How long the store may lag behind the status the server reported.
const STORE_CATCH_UP: Duration = Duration::from_secs(10);

/// Opens OpenHands conversations.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenHandsBackendFactory;

impl BackendFactory for OpenHandsBackendFactory {
    fn name(&self) -> &'static str {
        OPENHANDS_BACKEND
    }

    fn open(&self, spec: BackendSpec) -> Result<Box<dyn AgentBackend>, BackendError> {
        if spec.finish_outcome.is_some() {
            return Err(BackendError(
                "workflow stages run on the native engine: OpenHands' finish tool carries no \
                 structured outcome for the stage's checks. Start the workflow in a project \
                 whose backend is `native` (`heartwood model connect … --backend native`)"
                    .into(),
            ));
        }
        if spec.route.recording.is_some() {
            return Err(BackendError(
                "a replay route serves recorded exchanges of the native engine; OpenHands \
                 cannot replay them. Connect a live model route for this project"
                    .into(),
            ));
        }
        let installation = Installation::find().map_err(oh_error)?;
        let store = ConversationStore::new(spec.state_dir.join("conversations").as_std_path());
        let conversation = store.conversation().map_err(oh_error)?;
        let mut log = Log {
            project: spec.project.clone(),
            ..Log::default()
        };
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
            log,
            controls: Arc::new(Controls::default()),
            sink: None,
            queued_messages: Vec::new(),
            queued_decision: None,
            policy_sent: None,
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
}

/// An action proposed and not yet resolved.
struct OpenAction {
    event: AgentEvent,
    /// Allowed to run (by the researcher or the policy): the log shows the run going on after
    /// it was proposed, without waiting on it since.
    allowed: bool,
}

/// Why an action allowed to run, and cut off before it reported (the researcher stopped it, or
/// the server stopped), is resolved without running it again.
const CUT_OFF: &str = "cut off before it reported (stopped by the researcher, or the agent \
                       server stopped); Heartwood resolved it without running it again";

/// What has been read of the server's log, and what later entries need of earlier ones.
#[derive(Default)]
struct Log {
    /// The project the agent works in (file edits are recorded relative to it).
    project: camino::Utf8PathBuf,
    /// The last index read.
    read_upto: u64,
    /// The SHA-256 of each entry read, by index - 1.
    digests: Vec<String>,
    /// The researcher's messages, in order.
    inputs: Vec<String>,
    /// The last execution status the log recorded.
    status: Option<OhStatus>,
    /// Actions proposed and not yet resolved, in order.
    open: Vec<OpenAction>,
    /// Each tool call's action index.
    calls: HashMap<String, u64>,
    /// Usage accumulated so far, by usage id.
    usage: HashMap<String, Usage>,
    translator: Translator,
}

impl Log {
    /// Reads and translates the entries after the last one read.
    fn read(
        &mut self,
        store: &ConversationStore,
        id: &str,
    ) -> Result<Vec<BackendEntry>, OpenHandsError> {
        let stored = store.read_from(id, self.read_upto + 1)?;
        Ok(stored.into_iter().map(|e| self.take(e)).collect())
    }

    fn take(&mut self, stored: StoredEvent) -> BackendEntry {
        self.read_upto = stored.index;
        self.digests.push(stored.sha256.clone());
        let events = self
            .kinds(stored.index, stored.event)
            .into_iter()
            .flat_map(|kind| {
                let event = AgentEvent {
                    id: stored.index,
                    kind,
                };
                self.translator.translate(&event)
            })
            .collect();
        BackendEntry {
            origin: Origin {
                event: stored.index,
                sha256: stored.sha256,
            },
            events,
        }
    }

    /// The native engine's event kinds one OpenHands event stands for.
    fn kinds(&mut self, index: u64, event: OhEvent) -> Vec<EventKind> {
        match event {
            OhEvent::Message { source, text, .. } => {
                let speaker = if source == "user" {
                    self.inputs.push(text.clone());
                    Speaker::User
                } else {
                    Speaker::Agent
                };
                vec![EventKind::Message { speaker, text }]
            }
            OhEvent::Action(action) => {
                let arguments = action.arguments();
                let kind = EventKind::Action {
                    response_id: action.llm_response_id.clone(),
                    tool_call_id: action.tool_call_id.clone(),
                    // Rated by Heartwood's own rules, as the native engine's actions are, not
                    // by the model's prediction.
                    risk: ToolCallRequest::parse(&action.tool_name, &arguments)
                        .as_ref()
                        .map_or(heartwood_agent::tools::Risk::Unknown, risk),
                    thought: action.thought_text(),
                    tool: action.tool_name,
                    arguments,
                };
                self.calls.insert(action.tool_call_id, index);
                self.open.push(OpenAction {
                    event: AgentEvent {
                        id: index,
                        kind: kind.clone(),
                    },
                    allowed: self.status == Some(OhStatus::Running),
                });
                vec![kind]
            }
            OhEvent::Observation {
                tool_call_id,
                tool_name,
                observation,
                ..
            } => {
                let Some(action_id) = self.resolve(&tool_call_id) else {
                    return Vec::new();
                };
                let observation = observation_of(&tool_name, &observation, &self.project);
                // As in the native engine, `finish`'s message is the agent's last word.
                let said = (tool_name == "finish").then(|| EventKind::Message {
                    speaker: Speaker::Agent,
                    text: observation.content.clone(),
                });
                std::iter::once(EventKind::Observation {
                    action_id,
                    observation,
                })
                .chain(said)
                .collect()
            }
            OhEvent::Rejected {
                tool_call_id,
                reason,
                ..
            } => {
                let allowed = self.is_allowed(&tool_call_id);
                let Some(action_id) = self.resolve(&tool_call_id) else {
                    return Vec::new();
                };
                // Only the researcher rejects a set; an allowed action resolved this way was
                // cut off (see `CUT_OFF`), and is recorded as failed, not as rejected.
                if allowed {
                    vec![EventKind::AgentError {
                        action_id,
                        message: reason,
                    }]
                } else {
                    vec![EventKind::Rejection { action_id, reason }]
                }
            }
            OhEvent::AgentError {
                tool_call_id,
                class,
                ..
            } => {
                // The scaffold's text may quote the model's arguments or a provider's reply:
                // only its class is recorded; OpenHands' own log keeps the rest.
                let message = format!(
                    "the action could not run ({}); OpenHands told the agent why",
                    class.as_deref().unwrap_or("unclassified")
                );
                match self.resolve(&tool_call_id) {
                    Some(action_id) => vec![EventKind::AgentError { action_id, message }],
                    None => vec![EventKind::Error { message }],
                }
            }
            OhEvent::ConversationError { code, class, .. } => vec![EventKind::Error {
                message: format!(
                    "the OpenHands agent stopped on an error ({code}{}); the session's \
                     backend/agent-server.log has the detail",
                    class.map(|c| format!(", {c}")).unwrap_or_default()
                ),
            }],
            OhEvent::State { key, value, .. } if key == "execution_status" => {
                let Ok(status) = serde_json::from_value::<OhStatus>(value) else {
                    return Vec::new();
                };
                self.status = Some(status);
                match status {
                    OhStatus::Running => self.open.iter_mut().for_each(|a| a.allowed = true),
                    OhStatus::WaitingForConfirmation => {
                        self.open.iter_mut().for_each(|a| a.allowed = false);
                    }
                    _ => {}
                }
                native_status(status)
                    .map(|status| EventKind::Status { status })
                    .into_iter()
                    .collect()
            }
            OhEvent::State { key, value, .. } if key == "stats" => self.usage_since(&value),
            OhEvent::State { .. } | OhEvent::Other { .. } => Vec::new(),
        }
    }

    /// The action a tool call belongs to, resolving it.
    fn resolve(&mut self, tool_call_id: &str) -> Option<u64> {
        let action_id = *self.calls.get(tool_call_id)?;
        self.open.retain(|a| a.event.id != action_id);
        Some(action_id)
    }

    /// Whether the tool call's action is open and was allowed to run.
    fn is_allowed(&self, tool_call_id: &str) -> bool {
        let Some(action_id) = self.calls.get(tool_call_id) else {
            return false;
        };
        self.open
            .iter()
            .any(|a| a.event.id == *action_id && a.allowed)
    }

    /// Whether an action allowed to run has no result: the server that ran it stopped.
    fn cut_off(&self) -> bool {
        self.open.iter().any(|a| a.allowed)
    }

    /// Usage events for what each usage id accumulated since the last report.
    fn usage_since(&mut self, stats: &serde_json::Value) -> Vec<EventKind> {
        let Some(by_id) = stats["usage_to_metrics"].as_object() else {
            return Vec::new();
        };
        let mut kinds = Vec::new();
        for (usage_id, metrics) in by_id {
            let tokens = &metrics["accumulated_token_usage"];
            let count = |key: &str| tokens[key].as_u64().unwrap_or(0);
            let total = Usage {
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
                cache_read_tokens: count("cache_read_tokens"),
                reasoning_tokens: count("reasoning_tokens"),
                cost_micros: (metrics["accumulated_cost"].as_f64().unwrap_or(0.0) * 1e6) as u64,
                calls: 0,
            };
            let before = self.usage.get(usage_id).cloned().unwrap_or_default();
            let delta = Usage {
                prompt_tokens: total.prompt_tokens.saturating_sub(before.prompt_tokens),
                completion_tokens: total
                    .completion_tokens
                    .saturating_sub(before.completion_tokens),
                cache_read_tokens: total
                    .cache_read_tokens
                    .saturating_sub(before.cache_read_tokens),
                reasoning_tokens: total
                    .reasoning_tokens
                    .saturating_sub(before.reasoning_tokens),
                cost_micros: total.cost_micros.saturating_sub(before.cost_micros),
                calls: 1,
            };
            if delta.prompt_tokens + delta.completion_tokens + delta.cost_micros > 0 {
                kinds.push(EventKind::Usage {
                    usage_id: usage_id.clone(),
                    usage: delta,
                });
            }
            self.usage.insert(usage_id.clone(), total);
        }
        kinds
    }

    /// The actions the log shows waiting: the unresolved ones of the last reply, while the
    /// server waits for a decision.
    fn waiting(&self) -> Vec<&AgentEvent> {
        if self.status != Some(OhStatus::WaitingForConfirmation) {
            return Vec::new();
        }
        let last_reply = self.open.last().and_then(|a| match &a.event.kind {
            EventKind::Action { response_id, .. } => Some(response_id.clone()),
            _ => None,
        });
        self.open
            .iter()
            .map(|a| &a.event)
            .filter(|a| {
                matches!(&a.kind, EventKind::Action { response_id, .. }
                    if Some(response_id) == last_reply.as_ref())
            })
            .collect()
    }
}

/// An OpenHands observation as the native engine's: a file edit names the project-relative
/// path it changed, as the native editor's observations do.
fn observation_of(
    tool: &str,
    observation: &serde_json::Value,
    project: &camino::Utf8Path,
) -> Observation {
    let is_error = observation["is_error"].as_bool().unwrap_or(false);
    let changed_path = (tool == "file_editor" && !is_error && observation["command"] != "view")
        .then(|| observation["path"].as_str())
        .flatten()
        .and_then(|path| camino::Utf8Path::new(path).strip_prefix(project).ok())
        .map(|relative| relative.to_string());
    let content: String = observation["content"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default();
    Observation {
        content,
        is_error,
        exit_code: observation["exit_code"]
            .as_i64()
            .and_then(|c| i32::try_from(c).ok()),
        changed_path,
    }
}

/// The native engine's status for OpenHands' (`deleting` has none).
fn native_status(status: OhStatus) -> Option<ExecutionStatus> {
    Some(match status {
        OhStatus::Idle => ExecutionStatus::Idle,
        OhStatus::Running => ExecutionStatus::Running,
        OhStatus::Paused => ExecutionStatus::Paused,
        OhStatus::WaitingForConfirmation => ExecutionStatus::WaitingForConfirmation,
        OhStatus::Finished => ExecutionStatus::Finished,
        OhStatus::Error => ExecutionStatus::Error,
        OhStatus::Stuck => ExecutionStatus::Stuck,
        OhStatus::Deleting => return None,
    })
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
                sink.durable();
            }
            Some(_) => {}
            None => self.untaken = entries,
        }
        Ok(())
    }

    /// The running server and its client, started (again, after a crash) if needed.
    async fn server(&mut self) -> Result<Client, BackendError> {
        if let Some((server, client)) = &mut self.server
            && server.is_running()
        {
            return Ok(client.clone());
        }
        self.server = None;
        // The model library reads the key from its conventional variable; the key is passed
        // by environment only, never written to the conversation's settings.
        let key = match &self.spec.route.api_key_env {
            Some(var) => std::env::var(var).map_err(|_| {
                BackendError(format!(
                    "the model route reads its API key from ${var}, which is not set"
                ))
            })?,
            None => "credential-free".to_owned(),
        };
        let env = [("OPENAI_API_KEY".to_owned(), key)];
        let server =
            AgentServer::start(&self.installation, self.spec.state_dir.as_std_path(), &env)
                .await
                .map_err(oh_error)?;
        let client = Client::new(&server);
        self.server = Some((server, client.clone()));
        // A restarted server has the conversation's policy from its store, not from us.
        self.policy_sent = None;
        Ok(client)
    }

    /// The conversation's id, starting the conversation on the first run.
    async fn conversation(&mut self, client: &Client) -> Result<String, BackendError> {
        if let Some(id) = &self.conversation {
            return Ok(id.clone());
        }
        let info = client
            .start_conversation(&ConversationSpec {
                model: format!("openai/{}", self.spec.route.model),
                base_url: Some(self.spec.route.base_url.clone()),
                working_dir: self.spec.project.to_string(),
                confirm_every_action: self.policy == ActionPolicy::AlwaysReview,
                max_iterations: MAX_ITERATIONS,
            })
            .await
            .map_err(oh_error)?;
        self.policy_sent = Some(self.policy);
        let id = info.id.replace('-', "");
        self.conversation = Some(id.clone());
        Ok(id)
    }

    /// Runs; a failure because the server died says so (and the next run starts another).
    async fn run_once(&mut self) -> Result<RunStop, BackendError> {
        let outcome = self.run_inner().await;
        let died = self
            .server
            .as_mut()
            .is_some_and(|(server, _)| !server.is_running());
        if outcome.is_err() && died {
            return Err(self.server_died());
        }
        outcome
    }

    /// Forgets a server that died, and says so.
    fn server_died(&mut self) -> BackendError {
        self.server = None;
        let log = self.spec.state_dir.join("agent-server.log");
        BackendError(format!(
            "the OpenHands agent server stopped unexpectedly (its log: {log}); the next \
             command starts it again"
        ))
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
            client
                .set_confirmation(&id, self.policy == ActionPolicy::AlwaysReview)
                .await
                .map_err(oh_error)?;
            self.policy_sent = Some(self.policy);
        }
        self.deliver()?;
        let decision = self.queued_decision.take();
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
            self.catch_up(OhStatus::WaitingForConfirmation).await?;
            return Ok(RunStop::WaitingForDecision);
        }
        // An allowed set runs at once; anything else needs the loop started.
        if decision != Some(Queued::Allow) {
            client.run(&id).await.map_err(oh_error)?;
        }
        loop {
            if self.controls.interrupt.swap(false, Ordering::SeqCst) {
                self.controls.pause.store(false, Ordering::SeqCst);
                client.interrupt(&id).await.map_err(oh_error)?;
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
                if status == OhStatus::Finished && !late.is_empty() {
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
                    OhStatus::WaitingForConfirmation => RunStop::WaitingForDecision,
                    OhStatus::Paused => RunStop::Paused,
                    OhStatus::Error | OhStatus::Stuck => RunStop::Stopped,
                    _ => RunStop::Finished,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Reads the log until it records the status the server reported (it writes the event as
    /// it changes the status; the two are not one step).
    async fn catch_up(&mut self, status: OhStatus) -> Result<(), BackendError> {
        let started = Instant::now();
        loop {
            self.deliver()?;
            if self.log.status == Some(status) || started.elapsed() > STORE_CATCH_UP {
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
        self.server.is_some() && self.log.status == Some(OhStatus::Running)
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

fn oh_error(error: OpenHandsError) -> BackendError {
    BackendError(error.to_string())
}

/// Where OpenHands is installed for this user, or why it cannot be used (with what to run).
pub fn installation() -> Result<std::path::PathBuf, GatewayError> {
    Installation::find()
        .map(|found| found.venv().to_path_buf())
        .map_err(|e| GatewayError::Backend(e.to_string()))
}

/// Installs the pinned OpenHands agent server into this user's cache (or
/// `HEARTWOOD_OPENHANDS_VENV`) with `python`, or the first Python 3.12+ on `PATH`; pip's
/// progress goes to this process's output. Returns where it is.
pub fn install(python: Option<std::path::PathBuf>) -> Result<std::path::PathBuf, GatewayError> {
    let python = python.or_else(Installation::find_python).ok_or_else(|| {
        GatewayError::Backend(
            "no Python 3.12 or newer on PATH; install one (e.g. `apt-get install python3.12 \
             python3.12-venv`) or pass --python PATH"
                .into(),
        )
    })?;
    Installation::install(&Installation::default_location(), &python)
        .map(|done| done.venv().to_path_buf())
        .map_err(|e| GatewayError::Backend(e.to_string()))
}

#[cfg(test)]
mod tests {
    use heartwood_events::{ActionState, Event, Role};
    use serde_json::json;

    use super::*;

    fn stored(index: u64, value: serde_json::Value) -> StoredEvent {
        StoredEvent {
            index,
            sha256: format!("digest-{index}"),
            id: format!("e{index}"),
            event: OhEvent::from_value(value),
        }
    }

    fn action(call: &str, command: &str) -> serde_json::Value {
        json!({"kind": "ActionEvent", "id": call, "llm_response_id": "r1", "tool_name": "terminal",
               "tool_call_id": call, "action": {"command": command},
               "tool_call": {"arguments": json!({"command": command}).to_string()}})
    }

    fn status(value: &str) -> serde_json::Value {
        json!({"kind": "ConversationStateUpdateEvent", "key": "execution_status", "value": value})
    }

    fn reject(call: &str, reason: &str) -> serde_json::Value {
        json!({"kind": "UserRejectObservation", "tool_call_id": call, "rejection_reason": reason})
    }

    fn translate(log: &mut Log, values: Vec<serde_json::Value>) -> Vec<Event> {
        let from = log.read_upto + 1;
        values
            .into_iter()
            .enumerate()
            .flat_map(|(n, v)| log.take(stored(from + n as u64, v)).events)
            .collect()
    }

    fn states(events: &[Event]) -> Vec<ActionState> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::ActionUpdated { state, .. } => Some(*state),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_waiting_set_is_the_last_replys_open_actions_and_a_rejection_of_it_is_the_researchers() {
        let mut log = Log::default();
        translate(
            &mut log,
            vec![
                status("running"),
                action("c1", "echo one"),
                action("c2", "echo two"),
                status("waiting_for_confirmation"),
            ],
        );
        assert_eq!(
            log.waiting().iter().map(|a| a.id).collect::<Vec<_>>(),
            [2, 3]
        );
        assert!(!log.cut_off(), "nothing was allowed");
        let events = translate(
            &mut log,
            vec![status("idle"), reject("c1", "no"), reject("c2", "no")],
        );
        assert_eq!(states(&events), [ActionState::Rejected; 2]);
        assert!(log.waiting().is_empty());
    }

    #[test]
    fn an_allowed_action_without_a_result_is_cut_off_and_its_resolution_is_a_failure() {
        let mut log = Log::default();
        translate(
            &mut log,
            vec![
                action("c1", "sleep 30"),
                status("waiting_for_confirmation"),
                status("running"),
            ],
        );
        assert!(log.cut_off(), "allowed, and no result");
        let events = translate(&mut log, vec![reject("c1", CUT_OFF)]);
        assert_eq!(states(&events), [ActionState::Failed]);
        assert!(!log.cut_off());
    }

    #[test]
    fn finish_ends_with_the_agents_message_and_the_digests_name_each_entry() {
        let mut log = Log::default();
        let events = translate(
            &mut log,
            vec![
                json!({"kind": "MessageEvent", "source": "user",
                       "llm_message": {"content": [{"type": "text", "text": "go"}]}}),
                json!({"kind": "ActionEvent", "id": "f", "llm_response_id": "r2",
                       "tool_name": "finish", "tool_call_id": "f1",
                       "tool_call": {"arguments": "{\"message\":\"done\"}"}}),
                json!({"kind": "ObservationEvent", "tool_call_id": "f1", "tool_name": "finish",
                       "observation": {"content": [{"type": "text", "text": "done"}],
                                       "is_error": false}}),
            ],
        );
        assert_eq!(log.inputs, ["go"]);
        assert!(events.contains(&Event::Message {
            role: Role::Agent,
            text: "done".into()
        }));
        assert_eq!(log.digests, ["digest-1", "digest-2", "digest-3"]);
    }
}
