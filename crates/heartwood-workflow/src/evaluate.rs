//! Running a stage's checks on the files in the project, read through the confined workspace.

use heartwood_workspace::{EvidenceError, ProjectPath, Workspace};

use crate::check::{CheckResult, MAX_FILE_BYTES};
use crate::checks;
use crate::definition::{CheckUse, Definition};
use crate::registry::{Params, Registry};

/// Forgets every table and model the checks remember from earlier stages (see
/// [`crate::recent`]), so the next evaluation computes everything afresh (what `cargo xtask
/// bench workflow` times).
pub fn forget() {
    crate::table::forget();
    checks::forget();
}

/// Runs every check of `stage` (read-only). Unknown stages give `None`.
pub fn check_stage(
    workspace: &Workspace,
    definition: &Definition,
    stage: &str,
) -> Option<Vec<CheckResult>> {
    let stage = definition.stages.iter().find(|s| s.id == stage)?;
    // A file several checks of the stage read (the table, typically) is read and hashed once:
    // every check then judges the same bytes, bound to one digest.
    let shared = SharedReads::new(workspace, definition, &stage.checks);
    let shared = &shared;
    // The checks of a stage are independent: run them side by side (the Python parser's
    // start-up, in particular, overlaps the table checks).
    Some(std::thread::scope(|scope| {
        let running: Vec<_> = stage
            .checks
            .iter()
            .map(|c| scope.spawn(move || run_shared(shared, c)))
            .collect();
        running
            .into_iter()
            .zip(&stage.checks)
            .map(|(handle, check)| {
                handle.join().unwrap_or_else(|_| {
                    let mut failed = CheckResult::new(&check.check);
                    failed.mark_unverified("the check stopped unexpectedly");
                    failed
                })
            })
            .collect()
    }))
}

/// One read of a file: its bytes and digest, or why it could not be read.
type FileRead = Result<(Vec<u8>, heartwood_workspace::FileDigest), ReadError>;

/// The files a stage's checks read: one that several checks read is read at most once (by
/// the first check that needs it; another waits for that read and judges a copy of the same
/// bytes).
struct SharedReads<'a> {
    workspace: &'a Workspace,
    definition: &'a Definition,
    /// Each file id, how many of the stage's checks read it, and its read once made.
    reads: Vec<(&'a str, usize, std::sync::OnceLock<FileRead>)>,
}

impl<'a> SharedReads<'a> {
    fn new(workspace: &'a Workspace, definition: &'a Definition, checks: &'a [CheckUse]) -> Self {
        let mut reads: Vec<(&str, usize, std::sync::OnceLock<FileRead>)> = Vec::new();
        for id in checks.iter().flat_map(|c| &c.reads) {
            match reads.iter_mut().find(|(seen, _, _)| *seen == id.as_str()) {
                Some((_, uses, _)) => *uses += 1,
                None => reads.push((id, 1, std::sync::OnceLock::new())),
            }
        }
        SharedReads {
            workspace,
            definition,
            reads,
        }
    }

    /// The bytes and digest of `id`: read now for a file only one check reads, else the
    /// stage's one read of it, copied.
    fn get(&self, id: &str) -> Result<(Vec<u8>, heartwood_workspace::FileDigest), String> {
        match self.reads.iter().find(|(seen, _, _)| *seen == id) {
            Some((_, uses, read)) if *uses > 1 => {
                match read.get_or_init(|| read_one(self.workspace, self.definition, id)) {
                    Ok((bytes, digest)) => Ok((bytes.clone(), digest.clone())),
                    Err(e) => Err(e.to_string()),
                }
            }
            _ => read_one(self.workspace, self.definition, id).map_err(|e| e.to_string()),
        }
    }
}

/// Runs one check: reads its files (whole, within the limits, with digests; those the stage
/// shares, once), then evaluates.
fn run_shared(shared: &SharedReads<'_>, check: &CheckUse) -> CheckResult {
    let mut result = CheckResult::new(&check.check);
    if let Err(why) = Registry::builtin().lookup(&check.check, check.version.as_deref()) {
        result.mark_unverified(format!(
            "this Heartwood cannot run the check {why}; the definition is not supported here"
        ));
        return result;
    }
    let mut files = Vec::with_capacity(check.reads.len());
    let mut digests = Vec::with_capacity(check.reads.len());
    for id in &check.reads {
        match shared.get(id) {
            Ok((bytes, digest)) => {
                files.push(bytes);
                digests.push(digest);
            }
            Err(reason) => {
                result.mark_unverified(reason);
                return result;
            }
        }
    }
    run_with(check, &files, digests)
}

/// Why the files a check reads could not be read, or its model's picture not drawn.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The check reads an id the definition does not locate.
    #[error("{0:?} is not an input or artifact of the definition")]
    NotLocated(String),
    /// The definition locates it at a path that is no project path.
    #[error("{path}: {source}")]
    BadPath {
        /// The path.
        path: String,
        /// Why it is none.
        #[source]
        source: heartwood_workspace::PathError,
    },
    /// The file could not be read as evidence.
    #[error("{path}: {source}")]
    Unreadable {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: EvidenceError,
    },
    /// The files hold no model to draw; the check's reason.
    #[error(transparent)]
    NoPicture(#[from] checks::NoPicture),
}

/// The bytes of the files a check reads (whole, within the limits), with their digests, in
/// the check's order; `Err` says which file could not be read and why.
pub fn read_files(
    workspace: &Workspace,
    definition: &Definition,
    check: &CheckUse,
) -> Result<(Vec<Vec<u8>>, Vec<heartwood_workspace::FileDigest>), ReadError> {
    let mut files = Vec::new();
    let mut digests = Vec::new();
    for id in &check.reads {
        let (bytes, digest) = read_one(workspace, definition, id)?;
        digests.push(digest);
        files.push(bytes);
    }
    Ok((files, digests))
}

/// The bytes of the file the definition locates at `id` (whole, within the limits), with
/// their digest.
fn read_one(workspace: &Workspace, definition: &Definition, id: &str) -> FileRead {
    let Some(path) = definition.path_of(id) else {
        return Err(ReadError::NotLocated(id.to_owned()));
    };
    let parsed = ProjectPath::parse(path).map_err(|source| ReadError::BadPath {
        path: path.to_owned(),
        source,
    })?;
    workspace
        .read_evidence(&parsed, MAX_FILE_BYTES)
        .map_err(|source| ReadError::Unreadable {
            path: path.to_owned(),
            source,
        })
}

/// The series of the model picture for `stage`, when one of its checks is `univariate_ols`:
/// read from that check's files, with their digests. `None` for stages without a model.
#[allow(clippy::type_complexity)]
pub fn model_series(
    workspace: &Workspace,
    definition: &Definition,
    stage: &str,
) -> Option<Result<(checks::OlsSeries, Vec<heartwood_workspace::FileDigest>), ReadError>> {
    let stage = definition.stages.iter().find(|s| s.id == stage)?;
    let check = stage.checks.iter().find(|c| c.check == "univariate_ols")?;
    Some(
        read_files(workspace, definition, check).and_then(|(files, digests)| {
            checks::ols_series(&files)
                .map(|series| (series, digests))
                .map_err(ReadError::NoPicture)
        }),
    )
}

/// Runs one check: reads its files (whole, within the limits, with digests), then evaluates.
pub fn run(workspace: &Workspace, definition: &Definition, check: &CheckUse) -> CheckResult {
    let reads = SharedReads::new(workspace, definition, std::slice::from_ref(check));
    run_shared(&reads, check)
}

/// Runs the check `check` as a definition uses it (with its parameters) on bytes already read.
pub fn run_with(
    check: &CheckUse,
    files: &[Vec<u8>],
    digests: Vec<heartwood_workspace::FileDigest>,
) -> CheckResult {
    let with_params: Option<fn(checks::Files<'_>, &Params, &mut CheckResult)> =
        match check.check.as_str() {
            "linear_model" => Some(checks::linear_model),
            "model_plan" => Some(checks::model_plan),
            "report_claims" => Some(checks::report_claims),
            _ => None,
        };
    if let Some(run) = with_params {
        let mut result = CheckResult::new(&check.check);
        result.inspected = digests;
        run(files, &check.params, &mut result);
        return result;
    }
    run_on(&check.check, files, digests)
}

/// Runs the check `check` on bytes already read (with their digests, in the check's order).
/// Checks that take parameters need [`run_with`]; here they are `unverified`.
pub fn run_on(
    check: &str,
    files: &[Vec<u8>],
    digests: Vec<heartwood_workspace::FileDigest>,
) -> CheckResult {
    let mut result = CheckResult::new(check);
    result.inspected = digests;
    match check {
        "data_dictionary" => {
            checks::data_dictionary(files, &mut result);
        }
        "group_disjoint_split" => {
            checks::group_disjoint_split(files, &mut result);
        }
        "univariate_ols" => checks::univariate_ols(files, &mut result),
        "python_syntax" => checks::python_syntax(files, &mut result),
        "nonempty_report" => checks::nonempty_report(files, &mut result),
        "report_claims" => checks::report_claims(files, &Params::new(), &mut result),
        "readiness_report" => checks::readiness_report(files, &mut result),
        "analysis_plan" => checks::analysis_plan(files, &mut result),
        "byte_comparison" => checks::byte_comparison(files, &mut result),
        other => result.mark_unverified(format!(
            "the check {other:?} needs its parameters from the definition; it cannot run here"
        )),
    }
    result
}
