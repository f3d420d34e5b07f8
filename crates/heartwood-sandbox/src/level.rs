//! The confinement levels and which one a command runs at.

use serde::{Deserialize, Serialize};

/// How a tool process is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLevel {
    /// Reads the project; writes only a private scratch `/tmp` and home; no network.
    ReadOnly,
    /// Writes inside the project and scratch only; no network.
    ProjectWrite,
    /// Not confined: only by the researcher's explicit approval.
    Unsandboxed,
}

impl SandboxLevel {
    /// The level in words, as every interface shows it.
    pub fn describe(self) -> &'static str {
        match self {
            SandboxLevel::ReadOnly => {
                "read-only sandbox (no writes; no network beyond the project's named hosts)"
            }
            SandboxLevel::ProjectWrite => {
                "sandbox: writes only inside the project; no network beyond the project's named hosts"
            }
            SandboxLevel::Unsandboxed => "UNSANDBOXED: full access as your user",
        }
    }
}

/// Who let a command run, as far as its confinement goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// A person allowed its set.
    ByPerson,
    /// The risk rules let it run without review (the low-risk policy): read-only.
    ByRiskRules,
    /// A policy that reviews nothing (tests, batch deployments): the project, never more.
    WithoutReview,
}
