//! Conversations: the agent loop, grouped confirmation, pause, rejection, persistence and
//! condensation.
//!
//! The loop: the model's view (derived from the log) goes to the model; each tool call of the
//! reply becomes one action sharing the reply's id (calls after `finish` are dropped); the
//! confirmation policy decides whether the whole set waits for a person; approved actions run
//! one at a time; their observations go back to the model; until `finish`, a plain message, the
//! iteration limit, stuck detection, or a pause between steps.

mod condenser;
mod config;
mod event;
mod handles;
mod log;
mod parallel;
mod policy;
mod state;
mod task;
mod timing;
mod view;

use std::path::PathBuf;
use std::time::Instant;

pub use crate::tools::InterruptHandle;
pub use condenser::{CondenserConfig, estimated_tokens};
pub use config::{ConversationConfig, SpecialistConfig};
pub use event::{AgentEvent, ApprovedBy, EventKind, ExecutionStatus, Speaker};
pub use handles::{GuidanceHandle, PauseHandle};
pub use log::{EventLog, LOG_FILE, LogError, LogTail, sync_calls as log_sync_calls};
pub use policy::ConfirmationPolicy;
pub use state::ConversationState;
pub use task::ask_specialist;
pub use timing::RunTiming;
pub use view::{extend_view, model_view};

use crate::model::{ChatMessage, ModelClient, ModelError, Usage};
use crate::tools::{Observation, Risk, ToolCallRequest, Toolbox, risk, specs_with_outcome};
use timing::timed;

/// Why a conversation operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    /// The log could not be read or written.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The project directory is not usable.
    #[error("cannot use the project directory {}: {source}", path.display())]
    Project {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The model client could not be built.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The host that makes the log durable could not.
    #[error("the conversation could not be made durable: {0}")]
    NotDurable(crate::tools::HostError),
    /// There is no pending action set to decide.
    #[error("there is no pending action set to decide; the conversation is {0:?}")]
    NothingPending(ExecutionStatus),
}

type EventCallback = Box<dyn FnMut(&AgentEvent, &str) + Send>;
type TokenCallback = Box<dyn FnMut(&str) + Send>;
/// Who makes the log durable at a durability point.
enum Durability {
    /// The log syncs itself, then tells the caller (if it asked).
    Own(Option<Box<dyn FnMut() + Send>>),
    /// The caller writes the log's new bytes into its own write-ahead record; `Err` says why
    /// it could not, and the run stops.
    Host(Box<dyn FnMut(LogTail) -> Result<(), crate::tools::HostError> + Send>),
}

/// One agent conversation.
pub struct Conversation {
    config: ConversationConfig,
    client: ModelClient,
    toolbox: Toolbox,
    log: EventLog,
    state: ConversationState,
    pause: PauseHandle,
    guidance: GuidanceHandle,
    on_event: Option<EventCallback>,
    on_token: Option<TokenCallback>,
    durability: Durability,
    timing: RunTiming,
    tool_specs: Vec<crate::model::ToolSpec>,
    /// The model's view as last sent, and how many events it covers.
    view: (Vec<ChatMessage>, usize),
    /// Every model call, recorded for replay.
    recorder: crate::model::replay::Recorder,
    /// How many events the log held when it was opened.
    restored: usize,
    /// The action whose tool runs now (for progress reports).
    running_action: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// How many specialist tasks of the allowed set may run at once, when the gateway
    /// admitted it as an advisory batch; taken by the run that executes it.
    parallel: Option<usize>,
}

impl Conversation {
    /// Opens the conversation persisted in `config.dir`, or starts one there. A conversation
    /// reopened while waiting is still waiting on the same set; an action that had started when
    /// the process stopped is resolved as interrupted and never runs again.
    pub fn open(config: ConversationConfig) -> Result<Self, ConversationError> {
        let log = EventLog::open(&config.dir)?;
        let restored = log.events().len();
        let state = ConversationState::replay(log.events());
        // The model's commands see only the allowlisted environment, never the route's
        // credential.
        let env = config
            .tool_env
            .clone()
            .hiding(config.route.api_key_env.iter().cloned());
        let toolbox = Toolbox::new(
            &config.project,
            config.dir.join("task_plan.json"),
            config.terminal,
            env,
            &config.outside,
        )
        .map_err(|source| ConversationError::Project {
            path: config.project.clone(),
            source,
        })?;
        let client = ModelClient::new(config.route.clone())?;
        let recorder = crate::model::replay::Recorder::open(&config.dir);
        // A replay reopened mid-way continues after the calls this conversation already made.
        client.replay_from(usize::try_from(recorder.calls()).unwrap_or(usize::MAX));
        let mut tool_specs = specs_with_outcome(config.finish_outcome.as_ref());
        if !config.specialists.is_empty() {
            let roles: Vec<crate::tools::SpecialistSpec> = config
                .specialists
                .iter()
                .map(|s| crate::tools::SpecialistSpec {
                    role: s.role.clone(),
                    description: s.description.clone(),
                })
                .collect();
            // Before `finish`, which stays last.
            let at = tool_specs.len().saturating_sub(1);
            tool_specs.insert(at, crate::tools::task_spec(&roles));
        }
        let mut conversation = Conversation {
            config,
            client,
            toolbox,
            log,
            state,
            pause: PauseHandle::default(),
            guidance: GuidanceHandle::default(),
            on_event: None,
            on_token: None,
            durability: Durability::Own(None),
            timing: RunTiming::default(),
            tool_specs,
            view: (Vec::new(), 0),
            recorder,
            restored,
            running_action: std::sync::Arc::default(),
            parallel: None,
        };
        conversation.reconcile_after_restart()?;
        Ok(conversation)
    }

    /// Calls `f` with every new event and the SHA-256 (hex) of its line in the log, so a record
    /// kept elsewhere can name exactly which stored event it came from.
    pub fn on_event(&mut self, f: impl FnMut(&AgentEvent, &str) + Send + 'static) {
        self.on_event = Some(Box::new(f));
    }

    /// Calls `f` each time every event so far has become durable: before a tool runs, when a
    /// run stops, and before a public call returns. A caller that keeps its own record of the
    /// events writes it durably here, so its record is never ahead of this log.
    pub fn on_durable(&mut self, f: impl FnMut() + Send + 'static) {
        self.durability = Durability::Own(Some(Box::new(f)));
    }

    /// Like [`Conversation::on_durable`], but the log does not sync itself: `f` receives the
    /// bytes appended since the last point and must make them durable (in its own write-ahead
    /// record, with its own events, so a step costs one sync). After a crash the caller must
    /// complete the log from that record before the conversation is opened again. `Err` stops
    /// the run with the reason.
    pub fn durable_by_host(
        &mut self,
        f: impl FnMut(LogTail) -> Result<(), crate::tools::HostError> + Send + 'static,
    ) {
        self.durability = Durability::Host(Box::new(f));
    }

    /// Calls `f` with each complete line a running command prints, with the action it belongs
    /// to (progress, never persisted: the action's observation carries the output).
    pub fn on_output(&mut self, f: impl Fn(u64, &str) + Send + Sync + 'static) {
        let running = std::sync::Arc::clone(&self.running_action);
        self.toolbox
            .set_progress(std::sync::Arc::new(move |text: &str| {
                f(running.load(std::sync::atomic::Ordering::SeqCst), text);
            }));
    }

    /// Calls `f` with streamed token text (never persisted).
    pub fn on_token(&mut self, f: impl FnMut(&str) + Send + 'static) {
        self.on_token = Some(Box::new(f));
    }

    /// A handle that pauses this conversation between steps.
    pub fn pause_handle(&self) -> PauseHandle {
        self.pause.clone()
    }

    /// A handle that stops this conversation now: the running tool is killed and the
    /// conversation pauses.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.toolbox.interrupt_handle()
    }

    /// A handle that adds researcher messages to this conversation while it runs.
    pub fn guidance_handle(&self) -> GuidanceHandle {
        self.guidance.clone()
    }

    /// Changes when action sets wait for a person, from the next proposal on.
    pub fn set_policy(&mut self, policy: ConfirmationPolicy) {
        self.config.policy = policy;
    }

    /// The current state.
    pub fn state(&self) -> &ConversationState {
        &self.state
    }

    /// How many of [`Conversation::events`] were read from the log when it was opened (the
    /// rest this process wrote).
    pub fn restored_len(&self) -> usize {
        self.restored
    }

    /// SHA-256 (hex) of event `id` as the conversation's log stores it.
    pub fn event_digest(&self, id: u64) -> Option<String> {
        self.log.digest_of(id)
    }

    /// The conversation's own log, for messages that point a person at it.
    pub fn log_path(&self) -> std::path::PathBuf {
        self.config.dir.join("events.jsonl")
    }

    /// Every event so far.
    pub fn events(&self) -> &[AgentEvent] {
        self.log.events()
    }

    /// The actions awaiting a decision, with their tool, arguments and risk.
    pub fn pending_actions(&self) -> Vec<&AgentEvent> {
        self.events()
            .iter()
            .filter(|e| self.state.pending.contains(&e.id))
            .collect()
    }

    /// Adds a message from the researcher. A finished, stuck or failed conversation becomes idle.
    pub fn send_message(&mut self, text: &str) -> Result<(), ConversationError> {
        self.record(EventKind::Message {
            speaker: Speaker::User,
            text: text.to_owned(),
        })?;
        if matches!(
            self.state.status,
            ExecutionStatus::Finished | ExecutionStatus::Stuck | ExecutionStatus::Error
        ) {
            self.set_status(ExecutionStatus::Idle)?;
        }
        self.sync()
    }

    /// Allows the whole pending action set to run once; the next [`Conversation::run`] runs it.
    pub fn approve_pending(&mut self) -> Result<(), ConversationError> {
        let ids = self.undecided()?;
        self.record(EventKind::Approved {
            action_ids: ids,
            by: ApprovedBy::User,
        })?;
        self.sync()
    }

    /// Rejects every pending action; the conversation becomes idle and the next run tells the
    /// model.
    pub fn reject_pending(&mut self, reason: &str) -> Result<(), ConversationError> {
        let ids = self.undecided()?;
        for action_id in ids {
            self.record(EventKind::Rejection {
                action_id,
                reason: reason.to_owned(),
            })?;
        }
        self.set_status(ExecutionStatus::Idle)?;
        self.sync()
    }

    fn undecided(&self) -> Result<Vec<u64>, ConversationError> {
        let ids: Vec<u64> = self
            .state
            .pending
            .iter()
            .copied()
            .filter(|id| !self.state.approved.contains(id))
            .collect();
        if self.state.status != ExecutionStatus::WaitingForConfirmation || ids.is_empty() {
            return Err(ConversationError::NothingPending(self.state.status));
        }
        Ok(ids)
    }

    /// Runs until the agent finishes, sends a plain message, waits for a decision, is paused,
    /// is stuck, fails, or reaches the iteration limit. Returns the status it stopped in.
    pub async fn run(&mut self) -> Result<ExecutionStatus, ConversationError> {
        let started = Instant::now();
        // Finding out whether commands can be confined starts a process once: off the
        // runtime's threads, before any step asks.
        let _ = tokio::task::spawn_blocking(crate::tools::sandbox::support).await;
        let result = self.run_steps().await;
        self.timing.run += started.elapsed();
        result
    }

    /// Where this conversation's time went.
    pub fn timing(&self) -> RunTiming {
        self.timing
    }

    async fn run_steps(&mut self) -> Result<ExecutionStatus, ConversationError> {
        if self.state.status == ExecutionStatus::WaitingForConfirmation && self.undecided().is_ok()
        {
            return Ok(ExecutionStatus::WaitingForConfirmation);
        }
        self.set_status(ExecutionStatus::Running)?;
        loop {
            // An interruption asked for between steps is a pause.
            if self.pause.take() | self.toolbox.interrupt_handle().take() {
                return self.stop_with(ExecutionStatus::Paused);
            }
            if let Some(status) = self.execute_approved().await? {
                return Ok(status);
            }
            if self.pause.take_before_model() {
                return self.stop_with(ExecutionStatus::Paused);
            }
            if self.state.calls_this_run >= self.config.max_iterations {
                let message = format!(
                    "the agent reached this run's limit of {} model calls; send a message or run again to continue",
                    self.config.max_iterations
                );
                self.record(EventKind::Error { message })?;
                return self.stop_with(ExecutionStatus::Error);
            }
            for text in self.guidance.drain() {
                self.record(EventKind::Message {
                    speaker: Speaker::User,
                    text,
                })?;
            }
            self.refresh_view();
            if self
                .condense_if_needed(estimated_tokens(&self.view.0))
                .await?
            {
                self.refresh_view();
            }
            let messages = &self.view.0;
            let mut sink = |t: &str| {
                if let Some(f) = self.on_token.as_mut() {
                    f(t);
                }
            };
            let reply = timed(
                &mut self.timing,
                self.client.complete(messages, &self.tool_specs, &mut sink),
            )
            .await;
            let reply = match reply {
                Ok(reply) => reply,
                Err(error) => {
                    self.record(EventKind::Error {
                        message: error.to_string(),
                    })?;
                    return self.stop_with(ExecutionStatus::Error);
                }
            };
            if let Err(e) = self.recorder.record("agent", &self.view.0, &reply) {
                self.record(EventKind::Error {
                    message: format!("this model call could not be recorded for replay: {e}"),
                })?;
            }
            self.record(EventKind::Usage {
                usage_id: "agent".to_owned(),
                usage: reply.usage,
            })?;
            if reply.tool_calls.is_empty() {
                let text = reply.content.unwrap_or_default();
                // No words and no action is no answer: finishing on it would report a task
                // done that the model never addressed.
                if text.trim().is_empty() {
                    let message = "the model sent an empty reply (no text and no tool call); \
                                   resume to ask again, or check the model route"
                        .to_owned();
                    self.record(EventKind::Error { message })?;
                    return self.stop_with(ExecutionStatus::Error);
                }
                self.record(EventKind::Message {
                    speaker: Speaker::Agent,
                    text,
                })?;
                return self.stop_with(ExecutionStatus::Finished);
            }
            let (proposed, needs_person) =
                self.propose(reply.response_id, reply.content, reply.tool_calls)?;
            if self.is_stuck() {
                for (action_id, _) in &proposed {
                    let message =
                        "the same action was repeated with the same result; stopped as stuck"
                            .to_owned();
                    self.record(EventKind::AgentError {
                        action_id: *action_id,
                        message,
                    })?;
                }
                return self.stop_with(ExecutionStatus::Stuck);
            }
            if proposed.is_empty() {
                continue; // every call was malformed; the errors go back to the model
            }
            if needs_person {
                return self.stop_with(ExecutionStatus::WaitingForConfirmation);
            }
            let action_ids = proposed.iter().map(|(id, _)| *id).collect();
            self.record(EventKind::Approved {
                action_ids,
                by: ApprovedBy::Policy,
            })?;
        }
    }

    /// Records one action per tool call, each with the confinement it will run at; malformed
    /// calls are resolved at once with an error the model will see. Returns the valid actions
    /// and whether the set waits for a person.
    fn propose(
        &mut self,
        response_id: String,
        content: Option<String>,
        calls: Vec<crate::model::ToolCall>,
    ) -> Result<(Vec<(u64, ToolCallRequest)>, bool), ConversationError> {
        // Calls after `finish` are dropped.
        let end = calls
            .iter()
            .position(|c| c.function.name == "finish")
            .map_or(calls.len(), |i| i + 1);
        let parsed: Vec<_> = calls
            .into_iter()
            .take(end)
            .map(|call| {
                let request = ToolCallRequest::parse(&call.function.name, &call.function.arguments);
                (call, request)
            })
            .collect();
        let valid: Vec<&ToolCallRequest> =
            parsed.iter().filter_map(|(_, r)| r.as_ref().ok()).collect();
        let needs_person = self.needs_person(&valid);
        let allowed = self.allowed(needs_person);
        let mut thought = content.filter(|c| !c.trim().is_empty());
        let mut proposed = Vec::new();
        for (call, parsed) in parsed {
            let action = self.record(EventKind::Action {
                response_id: response_id.clone(),
                tool_call_id: call.id,
                tool: call.function.name,
                arguments: call.function.arguments,
                thought: thought.take(),
                risk: parsed.as_ref().map_or(Risk::Unknown, risk),
                sandbox: parsed.as_ref().ok().and_then(|r| r.sandbox_level(allowed)),
            })?;
            match parsed {
                Ok(request) => proposed.push((action, request)),
                Err(refused) => {
                    self.record(EventKind::AgentError {
                        action_id: action,
                        message: refused.to_string(),
                    })?;
                }
            }
        }
        Ok((proposed, needs_person))
    }

    /// Whether a set of these calls waits for a person: anything but a lone `finish`/`think`
    /// that the policy wants reviewed, and any command where nothing can be confined.
    fn needs_person(&self, calls: &[&ToolCallRequest]) -> bool {
        let only_harmless = calls.iter().all(|r| {
            matches!(
                r,
                ToolCallRequest::Finish { .. } | ToolCallRequest::Think { .. }
            )
        });
        let unconfined = !crate::tools::sandbox::support().enforcing
            && calls
                .iter()
                .any(|r| matches!(r, ToolCallRequest::Terminal(_)));
        !only_harmless
            && (unconfined
                || calls
                    .iter()
                    .any(|r| self.config.policy.needs_confirmation(risk(r))))
    }

    /// Who lets a set run, as far as its confinement goes: a person when it waits for one,
    /// else the risk rules (read-only) or a policy that reviews nothing.
    fn allowed(&self, needs_person: bool) -> crate::tools::sandbox::Allowed {
        use crate::tools::sandbox::Allowed;
        match self.config.policy {
            _ if needs_person => Allowed::ByPerson,
            ConfirmationPolicy::ConfirmRisky { .. } => Allowed::ByRiskRules,
            _ => Allowed::WithoutReview,
        }
    }

    /// Runs approved actions in order. Returns a status when the run must stop.
    async fn execute_approved(&mut self) -> Result<Option<ExecutionStatus>, ConversationError> {
        if let Some(at_most) = self.parallel.take()
            && let Some(batch) = self.advisory_batch(true)
            && let Some(stop) = self.run_batch(batch, at_most).await?
        {
            return Ok(Some(stop));
        }
        while let Some(action_id) = self
            .state
            .pending
            .iter()
            .copied()
            .find(|id| self.state.approved.contains(id))
        {
            let request = self.request_of(action_id);
            self.record(EventKind::Started { action_id })?;
            // Durable before the tool runs: after a crash this action is never run again.
            self.sync()?;
            let request = match request {
                Ok(request) => request,
                Err(refused) => {
                    let message = refused.to_string();
                    self.record(EventKind::AgentError { action_id, message })?;
                    continue;
                }
            };
            let ran = Instant::now();
            self.running_action
                .store(action_id, std::sync::atomic::Ordering::SeqCst);
            let observation = match &request {
                ToolCallRequest::Task {
                    subagent_type,
                    prompt,
                    ..
                } => self.run_task(action_id, subagent_type, prompt).await?,
                // It runs confined as its proposal recorded: what was shown is what runs.
                _ => {
                    let level = self.sandbox_of(action_id);
                    self.toolbox.execute(&request, level).await
                }
            };
            self.timing.tools += ran.elapsed();
            self.record(EventKind::Observation {
                action_id,
                observation: observation.clone(),
            })?;
            if let ToolCallRequest::Finish { message, .. } = &request {
                self.record(EventKind::Message {
                    speaker: Speaker::Agent,
                    text: message.clone(),
                })?;
                return self.stop_with(ExecutionStatus::Finished).map(Some);
            }
            // An interrupted tool has returned its partial output; the run pauses there.
            if self.pause.take() | self.toolbox.interrupt_handle().take() {
                return self.stop_with(ExecutionStatus::Paused).map(Some);
            }
        }
        Ok(None)
    }

    /// Brings the model's view up to date: extended by the events since it was last derived
    /// when that is exact, derived again from the whole log otherwise (after a condensation).
    fn refresh_view(&mut self) {
        let events = self.log.events();
        let (messages, covered) = &mut self.view;
        let extended = self.state.summary.is_none()
            && *covered > 0
            && *covered <= events.len()
            && extend_view(messages, &events[*covered..]);
        if !extended {
            *messages = model_view(&self.config.system_prompt, events, &self.state);
        }
        *covered = events.len();
    }

    /// The event with this id (ids count from 1 without gaps).
    fn event(&self, id: u64) -> Option<&AgentEvent> {
        let index = usize::try_from(id).ok()?.checked_sub(1)?;
        self.events().get(index)
    }

    /// The confinement recorded with an action's proposal.
    fn sandbox_of(&self, action_id: u64) -> Option<crate::tools::SandboxLevel> {
        match self.event(action_id).map(|e| &e.kind) {
            Some(EventKind::Action { sandbox, .. }) => *sandbox,
            _ => None,
        }
    }

    fn request_of(&self, action_id: u64) -> Result<ToolCallRequest, crate::tools::CallRefused> {
        match self.event(action_id).map(|e| &e.kind) {
            Some(EventKind::Action {
                tool, arguments, ..
            }) => ToolCallRequest::parse(tool, arguments),
            _ => Err(crate::tools::CallRefused::NotInLog(action_id)),
        }
    }

    /// Stuck: the last three actions are the same call, and the two already run gave the same
    /// result.
    fn is_stuck(&self) -> bool {
        let actions: Vec<&AgentEvent> = self
            .events()
            .iter()
            .rev()
            .filter(|e| matches!(e.kind, EventKind::Action { .. }))
            .take(3)
            .collect();
        if actions.len() < 3 {
            return false;
        }
        let call = |e: &AgentEvent| match &e.kind {
            EventKind::Action {
                tool, arguments, ..
            } => Some((tool.clone(), arguments.clone())),
            _ => None,
        };
        let same_call = actions.windows(2).all(|w| call(w[0]) == call(w[1]));
        // Results follow their actions, so the search starts at the action.
        let result = |id: u64| {
            let from = usize::try_from(id).unwrap_or(usize::MAX);
            self.events()
                .get(from..)
                .unwrap_or_default()
                .iter()
                .find_map(|e| match &e.kind {
                    EventKind::Observation {
                        action_id,
                        observation,
                    } if *action_id == id => Some(observation.content.clone()),
                    _ => None,
                })
        };
        same_call
            && result(actions[1].id).is_some()
            && result(actions[1].id) == result(actions[2].id)
    }

    /// Condenses older history when the request about to be sent (`estimated` tokens) or the
    /// number of visible events is over budget. Returns whether it did, in which case the view
    /// must be derived again.
    async fn condense_if_needed(&mut self, estimated: u64) -> Result<bool, ConversationError> {
        let Some(config) = self.config.condenser else {
            return Ok(false);
        };
        let over_budget = estimated > self.config.route.max_input_tokens;
        let Some(forgotten) = condenser::plan(&config, self.log.events(), &self.state, over_budget)
        else {
            return Ok(false);
        };
        let previous = self.state.summary.as_ref().map(|(s, _)| s.as_str());
        let request = condenser::summary_request(self.log.events(), &forgotten, previous);
        let reply = timed(
            &mut self.timing,
            self.client.complete(&request, &[], &mut |_: &str| {}),
        )
        .await;
        let reply = match reply {
            Ok(reply) => reply,
            // Without a summary the run goes on with the full view; the model call that follows
            // reports a context problem if there really is one.
            Err(error) => {
                self.record(EventKind::Error {
                    message: format!("condensing older history failed: {error}"),
                })?;
                return Ok(false);
            }
        };
        if let Err(e) = self.recorder.record("condenser", &request, &reply) {
            self.record(EventKind::Error {
                message: format!("this model call could not be recorded for replay: {e}"),
            })?;
        }
        self.record(EventKind::Usage {
            usage_id: "condenser".to_owned(),
            usage: reply.usage,
        })?;
        self.record(EventKind::Condensation {
            forgotten_event_ids: forgotten,
            summary: reply.content.unwrap_or_default(),
            summary_offset: config.keep_first,
        })?;
        Ok(true)
    }

    fn reconcile_after_restart(&mut self) -> Result<(), ConversationError> {
        let interrupted: Vec<u64> = self
            .state
            .pending
            .iter()
            .copied()
            .filter(|id| self.state.started.contains(id))
            .collect();
        for action_id in interrupted {
            let message = "this action was interrupted when Heartwood stopped; it may have partly run and was not repeated".to_owned();
            self.record(EventKind::AgentError { action_id, message })?;
        }
        if self.state.status == ExecutionStatus::Running {
            let undecided = self
                .state
                .pending
                .iter()
                .any(|id| !self.state.approved.contains(id));
            let status = if undecided {
                ExecutionStatus::WaitingForConfirmation
            } else {
                ExecutionStatus::Idle
            };
            self.set_status(status)?;
        }
        self.sync()
    }

    /// Ends a run: the status and everything before it are durable when the caller regains
    /// control.
    fn stop_with(&mut self, status: ExecutionStatus) -> Result<ExecutionStatus, ConversationError> {
        self.set_status(status)?;
        self.sync()?;
        Ok(status)
    }

    fn set_status(&mut self, status: ExecutionStatus) -> Result<(), ConversationError> {
        if self.state.status != status {
            self.record(EventKind::Status { status })?;
        }
        Ok(())
    }

    /// Makes every event so far durable, then tells [`Conversation::on_durable`].
    fn sync(&mut self) -> Result<(), ConversationError> {
        match &mut self.durability {
            Durability::Own(then) => {
                self.log.sync()?;
                if let Some(f) = then.as_mut() {
                    f();
                }
                Ok(())
            }
            Durability::Host(f) => f(self.log.take_tail()).map_err(ConversationError::NotDurable),
        }
    }

    fn record(&mut self, kind: EventKind) -> Result<u64, ConversationError> {
        let event = self.log.append(kind)?.clone();
        self.state.apply(&event);
        if let Some(f) = self.on_event.as_mut() {
            f(&event, &self.log.digest_of(event.id).unwrap_or_default());
        }
        Ok(event.id)
    }

    /// Usage per usage id.
    pub fn usage(&self) -> &std::collections::BTreeMap<String, Usage> {
        &self.state.usage
    }

    /// Stops the shell; the conversation can be reopened from its directory later.
    pub async fn close(mut self) {
        self.toolbox.shutdown().await;
    }

    /// The most recent tool observation, if any.
    pub fn last_observation(&self) -> Option<&Observation> {
        self.events().iter().rev().find_map(|e| match &e.kind {
            EventKind::Observation { observation, .. } => Some(observation),
            _ => None,
        })
    }
}
