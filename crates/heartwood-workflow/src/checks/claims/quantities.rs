//! What a claim can be bound to, recomputed from the bound table, split and model (never from
//! the model report's own figures). For the univariate model (`univariate_ols`, here): row
//! counts, R², RMSE and MAE of the training fit on each sample, the training-mean comparator,
//! and each coefficient's estimate, standard error, t statistic, p-value and confidence
//! interval (classical errors, Student's t with n − k degrees of freedom, from
//! `heartwood-stats`). A multivariable model (`linear_model`) is computed in
//! [`super::multivariable`]; [`Computed`] is either.

use heartwood_stats::{Column, Family, Model, Predictor, StdErrors};

use super::CLAIM_ROUNDING;
use super::context::{Vocabulary, line_coefficients};
use super::format::{Claim, Quantity, Sample};
use super::multivariable::Multivariable;
use super::uncomputable::Uncomputable;
use crate::check::{CheckResult, Status};
use crate::checks::{Files, Line, fit, mean, root_mean_square};
use crate::registry::Params;

/// The recomputation a report's claims are judged against: the univariate line or a
/// multivariable model, as the check's `model` parameter says.
#[derive(Debug)]
pub(crate) enum Computed {
    /// `univariate_ols`.
    Line(Box<Univariate>),
    /// `linear_model`.
    Model(Box<Multivariable>),
}

/// The computation, or why the claims cannot be recomputed (the model does not check).
/// `files` are table, dictionary, split, model report, plan.
pub(crate) fn compute(files: Files<'_>, params: &Params) -> Result<Computed, Uncomputable> {
    if params.get("model").and_then(|v| v.as_str()) == Some("linear_model") {
        let mut params = params.clone();
        params.remove("model");
        return super::multivariable::compute(files, &params).map(|m| Computed::Model(Box::new(m)));
    }
    univariate(files).map(|u| Computed::Line(Box::new(u)))
}

impl Computed {
    /// The names a report may use for this project's coefficients and samples.
    pub(crate) fn vocabulary(&self) -> Vocabulary {
        match self {
            Computed::Line(u) => u.vocabulary(),
            Computed::Model(m) => m.vocabulary(),
        }
    }

    /// How far floating-point rounding may move the recomputed `claim` whose value (one of
    /// its candidates) is `value`.
    pub(crate) fn allowance(&self, claim: &Claim, value: f64) -> f64 {
        match self {
            Computed::Line(u) => u.allowance(claim),
            Computed::Model(m) => m.allowance(claim, value),
        }
    }

    /// The index of the coefficient `name` among the model's, if it has one.
    pub(crate) fn coefficient(&self, name: &str) -> Option<usize> {
        match self {
            Computed::Line(u) => u.coefficient(name),
            Computed::Model(m) => m.coefficient(name),
        }
    }

    /// The figure `claim` names.
    pub(crate) fn value(&self, claim: &Claim) -> Recomputed {
        match self {
            Computed::Line(u) => u.value(claim),
            Computed::Model(m) => m.value(claim),
        }
    }

    /// Each coefficient's name, by index.
    pub(crate) fn names(&self) -> Vec<String> {
        match self {
            Computed::Line(u) => vec!["intercept".into(), u.predictor.clone()],
            Computed::Model(m) => m.names(),
        }
    }

    /// The standard errors the model declares.
    pub(crate) fn std_errors(&self) -> &str {
        match self {
            Computed::Line(_) => "classical",
            Computed::Model(m) => m.std_errors(),
        }
    }

    /// For the coefficient at `index`: how far one unit of it moves a prediction (the spread
    /// of its column; 1 for the intercept), and the scale a prediction's shift is measured
    /// against.
    pub(crate) fn shift_scales(&self, index: usize) -> Option<(f64, f64)> {
        match self {
            Computed::Line(u) => Some((
                if index == 0 { 1.0 } else { u.predictor_spread },
                u.residual_scale,
            )),
            Computed::Model(m) => m.shift_scales(index),
        }
    }
}

/// The univariate line's recomputation.
#[derive(Debug)]
pub(crate) struct Univariate {
    line: Line,
    predictor: String,
    /// Training rows (predictor, outcome).
    train: Vec<(f64, f64)>,
    /// Held-out rows (predictor, outcome).
    held_out: Vec<(f64, f64)>,
    /// The least-squares fit of `heartwood-stats` on the training rows (classical errors).
    reference: heartwood_stats::Fit,
    /// The root mean square of the training residuals: what a shift of every prediction is
    /// measured against.
    pub residual_scale: f64,
    /// The root mean square of the training predictor's deviations from its mean.
    pub predictor_spread: f64,
    /// The size of the terms every residual is computed from: the largest `|y| + |b·x|`.
    data_scale: f64,
    /// The smallest spread of the outcome a metric is divided by (training, held-out).
    outcome_spread: f64,
    /// Each group's label (lower case) and its side of the split.
    groups: Vec<(String, Sample)>,
    /// The outcome column's name.
    outcome: String,
}

/// One recomputed figure: the values a correct figure may be (held-out R² has two accepted
/// definitions), or why there is none.
pub(crate) type Recomputed = Result<Vec<f64>, Uncomputable>;

/// The sample a fit figure's claim names, or what to write when it names none.
pub(super) fn named_sample(claim: &Claim) -> Result<Sample, Uncomputable> {
    claim
        .sample
        .ok_or(Uncomputable::NoSample(claim.quantity.name()))
}

/// A least-squares fit's figure on `sample`'s rows, from their residuals, the outcome's own
/// spread on them and the training-mean comparator's RMSE on them: the one rule the univariate
/// and the multivariable checks both read a fit's figures by.
pub(super) fn least_squares(
    quantity: Quantity,
    sample: Sample,
    residuals: impl Iterator<Item = f64> + Clone,
    own_spread: f64,
    comparator: f64,
) -> Recomputed {
    let rmse = root_mean_square(residuals.clone());
    Ok(match quantity {
        Quantity::Rmse => vec![rmse],
        Quantity::Mae => vec![mean(residuals.map(f64::abs))],
        Quantity::ComparatorRmse if sample == Sample::HeldOut => vec![comparator],
        Quantity::ComparatorRmse => {
            return Err(Uncomputable::ComparatorSample);
        }
        Quantity::RSquared => {
            let mut accepted = vec![1.0 - (rmse / own_spread).powi(2)];
            // Held-out R² is also written against the training-mean comparator.
            if sample == Sample::HeldOut {
                accepted.push(1.0 - (rmse / comparator).powi(2));
            }
            accepted.retain(|v| v.is_finite());
            if accepted.is_empty() {
                return Err(Uncomputable::ConstantOutcome);
            }
            accepted
        }
        Quantity::LogLoss | Quantity::Brier | Quantity::Auc => {
            return Err(Uncomputable::LogisticFigure(quantity.name()));
        }
        other => return Err(Uncomputable::NotComputable(other.name())),
    })
}

/// The univariate computation. `files` are table, dictionary, split, model report, plan.
fn univariate(files: Files<'_>) -> Result<Univariate, Uncomputable> {
    let mut model = CheckResult::new("univariate_ols");
    let inputs = crate::checks::tabular::checked_model(files, &mut model);
    if model.status != Status::Passed {
        return Err(Uncomputable::ModelDoesNotCheck(model.reasons));
    }
    let mut scratch = CheckResult::new("univariate_ols");
    let inputs = inputs.ok_or(Uncomputable::ModelUnreadable)?;
    let (report, split, table, dictionary) = &*inputs;
    let (train, held_out) =
        crate::checks::tabular::partitioned(report, split, table, dictionary, &mut scratch)
            .ok_or(Uncomputable::Unsplittable)?;
    let train: Vec<(f64, f64)> = train.into_iter().map(|(x, y, _)| (x, y)).collect();
    let held_out: Vec<(f64, f64)> = held_out.into_values().collect();
    let line = fit(&train).ok_or(Uncomputable::ConstantPredictor)?;
    // The reference fit reads the training cells as written (exactly, from decimal text).
    let (x, y, k) = (
        table.column(&report.predictor),
        table.column(&dictionary.outcome),
        table.column(&dictionary.primary_key),
    );
    let (Some(x), Some(y), Some(k)) = (x, y, k) else {
        return Err(Uncomputable::MissingColumns);
    };
    let groups = groups(table, dictionary, split);
    let training_rows: Vec<_> = table
        .rows
        .iter()
        .filter(|r| split.partition.get(&r[k]).is_some_and(|p| p == "train"))
        .collect();
    let column = |c: usize| {
        Column::from_text(training_rows.iter().map(|r| &r[c]))
            .map_err(|(at, why)| Uncomputable::TrainingCell { row: at + 1, why })
    };
    let reference = heartwood_stats::fit(&Model {
        outcome: column(y)?,
        predictors: vec![Predictor::Numeric {
            name: report.predictor.clone(),
            column: column(x)?,
        }],
        intercept: true,
        fixed_effects: None,
        family: Family::Gaussian,
        errors: StdErrors::Classical,
    })?;
    if let Some(why) = &reference.reason {
        return Err(Uncomputable::Unreliable(why.clone()));
    }
    let residual_scale = root_mean_square(train.iter().map(|&(x, y)| line.residual(x, y)));
    let predictor_spread = root_mean_square(train.iter().map(|&(x, _)| line.dx(x)));
    let data_scale = train
        .iter()
        .chain(&held_out)
        .map(|&(x, y)| y.abs() + (line.slope * x).abs())
        .fold(0.0, f64::max);
    let spread = |rows: &[(f64, f64)]| {
        let m = mean(rows.iter().map(|r| r.1));
        root_mean_square(rows.iter().map(move |r| r.1 - m))
    };
    let outcome_spread = spread(&train).min(spread(&held_out));
    Ok(Univariate {
        line,
        predictor: report.predictor.clone(),
        train,
        held_out,
        reference,
        residual_scale,
        predictor_spread,
        data_scale,
        outcome_spread,
        groups,
        outcome: dictionary.outcome.clone(),
    })
}

/// Each group's label (lower case) once per side of the split it is on (a set: tables hold up
/// to the row limit).
pub(crate) fn groups(
    table: &crate::table::Table,
    dictionary: &crate::table::Dictionary,
    split: &crate::checks::Split,
) -> Vec<(String, Sample)> {
    // Each label as written once per side first (a table has far fewer groups than rows).
    let mut written: std::collections::HashSet<(&str, bool)> = std::collections::HashSet::new();
    if let (Some(g), Some(k)) = (
        table.column(&dictionary.group),
        table.column(&dictionary.primary_key),
    ) {
        for row in &table.rows {
            if let Some(side) = split.partition.get(&row[k]) {
                written.insert((&row[g], side == "train"));
            }
        }
    }
    let sides: std::collections::BTreeSet<(String, bool)> = written
        .into_iter()
        .map(|(label, train)| (label.trim().to_lowercase(), train))
        .collect();
    sides
        .into_iter()
        .map(|(label, train)| {
            let side = if train {
                Sample::Training
            } else {
                Sample::HeldOut
            };
            (label, side)
        })
        .collect()
}

impl Univariate {
    /// The names a report may use for this project's coefficients and samples.
    pub(crate) fn vocabulary(&self) -> Vocabulary {
        Vocabulary {
            coefficients: line_coefficients(&self.predictor),
            groups: self.groups.clone(),
            outcome: Vocabulary::outcome_names(&self.outcome),
        }
    }

    /// How far floating-point rounding may move the recomputed `claim`: [`CLAIM_ROUNDING`] of
    /// the size of the terms it is computed from (the data's magnitude for a metric or an
    /// intercept, the outcome's magnitude per unit of predictor spread for a slope), never of
    /// the figure's own distance from zero. A count is exact.
    pub(crate) fn allowance(&self, claim: &Claim) -> f64 {
        let r = CLAIM_ROUNDING;
        let data = self.data_scale;
        let coefficient = claim
            .coefficient
            .as_deref()
            .and_then(|c| self.coefficient(c));
        let (terms, se, t) = match coefficient {
            Some(index) => {
                let intercept = index == 0;
                let c = &self.reference.coefficients[index];
                let se = c.std_error.unwrap_or(0.0).abs();
                let t = c.estimate.unwrap_or(0.0).abs() / se.max(f64::MIN_POSITIVE);
                let terms = if intercept {
                    data + self.line.intercept.abs() + (self.line.slope * self.line.mean_x.0).abs()
                } else {
                    self.line.slope.abs() + data / self.predictor_spread.max(f64::MIN_POSITIVE)
                };
                (terms, se, t)
            }
            None => (data, 0.0, 0.0),
        };
        match claim.quantity {
            Quantity::N => 0.0,
            Quantity::Rmse | Quantity::Mae | Quantity::ComparatorRmse => r * data,
            Quantity::RSquared => 4.0 * r * data / self.outcome_spread.max(f64::MIN_POSITIVE),
            Quantity::Estimate | Quantity::StdError => r * (terms + se),
            Quantity::CiLower | Quantity::CiUpper => r * (terms + 10.0 * se),
            Quantity::TValue => r * (t + terms / se.max(f64::MIN_POSITIVE)),
            // The t distribution's tail is computed to about ten significant digits.
            Quantity::PValue => {
                let df = self.reference.df_residual as f64;
                1e-9 * heartwood_stats::distribution::t_two_sided_p(t, df).unwrap_or(1.0)
            }
            Quantity::Other | Quantity::LogLoss | Quantity::Brier | Quantity::Auc => 0.0,
        }
    }

    /// The rows of a sample.
    fn rows(&self, sample: Sample) -> Vec<(f64, f64)> {
        match sample {
            Sample::Training => self.train.clone(),
            Sample::HeldOut => self.held_out.clone(),
            Sample::All => self.train.iter().chain(&self.held_out).copied().collect(),
        }
    }

    /// The index of the coefficient `name`: 0 the intercept, 1 the slope (the predictor).
    pub(crate) fn coefficient(&self, name: &str) -> Option<usize> {
        let canonical = crate::identity::canonical(name);
        if canonical == crate::identity::canonical("intercept") {
            Some(0)
        } else if canonical == crate::identity::canonical(&self.predictor)
            || canonical == crate::identity::canonical("slope")
        {
            Some(1)
        } else {
            None
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
        let own_spread = {
            let m = mean(rows.iter().map(|r| r.1));
            root_mean_square(rows.iter().map(move |r| r.1 - m))
        };
        least_squares(
            quantity,
            sample,
            rows.iter().map(|&(x, y)| self.line.residual(x, y)),
            own_spread,
            root_mean_square(rows.iter().map(|&(_, y)| self.line.dy(y))),
        )
    }

    /// A coefficient's estimate, standard error, t, p or interval bound.
    fn coefficient_figure(&self, claim: &Claim) -> Recomputed {
        if claim.sample.is_some_and(|s| s != Sample::Training) {
            return Err(Uncomputable::CoefficientSample);
        }
        let name = claim
            .coefficient
            .as_deref()
            .ok_or(Uncomputable::NoLineCoefficient)?;
        let index = self
            .coefficient(name)
            .ok_or_else(|| Uncomputable::UnknownCoefficient {
                name: name.to_owned(),
                known: format!("`intercept` and {:?}", self.predictor),
            })?;
        let reference = &self.reference.coefficients[index];
        let (Some(estimate), Some(se)) = (reference.estimate, reference.std_error) else {
            return Err(Uncomputable::NoFigure);
        };
        let df = self.reference.df_residual as f64;
        let t = estimate / se;
        let level = claim.level.unwrap_or(0.95);
        if !(level > 0.0 && level < 1.0) {
            return Err(Uncomputable::Level(level));
        }
        let half_width = || -> Result<f64, Uncomputable> {
            Ok(heartwood_stats::distribution::t_quantile(1.0 - (1.0 - level) / 2.0, df)? * se)
        };
        Ok(vec![match claim.quantity {
            Quantity::Estimate => estimate,
            Quantity::StdError => se,
            Quantity::TValue => t,
            Quantity::PValue => heartwood_stats::distribution::t_two_sided_p(t, df)?,
            Quantity::CiLower => estimate - half_width()?,
            Quantity::CiUpper => estimate + half_width()?,
            other => return Err(Uncomputable::NotComputable(other.name())),
        }])
    }
}
