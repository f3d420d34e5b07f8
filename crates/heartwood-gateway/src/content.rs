//! The digest a receipt keeps of what its command said, so that a retry with the same id but
//! other content is refused rather than answered with the first outcome. The command pipeline
//! writes it; session recovery writes it again when it rebuilds receipts.

use heartwood_events::CommandKind;

/// SHA-256 of what a command says (its canonical JSON), kept in its receipt.
pub(crate) fn content_digest(kind: &CommandKind) -> String {
    heartwood_events::to_canonical_bytes(kind)
        .map(|bytes| heartwood_audit::Digest::of(&bytes).to_hex())
        .unwrap_or_default()
}
