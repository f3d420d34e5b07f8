//! Decimal text read into double-double without passing through a double: `0.1` becomes the
//! double-double nearest one tenth (error near 10⁻³²), not the double nearest it (error near
//! 10⁻¹⁷). Ill-conditioned problems such as NIST's Filip amplify the difference past ten digits.

use crate::dd::Dd;

/// The most significant digits kept; digits beyond are below double-double resolution.
const KEPT_DIGITS: usize = 36;
/// The largest decimal exponent accepted (doubles end near 10³⁰⁸).
const MAX_EXPONENT: i32 = 300;
/// The longest cell text read as a number.
pub const MAX_DECIMAL_LEN: usize = 400;

/// Why a cell is not a decimal number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecimalError {
    /// Not of the form `[+-]digits[.digits][(e|E)[+-]digits]`.
    Syntax,
    /// Magnitude beyond about 10^±300.
    Range,
}

/// Parses `[+-]digits[.digits][(e|E)[+-]digits]` (at least one digit before the exponent; no
/// spaces, no `nan` or `inf`) into the nearest double-double (within a few units of 10⁻³²).
pub fn parse_decimal(text: &str) -> Result<Dd, DecimalError> {
    if text.is_empty() || text.len() > MAX_DECIMAL_LEN {
        return Err(DecimalError::Syntax);
    }
    let bytes = text.as_bytes();
    let (negative, mut at) = match bytes[0] {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    // Kept digits, on the stack (a table holds millions of cells).
    let mut kept = [0u8; KEPT_DIGITS];
    let mut count = 0;
    let mut any_digit = false;
    // The decimal exponent of the last kept digit.
    let mut exponent: i64 = 0;
    let mut after_point = false;
    while at < bytes.len() {
        match bytes[at] {
            b @ b'0'..=b'9' => {
                any_digit = true;
                let leading_zero = b == b'0' && count == 0;
                if count < KEPT_DIGITS && !leading_zero {
                    kept[count] = b - b'0';
                    count += 1;
                    if after_point {
                        exponent -= 1;
                    }
                } else if leading_zero {
                    if after_point {
                        exponent -= 1;
                    }
                } else if !after_point {
                    // A dropped digit before the point still scales the value.
                    exponent += 1;
                }
            }
            b'.' if !after_point => after_point = true,
            b'e' | b'E' => break,
            _ => return Err(DecimalError::Syntax),
        }
        at += 1;
    }
    if !any_digit {
        return Err(DecimalError::Syntax);
    }
    if at < bytes.len() {
        exponent += exponent_part(&bytes[at + 1..])?;
    }
    if count == 0 {
        return Ok(Dd::ZERO);
    }
    let digits = &kept[..count];
    let magnitude_exponent = exponent + count as i64;
    if !(-i64::from(MAX_EXPONENT)..=i64::from(MAX_EXPONENT)).contains(&magnitude_exponent) {
        return Err(DecimalError::Range);
    }
    let mantissa = mantissa(digits);
    let scaled = scale(mantissa, exponent as i32);
    if !scaled.is_finite() {
        return Err(DecimalError::Range);
    }
    Ok(if negative { -scaled } else { scaled })
}

/// `(e|E)` already consumed: `[+-]digits`.
fn exponent_part(bytes: &[u8]) -> Result<i64, DecimalError> {
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || digits.len() > 6 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(DecimalError::Syntax);
    }
    let value = digits
        .iter()
        .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
    Ok(if negative { -value } else { value })
}

/// The integer the digits spell, in chunks of at most 15 digits (each exact in a double).
fn mantissa(digits: &[u8]) -> Dd {
    let mut value = Dd::ZERO;
    for chunk in digits.chunks(15) {
        let part = chunk
            .iter()
            .fold(0.0f64, |acc, d| acc * 10.0 + f64::from(*d));
        value = value.mul_f64(10f64.powi(chunk.len() as i32)).add_f64(part);
    }
    value
}

/// `value × 10^exponent`.
fn scale(value: Dd, exponent: i32) -> Dd {
    if exponent == 0 {
        return value;
    }
    let power = power_of_ten(exponent.unsigned_abs());
    if exponent > 0 {
        value * power
    } else {
        value / power
    }
}

/// `10^n` as a double-double: exact up to 10²², then by squaring.
fn power_of_ten(n: u32) -> Dd {
    if n <= 22 {
        return Dd::from_f64(10f64.powi(n as i32));
    }
    let mut result = Dd::ONE;
    let mut base = Dd::from_f64(10.0);
    let mut n = n;
    while n > 0 {
        if n & 1 == 1 {
            result = result * base;
        }
        base = base * base;
        n >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tenth_is_nearer_than_the_double() {
        let tenth = parse_decimal("0.1").expect("a number");
        // 0.1 as a double is 0.1000000000000000055511151231257827...
        assert_eq!(tenth.hi, 0.1);
        assert!((tenth.lo + 5.551115123125783e-18).abs() < 1e-33);
    }

    #[test]
    fn exact_doubles_have_no_tail() {
        for text in ["3", "-75901", "0.5", "2.5e3", "+1E-2"] {
            let value = parse_decimal(text).expect("a number");
            assert_eq!(value.hi, text.parse::<f64>().expect("f64"), "{text}");
        }
        assert_eq!(parse_decimal("0.5").expect("n").lo, 0.0);
    }

    #[test]
    fn long_mantissas_and_exponents_are_read() {
        let v = parse_decimal("-0.402962525080404E-04").expect("a number");
        assert_eq!(v.to_f64(), -0.402962525080404E-04);
        let v = parse_decimal("123456789012345678901234567890").expect("a number");
        assert_eq!(v.to_f64(), 1.2345678901234568e29);
        assert_eq!(parse_decimal("000.000").expect("zero"), Dd::ZERO);
    }

    #[test]
    fn text_that_is_not_a_plain_decimal_is_refused() {
        for text in [
            "",
            " 1",
            "1 ",
            "nan",
            "inf",
            "1e",
            "e5",
            ".",
            "1.2.3",
            "--1",
            "0x10",
            "1e9999999",
        ] {
            assert!(parse_decimal(text).is_err(), "{text:?}");
        }
        assert_eq!(parse_decimal("1e400"), Err(DecimalError::Range));
    }
}
