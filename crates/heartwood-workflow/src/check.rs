//! Check results and the check vocabulary.
//!
//! Every check answers `passed`, `failed` or `unverified` with reasons, and lists the digest of
//! every file it read, so the evidence gate can tell later whether the evidence still holds.
//! The answer is ordered: any definite failure gives `failed`; otherwise anything beyond a
//! limit (or a check this build does not implement) gives `unverified`, never `passed`.

use heartwood_workspace::FileDigest;
use serde::{Deserialize, Serialize};

/// Most table rows a check reads.
pub const MAX_ROWS: usize = 10_000;
/// Most table columns a check reads.
pub const MAX_COLUMNS: usize = 128;
/// Most training groups for leave-one-group-out sensitivity.
pub const MAX_GROUPS: usize = 128;
/// Most bytes of one file a check reads.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A check's answer: the one type the record, the gateway's projection and the checks share.
pub use heartwood_events::workflow::CheckStatus as Status;
/// One figure of a report with its recomputed value: the type the record and the projection share.
pub use heartwood_events::workflow::ClaimView;

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check id.
    pub check: String,
    /// The registered version of the check that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The answer.
    pub status: Status,
    /// Why, in words a researcher can act on (empty when passed).
    pub reasons: Vec<String>,
    /// Every file the check read, with the digest of the exact bytes.
    pub inspected: Vec<FileDigest>,
    /// Figures the check computed (for the OLS check: slope, intercept, errors).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub figures: serde_json::Value,
    /// Each figure a checked report states, with its recomputed value (`report_claims`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimView>,
}

impl CheckResult {
    /// A result with no reasons yet.
    pub fn new(check: &str) -> Self {
        CheckResult {
            check: check.to_owned(),
            version: crate::registry::Registry::builtin()
                .get(check)
                .map(|c| c.version.to_owned()),
            status: Status::Passed,
            reasons: Vec::new(),
            inspected: Vec::new(),
            figures: serde_json::Value::Null,
            claims: Vec::new(),
        }
    }

    /// Records a broken rule. A definite failure outranks any limit: a check that found a
    /// wrong figure has failed, whatever else it could not decide.
    pub fn fail(&mut self, reason: impl Into<String>) {
        self.status = Status::Failed;
        self.reasons.push(reason.into());
    }

    /// Records that the check cannot decide part of what it checks (a limit, a missing tool).
    /// The result is `unverified` unless a rule was definitely broken; the reasons keep both.
    pub fn mark_unverified(&mut self, reason: impl Into<String>) {
        if self.status == Status::Passed {
            self.status = Status::Unverified;
        }
        self.reasons.push(reason.into());
    }
}
