//! The launch capability: a random secret that lives as long as the server process. Every API
//! request must carry it; it is compared in constant time and never logged or written into a page.

use std::fmt;

/// The name of the cookie a browser holds the capability in.
pub const COOKIE: &str = "heartwood_capability";

/// The process-lifetime launch capability.
#[derive(Clone)]
pub struct Capability(String);

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Capability(…)")
    }
}

impl Capability {
    /// A new random capability (256 bits from the operating system).
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(Capability(
            bytes.iter().map(|b| format!("{b:02x}")).collect(),
        ))
    }

    /// The capability a deployment provides in `path`, shared by its replicas: refused unless
    /// the file is a regular file only its owner can read or write (mode 0600 or 0400), and
    /// holds at least 32 characters of secret (surrounding whitespace is ignored).
    pub fn read_file(path: &std::path::Path) -> Result<Self, CapabilityFileError> {
        use std::os::unix::fs::PermissionsExt;
        let unreadable = |source| CapabilityFileError::Unreadable {
            path: path.to_owned(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(unreadable)?;
        let mode = meta.permissions().mode() & 0o777;
        if !meta.is_file() || mode & 0o077 != 0 {
            return Err(CapabilityFileError::Exposed {
                path: path.to_owned(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(unreadable)?;
        let secret = text.trim();
        if secret.len() < 32 || secret.chars().any(char::is_whitespace) {
            return Err(CapabilityFileError::TooShort {
                path: path.to_owned(),
            });
        }
        Ok(Capability(secret.to_owned()))
    }

    /// A fixed capability, for tests.
    #[doc(hidden)]
    pub fn from_secret(secret: &str) -> Self {
        Capability(secret.to_owned())
    }

    /// The secret, for the one place that prints the launch URL.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `offered` is this capability, in time that does not depend on where they differ.
    pub fn matches(&self, offered: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), offered.as_bytes());
        let mut difference = a.len() ^ b.len();
        for (i, x) in a.iter().enumerate() {
            difference |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
        }
        difference == 0
    }
}

/// Why a deployment's capability file was refused.
#[derive(Debug, thiserror::Error)]
pub enum CapabilityFileError {
    /// The file could not be read.
    #[error("cannot read the capability file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Others than its owner may read or write it (or it is not a regular file).
    #[error(
        "the capability file {} has mode {mode:04o}; it must be a regular file only its owner \
         can read (chmod 600 it), since whoever reads it can act on every session",
        path.display()
    )]
    Exposed {
        /// The file.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The secret is too short to be one.
    #[error(
        "the capability file {} must hold one secret of at least 32 characters without spaces \
         (for example `openssl rand -hex 32`)",
        path.display()
    )]
    TooShort {
        /// The file.
        path: std::path::PathBuf,
    },
}
