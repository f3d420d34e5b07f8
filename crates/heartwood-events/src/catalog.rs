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
    /// The checks it names that this build does not implement.
    pub missing_checks: Vec<String>,
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
}
