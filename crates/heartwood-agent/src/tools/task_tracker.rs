//! `task_tracker`: the agent's task plan, kept in a file so it survives restarts.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Observation;

/// Most tasks in a plan.
const MAX_TASKS: usize = 200;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    Todo,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// What to do.
    pub title: String,
    /// Details.
    #[serde(default)]
    pub notes: String,
    /// Where it stands.
    pub status: TaskStatus,
}

/// The whole plan.
pub type TaskPlan = Vec<Task>;

/// `task_tracker`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskTrackerArgs {
    /// Show the plan.
    View,
    /// Replace the plan.
    Plan {
        /// The new plan.
        task_list: TaskPlan,
    },
}

/// Reads the plan kept in `file` (empty when there is none yet).
pub fn load(file: &Path) -> TaskPlan {
    std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

pub(super) fn run(file: &Path, args: &TaskTrackerArgs) -> Observation {
    match args {
        TaskTrackerArgs::View => Observation::ok(render(&load(file))),
        TaskTrackerArgs::Plan { task_list } => {
            if task_list.len() > MAX_TASKS {
                return Observation::error(format!("a plan holds at most {MAX_TASKS} tasks"));
            }
            let bytes = serde_json::to_vec_pretty(task_list).unwrap_or_default();
            let tmp = file.with_extension("tmp");
            let saved = file
                .parent()
                .map_or(Ok(()), crate::private::create_dir)
                .and_then(|()| crate::private::write(&tmp, &bytes))
                .and_then(|()| std::fs::rename(&tmp, file));
            match saved {
                Ok(()) => Observation::ok(format!("Plan updated.\n{}", render(task_list))),
                Err(e) => Observation::error(format!("could not save the plan: {e}")),
            }
        }
    }
}

fn render(plan: &TaskPlan) -> String {
    if plan.is_empty() {
        return "The plan is empty.".to_owned();
    }
    plan.iter()
        .enumerate()
        .map(|(i, t)| {
            let mark = match t.status {
                TaskStatus::Todo => "[ ]",
                TaskStatus::InProgress => "[~]",
                TaskStatus::Done => "[x]",
            };
            let notes = if t.notes.is_empty() {
                String::new()
            } else {
                format!(" — {}", t.notes)
            };
            format!("{}. {mark} {}{notes}\n", i + 1, t.title)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_persists_in_its_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("conv/plan.json");
        assert_eq!(
            run(&file, &TaskTrackerArgs::View).content,
            "The plan is empty."
        );
        let plan = vec![
            Task {
                title: "Load data".into(),
                notes: String::new(),
                status: TaskStatus::Done,
            },
            Task {
                title: "Fit OLS".into(),
                notes: "training rows only".into(),
                status: TaskStatus::InProgress,
            },
        ];
        assert!(
            !run(
                &file,
                &TaskTrackerArgs::Plan {
                    task_list: plan.clone()
                }
            )
            .is_error
        );
        assert_eq!(load(&file), plan);
        assert_eq!(
            run(&file, &TaskTrackerArgs::View).content,
            "1. [x] Load data\n2. [~] Fit OLS — training rows only\n"
        );
    }
}
