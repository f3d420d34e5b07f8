//! Event timestamps: RFC 3339 in UTC with millisecond precision, kept as the exact string that
//! was written so the audit chain compares and hashes the same bytes the writer produced.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time as written into a session, for example `2026-11-30T02:09:30.123Z`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(String);

impl Timestamp {
    /// The current time, in UTC, to the millisecond.
    pub fn now() -> Self {
        Timestamp(format!("{:.3}", jiff::Timestamp::now()))
    }

    /// A wall-clock time (a file's modification time, say), in the same form as [`Timestamp::now`].
    pub fn from_system_time(t: std::time::SystemTime) -> Option<Self> {
        jiff::Timestamp::try_from(t)
            .ok()
            .map(|ts| Timestamp(format!("{ts:.3}")))
    }

    /// Parses an RFC 3339 timestamp, keeping its text as given.
    pub fn parse(s: &str) -> Result<Self, String> {
        s.parse::<jiff::Timestamp>()
            .map(|_| Timestamp(s.to_owned()))
            .map_err(|e| format!("{s:?} is not an RFC 3339 timestamp: {e}"))
    }

    /// Milliseconds from this time to `later` (negative when `later` is earlier); `None` when
    /// either is not a timestamp.
    pub fn millis_until(&self, later: &Timestamp) -> Option<i64> {
        let from: jiff::Timestamp = self.0.parse().ok()?;
        let to: jiff::Timestamp = later.0.parse().ok()?;
        Some(to.as_millisecond() - from.as_millisecond())
    }

    /// The timestamp text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its date and time to the second as 14 digits (`YYYYMMDDhhmmss`), for ids that sort by
    /// creation.
    pub fn digits(&self) -> String {
        self.0
            .chars()
            .filter(char::is_ascii_digit)
            .take(14)
            .collect()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Cow::<'de, str>::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Timestamp {
    fn schema_name() -> Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339 time; Heartwood writes UTC with millisecond precision.",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_utc_with_milliseconds_and_parses_back() {
        let now = Timestamp::now();
        let text = now.as_str();
        assert!(text.ends_with('Z'), "{text}");
        assert_eq!(text.len(), "2026-11-30T02:09:30.123Z".len(), "{text}");
        assert_eq!(Timestamp::parse(text), Ok(now));
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(serde_json::from_str::<Timestamp>("\"2026-13-01T00:00:00Z\"").is_err());
    }
}
