//! The read-only workflow catalog: the maintained definitions, the deployment's (trusted like
//! the maintained ones) and the project's own (`workflows/*.json`, unreviewed), each with its
//! source, the SHA-256 of its exact bytes, what it needs, and whether this build's check
//! registry has every check it names. Discovering the catalog creates nothing.
//!
//! A file that is not a valid definition is listed with its problems and never supported; a
//! definition whose id an earlier source already uses is listed as a problem, never shadowing
//! it (maintained first, then deployment, then project).

pub use heartwood_events::catalog::{CatalogEntry, CatalogStage, DefinitionSource};
use heartwood_workspace::{EntryKind, ProjectPath, TreeLimits, Workspace};
use sha2::{Digest, Sha256};

use crate::definition::{Definition, DefinitionError};
use crate::registry::Registry;

/// The maintained definitions, as shipped: `(id, bytes)`.
const MAINTAINED: [(&str, &str); 3] = [
    (
        "tabular-ols",
        include_str!("../../../fixtures/workflows/tabular-ols.json"),
    ),
    (
        "tabular-linear",
        include_str!("../../../fixtures/workflows/tabular-linear.json"),
    ),
    (
        "tabular-logistic",
        include_str!("../../../fixtures/workflows/tabular-logistic.json"),
    ),
];

/// The project folder lab definitions are read from.
pub const PROJECT_FOLDER: &str = "workflows";
/// Most definition files read from one folder.
pub const MAX_FILES: usize = 64;
/// Most bytes of one definition file.
pub const MAX_DEFINITION_BYTES: u64 = 256 * 1024;

/// One definition file as found: its source, where it is, and its bytes (or why they could not
/// be read).
#[derive(Debug, Clone)]
pub struct DefinitionFile {
    /// Where it comes from.
    pub source: DefinitionSource,
    /// `maintained:ID`, the file name in the deployment folder, or the project path.
    pub location: String,
    /// Its bytes, or why they could not be read.
    pub bytes: Result<Vec<u8>, Unread>,
}

/// Why a definition file's bytes could not be read (said after "cannot be read: ").
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unread {
    /// The deployment's folder of definitions cannot be listed.
    #[error("the deployment's workflow folder cannot be read: {0}")]
    Folder(std::sync::Arc<std::io::Error>),
    /// The file cannot be opened or read.
    #[error("{0}")]
    Io(std::sync::Arc<std::io::Error>),
    /// Over the limit a definition may have.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// The project's file cannot be read as evidence.
    #[error(transparent)]
    Evidence(#[from] heartwood_workspace::EvidenceError),
}

/// One catalog entry with its definition, when the file is one.
#[derive(Debug, Clone)]
pub struct Listed {
    /// What interfaces show.
    pub entry: CatalogEntry,
    /// The validated definition (absent when the file has problems).
    pub definition: Option<Definition>,
}

/// The maintained definitions' files.
pub fn maintained_files() -> Vec<DefinitionFile> {
    MAINTAINED
        .iter()
        .map(|(id, json)| DefinitionFile {
            source: DefinitionSource::Maintained,
            location: format!("maintained:{id}"),
            bytes: Ok(json.as_bytes().to_vec()),
        })
        .collect()
}

/// The definition files in the project's `workflows/` folder (its direct `.json` children,
/// read through the confined reader; none when there is no such folder).
pub fn project_files(workspace: &Workspace) -> Vec<DefinitionFile> {
    let Ok(folder) = ProjectPath::parse(PROJECT_FOLDER) else {
        return Vec::new();
    };
    if !matches!(workspace.kind(&folder), Ok((EntryKind::Dir, _))) {
        return Vec::new();
    }
    let limits = TreeLimits {
        max_entries: MAX_FILES * 4,
        max_depth: 1,
    };
    let Ok(tree) = workspace.tree(&folder, limits) else {
        return Vec::new();
    };
    tree.entries
        .iter()
        .filter(|e| e.kind == EntryKind::File && e.path.as_str().ends_with(".json"))
        .take(MAX_FILES)
        .map(|e| DefinitionFile {
            source: DefinitionSource::Project,
            location: e.path.as_str().to_owned(),
            bytes: workspace
                .read_evidence(&e.path, MAX_DEFINITION_BYTES)
                .map(|(bytes, _)| bytes)
                .map_err(Unread::from),
        })
        .collect()
}

/// SHA-256 of a definition's bytes, in hex.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Lists `files` in order: validated against `registry`, availability looked up in it.
pub fn list(files: Vec<DefinitionFile>, registry: &Registry) -> Vec<Listed> {
    let mut listed: Vec<Listed> = Vec::new();
    for file in files {
        let sha256 = file.bytes.as_deref().map(digest).unwrap_or_default();
        let parsed = match &file.bytes {
            Ok(bytes) => std::str::from_utf8(bytes)
                .map_err(|e| vec![format!("not UTF-8 text: {e}")])
                .and_then(|text| {
                    Definition::parse_all(text, registry)
                        .map_err(|all| all.iter().map(ToString::to_string).collect())
                }),
            Err(why) => Err(vec![format!("cannot be read: {why}")]),
        };
        let mut item = match parsed {
            Ok(definition) => Listed {
                entry: entry(&definition, registry),
                definition: Some(definition),
            },
            Err(problems) => Listed {
                entry: invalid(&file.location, problems),
                definition: None,
            },
        };
        item.entry.source = file.source;
        item.entry.location = file.location.clone();
        item.entry.source_summary =
            heartwood_events::catalog::source_summary(file.source, &item.entry.location, &sha256);
        item.entry.sha256 = sha256;
        let taken = listed
            .iter()
            .find(|l| l.definition.is_some() && l.entry.id == item.entry.id);
        if let (Some(first), Some(_)) = (taken, &item.definition) {
            item.entry.problems.push(format!(
                "the id {:?} is already used by {} ({}); give this definition another id",
                item.entry.id,
                first.entry.location,
                first.entry.source.as_str()
            ));
            item.entry.supported = false;
            item.definition = None;
        }
        listed.push(item);
    }
    listed
}

/// The maintained definitions, validated.
pub fn definitions() -> Result<Vec<Definition>, DefinitionError> {
    let registry = Registry::builtin();
    MAINTAINED
        .iter()
        .map(|(_, json)| Definition::parse(json, &registry))
        .collect()
}

/// The maintained definition with this id.
pub fn definition(id: &str) -> Result<Option<Definition>, DefinitionError> {
    Ok(definitions()?.into_iter().find(|d| d.id == id))
}

/// The catalog of the maintained definitions only.
pub fn catalog() -> Result<Vec<CatalogEntry>, DefinitionError> {
    definitions()?;
    Ok(list(maintained_files(), &Registry::builtin())
        .into_iter()
        .map(|l| l.entry)
        .collect())
}

fn invalid(location: &str, problems: Vec<String>) -> CatalogEntry {
    let id = location
        .rsplit('/')
        .next()
        .unwrap_or(location)
        .trim_end_matches(".json")
        .to_owned();
    CatalogEntry {
        id,
        version: String::new(),
        title: "(not a valid definition)".into(),
        inputs: Vec::new(),
        stages: Vec::new(),
        supported: false,
        missing_checks: Vec::new(),
        source: DefinitionSource::Maintained,
        location: String::new(),
        sha256: String::new(),
        source_summary: String::new(),
        problems,
    }
}

/// The entry of a valid definition.
pub fn entry(d: &Definition, registry: &Registry) -> CatalogEntry {
    let missing = d.missing_checks(registry);
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
                budget_summary: heartwood_events::catalog::budget_line(&s.budget),
            })
            .collect(),
        supported: missing.is_empty(),
        missing_checks: missing,
        source: DefinitionSource::Maintained,
        location: String::new(),
        sha256: String::new(),
        source_summary: String::new(),
        problems: Vec::new(),
    }
}
