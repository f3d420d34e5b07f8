//! Event timestamps: RFC 3339 in UTC with millisecond precision, kept as the exact string that
//! was written so the audit chain compares and hashes the same bytes the writer produced.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Text that is not an RFC 3339 timestamp (the parser's words kept as text, so the error
/// compares like the timestamp does).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 timestamp: {detail}")]
pub struct NotTimestamp {
    /// The text given.
    pub text: String,
    /// What the parser said.
    pub detail: String,
}

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
    pub fn parse(s: &str) -> Result<Self, NotTimestamp> {
        s.parse::<jiff::Timestamp>()
            .map(|_| Timestamp(s.to_owned()))
            .map_err(|e| NotTimestamp {
                text: s.to_owned(),
                detail: e.to_string(),
            })
    }

    /// Milliseconds from this time to `later` (negative when `later` is earlier); `None` when
    /// either is not a timestamp.
    pub fn millis_until(&self, later: &Timestamp) -> Option<i64> {
        let from: jiff::Timestamp = self.0.parse().ok()?;
        let to: jiff::Timestamp = later.0.parse().ok()?;
        Some(to.as_millisecond() - from.as_millisecond())
    }

    /// How long before `now` this was, as people say it: `just now`, `42 s ago`, `3 min ago`,
    /// `5 h ago`, `2 days ago`; past a month, its date. `None` when either is not a timestamp.
    pub fn ago(&self, now: &Timestamp) -> Option<String> {
        let secs = self.millis_until(now)? / 1000;
        Some(match secs {
            i64::MIN..=4 => "just now".to_owned(),
            5..=59 => format!("{secs} s ago"),
            60..=3599 => format!("{} min ago", secs / 60),
            3600..=86_399 => format!("{} h ago", secs / 3600),
            86_400..=172_799 => "yesterday".to_owned(),
            172_800..=2_591_999 => format!("{} days ago", secs / 86_400),
            _ => self.0.chars().take(10).collect(),
        })
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

#[cfg(test)]
mod ago_tests {
    use super::Timestamp;

    #[test]
    fn a_time_reads_as_how_long_ago_it_was() {
        let now = Timestamp::parse("2026-12-03T12:00:00Z").expect("now");
        let at = |s: &str| Timestamp::parse(s).expect("ts").ago(&now).expect("ago");
        assert_eq!(at("2026-12-03T12:00:00Z"), "just now");
        assert_eq!(at("2026-12-03T11:59:18Z"), "42 s ago");
        assert_eq!(at("2026-12-03T11:57:00Z"), "3 min ago");
        assert_eq!(at("2026-12-03T07:00:00Z"), "5 h ago");
        assert_eq!(at("2026-12-02T10:00:00Z"), "yesterday");
        assert_eq!(at("2026-11-29T12:00:00Z"), "4 days ago");
        assert_eq!(at("2026-10-01T12:00:00Z"), "2026-10-01");
    }
}
