//! The two working precisions the solvers are written over: `f64` for large problems that are
//! well conditioned, double-double for everything else.

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::dd::Dd;

/// A working precision.
pub(crate) trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + PartialOrd
    + Send
    + Sync
{
    /// Zero.
    const ZERO: Self;
    /// The unit roundoff of the precision.
    const UNIT_ROUNDOFF: f64;
    /// From a double, exactly.
    fn of(x: f64) -> Self;
    /// From a double-double, rounded to this precision.
    fn of_dd(x: Dd) -> Self;
    /// To a double-double, exactly.
    fn dd(self) -> Dd;
    /// The nearest double.
    fn f64(self) -> f64;
    /// The square root.
    fn sqrt(self) -> Self;
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;
    fn of(x: f64) -> f64 {
        x
    }
    fn of_dd(x: Dd) -> f64 {
        x.to_f64()
    }
    fn dd(self) -> Dd {
        Dd::from_f64(self)
    }
    fn f64(self) -> f64 {
        self
    }
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
}

impl Real for Dd {
    const ZERO: Dd = Dd::ZERO;
    // 2⁻¹⁰⁴ is the ideal; the operations lose a few bits more.
    const UNIT_ROUNDOFF: f64 = 1.0e-31;
    fn of(x: f64) -> Dd {
        Dd::from_f64(x)
    }
    fn of_dd(x: Dd) -> Dd {
        x
    }
    fn dd(self) -> Dd {
        self
    }
    fn f64(self) -> f64 {
        self.to_f64()
    }
    fn sqrt(self) -> Dd {
        Dd::sqrt(self)
    }
}
