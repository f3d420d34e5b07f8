//! Double-double arithmetic: a value is the unevaluated sum `hi + lo` of two doubles with
//! `|lo| ≤ ulp(hi)/2`, about 32 significant decimal digits (unit roundoff near 2⁻¹⁰⁴).
//!
//! The error-free transformations are Knuth's two-sum and the fused multiply-add form of
//! Dekker's two-product; the operations follow the accurate ("IEEE-style") variants of Hida,
//! Li and Bailey's QD library, written from the published algorithms.

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// A double-double number `hi + lo`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Dd {
    /// The leading double: the value rounded to double precision.
    pub hi: f64,
    /// The trailing correction.
    pub lo: f64,
}

/// `a + b` as a rounded sum and its exact error (Knuth).
#[inline]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// `a + b` and its error when `|a| ≥ |b|` (Dekker).
#[inline]
fn quick_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a × b` as a rounded product and its exact error: one fused multiply-add where the build
/// targets hardware FMA, Dekker's splitting otherwise (a library `fma` call per product would
/// cost several times more). Exact unless the product overflows.
#[inline]
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    #[cfg(target_feature = "fma")]
    {
        (p, a.mul_add(b, -p))
    }
    #[cfg(not(target_feature = "fma"))]
    {
        let (a_hi, a_lo) = split(a);
        let (b_hi, b_lo) = split(b);
        (
            p,
            ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo,
        )
    }
}

/// `a` as two halves of 26 bits each, `a = hi + lo` exactly (Veltkamp).
#[cfg(not(target_feature = "fma"))]
#[inline]
fn split(a: f64) -> (f64, f64) {
    const FACTOR: f64 = 134_217_729.0; // 2^27 + 1
    let c = FACTOR * a;
    let hi = c - (c - a);
    (hi, a - hi)
}

impl Dd {
    /// Zero.
    pub const ZERO: Dd = Dd { hi: 0.0, lo: 0.0 };
    /// One.
    pub const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };

    /// A double, exactly.
    #[inline]
    pub const fn from_f64(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }

    /// The nearest double.
    #[inline]
    pub fn to_f64(self) -> f64 {
        self.hi + self.lo
    }

    /// The exact product of two doubles.
    #[inline]
    pub fn product(a: f64, b: f64) -> Dd {
        let (hi, lo) = two_prod(a, b);
        Dd { hi, lo }
    }

    /// `self × b` for a double `b` (cheaper than a full product).
    #[inline]
    pub fn mul_f64(self, b: f64) -> Dd {
        let (p, e) = two_prod(self.hi, b);
        let e = self.lo * b + e;
        let (hi, lo) = quick_two_sum(p, e);
        Dd { hi, lo }
    }

    /// `self + b` for a double `b`.
    #[inline]
    pub fn add_f64(self, b: f64) -> Dd {
        let (s, e) = two_sum(self.hi, b);
        let (hi, lo) = quick_two_sum(s, e + self.lo);
        Dd { hi, lo }
    }

    /// The absolute value.
    #[inline]
    pub fn abs(self) -> Dd {
        if self.hi < 0.0 { -self } else { self }
    }

    /// The square root (one Newton correction of the double square root, Karp's trick).
    pub fn sqrt(self) -> Dd {
        if self.hi <= 0.0 {
            return Dd::from_f64(self.hi.max(0.0).sqrt());
        }
        let x = 1.0 / self.hi.sqrt();
        let ax = self.hi * x;
        let residual = self - Dd::product(ax, ax);
        Dd::from_f64(ax).add_f64(residual.hi * (x * 0.5))
    }

    /// Whether both parts are finite.
    #[inline]
    pub fn is_finite(self) -> bool {
        self.hi.is_finite() && self.lo.is_finite()
    }
}

impl Add for Dd {
    type Output = Dd;
    #[inline]
    fn add(self, b: Dd) -> Dd {
        let (s, e) = two_sum(self.hi, b.hi);
        let (t, f) = two_sum(self.lo, b.lo);
        let (s, e) = quick_two_sum(s, e + t);
        let (hi, lo) = quick_two_sum(s, e + f);
        Dd { hi, lo }
    }
}

impl Sub for Dd {
    type Output = Dd;
    #[inline]
    fn sub(self, b: Dd) -> Dd {
        self + (-b)
    }
}

impl Neg for Dd {
    type Output = Dd;
    #[inline]
    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
}

impl Mul for Dd {
    type Output = Dd;
    #[inline]
    fn mul(self, b: Dd) -> Dd {
        let (p, e) = two_prod(self.hi, b.hi);
        let e = self.hi * b.lo + self.lo * b.hi + e;
        let (hi, lo) = quick_two_sum(p, e);
        Dd { hi, lo }
    }
}

impl Div for Dd {
    type Output = Dd;
    fn div(self, b: Dd) -> Dd {
        let q1 = self.hi / b.hi;
        let r = self - b.mul_f64(q1);
        let q2 = r.hi / b.hi;
        let r = r - b.mul_f64(q2);
        let q3 = r.hi / b.hi;
        let (hi, lo) = quick_two_sum(q1, q2);
        Dd { hi, lo }.add_f64(q3)
    }
}

impl AddAssign for Dd {
    #[inline]
    fn add_assign(&mut self, b: Dd) {
        *self = *self + b;
    }
}

impl SubAssign for Dd {
    #[inline]
    fn sub_assign(&mut self, b: Dd) {
        *self = *self - b;
    }
}

impl PartialOrd for Dd {
    fn partial_cmp(&self, other: &Dd) -> Option<std::cmp::Ordering> {
        match self.hi.partial_cmp(&other.hi) {
            Some(std::cmp::Ordering::Equal) => self.lo.partial_cmp(&other.lo),
            ordering => ordering,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_third_times_three_is_one_to_thirty_digits() {
        let third = Dd::ONE / Dd::from_f64(3.0);
        let back = third * Dd::from_f64(3.0);
        assert!((back - Dd::ONE).to_f64().abs() < 1e-31);
    }

    #[test]
    fn square_root_of_two_squares_back() {
        let root = Dd::from_f64(2.0).sqrt();
        assert!((root * root - Dd::from_f64(2.0)).to_f64().abs() < 1e-31);
    }

    #[test]
    fn sums_keep_what_doubles_lose() {
        let big = Dd::from_f64(1e16);
        let total = big + Dd::ONE - big;
        assert_eq!(total.to_f64(), 1.0);
    }
}
