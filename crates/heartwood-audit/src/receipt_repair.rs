//! Rebuilding `receipts.jsonl` from the hash chain when it is damaged (`heartwood sessions
//! recover`): receipts that agree with the chain are kept, missing ones are made again.

use std::collections::HashMap;

use heartwood_events::{
    CommandId, Outcome, Receipt, RecordedEvent, Seq, SessionId, to_canonical_bytes,
};
use serde_json::Value;

use crate::error::IoContext;
use crate::intent::IntentFile;
use crate::lease::WriterLease;
use crate::verify::Tree;
use crate::{AuditError, SessionPaths, durable};

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
    crate::recovery::recover(id, paths, &mut intent)?;
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
