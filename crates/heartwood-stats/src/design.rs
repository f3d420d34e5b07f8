//! The design matrix, described rather than stored: each column is the intercept, a data
//! column, or the indicator of one level of a label column. Columns are scaled by powers of
//! two (exactly) so each one's largest magnitude lies in [½, 1); solvers materialize them in
//! their own precision and compute residuals from the unrounded data.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::column::{Column, Values};
use crate::dd::Dd;
use crate::error::StatsError;
use crate::model::{MAX_CELLS, MAX_COEFFICIENTS, MAX_LEVELS, MAX_ROWS, Model, Predictor};
use crate::real::Real;

/// Where a design column's values come from.
enum Source<'m> {
    Ones,
    Data(&'m Column),
    /// Rows whose code (in the label set `codes`) equals `level`.
    Indicator {
        codes: usize,
        level: u32,
    },
}

/// The design of a model.
pub(crate) struct Design<'m> {
    sources: Vec<Source<'m>>,
    codes: Vec<Vec<u32>>,
    /// Coefficient names of the reported columns (the first `names.len()` columns).
    pub names: Vec<String>,
    /// The power of two each column is multiplied by.
    pub scale: Vec<f64>,
    /// Rows.
    pub n: usize,
    /// The cluster of each row, for cluster-robust errors.
    pub clusters: Option<Clusters>,
}

/// Labels as codes `0..levels` in the sorted order of the distinct labels.
pub(crate) fn encode(labels: &[String]) -> (Vec<u32>, Vec<&str>) {
    let mut seen: HashMap<&str, u32> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let raw: Vec<u32> = labels
        .iter()
        .map(|l| match seen.get(l.as_str()) {
            Some(code) => *code,
            None => {
                let code = order.len() as u32;
                seen.insert(l, code);
                order.push(l);
                code
            }
        })
        .collect();
    let mut sorted: Vec<usize> = (0..order.len()).collect();
    sorted.sort_by_key(|i| order[*i]);
    let mut remap = vec![0u32; order.len()];
    for (new, old) in sorted.iter().enumerate() {
        remap[*old] = new as u32;
    }
    let codes = raw.into_iter().map(|c| remap[c as usize]).collect();
    (codes, sorted.into_iter().map(|i| order[i]).collect())
}

/// Cluster labels as codes, with the number of clusters.
pub(crate) struct Clusters {
    /// A code per row.
    pub codes: Vec<u32>,
    /// How many clusters.
    pub count: usize,
}

impl<'m> Design<'m> {
    /// The design of `model`, checked against the limits.
    pub fn build(model: &'m Model) -> Result<Design<'m>, StatsError> {
        let n = model.outcome.len();
        check_rows(model, n)?;
        let mut design = Design {
            sources: Vec::new(),
            codes: Vec::new(),
            names: Vec::new(),
            scale: Vec::new(),
            n,
            clusters: match &model.errors {
                crate::model::StdErrors::Cluster(labels) => {
                    let (codes, levels) = encode(labels);
                    Some(Clusters {
                        codes,
                        count: levels.len(),
                    })
                }
                _ => None,
            },
        };
        if model.intercept {
            design.push("intercept".to_owned(), Source::Ones);
        }
        let mut full_rank_used = model.intercept;
        for predictor in &model.predictors {
            match predictor {
                Predictor::Numeric { name, column } => {
                    design.push(name.clone(), Source::Data(column));
                }
                Predictor::Categorical { name, labels } => {
                    let all_levels = !full_rank_used;
                    full_rank_used = true;
                    design.push_levels(
                        labels,
                        |level| {
                            if all_levels {
                                format!("{name}[{level}]")
                            } else {
                                format!("{name}[T.{level}]")
                            }
                        },
                        all_levels,
                    )?;
                }
            }
        }
        let reported = design.names.clone();
        if let Some(labels) = &model.fixed_effects {
            design.push_levels(
                labels,
                |level| format!("fixed effect [{level}]"),
                !full_rank_used,
            )?;
        }
        if design.sources.is_empty() {
            return Err(StatsError::NoCoefficients);
        }
        let k = design.sources.len();
        if k > MAX_COEFFICIENTS {
            return Err(StatsError::Limit {
                what: "the number of coefficients",
                found: k,
                limit: MAX_COEFFICIENTS,
                advice: "use fewer predictors or categorical levels",
            });
        }
        if n.saturating_mul(k) > MAX_CELLS {
            return Err(StatsError::Limit {
                what: "rows × coefficients",
                found: n.saturating_mul(k),
                limit: MAX_CELLS,
                advice: "fit a sample of the rows or fewer predictors",
            });
        }
        if n <= k {
            return Err(StatsError::TooFewRows {
                coefficients: k,
                rows: n,
            });
        }
        design.names = reported;
        design.scale = (0..k)
            .map(|j| power_of_two_scale(design.max_abs(j)))
            .collect();
        Ok(design)
    }

    fn push(&mut self, name: String, source: Source<'m>) {
        self.names.push(name);
        self.sources.push(source);
    }

    fn push_levels(
        &mut self,
        labels: &[String],
        name: impl Fn(&str) -> String,
        all_levels: bool,
    ) -> Result<(), StatsError> {
        let (codes, levels) = encode(labels);
        if levels.len() > MAX_LEVELS {
            return Err(StatsError::Limit {
                what: "the number of levels of a label column",
                found: levels.len(),
                limit: MAX_LEVELS,
                advice: "group rare levels or use cluster-robust errors instead of fixed effects",
            });
        }
        let names: Vec<String> = levels.iter().map(|l| name(l)).collect();
        self.codes.push(codes);
        let which = self.codes.len() - 1;
        for (level, level_name) in names.into_iter().enumerate().skip(usize::from(!all_levels)) {
            self.push(
                level_name,
                Source::Indicator {
                    codes: which,
                    level: level as u32,
                },
            );
        }
        Ok(())
    }

    /// Columns, reported and absorbed.
    pub fn k(&self) -> usize {
        self.sources.len()
    }

    fn max_abs(&self, j: usize) -> f64 {
        match &self.sources[j] {
            Source::Ones => 1.0,
            Source::Data(c) => c.max_abs(),
            Source::Indicator { codes, level } => {
                if self.codes[*codes].contains(level) {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }

    /// Scaled column `j` in precision `T`.
    pub fn column<T: Real>(&self, j: usize) -> Vec<T> {
        let s = self.scale[j];
        match &self.sources[j] {
            Source::Ones => vec![T::of(s); self.n],
            Source::Data(c) => match c.values() {
                Values::Float(v) => v.iter().map(|x| T::of(x * s)).collect(),
                Values::Exact(v) => v
                    .iter()
                    .map(|x| {
                        T::of_dd(Dd {
                            hi: x.hi * s,
                            lo: x.lo * s,
                        })
                    })
                    .collect(),
            },
            Source::Indicator { codes, level } => self.codes[*codes]
                .iter()
                .map(|c| T::of(if c == level { s } else { 0.0 }))
                .collect(),
        }
    }

    /// `target[i] -= x_ij · b` for every row, in double-double on the unrounded data
    /// (scaled column `j`).
    pub fn subtract_multiple(&self, j: usize, b: Dd, target: &mut [Dd]) {
        let b = b.mul_f64(self.scale[j]);
        match &self.sources[j] {
            Source::Ones => target.iter_mut().for_each(|t| *t -= b),
            Source::Data(c) => match c.values() {
                Values::Float(v) => {
                    for (t, x) in target.iter_mut().zip(v) {
                        *t -= b.mul_f64(*x);
                    }
                }
                Values::Exact(v) => {
                    for (t, x) in target.iter_mut().zip(v) {
                        *t -= b * *x;
                    }
                }
            },
            Source::Indicator { codes, level } => {
                for (t, c) in target.iter_mut().zip(&self.codes[*codes]) {
                    if c == level {
                        *t -= b;
                    }
                }
            }
        }
    }

    /// `Σ_i x_ij v_i` in double-double on the unrounded data (scaled column `j`).
    pub fn dot(&self, j: usize, v: &[Dd]) -> Dd {
        let sum = match &self.sources[j] {
            Source::Ones => sum4(v.iter().copied()),
            Source::Data(c) => match c.values() {
                Values::Float(x) => sum4(x.iter().zip(v).map(|(x, v)| v.mul_f64(*x))),
                Values::Exact(x) => sum4(x.iter().zip(v).map(|(x, v)| *x * *v)),
            },
            Source::Indicator { codes, level } => sum4(
                self.codes[*codes]
                    .iter()
                    .zip(v)
                    .filter(|(c, _)| *c == level)
                    .map(|(_, v)| *v),
            ),
        };
        sum.mul_f64(self.scale[j])
    }

    /// `y − X b` for scaled coefficients `b`, in double-double.
    pub fn residuals(&self, y: &[Dd], b: &[Dd]) -> Vec<Dd> {
        let mut r = y.to_vec();
        for (j, bj) in b.iter().enumerate() {
            self.subtract_multiple(j, *bj, &mut r);
        }
        r
    }
}

/// A double-double sum in four interleaved accumulators (independent dependency chains).
fn sum4(terms: impl Iterator<Item = Dd>) -> Dd {
    let mut acc = [Dd::ZERO; 4];
    for (i, t) in terms.enumerate() {
        acc[i & 3] += t;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// The power of two that brings `max` into [½, 1) (1 for zero).
fn power_of_two_scale(max: f64) -> f64 {
    if max == 0.0 || !max.is_finite() {
        return 1.0;
    }
    let exponent = max.log2().floor() as i32 + 1;
    let mut scale = 2f64.powi(-exponent);
    // log2 can round across a power of two; settle it exactly.
    while max * scale >= 1.0 {
        scale *= 0.5;
    }
    while max * scale < 0.5 {
        scale *= 2.0;
    }
    scale
}

/// Row counts, limits, label lengths and repeated names.
fn check_rows(model: &Model, n: usize) -> Result<(), StatsError> {
    if n == 0 {
        return Err(StatsError::Empty);
    }
    if n > MAX_ROWS {
        return Err(StatsError::Limit {
            what: "the number of rows",
            found: n,
            limit: MAX_ROWS,
            advice: "fit a sample of the rows",
        });
    }
    let mut seen = HashSet::new();
    for predictor in &model.predictors {
        if !seen.insert(predictor.name()) || predictor.name() == "intercept" {
            return Err(StatsError::RepeatedPredictor(predictor.name().to_owned()));
        }
        let found = match predictor {
            Predictor::Numeric { column, .. } => column.len(),
            Predictor::Categorical { labels, .. } => labels.len(),
        };
        if found != n {
            return Err(StatsError::LengthMismatch {
                column: predictor.name().to_owned(),
                found,
                expected: n,
            });
        }
    }
    let mut labels: BTreeMap<&'static str, usize> = BTreeMap::new();
    if let Some(fe) = &model.fixed_effects {
        labels.insert("fixed-effect", fe.len());
    }
    if let crate::model::StdErrors::Cluster(c) = &model.errors {
        labels.insert("cluster", c.len());
    }
    for (what, found) in labels {
        if found != n {
            return Err(StatsError::LabelLength {
                what,
                found,
                expected: n,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_exact_powers_of_two_into_half_to_one() {
        for max in [1.0, 0.5, 0.75, 3.0e6, 1e-300, 2f64.powi(40)] {
            let s = power_of_two_scale(max);
            assert!((0.5..1.0).contains(&(max * s)), "{max} {s}");
            assert_eq!(s.log2().fract(), 0.0);
        }
    }
}
