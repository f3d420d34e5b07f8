//! The read-only workflow catalog: the maintained definitions, each with what it needs and
//! whether this build can check every stage of it. Discovering the catalog creates nothing.

use serde::Serialize;

use crate::check::{KNOWN_CHECKS, REGISTERED_CHECKS};
use crate::definition::{Budget, Definition, DefinitionError};

/// The maintained definitions, as shipped.
const MAINTAINED: [&str; 1] = [include_str!("../../../fixtures/workflows/tabular-ols.json")];

/// One catalog entry.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The definition's id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// Its title.
    pub title: String,
    /// Files the researcher provides.
    pub inputs: Vec<String>,
    /// Stages, in order, with their artifacts and budgets.
    pub stages: Vec<StageEntry>,
    /// Whether every check it names is implemented.
    pub supported: bool,
    /// The checks it names that this build does not implement.
    pub missing_checks: Vec<String>,
}

/// One stage of a catalog entry.
#[derive(Debug, Clone, Serialize)]
pub struct StageEntry {
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

/// The maintained definitions, validated.
pub fn definitions() -> Result<Vec<Definition>, DefinitionError> {
    MAINTAINED
        .iter()
        .map(|json| Definition::parse(json, &KNOWN_CHECKS))
        .collect()
}

/// The definition with this id.
pub fn definition(id: &str) -> Result<Option<Definition>, DefinitionError> {
    Ok(definitions()?.into_iter().find(|d| d.id == id))
}

/// The catalog.
pub fn catalog() -> Result<Vec<Entry>, DefinitionError> {
    Ok(definitions()?.iter().map(entry).collect())
}

fn entry(d: &Definition) -> Entry {
    let mut missing: Vec<String> = d
        .stages
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| c.check.clone()))
        .filter(|c| !REGISTERED_CHECKS.contains(&c.as_str()))
        .collect();
    missing.sort();
    missing.dedup();
    Entry {
        id: d.id.clone(),
        version: d.version.clone(),
        title: d.title.clone(),
        inputs: d.inputs.iter().map(|i| i.path.clone()).collect(),
        stages: d
            .stages
            .iter()
            .map(|s| StageEntry {
                id: s.id.clone(),
                title: s.title.clone(),
                produces: s
                    .produces
                    .iter()
                    .filter_map(|a| d.path_of(a).map(str::to_owned))
                    .collect(),
                checks: s.checks.iter().map(|c| c.check.clone()).collect(),
                researcher_gate: s.researcher_gate,
                budget: s.budget,
            })
            .collect(),
        supported: missing.is_empty(),
        missing_checks: missing,
    }
}
