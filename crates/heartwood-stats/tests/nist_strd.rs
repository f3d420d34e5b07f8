//! The NIST StRD linear least-squares suite (fixtures/nist-strd, files as NIST publishes them):
//! every certified estimate, standard error, residual standard deviation and R² is matched
//! to a log relative error of at least 10 on all eleven datasets, lower, average and higher
//! difficulty alike. Data are read from the files' decimal text, never through doubles.

use heartwood_stats::dd::Dd;
use heartwood_stats::{Column, Family, Fit, Model, Predictor, Status, StdErrors, fit};

/// Figures NIST certifies for one dataset.
struct Certified {
    estimates: Vec<f64>,
    std_errors: Vec<f64>,
    residual_sd: f64,
    r_squared: f64,
}

/// A dataset file: its certified values and its data rows (decimal text).
struct Dataset {
    certified: Certified,
    rows: Vec<Vec<String>>,
}

fn read(name: &str) -> Dataset {
    let path = format!(
        "{}/../../fixtures/nist-strd/{name}.dat",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("the NIST file");
    let lines: Vec<&str> = text.lines().collect();
    // "Data (lines 61 to 142)" in the header gives where the data are.
    let data_line = lines
        .iter()
        .find(|l| l.trim_start().starts_with("Data ") && l.contains("(lines"))
        .expect("a data line range");
    let numbers: Vec<usize> = data_line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    let (first, last) = (numbers[0], numbers[1]);
    let rows = lines[first - 1..last]
        .iter()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    let mut estimates = Vec::new();
    let mut std_errors = Vec::new();
    let mut residual_sd = f64::NAN;
    let mut r_squared = f64::NAN;
    for line in &lines[..first - 1] {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [b, est, se] if b.starts_with('B') && b[1..].parse::<u32>().is_ok() => {
                estimates.push(est.parse().expect("estimate"));
                std_errors.push(se.parse().expect("standard error"));
            }
            ["Standard", "Deviation", v] => residual_sd = v.parse().expect("sd"),
            ["R-Squared", v] => r_squared = v.parse().expect("r2"),
            _ => {}
        }
    }
    Dataset {
        certified: Certified {
            estimates,
            std_errors,
            residual_sd,
            r_squared,
        },
        rows,
    }
}

/// The log relative error of `value` against `certified` (absolute when certified is 0),
/// capped at 15, the digits NIST certifies.
fn lre(value: f64, certified: f64) -> f64 {
    let error = if certified == 0.0 {
        value.abs()
    } else {
        ((value - certified) / certified).abs()
    };
    if error == 0.0 {
        15.0
    } else {
        (-error.log10()).min(15.0)
    }
}

/// Fits `y` on predictors built from the file's columns; `powers` > 0 means a polynomial in
/// the one x column up to that degree (powers computed in double-double from the decimals).
fn fit_dataset(name: &str, powers: u32, intercept: bool) -> (Fit, Certified) {
    let data = read(name);
    let width = data.rows[0].len();
    let outcome = Column::from_text(data.rows.iter().map(|r| r[0].as_str())).expect("y");
    let mut predictors = Vec::new();
    if powers == 0 {
        for at in 1..width {
            let column = Column::from_text(data.rows.iter().map(|r| r[at].as_str())).expect("x");
            predictors.push(Predictor::Numeric {
                name: format!("x{at}"),
                column,
            });
        }
    } else {
        let x = parsed(&data.rows, 1);
        for p in 1..=powers {
            let mut column = Column::new();
            for v in &x {
                let mut power = Dd::ONE;
                for _ in 0..p {
                    power = power * *v;
                }
                column.push_exact(power).expect("finite");
            }
            predictors.push(Predictor::Numeric {
                name: format!("x^{p}"),
                column,
            });
        }
    }
    let model = Model {
        outcome,
        predictors,
        intercept,
        fixed_effects: None,
        family: Family::Gaussian,
        errors: StdErrors::Classical,
    };
    (fit(&model).expect("a fit"), data.certified)
}

/// A column's decimals read to double-double by the library's own parser (as push_text does).
fn parsed(rows: &[Vec<String>], at: usize) -> Vec<Dd> {
    rows.iter()
        .map(|r| heartwood_stats::decimal::parse_decimal(&r[at]).expect("a decimal"))
        .collect()
}

/// The smallest LRE over every certified figure, with the figure that attains it.
fn worst(fit: &Fit, certified: &Certified) -> (f64, String) {
    let mut worst = (f64::INFINITY, String::new());
    let mut consider = |value: Option<f64>, cert: f64, what: String| {
        let value = value.unwrap_or(f64::NAN);
        let l = if value.is_nan() {
            0.0
        } else {
            lre(value, cert)
        };
        if l < worst.0 {
            worst = (l, what);
        }
    };
    for (j, c) in fit.coefficients.iter().enumerate() {
        consider(
            c.estimate,
            certified.estimates[j],
            format!("estimate {}", c.name),
        );
        consider(
            c.std_error,
            certified.std_errors[j],
            format!("std error {}", c.name),
        );
    }
    consider(fit.residual_sd, certified.residual_sd, "residual sd".into());
    consider(fit.r_squared, certified.r_squared, "r squared".into());
    worst
}

fn assert_certified(name: &str, powers: u32, intercept: bool) {
    let (fit, certified) = fit_dataset(name, powers, intercept);
    assert_eq!(fit.status, Status::Ok, "{name}: {:?}", fit.reason);
    assert_eq!(fit.coefficients.len(), certified.estimates.len(), "{name}");
    let (lre, what) = worst(&fit, &certified);
    println!(
        "{name}: minimum LRE {lre:.1} ({what}); condition number {:.3e}, scaled {:.3e}, {:?}",
        fit.condition_number, fit.scaled_condition_number, fit.precision
    );
    assert!(lre >= 10.0, "{name}: LRE {lre:.2} at {what}");
}

#[test]
fn norris_lower_difficulty() {
    assert_certified("Norris", 0, true);
}

#[test]
fn pontius_lower_difficulty() {
    assert_certified("Pontius", 2, true);
}

#[test]
fn noint1_average_difficulty_without_intercept() {
    assert_certified("NoInt1", 0, false);
}

#[test]
fn noint2_average_difficulty_without_intercept() {
    assert_certified("NoInt2", 0, false);
}

#[test]
fn filip_higher_difficulty() {
    assert_certified("Filip", 10, true);
}

#[test]
fn longley_higher_difficulty() {
    assert_certified("Longley", 0, true);
}

#[test]
fn wampler1_higher_difficulty() {
    assert_certified("Wampler1", 5, true);
}

#[test]
fn wampler2_higher_difficulty() {
    assert_certified("Wampler2", 5, true);
}

#[test]
fn wampler3_higher_difficulty() {
    assert_certified("Wampler3", 5, true);
}

#[test]
fn wampler4_higher_difficulty() {
    assert_certified("Wampler4", 5, true);
}

#[test]
fn wampler5_higher_difficulty() {
    assert_certified("Wampler5", 5, true);
}
