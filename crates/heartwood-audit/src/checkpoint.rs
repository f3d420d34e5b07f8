//! Checkpoints: a small statement of a log's size and hashes, meant to be kept somewhere the
//! session's writer cannot change. Verifying against one detects a truncated suffix (which the
//! chain alone cannot) and proves, with an RFC 6962 consistency proof, that the current log
//! extends the checkpointed one.

use heartwood_events::SessionId;
use serde::{Deserialize, Serialize};

use crate::{AuditError, Digest, Verified, merkle};

/// `{session, count, terminal_hash, merkle_root}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// The session the checkpoint describes.
    pub session: SessionId,
    /// Number of events covered.
    pub count: u64,
    /// Hash of the last covered audit record (the genesis digest when `count` is 0).
    pub terminal_hash: Digest,
    /// RFC 6962 Merkle root over the covered audit record hashes.
    pub merkle_root: Digest,
}

impl Checkpoint {
    /// The checkpoint of a verified log whose Merkle root is `merkle_root`.
    pub fn of(session: &SessionId, verified: &Verified, merkle_root: Digest) -> Self {
        Checkpoint {
            session: session.clone(),
            count: verified.count,
            terminal_hash: verified.terminal_hash,
            merkle_root,
        }
    }
}

/// The result of checking a log against a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Events the checkpoint covered.
    pub checkpoint_count: u64,
    /// Events in the log now.
    pub current_count: u64,
    /// The consistency proof that was checked (empty when the counts are equal).
    pub proof: Vec<Digest>,
}

/// Checks a verified log (`leaves` are all its record hashes) against `checkpoint`.
pub(crate) fn check(
    id: &SessionId,
    checkpoint: &Checkpoint,
    verified: &Verified,
    leaves: &[Digest],
) -> Result<CheckpointReport, AuditError> {
    let fail = |detail: String| AuditError::CheckpointMismatch {
        id: id.clone(),
        detail,
    };
    if &checkpoint.session != id {
        return Err(fail(format!(
            "the checkpoint is for session \"{}\"",
            checkpoint.session
        )));
    }
    let (m, n) = (checkpoint.count, verified.count);
    if m > n {
        return Err(fail(format!(
            "the checkpoint covers {m} events but the log has {n}: the last {} were removed \
             (a truncated suffix)",
            m - n
        )));
    }
    let m_usize = usize::try_from(m).map_err(|_| fail("checkpoint count is too large".into()))?;
    let old_terminal = match m_usize {
        0 => crate::record::genesis(id),
        _ => leaves[m_usize - 1],
    };
    if old_terminal != checkpoint.terminal_hash {
        return Err(fail(format!(
            "record {m}'s hash differs from the checkpoint's terminal hash"
        )));
    }
    let proof = merkle::consistency_proof(m_usize, leaves);
    let current_root = merkle::root(leaves);
    if !merkle::verify_consistency(m, n, &checkpoint.merkle_root, &current_root, &proof) {
        return Err(fail(format!(
            "the current log does not extend the checkpointed one (consistency proof from \
             {m} to {n} events failed)"
        )));
    }
    Ok(CheckpointReport {
        checkpoint_count: m,
        current_count: n,
        proof,
    })
}
