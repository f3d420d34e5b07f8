//! The project files a crate lists: every bound file (inputs, artifacts, corrections) copied
//! with its SHA-256 and size, and every other file the run touched listed by digest only, as
//! is any file the researcher marks private. Read through the confined workspace only.

use std::collections::BTreeSet;

use heartwood_workspace::{ProjectPath, Workspace};

use super::{CrateError, MAX_FILE_BYTES};

/// Whether a file's bytes travel in the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carriage {
    /// Copied at its project path.
    Copied,
    /// Withheld: the researcher marked it private.
    Private,
    /// Withheld: the run touched it but does not bind it.
    Unbound,
}

/// One listed file.
#[derive(Debug, Clone)]
pub struct ListedFile {
    /// Project-relative path.
    pub path: String,
    /// Hex SHA-256 of its bytes now.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
    /// Whether it is copied.
    pub carriage: Carriage,
    /// The bytes, when copied.
    pub content: Option<Vec<u8>>,
}

impl ListedFile {
    /// Its entity id in the metadata: the path when copied, a digest fragment otherwise.
    pub fn id(&self) -> String {
        match self.carriage {
            Carriage::Copied => self.path.clone(),
            _ => format!("#withheld-{}", self.sha256),
        }
    }
}

/// Lists `bound` (copied unless private) and `touched` (by digest only); files that are not
/// there are left out (the metadata says a binding has no file).
pub fn list(
    workspace: &Workspace,
    bound: &BTreeSet<String>,
    touched: &BTreeSet<String>,
    private: &[String],
) -> Result<Vec<ListedFile>, CrateError> {
    let mut out = Vec::new();
    for path in bound.iter().chain(touched.difference(bound)) {
        let carriage = if private.iter().any(|p| p == path) {
            Carriage::Private
        } else if bound.contains(path) {
            Carriage::Copied
        } else {
            Carriage::Unbound
        };
        let parsed = ProjectPath::parse_file(path).map_err(|e| CrateError::ProjectFile {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let (content, digest) = match workspace.read_evidence(&parsed, MAX_FILE_BYTES) {
            Ok(read) => read,
            Err(heartwood_workspace::EvidenceError::Access(
                heartwood_workspace::AccessError::Missing(_),
            )) => continue,
            Err(e) => {
                return Err(CrateError::ProjectFile {
                    path: path.clone(),
                    reason: e.to_string(),
                });
            }
        };
        out.push(ListedFile {
            path: path.clone(),
            sha256: digest.sha256,
            bytes: digest.bytes,
            carriage,
            content: (carriage == Carriage::Copied).then_some(content),
        });
    }
    Ok(out)
}
