//! Validated identifiers. Parsing is the only way to obtain one, so a value of these types is
//! always safe to use as a path component or a map key.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest identifier accepted, in bytes (all accepted characters are ASCII).
pub const MAX_ID_LEN: usize = 128;

/// Why a string is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The string was empty.
    #[error("{kind} is empty; use 1 to {MAX_ID_LEN} letters, digits, '-' or '_'")]
    Empty {
        /// Which identifier was being parsed.
        kind: &'static str,
    },
    /// The string was longer than [`MAX_ID_LEN`].
    #[error("{kind} is {len} characters long; the limit is {MAX_ID_LEN}")]
    TooLong {
        /// Which identifier was being parsed.
        kind: &'static str,
        /// The length that was offered.
        len: usize,
    },
    /// The string held a character outside `[A-Za-z0-9_-]`.
    #[error("{kind} {shown:?} contains {bad:?}; use only letters, digits, '-' or '_'")]
    BadChar {
        /// Which identifier was being parsed.
        kind: &'static str,
        /// The offered value, shortened for display.
        shown: String,
        /// The first character that is not allowed.
        bad: char,
    },
    /// A sequence number was zero; sequence numbers start at 1.
    #[error("sequence numbers start at 1; got 0")]
    ZeroSeq,
}

fn validate(kind: &'static str, s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if let Some(bad) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        let shown: String = s.chars().take(40).collect();
        return Err(IdError::BadChar { kind, shown, bad });
    }
    if s.len() > MAX_ID_LEN {
        return Err(IdError::TooLong { kind, len: s.len() });
    }
    Ok(())
}

macro_rules! validated_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Parses and validates an identifier: 1–128 of `[A-Za-z0-9_-]`.
            pub fn parse(s: &str) -> Result<Self, IdError> {
                validate($kind, s).map(|()| Self(s.to_owned()))
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = Cow::<'de, str>::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({
                    "type": "string",
                    "pattern": "^[A-Za-z0-9_-]{1,128}$",
                    "description": concat!("A ", $kind, ": 1 to 128 letters, digits, '-' or '_'."),
                })
            }
        }
    };
}

validated_id!(
    /// Names a session; also its directory name under `.heartwood/sessions/`, which is why it is
    /// validated before any path is built from it.
    SessionId,
    "session id"
);
validated_id!(
    /// A caller-chosen id for one command; retrying with the same id returns the first outcome.
    CommandId,
    "command id"
);
validated_id!(
    /// Names one set of proposed tool actions that is decided as a whole.
    ActionSetId,
    "action set id"
);

/// A durable event's position in its session, starting at 1 with no gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seq(u64);

impl Seq {
    /// The first event of every session.
    pub const FIRST: Seq = Seq(1);

    /// Validates a raw sequence number (it must be at least 1).
    pub fn new(n: u64) -> Result<Self, IdError> {
        if n == 0 {
            Err(IdError::ZeroSeq)
        } else {
            Ok(Seq(n))
        }
    }

    /// The number as an integer.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The sequence number after this one.
    #[must_use]
    pub fn next(self) -> Seq {
        Seq(self.0 + 1)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Seq {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Seq {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Seq::new(u64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Seq {
    fn schema_name() -> Cow<'static, str> {
        "Seq".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "minimum": 1,
            "description": "A durable event's position in its session, from 1 with no gaps.",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn session_id_accepts_the_documented_alphabet() {
        for ok in ["a", "Z", "0", "-", "_", "2f1a-support_42", &"x".repeat(128)] {
            assert_eq!(
                SessionId::parse(ok).map(|s| s.to_string()),
                Ok(ok.to_owned())
            );
        }
    }

    #[test]
    fn session_id_refuses_anything_that_could_reach_another_path() {
        for bad in [
            "", ".", "..", "a/b", "a\\b", "../x", "a b", "a\0b", "é", "a.b", "~",
        ] {
            assert!(SessionId::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(
            SessionId::parse(&"x".repeat(129)),
            Err(IdError::TooLong {
                kind: "session id",
                len: 129
            })
        );
    }

    #[test]
    fn deserializing_an_id_validates_it() {
        assert!(serde_json::from_str::<SessionId>("\"../etc\"").is_err());
        assert!(serde_json::from_str::<CommandId>("\"\"").is_err());
        assert!(serde_json::from_str::<Seq>("0").is_err());
        assert_eq!(serde_json::from_str::<Seq>("7").map(Seq::get).ok(), Some(7));
    }

    proptest! {
        #[test]
        fn parse_accepts_exactly_the_pattern(s in "\\PC{0,140}") {
            let expected = !s.is_empty()
                && s.len() <= 128
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            prop_assert_eq!(SessionId::parse(&s).is_ok(), expected);
        }
    }
}
