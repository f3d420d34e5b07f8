//! The native engine (`heartwood-agent`) behind the [`AgentBackend`] port.
//!
//! Owns the engine's [`Conversation`] and its [`Translator`], so the gateway sees Heartwood
//! events and origins only. The translator is shared between the engine's event listener (live
//! entries) and [`AgentBackend::take_entries`] (entries written before the listener was
//! attached), and each engine event is translated exactly once, in order: the translation of
//! an action's update depends on the versions the translator has seen.

use std::sync::{Arc, Mutex, PoisonError};

use heartwood_agent::conversation::{
    ConfirmationPolicy, Conversation, ConversationConfig, ConversationError, EventKind,
    ExecutionStatus, GuidanceHandle, InterruptHandle, PauseHandle, Speaker,
};
use heartwood_agent::tools::Risk;
use heartwood_events::{ActionPolicy, Origin};

use crate::backend::{
    AgentBackend, BackendControls, BackendEntry, BackendError, BackendFactory, BackendFuture,
    BackendSink, BackendSpec, PendingActions, RunStop,
};
use crate::translate::{Translator, proposal_of};

pub use heartwood_project::config::NATIVE_BACKEND;

/// Opens native-engine conversations.
#[derive(Debug, Default, Clone, Copy)]
pub struct NativeBackendFactory;

impl BackendFactory for NativeBackendFactory {
    fn name(&self) -> &'static str {
        NATIVE_BACKEND
    }

    fn open(&self, spec: BackendSpec) -> Result<Box<dyn AgentBackend>, BackendError> {
        let mut config = ConversationConfig::new(
            spec.route.model_route(spec.project.as_std_path()),
            spec.project.into_std_path_buf(),
            spec.state_dir.into_std_path_buf(),
        );
        config.policy = confirmation(spec.policy);
        config.system_prompt.push_str(&spec.skills.prompt_section());
        config.outside = spec.skills.directories();
        config.outside.extend(spec.data_mounts.iter().cloned());
        config.tool_env = spec.tool_env.clone();
        // In workflow conversations a review answers with structured proposals; elsewhere
        // every specialist answers in text.
        let structured = spec.finish_outcome.is_some();
        config.finish_outcome = spec.finish_outcome;
        config.specialists = spec
            .specialists
            .iter()
            // A role whose skills are not all active and verified is not offered: a specialist
            // gets only the verified skills injected into its prompt, and discovers none.
            .filter_map(|s| Some((s, spec.skills.injected(&s.skills).ok()?)))
            .map(|(s, skills)| specialist_config(s, &skills, structured))
            .collect();
        let conversation = Conversation::open(config).map_err(backend_error)?;
        Ok(Box::new(NativeBackend {
            controls: Arc::new(NativeControls {
                pause: conversation.pause_handle(),
                interrupt: conversation.interrupt_handle(),
                guidance: conversation.guidance_handle(),
            }),
            conversation,
            translation: Arc::new(Mutex::new(Translation::default())),
        }))
    }
}

/// The engine's confirmation policy for a Heartwood action policy.
fn confirmation(policy: ActionPolicy) -> ConfirmationPolicy {
    match policy {
        ActionPolicy::AlwaysReview => ConfirmationPolicy::AlwaysConfirm,
        ActionPolicy::LowRiskAutomation => ConfirmationPolicy::ConfirmRisky {
            threshold: Risk::Medium,
            confirm_unknown: true,
        },
    }
}

/// The translator and how far it has read the engine's log.
#[derive(Default)]
struct Translation {
    translator: Translator,
    /// The last engine event translated (ids start at 1).
    upto: u64,
}

struct NativeBackend {
    conversation: Conversation,
    controls: Arc<NativeControls>,
    translation: Arc<Mutex<Translation>>,
}

struct NativeControls {
    pause: PauseHandle,
    interrupt: InterruptHandle,
    guidance: GuidanceHandle,
}

impl BackendControls for NativeControls {
    fn pause(&self) {
        self.pause.pause();
    }

    fn pause_before_model(&self) {
        self.pause.pause_before_model();
    }

    fn withdraw_pause(&self) {
        self.pause.withdraw();
        self.interrupt.withdraw();
    }

    fn interrupt(&self) {
        self.interrupt.interrupt();
    }

    fn guide(&self, text: &str) {
        self.guidance.send(text);
    }
}

impl AgentBackend for NativeBackend {
    fn received_inputs(&self) -> Vec<String> {
        self.conversation
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Message {
                    speaker: Speaker::User,
                    text,
                } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    fn restored_upto(&self) -> u64 {
        let restored = self.conversation.restored_len();
        restored
            .checked_sub(1)
            .and_then(|last| self.conversation.events().get(last))
            .map_or(0, |e| e.id)
    }

    fn entry_digest(&self, id: u64) -> Option<String> {
        self.conversation.event_digest(id)
    }

    fn take_entries(&mut self) -> Vec<BackendEntry> {
        let mut translation = self
            .translation
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut entries = Vec::new();
        for event in self.conversation.events() {
            if event.id <= translation.upto {
                continue;
            }
            translation.upto = event.id;
            let events = translation.translator.translate(event);
            let sha256 = self.conversation.event_digest(event.id).unwrap_or_default();
            entries.push(BackendEntry {
                origin: Origin {
                    event: event.id,
                    sha256,
                },
                events,
            });
        }
        entries
    }

    fn is_running(&self) -> bool {
        self.conversation.state().status == ExecutionStatus::Running
    }

    fn pending(&self) -> Option<PendingActions> {
        let state = self.conversation.state();
        if state.status != ExecutionStatus::WaitingForConfirmation {
            return None;
        }
        let action_ids: Vec<u64> = state
            .pending
            .iter()
            .copied()
            .filter(|id| !state.approved.contains(id))
            .collect();
        if action_ids.is_empty() {
            return None;
        }
        let members = self
            .conversation
            .events()
            .iter()
            .filter(|e| action_ids.contains(&e.id))
            .filter_map(proposal_of)
            .collect();
        Some(PendingActions {
            action_ids,
            members,
        })
    }

    fn attach(&mut self, sink: Arc<dyn BackendSink>) {
        let translation = Arc::clone(&self.translation);
        let entries_to = Arc::clone(&sink);
        self.conversation.on_event(move |event, sha256| {
            let events = {
                let mut translation = translation.lock().unwrap_or_else(PoisonError::into_inner);
                if event.id <= translation.upto {
                    return;
                }
                translation.upto = event.id;
                translation.translator.translate(event)
            };
            // The sink takes the session's lock; the translation's is released first.
            entries_to.entry(BackendEntry {
                origin: Origin {
                    event: event.id,
                    sha256: sha256.to_owned(),
                },
                events,
            });
        });
        let durable_to = Arc::clone(&sink);
        // The engine's log is made durable by the journal's intent, with the step's events.
        self.conversation.durable_by_host(move |tail| {
            let bytes =
                String::from_utf8(tail.bytes).map_err(|_| crate::backend::NotDurable::NotText)?;
            durable_to.durable(Some(heartwood_audit::BackendBytes {
                file: tail.file.to_owned(),
                len: tail.offset,
                bytes,
            }))?;
            Ok(())
        });
        let output_to = Arc::clone(&sink);
        self.conversation
            .on_output(move |action_id, text| output_to.output(action_id, text));
        self.conversation.on_token(move |text| sink.token(text));
    }

    fn controls(&self) -> Arc<dyn BackendControls> {
        self.controls.clone()
    }

    fn set_policy(&mut self, policy: ActionPolicy) {
        self.conversation.set_policy(confirmation(policy));
    }

    fn send_message(&mut self, text: &str) -> Result<(), BackendError> {
        self.conversation.send_message(text).map_err(backend_error)
    }

    fn approve_pending(&mut self) -> Result<(), BackendError> {
        self.conversation.approve_pending().map_err(backend_error)
    }

    fn pending_is_advisory_batch(&self) -> bool {
        self.conversation.pending_is_advisory_batch()
    }

    fn approve_pending_in_parallel(&mut self, at_most: usize) -> Result<(), BackendError> {
        self.conversation
            .approve_pending_in_parallel(at_most)
            .map_err(backend_error)
    }

    fn reject_pending(&mut self, reason: &str) -> Result<(), BackendError> {
        self.conversation
            .reject_pending(reason)
            .map_err(backend_error)
    }

    /// Runs. Guidance that arrived as the agent finished is delivered and the run continues
    /// with it; after any other stop it stays queued for the step that next runs.
    fn run(&mut self) -> BackendFuture<'_, Result<RunStop, BackendError>> {
        Box::pin(async move {
            loop {
                let status = self.conversation.run().await.map_err(backend_error)?;
                if status == ExecutionStatus::Finished {
                    let late = self.controls.guidance.drain();
                    if !late.is_empty() {
                        for text in late {
                            self.send_message(&text)?;
                        }
                        continue;
                    }
                }
                return Ok(match status {
                    ExecutionStatus::WaitingForConfirmation => RunStop::WaitingForDecision,
                    ExecutionStatus::Paused => RunStop::Paused,
                    ExecutionStatus::Error | ExecutionStatus::Stuck => RunStop::Stopped,
                    ExecutionStatus::Finished
                    | ExecutionStatus::Idle
                    | ExecutionStatus::Running
                    | ExecutionStatus::Deleting => RunStop::Finished,
                });
            }
        })
    }

    fn close(self: Box<Self>) -> BackendFuture<'static, ()> {
        Box::pin(self.conversation.close())
    }

    fn log_location(&self) -> String {
        self.conversation.log_path().display().to_string()
    }
}

fn backend_error(error: ConversationError) -> BackendError {
    BackendError::engine(error)
}

/// The engine's form of a catalog role: its instructions with its injected skills, and, in
/// workflow conversations, a review role's structured result.
fn specialist_config(
    s: &heartwood_workflow::specialists::Specialist,
    skills: &str,
    structured: bool,
) -> heartwood_agent::conversation::SpecialistConfig {
    heartwood_agent::conversation::SpecialistConfig {
        role: s.role.clone(),
        description: s.description.clone(),
        system_prompt: format!("{}{skills}", s.system_prompt),
        max_iterations: s.max_iterations,
        max_tokens: s.max_tokens,
        result_schema: (structured
            && s.result == heartwood_workflow::specialists::SpecialistResult::ReviewProposals)
            .then(heartwood_events::schema::inline::<heartwood_events::workflow::ReviewProposals>),
    }
}

/// The review role as a workflow review asks it (structured proposals, no skills), for a
/// route's qualification run: the same request a review batch makes.
pub(crate) fn reviewer_for_qualification() -> Option<heartwood_agent::conversation::SpecialistConfig>
{
    heartwood_workflow::specialists::registered()
        .ok()?
        .iter()
        .find(|s| s.role == "reviewer")
        .map(|s| specialist_config(s, "", true))
}
