//! `receipts.jsonl`: one canonical [`Receipt`] per completed command, loaded into a map so a
//! retried command id is answered from its first outcome, checked against the chain by
//! verification, and rebuilt from the chain by recovery when it is damaged.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use heartwood_events::{
    CommandId, Outcome, Receipt, RecordedEvent, Seq, SessionId, to_canonical_bytes,
};
use serde_json::Value;

use crate::error::IoContext;
use crate::intent::IntentFile;
use crate::layout::RECEIPTS_FILE;
use crate::lease::WriterLease;
use crate::line::{Line, read_line};
use crate::verify::{Commands, Tree};
use crate::{AuditError, Damage, DamageKind, MAX_LINE_BYTES, SessionPaths, durable};

/// Loads every receipt; any damaged line refuses the whole file.
pub(crate) fn load(
    id: &SessionId,
    path: &Path,
) -> Result<(HashMap<CommandId, Receipt>, u64), AuditError> {
    let mut map = HashMap::new();
    let len = each(id, path, |_, receipt| {
        map.insert(receipt.command_id.clone(), receipt);
        Ok(())
    })?;
    Ok((map, len))
}

/// Checks that the receipts agree with the chain: every command named on an event has exactly
/// one receipt, which says it applied and ends at that command's last event; no receipt claims
/// events the chain does not give it. `commands` maps each command on an event to its last
/// event's sequence number.
pub(crate) fn check(id: &SessionId, path: &Path, commands: &Commands) -> Result<(), AuditError> {
    let mut seen: HashSet<CommandId> = HashSet::new();
    let mut lines = 0;
    each(id, path, |line, receipt| {
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
        Outcome::Refused { .. } => None,
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
    mut f: impl FnMut(u64, Receipt) -> Result<(), AuditError>,
) -> Result<u64, AuditError> {
    let mut reader = crate::durable::read_or_empty(path, 64 * 1024)?;
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

/// A receipt made again from the chain: what the caller's `describe` knows of a command from
/// its last event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuiltReceipt {
    /// The command's type.
    pub command_type: String,
    /// Its result.
    pub result: Value,
    /// The digest of what it said, when the event shows it whole.
    pub content_sha256: Option<String>,
}

/// What rebuilding a session's receipts did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReceiptRepair {
    /// Receipts kept as they were: whole, valid and in agreement with the chain.
    pub kept: usize,
    /// Receipts made again from the chain for commands that had none.
    pub rebuilt: usize,
    /// Lines dropped: torn, not a receipt, repeated, or contradicting the chain.
    pub dropped: usize,
}

/// Rebuilds `receipts.jsonl` from the chain, under the session's lease: an interrupted append
/// is completed first and the chain must verify; whole receipts that agree with the chain are
/// kept; every command named on an event that has no receipt gets one, its type and result
/// from `describe` applied to the command's last event. Refusals are not in the chain: a lost
/// refusal means a retry of that command id is considered afresh.
pub(crate) fn repair(
    id: &SessionId,
    paths: &SessionPaths,
    describe: &dyn Fn(&RecordedEvent) -> Option<RebuiltReceipt>,
) -> Result<ReceiptRepair, AuditError> {
    let _lease = WriterLease::acquire(id, paths)?;
    let (mut intent, _) = IntentFile::open(&paths.journal)?;
    crate::writer::recover(id, paths, &mut intent)?;
    let (_, _, commands) = crate::verify::verify_chain(id, paths, None, Tree::Skip)?;
    let bytes = match std::fs::read(&paths.receipts) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).ctx("read", &paths.receipts),
    };
    let mut report = ReceiptRepair::default();
    let mut kept: HashMap<CommandId, Receipt> = HashMap::new();
    let mut out = Vec::new();
    let mut lines = bytes.split_inclusive(|b| *b == b'\n');
    for line in lines.by_ref() {
        let receipt = line
            .strip_suffix(b"\n")
            .and_then(|l| serde_json::from_slice::<Receipt>(l).ok());
        let agrees = receipt.as_ref().is_some_and(|r| {
            !kept.contains_key(&r.command_id)
                && crate::receipts::disagreement(r, &commands).is_none()
        });
        match receipt {
            Some(receipt) if agrees => {
                out.extend_from_slice(line);
                kept.insert(receipt.command_id.clone(), receipt);
                report.kept += 1;
            }
            _ => report.dropped += 1,
        }
    }
    let mut missing: Vec<(&String, u64)> = commands
        .iter()
        .filter(|(c, _)| CommandId::parse(c).is_ok_and(|c| !kept.contains_key(&c)))
        .map(|(c, last)| (c, *last))
        .collect();
    if !missing.is_empty() {
        missing.sort_by_key(|(_, last)| *last);
        let reader = crate::SessionReader::open(id, paths.clone())?;
        let events = reader.events()?;
        for (command, last) in missing {
            let event = usize::try_from(last - 1)
                .ok()
                .and_then(|i| events.get(i))
                .and_then(|e| e.as_ref().ok());
            let rebuilt = event.and_then(describe).unwrap_or(RebuiltReceipt {
                command_type: "unknown".to_owned(),
                result: Value::Null,
                content_sha256: None,
            });
            let Ok(command_id) = CommandId::parse(command) else {
                continue;
            };
            let mut receipt = Receipt::new(
                command_id,
                &rebuilt.command_type,
                Outcome::Applied {
                    last_seq: Seq::new(last).ok(),
                    result: rebuilt.result,
                },
            );
            receipt.content_sha256 = rebuilt.content_sha256;
            if let Some(event) = event {
                receipt.time = event.time.clone();
            }
            out.extend_from_slice(&to_canonical_bytes(&receipt)?);
            out.push(b'\n');
            report.rebuilt += 1;
        }
    }
    durable::write_atomic(&paths.receipts, &out)?;
    Ok(report)
}
