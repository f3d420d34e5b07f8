//! The project's files, as interfaces see them: the gateway's one workspace service over
//! `heartwood-workspace`, with the session attribution a non-Git project needs.
//!
//! A session's changes are exactly what its successful file-editor actions wrote, taken from
//! the session's verified projection, in a Git project (of the changes against HEAD) as in one
//! without Git; nothing is inferred from terminal commands. Without a session named, a Git
//! project lists every change against HEAD.

use heartwood_events::{ActionState, SessionId};
use heartwood_workspace::Workspace;
pub use heartwood_workspace::{
    AccessError, Change, ChangeKind, ChangeLimits, ChangeSource, Changes, DiffLimits, DiffStatus,
    EntryKind, EvidenceCheck, EvidenceSnapshot, EvidenceState, FileDiff, FileDigest, ProjectPath,
    TextFile, TextLimits, TextStatus, Tree, TreeEntry, TreeLimits, WorkspaceError,
};
use serde::Serialize;

use crate::error::WorkflowUnavailable;
use crate::{GatewayError, ProjectContext, SessionAdmin};

/// Read-only access to the project's files.
#[derive(Debug)]
pub struct WorkspaceService {
    workspace: Workspace,
    admin: SessionAdmin,
}

/// Changed paths, with the session they were attributed to when the project is not in Git.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ChangeReport {
    /// The changes.
    #[serde(flatten)]
    pub changes: Changes,
    /// The session whose file edits were used (always without Git; in Git when one is named).
    pub session: Option<String>,
    /// Where the list comes from, in words, as every interface heads it.
    pub summary: String,
}

impl WorkspaceService {
    /// The workspace of `project`, whose sessions are in its files. Creates nothing.
    pub fn open(project: &ProjectContext) -> Result<Self, GatewayError> {
        Self::with_admin(project, SessionAdmin::new(project))
    }

    /// The workspace of `project`, attributing changes from the sessions `admin` reads (see
    /// [`crate::SessionGateway::workspace`]).
    pub(crate) fn with_admin(
        project: &ProjectContext,
        admin: SessionAdmin,
    ) -> Result<Self, GatewayError> {
        Ok(WorkspaceService {
            workspace: Workspace::open(project.root()).map_err(GatewayError::Workspace)?,
            admin,
        })
    }

    /// Whether changes and diffs come from Git.
    pub fn is_git(&self) -> bool {
        self.workspace.is_git()
    }

    /// The tree under `path` (`""` or `.` for the whole project).
    pub fn tree(&self, path: &str, limits: TreeLimits) -> Result<Tree, GatewayError> {
        let start = start_path(path)?;
        self.workspace
            .tree(&start, limits)
            .map_err(|e| GatewayError::Workspace(e.into()))
    }

    /// A UTF-8 text file from line `first_line` on.
    pub fn text(
        &self,
        path: &str,
        first_line: usize,
        limits: TextLimits,
    ) -> Result<TextFile, GatewayError> {
        let path = ProjectPath::parse_file(path).map_err(|e| GatewayError::Workspace(e.into()))?;
        self.workspace
            .text(&path, first_line, limits)
            .map_err(|e| GatewayError::Workspace(e.into()))
    }

    /// The changed paths; without Git, those written by `session`'s file edits (the most
    /// recently active session when none is named).
    pub fn changes(
        &self,
        session: Option<&str>,
        limits: ChangeLimits,
    ) -> Result<ChangeReport, GatewayError> {
        if self.workspace.is_git() {
            let mut changes = self
                .workspace
                .changes(&[], limits)
                .map_err(GatewayError::Workspace)?;
            let Some(named) = session else {
                return Ok(ChangeReport {
                    changes,
                    session: None,
                    summary: "changes against HEAD (including untracked files)".to_owned(),
                });
            };
            // A session's changes are what its own record says it wrote, as without Git: of
            // the changes against HEAD, those its file edits made.
            let id = self.admin.resolve(named)?.to_string();
            let edits = self.session_edits(&id)?;
            changes
                .changes
                .retain(|c| edits.iter().any(|e| e == c.path.as_str()));
            return Ok(ChangeReport {
                changes,
                summary: format!(
                    "changes against HEAD written by session {id}'s file edits (what its \
                     commands wrote is not attributed; `heartwood workspace changes` lists \
                     every change)"
                ),
                session: Some(id),
            });
        }
        let session = match session {
            Some(id) => Some(SessionId::parse(id)?.to_string()),
            None => self.admin.list(Some(1))?.first().map(|s| s.id.to_string()),
        };
        let edits = match &session {
            Some(id) => self.session_edits(id)?,
            None => Vec::new(),
        };
        let changes = self
            .workspace
            .changes(&edits, limits)
            .map_err(GatewayError::Workspace)?;
        let summary = match &session {
            Some(id) => format!("not a Git project: files written by session {id}'s file edits"),
            None => "not a Git project, and no session has edited files yet".to_owned(),
        };
        Ok(ChangeReport {
            changes,
            session,
            summary,
        })
    }

    /// One changed file's diff as the workspace view shows it, in lines: against `HEAD` in a
    /// Git project, else what `session`'s edits of it changed (the latest session's when none
    /// is named).
    pub fn change_diff(&self, session: Option<&str>, path: &str) -> Result<String, GatewayError> {
        if !self.workspace.is_git() {
            let (id, edits) = self.session_diff(session.unwrap_or("last"), Some(path))?;
            if edits.is_empty() {
                return Ok(format!("session {id} made no file edits of {path}"));
            }
            return Ok(edits
                .iter()
                .map(|e| format!("{}\n{}", e.heading(), e.unified))
                .collect::<Vec<_>>()
                .join("\n"));
        }
        let diff = self.diff(path, DiffLimits::default())?;
        Ok(match diff.status {
            DiffStatus::Changed if diff.truncated => {
                format!("{}[cut at {} lines]", diff.unified, diff.limits.max_lines)
            }
            DiffStatus::Changed => diff.unified,
            DiffStatus::Unchanged => format!("{path} is unchanged since HEAD"),
            DiffStatus::Binary => format!("{path} is binary; no line diff"),
            DiffStatus::TooLarge => format!(
                "{path} is larger than {} bytes; no line diff",
                diff.limits.max_bytes
            ),
            DiffStatus::NotGit => format!("there is no committed version of {path}"),
        })
    }

    /// The diff of one file against `HEAD`.
    pub fn diff(&self, path: &str, limits: DiffLimits) -> Result<FileDiff, GatewayError> {
        let path = ProjectPath::parse_file(path).map_err(|e| GatewayError::Workspace(e.into()))?;
        self.workspace
            .diff(&path, limits)
            .map_err(GatewayError::Workspace)
    }

    /// Binds files (and text) to their digests now.
    pub fn snapshot(
        &self,
        paths: &[String],
        text: Option<&str>,
    ) -> Result<EvidenceSnapshot, GatewayError> {
        let paths = paths
            .iter()
            .map(|p| ProjectPath::parse(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| GatewayError::Workspace(e.into()))?;
        self.workspace
            .snapshot(&paths, text)
            .map_err(|e| GatewayError::Workspace(e.into()))
    }

    /// How each file of a snapshot stands now.
    pub fn check(&self, snapshot: &EvidenceSnapshot) -> Vec<EvidenceCheck> {
        self.workspace.check(snapshot)
    }

    /// The paths the session's successful file-editor actions wrote, in order.
    fn session_edits(&self, session: &str) -> Result<Vec<String>, GatewayError> {
        Ok(self
            .verified(session)?
            .1
            .actions
            .iter()
            .filter(|a| a.proposal.tool == "file_editor" && a.state == ActionState::Completed)
            .filter_map(|a| a.changed_path.clone())
            .collect())
    }

    /// What `session`'s file edits changed, edit by edit (those of `path` alone when one is
    /// named), from its verified journal: the diff of a project without Git.
    pub fn session_diff(
        &self,
        session: &str,
        path: Option<&str>,
    ) -> Result<(SessionId, Vec<crate::session_diff::SessionEdit>), GatewayError> {
        let path = path
            .map(|p| ProjectPath::parse_file(p).map_err(|e| GatewayError::Workspace(e.into())))
            .transpose()?;
        let (id, projection) = self.verified(session)?;
        let edits =
            crate::session_diff::session_edits(&projection, path.as_ref().map(|p| p.as_str()));
        Ok((id, edits))
    }

    /// The session `named` (`last`, an id or a prefix) and its projection, once its chain
    /// verifies: an unverifiable record is no account of the files.
    fn verified(
        &self,
        named: &str,
    ) -> Result<(SessionId, heartwood_events::SessionProjection), GatewayError> {
        let view = self.admin.show(named)?;
        let id = view.meta.id.clone();
        let Some(projection) = view.projection else {
            return Err(GatewayError::Unverified {
                id,
                consequence: "its file edits are not evidence",
            });
        };
        Ok((id, projection))
    }
}

fn start_path(path: &str) -> Result<ProjectPath, GatewayError> {
    if path.is_empty() || path == "." {
        return Ok(ProjectPath::root());
    }
    ProjectPath::parse(path).map_err(|e| GatewayError::Workspace(e.into()))
}

impl WorkspaceService {
    /// Runs the checks of one stage of a catalog definition on the files now in the project
    /// (read-only). The results bind every file they read by digest.
    pub fn check_stage(
        &self,
        definition: &str,
        stage: &str,
    ) -> Result<Vec<heartwood_workflow::CheckResult>, GatewayError> {
        let definition = self.definition(definition)?;
        heartwood_workflow::evaluate::check_stage(&self.workspace, &definition, stage)
            .ok_or_else(|| WorkflowUnavailable::no_stage(&definition, stage).into())
    }
}

impl WorkspaceService {
    /// The definition `id` as this project sees it (maintained, deployment or its own).
    fn definition(&self, id: &str) -> Result<heartwood_workflow::Definition, GatewayError> {
        Ok(resolve_in(listed_in(Some(&self.workspace)), id)?.0)
    }

    /// The bytes and digests of the files `check` reads, as `definition` locates them.
    #[allow(clippy::type_complexity)]
    pub(crate) fn check_files(
        &self,
        definition: &heartwood_workflow::Definition,
        check: &heartwood_workflow::definition::CheckUse,
    ) -> Result<(Vec<Vec<u8>>, Vec<FileDigest>), heartwood_workflow::evaluate::ReadError> {
        heartwood_workflow::evaluate::read_files(&self.workspace, definition, check)
    }

    /// The model picture's series for `stage`, as `definition` locates its files; `None` for a
    /// stage that fits no model.
    #[allow(clippy::type_complexity)]
    pub(crate) fn model_series(
        &self,
        definition: &heartwood_workflow::Definition,
        stage: &str,
    ) -> Option<
        Result<
            (heartwood_workflow::checks::OlsSeries, Vec<FileDigest>),
            heartwood_workflow::evaluate::ReadError,
        >,
    > {
        heartwood_workflow::evaluate::model_series(&self.workspace, definition, stage)
    }

    /// Assesses saved check results as evidence for a stage: the checks run again, and the
    /// stage is eligible only when they pass on the same bytes the saved results name.
    /// Eligibility grants nothing by itself.
    pub fn assess_stage(
        &self,
        definition: &str,
        stage: &str,
        results: &[heartwood_workflow::CheckResult],
    ) -> Result<heartwood_workflow::gate::Assessment, GatewayError> {
        let found = self.definition(definition)?;
        heartwood_workflow::gate::assess(&self.workspace, &found, stage, results)
            .ok_or_else(|| WorkflowUnavailable::no_stage(&found, stage).into())
    }

    /// Assesses results [`WorkspaceService::check_stage`] has just computed, without running
    /// the checks a second time.
    pub fn assess_checked(
        &self,
        definition: &str,
        stage: &str,
        results: &[heartwood_workflow::CheckResult],
    ) -> Result<heartwood_workflow::gate::Assessment, GatewayError> {
        let found = self.definition(definition)?;
        heartwood_workflow::gate::assess_against(&self.workspace, &found, stage, results, results)
            .ok_or_else(|| WorkflowUnavailable::no_stage(&found, stage).into())
    }
}

use crate::workflow_definitions::{listed_in, resolve_in};
pub use heartwood_workflow::gate::Assessment;
pub use heartwood_workflow::{CheckResult, Status as CheckStatus};
