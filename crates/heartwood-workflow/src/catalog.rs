//! The read-only workflow catalog: the maintained definitions, each with what it needs and
//! whether this build can check every stage of it. Discovering the catalog creates nothing.

pub use heartwood_events::catalog::{CatalogEntry, CatalogStage};

use crate::check::{KNOWN_CHECKS, REGISTERED_CHECKS};
use crate::definition::{Definition, DefinitionError};

/// The maintained definitions, as shipped.
const MAINTAINED: [&str; 1] = [include_str!("../../../fixtures/workflows/tabular-ols.json")];

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
pub fn catalog() -> Result<Vec<CatalogEntry>, DefinitionError> {
    Ok(definitions()?.iter().map(entry).collect())
}

fn entry(d: &Definition) -> CatalogEntry {
    let mut missing: Vec<String> = d
        .stages
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| c.check.clone()))
        .filter(|c| !REGISTERED_CHECKS.contains(&c.as_str()))
        .collect();
    missing.sort();
    missing.dedup();
    CatalogEntry {
        id: d.id.clone(),
        version: d.version.clone(),
        title: d.title.clone(),
        inputs: d.inputs.iter().map(|i| i.path.clone()).collect(),
        stages: d
            .stages
            .iter()
            .map(|s| CatalogStage {
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
