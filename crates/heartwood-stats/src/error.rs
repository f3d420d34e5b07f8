//! What can be wrong with a model's input. A computation that ran but cannot vouch for its
//! figures is not an error: it returns a fit whose status is `unreliable`.

/// Why a model could not be fitted at all. Each message says what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// A distribution asked for something it does not have.
    #[error("{0}")]
    Distribution(String),
    /// A cell is not a number.
    #[error(
        "row {row} of column {column:?} is not a number ({text:?}); give a plain decimal such as 12.5 or -3e-4"
    )]
    NotANumber {
        /// The column's name.
        column: String,
        /// The row, counting from 1 after the header.
        row: usize,
        /// The cell's text (shortened).
        text: String,
    },
    /// A number beyond the range the solver accepts.
    #[error(
        "row {row} of column {column:?} is out of range ({text:?}); values must lie within about 1e±300"
    )]
    OutOfRange {
        /// The column's name.
        column: String,
        /// The row, counting from 1.
        row: usize,
        /// The cell's text (shortened).
        text: String,
    },
    /// Columns of different lengths.
    #[error(
        "column {column:?} has {found} rows but the outcome has {expected}; give every column one value per row"
    )]
    LengthMismatch {
        /// The column's name.
        column: String,
        /// Its length.
        found: usize,
        /// The outcome's length.
        expected: usize,
    },
    /// No rows.
    #[error("there are no rows to fit; give a table with a header and at least one data row")]
    Empty,
    /// As many or more coefficients than rows.
    #[error(
        "the model has {coefficients} coefficients but only {rows} rows; give more rows than coefficients (drop predictors or add data)"
    )]
    TooFewRows {
        /// Coefficients, intercept and dummies included.
        coefficients: usize,
        /// Rows.
        rows: usize,
    },
    /// The model has no coefficient at all.
    #[error("the model has no coefficients; name at least one predictor or keep the intercept")]
    NoCoefficients,
    /// Over a published limit.
    #[error("{what} is {found}, over the limit of {limit}; {advice}")]
    Limit {
        /// What was counted.
        what: &'static str,
        /// The count.
        found: usize,
        /// The limit.
        limit: usize,
        /// What to do.
        advice: &'static str,
    },
    /// A binomial outcome that is not 0 or 1.
    #[error("row {row} of the outcome is {value}; a binomial outcome must be 0 or 1")]
    NotBinary {
        /// The row, counting from 1.
        row: usize,
        /// The value found.
        value: f64,
    },
    /// A standard-error kind the family does not define.
    #[error("{kind} standard errors are not defined here for the {family} family; use {instead}")]
    UnsupportedErrors {
        /// The kind asked for.
        kind: &'static str,
        /// The family.
        family: &'static str,
        /// What to use instead.
        instead: &'static str,
    },
    /// Cluster-robust errors with a single cluster.
    #[error("cluster-robust errors need at least two clusters; the cluster column has {0}")]
    TooFewClusters(usize),
    /// A predictor name used twice.
    #[error("the predictor {0:?} is named twice; name each predictor once")]
    RepeatedPredictor(String),
    /// Labels of the wrong length.
    #[error("the {what} labels have {found} rows but the outcome has {expected}")]
    LabelLength {
        /// Which labels.
        what: &'static str,
        /// Their count.
        found: usize,
        /// The outcome's length.
        expected: usize,
    },
    /// Held-out metrics given unusable input.
    #[error("{0}")]
    Metric(&'static str),
}
