//! Completing the appends a crash left pending, when a session is next opened for writing:
//! every intent in `journal.json` is brought into the data files (and the backend's log) in
//! order, or the session is refused as damaged, with the file left as evidence.

use heartwood_events::SessionId;

use crate::intent::{Completion, IntentFile, Pending, Target, complete_file, read_pending};
use crate::verify::{Tree, verify_session};
use crate::{AuditError, Damage, DamageKind, SessionPaths};

/// What opening a writer had to do before the session was usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// Nothing: no append was in flight.
    Clean,
    /// An append interrupted by a crash was completed.
    CompletedAppend {
        /// First sequence number of the completed append.
        first_seq: u64,
        /// Last sequence number of the completed append.
        last_seq: u64,
    },
    /// A recovery intent was cut short while being written, before any data was appended; the
    /// files verified intact and the partial intent was discarded.
    DiscardedPartialIntent,
}

/// Completes or discards whatever the recovery intent describes.
pub(crate) fn recover(
    id: &SessionId,
    paths: &SessionPaths,
    intent_file: &mut IntentFile,
) -> Result<Recovery, AuditError> {
    let pending = read_pending(&paths.journal)?;
    // The events the completion restores: from the first append not wholly in the files (the
    // ones before it waited only for their sync), as a reader reports them.
    let interrupted = pending.in_flight(paths);
    match pending {
        Pending::None => Ok(Recovery::Clean),
        Pending::Unreadable => {
            // A torn intent means the crash came before any data byte was written, so the data
            // files must verify as they are; if they do not, the damage is reported as usual.
            verify_session(id, paths, None, Tree::Skip)?;
            intent_file.clear_durably()?;
            Ok(Recovery::DiscardedPartialIntent)
        }
        Pending::Intents(intents) => {
            let (Some(first), Some(last)) = (intents.first(), intents.last()) else {
                intent_file.clear_durably()?;
                return Ok(Recovery::Clean);
            };
            let damaged = |file: &'static str, what: String| AuditError::Damaged {
                id: id.clone(),
                damage: Damage {
                    file,
                    line: first.first_seq,
                    what: format!("an interrupted append cannot be completed: the file {what}"),
                    kind: DamageKind::Modification,
                },
            };
            let targets = intents
                .iter()
                .map(|intent| intent.targets(paths))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|what| damaged("journal.json", what.to_string()))?;
            let mut written = false;
            for i in 0..4 {
                // The pending appends follow each other: the first one's length, then all of
                // their bytes in order.
                let parts: Vec<&Target<'_>> = targets
                    .iter()
                    .map(|t| &t[i])
                    .filter(|t| t.path.is_some())
                    .collect();
                let Some(head) = parts.first() else { continue };
                let Some(path) = head.path.as_deref() else {
                    continue;
                };
                if parts.iter().any(|t| t.path.as_deref() != Some(path)) {
                    return Err(damaged(
                        head.file,
                        "is named differently by two intents".into(),
                    ));
                }
                let expected: Vec<u8> =
                    parts.iter().flat_map(|t| t.bytes.iter().copied()).collect();
                match complete_file(path, head.len_before, &expected, head.may_run_on)? {
                    Ok(completion) => written |= completion == Completion::Written,
                    Err(what) => return Err(damaged(head.file, what.to_string())),
                }
            }
            intent_file.clear_durably()?;
            // Intents whose bytes were all in place waited only for their sync: nothing was
            // interrupted.
            Ok(if written {
                Recovery::CompletedAppend {
                    first_seq: interrupted.map_or(first.first_seq, |(first_seq, _)| first_seq),
                    last_seq: last.last_seq,
                }
            } else {
                Recovery::Clean
            })
        }
    }
}
