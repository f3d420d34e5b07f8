//! What a claim can be bound to when the report describes a multivariable model (the
//! `linear_model` check of `tabular-linear` and `tabular-logistic`), recomputed by
//! `heartwood-stats` from the bound table, split and model declaration (never from the model
//! report's own figures): row counts; R², RMSE, MAE and the training-mean comparator's RMSE of
//! a least-squares fit, or log loss, Brier score and AUC of a logistic one, on the training,
//! held-out or all rows; and every coefficient's estimate, standard error (of the kind the
//! model declares), t or z statistic, two-sided p-value and confidence interval.
//!
//! p-values and intervals follow the reference distribution of each kind of errors:
//! Student's t with n − k degrees of freedom for classical least squares; the normal for a
//! logistic fit; for robust least squares both conventions in use are accepted (the normal, as
//! statsmodels reports by default, and Student's t with n − k, or G − 1 for G clusters, as
//! Stata does).

use heartwood_stats::Family;
use heartwood_stats::distribution::{
    normal_quantile, normal_two_sided_p, t_quantile, t_two_sided_p,
};

use super::CLAIM_ROUNDING;
use super::context::{Vocabulary, model_coefficient};
use super::format::{Claim, Quantity, Sample};
use super::quantities::{Recomputed, groups, least_squares, named_sample};
use super::uncomputable::Uncomputable;
use crate::check::{CheckResult, Status};
use crate::checks::{Files, linear, mean, root_mean_square, spread};
use crate::registry::Params;
use crate::table::number;

/// A reference distribution of a coefficient's statistic.
#[derive(Debug, Clone, Copy)]
enum Dist {
    /// Student's t with these degrees of freedom.
    T(f64),
    /// The standard normal.
    Normal,
}

impl Dist {
    fn p(self, statistic: f64) -> Result<f64, Uncomputable> {
        Ok(match self {
            Dist::T(df) => t_two_sided_p(statistic, df),
            Dist::Normal => normal_two_sided_p(statistic),
        }?)
    }

    fn quantile(self, probability: f64) -> Result<f64, Uncomputable> {
        Ok(match self {
            Dist::T(df) => t_quantile(probability, df),
            Dist::Normal => normal_quantile(probability),
        }?)
    }
}

/// The multivariable model's recomputation.
#[derive(Debug)]
pub(crate) struct Multivariable {
    family: Family,
    std_errors: String,
    names: Vec<String>,
    estimates: Vec<f64>,
    errors: Vec<f64>,
    df_residual: f64,
    clusters: Option<usize>,
    /// How far one unit of each coefficient moves a prediction: the spread of its column on
    /// the training rows (1 for the intercept).
    spreads: Vec<f64>,
    /// Training rows: (outcome, linear predictor).
    train: Vec<(f64, f64)>,
    /// Held-out rows, likewise.
    held_out: Vec<(f64, f64)>,
    train_mean: f64,
    /// What a shift of every prediction is measured against: the training residuals' root mean
    /// square (least squares), one unit of log-odds (logistic).
    residual_scale: f64,
    /// The size of the terms a prediction is computed from: the largest `|y|` plus
    /// `Σ |b_j|·max |x_j|`.
    data_scale: f64,
    /// The smallest spread of the outcome a metric is divided by (training, held-out).
    outcome_spread: f64,
    /// The reference fit's certified relative error.
    certified: f64,
    groups: Vec<(String, Sample)>,
    /// The outcome column's name.
    outcome: String,
}

/// The computation, or why the claims cannot be recomputed (the model does not check).
/// `files` are table, dictionary, split, model report, plan; `params` declare the model as
/// `linear_model`'s do.
pub(crate) fn compute(files: Files<'_>, params: &Params) -> Result<Multivariable, Uncomputable> {
    let mut model = CheckResult::new("linear_model");
    let fitted = linear::checked(files, params, &mut model);
    if model.status != Status::Passed {
        return Err(Uncomputable::ModelDoesNotCheck(model.reasons));
    }
    let fitted = fitted.ok_or(Uncomputable::ModelUnreadable)?;
    let (table, spec, fit) = (&fitted.table, &fitted.spec, &fitted.fit);
    let mut names = Vec::new();
    let mut estimates = Vec::new();
    let mut errors = Vec::new();
    for c in &fit.coefficients {
        let (Some(e), Some(se)) = (c.estimate, c.std_error) else {
            return Err(Uncomputable::NoFigureFor(c.name.clone()));
        };
        names.push(c.name.clone());
        estimates.push(e);
        errors.push(se);
    }
    let y_at = table
        .column(&spec.outcome)
        .ok_or(Uncomputable::MissingOutcome)?;
    let outcomes = |rows: &[usize]| -> Result<Vec<f64>, Uncomputable> {
        rows.iter()
            .map(|&i| number(&table.rows[i][y_at]).ok_or(Uncomputable::OutcomeNotANumber))
            .collect()
    };
    let pair = |rows: &[usize]| -> Result<Vec<(f64, f64)>, Uncomputable> {
        let eta = fitted
            .linear_predictors(rows)
            .ok_or(Uncomputable::Unpredictable)?;
        Ok(outcomes(rows)?.into_iter().zip(eta).collect())
    };
    let train = pair(&fitted.train)?;
    let held_out = pair(&fitted.held_out)?;
    let train_mean = mean(train.iter().map(|r| r.0));
    let residual_scale = match spec.family {
        Family::Gaussian => root_mean_square(train.iter().map(|&(y, eta)| y - eta)),
        Family::Binomial => 1.0,
    };
    let mut spreads = Vec::new();
    let mut data_scale = train
        .iter()
        .chain(&held_out)
        .map(|r| r.0.abs())
        .fold(0.0, f64::max);
    for (name, estimate) in names.iter().zip(&estimates) {
        let column = column_values(&fitted, name);
        let largest = column.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        data_scale += estimate.abs() * largest;
        let training: Vec<f64> = fitted.train.iter().map(|&i| column[i]).collect();
        spreads.push(if name == "intercept" {
            1.0
        } else {
            spread(training.iter().copied())
        });
    }
    let own = |rows: &[(f64, f64)]| spread(rows.iter().map(|r| r.0));
    Ok(Multivariable {
        family: spec.family,
        std_errors: spec.std_errors.clone(),
        names,
        estimates,
        errors,
        df_residual: fit.df_residual as f64,
        clusters: fit.clusters,
        spreads,
        outcome_spread: own(&train).min(own(&held_out)),
        train,
        held_out,
        train_mean,
        residual_scale,
        data_scale,
        certified: match spec.family {
            Family::Gaussian => heartwood_stats::CERTIFIED_ERROR,
            Family::Binomial => heartwood_stats::LOGISTIC_CERTIFIED_ERROR,
        },
        groups: groups(table, &fitted.dictionary, &fitted.split),
        outcome: spec.outcome.clone(),
    })
}

/// The values of the design column of coefficient `name` on every row of the table (1 for the
/// intercept, the indicator of a dummy's level; NaN where a cell is not a number).
fn column_values(fitted: &linear::Fitted, name: &str) -> Vec<f64> {
    let table = &fitted.table;
    let cells = |at: usize, f: &dyn Fn(&str) -> f64| -> Vec<f64> {
        table.rows.iter().map(|r| f(&r[at])).collect()
    };
    if let Some(at) = fitted
        .spec
        .predictors
        .iter()
        .find(|p| *p == name)
        .and_then(|p| table.column(p))
    {
        return cells(at, &|c| number(c).unwrap_or(f64::NAN));
    }
    for categorical in &fitted.spec.categorical {
        let Some(level) = name
            .strip_prefix(categorical.as_str())
            .and_then(|rest| rest.strip_prefix('['))
            .and_then(|rest| rest.strip_suffix(']'))
        else {
            continue;
        };
        let level = level.strip_prefix("T.").unwrap_or(level);
        if let Some(at) = table.column(categorical) {
            return cells(at, &|c| if c == level { 1.0 } else { 0.0 });
        }
    }
    vec![1.0; table.rows.len()]
}

impl Multivariable {
    /// The names a report may use for this model's coefficients and samples.
    pub(crate) fn vocabulary(&self) -> Vocabulary {
        Vocabulary {
            coefficients: self
                .names
                .iter()
                .map(|n| model_coefficient(n, &super::text::words(n)))
                .collect(),
            groups: self.groups.clone(),
            outcome: Vocabulary::outcome_names(&self.outcome),
        }
    }

    /// Each coefficient's name, by index.
    pub(crate) fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The standard errors the model declares.
    pub(crate) fn std_errors(&self) -> &str {
        &self.std_errors
    }

    /// One unit of coefficient `index` in prediction units, and the scale predictions are
    /// judged against.
    pub(crate) fn shift_scales(&self, index: usize) -> Option<(f64, f64)> {
        Some((*self.spreads.get(index)?, self.residual_scale))
    }

    /// The index of the coefficient `name`, if the model has one.
    pub(crate) fn coefficient(&self, name: &str) -> Option<usize> {
        let canonical = crate::identity::canonical(name);
        self.names
            .iter()
            .position(|n| crate::identity::canonical(n) == canonical)
    }

    /// The reference distributions of this model's coefficient statistics.
    fn distributions(&self) -> Vec<Dist> {
        match (self.family, self.std_errors.as_str()) {
            (Family::Binomial, _) => vec![Dist::Normal],
            (Family::Gaussian, "classical") => vec![Dist::T(self.df_residual)],
            (Family::Gaussian, "cluster") => {
                let g = self.clusters.unwrap_or(0) as f64;
                vec![Dist::Normal, Dist::T(g - 1.0)]
            }
            (Family::Gaussian, _) => vec![Dist::Normal, Dist::T(self.df_residual)],
        }
    }

    /// How far the reference's certified error and floating-point rounding may move the
    /// recomputed `claim` (`value`, one of its candidates), from the size of the terms it is
    /// computed from. A count is exact.
    pub(crate) fn allowance(&self, claim: &Claim, value: f64) -> f64 {
        let r = self.certified + CLAIM_ROUNDING;
        let data = r * self.data_scale;
        let index = claim
            .coefficient
            .as_deref()
            .and_then(|c| self.coefficient(c));
        let (estimate, se) = index.map_or((0.0, 0.0), |i| {
            (self.estimates[i].abs(), self.errors[i].abs())
        });
        let t = estimate / se.max(f64::MIN_POSITIVE);
        match claim.quantity {
            Quantity::N | Quantity::Other => 0.0,
            Quantity::Rmse
            | Quantity::Mae
            | Quantity::ComparatorRmse
            | Quantity::LogLoss
            | Quantity::Brier
            | Quantity::Auc => data,
            Quantity::RSquared => 4.0 * data / self.outcome_spread.max(f64::MIN_POSITIVE),
            Quantity::Estimate | Quantity::StdError => 10.0 * r * (estimate + se),
            Quantity::CiLower | Quantity::CiUpper => 10.0 * r * (estimate + 10.0 * se),
            Quantity::TValue => 20.0 * r * (t + 1.0),
            // The p-value moved by the statistic's own error, plus the tail's accuracy: a
            // two-sided tail's relative change per unit of the statistic is below |t| + 2 for
            // the normal and for every Student's t (Mills' ratio).
            Quantity::PValue => value.abs() * (1e-9 + (t + 2.0) * 20.0 * r * (t + 1.0)),
        }
    }

    /// The rows of a sample: (outcome, linear predictor).
    fn rows(&self, sample: Sample) -> Vec<(f64, f64)> {
        match sample {
            Sample::Training => self.train.clone(),
            Sample::HeldOut => self.held_out.clone(),
            Sample::All => self.train.iter().chain(&self.held_out).copied().collect(),
        }
    }

    /// The figure `claim` names.
    pub(crate) fn value(&self, claim: &Claim) -> Recomputed {
        let quantity = claim.quantity;
        if quantity.is_coefficient() {
            return self.coefficient_figure(claim);
        }
        let sample = named_sample(claim)?;
        let rows = self.rows(sample);
        if quantity == Quantity::N {
            return Ok(vec![rows.len() as f64]);
        }
        match self.family {
            Family::Gaussian => self.least_squares_figure(quantity, sample, &rows),
            Family::Binomial => logistic_figure(quantity, &rows),
        }
    }

    fn least_squares_figure(
        &self,
        quantity: Quantity,
        sample: Sample,
        rows: &[(f64, f64)],
    ) -> Recomputed {
        least_squares(
            quantity,
            sample,
            rows.iter().map(|&(y, eta)| y - eta),
            spread(rows.iter().map(|r| r.0)),
            root_mean_square(rows.iter().map(|&(y, _)| y - self.train_mean)),
        )
    }

    /// A coefficient's estimate, standard error, statistic, p or interval bound.
    fn coefficient_figure(&self, claim: &Claim) -> Recomputed {
        if claim.sample.is_some_and(|s| s != Sample::Training) {
            return Err(Uncomputable::CoefficientSample);
        }
        let name = claim
            .coefficient
            .as_deref()
            .ok_or(Uncomputable::NoCoefficient)?;
        let index = self
            .coefficient(name)
            .ok_or_else(|| Uncomputable::UnknownCoefficient {
                name: name.to_owned(),
                known: self.names.join(", "),
            })?;
        let (estimate, se) = (self.estimates[index], self.errors[index]);
        let statistic = estimate / se;
        let level = claim.level.unwrap_or(0.95);
        if !(level > 0.0 && level < 1.0) {
            return Err(Uncomputable::Level(level));
        }
        let dists = self.distributions();
        let each = |f: &dyn Fn(Dist) -> Result<f64, Uncomputable>| -> Recomputed {
            dists.iter().map(|&d| f(d)).collect()
        };
        let half_width = |d: Dist| d.quantile(1.0 - (1.0 - level) / 2.0).map(|q| q * se);
        match claim.quantity {
            Quantity::Estimate => Ok(vec![estimate]),
            Quantity::StdError => Ok(vec![se]),
            Quantity::TValue => Ok(vec![statistic]),
            Quantity::PValue => each(&|d| d.p(statistic)),
            Quantity::CiLower => each(&|d| Ok(estimate - half_width(d)?)),
            Quantity::CiUpper => each(&|d| Ok(estimate + half_width(d)?)),
            other => Err(Uncomputable::NotComputable(other.name())),
        }
    }
}

/// A logistic model's fit figure on `rows` (outcome, linear predictor).
fn logistic_figure(quantity: Quantity, rows: &[(f64, f64)]) -> Recomputed {
    let outcomes: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let probabilities: Vec<f64> = rows
        .iter()
        .map(|&(_, eta)| 1.0 / (1.0 + (-eta).exp()))
        .collect();
    let figure = match quantity {
        Quantity::LogLoss => heartwood_stats::metrics::log_loss(&outcomes, &probabilities),
        Quantity::Brier => heartwood_stats::metrics::brier_score(&outcomes, &probabilities),
        Quantity::Auc => heartwood_stats::metrics::auc(&outcomes, &probabilities),
        Quantity::RSquared | Quantity::Rmse | Quantity::Mae | Quantity::ComparatorRmse => {
            return Err(Uncomputable::LeastSquaresFigure(quantity.name()));
        }
        other => return Err(Uncomputable::NotComputable(other.name())),
    };
    figure.map(|v| vec![v]).map_err(Uncomputable::Metric)
}
