//! Reading versioned, internally tagged records (events, commands) so that a record from a newer
//! writer is reported by name instead of being mis-parsed.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::SCHEMA_VERSION;

/// Why a stored or submitted record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes were not JSON, or lacked a required field.
    #[error("not well-formed: {0}")]
    Malformed(String),
    /// A newer Heartwood wrote the record.
    #[error(
        "{what} uses format version {found}, newer than this Heartwood's {supported}; \
         upgrade Heartwood to read it"
    )]
    NewerSchema {
        /// `event` or `command`.
        what: &'static str,
        /// The version on the record.
        found: u64,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The `type` tag names a kind this build does not know.
    #[error(
        "{what} kind {kind:?} (format version {schema}) is not known to this Heartwood; \
         it was probably written by a newer version: upgrade to read it"
    )]
    UnknownKind {
        /// `event` or `command`.
        what: &'static str,
        /// The unknown tag.
        kind: String,
        /// The format version on the record.
        schema: u64,
    },
}

/// Whether a record must carry its `schema` version.
pub(crate) enum Required {
    /// Stored records always do.
    Yes,
    /// Submitted commands may leave it out, meaning the current version.
    DefaultsToCurrent,
}

/// The members every versioned record is checked by before the rest is read.
pub(crate) trait Versioned {
    /// The `schema` member, if present.
    fn schema(&self) -> Option<&Value>;
    /// The `type` member, if present.
    fn kind(&self) -> Option<&str>;
}

/// Reads `H` (the record's head, and whatever else a caller wants in the same pass) and checks
/// its `schema` and `type` against `kinds`, so a newer or unknown record is named rather than
/// mis-parsed.
pub(crate) fn decode_versioned<H: DeserializeOwned + Versioned>(
    bytes: &[u8],
    what: &'static str,
    kinds: &[&str],
    schema: Required,
) -> Result<H, DecodeError> {
    let head: H =
        serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let found = match (head.schema(), schema) {
        (Some(v), _) => v
            .as_u64()
            .ok_or_else(|| DecodeError::Malformed("`schema` is not an integer".into()))?,
        (None, Required::DefaultsToCurrent) => u64::from(SCHEMA_VERSION),
        (None, Required::Yes) => {
            return Err(DecodeError::Malformed(
                "missing integer field `schema`".into(),
            ));
        }
    };
    if found > u64::from(SCHEMA_VERSION) {
        return Err(DecodeError::NewerSchema {
            what,
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let kind = head
        .kind()
        .ok_or_else(|| DecodeError::Malformed("missing string field `type`".into()))?;
    if !kinds.contains(&kind) {
        return Err(DecodeError::UnknownKind {
            what,
            kind: kind.to_owned(),
            schema: found,
        });
    }
    Ok(head)
}

/// Just the members [`Versioned`] needs; everything else is skipped unread.
#[derive(serde::Deserialize)]
pub(crate) struct Head {
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

impl Versioned for Head {
    fn schema(&self) -> Option<&Value> {
        self.schema.as_ref()
    }
    fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }
}
