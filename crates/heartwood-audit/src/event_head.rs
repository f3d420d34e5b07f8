//! Finding an event line's `seq`, `type` and `time` (the fields its audit record repeats), and
//! the `command` that caused it (which binds the command receipts to the chain), without
//! deserializing the rest of the line.
//!
//! Verification is bound by how fast it gets through event lines, and most of an event's bytes
//! are content (message text, tool output) that verification only hashes. The fast path walks
//! the top-level members and skips every other value by its brackets and quotes; it does not
//! validate the skipped content, which the event's SHA-256 in the chained audit record
//! authenticates byte for byte. Anything unusual (escapes in a wanted member, a missing member)
//! falls back to `serde_json`, which also gives the error message.

use std::borrow::Cow;

use serde::Deserialize;

/// The fields of an event line that the audit record repeats.
#[derive(Debug, PartialEq, Eq, Deserialize)]
pub(crate) struct EventHead<'a> {
    pub seq: u64,
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow)]
    pub time: Cow<'a, str>,
    #[serde(default, borrow)]
    pub command: Option<Cow<'a, str>>,
}

/// Reads the head of an event line.
pub(crate) fn event_head(line: &[u8]) -> Result<EventHead<'_>, serde_json::Error> {
    match scan(line) {
        Some(head) => Ok(head),
        None => serde_json::from_slice(line),
    }
}

fn scan(line: &[u8]) -> Option<EventHead<'_>> {
    let mut pos = 1;
    if line.first() != Some(&b'{') {
        return None;
    }
    let (mut seq, mut kind, mut time, mut command) = (None, None, None, None);
    loop {
        let key = plain_string(line, &mut pos)?;
        if line.get(pos) != Some(&b':') {
            return None;
        }
        pos += 1;
        match key {
            "seq" => seq = Some(integer(line, &mut pos)?),
            "type" => kind = Some(plain_string(line, &mut pos)?),
            "time" => time = Some(plain_string(line, &mut pos)?),
            "command" if line.get(pos..pos + 4) == Some(b"null") => pos += 4,
            "command" => command = Some(plain_string(line, &mut pos)?),
            _ => skip_value(line, &mut pos)?,
        }
        match line.get(pos)? {
            b',' => pos += 1,
            b'}' if pos + 1 == line.len() => break,
            _ => return None,
        }
    }
    Some(EventHead {
        seq: seq?,
        kind: Cow::Borrowed(kind?),
        time: Cow::Borrowed(time?),
        command: command.map(Cow::Borrowed),
    })
}

/// A string with no escapes, starting at `pos`.
fn plain_string<'a>(line: &'a [u8], pos: &mut usize) -> Option<&'a str> {
    if line.get(*pos) != Some(&b'"') {
        return None;
    }
    let start = *pos + 1;
    let len = memchr::memchr2(b'"', b'\\', line.get(start..)?)?;
    if line[start + len] != b'"' {
        return None;
    }
    *pos = start + len + 1;
    std::str::from_utf8(&line[start..start + len]).ok()
}

fn integer(line: &[u8], pos: &mut usize) -> Option<u64> {
    let digits = line
        .get(*pos..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    // JSON numbers have no leading zeros: `02` is left to serde, which refuses it.
    if digits > 1 && line[*pos] == b'0' {
        return None;
    }
    let text = std::str::from_utf8(&line[*pos..*pos + digits]).ok()?;
    *pos += digits;
    text.parse().ok()
}

/// Moves `pos` past one JSON value of any kind.
fn skip_value(line: &[u8], pos: &mut usize) -> Option<()> {
    let mut depth = 0usize;
    loop {
        match *line.get(*pos)? {
            b'"' => skip_string(line, pos)?,
            b'{' | b'[' => {
                depth += 1;
                *pos += 1;
            }
            b'}' | b']' if depth > 0 => {
                depth -= 1;
                *pos += 1;
            }
            b'}' | b']' => return None,
            _ => *pos += 1,
        }
        if depth == 0 && matches!(line.get(*pos), Some(b',' | b'}')) {
            return Some(());
        }
    }
}

fn skip_string(line: &[u8], pos: &mut usize) -> Option<()> {
    let mut at = *pos + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', line.get(at..)?)?;
        if line[at] == b'\\' {
            at += 2;
        } else {
            *pos = at + 1;
            return Some(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn finds_the_head_among_other_members_of_any_shape() {
        let line = br#"{"a":{"seq":9,"x":["}",{"y":"\"time\""}]},"schema":1,"seq":42,"text":"q\"}{","time":"2026-11-30T00:00:00.000Z","type":"message","z":null}"#;
        let head = scan(line).expect("fast path");
        assert_eq!(
            (head.seq, &*head.kind, &*head.time),
            (42, "message", "2026-11-30T00:00:00.000Z")
        );
    }

    #[test]
    fn unusual_lines_fall_back_to_serde_and_agree_with_it() {
        let escaped = br#"{"seq":1,"time":"t","type":"mess\u0061ge"}"#;
        assert!(scan(escaped).is_none());
        assert_eq!(
            event_head(escaped)
                .map(|h| h.kind.into_owned())
                .map_err(|e| e.to_string()),
            Ok("message".to_owned())
        );
        for bad in [
            &br#"{"seq":1,"time":"t"}"#[..],
            b"{\"seq\":1",
            b"not json",
            b"",
        ] {
            assert!(event_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    proptest! {
        #[test]
        fn the_fast_path_agrees_with_serde_on_real_event_lines(
            text in "\\PC{0,80}",
            n in 1u64..u64::MAX,
            command in proptest::option::of("[A-Za-z0-9_-]{1,20}"),
        ) {
            let event = heartwood_events::RecordedEvent::new(
                heartwood_events::Seq::new(n).expect("seq"),
                command.map(|c| heartwood_events::CommandId::parse(&c).expect("id")),
                heartwood_events::Event::Message { role: heartwood_events::Role::Agent, text },
            );
            let line = heartwood_events::to_canonical_bytes(&event).expect("canonical");
            let fast = scan(&line).expect("fast path");
            let slow: EventHead<'_> = serde_json::from_slice(&line).expect("serde");
            prop_assert_eq!(fast, slow);
        }
    }
}
