//! Commands and typed text over HTTP (`POST api/sessions/{id}/commands` and `…/say`), and the
//! answer after the run settles when the request asks for it (`?wait=settled`). Their blocking
//! part (decoding, the gateway's journal append) runs on the blocking pool; the wait for the
//! run runs on the runtime, woken by the session's updates.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use heartwood_events::{Command, CommandId, Outcome, Receipt, SessionId, Suspended};
use heartwood_gateway::SessionGateway;
use serde_json::Value;

use crate::ingress::Admitted;
use crate::server::{AppState, failure, json_response, plain};

/// The longest a command waits for its run to settle (`?wait=settled`) before it answers with
/// its receipt anyway; the event stream keeps following the run.
const SETTLE_WAIT: Duration = Duration::from_secs(600);

/// What a request's blocking part answers: a response now, or a command's answer that waits
/// for its run to settle first.
pub(crate) enum Routed {
    /// Answer this.
    Now(Response),
    /// Wait for the run, then answer.
    Settle(Settling),
}

impl From<Response> for Routed {
    fn from(response: Response) -> Self {
        Routed::Now(response)
    }
}

/// An applied command whose answer waits for its run to settle.
pub(crate) struct Settling {
    session: SessionId,
    /// The receipts of the commands that led here, carried on a `202` suspension.
    receipts: Vec<Receipt>,
    /// The answer when the run does not stop for a decision.
    otherwise: Response,
}

/// Whether the request asked to wait for its run to settle (`?wait=settled`).
pub(crate) fn waits(admitted: &Admitted) -> bool {
    admitted
        .query
        .as_deref()
        .is_some_and(|q| q.split('&').any(|p| p == "wait=settled"))
}

/// Submits a command (`{"command_id"?, "type", ...}`) to session `id`; the session comes from the
/// path and the actor from the capability, never from the body.
pub(crate) fn submit(
    app: &Arc<AppState>,
    id: &str,
    body: &[u8],
    actor: &str,
    wait: bool,
) -> Routed {
    let session = match app.known(id) {
        Ok(id) => id,
        Err((status, why)) => return plain(status, &why).into(),
    };
    let mut value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("not JSON: {e}")).into(),
    };
    // The session comes from the path, never the body; a missing command id is minted here.
    // Everything else is read by the one command decoder, which refuses a newer format or an
    // unknown kind by name instead of reading it as this build's.
    let Some(object) = value.as_object_mut() else {
        return plain(
            StatusCode::BAD_REQUEST,
            "not a command: expected a JSON object",
        )
        .into();
    };
    object.insert("session".into(), Value::String(session.to_string()));
    if !object.contains_key("command_id") {
        let minted = SessionGateway::new_command_id();
        object.insert("command_id".into(), Value::String(minted.to_string()));
    }
    let command = match Command::decode(value.to_string().as_bytes()) {
        Ok(command) => command,
        Err(e) => {
            return plain(StatusCode::BAD_REQUEST, &format!("not a command: {e}")).into();
        }
    };
    match app.gateway.submit(command.acting_for(actor)) {
        Ok(receipt) => match receipt.outcome {
            Outcome::Refused { .. } => json_response(StatusCode::CONFLICT, &receipt).into(),
            Outcome::Applied { .. } => {
                let answer = json_response(StatusCode::OK, &receipt);
                settle_if(wait, session, vec![receipt], answer)
            }
        },
        Err(e) => failure(&e).into(),
    }
}

/// Typed text, which the gateway turns into a task, guidance, or guidance and resuming, as the
/// session stands (`{"text": …, "command_id"?: …}`). Answers the receipts; `409` when the last
/// was a refusal.
pub(crate) fn say(app: &Arc<AppState>, id: &str, body: &[u8], actor: &str, wait: bool) -> Routed {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Say {
        text: String,
        #[serde(default)]
        command_id: Option<String>,
    }
    let session = match app.known(id) {
        Ok(id) => id,
        Err((status, why)) => return plain(status, &why).into(),
    };
    let said: Say = match serde_json::from_slice(body) {
        Ok(s) => s,
        Err(e) => {
            return plain(StatusCode::BAD_REQUEST, &format!("not typed text: {e}")).into();
        }
    };
    let command_id = match said.command_id.as_deref().map(CommandId::parse) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return plain(StatusCode::BAD_REQUEST, &e.to_string()).into(),
        None => SessionGateway::new_command_id(),
    };
    let policy = Default::default();
    match app
        .gateway
        .say_for(&session, &said.text, policy, command_id, Some(actor))
    {
        Ok(receipts) => {
            let refused = receipts
                .last()
                .is_some_and(|r| matches!(r.outcome, Outcome::Refused { .. }));
            if refused {
                json_response(StatusCode::CONFLICT, &receipts).into()
            } else {
                let answer = json_response(StatusCode::OK, &receipts);
                settle_if(wait, session, receipts, answer)
            }
        }
        Err(e) => failure(&e).into(),
    }
}

/// `answer` now, or (when the request waits) after the run settles.
fn settle_if(wait: bool, session: SessionId, receipts: Vec<Receipt>, answer: Response) -> Routed {
    if wait {
        Routed::Settle(Settling {
            session,
            receipts,
            otherwise: answer,
        })
    } else {
        Routed::Now(answer)
    }
}

/// Waits until the run settles (or [`SETTLE_WAIT`] passes), then answers: `202` with the typed
/// [`Suspended`] set when the run stopped for a decision, else the command's own answer.
pub(crate) async fn settled_answer(app: &AppState, settling: Settling) -> Response {
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
        Err(e) => failure(&e),
    }
}
