//! Replaying a recorded session: what a replay needs from the original (its task, policy,
//! starting commit and recorded model replies), the starting files written out again, and the
//! action-by-action comparison of a replay with its original. The CLI only prints.

use std::path::{Path, PathBuf};

use heartwood_events::{ActionPolicy, ActionView, Event, SessionProjection};
use serde::Serialize;

use crate::error::SessionRefusal;
use crate::{GatewayError, ProjectContext, SessionAdmin};

/// What a replay of one session starts from.
#[derive(Debug, Clone)]
pub struct ReplaySource {
    /// The original session's projection (it verified).
    pub original: SessionProjection,
    /// The task it was given first.
    pub task: String,
    /// The policy it ran under.
    pub policy: ActionPolicy,
    /// Every task it was given, in order, with its policy (the first is `task`).
    pub tasks: Vec<(String, ActionPolicy)>,
    /// The commit its starting files matched, when the project was a clean Git work tree.
    pub starting_commit: Option<String>,
    /// The model exchanges its engine recorded.
    pub recording: Vec<u8>,
    /// The engine it ran on, which a replay runs on too: the recording is of that engine's
    /// requests.
    pub engine: crate::config::BackendKind,
}

impl SessionAdmin {
    /// What replaying session `id` needs, or why it cannot be replayed.
    pub fn replay_source(&self, id: &str) -> Result<ReplaySource, GatewayError> {
        let view = self.show(id)?;
        let Some(original) = view.projection else {
            return Err(GatewayError::Unverified {
                id: view.meta.id.clone(),
                consequence: "it cannot be replayed",
            });
        };
        let Some((task, policy, starting_commit)) =
            view.events.iter().flatten().find_map(|e| match &e.event {
                Event::TaskSubmitted {
                    text,
                    policy,
                    starting_commit,
                } => Some((text.clone(), *policy, starting_commit.clone())),
                _ => None,
            })
        else {
            return Err(SessionRefusal::NoTask(view.meta.id.clone()).into());
        };
        let tasks = view
            .events
            .iter()
            .flatten()
            .filter_map(|e| match &e.event {
                Event::TaskSubmitted { text, policy, .. } => Some((text.clone(), *policy)),
                _ => None,
            })
            .collect();
        let recording = self
            .recording(id)?
            .ok_or_else(|| SessionRefusal::NoRecording(view.meta.id.clone()))?;
        Ok(ReplaySource {
            original,
            task,
            policy,
            tasks,
            starting_commit,
            recording,
            engine: crate::config::BackendKind::from_name(&view.meta.backend).unwrap_or_default(),
        })
    }
}

/// Where a replay's fresh copy of the starting files goes by default: beside the project.
pub fn default_copy(project: &ProjectContext, session: &str) -> PathBuf {
    let name = project.root().file_name().unwrap_or("project");
    project
        .root()
        .with_file_name(format!("{name}-replay-{session}"))
        .into_std_path_buf()
}

/// Writes the files of `commit` into a new folder `dir` (through the workspace's hardened
/// `git`). Refuses a folder that exists.
pub fn write_starting_files(
    project: &ProjectContext,
    commit: &str,
    dir: &Path,
) -> Result<(), GatewayError> {
    if dir.exists() {
        return Err(SessionRefusal::Exists(dir.to_owned()).into());
    }
    let workspace = heartwood_workspace::Workspace::open(project.root())?;
    std::fs::create_dir_all(dir).map_err(|source| GatewayError::Io {
        doing: format!("cannot create {}", dir.display()),
        source,
    })?;
    workspace.export_commit(commit, dir).map_err(|source| {
        let _ = std::fs::remove_dir_all(dir);
        GatewayError::ReplayFiles {
            commit: commit.to_owned(),
            dir: dir.to_owned(),
            source,
        }
    })
}

/// How one action of the original fared in the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Same tool, arguments, output and exit code.
    Same,
    /// The replay ran it with a different result (or ran something else there).
    Differs,
    /// The replay stopped before it.
    Missing,
}

/// One action of the original, compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComparedAction {
    /// The verdict.
    pub verdict: Verdict,
    /// The original action.
    pub original: ActionView,
    /// The replay's action at the same place, if it got that far.
    pub replayed: Option<ActionView>,
}

/// A replay compared with its original, action by action, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayComparison {
    /// Every action that ran in the original.
    pub actions: Vec<ComparedAction>,
    /// How many ran in the replay.
    pub replayed: usize,
    /// The replay's status line.
    pub replay_status: String,
}

impl ReplayComparison {
    /// How many of the original's tool results the replay matched.
    pub fn matching(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| a.verdict == Verdict::Same)
            .count()
    }

    /// Whether the replay observed exactly what the original did.
    pub fn identical(&self) -> bool {
        self.matching() == self.actions.len() && self.replayed == self.actions.len()
    }
}

/// Compares the tool results of two sessions, action by action, in the order they ran.
pub fn compare(original: &SessionProjection, replayed: &SessionProjection) -> ReplayComparison {
    let ran = |p: &SessionProjection| -> Vec<ActionView> {
        p.actions
            .iter()
            .filter(|a| a.state.has_run())
            .cloned()
            .collect()
    };
    let (before, mut after) = (ran(original), ran(replayed).into_iter());
    let replayed_count = after.len();
    let actions = before
        .into_iter()
        .map(|old| {
            let new = after.next();
            let verdict = match &new {
                Some(new)
                    if new.proposal.tool == old.proposal.tool
                        && new.proposal.arguments == old.proposal.arguments
                        && new.detail == old.detail
                        && new.exit_code == old.exit_code =>
                {
                    Verdict::Same
                }
                Some(_) => Verdict::Differs,
                None => Verdict::Missing,
            };
            ComparedAction {
                verdict,
                original: old,
                replayed: new,
            }
        })
        .collect();
    ReplayComparison {
        actions,
        replayed: replayed_count,
        replay_status: replayed.status_line.clone(),
    }
}
