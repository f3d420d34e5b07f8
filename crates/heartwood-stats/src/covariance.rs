//! Sandwich covariances in the scaled, factored basis: with `Z = X R⁻¹` (so `ZᵀZ = I`), every
//! estimator is `R⁻¹ M R⁻ᵀ` for a meat `M` built from rows of `Z` and residuals. Classical:
//! `M = σ̂² I`; HC0–HC3: `M = Σ wᵢ zᵢ zᵢᵀ`; CR1: `M = c Σ_g s_g s_gᵀ` with `s_g = Σ_{i∈g} zᵢ eᵢ`.

use crate::real::Real;

/// What the meat is built from.
pub(crate) enum Meat<'a> {
    /// `σ̂² I`.
    Scalar(f64),
    /// Per-row weights `wᵢ` on `zᵢ zᵢᵀ` (the HC family).
    Rows(&'a [f64]),
    /// Cluster codes and residuals, and the factor in front.
    Clusters {
        codes: &'a [u32],
        groups: usize,
        residuals: &'a [f64],
        factor: f64,
    },
}

/// The rows of `Z = X R⁻¹` as columns (`z[c][i]`), from scaled design columns.
pub(crate) fn z_columns<T: Real>(x: &[Vec<T>], r_inverse: &[Vec<T>]) -> Vec<Vec<T>> {
    let k = x.len();
    let n = x.first().map_or(0, Vec::len);
    (0..k)
        .map(|c| {
            let mut z = vec![T::ZERO; n];
            for (j, xj) in x.iter().enumerate().take(c + 1) {
                let f = r_inverse[j][c];
                for (zi, xi) in z.iter_mut().zip(xj) {
                    *zi = *zi + *xi * f;
                }
            }
            z
        })
        .collect()
}

/// Leverages `hᵢ = ‖zᵢ‖²`.
pub(crate) fn leverages<T: Real>(z: &[Vec<T>]) -> Vec<f64> {
    let n = z.first().map_or(0, Vec::len);
    let mut h = vec![T::ZERO; n];
    for column in z {
        for (hi, zi) in h.iter_mut().zip(column) {
            *hi = *hi + *zi * *zi;
        }
    }
    h.into_iter().map(Real::f64).collect()
}

/// `R⁻¹ M R⁻ᵀ` (scaled basis), `k × k`, in precision `T`, rounded to doubles.
pub(crate) fn sandwich<T: Real>(r_inverse: &[Vec<T>], z: &[Vec<T>], meat: &Meat) -> Vec<Vec<f64>> {
    let k = r_inverse.len();
    let m: Vec<Vec<T>> = match meat {
        Meat::Scalar(s2) => (0..k)
            .map(|i| {
                (0..k)
                    .map(|j| if i == j { T::of(*s2) } else { T::ZERO })
                    .collect()
            })
            .collect(),
        Meat::Rows(w) => {
            let mut m = vec![vec![T::ZERO; k]; k];
            for a in 0..k {
                for b in a..k {
                    let mut s = T::ZERO;
                    for ((za, zb), wi) in z[a].iter().zip(&z[b]).zip(w.iter()) {
                        s = s + *za * *zb * T::of(*wi);
                    }
                    m[a][b] = s;
                    m[b][a] = s;
                }
            }
            m
        }
        Meat::Clusters {
            codes,
            groups,
            residuals,
            factor,
        } => {
            let mut scores = vec![vec![T::ZERO; k]; *groups];
            for (c, column) in z.iter().enumerate() {
                for ((zi, g), e) in column.iter().zip(codes.iter()).zip(residuals.iter()) {
                    let slot = &mut scores[*g as usize][c];
                    *slot = *slot + *zi * T::of(*e);
                }
            }
            let mut m = vec![vec![T::ZERO; k]; k];
            for score in &scores {
                for a in 0..k {
                    for b in a..k {
                        m[a][b] = m[a][b] + score[a] * score[b];
                    }
                }
            }
            let factor = T::of(*factor);
            (0..k)
                .map(|a| {
                    (0..k)
                        .map(|b| factor * if a <= b { m[a][b] } else { m[b][a] })
                        .collect()
                })
                .collect()
        }
    };
    // R⁻¹ M R⁻ᵀ.
    let left: Vec<Vec<T>> = (0..k)
        .map(|i| {
            (0..k)
                .map(|j| (i..k).fold(T::ZERO, |s, l| s + r_inverse[i][l] * m[l][j]))
                .collect()
        })
        .collect();
    (0..k)
        .map(|i| {
            (0..k)
                .map(|j| {
                    (j..k)
                        .fold(T::ZERO, |s, l| s + left[i][l] * r_inverse[j][l])
                        .f64()
                })
                .collect()
        })
        .collect()
}
