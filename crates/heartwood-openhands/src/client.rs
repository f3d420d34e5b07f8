//! The agent server's REST API, typed: start a conversation, send a message, run, pause,
//! answer a confirmation, read the conversation's state and events.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::events::Event;
use crate::{AgentServer, OpenHandsError};

/// The agent server's execution status of a conversation: the vocabulary's type, shared with
/// the native engine.
pub use heartwood_events::ExecutionStatus;

/// What the conversation is told about its model, tools and policy.
#[derive(Debug, Clone)]
pub struct ConversationSpec {
    /// The model in LiteLLM's naming (`openai/<model>` for an OpenAI-compatible service).
    pub model: String,
    /// The service's base URL, for a compatible service.
    pub base_url: Option<String>,
    /// The project directory the tools work in.
    pub working_dir: String,
    /// Every action set waits for a decision (`AlwaysConfirm`), or only risky ones
    /// (`ConfirmRisky`).
    pub confirm_every_action: bool,
    /// The most agent steps one run may take.
    pub max_iterations: u32,
    /// Text appended to the agent's system prompt (the active skills' section), if any.
    pub system_suffix: Option<String>,
    /// The route's prices in US dollars per input and output token, so the server's cost
    /// figures are the route's (LiteLLM prices a model it does not know at zero).
    pub cost_per_token: Option<(f64, f64)>,
    /// The JSON Schema of a structured `outcome` the agent's `finish` must carry (a workflow
    /// stage's), if any: the server's finish tool then takes it beside its message, validates
    /// it, and keeps it in the call's arguments.
    pub finish_outcome: Option<Value>,
    /// Whether the agent has the sequential `task` tool, whose sub-agents are the specialists
    /// the server was started with ([`crate::server::SPECIALISTS_VAR`]).
    pub task_tool: bool,
}

/// A conversation as the server reports it (the parts Heartwood reads).
#[derive(Debug, Clone, Deserialize)]
pub struct ConversationInfo {
    /// The conversation id.
    pub id: String,
    /// Where it is.
    pub execution_status: ExecutionStatus,
    /// Where the server keeps it.
    #[serde(default)]
    pub persistence_dir: Option<String>,
    /// The latest event's id: it changes whenever anything happens.
    #[serde(default)]
    pub leaf_event_id: Option<String>,
}

/// A client of one agent server.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: String,
    /// Held while the client lives: its socket is named through this folder's descriptor.
    _meeting: std::sync::Arc<std::fs::File>,
}

/// The server's confirmation policy: every action set waits, or only risky ones (the unrated
/// included).
fn confirmation_policy(confirm_every_action: bool) -> Value {
    if confirm_every_action {
        json!({"kind": "AlwaysConfirm"})
    } else {
        json!({"kind": "ConfirmRisky"})
    }
}

/// Tools Heartwood gives an OpenHands agent, and the modules that register them.
const TOOLS: [(&str, &str); 3] = [
    ("terminal", "openhands.tools.terminal"),
    ("file_editor", "openhands.tools.file_editor"),
    ("task_tracker", "openhands.tools.task_tracker"),
];

/// The `task` tool (the tool set's name; the model calls it `task`), and its module.
const TASK_TOOL: (&str, &str) = ("task_tool_set", "openhands.tools.task");

/// The tools of a conversation made by `spec`.
fn tools(spec: &ConversationSpec) -> Vec<(&'static str, &'static str)> {
    let mut tools = TOOLS.to_vec();
    if spec.task_tool {
        tools.push(TASK_TOOL);
    }
    tools
}

impl Client {
    /// A client of `server`.
    pub fn new(server: &AgentServer) -> Result<Client, OpenHandsError> {
        Ok(Client {
            http: server.http()?,
            base: server.base_url(),
            key: server.key().to_owned(),
            _meeting: server.meeting(),
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, OpenHandsError> {
        self.call_accepting(method, path, body, None).await
    }

    /// [`Client::call`], with one more status (besides success) taken as done.
    async fn call_accepting(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        also_done: Option<reqwest::StatusCode>,
    ) -> Result<Value, OpenHandsError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-Session-API-Key", &self.key)
            .timeout(Duration::from_secs(60));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| {
            OpenHandsError::Server(format!("the agent server does not answer: {e}"))
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| OpenHandsError::Api(e.to_string()))?;
        if Some(status) == also_done {
            return Ok(Value::Null);
        }
        if !status.is_success() {
            return Err(OpenHandsError::Api(format!(
                "{path}: {status}: {}",
                text.chars().take(500).collect::<String>()
            )));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .map_err(|e| OpenHandsError::Api(format!("{path}: not JSON: {e}")))
    }

    /// Whether the server answers at all (its readiness route, briefly): a server killed
    /// while idle may not have been collected yet, so its process alone does not say.
    pub async fn answers(&self) -> bool {
        self.http
            .get(format!("{}/ready", self.base))
            .header("X-Session-API-Key", &self.key)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    /// Starts a conversation (without a message). No title is generated: that would send the
    /// researcher's first message to the model for a purpose they did not ask for.
    pub async fn start_conversation(
        &self,
        spec: &ConversationSpec,
    ) -> Result<ConversationInfo, OpenHandsError> {
        let llm = llm_config(spec);
        let policy = confirmation_policy(spec.confirm_every_action);
        let tools = tools(spec);
        let mut body = json!({
            "workspace": {"kind": "LocalWorkspace", "working_dir": spec.working_dir},
            "agent": {
                "kind": "Agent",
                "llm": llm,
                "tools": tools.iter().map(|(name, _)| json!({"name": name})).collect::<Vec<_>>(),
                "tool_concurrency_limit": 1,
            },
            "tool_module_qualnames": tools.iter().map(|(n, m)| (n.to_string(), json!(m))).collect::<serde_json::Map<_, _>>(),
            "confirmation_policy": policy,
            "max_iterations": spec.max_iterations,
            "stuck_detection": true,
            "autotitle": false,
        });
        if let Some(outcome) = &spec.finish_outcome {
            // The finish tool named in the agent's tools, with the outcome as its response
            // schema; the default one would then be a second tool of the same name.
            body["agent"]["include_default_tools"] = json!(["ThinkTool"]);
            if let Some(tools) = body["agent"]["tools"].as_array_mut() {
                tools.push(json!({"name": "finish", "params": {"response_schema": {
                    "type": "object",
                    "properties": {"outcome": outcome},
                    "required": ["outcome"],
                    "additionalProperties": false,
                }}}));
            }
        }
        if let Some(suffix) = spec
            .system_suffix
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            body["agent"]["agent_context"] = json!({"system_message_suffix": suffix});
        }
        let info = self
            .call(reqwest::Method::POST, "/api/conversations", Some(body))
            .await?;
        serde_json::from_value(info)
            .map_err(|e| OpenHandsError::Api(format!("a conversation: {e}")))
    }

    /// The conversation's current state.
    pub async fn info(&self, id: &str) -> Result<ConversationInfo, OpenHandsError> {
        let info = self
            .call(
                reqwest::Method::GET,
                &format!("/api/conversations/{id}"),
                None,
            )
            .await?;
        serde_json::from_value(info)
            .map_err(|e| OpenHandsError::Api(format!("a conversation: {e}")))
    }

    /// Gives the agent the researcher's message; `run` starts the agent loop if it is not
    /// running.
    pub async fn send_message(
        &self,
        id: &str,
        text: &str,
        run: bool,
    ) -> Result<(), OpenHandsError> {
        let body = json!({"role": "user", "content": [{"type": "text", "text": text}], "run": run});
        self.post(id, "events", Some(body)).await
    }

    /// `POST /api/conversations/{id}/{action}`, answered with nothing Heartwood reads.
    async fn post(
        &self,
        id: &str,
        action: &str,
        body: Option<Value>,
    ) -> Result<(), OpenHandsError> {
        self.call(
            reqwest::Method::POST,
            &format!("/api/conversations/{id}/{action}"),
            body,
        )
        .await
        .map(drop)
    }

    /// Starts the agent loop; one already running (an allowed set runs at once) is left to
    /// run.
    pub async fn run(&self, id: &str) -> Result<(), OpenHandsError> {
        self.call_accepting(
            reqwest::Method::POST,
            &format!("/api/conversations/{id}/run"),
            None,
            Some(reqwest::StatusCode::CONFLICT),
        )
        .await
        .map(drop)
    }

    /// Asks the agent to pause.
    pub async fn pause(&self, id: &str) -> Result<(), OpenHandsError> {
        self.post(id, "pause", None).await
    }

    /// Stops the agent now: cancels a model call in flight and pauses.
    pub async fn interrupt(&self, id: &str) -> Result<(), OpenHandsError> {
        self.post(id, "interrupt", None).await
    }

    /// Which actions wait for a decision from now on (see [`ConversationSpec`]).
    pub async fn set_confirmation(
        &self,
        id: &str,
        confirm_every_action: bool,
    ) -> Result<(), OpenHandsError> {
        let body = json!({"policy": confirmation_policy(confirm_every_action)});
        self.post(id, "confirmation_policy", Some(body)).await
    }

    /// Gives the conversation the model `spec` names (its base URL and prices): a conversation
    /// restored from its store keeps the model it was created with otherwise, and a model
    /// behind a relay moves with the relay's port.
    pub async fn switch_llm(
        &self,
        id: &str,
        spec: &ConversationSpec,
    ) -> Result<(), OpenHandsError> {
        self.post(id, "switch_llm", Some(json!({"llm": llm_config(spec)})))
            .await
    }

    /// Allows every action waiting for confirmation, or rejects them all with `reason`.
    pub async fn respond(
        &self,
        id: &str,
        accept: bool,
        reason: Option<&str>,
    ) -> Result<(), OpenHandsError> {
        let mut body = json!({"accept": accept});
        if let Some(reason) = reason {
            body["reason"] = json!(reason);
        }
        self.post(id, "events/respond_to_confirmation", Some(body))
            .await
    }

    /// Every event of the conversation, oldest first.
    pub async fn events(&self, id: &str) -> Result<Vec<Event>, OpenHandsError> {
        let mut events = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut path = format!("/api/conversations/{id}/events/search?limit=100");
            if let Some(page) = &page {
                path.push_str(&format!("&page_id={page}"));
            }
            let mut answer = self.call(reqwest::Method::GET, &path, None).await?;
            let items = answer["items"].take();
            let items: Vec<Value> = serde_json::from_value(items)
                .map_err(|e| OpenHandsError::Api(format!("an event page: {e}")))?;
            events.extend(items.into_iter().map(Event::from_value));
            match answer["next_page_id"].as_str() {
                Some(next) if !next.is_empty() => page = Some(next.to_owned()),
                _ => return Ok(events),
            }
        }
    }

    /// Waits (polling), at most `within`, until something has happened since the event `after`
    /// (the server answers a decision before it acts on it) and the run has stopped
    /// ([`ExecutionStatus::is_stopped`]).
    pub async fn settle(
        &self,
        id: &str,
        after: Option<&str>,
        within: Duration,
    ) -> Result<ConversationInfo, OpenHandsError> {
        let started = Instant::now();
        loop {
            let info = self.info(id).await?;
            if info.execution_status.is_stopped() && info.leaf_event_id.as_deref() != after {
                return Ok(info);
            }
            if started.elapsed() > within {
                return Err(OpenHandsError::Server(format!(
                    "the conversation had not stopped after {}s",
                    within.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The agent's model settings for `spec` (the key travels in the server's environment, never
/// here).
fn llm_config(spec: &ConversationSpec) -> Value {
    let mut llm = json!({"model": spec.model, "usage_id": "agent", "num_retries": 2});
    if let Some(base_url) = &spec.base_url {
        llm["base_url"] = json!(base_url);
    }
    if let Some((input, output)) = spec.cost_per_token {
        llm["input_cost_per_token"] = json!(input);
        llm["output_cost_per_token"] = json!(output);
    }
    llm
}
