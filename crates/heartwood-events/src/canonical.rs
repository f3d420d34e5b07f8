//! The canonical JSON byte form that Heartwood hashes.
//!
//! Rules (also in `docs/journal-format.md`, so an independent verifier can reproduce them):
//! UTF-8; no insignificant whitespace; object keys sorted by Unicode code point; strings escaped
//! minimally (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control characters as lowercase
//! `\u00xx`, everything else literal); numbers are integers only. Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` produces the same
//! bytes for any value that obeys these rules. Floats are refused because two languages do not
//! agree on how to print them.

use serde::Serialize;
use serde_json::Value;

/// Why a value has no canonical form.
#[derive(Debug, thiserror::Error)]
pub enum CanonicalError {
    /// The value could not be turned into JSON at all.
    #[error("value cannot be represented as JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// The value held a non-integer number.
    #[error("canonical JSON allows integers only; found {0} (store fractions as integer units)")]
    NonIntegerNumber(String),
}

/// Serializes `value` into canonical JSON bytes.
pub fn to_canonical_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    to_canonical_value_bytes(&serde_json::to_value(value)?)
}

/// Writes an already-built JSON value in canonical form.
pub fn to_canonical_value_bytes(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(256);
    write_value(value, &mut out)?;
    Ok(out)
}

fn write_value(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if !(n.is_i64() || n.is_u64()) {
                return Err(CanonicalError::NonIntegerNumber(n.to_string()));
            }
            out.extend_from_slice(n.to_string().as_bytes());
        }
        Value::String(s) => serde_json::to_writer(&mut *out, s)?,
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Sorted here, not by relying on serde_json's map type: a dependency enabling its
            // `preserve_order` feature would otherwise silently change every hash.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, key)?;
                out.push(b':');
                write_value(item, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: Value) -> String {
        String::from_utf8(to_canonical_value_bytes(&v).expect("canonical")).expect("utf-8")
    }

    #[test]
    fn keys_are_sorted_by_code_point_at_every_depth() {
        let v = json!({"b": 1, "a": {"z": [true, null], "é": "x", "Z": -3}});
        assert_eq!(canon(v), r#"{"a":{"Z":-3,"z":[true,null],"é":"x"},"b":1}"#);
    }

    #[test]
    fn strings_use_minimal_lowercase_escapes() {
        let v = json!("q\"b\\n\n t\t\u{1}\u{1f}é\u{2028}");
        assert_eq!(
            canon(v),
            "\"q\\\"b\\\\n\\n t\\t\\u0001\\u001féu{2028}\"".replace("u{2028}", "\u{2028}")
        );
    }

    #[test]
    fn floats_are_refused() {
        let err = to_canonical_value_bytes(&json!({"cost": 0.25})).expect_err("float accepted");
        assert!(err.to_string().contains("integers only"), "{err}");
    }
}
