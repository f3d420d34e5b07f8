//! A fit's result: figures the computation can vouch for, or `unreliable` with the reason and
//! no figures.

use serde::Serialize;

use crate::design::Design;
use crate::model::{Family, Model};

/// Whether the figures are certified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every reported figure carries its promised accuracy.
    Ok,
    /// The computation cannot vouch for its figures; `reason` says why, and no estimates,
    /// standard errors or fit statistics are reported.
    Unreliable,
}

/// The arithmetic the figures were computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// IEEE double (large, well-conditioned least squares; logistic regression).
    Double,
    /// Double-double, about 32 significant digits.
    DoubleDouble,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::Double => "double-precision",
            Precision::DoubleDouble => "double-double",
        })
    }
}

/// One reported coefficient.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coefficient {
    /// `intercept`, the predictor's name, or `name[T.level]` for a dummy.
    pub name: String,
    /// The estimate (absent when unreliable).
    pub estimate: Option<f64>,
    /// Its standard error (absent when unreliable).
    pub std_error: Option<f64>,
}

/// A fitted model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// `ok` or `unreliable`.
    pub status: Status,
    /// Why the fit is unreliable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Rows fitted.
    pub n: usize,
    /// The family.
    pub family: Family,
    /// The kind of standard errors.
    pub std_errors: &'static str,
    /// Reported coefficients: the intercept first, then predictors in the order given.
    pub coefficients: Vec<Coefficient>,
    /// R² (centred with an intercept, uncentred 1 − SSE/Σy² without); gaussian only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r_squared: Option<f64>,
    /// √(SSE/(n − k)); gaussian only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_sd: Option<f64>,
    /// The maximized log likelihood; binomial only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_likelihood: Option<f64>,
    /// The 2-norm condition number of the design as given (intercept and dummies included),
    /// as statsmodels reports it.
    pub condition_number: f64,
    /// The condition number after scaling each column by a power of two; this governs the
    /// accuracy of the solver and decides `unreliable`.
    pub scaled_condition_number: f64,
    /// Coefficients estimated, absorbed fixed effects included (K).
    pub parameters: usize,
    /// Fixed-effect coefficients estimated but not reported.
    pub absorbed: usize,
    /// n − K.
    pub df_residual: usize,
    /// Clusters, for cluster-robust errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters: Option<usize>,
    /// Newton iterations (binomial).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<usize>,
    /// The arithmetic used.
    pub precision: Precision,
}

impl Fit {
    pub(crate) fn new(model: &Model, design: &Design, precision: Precision) -> Fit {
        let k = design.k();
        Fit {
            status: Status::Ok,
            reason: None,
            n: design.n,
            family: model.family,
            std_errors: model.errors.name(),
            coefficients: Vec::with_capacity(design.names.len()),
            r_squared: None,
            residual_sd: None,
            log_likelihood: None,
            condition_number: f64::NAN,
            scaled_condition_number: f64::NAN,
            parameters: k,
            absorbed: k - design.names.len(),
            df_residual: design.n - k,
            clusters: match &model.errors {
                crate::model::StdErrors::Cluster(labels) => {
                    Some(crate::design::encode(labels).1.len())
                }
                _ => None,
            },
            iterations: None,
            precision,
        }
    }

    pub(crate) fn push(&mut self, name: &str, estimate: Option<f64>, std_error: Option<f64>) {
        self.coefficients.push(Coefficient {
            name: name.to_owned(),
            estimate,
            std_error,
        });
    }

    /// Marks the fit unreliable and withdraws every figure.
    pub(crate) fn unreliable(&mut self, reason: String) {
        self.status = Status::Unreliable;
        self.reason = Some(reason);
        self.r_squared = None;
        self.residual_sd = None;
        self.log_likelihood = None;
        for c in &mut self.coefficients {
            c.estimate = None;
            c.std_error = None;
        }
    }

    /// The coefficient named `name`.
    pub fn coefficient(&self, name: &str) -> Option<&Coefficient> {
        self.coefficients.iter().find(|c| c.name == name)
    }
}
