//! Workflow definitions: researcher inputs, ordered stages, the artifacts each stage produces,
//! the checks that must pass for them, researcher gates and work budgets. No model routes,
//! credentials, tool code or platform logic: a definition says what must be true, not how.

use std::collections::HashSet;

use heartwood_workspace::ProjectPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::registry::Registry;

/// The JSON Schema of the definition format, as `(file name, pretty JSON)`; `cargo xtask
/// schema` writes it to `docs/schema/` and a test fails when the checked-in file drifts.
pub fn schema() -> Vec<(&'static str, String)> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Definition>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    let claims = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<crate::checks::claims::format::ClaimsFile>();
    let mut claims_text = serde_json::to_string_pretty(&claims).unwrap_or_default();
    claims_text.push('\n');
    vec![
        ("workflow-definition.schema.json", text),
        ("report-claims.schema.json", claims_text),
    ]
}

/// The definition format version this build reads.
pub const DEFINITION_SCHEMA: u32 = 1;

/// A versioned workflow definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// The format version (this build reads 1).
    pub schema: u32,
    /// A stable id, such as `tabular-ols`.
    pub id: String,
    /// The definition's own version.
    pub version: String,
    /// A title for people.
    pub title: String,
    /// Files the researcher provides.
    pub inputs: Vec<Input>,
    /// Files the stages produce.
    pub artifacts: Vec<Artifact>,
    /// The stages, in order.
    pub stages: Vec<Stage>,
}

/// A file the researcher provides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Id used by stages and checks.
    pub id: String,
    /// Project-relative path.
    pub path: String,
    /// What it is.
    pub description: String,
}

/// A file a stage produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// Id used by stages and checks.
    pub id: String,
    /// Project-relative path.
    pub path: String,
    /// What it is.
    pub description: String,
}

/// One stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Id.
    pub id: String,
    /// Title for people.
    pub title: String,
    /// Inputs and earlier artifacts the stage reads.
    pub consumes: Vec<String>,
    /// Artifacts the stage produces.
    pub produces: Vec<String>,
    /// Checks that must pass before the stage's outputs count.
    pub checks: Vec<CheckUse>,
    /// Whether a researcher must accept the stage after its checks pass.
    pub researcher_gate: bool,
    /// Work limits for the stage.
    pub budget: Budget,
    /// Agent Skills the stage's prompt references, by name.
    #[serde(default)]
    pub skills: Vec<String>,
    /// Advisory specialists the stage may consult, by role.
    #[serde(default)]
    pub specialists: Vec<String>,
}

/// One required check and the files it inspects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckUse {
    /// The check's registered id.
    pub check: String,
    /// Input or artifact ids the check reads (its evidence), in the check's order.
    pub reads: Vec<String>,
    /// The stage outputs this check covers.
    pub covers: Vec<String>,
    /// The check version the definition was written for (any registered version when absent);
    /// a registry with another version lists the definition as unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The check's parameters, as the registry declares them (`heartwood workflow checks`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub params: crate::registry::Params,
}

pub use heartwood_events::catalog::Budget;

/// Why a definition was refused; names the offending item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// Not readable as a definition.
    #[error("not a workflow definition: {0}")]
    Malformed(String),
    /// A newer format.
    #[error(
        "definition format {0} is newer than this Heartwood's {DEFINITION_SCHEMA}; upgrade to read it"
    )]
    NewerSchema(u32),
    /// An id used twice.
    #[error("the id {0:?} is used more than once")]
    DuplicateId(String),
    /// A path that is not project-relative.
    #[error("{item} has path {path:?}, which is not a normalized project-relative path: {reason}")]
    BadPath {
        /// The input or artifact.
        item: String,
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// An artifact no stage produces, or that two stages produce.
    #[error("artifact {artifact:?} is produced by {count} stages; it needs exactly one")]
    Producers {
        /// The artifact.
        artifact: String,
        /// How many stages produce it.
        count: usize,
    },
    /// An output with no check covering it.
    #[error("stage {stage:?} produces {artifact:?} but no check of the stage covers it")]
    Unchecked {
        /// The stage.
        stage: String,
        /// The artifact.
        artifact: String,
    },
    /// A stage reading a later stage's output (or a name nobody declares).
    #[error("stage {stage:?} reads {item:?}, which {why}")]
    BadDependency {
        /// The stage.
        stage: String,
        /// The input or artifact id.
        item: String,
        /// What is wrong.
        why: &'static str,
    },
    /// Parameters a registered check does not accept.
    #[error("stage {stage:?}: the check {check:?} {problem}")]
    BadParams {
        /// The stage.
        stage: String,
        /// The check id.
        check: String,
        /// What is wrong.
        problem: String,
    },
}

impl Definition {
    /// Reads and validates a definition; the first problem is the error.
    pub fn parse(json: &str, registry: &Registry) -> Result<Self, DefinitionError> {
        Self::parse_all(json, registry).map_err(|mut all| all.swap_remove(0))
    }

    /// Reads and validates a definition, reporting every problem at once (never an empty
    /// list). A check the registry lacks is no problem of the file: the catalog lists the
    /// definition as unsupported, naming it ([`Definition::missing_checks`]).
    pub fn parse_all(json: &str, registry: &Registry) -> Result<Self, Vec<DefinitionError>> {
        let definition: Definition = serde_json::from_str(json)
            .map_err(|e| vec![DefinitionError::Malformed(e.to_string())])?;
        let problems = definition.problems(registry);
        if problems.is_empty() {
            Ok(definition)
        } else {
            Err(problems)
        }
    }

    /// The first broken rule, if any.
    pub fn validate(&self, registry: &Registry) -> Result<(), DefinitionError> {
        match self.problems(registry).into_iter().next() {
            Some(first) => Err(first),
            None => Ok(()),
        }
    }

    /// The checks this definition names that `registry` lacks (or has at another version),
    /// each with why, sorted and without repeats.
    pub fn missing_checks(&self, registry: &Registry) -> Vec<String> {
        let mut missing: Vec<String> = self
            .stages
            .iter()
            .flat_map(|s| &s.checks)
            .filter_map(|c| registry.lookup(&c.check, c.version.as_deref()).err())
            .map(|why| why.to_string())
            .collect();
        missing.sort();
        missing.dedup();
        missing
    }

    /// Every broken rule, in the order of the file.
    pub fn problems(&self, registry: &Registry) -> Vec<DefinitionError> {
        let mut problems = Vec::new();
        if self.schema > DEFINITION_SCHEMA {
            problems.push(DefinitionError::NewerSchema(self.schema));
        }
        let mut ids = HashSet::new();
        let named = self
            .inputs
            .iter()
            .map(|i| (&i.id, &i.path))
            .chain(self.artifacts.iter().map(|a| (&a.id, &a.path)));
        for (id, path) in named {
            if !ids.insert(id.as_str()) {
                problems.push(DefinitionError::DuplicateId(id.clone()));
            }
            if let Err(e) = ProjectPath::parse(path) {
                problems.push(DefinitionError::BadPath {
                    item: id.clone(),
                    path: path.clone(),
                    reason: e.to_string(),
                });
            }
        }
        // Stages have their own namespace: a stage may share its name with its artifact.
        let mut stages = HashSet::new();
        for stage in &self.stages {
            if !stages.insert(stage.id.as_str()) {
                problems.push(DefinitionError::DuplicateId(stage.id.clone()));
            }
        }
        for artifact in &self.artifacts {
            let count = self
                .stages
                .iter()
                .filter(|s| s.produces.contains(&artifact.id))
                .count();
            if count != 1 {
                problems.push(DefinitionError::Producers {
                    artifact: artifact.id.clone(),
                    count,
                });
            }
        }
        for (index, stage) in self.stages.iter().enumerate() {
            self.stage_problems(index, stage, registry, &mut problems);
        }
        problems
    }

    fn stage_problems(
        &self,
        index: usize,
        stage: &Stage,
        registry: &Registry,
        problems: &mut Vec<DefinitionError>,
    ) {
        let stage_of = |artifact: &str| {
            self.stages
                .iter()
                .position(|s| s.produces.iter().any(|p| p == artifact))
        };
        let is_input = |id: &str| self.inputs.iter().any(|i| i.id == id);
        let bad = |item: &String, why| DefinitionError::BadDependency {
            stage: stage.id.clone(),
            item: item.clone(),
            why,
        };
        for produced in &stage.produces {
            if !self.artifacts.iter().any(|a| &a.id == produced) {
                problems.push(bad(produced, "is not a declared artifact"));
            }
            if !stage.checks.iter().any(|c| c.covers.contains(produced)) {
                problems.push(DefinitionError::Unchecked {
                    stage: stage.id.clone(),
                    artifact: produced.clone(),
                });
            }
        }
        let reads = stage
            .consumes
            .iter()
            .chain(stage.checks.iter().flat_map(|c| c.reads.iter()));
        let mut seen = HashSet::new();
        for item in reads {
            if is_input(item) || !seen.insert(item) {
                continue;
            }
            match stage_of(item) {
                None => problems.push(bad(item, "is neither an input nor an artifact")),
                Some(producer) if producer > index => {
                    problems.push(bad(item, "a later stage produces"));
                }
                Some(_) => {}
            }
        }
        for check in &stage.checks {
            for covered in &check.covers {
                if !stage.produces.contains(covered) {
                    problems.push(bad(
                        covered,
                        "is covered by a check but the stage does not produce it",
                    ));
                }
            }
            if let Some(spec) = registry.get(&check.check) {
                for problem in spec.param_problems(&check.params) {
                    problems.push(DefinitionError::BadParams {
                        stage: stage.id.clone(),
                        check: check.check.clone(),
                        problem,
                    });
                }
            }
        }
    }

    /// The project-relative path of an input or artifact id.
    pub fn path_of(&self, id: &str) -> Option<&str> {
        self.inputs
            .iter()
            .find(|i| i.id == id)
            .map(|i| i.path.as_str())
            .or_else(|| {
                self.artifacts
                    .iter()
                    .find(|a| a.id == id)
                    .map(|a| a.path.as_str())
            })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checked_in_schema_matches_the_code() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema");
        for (name, text) in super::schema() {
            let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                on_disk == text,
                "docs/schema/{name} is out of date; run `cargo xtask schema`"
            );
        }
    }
}
