//! `receipts.jsonl`: one canonical [`Receipt`] per completed command, loaded into a map so a
//! retried command id is answered from its first outcome.

use std::collections::HashMap;
use std::path::Path;

use heartwood_events::{CommandId, Receipt, SessionId};

use crate::error::IoContext;
use crate::layout::RECEIPTS_FILE;
use crate::line::{Line, read_line};
use crate::{AuditError, Damage, DamageKind, MAX_LINE_BYTES};

/// Loads every receipt; any damaged line refuses the whole file.
pub(crate) fn load(
    id: &SessionId,
    path: &Path,
) -> Result<(HashMap<CommandId, Receipt>, u64), AuditError> {
    let mut map = HashMap::new();
    let mut reader = crate::durable::read_or_empty(path, 64 * 1024)?;
    let mut buf = Vec::new();
    let mut len = 0u64;
    for line_no in 1u64.. {
        let damage = |what: String, kind| AuditError::Damaged {
            id: id.clone(),
            damage: Damage {
                file: RECEIPTS_FILE,
                line: line_no,
                what,
                kind,
            },
        };
        match read_line(&mut reader, &mut buf, MAX_LINE_BYTES).ctx("read", path)? {
            Line::End => break,
            Line::Unterminated => {
                return Err(damage(
                    "receipt line is incomplete".into(),
                    DamageKind::TornTail,
                ));
            }
            Line::TooLong => {
                return Err(damage(
                    "line exceeds the size limit".into(),
                    DamageKind::Modification,
                ));
            }
            Line::Complete => {}
        }
        let receipt: Receipt = serde_json::from_slice(&buf).map_err(|e| {
            damage(
                format!("receipt is not valid ({e})"),
                DamageKind::Modification,
            )
        })?;
        len += buf.len() as u64 + 1;
        map.insert(receipt.command_id.clone(), receipt);
    }
    Ok((map, len))
}
