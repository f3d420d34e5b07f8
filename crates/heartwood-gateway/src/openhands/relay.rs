//! A chat-completions endpoint (on a Unix socket the agent server reaches from its sandbox)
//! between the OpenHands agent server and the model route:
//! the agent server sends OpenAI chat completions here, and each is answered by Heartwood's own
//! model client for the route, the one the native engine uses. So a route OpenHands' model
//! library cannot speak works (a ChatGPT subscription: Heartwood's sign-in and the Responses
//! API), no route's key or token enters the agent server, and every exchange is recorded in the
//! session's recording, which a replay route serves back. Only a caller that holds the relay's
//! random key (given to the agent server in its environment) is answered.
//!
//! A recording is matched by a digest of each request; OpenHands writes the project's folder
//! into its prompt, and a replay runs in a copy of the starting files elsewhere, so the digest
//! is taken with the project's path replaced by a placeholder (the model itself sees the path).

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use heartwood_agent::model::replay::Recorder;
use heartwood_agent::model::{
    ChatMessage, FunctionSpec, ModelClient, ModelReply, ModelRoute, ToolCall, ToolSpec,
};
use heartwood_openhands::Rendezvous;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::backend::BackendError;

/// The model name the agent server is told: a name its model library routes to plain chat
/// completions (a `gpt-5` name would send it to the Responses API, which the relay does not
/// serve); the route's own model is the relay's.
pub(super) const RELAYED_MODEL: &str = "heartwood-relay";

/// A running relay; it stops when dropped.
pub(super) struct ModelRelay {
    base_url: String,
    key: String,
    served: Arc<AtomicU64>,
    _stop: oneshot::Sender<()>,
}

/// What each request is answered with.
struct Relayed {
    client: ModelClient,
    authorization: String,
    /// The session's recording, continued.
    recorder: Arc<Mutex<Recorder>>,
    /// The project's folder, as the prompt names it.
    project: String,
    /// How many completions were answered: the agent server reports its usage once for each.
    served: Arc<AtomicU64>,
}

/// What stands for the project's folder in a request's digest.
const PROJECT_PLACEHOLDER: &str = "<project>";

impl ModelRelay {
    /// Starts a relay to `route` on the model socket of `rendezvous` (the server, in its own
    /// network namespace, reaches it at a loopback port its launcher forwards there), recording
    /// into `recording_dir` (the session's engine folder) the exchanges of the agent working
    /// in `project`.
    pub(super) async fn start(
        route: ModelRoute,
        recording_dir: &Path,
        project: &str,
        rendezvous: &Rendezvous,
    ) -> Result<ModelRelay, BackendError> {
        let client = ModelClient::new(route).map_err(BackendError::engine)?;
        let recorder = Recorder::open(recording_dir);
        // A replay reopened after a decision goes on after the calls it has served.
        client.replay_from(usize::try_from(recorder.calls()).unwrap_or(usize::MAX));
        let key = heartwood_openhands::server::session_key().map_err(BackendError::engine)?;
        let listener = tokio::net::UnixListener::bind(rendezvous.model_socket())
            .map_err(BackendError::engine)?;
        let served = Arc::new(AtomicU64::new(0));
        let relayed = Arc::new(Relayed {
            client,
            authorization: format!("Bearer {key}"),
            recorder: Arc::new(Mutex::new(recorder)),
            project: project.to_owned(),
            served: Arc::clone(&served),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/chat/completions", post(complete))
            .with_state(relayed);
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(ModelRelay {
            base_url: rendezvous.model_base_url(),
            key,
            served,
            _stop: stop,
        })
    }

    /// Where the agent server sends its completions.
    pub(super) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The key the agent server must present.
    pub(super) fn key(&self) -> &str {
        &self.key
    }

    /// How many completions this relay has answered.
    pub(super) fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }
}

/// One chat completion, answered through the route.
async fn complete(
    State(relayed): State<Arc<Relayed>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if presented != Some(relayed.authorization.as_str()) {
        return failure(
            StatusCode::UNAUTHORIZED,
            "this relay answers its agent server only",
        );
    }
    let messages = match messages_of(&body["messages"]) {
        Ok(messages) => messages,
        Err(why) => return failure(StatusCode::BAD_REQUEST, &why.to_string()),
    };
    let tools = tools_of(&body["tools"]);
    let placed = placeholder_for(&messages, &relayed.project);
    // A recording is matched by the placed request; a model is asked the real one.
    let replaying = relayed.client.route().replay.is_some();
    let asked = if replaying { &placed } else { &messages };
    let reply = match relayed.client.complete(asked, &tools, &mut |_| {}).await {
        Ok(reply) => reply,
        Err(e) => return failure(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    let recorder = Arc::clone(&relayed.recorder);
    let recorded = reply.clone();
    // A recording that cannot be written makes a replay impossible, not the run (a replay
    // says where its recording ends), so the run is answered either way.
    let _ = tokio::task::spawn_blocking(move || {
        recorder
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record("agent", &placed, &recorded)
    })
    .await;
    relayed.served.fetch_add(1, Ordering::SeqCst);
    if body["stream"] == json!(true) {
        streamed(&reply)
    } else {
        Json(completion(&reply)).into_response()
    }
}

/// `messages` with the project's folder replaced by a placeholder, for the recording's digest.
fn placeholder_for(messages: &[ChatMessage], project: &str) -> Vec<ChatMessage> {
    let place = |text: &str| text.replace(project, PROJECT_PLACEHOLDER);
    messages
        .iter()
        .map(|m| match m {
            ChatMessage::System { content } => ChatMessage::System {
                content: place(content),
            },
            ChatMessage::User { content } => ChatMessage::User {
                content: place(content),
            },
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => ChatMessage::Assistant {
                content: content.as_deref().map(place),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| ToolCall::new(&c.id, &c.function.name, &place(&c.function.arguments)))
                    .collect(),
            },
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => ChatMessage::Tool {
                tool_call_id: tool_call_id.clone(),
                content: place(content),
            },
        })
        .collect()
}

/// An OpenAI-style error answer.
fn failure(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "heartwood_relay"}});
    (status, Json(body)).into_response()
}

/// Why a relayed request's messages cannot be read (the answer's message).
#[derive(Debug, thiserror::Error)]
enum BadMessages {
    /// No `messages` list.
    #[error("the request has no messages")]
    Missing,
    /// A role the model client does not know.
    #[error("a message of an unknown role: {0:?}")]
    UnknownRole(Option<String>),
}

/// The request's messages in the model client's terms; a message's content may be text or a
/// list of text parts, as the agent server's model library sends either.
fn messages_of(messages: &Value) -> Result<Vec<ChatMessage>, BadMessages> {
    let Some(messages) = messages.as_array() else {
        return Err(BadMessages::Missing);
    };
    messages
        .iter()
        .map(|m| {
            let content = text_of(&m["content"]);
            Ok(match m["role"].as_str() {
                Some("system" | "developer") => ChatMessage::System { content },
                Some("user") => ChatMessage::User { content },
                Some("assistant") => ChatMessage::Assistant {
                    content: (!content.is_empty()).then_some(content),
                    tool_calls: serde_json::from_value(m["tool_calls"].clone()).unwrap_or_default(),
                },
                Some("tool") => ChatMessage::Tool {
                    tool_call_id: m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                    content,
                },
                other => return Err(BadMessages::UnknownRole(other.map(str::to_owned))),
            })
        })
        .collect()
}

/// Text content, or the text parts of a list joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The request's function tools.
fn tools_of(tools: &Value) -> Vec<ToolSpec> {
    let text = |v: &Value| Cow::Owned(v.as_str().unwrap_or_default().to_owned());
    tools
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "function")
        .map(|t| ToolSpec {
            kind: "function",
            function: FunctionSpec {
                name: text(&t["function"]["name"]),
                description: text(&t["function"]["description"]),
                parameters: t["function"]["parameters"].clone(),
            },
        })
        .collect()
}

/// The reply as a chat completion.
fn completion(reply: &ModelReply) -> Value {
    json!({
        "id": reply.response_id,
        "object": "chat.completion",
        "created": created(),
        "model": RELAYED_MODEL,
        "choices": [{
            "index": 0,
            "message": message(reply),
            "finish_reason": finish_reason(reply),
        }],
        "usage": usage(reply),
    })
}

/// The reply as a stream of one chunk, its end, and `[DONE]`.
fn streamed(reply: &ModelReply) -> Response {
    let mut delta = message(reply);
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        for (index, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(index);
        }
    }
    let chunk = |choice: Value, usage: Value| {
        json!({
            "id": reply.response_id, "object": "chat.completion.chunk", "created": created(),
            "model": RELAYED_MODEL, "choices": [choice], "usage": usage,
        })
    };
    let events = [
        chunk(
            json!({"index": 0, "delta": delta, "finish_reason": null}),
            Value::Null,
        ),
        chunk(
            json!({"index": 0, "delta": {}, "finish_reason": finish_reason(reply)}),
            usage(reply),
        ),
    ];
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

fn message(reply: &ModelReply) -> Value {
    let mut message = json!({"role": "assistant", "content": reply.content});
    if !reply.tool_calls.is_empty() {
        message["tool_calls"] = json!(reply.tool_calls.iter().map(call).collect::<Vec<_>>());
    }
    message
}

fn call(call: &ToolCall) -> Value {
    json!({"id": call.id, "type": "function",
        "function": {"name": call.function.name, "arguments": call.function.arguments}})
}

fn finish_reason(reply: &ModelReply) -> &'static str {
    if reply.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn usage(reply: &ModelReply) -> Value {
    let u = &reply.usage;
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
    })
}

fn created() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes the agent server's model library sends: text parts, an assistant turn with
    /// calls and no text, a tool result.
    #[test]
    fn a_requests_messages_and_tools_become_the_clients() {
        let messages = messages_of(&json!([
            {"role": "system", "content": [{"type": "text", "text": "Be brief.", "cache_control": {}}]},
            {"role": "user", "content": "count"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": [{"type": "text", "text": "3"}]},
        ]))
        .expect("messages");
        assert_eq!(
            messages,
            vec![
                ChatMessage::System {
                    content: "Be brief.".into()
                },
                ChatMessage::User {
                    content: "count".into()
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall::new("c1", "terminal", "{}")],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    content: "3".into()
                },
            ]
        );
        assert!(messages_of(&json!([{"role": "oracle", "content": "?"}])).is_err());
        let tools = tools_of(&json!([{"type": "function", "function": {
            "name": "terminal", "description": "Run.", "parameters": {"type": "object"}}}]));
        assert_eq!(tools[0].function.name, "terminal");
        assert_eq!(tools[0].function.parameters, json!({"type": "object"}));
    }
}
