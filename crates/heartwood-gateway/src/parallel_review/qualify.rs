//! The operator's qualification run: a synthetic review batch sent at the current route at
//! increasing parallelism, each structured result parsed and compared with the same batch run
//! one request at a time, latency and errors recorded, and the evidence entry written (never
//! into a project). Live requests only: no claim of the model or of the project counts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use heartwood_agent::conversation::{SpecialistConfig, ask_specialist};
use heartwood_agent::model::ModelClient;
use heartwood_events::Timestamp;
use heartwood_events::review_execution::Qualification;
use serde::Serialize;

use super::evidence::{self, EvidenceError, EvidenceFile, RouteIdentity};
use crate::config::{BackendKind, RouteConfig};

/// Why a qualification run wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum QualifyError {
    /// Where the evidence would go cannot hold it.
    #[error(transparent)]
    Evidence(#[from] EvidenceError),
    /// The project's configuration cannot be read.
    #[error(transparent)]
    Project(#[from] crate::ProjectError),
    /// The project has no route to qualify.
    #[error("no model route is connected; run `heartwood model connect` first")]
    NotConnected,
    /// This build's specialist catalog has no review role.
    #[error("the review specialist is not in the catalog")]
    NoReviewer,
    /// The route cannot be asked at all.
    #[error("the model route cannot be used: {0}")]
    Route(String),
    /// The run did not qualify even two at once.
    #[error("the route is not qualified for parallel review: {0}")]
    NotQualified(String),
    /// Writing the evidence failed.
    #[error("cannot write the qualification evidence {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What an operator asks of a run.
#[derive(Debug, Clone)]
pub struct QualifyOptions {
    /// The evidence file to write (outside every project).
    pub evidence: PathBuf,
    /// The most children to try at once (2 or more).
    pub max_parallelism: u32,
    /// How long the evidence counts.
    pub valid_for: Duration,
}

/// One round of the run: the batch at one parallelism.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// Children at once.
    pub parallelism: u32,
    /// Wall time of the whole batch, in milliseconds.
    pub wall_ms: u64,
    /// Children whose result failed or differed from the sequential run.
    pub problems: Vec<String>,
}

/// The run's retained record (its digest is in the evidence entry).
#[derive(Debug, Clone, Serialize)]
pub struct QualifyRecord {
    /// The route, in words.
    pub route_label: String,
    /// Its identity.
    pub route: String,
    /// The sequential baseline, then each parallel round.
    pub rounds: Vec<Round>,
    /// The parallelism qualified.
    pub qualified: u32,
    /// When the run ended.
    pub at: String,
}

/// What the run wrote.
#[derive(Debug, Clone)]
pub struct QualifyReport {
    /// The evidence entry.
    pub entry: Qualification,
    /// The record.
    pub record: QualifyRecord,
    /// Where the record was kept.
    pub record_path: PathBuf,
}

/// Qualifies the route `project` has connected (served by its configured engine), asked as a
/// workflow review asks its reviewers, reporting each round through `progress`, and writes the
/// evidence entry: what `heartwood review qualify` runs.
pub async fn run_connected(
    project: &crate::ProjectContext,
    options: &QualifyOptions,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<QualifyReport, QualifyError> {
    let config = crate::config::ProjectConfig::load(project)?;
    let route = config.model.ok_or(QualifyError::NotConnected)?;
    let reviewer = crate::native::reviewer_for_qualification().ok_or(QualifyError::NoReviewer)?;
    let root = project.root().as_std_path();
    run(root, &route, config.backend, reviewer, options, progress).await
}

/// Runs the qualification of `route` (served by `backend`) with `reviewer`, reporting each
/// round through `progress`, and writes the evidence entry.
async fn run(
    project: &Path,
    route: &RouteConfig,
    backend: BackendKind,
    reviewer: SpecialistConfig,
    options: &QualifyOptions,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<QualifyReport, QualifyError> {
    // Refused before any request: evidence never goes into a project.
    let target = absolute(&options.evidence);
    let parent = target.parent().unwrap_or(Path::new("/"));
    let real_parent = parent.canonicalize().unwrap_or_else(|_| parent.to_owned());
    evidence::refuse_inside(
        &real_parent.join(target.file_name().unwrap_or_default()),
        project,
    )?;
    let mut file = if target.exists() {
        evidence::read_trusted(&target, project)?
    } else {
        EvidenceFile {
            schema: 1,
            entries: Vec::new(),
        }
    };
    let identity = RouteIdentity::of(route, backend);
    let client = ModelClient::new(route.model_route(project))
        .map_err(|e| QualifyError::Route(e.to_string()))?;
    let widest = options.max_parallelism.max(2);
    let prompts: Vec<String> = (1..=widest).map(synthetic_prompt).collect();

    progress(&format!(
        "asking {} synthetic reviews one at a time…",
        prompts.len()
    ));
    let (baseline, sequential) = batch(&client, &reviewer, &prompts, 1).await;
    let mut rounds = vec![Round {
        parallelism: 1,
        wall_ms: millis(sequential),
        problems: baseline
            .iter()
            .filter_map(|r| r.as_ref().err().map(ToString::to_string))
            .collect(),
    }];
    if !rounds[0].problems.is_empty() {
        return Err(QualifyError::NotQualified(format!(
            "one at a time, {}",
            rounds[0].problems.join("; ")
        )));
    }
    let mut qualified = 1;
    for parallelism in 2..=widest {
        progress(&format!("{parallelism} at once…"));
        let (results, took) = batch(&client, &reviewer, &prompts, parallelism as usize).await;
        let problems: Vec<String> = results
            .iter()
            .zip(&baseline)
            .enumerate()
            .filter_map(|(i, (got, want))| match (got, want) {
                (Err(e), _) => Some(format!("review {}: {e}", i + 1)),
                (Ok(a), Ok(b)) if a != b => Some(format!(
                    "review {}: the structured result differs from the one-at-a-time run",
                    i + 1
                )),
                _ => None,
            })
            .collect();
        progress(&format!(
            "{parallelism} at once: {} ms, {}",
            millis(took),
            if problems.is_empty() {
                "every result parsed and matched".to_owned()
            } else {
                problems.join("; ")
            }
        ));
        let clean = problems.is_empty();
        rounds.push(Round {
            parallelism,
            wall_ms: millis(took),
            problems,
        });
        if !clean {
            break;
        }
        qualified = parallelism;
    }
    if qualified < 2 {
        let why = rounds
            .last()
            .map(|r| r.problems.join("; "))
            .unwrap_or_default();
        return Err(QualifyError::NotQualified(format!("two at once: {why}")));
    }
    write(
        &target,
        &mut file,
        identity,
        qualified,
        rounds,
        options.valid_for,
    )
}

/// Why one qualification review gave no structured result.
#[derive(Debug, thiserror::Error)]
enum Unanswered {
    /// The specialist's call failed; its observation says how.
    #[error("{0}")]
    Failed(String),
    /// It answered with something other than a JSON object.
    #[error("the result is not a structured object")]
    NotStructured,
}

/// The batch of `prompts`, `at_once` at a time: each structured result (canonical JSON) or
/// why there is none, in prompt order, and the wall time.
async fn batch(
    client: &ModelClient,
    reviewer: &SpecialistConfig,
    prompts: &[String],
    at_once: usize,
) -> (Vec<Result<String, Unanswered>>, Duration) {
    let started = Instant::now();
    let asked = prompts.iter().enumerate().map(|(i, prompt)| {
        let (client, reviewer, prompt) = (client.clone(), reviewer.clone(), prompt.clone());
        async move { (i, ask_specialist(client, reviewer, prompt).await) }
    });
    let mut results: Vec<(usize, Result<String, Unanswered>)> = futures_util::stream::iter(asked)
        .buffer_unordered(at_once)
        .map(|(i, observation)| {
            let result = if observation.is_error {
                Err(Unanswered::Failed(observation.content))
            } else {
                serde_json::from_str::<serde_json::Value>(&observation.content)
                    .ok()
                    .filter(serde_json::Value::is_object)
                    .and_then(|v| heartwood_events::to_canonical_value_bytes(&v).ok())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .ok_or(Unanswered::NotStructured)
            };
            (i, result)
        })
        .collect()
        .await;
    results.sort_by_key(|(i, _)| *i);
    (
        results.into_iter().map(|(_, r)| r).collect(),
        started.elapsed(),
    )
}

/// A small, fixed review request; each one names a different file so no two are one identity.
fn synthetic_prompt(n: u32) -> String {
    format!(
        "Qualification review {n} (synthetic; no project data). Research question: does x \
         predict y?\n\nFile `plan-{n}.md`:\n```\nFit OLS of y on x over data/sample-{n}.csv, \
         hold out 20% of groups, report R² on the held-out rows.\n```\nReview the plan."
    )
}

fn write(
    target: &Path,
    file: &mut EvidenceFile,
    identity: RouteIdentity,
    qualified: u32,
    rounds: Vec<Round>,
    valid_for: Duration,
) -> Result<QualifyReport, QualifyError> {
    let now = Timestamp::now();
    let record = QualifyRecord {
        route_label: identity.label.clone(),
        route: identity.digest.clone(),
        rounds,
        qualified,
        at: now.as_str().to_owned(),
    };
    let bytes = serde_json::to_vec_pretty(&record).unwrap_or_default();
    let record_sha256 = heartwood_audit::Digest::of(&bytes).to_hex();
    let failed = |path: &Path| {
        let path = path.display().to_string();
        move |source| QualifyError::Write { path, source }
    };
    let records = target.with_extension("records");
    std::fs::create_dir_all(&records).map_err(failed(&records))?;
    let record_path = records.join(format!("{record_sha256}.json"));
    std::fs::write(&record_path, &bytes).map_err(failed(&record_path))?;
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::try_from(valid_for).unwrap_or_default())
        .unwrap_or(jiff::Timestamp::MAX);
    let entry = Qualification {
        route: identity.digest.clone(),
        route_label: identity.label,
        max_parallelism: qualified,
        qualified_at: now.as_str().to_owned(),
        expires_at: expires.to_string(),
        record_sha256,
    };
    file.entries.retain(|e| e.route != identity.digest);
    file.entries.push(entry.clone());
    let text = serde_json::to_vec_pretty(&file).unwrap_or_default();
    let partial = target.with_extension("partial");
    std::fs::write(&partial, &text).map_err(failed(&partial))?;
    // Writable by its owner only, whatever the umask: anything looser is not trusted.
    std::fs::set_permissions(
        &partial,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .map_err(failed(&partial))?;
    std::fs::rename(&partial, target).map_err(failed(target))?;
    Ok(QualifyReport {
        entry,
        record,
        record_path,
    })
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
