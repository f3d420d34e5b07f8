//! Householder QR of a tall matrix (columns stored one after another), in either working
//! precision, with the triangular solves and the inverse of R the estimators need.

use crate::real::Real;

/// `A = Q R`: reflectors below the diagonal, R on and above it.
pub(crate) struct Qr<T> {
    /// Column `j`: R's entries above the diagonal in rows `0..j`, the reflector from row `j`.
    columns: Vec<Vec<T>>,
    diagonal: Vec<T>,
    tau: Vec<T>,
}

/// `Σ a_i b_i` with four partial sums (independent chains pipeline and vectorize).
fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let mut s = [T::ZERO; 4];
    let chunks = a.len() / 4 * 4;
    for (ca, cb) in a[..chunks].chunks_exact(4).zip(b[..chunks].chunks_exact(4)) {
        for l in 0..4 {
            s[l] = s[l] + ca[l] * cb[l];
        }
    }
    let mut total = (s[0] + s[1]) + (s[2] + s[3]);
    for (x, y) in a[chunks..].iter().zip(&b[chunks..]) {
        total = total + *x * *y;
    }
    total
}

/// `y -= f · x`.
fn axpy<T: Real>(f: T, x: &[T], y: &mut [T]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = *yi - f * *xi;
    }
}

impl<T: Real> Qr<T> {
    /// Factors the matrix whose columns are `columns` (all of one length ≥ their count).
    pub fn factor(mut columns: Vec<Vec<T>>) -> Qr<T> {
        let k = columns.len();
        let mut diagonal = Vec::with_capacity(k);
        let mut tau = Vec::with_capacity(k);
        for j in 0..k {
            let (done, rest) = columns.split_at_mut(j + 1);
            let v = &mut done[j][j..];
            let norm = dot(v, v).sqrt();
            if norm == T::ZERO {
                diagonal.push(T::ZERO);
                tau.push(T::ZERO);
                continue;
            }
            let alpha = if v[0] >= T::ZERO { -norm } else { norm };
            v[0] = v[0] - alpha;
            // vᵀv = 2‖x‖(‖x‖ + |x₀|) = −2α v₀.
            let t = T::of(1.0) / (-alpha * v[0]);
            for other in rest.iter_mut() {
                let f = t * dot(v, &other[j..]);
                axpy(f, v, &mut other[j..]);
            }
            diagonal.push(alpha);
            tau.push(t);
        }
        Qr {
            columns,
            diagonal,
            tau,
        }
    }

    /// Columns.
    pub fn k(&self) -> usize {
        self.columns.len()
    }

    /// R as doubles, row-major `k × k`.
    pub fn r_f64(&self) -> Vec<Vec<f64>> {
        let k = self.k();
        let mut r = vec![vec![0.0; k]; k];
        for (c, column) in self.columns.iter().enumerate() {
            for (i, row) in r.iter_mut().enumerate().take(c) {
                row[c] = column[i].f64();
            }
            r[c][c] = self.diagonal[c].f64();
        }
        r
    }

    fn r(&self, i: usize, c: usize) -> T {
        if i == c {
            self.diagonal[c]
        } else {
            self.columns[c][i]
        }
    }

    /// `b ← Qᵀ b`.
    pub fn apply_qt(&self, b: &mut [T]) {
        for j in 0..self.k() {
            let v = &self.columns[j][j..];
            let f = self.tau[j] * dot(v, &b[j..]);
            axpy(f, v, &mut b[j..]);
        }
    }

    /// `b ← Q b`.
    pub fn apply_q(&self, b: &mut [T]) {
        for j in (0..self.k()).rev() {
            let v = &self.columns[j][j..];
            let f = self.tau[j] * dot(v, &b[j..]);
            axpy(f, v, &mut b[j..]);
        }
    }

    /// Solves `R x = b` in place.
    pub fn solve_r(&self, b: &mut [T]) {
        for i in (0..self.k()).rev() {
            let mut s = b[i];
            for (c, bc) in b.iter().enumerate().take(self.k()).skip(i + 1) {
                s = s - self.r(i, c) * *bc;
            }
            b[i] = s / self.diagonal[i];
        }
    }

    /// Solves `Rᵀ x = b` in place.
    pub fn solve_rt(&self, b: &mut [T]) {
        for i in 0..self.k() {
            let mut s = b[i];
            for (c, bc) in b.iter().enumerate().take(i) {
                s = s - self.r(c, i) * *bc;
            }
            b[i] = s / self.diagonal[i];
        }
    }

    /// R⁻¹, row-major (upper triangular).
    pub fn r_inverse(&self) -> Vec<Vec<T>> {
        let k = self.k();
        let mut inverse = vec![vec![T::ZERO; k]; k];
        for c in 0..k {
            // Column c of R⁻¹ solves R x = e_c.
            let mut x = vec![T::ZERO; k];
            x[c] = T::of(1.0);
            for i in (0..=c).rev() {
                let mut s = x[i];
                for (m, xm) in x.iter().enumerate().take(c + 1).skip(i + 1) {
                    s = s - self.r(i, m) * *xm;
                }
                x[i] = s / self.diagonal[i];
            }
            for (i, row) in inverse.iter_mut().enumerate() {
                row[c] = x[i];
            }
        }
        inverse
    }
}

/// The 2-norm condition number of a square matrix (rows given), from its singular values by
/// one-sided Jacobi rotations; infinite when singular.
pub(crate) fn condition_number(rows: &[Vec<f64>]) -> f64 {
    let k = rows.len();
    // Work on columns.
    let mut a: Vec<Vec<f64>> = (0..k)
        .map(|c| rows.iter().map(|r| r[c]).collect())
        .collect();
    for _sweep in 0..60 {
        let mut rotated = false;
        for p in 0..k {
            for q in p + 1..k {
                let alpha: f64 = a[p].iter().map(|x| x * x).sum();
                let beta: f64 = a[q].iter().map(|x| x * x).sum();
                let gamma: f64 = a[p].iter().zip(&a[q]).map(|(x, y)| x * y).sum();
                if gamma == 0.0 || gamma.abs() <= 1e-15 * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                let (left, right) = a.split_at_mut(q);
                for (x, y) in left[p].iter_mut().zip(right[0].iter_mut()) {
                    let (xp, yq) = (*x, *y);
                    *x = c * xp - s * yq;
                    *y = s * xp + c * yq;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = a
        .iter()
        .map(|c| c.iter().map(|x| x * x).sum::<f64>().sqrt())
        .collect();
    let max = norms.iter().copied().fold(0.0, f64::max);
    let min = norms.iter().copied().fold(f64::INFINITY, f64::min);
    if min == 0.0 || !min.is_finite() {
        f64::INFINITY
    } else {
        max / min
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dd::Dd;

    #[test]
    fn least_squares_of_a_line_through_three_points() {
        // y = 1 + 2x at x = 0, 1, 2 exactly.
        let a = vec![vec![1.0, 1.0, 1.0], vec![0.0, 1.0, 2.0]];
        let qr = Qr::factor(a);
        let mut b = vec![1.0, 3.0, 5.0];
        qr.apply_qt(&mut b);
        qr.solve_r(&mut b[..2]);
        assert!((b[0] - 1.0).abs() < 1e-14 && (b[1] - 2.0).abs() < 1e-14);
    }

    #[test]
    fn q_undoes_q_transpose_in_double_double() {
        let a: Vec<Vec<Dd>> = vec![
            [1.0, 2.0, 3.0, 4.0].map(Dd::from_f64).to_vec(),
            [0.5, -1.0, 7.0, 0.25].map(Dd::from_f64).to_vec(),
        ];
        let qr = Qr::factor(a);
        let original: Vec<Dd> = [3.0, 1.0, -2.0, 5.0].map(Dd::from_f64).to_vec();
        let mut b = original.clone();
        qr.apply_qt(&mut b);
        qr.apply_q(&mut b);
        for (x, y) in b.iter().zip(&original) {
            assert!((*x - *y).to_f64().abs() < 1e-30);
        }
    }

    #[test]
    fn condition_of_a_diagonal_matrix_is_its_ratio() {
        let m = vec![vec![4.0, 0.0], vec![0.0, 0.5]];
        assert!((condition_number(&m) - 8.0).abs() < 1e-12);
        assert!(condition_number(&[vec![1.0, 1.0], vec![1.0, 1.0]]) > 1e15);
    }
}
