//! The workflow catalog as interfaces receive it: each maintained definition, what it needs,
//! its stages and whether this build can check every stage. heartwood-workflow fills it in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Work limits of one stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Most model calls.
    pub model_calls: u32,
    /// Most tokens, prompt and completion together.
    pub tokens: u64,
    /// Most tool actions.
    pub actions: u32,
    /// Most elapsed seconds.
    pub seconds: u64,
}

/// Where a definition comes from, and so how far it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum DefinitionSource {
    /// Shipped with Heartwood and reviewed with it.
    #[default]
    Maintained,
    /// From the deployment's folder (`HEARTWOOD_WORKFLOW_DIR`), trusted like the maintained
    /// ones: the operator put it there.
    Deployment,
    /// From the project's `workflows/` folder: the project's own, unreviewed.
    Project,
}

impl DefinitionSource {
    /// The source as the record and the catalog spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            DefinitionSource::Maintained => "maintained",
            DefinitionSource::Deployment => "deployment",
            DefinitionSource::Project => "project",
        }
    }

    /// Whether someone other than the project's authors reviewed it.
    pub fn reviewed(self) -> bool {
        !matches!(self, DefinitionSource::Project)
    }
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogEntry {
    /// The definition's id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// Its title.
    pub title: String,
    /// Files the researcher provides.
    pub inputs: Vec<String>,
    /// Stages, in order, with their artifacts and budgets.
    pub stages: Vec<CatalogStage>,
    /// Whether every check it names is implemented.
    pub supported: bool,
    /// The checks it names that this build's registry lacks (or has at another version).
    pub missing_checks: Vec<String>,
    /// Where it comes from.
    #[serde(default)]
    pub source: DefinitionSource,
    /// Where its file is: `maintained:ID` for a shipped one, the file name in the deployment
    /// folder, or the project-relative path.
    #[serde(default)]
    pub location: String,
    /// SHA-256 of the definition's exact bytes; a run binds it.
    #[serde(default)]
    pub sha256: String,
    /// The source in words, as every interface shows it: `maintained`, `deployment
    /// (FILE)`, or `project's own, unreviewed (PATH)`, with the digest's first 12 digits.
    #[serde(default)]
    pub source_summary: String,
    /// Why the file is not a valid definition (empty when it is; an invalid one is never
    /// supported).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The words for a definition's source: see [`CatalogEntry::source_summary`].
pub fn source_summary(source: DefinitionSource, location: &str, sha256: &str) -> String {
    let short = sha256.get(..12).unwrap_or(sha256);
    match source {
        DefinitionSource::Maintained => format!("maintained · sha256 {short}"),
        DefinitionSource::Deployment => format!("deployment ({location}) · sha256 {short}"),
        DefinitionSource::Project => {
            format!("project's own, unreviewed ({location}) · sha256 {short}")
        }
    }
}

/// Work limits in one line: `20 model calls · 200000 tokens · 30 actions · 900 s`.
pub fn budget_line(b: &Budget) -> String {
    format!(
        "{} model calls · {} tokens · {} actions · {} s",
        b.model_calls, b.tokens, b.actions, b.seconds
    )
}

/// One stage of a catalog entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogStage {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Artifact paths it produces.
    pub produces: Vec<String>,
    /// Check ids.
    pub checks: Vec<String>,
    /// Whether a researcher accepts it.
    pub researcher_gate: bool,
    /// Work limits.
    pub budget: Budget,
    /// The work limits in one line, as every interface shows them (see [`budget_line`]).
    #[serde(default)]
    pub budget_summary: String,
}
