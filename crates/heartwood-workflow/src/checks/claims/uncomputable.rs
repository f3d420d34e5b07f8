//! Why a claimed quantity cannot be computed: the one error type of the claims' recomputation
//! ([`super::quantities`], [`super::multivariable`]). Its message is the claim's `unverified`
//! text, so each one says what the report or its files should change.

use heartwood_stats::CellError;
use heartwood_stats::StatsError;

/// Why a claimed quantity cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Uncomputable {
    /// The model check the claims rest on does not pass; its reasons.
    #[error("the model the report describes does not check ({})", .0.join("; "))]
    ModelDoesNotCheck(Vec<String>),
    /// The model check passed but left no inputs to recompute from.
    #[error("the model's inputs cannot be read")]
    ModelUnreadable,
    /// The table's rows cannot be assigned to the split's samples.
    #[error("the table cannot be split")]
    Unsplittable,
    /// The univariate line's predictor is constant on the training rows.
    #[error("the training predictor does not vary")]
    ConstantPredictor,
    /// The univariate model's columns are not all in the table.
    #[error("the table lacks the predictor, outcome or key column")]
    MissingColumns,
    /// The multivariable model's outcome is not in the table.
    #[error("the table lacks the outcome column")]
    MissingOutcome,
    /// A training cell the reference fit reads is not a number.
    #[error("training row {row} is not a number ({why:?})")]
    TrainingCell {
        /// The training row, counting from 1.
        row: usize,
        /// What is wrong with the cell.
        why: CellError,
    },
    /// An outcome cell is not a number.
    #[error("an outcome is not a number")]
    OutcomeNotANumber,
    /// A row the training fit cannot predict.
    #[error(
        "a row cannot be predicted from the training fit (a level unseen in training, or \
         absorbed fixed effects), so no fit figure can be computed"
    )]
    Unpredictable,
    /// The reference computation refused its input (a fit, a distribution).
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// The reference fit ran but cannot vouch for its figures; why.
    #[error("the reference fit is unreliable: {0}")]
    Unreliable(String),
    /// The multivariable reference fit has no figure for the named coefficient.
    #[error("the reference fit reports no figure for {0}")]
    NoFigureFor(String),
    /// The univariate reference fit has no figure for the claim's coefficient.
    #[error("the reference fit reports no figure for it")]
    NoFigure,
    /// A fit figure's claim names no sample; the quantity's name.
    #[error(
        "the claim names no sample; say whether this {0} is on the training, held-out or all rows"
    )]
    NoSample(&'static str),
    /// The comparator bound to a sample other than the held-out one.
    #[error("the training-mean comparator is a held-out figure; bind it to the held-out sample")]
    ComparatorSample,
    /// R² on rows whose outcome is constant.
    #[error("the outcome does not vary on these rows, so R² is undefined")]
    ConstantOutcome,
    /// A logistic model's figure claimed of a least-squares model; the quantity's name.
    #[error("the {0} is a figure of a logistic model; this one is least squares (R², RMSE, MAE)")]
    LogisticFigure(&'static str),
    /// A least-squares figure claimed of a logistic model; the quantity's name.
    #[error(
        "the {0} is a figure of a least-squares model; this one is logistic (log loss, Brier \
         score, AUC)"
    )]
    LeastSquaresFigure(&'static str),
    /// A quantity no model here computes; its name.
    #[error("Heartwood cannot compute {0}")]
    NotComputable(&'static str),
    /// A logistic metric the held-out rows do not define.
    #[error(
        "it cannot be computed on these rows ({0}: an outcome other than 0 or 1, or one class \
         only)"
    )]
    Metric(StatsError),
    /// A coefficient's figure bound to a sample other than the training one.
    #[error(
        "coefficients are estimated on the training rows; bind the claim to the training \
         sample (or name none)"
    )]
    CoefficientSample,
    /// A coefficient's figure that names no coefficient, for a multivariable model.
    #[error("the claim names no coefficient; say `intercept` or a coefficient's name")]
    NoCoefficient,
    /// A coefficient's figure that names no coefficient, for the univariate line.
    #[error("the claim names no coefficient; say `intercept` or the predictor's name")]
    NoLineCoefficient,
    /// A coefficient the model does not have.
    #[error("the model has no coefficient {name:?}; its coefficients are {known}")]
    UnknownCoefficient {
        /// The name the claim gives.
        name: String,
        /// The model's coefficients, as a reader would list them.
        known: String,
    },
    /// A confidence level outside (0, 1).
    #[error("a confidence level of {0} is not between 0 and 1")]
    Level(f64),
}
