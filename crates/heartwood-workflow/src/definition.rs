//! Workflow definitions: researcher inputs, ordered stages, the artifacts each stage produces,
//! the checks that must pass for them, researcher gates and work budgets. No model routes,
//! credentials, tool code or platform logic: a definition says what must be true, not how.

use std::collections::HashSet;

use heartwood_workspace::ProjectPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The JSON Schema of the definition format, as `(file name, pretty JSON)`; `cargo xtask
/// schema` writes it to `docs/schema/` and a test fails when the checked-in file drifts.
pub fn schema() -> Vec<(&'static str, String)> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Definition>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    vec![("workflow-definition.schema.json", text)]
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
    /// A check id no evaluator implements.
    #[error("stage {stage:?} names the check {check:?}, which this Heartwood does not implement")]
    UnknownCheck {
        /// The stage.
        stage: String,
        /// The check id.
        check: String,
    },
}

impl Definition {
    /// Reads and validates a definition; `known_checks` are the registered check ids.
    pub fn parse(json: &str, known_checks: &[&str]) -> Result<Self, DefinitionError> {
        let definition: Definition =
            serde_json::from_str(json).map_err(|e| DefinitionError::Malformed(e.to_string()))?;
        definition.validate(known_checks)?;
        Ok(definition)
    }

    /// Checks every rule; the first broken one is reported.
    pub fn validate(&self, known_checks: &[&str]) -> Result<(), DefinitionError> {
        if self.schema > DEFINITION_SCHEMA {
            return Err(DefinitionError::NewerSchema(self.schema));
        }
        let mut ids = HashSet::new();
        let named = self
            .inputs
            .iter()
            .map(|i| (&i.id, &i.path))
            .chain(self.artifacts.iter().map(|a| (&a.id, &a.path)));
        for (id, path) in named {
            if !ids.insert(id.as_str()) {
                return Err(DefinitionError::DuplicateId(id.clone()));
            }
            if let Err(e) = ProjectPath::parse(path) {
                return Err(DefinitionError::BadPath {
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
                return Err(DefinitionError::DuplicateId(stage.id.clone()));
            }
        }
        for artifact in &self.artifacts {
            let count = self
                .stages
                .iter()
                .filter(|s| s.produces.contains(&artifact.id))
                .count();
            if count != 1 {
                return Err(DefinitionError::Producers {
                    artifact: artifact.id.clone(),
                    count,
                });
            }
        }
        let stage_of = |artifact: &str| {
            self.stages
                .iter()
                .position(|s| s.produces.iter().any(|p| p == artifact))
        };
        let is_input = |id: &str| self.inputs.iter().any(|i| i.id == id);
        for (index, stage) in self.stages.iter().enumerate() {
            for produced in &stage.produces {
                if !self.artifacts.iter().any(|a| &a.id == produced) {
                    return Err(DefinitionError::BadDependency {
                        stage: stage.id.clone(),
                        item: produced.clone(),
                        why: "is not a declared artifact",
                    });
                }
                if !stage.checks.iter().any(|c| c.covers.contains(produced)) {
                    return Err(DefinitionError::Unchecked {
                        stage: stage.id.clone(),
                        artifact: produced.clone(),
                    });
                }
            }
            let reads = stage
                .consumes
                .iter()
                .chain(stage.checks.iter().flat_map(|c| c.reads.iter()));
            for item in reads {
                if is_input(item) {
                    continue;
                }
                match stage_of(item) {
                    None => {
                        return Err(DefinitionError::BadDependency {
                            stage: stage.id.clone(),
                            item: item.clone(),
                            why: "is neither an input nor an artifact",
                        });
                    }
                    Some(producer) if producer > index => {
                        return Err(DefinitionError::BadDependency {
                            stage: stage.id.clone(),
                            item: item.clone(),
                            why: "a later stage produces",
                        });
                    }
                    Some(_) => {}
                }
            }
            for check in &stage.checks {
                if !known_checks.contains(&check.check.as_str()) {
                    return Err(DefinitionError::UnknownCheck {
                        stage: stage.id.clone(),
                        check: check.check.clone(),
                    });
                }
            }
        }
        Ok(())
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
