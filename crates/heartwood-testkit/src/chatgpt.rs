//! ChatGPT's sign-in service and Responses endpoint, as the scripted server plays them: the
//! device-code dialect Codex CLI uses (`/api/accounts/deviceauth/usercode`, then
//! `/api/accounts/deviceauth/token` polled until approved, then `/oauth/token` exchanging the
//! authorization code with the server-minted PKCE verifier; `/oauth/token` also refreshes), and
//! `POST /backend-api/codex/responses` answering each request with the script's next turn as a
//! Responses API event stream.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use serde_json::{Value, json};

use crate::Turn;
use crate::server::{Shared, arguments_text, error_response, take_turn};

/// The account id the tokens name.
pub const ACCOUNT_ID: &str = "acct-scripted";
/// The email the id token names.
pub const EMAIL: &str = "researcher@example.org";
/// The user code shown for the device.
pub const USER_CODE: &str = "HWTK-2718";

/// What the sign-in service has done and will do.
#[derive(Debug, Default)]
pub(crate) struct SignInState {
    pub(crate) polls: u32,
    pub(crate) exchanges: u32,
    pub(crate) refreshes: u32,
    pub(crate) token_lifetime_secs: Option<u64>,
    pub(crate) approve_after: Option<u32>,
}

pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/accounts/deviceauth/usercode", post(user_code))
        .route("/api/accounts/deviceauth/token", post(device_token))
        .route("/oauth/token", post(oauth_token))
        .route("/backend-api/codex/responses", post(responses))
}

async fn user_code(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if request["client_id"].as_str().is_none_or(str::is_empty) {
        return error_response(StatusCode::BAD_REQUEST, "client_id missing", None);
    }
    // OpenAI's service sends the interval as a string.
    axum::Json(json!({"device_auth_id": "dev-1", "user_code": USER_CODE, "interval": "1"}))
        .into_response()
}

async fn device_token(State(inner): State<Shared>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if request["device_auth_id"] != "dev-1" || request["user_code"] != USER_CODE {
        return error_response(StatusCode::BAD_REQUEST, "unknown device", None);
    }
    let mut inner = inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    inner.sign_in.polls += 1;
    if inner.sign_in.polls < inner.sign_in.approve_after.unwrap_or(2) {
        return StatusCode::FORBIDDEN.into_response();
    }
    axum::Json(
        json!({"authorization_code": "code-1", "code_verifier": "verifier-1",
                      "code_challenge": "challenge-1"}),
    )
    .into_response()
}

async fn oauth_token(State(inner): State<Shared>, body: Bytes) -> Response {
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    };
    let mut inner = inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let lifetime = inner.sign_in.token_lifetime_secs.unwrap_or(3600);
    let generation = match field("grant_type") {
        "authorization_code"
            if field("code") == "code-1" && field("code_verifier") == "verifier-1" =>
        {
            inner.sign_in.exchanges += 1;
            0
        }
        "refresh_token" if field("refresh_token").starts_with("refresh-") => {
            inner.sign_in.refreshes += 1;
            inner.sign_in.refreshes
        }
        _ => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                Some("invalid_grant"),
            );
        }
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let auth = json!({"chatgpt_account_id": ACCOUNT_ID, "chatgpt_plan_type": "plus"});
    let access = jwt(&json!({"exp": now + lifetime, "https://api.openai.com/auth": auth}));
    let id = jwt(&json!({"email": EMAIL, "https://api.openai.com/auth": auth}));
    axum::Json(json!({
        "access_token": format!("{access}"),
        "refresh_token": format!("refresh-{generation}"),
        "id_token": id,
        "expires_in": lifetime,
        "token_type": "Bearer",
    }))
    .into_response()
}

/// An unsigned token with `claims` (the client reads claims; it does not verify signatures,
/// the service that issued it does).
fn jwt(claims: &Value) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.sig",
        b64.encode(br#"{"alg":"none"}"#),
        b64.encode(claims.to_string())
    )
}

async fn responses(
    State(inner): State<Shared>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (turn, index) = take_turn(&inner, &headers, request);
    let Some(turn) = turn else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the scripted model has no turns left",
            None,
        );
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(
            response_events(&turn, &format!("resp_{index}")).concat(),
        ))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The Responses API events of a streamed reply: created, text deltas, each function call as a
/// finished output item, and completed with usage.
fn response_events(turn: &Turn, id: &str) -> Vec<String> {
    let event = |kind: &str, data: Value| {
        let mut data = data;
        data["type"] = json!(kind);
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let mut events = vec![event("response.created", json!({"response": {"id": id}}))];
    if let Some(content) = &turn.content {
        let chars: Vec<char> = content.chars().collect();
        for piece in chars.chunks(12) {
            events.push(event(
                "response.output_text.delta",
                json!({"delta": piece.iter().collect::<String>()}),
            ));
        }
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        events.push(event(
            "response.output_item.done",
            json!({"item": {"type": "function_call", "call_id": format!("call_{id}_{i}"),
                            "name": call.name, "arguments": arguments_text(call)}}),
        ));
    }
    let usage = turn.usage.as_ref().map_or(json!(null), |u| {
        json!({"input_tokens": u.prompt_tokens, "output_tokens": u.completion_tokens,
               "input_tokens_details": {"cached_tokens": u.cached_tokens},
               "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens}})
    });
    events.push(event(
        "response.completed",
        json!({"response": {"id": id, "status": "completed", "usage": usage}}),
    ));
    events
}
