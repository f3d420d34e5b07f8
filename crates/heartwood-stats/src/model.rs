//! What to fit: the outcome, the predictors, the intercept, fixed effects, the family and the
//! kind of standard errors. Limits on every dimension are published here.

use serde::Serialize;

use crate::column::Column;

/// The most rows a model takes.
pub const MAX_ROWS: usize = 5_000_000;
/// The most coefficients (intercept, predictors, dummies and fixed-effect levels together).
pub const MAX_COEFFICIENTS: usize = 512;
/// The most design cells (rows × coefficients).
pub const MAX_CELLS: usize = 60_000_000;
/// The most levels a categorical predictor or a fixed effect may have.
pub const MAX_LEVELS: usize = 500;

/// A model to fit.
#[derive(Debug, Clone)]
pub struct Model {
    /// The outcome (0 or 1 for the binomial family).
    pub outcome: Column,
    /// The predictors, in the order their coefficients are reported.
    pub predictors: Vec<Predictor>,
    /// Whether the model has an intercept (reported first, named `intercept`).
    pub intercept: bool,
    /// One-way fixed effects: a label per row. Absorbed as indicator columns (one per level
    /// after the first, or every level without an intercept); their coefficients are counted
    /// in the degrees of freedom and not reported.
    pub fixed_effects: Option<Vec<String>>,
    /// The distribution of the outcome.
    pub family: Family,
    /// The standard errors to report.
    pub errors: StdErrors,
}

/// One predictor.
#[derive(Debug, Clone)]
pub enum Predictor {
    /// A numeric column; its coefficient is named after it.
    Numeric {
        /// The name reported.
        name: String,
        /// The values.
        column: Column,
    },
    /// A categorical column, dummy coded: levels are sorted, the first is the reference and
    /// each other level has an indicator named `name[T.level]`. Without an intercept, the first
    /// categorical predictor has an indicator for every level, named `name[level]`.
    Categorical {
        /// The column's name.
        name: String,
        /// A label per row.
        labels: Vec<String>,
    },
}

impl Predictor {
    /// The predictor's name.
    pub fn name(&self) -> &str {
        match self {
            Predictor::Numeric { name, .. } | Predictor::Categorical { name, .. } => name,
        }
    }
}

/// The distribution of the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Least squares.
    Gaussian,
    /// Logistic regression by maximum likelihood.
    Binomial,
}

impl Family {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gaussian => "gaussian",
            Family::Binomial => "binomial",
        }
    }
}

/// Which standard errors to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdErrors {
    /// From the model's own variance (least squares: σ̂²(X'X)⁻¹; logistic: the inverse
    /// information).
    Classical,
    /// White's heteroskedasticity-robust sandwich.
    Hc0,
    /// HC0 × n/(n−k) (linear models only: statsmodels and Stata disagree on its factor for
    /// maximum-likelihood models).
    Hc1,
    /// Each squared residual divided by 1 − leverage (linear models only).
    Hc2,
    /// Each squared residual divided by (1 − leverage)² (linear models only).
    Hc3,
    /// Cluster-robust (CR1): the sandwich over cluster score sums, times the small-sample
    /// factor G/(G−1)·(N−1)/(N−K), the default of statsmodels and Stata. A label per row.
    Cluster(Vec<String>),
}

impl StdErrors {
    /// The name used on the command line and in results.
    pub fn name(&self) -> &'static str {
        match self {
            StdErrors::Classical => "classical",
            StdErrors::Hc0 => "hc0",
            StdErrors::Hc1 => "hc1",
            StdErrors::Hc2 => "hc2",
            StdErrors::Hc3 => "hc3",
            StdErrors::Cluster(_) => "cluster",
        }
    }
}
