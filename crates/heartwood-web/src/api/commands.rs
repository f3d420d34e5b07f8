//! Commands and typed text over HTTP (`POST api/sessions/{session}/commands` and `…/say`), and
//! the answer after the run settles when the request asks for it (`?wait=settled`). Their
//! blocking part (decoding, the gateway's journal append) runs on the blocking pool; the wait
//! for the run runs on the runtime, woken by the session's updates.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use heartwood_events::{
    ActionPolicy, Command, CommandId, CommandKind, Outcome, Receipt, Refusal, RefusalClass,
    SessionId, Suspended,
};
use heartwood_gateway::SessionGateway;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::session_path::Session;
use super::{Route, act, answers, of};
use crate::answer::{failure, json_response, plain};
use crate::body::JsonBody;
use crate::server::{Actor, AppState};

/// The longest a command waits for its run to settle (`?wait=settled`) before it answers with
/// its receipt anyway; the event stream keeps following the run.
const SETTLE_WAIT: Duration = Duration::from_secs(600);

pub(super) fn routes() -> Vec<Route> {
    vec![
        act(
            "/api/sessions/{session}/commands",
            "Submits a command; a refusal answers its receipt with the status its kind maps to \
             (422 for input that cannot be used, 503 when the agent cannot be served, 409 for \
             the rest: the session moved on or does not take the command now), 202 with the \
             pending set when `wait=settled` and the run stops for a decision.",
            answers::<Receipt>(),
        )
        .query(of::<Wait>())
        .body(of::<CommandRequest>())
        .served_by(|| post(submit)),
        act(
            "/api/sessions/{session}/say",
            "Typed text: one `say` command, which the gateway decides as a task, guidance, or \
             guidance and resuming, as the session stands; answers its receipt in a list (a \
             refusal with the status its kind maps to, as for a command).",
            answers::<Vec<Receipt>>(),
        )
        .query(of::<Wait>())
        .body(of::<Said>())
        .served_by(|| post(say)),
    ]
}

/// Whether to answer at once or after the run settles.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Wait {
    /// `settled`: answer after the run stops (for a decision, or at rest), up to ten minutes.
    #[serde(default)]
    pub wait: Option<Settled>,
}

/// The one thing a request may wait for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    /// The run stopped.
    Settled,
}

/// A command as the API takes it: the session comes from the path and the actor from the
/// capability, never from the body; a missing command id is minted. Described, not decoded:
/// the body goes to the one command decoder ([`Command::decode`]), which names a newer format
/// or an unknown kind instead of reading it as this build's.
#[derive(Debug, JsonSchema)]
#[allow(dead_code)]
pub struct CommandRequest {
    /// The format version the sender used; absent means this build's.
    pub schema: Option<u32>,
    /// Chosen by the caller so a retry returns the original outcome; minted when absent.
    pub command_id: Option<CommandId>,
    /// What to do; its `type` tag sits beside the fields above.
    #[serde(flatten)]
    pub kind: CommandKind,
}

/// Typed text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Said {
    /// The researcher's words.
    pub text: String,
    /// Chosen by the caller so a retry returns the original outcome; minted when absent.
    #[serde(default)]
    pub command_id: Option<CommandId>,
}

/// A command applied whose answer waits for its run to settle.
struct Settling {
    session: SessionId,
    /// The receipts of the commands that led here, carried on a `202` suspension.
    receipts: Vec<Receipt>,
    /// The answer when the run does not stop for a decision.
    otherwise: Response,
}

/// What a request's blocking part answers: a response now, or one that waits for the run.
enum Routed {
    Now(Response),
    Settle(Settling),
}

/// Submits a command to the path's session. The body is read by the one command decoder,
/// which refuses a newer format or an unknown kind by name instead of reading it as this
/// build's.
async fn submit(
    State(app): State<Arc<AppState>>,
    Session(session): Session,
    Extension(Actor(actor)): Extension<Actor>,
    Query(wait): Query<Wait>,
    JsonBody(mut fields): JsonBody<Map<String, Value>>,
) -> Response {
    fields.insert("session".into(), Value::String(session.to_string()));
    if !fields.contains_key("command_id") {
        let minted = SessionGateway::new_command_id();
        fields.insert("command_id".into(), Value::String(minted.to_string()));
    }
    let blocking_app = Arc::clone(&app);
    let routed = tokio::task::spawn_blocking(move || {
        let command = match Command::decode(Value::Object(fields).to_string().as_bytes()) {
            Ok(command) => command,
            Err(e) => {
                return Routed::Now(plain(
                    StatusCode::BAD_REQUEST,
                    &format!("not a command: {e}"),
                ));
            }
        };
        match blocking_app
            .gateway
            .submit_blocking(command.acting_for(actor))
        {
            Ok(receipt) => match &receipt.outcome {
                Outcome::Refused(refusal) => {
                    Routed::Now(json_response(refused_status(refusal), &receipt))
                }
                Outcome::Applied { .. } => {
                    let answer = json_response(StatusCode::OK, &receipt);
                    settle_if(&wait, session, vec![receipt], answer)
                }
            },
            Err(e) => Routed::Now(failure(e)),
        }
    })
    .await;
    answered(&app, routed).await
}

/// Typed text to the path's session.
async fn say(
    State(app): State<Arc<AppState>>,
    Session(session): Session,
    Extension(Actor(actor)): Extension<Actor>,
    Query(wait): Query<Wait>,
    JsonBody(said): JsonBody<Said>,
) -> Response {
    let command_id = said
        .command_id
        .unwrap_or_else(SessionGateway::new_command_id);
    let blocking_app = Arc::clone(&app);
    let routed = tokio::task::spawn_blocking(move || {
        // Typed text is one command, decided by the gateway as what it means now.
        let kind = CommandKind::Say {
            text: said.text,
            policy: ActionPolicy::default(),
        };
        let command = Command::new(command_id, session.clone(), kind).acting_for(actor);
        match blocking_app
            .gateway
            .submit_blocking(command)
            .map(|r| vec![r])
        {
            Ok(receipts) => {
                let refused = receipts.last().and_then(|r| r.outcome.refusal());
                if let Some(refusal) = refused {
                    Routed::Now(json_response(refused_status(refusal), &receipts))
                } else {
                    let answer = json_response(StatusCode::OK, &receipts);
                    settle_if(&wait, session, receipts, answer)
                }
            }
            Err(e) => Routed::Now(failure(e)),
        }
    })
    .await;
    answered(&app, routed).await
}

/// The HTTP status a refusal answers with, by its kind: a client retries nothing on a 422 (the
/// input itself cannot be used), may retry a 503 once the agent can be served, and on a 409
/// looks at the session again (it moved on, or does not take the command now).
pub(crate) fn refused_status(refusal: &Refusal) -> StatusCode {
    match refusal.class() {
        RefusalClass::InvalidInput => StatusCode::UNPROCESSABLE_ENTITY,
        RefusalClass::AgentUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        RefusalClass::Stale
        | RefusalClass::NotNow
        | RefusalClass::NotEligible
        | RefusalClass::Other => StatusCode::CONFLICT,
    }
}

/// `answer` now, or (when the request waits) after the run settles.
fn settle_if(wait: &Wait, session: SessionId, receipts: Vec<Receipt>, answer: Response) -> Routed {
    match wait.wait {
        Some(Settled::Settled) => Routed::Settle(Settling {
            session,
            receipts,
            otherwise: answer,
        }),
        None => Routed::Now(answer),
    }
}

/// The blocking part's answer; one that waits for its run waits here, on the runtime, woken by
/// the session's updates (not on the blocking pool, where a long run would hold a thread).
async fn answered(app: &AppState, routed: Result<Routed, tokio::task::JoinError>) -> Response {
    match routed {
        Ok(Routed::Now(response)) => response,
        Ok(Routed::Settle(settling)) => settled_answer(app, settling).await,
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
    }
}

/// Waits until the run settles (or [`SETTLE_WAIT`] passes), then answers: `202` with the typed
/// [`Suspended`] set when the run stopped for a decision, else the command's own answer.
async fn settled_answer(app: &AppState, settling: Settling) -> Response {
    match app.gateway.settled(&settling.session, SETTLE_WAIT).await {
        Ok(snapshot) => match Suspended::of(&snapshot.projection) {
            Some(suspended) => json_response(
                StatusCode::ACCEPTED,
                &Suspended {
                    receipts: settling.receipts,
                    ..suspended
                },
            ),
            None => settling.otherwise,
        },
        Err(e) => failure(e),
    }
}
