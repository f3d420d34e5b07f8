//! The scripted server itself: axum on a loopback port chosen by the OS.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::{Fault, Script, ScriptedUsage, Turn};

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) record: bool,
    pub(crate) turns: VecDeque<Turn>,
    /// Scripts of their own for requests that carry a marker (see
    /// [`ScriptedModelServer::push_lane`]), in the order they were added.
    pub(crate) lanes: Vec<(String, VecDeque<Turn>)>,
    pub(crate) requests: Vec<Value>,
    pub(crate) authorizations: Vec<Option<String>>,
    pub(crate) served: usize,
    /// The sign-in service's state (see [`crate::chatgpt`]).
    pub(crate) sign_in: crate::chatgpt::SignInState,
}

pub(crate) type Shared = Arc<Mutex<Inner>>;

/// A running scripted model server. Dropping it stops the server.
pub struct ScriptedModelServer {
    addr: SocketAddr,
    inner: Shared,
    shutdown: Option<oneshot::Sender<()>>,
}

impl ScriptedModelServer {
    /// Starts serving `script` on `127.0.0.1` at a free port.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        Self::start_with(script, true).await
    }

    /// Like [`ScriptedModelServer::start`], but keeps no request bodies (for benchmarks, whose
    /// memory must be the engine's alone).
    pub async fn start_unrecorded(script: Script) -> std::io::Result<Self> {
        Self::start_with(script, false).await
    }

    async fn start_with(script: Script, record: bool) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let inner: Shared = Arc::new(Mutex::new(Inner {
            record,
            turns: script.turns.into(),
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/chat/completions", post(complete))
            // What an OpenAI-compatible service lists: the model the tests connect to, and one
            // more, so a choice is a choice.
            .route("/v1/models", axum::routing::get(models))
            // For tests in other languages (the notebook's pytest suite): what was asked.
            .route("/__heartwood/requests", axum::routing::get(recorded))
            .merge(crate::chatgpt::routes())
            .with_state(inner.clone());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(ScriptedModelServer {
            addr,
            inner,
            shutdown: Some(tx),
        })
    }

    /// The address of the ChatGPT-style sign-in service and Responses endpoint it also serves
    /// (`http://127.0.0.1:PORT`; see [`crate::chatgpt`]).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How long the access tokens it grants live, in seconds (default an hour), and after how
    /// many polls a device code is approved (default 2).
    pub fn set_sign_in(&self, token_lifetime_secs: u64, approve_after_polls: u32) {
        let mut inner = self.lock();
        inner.sign_in.token_lifetime_secs = Some(token_lifetime_secs);
        inner.sign_in.approve_after = Some(approve_after_polls);
    }

    /// What the sign-in service did: (device-code polls, code exchanges, refreshes).
    pub fn sign_in_counts(&self) -> (u32, u32, u32) {
        let s = &self.lock().sign_in;
        (s.polls, s.exchanges, s.refreshes)
    }

    /// The base URL to configure a client with (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }

    /// The `Authorization` header of every request, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.lock().authorizations.clone()
    }

    /// Turns not yet served.
    pub fn remaining_turns(&self) -> usize {
        self.lock().turns.len()
    }

    /// Appends more turns to the script.
    pub fn push_turns(&self, turns: impl IntoIterator<Item = Turn>) {
        self.lock().turns.extend(turns);
    }

    /// Gives the requests whose body contains `marker` a script of their own, so several
    /// sessions can talk to one server at once, each in its own order (a batch's items, whose
    /// tasks name them). A request matching no lane takes the main script's next turn.
    pub fn push_lane(&self, marker: &str, turns: impl IntoIterator<Item = Turn>) {
        let mut inner = self.lock();
        match inner.lanes.iter_mut().find(|(m, _)| m == marker) {
            Some((_, lane)) => lane.extend(turns),
            None => inner
                .lanes
                .push((marker.to_owned(), turns.into_iter().collect())),
        }
    }

    /// Turns not yet served in the lane of `marker`.
    pub fn remaining_in_lane(&self, marker: &str) -> usize {
        self.lock()
            .lanes
            .iter()
            .find(|(m, _)| m == marker)
            .map_or(0, |(_, lane)| lane.len())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for ScriptedModelServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// The models this server serves (`scripted` is the name the tests configure).
pub const SCRIPTED_MODELS: [&str; 2] = ["scripted", "scripted-large"];

async fn models() -> Response {
    let data: Vec<Value> = SCRIPTED_MODELS
        .iter()
        .map(|id| serde_json::json!({"id": id, "object": "model", "owned_by": "heartwood-testkit"}))
        .collect();
    axum::Json(serde_json::json!({"object": "list", "data": data})).into_response()
}

async fn recorded(State(inner): State<Shared>) -> Response {
    let requests = inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .requests
        .clone();
    axum::Json(requests).into_response()
}

/// Records a request (its body and `Authorization` header) and takes the next turn, with the
/// request's 1-based number.
pub(crate) fn take_turn(
    inner: &Shared,
    headers: &axum::http::HeaderMap,
    request: Value,
) -> (Option<Turn>, usize) {
    let lane = lane_of(inner, &request);
    let mut inner = inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    inner.served += 1;
    let turn = match lane {
        Some(i) => inner.lanes[i].1.pop_front(),
        None => None,
    };
    if inner.record {
        inner.requests.push(request);
        let auth = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        inner.authorizations.push(auth);
    }
    let turn = match (lane, turn) {
        (Some(_), turn) => turn,
        (None, _) => inner.turns.pop_front(),
    };
    (turn, inner.served)
}

/// The lane whose marker the request carries, if any (searched outside the lock: a request
/// body can be long).
fn lane_of(inner: &Shared, request: &Value) -> Option<usize> {
    let markers: Vec<String> = inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .lanes
        .iter()
        .map(|(m, _)| m.clone())
        .collect();
    if markers.is_empty() {
        return None;
    }
    let text = request.to_string();
    markers.iter().position(|m| text.contains(m.as_str()))
}

async fn complete(
    State(inner): State<Shared>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let streaming = request["stream"].as_bool().unwrap_or(false);
    let model = request["model"].as_str().unwrap_or("scripted").to_owned();
    let (turn, index) = take_turn(&inner, &headers, request);
    let Some(turn) = turn else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the scripted model has no turns left",
            None,
        );
    };
    match &turn.fault {
        Some(Fault::Status {
            status,
            body,
            retry_after_secs,
        }) => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = match body {
                Some(body) => (status, axum::Json(body.clone())).into_response(),
                None => error_response(status, "scripted failure", None),
            };
            if let Some(value) =
                retry_after_secs.and_then(|secs| HeaderValue::from_str(&secs.to_string()).ok())
            {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return response;
        }
        Some(Fault::Garbage) => {
            return (StatusCode::OK, "<html>this is not a chat completion</html>").into_response();
        }
        Some(Fault::Silent) => {
            // Bounded so a forgotten test cannot keep the server task alive for ever.
            tokio::time::sleep(Duration::from_secs(600)).await;
            return error_response(StatusCode::GATEWAY_TIMEOUT, "silent turn ended", None);
        }
        _ => {}
    }
    let id = format!("chatcmpl-scripted-{index}");
    if !streaming {
        // A slow reply is as slow unstreamed: the whole delay passes before the answer.
        if let Some(Fault::ChunkDelayMs(ms)) = turn.fault {
            let events = stream_events(&turn, &id, &model).len();
            tokio::time::sleep(Duration::from_millis(ms) * events as u32).await;
        }
        return axum::Json(completion(&turn, &id, &model)).into_response();
    }
    let events = stream_events(&turn, &id, &model);
    let (cut, delay) = match turn.fault {
        Some(Fault::CutAfterChunks(n)) => (Some(n), Duration::ZERO),
        Some(Fault::ChunkDelayMs(ms)) => (None, Duration::from_millis(ms)),
        _ => (None, Duration::ZERO),
    };
    let mut chunks: Vec<Bytes> = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        if cut == Some(i) {
            chunks.push(Bytes::from(event[..event.len() / 2].to_owned()));
            break;
        }
        chunks.push(Bytes::from(event));
    }
    let stream = futures_util::stream::unfold(chunks.into_iter(), move |mut rest| async move {
        let chunk = rest.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Some((Ok::<Bytes, std::io::Error>(chunk), rest))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

pub(crate) fn error_response(status: StatusCode, message: &str, code: Option<&str>) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "scripted", "code": code}})),
    )
        .into_response()
}

pub(crate) fn arguments_text(call: &crate::ScriptedCall) -> String {
    call.raw_arguments
        .clone()
        .unwrap_or_else(|| match &call.arguments {
            Value::Null => "{}".to_owned(),
            other => other.to_string(),
        })
}

fn usage_json(usage: &ScriptedUsage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    })
}

fn finish_reason(turn: &Turn) -> &'static str {
    if turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn call_id(id: &str, i: usize) -> String {
    format!("call_{}_{i}", id.rsplit('-').next().unwrap_or("0"))
}

fn completion(turn: &Turn, id: &str, model: &str) -> Value {
    let tool_calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            json!({"id": call_id(id, i), "type": "function", "function": {"name": call.name, "arguments": arguments_text(call)}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": turn.content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let mut out = json!({
        "id": id,
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(turn)}],
    });
    if let Some(usage) = &turn.usage {
        out["usage"] = usage_json(usage);
    }
    out
}

/// The whole event-stream body the server sends for `turn`: the fuzzer's seeds for the client's
/// stream decoder.
pub fn event_stream_body(turn: &Turn) -> String {
    stream_events(turn, "chatcmpl-seed", "scripted").concat()
}

/// The SSE events of a streamed reply: role, content in small pieces, each tool call in two
/// pieces (so clients must assemble by index), the finish reason, usage, and `[DONE]`.
fn stream_events(turn: &Turn, id: &str, model: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(content) = &turn.content {
        let chars: Vec<char> = content.chars().collect();
        for piece in chars.chunks(12) {
            events.push(chunk(
                json!({"content": piece.iter().collect::<String>()}),
                None,
            ));
        }
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let args = arguments_text(call);
        let split = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(args.len(), |(at, _)| at);
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call_id(id, i), "type": "function",
                                   "function": {"name": call.name, "arguments": &args[..split]}}]}),
            None,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": &args[split..]}}]}),
            None,
        ));
    }
    events.push(chunk(json!({}), Some(finish_reason(turn))));
    if let Some(usage) = &turn.usage {
        events.push(json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage_json(usage)}));
    }
    let mut out: Vec<String> = events
        .into_iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect();
    out.push("data: [DONE]\n\n".to_owned());
    out
}
