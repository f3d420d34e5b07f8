//! Logistic regression by Newton's method (iteratively reweighted least squares) in double
//! precision on power-of-two-scaled columns.
//!
//! Convergence rule: stop when every Newton step component is at most
//! [`STEP_TOLERANCE`] × (1 + |coefficient|) in the scaled basis, within [`MAX_ITERATIONS`].
//! Complete or quasi-complete separation (the maximum likelihood estimate is infinite) shows
//! as no convergence, a singular information matrix, or fitted probabilities within 10⁻¹³ of
//! 0 or 1 (|linear predictor| > 30); each makes the fit `unreliable`.

use crate::design::Design;
use crate::error::StatsError;
use crate::model::{Model, StdErrors};
use crate::qr::{Qr, condition_number};
use crate::report::{Fit, Precision};

/// The most Newton iterations.
pub const MAX_ITERATIONS: usize = 100;
/// The relative step below which Newton's method has converged.
pub const STEP_TOLERANCE: f64 = 1e-10;
/// A small dense matrix, row by row.
type Matrix = Vec<Vec<f64>>;

/// A logistic fit is certified when its estimated relative error is below this.
pub const CERTIFIED_ERROR: f64 = 1e-8;
/// |linear predictor| beyond which a fitted probability is 0 or 1 for practical purposes.
const SEPARATION_ETA: f64 = 30.0;

/// Fits a logistic regression.
pub(crate) fn fit(model: &Model, design: &Design) -> Result<Fit, StatsError> {
    let n = design.n;
    let k = design.k();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            let v = model.outcome.get(i).unwrap_or(f64::NAN);
            if v == 0.0 || v == 1.0 {
                Ok(v)
            } else {
                Err(StatsError::NotBinary {
                    row: i + 1,
                    value: v,
                })
            }
        })
        .collect::<Result<_, _>>()?;
    // statsmodels applies no small-sample factor to HC1 for maximum-likelihood models and Stata
    // applies n/(n−1): with no agreed meaning, HC1 is refused rather than guessed.
    if matches!(
        model.errors,
        StdErrors::Hc1 | StdErrors::Hc2 | StdErrors::Hc3
    ) {
        return Err(StatsError::UnsupportedErrors {
            kind: model.errors.name(),
            family: "binomial",
            instead: "classical, hc0 or cluster",
        });
    }
    let x: Vec<Vec<f64>> = (0..k).map(|j| design.column::<f64>(j)).collect();
    let qr = Qr::factor(x.clone());
    let r = qr.r_f64();
    let unscaled: Vec<Vec<f64>> = r
        .iter()
        .map(|row| row.iter().zip(&design.scale).map(|(r, s)| r / s).collect())
        .collect();
    let mut fit = Fit::new(model, design, Precision::Double);
    fit.condition_number = condition_number(&unscaled);
    fit.scaled_condition_number = condition_number(&r);

    let newton = newton(&x, &y);
    fit.iterations = Some(newton.iterations);
    let max_eta = newton.eta.iter().fold(0.0f64, |m, e| m.max(e.abs()));
    let separated = (max_eta > SEPARATION_ETA).then(|| {
        "some fitted probabilities are 0 or 1 (complete or quasi-complete separation): a \
         predictor or combination predicts the outcome perfectly for some rows, so the \
         estimates are infinite; drop or merge that predictor or category"
            .to_owned()
    });
    // At the optimum, errors grow with the information's condition number κ(W^½X)²; fewer
    // than 8 certain digits is unreliable.
    let bound = 10.0 * k as f64 * f64::EPSILON / 2.0 * newton.weighted_condition.powi(2);
    let collinear = (!(bound.is_finite() && bound <= CERTIFIED_ERROR)).then(|| {
        format!(
            "the predictors are nearly collinear where the data lie (weighted condition number \
             {:.3e}): double precision cannot certify 8 digits; drop or combine collinear \
             predictors",
            newton.weighted_condition
        )
    });
    let doubt = newton.doubt.clone().or(separated).or(collinear);
    let covariance = match &doubt {
        Some(_) => None,
        None => Some(covariance(model, design, &x, &y, &newton)?),
    };
    for (j, name) in design.names.iter().enumerate() {
        let estimate = newton.beta[j] * design.scale[j];
        let se = covariance
            .as_ref()
            .map(|v| v[j][j].max(0.0).sqrt() * design.scale[j]);
        fit.push(name, Some(estimate), se);
    }
    fit.log_likelihood = Some(log_likelihood(&y, &newton.eta));
    if let Some(reason) = doubt {
        fit.unreliable(reason);
    }
    Ok(fit)
}

/// Where Newton's method ended.
#[derive(Clone)]
struct Newton {
    beta: Vec<f64>,
    eta: Vec<f64>,
    /// The inverse information at `beta` (scaled basis).
    inverse: Vec<Vec<f64>>,
    /// The condition number of `W^½ X` at `beta` (the square root of the information's).
    weighted_condition: f64,
    iterations: usize,
    doubt: Option<String>,
}

fn linear_predictor(x: &[Vec<f64>], beta: &[f64], n: usize) -> Vec<f64> {
    let mut eta = vec![0.0; n];
    for (column, b) in x.iter().zip(beta) {
        for (e, v) in eta.iter_mut().zip(column) {
            *e += v * b;
        }
    }
    eta
}

fn probability(eta: f64) -> f64 {
    if eta >= 0.0 {
        1.0 / (1.0 + (-eta).exp())
    } else {
        let e = eta.exp();
        e / (1.0 + e)
    }
}

fn newton(x: &[Vec<f64>], y: &[f64]) -> Newton {
    let (n, k) = (y.len(), x.len());
    let mut beta = vec![0.0; k];
    let mut iterations = 0;
    let mut converged = false;
    let mut inverse = Vec::new();
    let mut weighted_condition = f64::INFINITY;
    let mut eta = linear_predictor(x, &beta, n);
    while iterations < MAX_ITERATIONS {
        iterations += 1;
        let p: Vec<f64> = eta.iter().map(|e| probability(*e)).collect();
        let w: Vec<f64> = p.iter().map(|p| p * (1.0 - p)).collect();
        let score: Vec<f64> = x
            .iter()
            .map(|c| c.iter().zip(y).zip(&p).map(|((x, y), p)| x * (y - p)).sum())
            .collect();
        let Some((inv, _)) = information_inverse(x, &w) else {
            return Newton {
                beta,
                eta,
                inverse,
                weighted_condition,
                iterations,
                doubt: Some(
                    "the information matrix is singular: the predictors are collinear or the \
                     outcome is separated; drop or merge predictors"
                        .into(),
                ),
            };
        };
        let step: Vec<f64> = inv
            .iter()
            .map(|row| row.iter().zip(&score).map(|(a, b)| a * b).sum())
            .collect();
        for (b, s) in beta.iter_mut().zip(&step) {
            *b += s;
        }
        eta = linear_predictor(x, &beta, n);
        let small = step
            .iter()
            .zip(&beta)
            .all(|(s, b)| s.abs() <= STEP_TOLERANCE * (1.0 + b.abs()));
        if step.iter().any(|s| !s.is_finite()) {
            break;
        }
        if small {
            converged = true;
            let p: Vec<f64> = eta.iter().map(|e| probability(*e)).collect();
            let w: Vec<f64> = p.iter().map(|p| p * (1.0 - p)).collect();
            if let Some((final_inverse, l)) = information_inverse(x, &w) {
                inverse = final_inverse;
                weighted_condition = condition_number(&l);
            }
            break;
        }
    }
    Newton {
        beta,
        eta,
        inverse,
        weighted_condition,
        iterations,
        doubt: (!converged).then(|| {
            format!(
                "Newton's method did not converge in {MAX_ITERATIONS} iterations: the outcome \
                 is probably separated by a predictor (the estimates grow without bound); drop \
                 or merge that predictor or category"
            )
        }),
    }
}

/// `(Xᵀ W X)⁻¹` by Cholesky, with the Cholesky factor, or `None` when it is not numerically
/// positive definite.
fn information_inverse(x: &[Vec<f64>], w: &[f64]) -> Option<(Matrix, Matrix)> {
    let k = x.len();
    let mut h = vec![vec![0.0; k]; k];
    for a in 0..k {
        for b in a..k {
            let s: f64 = x[a]
                .iter()
                .zip(&x[b])
                .zip(w)
                .map(|((p, q), w)| p * q * w)
                .sum();
            h[a][b] = s;
            h[b][a] = s;
        }
    }
    let scale = (0..k).fold(0.0f64, |m, i| m.max(h[i][i]));
    // Cholesky H = L Lᵀ.
    let mut l = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in 0..=i {
            let s = h[i][j] - (0..j).map(|m| l[i][m] * l[j][m]).sum::<f64>();
            if i == j {
                if s.is_nan() || s <= 1e-13 * scale {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    // H⁻¹ column by column.
    let mut inverse = vec![vec![0.0; k]; k];
    for c in 0..k {
        let mut v = vec![0.0; k];
        v[c] = 1.0;
        for i in 0..k {
            v[i] = (v[i] - (0..i).map(|m| l[i][m] * v[m]).sum::<f64>()) / l[i][i];
        }
        for i in (0..k).rev() {
            v[i] = (v[i] - (i + 1..k).map(|m| l[m][i] * v[m]).sum::<f64>()) / l[i][i];
        }
        for (i, row) in inverse.iter_mut().enumerate() {
            row[c] = v[i];
        }
    }
    Some((inverse, l))
}

/// `Σ yᵢηᵢ − log(1 + e^ηᵢ)`, computed without overflow.
fn log_likelihood(y: &[f64], eta: &[f64]) -> f64 {
    y.iter()
        .zip(eta)
        .map(|(y, e)| y * e - (e.max(0.0) + (-e.abs()).exp().ln_1p()))
        .sum()
}

/// The covariance of the scaled coefficients.
fn covariance(
    model: &Model,
    design: &Design,
    x: &[Vec<f64>],
    y: &[f64],
    newton: &Newton,
) -> Result<Vec<Vec<f64>>, StatsError> {
    let (n, k) = (y.len(), x.len());
    let bread = &newton.inverse;
    let residual: Vec<f64> = y
        .iter()
        .zip(&newton.eta)
        .map(|(y, e)| y - probability(*e))
        .collect();
    let (groups, codes, factor): (usize, Vec<u32>, f64) = match &model.errors {
        StdErrors::Classical => return Ok(bread.clone()),
        StdErrors::Hc0 => (n, (0..n as u32).collect(), 1.0),
        StdErrors::Cluster(_) => match &design.clusters {
            Some(clusters) => {
                let g = clusters.count as f64;
                let factor = g / (g - 1.0) * (n as f64 - 1.0) / (n - k) as f64;
                (clusters.count, clusters.codes.clone(), factor)
            }
            None => return Ok(bread.clone()),
        },
        StdErrors::Hc1 | StdErrors::Hc2 | StdErrors::Hc3 => {
            return Err(StatsError::UnsupportedErrors {
                kind: model.errors.name(),
                family: "binomial",
                instead: "classical, hc0 or cluster",
            });
        }
    };
    let mut scores = vec![vec![0.0; k]; groups];
    for (c, column) in x.iter().enumerate() {
        for ((xi, g), e) in column.iter().zip(&codes).zip(&residual) {
            scores[*g as usize][c] += xi * e;
        }
    }
    let mut meat = vec![vec![0.0; k]; k];
    for s in &scores {
        for a in 0..k {
            for b in 0..k {
                meat[a][b] += s[a] * s[b];
            }
        }
    }
    let product = |a: &[Vec<f64>], b: &[Vec<f64>]| -> Vec<Vec<f64>> {
        (0..k)
            .map(|i| {
                (0..k)
                    .map(|j| (0..k).map(|m| a[i][m] * b[m][j]).sum())
                    .collect()
            })
            .collect()
    };
    let v = product(&product(bread, &meat), bread);
    Ok(v.into_iter()
        .map(|row| row.into_iter().map(|x| x * factor).collect())
        .collect())
}
