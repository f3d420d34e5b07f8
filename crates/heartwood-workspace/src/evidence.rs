//! Content digests and evidence snapshots: selected files (and researcher text) bound to their
//! SHA-256 and byte count, so a later check can say exactly which changed or vanished.

use std::io::Read;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::confined::{AccessError, unchanged};
use crate::{ProjectPath, Workspace};

/// Why a file could not be read as evidence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// The file could not be read.
    #[error(transparent)]
    Access(#[from] AccessError),
    /// The file is larger than the check reads.
    #[error("{path} is larger than {max_bytes} bytes, the most a check reads")]
    TooLarge {
        /// The file.
        path: String,
        /// The bound.
        max_bytes: u64,
    },
}

/// A file's content digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// The file.
    pub path: String,
    /// Hex SHA-256 of its bytes.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Files and text bound to their digests at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceSnapshot {
    /// The selected files, in the order given.
    pub files: Vec<FileDigest>,
    /// The researcher's text, if any: its digest and length (the text itself is not kept).
    pub text: Option<TextDigest>,
}

/// A digest of text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDigest {
    /// Hex SHA-256 of the UTF-8 bytes.
    pub sha256: String,
    /// Length in bytes.
    pub bytes: u64,
}

/// How one file of a snapshot stands now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum EvidenceState {
    /// Same bytes.
    Unchanged,
    /// Different bytes.
    Changed {
        /// The digest now.
        now: FileDigest,
    },
    /// No longer there.
    Vanished,
    /// There, but cannot be read as a regular file (a link now, say).
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// One file's check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceCheck {
    /// The file.
    pub path: String,
    /// How it stands.
    #[serde(flatten)]
    pub state: EvidenceState,
}

impl Workspace {
    /// The digest of one file, read in bounded memory; refused if it changes while read.
    pub fn digest(&self, path: &ProjectPath) -> Result<FileDigest, AccessError> {
        let (mut file, before) = self.root.open_file(path)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut bytes = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(|e| AccessError::Io {
                path: path.clone(),
                detail: e.to_string(),
            })?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            bytes += n as u64;
        }
        unchanged(path, &file, &before)?;
        if bytes != crate::confined::size_of(&before) {
            return Err(AccessError::Changed(path.clone()));
        }
        Ok(FileDigest {
            path: path.as_str().to_owned(),
            sha256: hex(&hasher.finalize()),
            bytes,
        })
    }

    /// Reads a whole file of at most `max_bytes` for a check, with the digest of exactly the
    /// bytes returned. A bigger file is refused as truncated: a check must never judge part of
    /// a file as if it were all of it.
    pub fn read_evidence(
        &self,
        path: &ProjectPath,
        max_bytes: u64,
    ) -> Result<(Vec<u8>, FileDigest), EvidenceError> {
        let opened = self.root.open_file(path)?;
        let (bytes, complete) = crate::confined::read_bounded(path, opened, max_bytes)?;
        if !complete {
            return Err(EvidenceError::TooLarge {
                path: path.as_str().to_owned(),
                max_bytes,
            });
        }
        let digest = FileDigest {
            path: path.as_str().to_owned(),
            sha256: hex(&Sha256::digest(&bytes)),
            bytes: bytes.len() as u64,
        };
        Ok((bytes, digest))
    }

    /// Binds `paths` (and `text`) to their digests now. Fails if any file cannot be read.
    pub fn snapshot(
        &self,
        paths: &[ProjectPath],
        text: Option<&str>,
    ) -> Result<EvidenceSnapshot, AccessError> {
        let files = paths
            .iter()
            .map(|p| self.digest(p))
            .collect::<Result<_, _>>()?;
        let text = text.map(|t| TextDigest {
            sha256: hex(&Sha256::digest(t.as_bytes())),
            bytes: t.len() as u64,
        });
        Ok(EvidenceSnapshot { files, text })
    }

    /// How each file of `snapshot` stands now.
    pub fn check(&self, snapshot: &EvidenceSnapshot) -> Vec<EvidenceCheck> {
        snapshot
            .files
            .iter()
            .map(|then| {
                let state = match ProjectPath::parse(&then.path) {
                    Err(e) => EvidenceState::Unreadable {
                        reason: e.to_string(),
                    },
                    Ok(path) => match self.digest(&path) {
                        Ok(now) if now == *then => EvidenceState::Unchanged,
                        Ok(now) => EvidenceState::Changed { now },
                        Err(AccessError::Missing(_)) => EvidenceState::Vanished,
                        Err(e) => EvidenceState::Unreadable {
                            reason: e.to_string(),
                        },
                    },
                };
                EvidenceCheck {
                    path: then.path.clone(),
                    state,
                }
            })
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
