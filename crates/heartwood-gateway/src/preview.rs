//! Bounded previews of the files a workflow run binds (its inputs and artifacts), read through
//! the confined workspace reader, each saying whether the file still has the bytes the run's
//! latest checks judged, so an interface never shows a changed file as the evidence.

use heartwood_events::workflow::WorkflowView;
use serde::Serialize;

use crate::workspace::{TextFile, TextLimits, WorkspaceService};
use crate::{GatewayError, ProjectContext};

/// One bound file, as far as the bounds allow, with its digest now and the one judged.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BoundFilePreview {
    /// The binding's id (`table`, `model`, ...).
    pub binding: String,
    /// The text shown (bounded; binary files show none).
    pub text: TextFile,
    /// SHA-256 of the file's bytes now.
    pub sha256: String,
    /// SHA-256 of the bytes the latest checks read, when they read this file.
    pub judged_sha256: Option<String>,
    /// What the latest checks say of the bytes shown.
    pub evidence: FileEvidence,
}

/// What the latest checks say of a bound file's bytes now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileEvidence {
    /// The checks read exactly these bytes.
    Judged,
    /// The file changed since the checks read it.
    Changed,
    /// The latest checks did not read it.
    NotJudged,
}

/// The preview of the file the run binds at `path`; refused for any other path.
pub(crate) fn bound_file(
    project: &ProjectContext,
    w: &WorkflowView,
    path: &str,
) -> Result<BoundFilePreview, GatewayError> {
    let Some(binding) = w.bindings.iter().find(|b| b.path == path) else {
        return Err(crate::error::SessionRefusal::NotBound {
            path: path.to_owned(),
            bound: w.bindings.iter().map(|b| b.path.clone()).collect(),
        }
        .into());
    };
    let service = WorkspaceService::open(project)?;
    let text = service.text(path, 1, TextLimits::default())?;
    let sha256 = service
        .snapshot(&[path.to_owned()], None)?
        .files
        .into_iter()
        .next()
        .map(|d| d.sha256)
        .unwrap_or_default();
    let judged_sha256 = w.assessment.as_ref().and_then(|a| {
        a.checks
            .iter()
            .flat_map(|c| &c.inspected)
            .find(|f| f.path == path)
            .and_then(|f| f.sha256.clone())
    });
    let evidence = match &judged_sha256 {
        Some(judged) if *judged == sha256 => FileEvidence::Judged,
        Some(_) => FileEvidence::Changed,
        None => FileEvidence::NotJudged,
    };
    Ok(BoundFilePreview {
        binding: binding.id.clone(),
        text,
        sha256,
        judged_sha256,
        evidence,
    })
}
