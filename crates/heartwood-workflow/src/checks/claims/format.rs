//! The claims file: for every figure a report states, what quantity it is and where it stands.
//! Its JSON Schema is `docs/schema/report-claims.schema.json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the agent writing a report is told about its claims file (`path`).
pub fn prompt(path: &str) -> String {
    format!(
        "The claims file `{path}` binds every number your report's results state (in sentences \
         and in table cells) to what it is. Write JSON: {{\"claims\": [{{\"line\": 7, \
         \"value\": \"0.31\", \"quantity\": \"r_squared\", \"sample\": \"held_out\"}}, ...]}}, \
         one entry per number: `line` is the report line it stands on (from 1), `value` the \
         number exactly as written there; `quantity` is one of r_squared, rmse, mae, \
         comparator_rmse (a least-squares model), log_loss, brier, auc (a logistic model), n \
         (each with `sample`: training, held_out or all), estimate, std_error, t_value (t or \
         z), p_value, ci_lower, ci_upper (with `coefficient`: intercept or the coefficient's \
         name as the model report names it, e.g. a predictor's column or `region[T.north]`; \
         `level` for an interval, default 0.95), or other (with a `note`) for anything else. \
         Every figure is recomputed and must be the true value rounded to the digits you write \
         (at least two significant digits; counts as whole numbers); standard errors, t, p and \
         intervals are those of the standard errors the plan declares. Write plain Markdown (no \
         HTML) and every figure as ASCII digits (no number words). Each sentence names one \
         sample (training, held-out or all rows); write the metric (R², RMSE, MAE, the \
         training-mean comparator's RMSE, log loss, Brier score, AUC) or the coefficient's \
         name and its statistic (SE, t or z, p, 95% CI a to b) right before its figure, as in \
         `The held-out RMSE is 0.58.` or `The coefficient of value is 0.115 (SE 0.017, 95% \
         CI 0.082 to 0.148, p < 0.001).`; when the errors are not classical, name their kind \
         in the same sentence (`cluster-robust SE 0.017`). A table works too: one row per \
         coefficient labelled with its name, columns headed `Estimate`, `Cluster-robust SE`, \
         `95% CI` (cells `a to b`) and `p`, and a sentence per sample for the fit figures. \
         A sentence that states a figure may use only the results language: the sample \
         (training, held-out, all rows; `fitted on` names the training rows), the metric or \
         statistic names above, the kind of standard errors, the interval's level, the model's \
         coefficient names (`intercept`, each predictor as the model report names it), the \
         outcome's name, a row noun for a count (`n = 40`, `40 held-out rows`), and the \
         function words a, an, the, is, are, was, were, be, has, have, of, on, in, for, at, \
         to, by, from, with, and, its, model, predictions, sample, data, set. Any other word \
         (a unit, `squared`, `odds`, `firms`, a group's name when its side has several groups, \
         a comparison or hedge) leaves every figure of its sentence unverified: put \
         interpretation in sentences without figures. A number with no claim, of quantity \
         other, or outside this language leaves the stage unverified."
    )
}

/// A report's claims file (`reports/claims.json` in the maintained definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// One entry per figure the report's results state.
    pub claims: Vec<Claim>,
}

/// One figure the report states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The report line the figure stands on, counting from 1.
    pub line: usize,
    /// The figure exactly as the report writes it (`0.31`, `31%`, `-2.4e-3`).
    pub value: String,
    /// What the figure is.
    pub quantity: Quantity,
    /// The rows it is computed on (metrics and counts; coefficients are the training fit's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sample>,
    /// For a coefficient's figures: `intercept` or the predictor's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coefficient: Option<String>,
    /// For a confidence interval: its level (default 0.95).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    /// For a figure Heartwood cannot compute (`other`): what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// R², the share of variance explained (a fraction or a percentage).
    RSquared,
    /// Root mean squared error.
    Rmse,
    /// Mean absolute error.
    Mae,
    /// The RMSE of predicting the training mean for every held-out row.
    ComparatorRmse,
    /// A logistic model's log loss (mean negative log likelihood per row).
    LogLoss,
    /// A logistic model's Brier score (mean squared error of the probabilities).
    Brier,
    /// A logistic model's AUC (area under the ROC curve).
    Auc,
    /// A number of rows.
    N,
    /// A coefficient's estimate.
    Estimate,
    /// A coefficient's standard error, of the kind the model declares.
    StdError,
    /// A coefficient's t (z for a logistic or robust fit) statistic.
    TValue,
    /// A coefficient's two-sided p-value.
    PValue,
    /// The lower bound of a coefficient's confidence interval.
    CiLower,
    /// The upper bound of a coefficient's confidence interval.
    CiUpper,
    /// Anything Heartwood cannot compute (a year, a figure from elsewhere): never passes.
    Other,
}

impl Quantity {
    /// The name a reader knows it by.
    pub fn name(self) -> &'static str {
        match self {
            Quantity::RSquared => "R²",
            Quantity::Rmse => "RMSE",
            Quantity::Mae => "MAE",
            Quantity::ComparatorRmse => "training-mean comparator RMSE",
            Quantity::LogLoss => "log loss",
            Quantity::Brier => "Brier score",
            Quantity::Auc => "AUC",
            Quantity::N => "row count",
            Quantity::Estimate => "estimate",
            Quantity::StdError => "standard error",
            Quantity::TValue => "t statistic",
            Quantity::PValue => "p-value",
            Quantity::CiLower => "confidence interval's lower bound",
            Quantity::CiUpper => "confidence interval's upper bound",
            Quantity::Other => "figure",
        }
    }

    /// Whether it is a figure of one coefficient.
    pub fn is_coefficient(self) -> bool {
        matches!(
            self,
            Quantity::Estimate
                | Quantity::StdError
                | Quantity::TValue
                | Quantity::PValue
                | Quantity::CiLower
                | Quantity::CiUpper
        )
    }

    /// Whether it is a fraction a whole number cannot state (R², a p-value, AUC, Brier).
    pub fn is_fraction(self) -> bool {
        matches!(
            self,
            Quantity::RSquared | Quantity::PValue | Quantity::Auc | Quantity::Brier
        )
    }

    /// The fit metric it is, for telling one metric's name from another's.
    pub fn metric(self) -> Option<Metric> {
        match self {
            Quantity::RSquared => Some(Metric::RSquared),
            Quantity::Rmse | Quantity::ComparatorRmse => Some(Metric::Rmse),
            Quantity::Mae => Some(Metric::Mae),
            Quantity::LogLoss => Some(Metric::LogLoss),
            Quantity::Brier => Some(Metric::Brier),
            Quantity::Auc => Some(Metric::Auc),
            _ => None,
        }
    }
}

/// A fit metric a report names in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// R².
    RSquared,
    /// RMSE.
    Rmse,
    /// MAE.
    Mae,
    /// Log loss.
    LogLoss,
    /// Brier score.
    Brier,
    /// AUC.
    Auc,
}

/// The name a reader knows a metric by.
pub fn metric_name(metric: Metric) -> &'static str {
    match metric {
        Metric::RSquared => "R²",
        Metric::Rmse => "RMSE",
        Metric::Mae => "MAE",
        Metric::LogLoss => "log loss",
        Metric::Brier => "Brier score",
        Metric::Auc => "AUC",
    }
}

/// The rows a figure is computed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sample {
    /// The training partition.
    Training,
    /// The held-out partition.
    HeldOut,
    /// Every row the split assigns.
    All,
}

impl Sample {
    /// The name a reader knows it by.
    pub fn name(self) -> &'static str {
        match self {
            Sample::Training => "training",
            Sample::HeldOut => "held-out",
            Sample::All => "all-rows",
        }
    }
}
