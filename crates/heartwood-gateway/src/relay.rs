//! Commands between replicas that share a PostgreSQL session store.
//!
//! A replica asked to act on a session another replica drives (holds its lease) cannot open
//! it: it posts the typed command to the store's command table, addressed to the holder, and
//! waits for the holder's receipt ([`forward`]). Each replica runs one thread ([`serve`]) that
//! listens for commands addressed to it and submits them through its own gateway, exactly as
//! if they had arrived there; the command id keeps a retry from acting twice. The same thread
//! passes on the store's announcements of journal commits, which wake this replica's
//! followers of those sessions (see `follow`). This is the
//! shared store's counterpart of the local command channel (`channel/`), which only reaches
//! processes on the same machine.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use heartwood_audit::SharedStore;
use heartwood_audit::shared::{Notice, Relayed};
use heartwood_events::{Command, Receipt, SessionId};
use serde::{Deserialize, Serialize};

use crate::channel::Served;
use crate::{ErrorKind, GatewayError};

/// How long a forwarded command waits for the driving replica's receipt: longer than a
/// journal append and a lease renewal, shorter than a browser gives up.
const REPLY_WAIT: Duration = Duration::from_secs(20);

/// How often the relay thread looks at the table without a notification (a lost
/// notification, a store that came back) and whether its gateway still exists.
const POLL: Duration = Duration::from_secs(1);

/// The holder's answer, as it travels through the store.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Receipt(Receipt),
    Refused { kind: ErrorKind, message: String },
}

/// What forwarding a command came to.
pub(crate) enum Forwarded {
    /// The driving replica's receipt.
    Answered(Box<Receipt>),
    /// No replica drives the session now (its driver let go, or died and its lease expired):
    /// the caller opens it itself.
    Free,
}

/// Sends `command` to the replica that drives its session and returns that replica's
/// receipt. `owned` is the error that said the session is driven elsewhere: it is the answer
/// when the driver holds on but does not reply in time (a retry is answered once).
pub(crate) fn forward(
    shared: &SharedStore,
    command: &Command,
    owned: GatewayError,
) -> Result<Forwarded, GatewayError> {
    let Some(holder) = shared.lease_holder(&command.session)? else {
        return Ok(Forwarded::Free);
    };
    let bytes = serde_json::to_vec(command).map_err(|e| GatewayError::Forwarded {
        kind: ErrorKind::Invalid,
        message: format!("the command cannot be encoded: {e}"),
    })?;
    let reply = match shared.relay(&command.session, &holder, &bytes, REPLY_WAIT)? {
        Relayed::Reply(reply) => reply,
        Relayed::HolderGone => return Ok(Forwarded::Free),
        Relayed::NoReply => return Err(owned),
    };
    match serde_json::from_slice::<Reply>(&reply) {
        Ok(Reply::Receipt(receipt)) => Ok(Forwarded::Answered(Box::new(receipt))),
        Ok(Reply::Refused { kind, message }) => Err(GatewayError::Forwarded { kind, message }),
        Err(e) => Err(GatewayError::Forwarded {
            kind: ErrorKind::Io,
            message: format!("the driving replica's answer cannot be read: {e}"),
        }),
    }
}

/// Starts the thread that runs the commands other replicas forward to this one, for as long
/// as the gateway lives.
pub(crate) fn serve(store: SharedStore, gateway: Weak<dyn Served>) {
    let _ = std::thread::Builder::new()
        .name("heartwood-relay".into())
        .spawn(move || run(&store, &gateway));
}

fn run(store: &SharedStore, gateway: &Weak<dyn Served>) {
    let mut listening = None;
    while gateway.strong_count() > 0 {
        // Commits announced while nobody listened were not heard: followers look again.
        let listens_again = listening.is_none() && {
            listening = store.listen().ok();
            listening.is_some()
        };
        let notices = match listening.as_mut() {
            Some(relays) => relays.wait(POLL),
            None => {
                // The store is away: look again after a pause, as a notification would.
                std::thread::sleep(POLL);
                Ok(Vec::new())
            }
        };
        let notices = notices.unwrap_or_else(|_| {
            listening = None;
            Vec::new()
        });
        let Some(shared) = gateway.upgrade() else {
            return;
        };
        let moved: BTreeSet<&SessionId> = notices
            .iter()
            .filter_map(|notice| match notice {
                Notice::Journal { session, .. } => Some(session),
                Notice::Commands => None,
            })
            .collect();
        if listens_again {
            shared.journal_moved(None);
        }
        for session in moved {
            shared.journal_moved(Some(session));
        }
        let Ok(commands) = store.take_commands() else {
            continue;
        };
        for relayed in commands {
            let reply = answer(Arc::clone(&shared), &relayed.session, &relayed.command);
            let bytes = serde_json::to_vec(&reply).unwrap_or_default();
            let _ = store.answer(relayed.id, &bytes);
        }
    }
}

fn answer(shared: Arc<dyn Served>, session: &SessionId, bytes: &[u8]) -> Reply {
    let command = match serde_json::from_slice::<Command>(bytes) {
        Ok(command) if &command.session == session => command,
        Ok(_) | Err(_) => {
            return Reply::Refused {
                kind: ErrorKind::Invalid,
                message: "a relayed command that does not name its session".into(),
            };
        }
    };
    match shared.submit(command) {
        Ok(receipt) => Reply::Receipt(receipt),
        Err(e) => Reply::Refused {
            kind: e.kind(),
            message: e.to_string(),
        },
    }
}
