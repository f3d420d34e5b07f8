//! SHA-256 digests as they appear in audit records: 32 bytes, written as lowercase hex.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// SHA-256 of the concatenation of `parts`.
    pub fn of_parts(parts: &[&[u8]]) -> Digest {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part);
        }
        Digest(hasher.finalize().into())
    }

    /// Parses exactly 64 lowercase hex digits; anything else (including uppercase) is refused,
    /// so one digest has exactly one spelling on disk.
    pub fn from_hex(s: &str) -> Option<Digest> {
        Digest::from_hex_bytes(s.as_bytes())
    }

    /// [`Digest::from_hex`] over bytes.
    pub fn from_hex_bytes(s: &[u8]) -> Option<Digest> {
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        let mut invalid = 0u8;
        for (byte, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
            let (hi, lo) = (NIBBLE[usize::from(pair[0])], NIBBLE[usize::from(pair[1])]);
            invalid |= (hi | lo) & 0xf0;
            *byte = (hi << 4) | (lo & 0x0f);
        }
        (invalid == 0).then_some(Digest(out))
    }

    /// Appends the lowercase hex spelling to `out`.
    pub fn write_hex(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hex_array());
    }

    /// Lowercase hex as a fixed array, for comparing with hex text without allocating.
    pub fn hex_array(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (pair, byte) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        out
    }

    /// Whether `hex` is 64 lowercase hex digits.
    pub fn is_hex(hex: &[u8]) -> bool {
        hex.len() == 64 && hex.iter().all(|&b| NIBBLE[usize::from(b)] != 0xff)
    }

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        let mut out = Vec::with_capacity(64);
        self.write_hex(&mut out);
        // Only ASCII hex digits were written.
        String::from_utf8(out).unwrap_or_default()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Digest::from_hex(&s)
            .ok_or_else(|| serde::de::Error::custom("expected 64 lowercase hex digits"))
    }
}

/// Value of each lowercase hex digit; 0xff marks every other byte.
static NIBBLE: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_has_one_spelling() {
        let d = Digest::of(b"abc");
        assert_eq!(
            d.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex(&d.to_hex().to_uppercase()), None);
        assert_eq!(Digest::from_hex("abc"), None);
        assert_eq!(Digest::from_hex(&"g".repeat(64)), None);
    }
}
