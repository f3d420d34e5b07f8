//! `receipts.jsonl`: one canonical [`Receipt`] per completed command, loaded into a map so a
//! retried command id is answered from its first outcome, checked against the chain by
//! verification (rebuilding it from the chain is `receipt_repair`'s).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use heartwood_events::{CommandId, Outcome, Receipt, SessionId};

use crate::error::IoContext;
use crate::layout::RECEIPTS_FILE;
use crate::line::{Line, read_line};
use crate::{AuditError, Damage, DamageKind, MAX_LINE_BYTES};

/// Every command named on an event, with the sequence number of its last event.
pub(crate) type Commands = std::collections::HashMap<String, u64>;

/// The read buffer for `receipts.jsonl`.
pub(crate) const RECEIPTS_BUF: usize = 64 * 1024;

/// Loads every receipt; any damaged line refuses the whole file.
pub(crate) fn load(
    id: &SessionId,
    path: &Path,
) -> Result<(HashMap<CommandId, Receipt>, u64), AuditError> {
    let mut map = HashMap::new();
    let reader = crate::durable::read_or_empty(path, RECEIPTS_BUF)?;
    let len = each(id, path, reader, |_, receipt| {
        map.insert(receipt.command_id.clone(), receipt);
        Ok(())
    })?;
    Ok((map, len))
}

/// Checks that the receipts agree with the chain: every command named on an event has exactly
/// one receipt, which says it applied and ends at that command's last event; no receipt claims
/// events the chain does not give it. `commands` maps each command on an event to its last
/// event's sequence number.
/// `receipts` reads the file (or what it will hold once an interrupted append is completed);
/// `path` names it in errors.
pub(crate) fn check(
    id: &SessionId,
    path: &Path,
    receipts: crate::durable::Source,
    commands: &Commands,
) -> Result<(), AuditError> {
    let mut seen: HashSet<CommandId> = HashSet::new();
    let mut lines = 0;
    each(id, path, receipts, |line, receipt| {
        lines = line;
        let command = receipt.command_id.as_str();
        let damaged = |what: String| damage(id, line, what, DamageKind::Modification);
        if !seen.insert(receipt.command_id.clone()) {
            return Err(damaged(format!("a second receipt for command {command:?}")));
        }
        match disagreement(&receipt, commands) {
            Some(what) => Err(damaged(what)),
            None => Ok(()),
        }
    })?;
    let missing = commands
        .iter()
        .filter(|(command, _)| CommandId::parse(command).map_or(true, |c| !seen.contains(&c)))
        .min_by_key(|(_, last)| **last);
    if let Some((command, last)) = missing {
        return Err(damage(
            id,
            lines + 1,
            format!(
                "command {command:?} (last event {last}) has no receipt: receipts.jsonl was cut \
                 short, edited or deleted"
            ),
            DamageKind::Modification,
        ));
    }
    Ok(())
}

/// How `receipt` contradicts the chain (`commands`: each command named on an event, with its
/// last event), or `None` when it agrees: an applied receipt ends at its command's last event,
/// and a receipt that recorded nothing names a command no event carries.
pub(crate) fn disagreement(receipt: &Receipt, commands: &Commands) -> Option<String> {
    let command = receipt.command_id.as_str();
    let on_events = commands.get(command).copied();
    let last_seq = match &receipt.outcome {
        Outcome::Applied { last_seq, .. } => last_seq.map(|s| s.get()),
        Outcome::Refused(_) => None,
    };
    match (last_seq, on_events) {
        (Some(s), Some(last)) if s == last => None,
        (Some(s), Some(last)) => Some(format!(
            "the receipt of command {command:?} ends at event {s}, but the command's last event \
             is {last}"
        )),
        (Some(s), None) => Some(format!(
            "the receipt of command {command:?} names event {s}, which the command did not \
             record"
        )),
        (None, Some(last)) => Some(format!(
            "the receipt of command {command:?} says it recorded nothing, but event {last} \
             carries it"
        )),
        (None, None) => None,
    }
}

fn damage(id: &SessionId, line: u64, what: String, kind: DamageKind) -> AuditError {
    AuditError::Damaged {
        id: id.clone(),
        damage: Damage {
            file: RECEIPTS_FILE,
            line,
            what,
            kind,
        },
    }
}

/// Calls `f` with each receipt and its line number; returns the bytes read. Any damaged line
/// stops with the damage, a torn last line as a torn tail.
fn each(
    id: &SessionId,
    path: &Path,
    mut reader: crate::durable::Source,
    mut f: impl FnMut(u64, Receipt) -> Result<(), AuditError>,
) -> Result<u64, AuditError> {
    let mut buf = Vec::new();
    let mut len = 0u64;
    for line_no in 1u64.. {
        match read_line(&mut reader, &mut buf, MAX_LINE_BYTES).ctx("read", path)? {
            Line::End => break,
            Line::Unterminated => {
                return Err(damage(
                    id,
                    line_no,
                    "receipt line is incomplete".into(),
                    DamageKind::TornTail,
                ));
            }
            Line::TooLong => {
                return Err(damage(
                    id,
                    line_no,
                    "line exceeds the size limit".into(),
                    DamageKind::Modification,
                ));
            }
            Line::Complete => {}
        }
        let receipt: Receipt = serde_json::from_slice(&buf).map_err(|e| {
            damage(
                id,
                line_no,
                format!("receipt is not valid ({e})"),
                DamageKind::Modification,
            )
        })?;
        len += buf.len() as u64 + 1;
        f(line_no, receipt)?;
    }
    Ok(len)
}
