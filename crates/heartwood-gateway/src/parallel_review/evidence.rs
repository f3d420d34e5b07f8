//! The operator's qualification evidence: a file outside every project, named by
//! `HEARTWOOD_REVIEW_QUALIFICATIONS`, holding one entry per model route that a live synthetic
//! qualification run showed to handle review batches at once. It is trusted only where nobody
//! but its owner (the user or root) could have written it, and never from inside a project:
//! neither the agent nor a project's settings can grant it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use heartwood_events::Timestamp;
use heartwood_events::review_execution::Qualification;
use serde::{Deserialize, Serialize};

use crate::config::{BackendKind, RouteConfig};

/// The variable that names the evidence file.
pub const QUALIFICATIONS_VAR: &str = "HEARTWOOD_REVIEW_QUALIFICATIONS";

/// Why evidence cannot be used; each says what the operator can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// The variable is not set: this deployment does not offer parallel review.
    #[error("parallel review is not set up here ({QUALIFICATIONS_VAR} is not set)")]
    NotConfigured,
    /// The file is inside the project.
    #[error(
        "the qualification evidence {0} is inside the project, where the project (and its agent) \
         could write it; keep it outside every project"
    )]
    InsideProject(String),
    /// Others than its owner may write it.
    #[error(
        "the qualification evidence {0} can be written by its group or by everyone; make it \
         writable by its owner only (chmod go-w)"
    )]
    WritableByOthers(String),
    /// Owned by someone other than the user or root.
    #[error("the qualification evidence {path} belongs to user {uid}, not to you or root")]
    ForeignOwner {
        /// The file.
        path: String,
        /// Its owner.
        uid: u32,
    },
    /// Unreadable or malformed.
    #[error("the qualification evidence {path} cannot be used: {why}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// No entry for this route.
    #[error(
        "no qualification evidence for this route ({0}); an operator runs `heartwood review qualify`"
    )]
    NoEntry(String),
    /// The entry has expired.
    #[error(
        "the qualification of this route expired at {0}; an operator runs `heartwood review qualify` again"
    )]
    Expired(String),
}

/// The evidence file's content.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceFile {
    /// Format version (1).
    pub schema: u32,
    /// One entry per route.
    pub entries: Vec<Qualification>,
}

/// A route as qualification knows it: its identity digest and a label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteIdentity {
    /// SHA-256 of category, base URL, model and backend.
    pub digest: String,
    /// The same, in words.
    pub label: String,
}

impl RouteIdentity {
    /// The identity of `route` served by `backend`.
    pub fn of(route: &RouteConfig, backend: BackendKind) -> RouteIdentity {
        let parts = serde_json::json!({
            "category": route.category.as_str(),
            "base_url": route.base_url,
            "model": route.model,
            "backend": backend.name(),
        });
        let bytes = heartwood_events::to_canonical_value_bytes(&parts).unwrap_or_default();
        RouteIdentity {
            digest: heartwood_audit::Digest::of(&bytes).to_hex(),
            label: format!(
                "{} {} {} ({})",
                route.category.as_str(),
                route.base_url,
                route.model,
                backend.name()
            ),
        }
    }
}

/// The evidence file named by the environment, if any.
pub fn configured() -> Result<PathBuf, EvidenceError> {
    std::env::var_os(QUALIFICATIONS_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or(EvidenceError::NotConfigured)
}

/// Reads the evidence at `path`, refusing a file inside `project` or one that others than its
/// owner (the user or root) could have written.
pub fn read_trusted(path: &Path, project: &Path) -> Result<EvidenceFile, EvidenceError> {
    let shown = path.display().to_string();
    let unreadable = |why: String| EvidenceError::Unreadable {
        path: shown.clone(),
        why,
    };
    let real = path.canonicalize().map_err(|e| unreadable(e.to_string()))?;
    refuse_inside(&real, project)?;
    let meta = std::fs::metadata(&real).map_err(|e| unreadable(e.to_string()))?;
    let me = rustix::process::getuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(EvidenceError::ForeignOwner {
            path: shown,
            uid: meta.uid(),
        });
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(EvidenceError::WritableByOthers(shown));
    }
    let bytes = std::fs::read(&real).map_err(|e| unreadable(e.to_string()))?;
    let file: EvidenceFile =
        serde_json::from_slice(&bytes).map_err(|e| unreadable(format!("not evidence: {e}")))?;
    if file.schema != 1 {
        return Err(unreadable(format!(
            "format version {} is not 1",
            file.schema
        )));
    }
    Ok(file)
}

/// Refuses a path inside the project (both resolved, so a link cannot hide it).
pub fn refuse_inside(real: &Path, project: &Path) -> Result<(), EvidenceError> {
    let project = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_owned());
    if real.starts_with(&project) {
        return Err(EvidenceError::InsideProject(real.display().to_string()));
    }
    Ok(())
}

impl EvidenceFile {
    /// The entry for `route` that holds at `now`.
    pub fn entry_for(
        &self,
        route: &RouteIdentity,
        now: &Timestamp,
    ) -> Result<Qualification, EvidenceError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.route == route.digest)
            .ok_or_else(|| EvidenceError::NoEntry(route.label.clone()))?;
        let expires =
            Timestamp::parse(&entry.expires_at).map_err(|why| EvidenceError::Unreadable {
                path: QUALIFICATIONS_VAR.to_owned(),
                why: format!("expiry {:?}: {why}", entry.expires_at),
            })?;
        if now.millis_until(&expires).is_none_or(|ms| ms <= 0) {
            return Err(EvidenceError::Expired(entry.expires_at.clone()));
        }
        Ok(entry.clone())
    }
}

/// The qualification in force for `route` now, read from the configured evidence.
pub fn current(
    route: &RouteIdentity,
    project: &Path,
) -> Result<(Qualification, PathBuf), EvidenceError> {
    let path = configured()?;
    let file = read_trusted(&path, project)?;
    let entry = file.entry_for(route, &Timestamp::now())?;
    Ok((entry, path))
}

/// Whether the configured evidence counts for `project`'s own route now, in words for
/// `status`: an operator sees it accepted, or why it is refused, before any review waits.
pub fn standing(
    project: &crate::ProjectContext,
) -> heartwood_events::startup::ReviewEvidenceStanding {
    use heartwood_events::startup::ReviewEvidenceStanding;
    let refused = |configured: bool, detail: String| ReviewEvidenceStanding {
        configured,
        accepted: false,
        detail,
    };
    let path = match configured() {
        Ok(path) => path,
        Err(e) => return refused(false, format!("{e}: reviewers run one after another")),
    };
    let root = project.root().as_std_path();
    let route = match crate::config::ProjectConfig::load(project) {
        Ok(config) => config
            .model
            .map(|route| RouteIdentity::of(&route, config.backend)),
        Err(e) => return refused(true, format!("refused: the project's settings: {e}")),
    };
    let Some(route) = route else {
        return refused(
            true,
            format!(
                "{} is set, but this project has no route of its own to qualify; connect one \
                 with `heartwood model connect`",
                path.display()
            ),
        );
    };
    match read_trusted(&path, root).and_then(|f| f.entry_for(&route, &Timestamp::now())) {
        Ok(q) => ReviewEvidenceStanding {
            configured: true,
            accepted: true,
            detail: format!(
                "accepted: {} qualifies {} for {} reviewers at once until {}",
                path.display(),
                q.route_label,
                q.max_parallelism,
                q.expires_at
            ),
        },
        Err(e) => refused(
            true,
            format!("refused, reviewers run one after another: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(route: &str, expires_at: &str) -> Qualification {
        Qualification {
            route: route.to_owned(),
            route_label: "a route".to_owned(),
            max_parallelism: 3,
            qualified_at: "2026-12-01T00:00:00Z".to_owned(),
            expires_at: expires_at.to_owned(),
            record_sha256: "0".repeat(64),
        }
    }

    fn write(path: &Path, entries: Vec<Qualification>, mode: u32) {
        let file = EvidenceFile { schema: 1, entries };
        std::fs::write(path, serde_json::to_vec(&file).expect("json")).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    fn route(digest: &str) -> RouteIdentity {
        RouteIdentity {
            digest: digest.to_owned(),
            label: "compatible http://127.0.0.1:1/v1 m (native)".to_owned(),
        }
    }

    #[test]
    fn evidence_counts_only_outside_the_project_writable_by_its_owner_for_this_route_until_it_expires()
     {
        let project = tempfile::tempdir().expect("project");
        let operator = tempfile::tempdir().expect("operator");
        let now = Timestamp::parse("2026-12-04T12:00:00Z").expect("now");
        let good = operator.path().join("q.json");
        write(&good, vec![entry("r1", "2027-01-01T00:00:00Z")], 0o644);
        let file = read_trusted(&good, project.path()).expect("trusted");
        assert_eq!(
            file.entry_for(&route("r1"), &now)
                .expect("entry")
                .max_parallelism,
            3
        );

        // Another route's evidence says nothing about this one.
        assert!(matches!(
            file.entry_for(&route("r2"), &now),
            Err(EvidenceError::NoEntry(_))
        ));
        // Expired evidence no longer counts.
        let old = operator.path().join("old.json");
        write(&old, vec![entry("r1", "2026-12-01T00:00:00Z")], 0o600);
        let file = read_trusted(&old, project.path()).expect("trusted");
        assert!(matches!(
            file.entry_for(&route("r1"), &now),
            Err(EvidenceError::Expired(_))
        ));
        // Writable by its group or by everyone: refused whatever it says.
        for mode in [0o664, 0o646] {
            write(&good, vec![entry("r1", "2027-01-01T00:00:00Z")], mode);
            assert!(matches!(
                read_trusted(&good, project.path()),
                Err(EvidenceError::WritableByOthers(_))
            ));
        }
        // Inside the project, directly or through a link from outside.
        let inside = project.path().join("q.json");
        write(&inside, vec![entry("r1", "2027-01-01T00:00:00Z")], 0o644);
        assert!(matches!(
            read_trusted(&inside, project.path()),
            Err(EvidenceError::InsideProject(_))
        ));
        let link = operator.path().join("link.json");
        std::os::unix::fs::symlink(&inside, &link).expect("link");
        assert!(matches!(
            read_trusted(&link, project.path()),
            Err(EvidenceError::InsideProject(_))
        ));
    }

    #[test]
    fn a_routes_identity_changes_with_its_model_address_and_backend() {
        let route: RouteConfig = serde_json::from_value(serde_json::json!({
            "category": "compatible", "base_url": "http://127.0.0.1:9/v1", "model": "m"
        }))
        .expect("route");
        let native = RouteIdentity::of(&route, BackendKind::Native);
        assert_ne!(native, RouteIdentity::of(&route, BackendKind::OpenHands));
        let mut other = route.clone();
        other.model = "m2".to_owned();
        assert_ne!(
            native.digest,
            RouteIdentity::of(&other, BackendKind::Native).digest
        );
        assert_eq!(native, RouteIdentity::of(&route, BackendKind::Native));
    }
}
