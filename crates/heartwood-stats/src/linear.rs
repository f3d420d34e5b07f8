//! Least squares: Householder QR in the working precision, then Björck's iterative refinement
//! of the augmented system `[I X; Xᵀ 0][r; b] = [y; 0]` with residuals computed in
//! double-double on the unrounded data. Small problems run wholly in double-double; large
//! ones factor in double and fall back to double-double (or say `unreliable`) when the
//! condition number leaves too few certain digits.

use crate::covariance::{Meat, leverages, sandwich, z_columns};
use crate::dd::Dd;
use crate::design::Design;
use crate::model::{Model, StdErrors};
use crate::qr::{Qr, condition_number};
use crate::real::Real;
use crate::report::{Fit, Precision, Status};

/// Problems with rows × coefficients² up to this run wholly in double-double.
pub const EXACT_BUDGET: usize = 4_000_000;
/// Beyond this, a problem too ill-conditioned for double precision is `unreliable`.
pub const EXACT_LIMIT: usize = 200_000_000;
/// A figure is certified when its estimated relative error is below this.
pub const CERTIFIED_ERROR: f64 = 1e-11;

/// A refinement that stops improving has converged when its last correction is this small
/// relative to the coefficients (a thousandth of the certified error).
const STAGNATION_ACCEPTED: f64 = 1e-14;

/// The solution in the scaled basis.
struct Solution {
    beta: Vec<Dd>,
    residuals: Vec<Dd>,
    covariance: Vec<Vec<f64>>,
    scaled_condition: f64,
    /// R of the scaled design, as doubles.
    r: Vec<Vec<f64>>,
    /// Why the figures cannot be vouched for.
    doubt: Option<String>,
    precision: Precision,
}

/// Fits a least-squares model.
pub(crate) fn fit(model: &Model, design: &Design) -> Fit {
    let y = model.outcome.to_dd();
    let size = design.n.saturating_mul(design.k() * design.k());
    let solution = if size <= EXACT_BUDGET {
        solve::<Dd>(model, design, &y)
    } else {
        let fast = solve::<f64>(model, design, &y);
        if fast.doubt.is_some() && size <= EXACT_LIMIT {
            solve::<Dd>(model, design, &y)
        } else {
            fast
        }
    };
    report(model, design, &y, solution)
}

fn solve<T: Real>(model: &Model, design: &Design, y: &[Dd]) -> Solution {
    let k = design.k();
    let x: Vec<Vec<T>> = (0..k).map(|j| design.column::<T>(j)).collect();
    // The factorization takes the columns over; robust errors materialize them again later
    // rather than holding a second copy through the factorization.
    let qr = Qr::factor(x);
    let r = qr.r_f64();
    let scaled_condition = condition_number(&r);
    // Householder QR's errors grow with k and the condition number; 10·k·u·κ bounds them for
    // the figures reported (coefficients, their variances, the residual variance).
    let error_bound = 10.0 * k as f64 * T::UNIT_ROUNDOFF * scaled_condition;
    let precision = if T::UNIT_ROUNDOFF < 1e-20 {
        Precision::DoubleDouble
    } else {
        Precision::Double
    };
    // NaN (a singular factor) counts as beyond the bound.
    let certified = error_bound.is_finite() && error_bound <= CERTIFIED_ERROR;
    let mut doubt = (!certified).then(|| {
        format!(
            "the predictors are nearly collinear (scaled condition number {scaled_condition:.3e}): \
             {precision} arithmetic cannot certify 11 digits; drop or combine collinear predictors"
        )
    });
    let (beta, converged) = refine(design, &qr, y);
    if !converged && doubt.is_none() {
        doubt = Some(
            "iterative refinement did not converge; the predictors are nearly collinear".into(),
        );
    }
    let residuals = design.residuals(y, &beta);
    let covariance = if doubt.is_some() {
        Vec::new()
    } else {
        let keep: Vec<Vec<T>> = if !matches!(model.errors, StdErrors::Classical) {
            (0..k).map(|j| design.column::<T>(j)).collect()
        } else {
            Vec::new()
        };
        match covariance(model, design, &qr, &keep, &residuals) {
            Ok(v) => v,
            Err(reason) => {
                doubt = Some(reason.to_string());
                Vec::new()
            }
        }
    };
    Solution {
        beta,
        residuals,
        covariance,
        scaled_condition,
        r,
        doubt,
        precision,
    }
}

/// Björck's refinement from zero; each step solves the augmented system for the correction
/// with the factorization and computes the new residual of the system in double-double.
/// Returns the coefficients (scaled basis) and whether the corrections became negligible.
fn refine<T: Real>(design: &Design, qr: &Qr<T>, y: &[Dd]) -> (Vec<Dd>, bool) {
    let (n, k) = (design.n, design.k());
    let mut beta = vec![Dd::ZERO; k];
    let mut r = vec![Dd::ZERO; n];
    let tolerance = if T::UNIT_ROUNDOFF < 1e-20 {
        1e-28
    } else {
        1e-16
    };
    let mut previous = f64::INFINITY;
    for iteration in 0..6 {
        // f = y − r − X b;  g = −Xᵀ r.
        // The first step starts from zero: f = y and g = 0 need no pass over the data.
        let first = iteration == 0;
        let mut f: Vec<Dd> = if first {
            y.to_vec()
        } else {
            y.iter().zip(&r).map(|(y, r)| *y - *r).collect()
        };
        let mut h: Vec<T> = vec![T::ZERO; k];
        if !first {
            for (j, bj) in beta.iter().enumerate() {
                design.subtract_multiple(j, *bj, &mut f);
            }
            for (j, hj) in h.iter_mut().enumerate() {
                *hj = T::of_dd(-design.dot(j, &r));
            }
        }
        let mut d: Vec<T> = f.iter().map(|x| T::of_dd(*x)).collect();
        qr.solve_rt(&mut h);
        qr.apply_qt(&mut d);
        let mut dx: Vec<T> = (0..k).map(|j| d[j] - h[j]).collect();
        qr.solve_r(&mut dx);
        d[..k].copy_from_slice(&h);
        qr.apply_q(&mut d);
        for (ri, di) in r.iter_mut().zip(&d) {
            *ri += di.dd();
        }
        for (bj, dj) in beta.iter_mut().zip(&dx) {
            *bj += dj.dd();
        }
        let size = beta.iter().fold(0.0f64, |m, b| m.max(b.hi.abs()));
        let step = dx.iter().fold(0.0f64, |m, d| m.max(d.f64().abs()));
        if !step.is_finite() {
            return (beta, false);
        }
        // A step this small that shrank this fast leaves an error near step × ratio, far
        // below every certified figure, so the confirming step is not needed.
        let contracting = step <= 1e-12 * size && step <= 1e-6 * previous;
        if step <= tolerance * size || contracting {
            return (beta, true);
        }
        if step > 0.5 * previous {
            // Stagnated at the precision's floor: good enough when far below certification.
            return (beta, step <= STAGNATION_ACCEPTED * size);
        }
        previous = step;
    }
    let size = beta.iter().fold(0.0f64, |m, b| m.max(b.hi.abs()));
    (beta, previous <= STAGNATION_ACCEPTED * size)
}

/// Why the standard errors asked for are undefined for this fit (the fit's doubt, as text).
#[derive(Debug, thiserror::Error)]
enum Undefined {
    /// A row with leverage 1 makes HC2 and HC3 divide by zero.
    #[error(
        "row {row} has leverage 1 (it alone determines a coefficient), so {errors} errors are \
         undefined; use hc0, hc1 or classical"
    )]
    Leverage {
        /// The row, from 1.
        row: usize,
        /// The kind of standard errors.
        errors: &'static str,
    },
    /// Cluster-robust errors without cluster labels.
    #[error("cluster labels are missing")]
    NoClusters,
}

/// The covariance of the scaled coefficients for the model's kind of standard errors.
fn covariance<T: Real>(
    model: &Model,
    design: &Design,
    qr: &Qr<T>,
    x: &[Vec<T>],
    residuals: &[Dd],
) -> Result<Vec<Vec<f64>>, Undefined> {
    let (n, k) = (design.n, design.k());
    let r_inverse = qr.r_inverse();
    let sse = residuals.iter().fold(Dd::ZERO, |s, e| s + *e * *e);
    let dof = (n - k) as f64;
    let z = match model.errors {
        StdErrors::Classical => Vec::new(),
        _ => z_columns(x, &r_inverse),
    };
    let e: Vec<f64> = residuals.iter().map(|e| e.to_f64()).collect();
    let weights = |power: i32| -> Result<Vec<f64>, Undefined> {
        let h = leverages(&z);
        e.iter()
            .zip(&h)
            .enumerate()
            .map(|(i, (e, h))| {
                let room = 1.0 - h;
                if room <= 1e-12 {
                    Err(Undefined::Leverage {
                        row: i + 1,
                        errors: model.errors.name(),
                    })
                } else {
                    Ok(e * e / room.powi(power))
                }
            })
            .collect()
    };
    let squared: Vec<f64> = e.iter().map(|e| e * e).collect();
    let covariance = match &model.errors {
        StdErrors::Classical => {
            let s2 = (sse / Dd::from_f64(dof)).to_f64();
            sandwich(&r_inverse, &z, &Meat::Scalar(s2))
        }
        StdErrors::Hc0 => sandwich(&r_inverse, &z, &Meat::Rows(&squared)),
        StdErrors::Hc1 => {
            let w: Vec<f64> = squared.iter().map(|s| s * n as f64 / dof).collect();
            sandwich(&r_inverse, &z, &Meat::Rows(&w))
        }
        StdErrors::Hc2 => sandwich(&r_inverse, &z, &Meat::Rows(&weights(1)?)),
        StdErrors::Hc3 => sandwich(&r_inverse, &z, &Meat::Rows(&weights(2)?)),
        StdErrors::Cluster(_) => {
            let Some(clusters) = &design.clusters else {
                return Err(Undefined::NoClusters);
            };
            let g = clusters.count as f64;
            let factor = g / (g - 1.0) * (n as f64 - 1.0) / dof;
            sandwich(
                &r_inverse,
                &z,
                &Meat::Clusters {
                    codes: &clusters.codes,
                    groups: clusters.count,
                    residuals: &e,
                    factor,
                },
            )
        }
    };
    Ok(covariance)
}

/// The fit's figures, unscaled.
fn report(model: &Model, design: &Design, y: &[Dd], solution: Solution) -> Fit {
    let (n, k) = (design.n, design.k());
    let sse = solution.residuals.iter().fold(Dd::ZERO, |s, e| s + *e * *e);
    let total = if model.intercept {
        let mean = y.iter().fold(Dd::ZERO, |s, v| s + *v) / Dd::from_f64(n as f64);
        y.iter().fold(Dd::ZERO, |s, v| {
            let d = *v - mean;
            s + d * d
        })
    } else {
        y.iter().fold(Dd::ZERO, |s, v| s + *v * *v)
    };
    let r_squared = (Dd::ONE - sse / total).to_f64();
    let residual_sd = (sse / Dd::from_f64((n - k) as f64)).sqrt().to_f64();
    // R of the design as given: X = X_s D⁻¹, so R = R_s D⁻¹.
    let unscaled: Vec<Vec<f64>> = solution
        .r
        .iter()
        .map(|row| row.iter().zip(&design.scale).map(|(r, s)| r / s).collect())
        .collect();
    let condition = condition_number(&unscaled);
    let mut fit = Fit::new(model, design, solution.precision);
    fit.condition_number = condition;
    fit.scaled_condition_number = solution.scaled_condition;
    let ok = solution.doubt.is_none();
    for (j, name) in design.names.iter().enumerate() {
        let estimate = solution.beta[j].to_f64() * design.scale[j];
        let std_error = solution
            .covariance
            .get(j)
            .map(|row| row[j].max(0.0).sqrt() * design.scale[j]);
        fit.push(
            name,
            ok.then_some(estimate),
            if ok { std_error } else { None },
        );
    }
    if ok {
        fit.r_squared = Some(r_squared);
        fit.residual_sd = Some(residual_sd);
    }
    match solution.doubt {
        None => fit.status = Status::Ok,
        Some(reason) => fit.unreliable(reason),
    }
    fit
}
