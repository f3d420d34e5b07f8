//! Commands relayed between replicas through the store, and the store's notifications.
//!
//! A replica that receives a command for a session another replica drives posts it to the
//! command table, addressed to the lease holder, and waits for the reply; the holder listens
//! for commands addressed to it, takes each exactly once, runs it through its own gateway and
//! writes the reply. The bytes are opaque here (the gateway's typed commands and receipts):
//! this crate never interprets them. Every commit to a journal is announced on
//! [`JOURNAL_CHANNEL`](super::rows::JOURNAL_CHANNEL), which is what feeds event streams on
//! replicas that do not drive the session.

use std::time::{Duration, Instant};

use heartwood_events::SessionId;
use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;

use super::SharedStore;
use crate::AuditError;

const COMMANDS_CHANNEL: &str = "heartwood_commands";
const REPLIES_CHANNEL: &str = "heartwood_replies";

/// A command another replica posted for a session this one drives.
#[derive(Debug, Clone)]
pub struct RelayedCommand {
    /// The command's row, to which the reply is written.
    pub id: i64,
    /// The session it is for.
    pub session: SessionId,
    /// The command, as the posting replica encoded it.
    pub command: Vec<u8>,
}

/// What became of a relayed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relayed {
    /// The holder's reply.
    Reply(Vec<u8>),
    /// No reply in time, from a holder that still holds the lease.
    NoReply,
    /// The holder let go of the lease, or lost it (it died, say), before answering; the
    /// command was withdrawn unless the holder had taken it.
    HolderGone,
}

/// A connection that listens for the store's notifications.
pub struct Relays {
    store: SharedStore,
    client: super::Conn,
}

impl std::fmt::Debug for Relays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relays")
            .field("store", &self.store)
            .finish()
    }
}

/// What the store announced on a listening connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A session's journal committed an append ending with event `last_seq`.
    Journal {
        /// The session whose journal moved.
        session: SessionId,
        /// The last event of the committed append.
        last_seq: u64,
    },
    /// A command was posted or answered: the command table is worth a look.
    Commands,
}

impl Notice {
    fn read(channel: &str, payload: &str) -> Option<Notice> {
        match channel {
            super::rows::JOURNAL_CHANNEL => {
                let (session, last_seq) = payload.split_once(' ')?;
                Some(Notice::Journal {
                    session: SessionId::parse(session).ok()?,
                    last_seq: last_seq.parse().ok()?,
                })
            }
            COMMANDS_CHANNEL | REPLIES_CHANNEL => Some(Notice::Commands),
            _ => None,
        }
    }
}

impl Relays {
    /// Waits up to `wait` for notifications, returning each it can read. An empty list: none
    /// came (the caller looks at the tables anyway; a notification is a hint, and one can be
    /// lost while the connection is down).
    pub fn wait(&mut self, wait: Duration) -> Result<Vec<Notice>, AuditError> {
        let Relays { store, client } = self;
        super::off_runtime(move || wait_here(store, client, wait))
    }
}

fn wait_here(
    store: &SharedStore,
    client: &mut Client,
    wait: Duration,
) -> Result<Vec<Notice>, AuditError> {
    let mut got = Vec::new();
    let mut notes = client.notifications();
    let first = notes.timeout_iter(wait).next();
    match first {
        Ok(Some(n)) => got.extend(Notice::read(n.channel(), n.payload())),
        Ok(None) => return Ok(got),
        Err(e) => return Err(store.unavailable(e)),
    }
    // Whatever else has arrived already.
    let mut rest = notes.iter();
    while let Ok(Some(n)) = rest.next() {
        got.extend(Notice::read(n.channel(), n.payload()));
    }
    Ok(got)
}

impl SharedStore {
    /// A connection listening on the journal's announcements and the commands for this
    /// replica: what a replica's relay and its event streams wait on.
    pub fn listen(&self) -> Result<Relays, AuditError> {
        let mut client = self.connect()?;
        let listening = format!(
            "LISTEN {}; LISTEN {COMMANDS_CHANNEL}; LISTEN {REPLIES_CHANNEL}",
            super::rows::JOURNAL_CHANNEL
        );
        let conn = &mut *client;
        super::off_runtime(move || {
            conn.batch_execute(&listening)
                .map_err(|e| self.unavailable(e))
        })?;
        Ok(Relays {
            store: self.clone(),
            client,
        })
    }

    /// Posts `command` for session `session` to the replica `holder` and waits up to `wait`
    /// for its reply, or until `holder` no longer holds the session. Without a reply the
    /// holder may still run it: a retry with the same command id is answered once.
    pub fn relay(
        &self,
        session: &SessionId,
        holder: &str,
        command: &[u8],
        wait: Duration,
    ) -> Result<Relayed, AuditError> {
        let mut relays = self.listen()?;
        let id: i64 = self.with_client(|c| {
            let row = c.query_one(
                "INSERT INTO heartwood_commands (session, holder, command) VALUES ($1, $2, $3) \
                 RETURNING id",
                &[&session.as_str(), &holder, &command],
            )?;
            c.execute("SELECT pg_notify($1, $2)", &[&COMMANDS_CHANNEL, &holder])?;
            Ok(row.get(0))
        })?;
        let deadline = Instant::now() + wait;
        loop {
            let reply = self.with_client(|c| {
                c.query_opt(
                    "DELETE FROM heartwood_commands WHERE id = $1 AND reply IS NOT NULL \
                     RETURNING reply",
                    &[&id],
                )
            })?;
            if let Some(row) = reply {
                return Ok(Relayed::Reply(row.get(0)));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let gone = self.lease_holder(session)?.as_deref() != Some(holder);
            if left.is_zero() || gone {
                // Withdrawn unless it was taken: a command nobody ran is never run late.
                let _ = self.with_client(|c| {
                    c.execute(
                        "DELETE FROM heartwood_commands WHERE id = $1 AND NOT taken",
                        &[&id],
                    )
                });
                return Ok(if gone {
                    Relayed::HolderGone
                } else {
                    Relayed::NoReply
                });
            }
            // The reply's notification wakes this early; the poll above is what decides.
            relays.wait(left.min(Duration::from_millis(250)))?;
        }
    }

    /// Takes the commands waiting for this replica, each exactly once.
    pub fn take_commands(&self) -> Result<Vec<RelayedCommand>, AuditError> {
        let rows = self.with_client(|c| {
            c.query(
                "UPDATE heartwood_commands SET taken = true WHERE id IN \
                 (SELECT id FROM heartwood_commands WHERE holder = $1 AND NOT taken \
                  ORDER BY id FOR UPDATE SKIP LOCKED) \
                 RETURNING id, session, command",
                &[&self.holder()],
            )
        })?;
        let mut taken: Vec<RelayedCommand> = rows
            .into_iter()
            .filter_map(|row| {
                Some(RelayedCommand {
                    id: row.get(0),
                    session: SessionId::parse(row.get::<_, &str>(1)).ok()?,
                    command: row.get(2),
                })
            })
            .collect();
        taken.sort_by_key(|c| c.id);
        Ok(taken)
    }

    /// Writes the reply to relayed command `id`, waking the replica that posted it.
    pub fn answer(&self, id: i64, reply: &[u8]) -> Result<(), AuditError> {
        self.with_client(|c| {
            c.execute(
                "UPDATE heartwood_commands SET reply = $2 WHERE id = $1",
                &[&id, &reply],
            )?;
            c.execute(
                "SELECT pg_notify($1, $2)",
                &[&REPLIES_CHANNEL, &id.to_string()],
            )
            .map(|_| ())
        })
    }
}
