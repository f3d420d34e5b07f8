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
