//! Audit records: one content-minimized line per event, hash-chained.
//!
//! A record holds `{event_sha256, hash, prev, seq, time, type}` and nothing else: no message
//! text, no paths, no tool output. `hash = SHA-256(prev_bytes ‖ canonical record without
//! "hash")`, where `prev_bytes` are the 32 raw bytes of the previous record's hash, and the first
//! record's `prev` is [`genesis`] of the session id. The line on disk must be exactly the
//! canonical JSON of the record, so every record has one byte form; that also means the record
//! without `"hash"` is the line with its `"hash":"…",` member cut out, which is how the hash is
//! checked without re-serializing anything.

use std::borrow::Cow;

use heartwood_events::SessionId;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::Digest;

/// Domain separator for the first `prev` of a session's chain.
const GENESIS_DOMAIN: &[u8] = b"heartwood-audit-v1\0";

/// The `prev` of a session's first record: SHA-256 of `"heartwood-audit-v1\0" ‖ session id`,
/// which binds the chain to its session so records cannot be moved between sessions.
pub fn genesis(session: &SessionId) -> Digest {
    Digest::of_parts(&[GENESIS_DOMAIN, session.as_str().as_bytes()])
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord<'a> {
    /// The event's sequence number.
    pub seq: u64,
    /// The event's `type` tag.
    pub kind: Cow<'a, str>,
    /// The event's time, exactly as written in the event.
    pub time: Cow<'a, str>,
    /// SHA-256 of the event line's bytes (without its newline).
    pub event_sha256: Digest,
    /// The previous record's hash, or the genesis digest.
    pub prev: Digest,
    /// This record's hash.
    pub hash: Digest,
}

const EVENT_KEY: &[u8] = b"{\"event_sha256\":\"";
const HASH_KEY: &[u8] = b"\",\"hash\":\"";
const PREV_KEY: &[u8] = b"\",\"prev\":\"";
const SEQ_KEY: &[u8] = b"\",\"seq\":";
const TIME_KEY: &[u8] = b",\"time\":";
const TYPE_KEY: &[u8] = b",\"type\":";

impl<'a> AuditRecord<'a> {
    /// Builds and hashes the record for an event line.
    pub fn seal(
        seq: u64,
        kind: &'a str,
        time: &'a str,
        event_sha256: Digest,
        prev: Digest,
    ) -> Self {
        let mut record = AuditRecord {
            seq,
            kind: Cow::Borrowed(kind),
            time: Cow::Borrowed(time),
            event_sha256,
            prev,
            hash: Digest([0; 32]),
        };
        let line = record.to_line();
        record.hash = hash_of_line(&line, &prev).unwrap_or(Digest([0; 32]));
        record
    }

    /// The record's line (canonical JSON, without the newline).
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(300);
        out.extend_from_slice(EVENT_KEY);
        self.event_sha256.write_hex(&mut out);
        out.extend_from_slice(HASH_KEY);
        self.hash.write_hex(&mut out);
        out.extend_from_slice(PREV_KEY);
        self.prev.write_hex(&mut out);
        out.extend_from_slice(SEQ_KEY);
        out.extend_from_slice(self.seq.to_string().as_bytes());
        out.extend_from_slice(TIME_KEY);
        push_json_string(&mut out, &self.time);
        out.extend_from_slice(TYPE_KEY);
        push_json_string(&mut out, &self.kind);
        out.push(b'}');
        out
    }

    /// Parses a line, requiring it to be exactly the canonical form, and checks that its hash
    /// is the hash of its contents. The chain link (`prev`) is the caller's to check.
    pub fn parse_and_check(line: &'a [u8]) -> Result<AuditRecord<'a>, BadRecord> {
        let record = match parse_plain(line) {
            Some(record) => record,
            None => parse_general(line)?,
        };
        if hash_of_line(line, &record.prev) != Some(record.hash) {
            return Err(BadRecord::HashMismatch);
        }
        Ok(record)
    }
}

/// Why an audit line is not a valid record (a damage's `what`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRecord {
    /// Not JSON of a record's shape; the parser's words.
    #[error("not a valid audit record ({0})")]
    NotRecord(String),
    /// A digest field that is not lowercase SHA-256 hex.
    #[error("`{0}` is not a lowercase SHA-256 hex")]
    NotHex(&'static str),
    /// Valid, but not the canonical bytes.
    #[error("record is not in canonical form")]
    NotCanonical,
    /// Too short to hold a hash.
    #[error("record is too short")]
    TooShort,
    /// The `hash` is not the hash of the rest.
    #[error("record hash does not match its contents")]
    HashMismatch,
}

/// SHA-256(prev ‖ line without its `"hash":"…",` member).
fn hash_of_line(line: &[u8], prev: &Digest) -> Option<Digest> {
    let cut_from = EVENT_KEY.len() + 64 + 2; // just after `"event_sha256":"…",`
    let cut_to = cut_from + HASH_KEY.len() - 2 + 64 + 2; // just after `"hash":"…",`
    if line.len() < cut_to {
        return None;
    }
    let mut hasher = Sha256::new();
    hasher.update(prev.0);
    hasher.update(&line[..cut_from]);
    hasher.update(&line[cut_to..]);
    Some(Digest(hasher.finalize().into()))
}

/// The members of a canonical line whose strings need no escapes, digests still as hex text.
struct PlainFields<'a> {
    event_hex: &'a [u8],
    hash_hex: &'a [u8],
    prev_hex: &'a [u8],
    seq: u64,
    time: &'a str,
    kind: &'a str,
}

/// The fast path: a canonical line whose strings need no escapes (every record Heartwood
/// writes). Returns `None` for anything else, which the general path then judges.
fn plain_fields<'a>(line: &'a [u8]) -> Option<PlainFields<'a>> {
    let mut rest = line;
    let expect = |lit: &[u8], rest: &mut &[u8]| -> Option<()> {
        *rest = rest.strip_prefix(lit)?;
        Some(())
    };
    let take_hex = |rest: &mut &'a [u8]| -> Option<&'a [u8]> {
        let (hex, tail) = rest.split_at_checked(64)?;
        *rest = tail;
        Some(hex)
    };
    expect(EVENT_KEY, &mut rest)?;
    let event_hex = take_hex(&mut rest)?;
    expect(HASH_KEY, &mut rest)?;
    let hash_hex = take_hex(&mut rest)?;
    expect(PREV_KEY, &mut rest)?;
    let prev_hex = take_hex(&mut rest)?;
    expect(SEQ_KEY, &mut rest)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let (seq_text, tail) = rest.split_at(digits);
    rest = tail;
    if seq_text.is_empty() || seq_text.len() > 20 || (seq_text[0] == b'0' && seq_text.len() > 1) {
        return None;
    }
    let seq: u64 = std::str::from_utf8(seq_text).ok()?.parse().ok()?;
    expect(TIME_KEY, &mut rest)?;
    let time = take_plain_string(&mut rest)?;
    expect(TYPE_KEY, &mut rest)?;
    let kind = take_plain_string(&mut rest)?;
    if rest != b"}" {
        return None;
    }
    Some(PlainFields {
        event_hex,
        hash_hex,
        prev_hex,
        seq,
        time,
        kind,
    })
}

fn parse_plain(line: &[u8]) -> Option<AuditRecord<'_>> {
    let f = plain_fields(line)?;
    Some(AuditRecord {
        seq: f.seq,
        kind: Cow::Borrowed(f.kind),
        time: Cow::Borrowed(f.time),
        event_sha256: Digest::from_hex_bytes(f.event_hex)?,
        prev: Digest::from_hex_bytes(f.prev_hex)?,
        hash: Digest::from_hex_bytes(f.hash_hex)?,
    })
}

/// A record that is canonical, hashes correctly and links to the expected previous hash.
pub(crate) struct Linked<'a> {
    pub seq: u64,
    pub kind: Cow<'a, str>,
    pub time: Cow<'a, str>,
    /// The event digest as lowercase hex.
    pub event_hex: [u8; 64],
    pub hash: Digest,
}

/// Why a line is not the record that belongs next in the chain.
pub(crate) enum LineProblem {
    /// Not a canonical, correctly hashed record.
    Invalid(BadRecord),
    /// A valid record, but its `prev` is not the previous record's hash.
    Unlinked,
}

/// Checks that `line` is a canonical record, linked to `prev`, whose hash matches its contents.
/// The fast path compares hex text instead of decoding it: verification is bound by hashing,
/// and this keeps the rest of the work per record small.
pub(crate) fn check_line<'a>(line: &'a [u8], prev: &Digest) -> Result<Linked<'a>, LineProblem> {
    let Some(f) = plain_fields(line) else {
        let record = AuditRecord::parse_and_check(line).map_err(LineProblem::Invalid)?;
        if record.prev != *prev {
            return Err(LineProblem::Unlinked);
        }
        return Ok(Linked {
            seq: record.seq,
            kind: record.kind,
            time: record.time,
            event_hex: record.event_sha256.hex_array(),
            hash: record.hash,
        });
    };
    if f.prev_hex != prev.hex_array() {
        return Err(if Digest::is_hex(f.prev_hex) {
            LineProblem::Unlinked
        } else {
            LineProblem::Invalid(BadRecord::NotHex("prev"))
        });
    }
    if !Digest::is_hex(f.event_hex) {
        return Err(LineProblem::Invalid(BadRecord::NotHex("event_sha256")));
    }
    let hash = hash_of_line(line, prev).ok_or(LineProblem::Invalid(BadRecord::TooShort))?;
    if f.hash_hex != hash.hex_array() {
        return Err(LineProblem::Invalid(BadRecord::HashMismatch));
    }
    let mut event_hex = [0u8; 64];
    event_hex.copy_from_slice(f.event_hex);
    Ok(Linked {
        seq: f.seq,
        kind: Cow::Borrowed(f.kind),
        time: Cow::Borrowed(f.time),
        event_hex,
        hash,
    })
}

/// A JSON string with no escapes and no control characters.
fn take_plain_string<'a>(rest: &mut &'a [u8]) -> Option<&'a str> {
    let body = rest.strip_prefix(b"\"")?;
    let end = body
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    if body[end] != b'"' {
        return None;
    }
    let text = std::str::from_utf8(&body[..end]).ok()?;
    *rest = &body[end + 1..];
    Some(text)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord<'a> {
    #[serde(borrow)]
    event_sha256: Cow<'a, str>,
    #[serde(borrow)]
    hash: Cow<'a, str>,
    #[serde(borrow)]
    prev: Cow<'a, str>,
    seq: u64,
    #[serde(borrow)]
    time: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// The general path: any JSON, accepted only if re-serializing it gives back the same bytes.
fn parse_general(line: &[u8]) -> Result<AuditRecord<'_>, BadRecord> {
    let raw: RawRecord<'_> =
        serde_json::from_slice(line).map_err(|e| BadRecord::NotRecord(e.to_string()))?;
    let digest = |name: &'static str, s: &str| Digest::from_hex(s).ok_or(BadRecord::NotHex(name));
    let record = AuditRecord {
        seq: raw.seq,
        kind: raw.kind,
        time: raw.time,
        event_sha256: digest("event_sha256", &raw.event_sha256)?,
        prev: digest("prev", &raw.prev)?,
        hash: digest("hash", &raw.hash)?,
    };
    if record.to_line() != line {
        return Err(BadRecord::NotCanonical);
    }
    Ok(record)
}

fn push_json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use heartwood_events::to_canonical_value_bytes;

    fn sample() -> AuditRecord<'static> {
        let session = SessionId::parse("s1").expect("id");
        AuditRecord::seal(
            1,
            "message",
            "2026-11-30T00:00:00.000Z",
            Digest::of(b"e"),
            genesis(&session),
        )
    }

    #[test]
    fn the_line_is_the_canonical_json_of_the_record() {
        let record = sample();
        let line = record.to_line();
        let value: serde_json::Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(to_canonical_value_bytes(&value).expect("canonical"), line);
        assert_eq!(value["seq"], 1);
        assert_eq!(value["type"], "message");
    }

    #[test]
    fn the_hash_covers_prev_and_the_canonical_record_without_hash() {
        let record = sample();
        let mut value: serde_json::Value = serde_json::from_slice(&record.to_line()).expect("json");
        value.as_object_mut().expect("object").remove("hash");
        let body = to_canonical_value_bytes(&value).expect("canonical");
        assert_eq!(record.hash, Digest::of_parts(&[&record.prev.0, &body]));
    }

    #[test]
    fn parse_refuses_non_canonical_spellings_and_wrong_hashes() {
        let line = sample().to_line();
        assert_eq!(AuditRecord::parse_and_check(&line), Ok(sample()));
        let text = String::from_utf8(line).expect("utf8");
        for bad in [
            text.replace(',', ", "),
            text.replacen("\"hash\":\"", "\"hash\":\"A", 1),
            text.replace("\"seq\":1", "\"seq\":2"),
            text.replace("\"seq\":1", "\"seq\":01"),
            text.replace("message", "messag\\u0065"),
            text.replace('}', ",\"extra\":1}"),
        ] {
            assert!(
                AuditRecord::parse_and_check(bad.as_bytes()).is_err(),
                "accepted {bad}"
            );
        }
    }

    #[test]
    fn strings_that_need_escapes_take_the_general_path_and_still_verify() {
        let session = SessionId::parse("s1").expect("id");
        let record = AuditRecord::seal(3, "odd\"kind", "t\n", Digest::of(b"e"), genesis(&session));
        let line = record.to_line();
        assert!(parse_plain(&line).is_none());
        assert_eq!(AuditRecord::parse_and_check(&line), Ok(record));
    }
}
