//! The Slurm engine: one job-array script per submission (`#SBATCH --array=INDICES%K`, each
//! task `heartwood batch worker MANIFEST $SLURM_ARRAY_TASK_ID`), submitted with `sbatch`, its
//! job id kept in the batch directory; and, when asked for status, the scheduler's view of
//! those jobs from `squeue` (and `sacct` where accounting is on). No polling loop of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{BatchError, Result};
use crate::manifest::Manifest;
use crate::record::{BatchDir, now};
use crate::shell_quote;

/// One submission, as `slurm/jobs.json` keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    /// The job id `sbatch` gave.
    pub job_id: String,
    /// The item indices it runs (its array indices).
    pub indices: Vec<usize>,
    /// At most this many at once.
    pub concurrency: usize,
    /// The script submitted.
    pub script: PathBuf,
    /// When (seconds since the epoch).
    pub submitted_at: u64,
}

/// What the scheduler says of one array task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskState {
    /// `JOB_INDEX`.
    pub task: String,
    /// PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, PREEMPTED, TIMEOUT, NODE_FAIL, ...
    pub state: String,
    /// The scheduler's reason (pending) or exit code (ended), when it gives one.
    pub reason: Option<String>,
}

/// The array's `--array` value: the indices, ranges folded, and the concurrency limit.
pub fn array_spec(indices: &[usize], concurrency: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    format!("{}%{}", parts.join(","), concurrency.max(1))
}

/// The job script for `indices`: each task runs `program batch worker MANIFEST INDEX`.
pub fn script(
    manifest: &Manifest,
    dir: &BatchDir,
    (indices, concurrency): (&[usize], usize),
    program: &Path,
) -> String {
    let exe = program;
    let logs = dir.root().join("slurm").join("logs");
    let o = &manifest.slurm;
    let mut lines = vec![
        "#!/bin/bash".to_owned(),
        format!("#SBATCH --job-name=heartwood-{}", manifest.name),
        format!("#SBATCH --array={}", array_spec(indices, concurrency)),
        format!("#SBATCH --output={}/%A_%a.out", logs.display()),
        // A preempted or failed node's task may be requeued: the worker continues the session.
        "#SBATCH --requeue".to_owned(),
        "#SBATCH --open-mode=append".to_owned(),
    ];
    if let Some(p) = &o.partition {
        lines.push(format!("#SBATCH --partition={p}"));
    }
    if let Some(t) = &o.time {
        lines.push(format!("#SBATCH --time={t}"));
    }
    if let Some(m) = &o.mem {
        lines.push(format!("#SBATCH --mem={m}"));
    }
    if let Some(c) = o.cpus_per_task {
        lines.push(format!("#SBATCH --cpus-per-task={c}"));
    }
    lines.extend(o.extra.iter().map(|e| format!("#SBATCH {e}")));
    lines.extend([
        String::new(),
        "# Written by `heartwood batch run --engine slurm`; one task drives one item's session."
            .to_owned(),
        "set -eu".to_owned(),
        format!(
            "exec {} batch worker {} \"$SLURM_ARRAY_TASK_ID\"",
            shell_quote(&exe.to_string_lossy()),
            shell_quote(&manifest.path.to_string_lossy())
        ),
        String::new(),
    ]);
    lines.join("\n")
}

/// Writes the script for `indices` (its tasks running `program`) and submits it; the
/// submission is kept in `jobs.json`.
pub fn submit(
    manifest: &Manifest,
    dir: &BatchDir,
    (indices, concurrency): (&[usize], usize),
    program: &Path,
) -> Result<Submission> {
    let slurm = dir.root().join("slurm");
    std::fs::create_dir_all(slurm.join("logs")).map_err(BatchError::io("create", &slurm))?;
    let mut jobs = submissions(dir)?;
    let path = slurm.join(format!("array-{}.sh", jobs.len() + 1));
    let text = script(manifest, dir, (indices, concurrency), program);
    std::fs::write(&path, text).map_err(BatchError::io("write", &path))?;
    let out = Command::new("sbatch")
        .arg("--parsable")
        .arg(&path)
        .output()
        .map_err(|e| {
            BatchError::Sbatch(format!(
                "cannot run sbatch ({e}): is this a Slurm submission host (is `sbatch` on PATH)?"
            ))
        })?;
    if !out.status.success() {
        return Err(BatchError::Sbatch(format!(
            "sbatch refused {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // `--parsable` prints `JOBID` or `JOBID;CLUSTER`.
    let said = String::from_utf8_lossy(&out.stdout);
    let job_id = said
        .trim()
        .split(';')
        .next()
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()))
        .ok_or_else(|| BatchError::Sbatch(format!("sbatch printed no job id: {said:?}")))?
        .to_owned();
    let submission = Submission {
        job_id,
        indices: indices.to_vec(),
        concurrency,
        script: path,
        submitted_at: now(),
    };
    jobs.push(submission.clone());
    let list = slurm.join("jobs.json");
    let temp = slurm.join(".jobs.json.tmp");
    let bytes = serde_json::to_vec_pretty(&jobs).map_err(|source| BatchError::Json {
        path: list.clone(),
        what: "a list of submissions",
        source,
    })?;
    std::fs::write(&temp, bytes).map_err(BatchError::io("write", &temp))?;
    std::fs::rename(&temp, &list).map_err(BatchError::io("write", &list))?;
    Ok(submission)
}

/// Every submission so far, oldest first.
pub fn submissions(dir: &BatchDir) -> Result<Vec<Submission>> {
    let path = dir.root().join("slurm").join("jobs.json");
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| BatchError::Json {
            path: path.clone(),
            what: "a list of submissions",
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(BatchError::io("read", &path)(e)),
    }
}

/// The scheduler could not be asked about the batch's jobs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("squeue could not be asked (is Slurm reachable from here?)")]
pub struct SchedulerUnreachable;

/// The scheduler's view of each item that a submission ran, by item index: the latest
/// submission that included it.
pub fn scheduler_view(
    jobs: &[Submission],
) -> Result<BTreeMap<usize, TaskState>, SchedulerUnreachable> {
    if jobs.is_empty() {
        return Ok(BTreeMap::new());
    }
    let ids: Vec<&str> = jobs.iter().map(|j| j.job_id.as_str()).collect();
    let mut tasks: BTreeMap<String, TaskState> = BTreeMap::new();
    // Accounting first (it remembers ended tasks), then the queue (it knows the live ones).
    if let Some(rows) = run_lines(
        "sacct",
        &[
            "-n",
            "-P",
            "-X",
            "--format=JobID,State,ExitCode",
            "-j",
            &ids.join(","),
        ],
    ) {
        for row in rows {
            let cols: Vec<&str> = row.split('|').collect();
            if let [task, state, exit, ..] = cols.as_slice() {
                let state = state.split_whitespace().next().unwrap_or_default();
                tasks.insert(
                    (*task).to_owned(),
                    TaskState {
                        task: (*task).to_owned(),
                        state: state.to_owned(),
                        reason: Some(format!("exit {exit}")),
                    },
                );
            }
        }
    }
    let queue = run_lines(
        "squeue",
        &[
            "--noheader",
            "--array",
            "--format=%i|%T|%r",
            "--jobs",
            &ids.join(","),
        ],
    )
    .ok_or(SchedulerUnreachable)?;
    for row in queue {
        let cols: Vec<&str> = row.split('|').collect();
        if let [task, state, reason, ..] = cols.as_slice() {
            tasks.insert(
                (*task).to_owned(),
                TaskState {
                    task: (*task).to_owned(),
                    state: (*state).to_owned(),
                    reason: Some((*reason).to_owned()).filter(|r| r != "None"),
                },
            );
        }
    }
    let mut out = BTreeMap::new();
    for job in jobs {
        for &index in &job.indices {
            if let Some(state) = tasks.get(&format!("{}_{index}", job.job_id)) {
                out.insert(index, state.clone());
            }
        }
    }
    Ok(out)
}

/// Whether a scheduler state means the task is still to run or running.
pub fn is_live(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "REQUEUED"
            | "RESIZING"
            | "SUSPENDED"
    )
}

fn run_lines(program: &str, args: &[&str]) -> Option<Vec<String>> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::array_spec;

    #[test]
    fn the_array_folds_runs_of_indices_and_carries_the_limit() {
        assert_eq!(array_spec(&[0, 1, 2, 3, 4, 5, 6, 7], 4), "0-7%4");
        assert_eq!(array_spec(&[1, 3, 4, 5, 9], 2), "1,3-5,9%2");
        assert_eq!(array_spec(&[6], 0), "6%1");
    }
}
