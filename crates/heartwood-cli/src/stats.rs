//! `heartwood stats fit`: the statistics reference on a CSV table, printed as a table or as one
//! JSON object. Needs no project: it reads the named file and writes nothing.
//!
//! Exit codes: 0 the fit is `ok`; 1 the input cannot be fitted (the message says what to do);
//! 2 the fit ran but is `unreliable` (its reason is printed, and no figures).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use heartwood_gateway::stats::{ErrorsRequest, Family, Fit, FitRequest, Status, fit_csv};

/// Statistics reference computations.
#[derive(Subcommand)]
pub enum StatsCommand {
    /// Fit a linear (least squares) or logistic model to a CSV table.
    ///
    /// Cells are read as written: decimals reach the solver unrounded. The intercept comes
    /// first (named `intercept`), then predictors in the order given. Exit codes: 0 ok,
    /// 1 bad input, 2 unreliable (nearly collinear predictors, separation, ...).
    Fit(FitArgs),
}

/// `heartwood stats fit`.
#[derive(Args)]
pub struct FitArgs {
    /// The CSV table, header row first.
    data: PathBuf,
    /// The outcome column (0 or 1 for `--family binomial`).
    #[arg(long)]
    outcome: String,
    /// Numeric predictor columns, comma-separated, in the order to report.
    #[arg(long, value_delimiter = ',')]
    predictors: Vec<String>,
    /// Categorical predictor columns, dummy coded against their first level (sorted).
    #[arg(long, value_delimiter = ',')]
    categorical: Vec<String>,
    /// A column whose levels are one-way fixed effects (absorbed, not reported).
    #[arg(long)]
    fixed_effects: Option<String>,
    /// Fit without an intercept (R² is then the uncentred 1 − SSE/Σy²).
    #[arg(long)]
    no_intercept: bool,
    /// Standard errors: classical, hc0, hc1, hc2, hc3 or cluster:COLUMN (CR1).
    #[arg(long, default_value = "classical", value_parser = parse_errors)]
    se: ErrorsRequest,
    /// The outcome's family.
    #[arg(long, value_enum, default_value = "gaussian")]
    family: FamilyArg,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// `--family`.
#[derive(Clone, Copy, ValueEnum)]
enum FamilyArg {
    /// Least squares.
    Gaussian,
    /// Logistic regression.
    Binomial,
}

fn parse_errors(text: &str) -> Result<ErrorsRequest, heartwood_gateway::stats::UnknownErrors> {
    text.parse()
}

/// Runs a stats command.
pub fn run(command: StatsCommand) -> Result<ExitCode> {
    match command {
        StatsCommand::Fit(args) => fit(args),
    }
}

fn fit(args: FitArgs) -> Result<ExitCode> {
    let file = std::fs::File::open(&args.data).with_context(|| {
        format!(
            "cannot open {}; give the path of a CSV file",
            args.data.display()
        )
    })?;
    let request = FitRequest {
        outcome: args.outcome,
        predictors: args.predictors,
        categorical: args.categorical,
        fixed_effects: args.fixed_effects,
        intercept: !args.no_intercept,
        family: match args.family {
            FamilyArg::Gaussian => Family::Gaussian,
            FamilyArg::Binomial => Family::Binomial,
        },
        errors: args.se,
    };
    let fit = fit_csv(std::io::BufReader::new(file), &request)
        .with_context(|| format!("{} cannot be fitted", args.data.display()))?;
    if args.json {
        say!("{}", serde_json::to_string(&fit)?);
    } else {
        print_table(&fit);
    }
    Ok(match fit.status {
        Status::Ok => ExitCode::SUCCESS,
        Status::Unreliable => ExitCode::from(2),
    })
}

/// A figure to twelve significant digits.
fn figure(value: Option<f64>) -> String {
    match value {
        None => "—".to_owned(),
        Some(v) if v != 0.0 && (v.abs() < 1e-4 || v.abs() >= 1e12) => format!("{v:.11e}"),
        Some(v) => {
            let digits = (11 - v.abs().log10().floor() as i32).clamp(0, 15) as usize;
            format!("{v:.digits$}")
        }
    }
}

fn print_table(fit: &Fit) {
    say!(
        "{} model, n = {}, {} standard errors, {} coefficients ({} absorbed), {} arithmetic",
        match fit.family {
            Family::Gaussian => "Linear (gaussian)",
            Family::Binomial => "Logistic (binomial)",
        },
        fit.n,
        fit.std_errors,
        fit.parameters,
        fit.absorbed,
        fit.precision
    );
    let width = fit
        .coefficients
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .max("coefficient".len());
    say!(
        "{:<width$}  {:>20}  {:>20}",
        "coefficient",
        "estimate",
        "std. error"
    );
    for c in &fit.coefficients {
        say!(
            "{:<width$}  {:>20}  {:>20}",
            c.name,
            figure(c.estimate),
            figure(c.std_error)
        );
    }
    if let Some(r2) = fit.r_squared {
        say!("R²                 {}", figure(Some(r2)));
    }
    if let Some(sd) = fit.residual_sd {
        say!("residual SD        {}", figure(Some(sd)));
    }
    if let Some(ll) = fit.log_likelihood {
        say!("log likelihood     {}", figure(Some(ll)));
    }
    if let Some(g) = fit.clusters {
        say!("clusters           {g}");
    }
    say!("condition number   {:.3e}", fit.condition_number);
    match (&fit.status, &fit.reason) {
        (Status::Unreliable, Some(reason)) => say!("status             unreliable: {reason}"),
        _ => say!("status             ok"),
    }
}
