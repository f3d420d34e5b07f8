//! What an export asks for: the bundle (the default), a Markdown transcript written to a file,
//! or a Provenance Run RO-Crate (a directory or a ZIP). Plain data: the gateway does the work.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The form of an export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// The journal bundle under the session's `exports/` (meta, events, audit, checkpoint).
    #[default]
    Bundle,
    /// The readable transcript, written to a file.
    Markdown,
    /// A Provenance Run RO-Crate 1.1 with the journal, its checkpoint and the verifier inside.
    RoCrate,
}

impl ExportFormat {
    /// The name as the wire and the record spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Bundle => "bundle",
            ExportFormat::Markdown => "markdown",
            ExportFormat::RoCrate => "ro_crate",
        }
    }

    /// Whether this is the default form (left out of the wire form).
    pub fn is_bundle(&self) -> bool {
        *self == ExportFormat::Bundle
    }
}

/// The parameters of an export command; every member is optional, so `{"type":"export"}`
/// still asks for a bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ExportRequest {
    /// The form.
    #[serde(skip_serializing_if = "ExportFormat::is_bundle")]
    pub format: ExportFormat,
    /// Where to write it: a new directory (bundle, crate), a new file (transcript, crate ZIP).
    /// Required for a transcript and a crate; a bundle is copied there too when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// A crate as one ZIP file instead of a directory.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub zip: bool,
    /// Project-relative paths the researcher marks private: a crate lists them by digest only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub private: Vec<String>,
}
