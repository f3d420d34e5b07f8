//! Reference statistical computations for Heartwood's checks and the `heartwood stats fit`
//! command: least-squares and logistic models over numeric columns, with categorical
//! predictors (dummy coded), one-way fixed effects, and classical, HC0–HC3 and cluster-robust
//! (CR1) standard errors; held-out log loss, Brier score and AUC.
//!
//! Least squares is Householder QR with iterative refinement in double-double arithmetic on
//! data read exactly from decimal text, accurate to at least ten digits on every NIST StRD
//! linear dataset. A fit that cannot vouch for its figures (near collinearity, separation,
//! non-convergence) says `unreliable` with the reason and reports no figures.
//!
//! It owns computation only: it must never read or write files, reach the network, run
//! other programs, or return a figure as `ok` that it cannot vouch for.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod column;
mod covariance;
pub mod dd;
pub mod decimal;
mod design;
pub mod distribution;
mod error;
mod linear;
mod logistic;
pub mod metrics;
mod model;
mod qr;
mod real;
mod report;

pub use column::{CellError, Column};
pub use error::StatsError;
pub use linear::{CERTIFIED_ERROR, EXACT_BUDGET, EXACT_LIMIT};
pub use logistic::{CERTIFIED_ERROR as LOGISTIC_CERTIFIED_ERROR, MAX_ITERATIONS, STEP_TOLERANCE};
pub use model::{
    Family, MAX_CELLS, MAX_COEFFICIENTS, MAX_LEVELS, MAX_ROWS, Model, Predictor, StdErrors,
};
pub use report::{Coefficient, Fit, Precision, Status};

/// Fits `model`. Input that cannot be a model is an error; a model whose figures cannot be
/// certified is a [`Fit`] with [`Status::Unreliable`].
pub fn fit(model: &Model) -> Result<Fit, StatsError> {
    let design = design::Design::build(model)?;
    if let Some(clusters) = &design.clusters
        && clusters.count < 2
    {
        return Err(StatsError::TooFewClusters(clusters.count));
    }
    match model.family {
        Family::Gaussian => Ok(linear::fit(model, &design)),
        Family::Binomial => logistic::fit(model, &design),
    }
}
