//! Numeric columns as given: doubles, or decimal text read to double-double so that values
//! such as `0.1` reach the solver unrounded.

use crate::dd::Dd;
use crate::decimal::{DecimalError, parse_decimal};

/// One numeric column. Values that are exact doubles are stored as doubles; a column holding
/// any decimal a double cannot represent exactly is stored in double-double.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Column {
    values: Values,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Values {
    Float(Vec<f64>),
    Exact(Vec<Dd>),
}

impl Default for Values {
    fn default() -> Self {
        Values::Float(Vec::new())
    }
}

/// Why a value cannot be added to a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellError {
    /// Not a plain decimal number.
    NotANumber,
    /// Beyond about 10^±300.
    OutOfRange,
}

impl Column {
    /// An empty column.
    pub fn new() -> Column {
        Column::default()
    }

    /// A column of doubles, taken as exact. Refuses NaN and infinities (the index of the first).
    pub fn from_f64(values: Vec<f64>) -> Result<Column, usize> {
        match values.iter().position(|v| !v.is_finite()) {
            Some(at) => Err(at),
            None => Ok(Column {
                values: Values::Float(values),
            }),
        }
    }

    /// A column read from decimal text (see [`Column::push_text`]); the error names the
    /// index of the first cell that is not a number.
    pub fn from_text<'a>(
        cells: impl IntoIterator<Item = &'a str>,
    ) -> Result<Column, (usize, CellError)> {
        let mut column = Column::new();
        for (at, cell) in cells.into_iter().enumerate() {
            column.push_text(cell).map_err(|e| (at, e))?;
        }
        Ok(column)
    }

    /// Appends a decimal `[+-]digits[.digits][(e|E)[+-]digits]` read to double-double
    /// precision (no spaces, no `nan`, no `inf`).
    pub fn push_text(&mut self, text: &str) -> Result<(), CellError> {
        let value = parse_decimal(text).map_err(|e| match e {
            DecimalError::Syntax => CellError::NotANumber,
            DecimalError::Range => CellError::OutOfRange,
        })?;
        self.push_dd(value);
        Ok(())
    }

    /// Appends a double. Refuses NaN and infinities.
    pub fn push_f64(&mut self, value: f64) -> Result<(), CellError> {
        if !value.is_finite() {
            return Err(CellError::NotANumber);
        }
        self.push_dd(Dd::from_f64(value));
        Ok(())
    }

    /// Appends a double-double value (for values computed exactly, such as powers of a
    /// decimal). Refuses non-finite values.
    pub fn push_exact(&mut self, value: Dd) -> Result<(), CellError> {
        if !value.is_finite() {
            return Err(CellError::NotANumber);
        }
        self.push_dd(value);
        Ok(())
    }

    fn push_dd(&mut self, value: Dd) {
        match &mut self.values {
            Values::Float(v) if value.lo == 0.0 => v.push(value.hi),
            Values::Float(v) => {
                let mut exact: Vec<Dd> = v.iter().map(|x| Dd::from_f64(*x)).collect();
                exact.push(value);
                self.values = Values::Exact(exact);
            }
            Values::Exact(v) => v.push(value),
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        match &self.values {
            Values::Float(v) => v.len(),
            Values::Exact(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `i`, rounded to a double.
    pub fn get(&self, i: usize) -> Option<f64> {
        match &self.values {
            Values::Float(v) => v.get(i).copied(),
            Values::Exact(v) => v.get(i).map(|x| x.to_f64()),
        }
    }

    /// Whether every value is an exact double.
    pub fn is_double(&self) -> bool {
        matches!(self.values, Values::Float(_))
    }

    pub(crate) fn values(&self) -> &Values {
        &self.values
    }

    /// The values as double-doubles.
    pub(crate) fn to_dd(&self) -> Vec<Dd> {
        match &self.values {
            Values::Float(v) => v.iter().map(|x| Dd::from_f64(*x)).collect(),
            Values::Exact(v) => v.clone(),
        }
    }

    /// The largest magnitude (0 for an empty column).
    pub(crate) fn max_abs(&self) -> f64 {
        match &self.values {
            Values::Float(v) => v.iter().fold(0.0, |m, x| m.max(x.abs())),
            Values::Exact(v) => v.iter().fold(0.0, |m, x| m.max(x.hi.abs())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_of_exact_doubles_stays_double() {
        let c = Column::from_text(["1", "2.5", "-3e2"]).expect("numbers");
        assert!(c.is_double());
        assert_eq!(c.get(2), Some(-300.0));
    }

    #[test]
    fn one_inexact_decimal_keeps_the_whole_column_exact() {
        let c = Column::from_text(["1", "0.1", "2"]).expect("numbers");
        assert!(!c.is_double());
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(1), Some(0.1));
    }

    #[test]
    fn the_first_bad_cell_is_named() {
        assert_eq!(
            Column::from_text(["1", "x", "y"]),
            Err((1, CellError::NotANumber))
        );
        assert_eq!(Column::from_f64(vec![1.0, f64::NAN]), Err(1));
    }
}
