//! What a fit promises beyond the certified datasets: `unreliable` instead of wrong figures,
//! the double-precision path agreeing with the exact one, dummy coding and fixed effects named
//! as statsmodels names them, and input refused with a message.

use heartwood_stats::{
    Column, Family, Model, Precision, Predictor, StatsError, Status, StdErrors, fit,
};

fn numeric(name: &str, values: Vec<f64>) -> Predictor {
    Predictor::Numeric {
        name: name.to_owned(),
        column: Column::from_f64(values).expect("finite"),
    }
}

fn model(y: Vec<f64>, predictors: Vec<Predictor>) -> Model {
    Model {
        outcome: Column::from_f64(y).expect("finite"),
        predictors,
        intercept: true,
        fixed_effects: None,
        family: Family::Gaussian,
        errors: StdErrors::Classical,
    }
}

/// A deterministic pseudo-random sequence in [−1, 1) (a 64-bit LCG).
fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

#[test]
fn exactly_collinear_predictors_are_unreliable_with_no_figures() {
    let x = noise(1, 50);
    let twice: Vec<f64> = x.iter().map(|v| 2.0 * v).collect();
    let y = noise(2, 50);
    let fit = fit(&model(y, vec![numeric("x", x), numeric("twice", twice)])).expect("a fit");
    assert_eq!(fit.status, Status::Unreliable);
    let reason = fit.reason.as_deref().unwrap_or("");
    assert!(reason.contains("collinear"), "{reason}");
    assert!(
        fit.coefficients
            .iter()
            .all(|c| c.estimate.is_none() && c.std_error.is_none())
    );
    assert!(fit.r_squared.is_none() && fit.residual_sd.is_none());
}

#[test]
fn a_large_well_conditioned_fit_runs_in_double_and_recovers_exact_coefficients() {
    let n = 60_000;
    let xs: Vec<Vec<f64>> = (0..8).map(|s| noise(10 + s, n)).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            3.0 + xs
                .iter()
                .enumerate()
                .map(|(j, x)| (j as f64 + 1.0) * x[i])
                .sum::<f64>()
        })
        .collect();
    let predictors = xs
        .into_iter()
        .enumerate()
        .map(|(j, x)| numeric(&format!("x{j}"), x))
        .collect();
    let fit = fit(&model(y, predictors)).expect("a fit");
    assert_eq!(fit.status, Status::Ok, "{:?}", fit.reason);
    assert_eq!(fit.precision, Precision::Double);
    for (j, c) in fit.coefficients.iter().enumerate() {
        let truth = if j == 0 { 3.0 } else { j as f64 };
        let estimate = c.estimate.expect("an estimate");
        assert!(
            (estimate - truth).abs() <= 1e-12 * truth,
            "{}: {estimate}",
            c.name
        );
    }
}

#[test]
fn a_large_ill_conditioned_fit_falls_back_to_double_double() {
    let n = 60_000;
    let x = noise(3, n);
    let near: Vec<f64> = x
        .iter()
        .zip(noise(4, n))
        .map(|(a, b)| a + 1e-9 * b)
        .collect();
    let mut predictors = vec![numeric("x", x), numeric("near", near)];
    for s in 0..6 {
        predictors.push(numeric(&format!("z{s}"), noise(20 + s, n)));
    }
    let fit = fit(&model(noise(5, n), predictors)).expect("a fit");
    assert_eq!(fit.precision, Precision::DoubleDouble);
    assert!(fit.scaled_condition_number > 1e8);
}

#[test]
fn categorical_predictors_are_dummy_coded_against_the_first_level() {
    let labels: Vec<String> = (0..30).map(|i| ["b", "a", "c"][i % 3].to_owned()).collect();
    let x = noise(6, 30);
    let y: Vec<f64> = (0..30)
        .map(|i| x[i] + if labels[i] == "c" { 2.0 } else { 0.0 })
        .collect();
    let predictors = vec![
        numeric("x", x),
        Predictor::Categorical {
            name: "g".into(),
            labels,
        },
    ];
    let fit = fit(&model(y, predictors)).expect("a fit");
    let names: Vec<&str> = fit.coefficients.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["intercept", "x", "g[T.b]", "g[T.c]"]);
    let c = fit
        .coefficient("g[T.c]")
        .and_then(|c| c.estimate)
        .expect("estimate");
    assert!((c - 2.0).abs() < 1e-12);
}

#[test]
fn fixed_effects_are_counted_but_not_reported() {
    let groups: Vec<String> = (0..40).map(|i| format!("firm{}", i % 4)).collect();
    let x = noise(7, 40);
    let y = noise(8, 40);
    let mut m = model(y, vec![numeric("x", x)]);
    m.fixed_effects = Some(groups);
    let fit = fit(&m).expect("a fit");
    assert_eq!(fit.coefficients.len(), 2);
    assert_eq!((fit.parameters, fit.absorbed, fit.df_residual), (5, 3, 35));
}

#[test]
fn more_coefficients_than_rows_is_refused_with_advice() {
    let m = model(
        vec![1.0, 2.0],
        vec![numeric("a", vec![1.0, 0.0]), numeric("b", vec![0.0, 1.0])],
    );
    let error = fit(&m).expect_err("refused");
    assert_eq!(
        error,
        StatsError::TooFewRows {
            coefficients: 3,
            rows: 2
        }
    );
    assert!(error.to_string().contains("give more rows"));
}

#[test]
fn columns_of_unequal_length_and_single_clusters_are_refused() {
    let m = model(vec![1.0, 2.0, 3.0], vec![numeric("a", vec![1.0, 0.0])]);
    assert!(matches!(fit(&m), Err(StatsError::LengthMismatch { .. })));
    let mut m = model(
        vec![1.0, 2.0, 3.0, 5.0],
        vec![numeric("a", vec![1.0, 0.0, 2.0, 1.0])],
    );
    m.errors = StdErrors::Cluster(vec!["one".into(); 4]);
    assert_eq!(fit(&m), Err(StatsError::TooFewClusters(1)));
}

#[test]
fn hc3_with_a_row_of_leverage_one_is_unreliable() {
    // The indicator of row 0 makes that row's leverage 1.
    let mut only_first = vec![0.0; 10];
    only_first[0] = 1.0;
    let mut m = model(
        noise(9, 10),
        vec![numeric("x", noise(10, 10)), numeric("first", only_first)],
    );
    m.errors = StdErrors::Hc3;
    let fit = fit(&m).expect("a fit");
    assert_eq!(fit.status, Status::Unreliable);
    assert!(fit.reason.as_deref().unwrap_or("").contains("leverage"));
}

#[test]
fn logistic_regression_on_separated_data_is_unreliable() {
    let x: Vec<f64> = (0..20).map(|i| i as f64).collect();
    let y: Vec<f64> = (0..20).map(|i| if i < 10 { 0.0 } else { 1.0 }).collect();
    let mut m = model(y, vec![numeric("x", x)]);
    m.family = Family::Binomial;
    let fit = fit(&m).expect("a fit");
    assert_eq!(fit.status, Status::Unreliable);
    assert!(
        fit.reason.as_deref().unwrap_or("").contains("separat"),
        "{:?}",
        fit.reason
    );
}

#[test]
fn logistic_regression_on_quasi_separated_data_is_unreliable() {
    // x ≥ 5 always has y = 1; x < 5 has both outcomes.
    let x: Vec<f64> = (0..20).map(|i| (i % 10) as f64).collect();
    let y: Vec<f64> = (0..20)
        .map(|i| if i % 10 >= 5 || i % 3 == 0 { 1.0 } else { 0.0 })
        .collect();
    let mut m = model(
        y,
        vec![
            numeric("x", x.clone()),
            numeric("high", x.iter().map(|v| f64::from(*v >= 5.0)).collect()),
        ],
    );
    m.family = Family::Binomial;
    let fit = fit(&m).expect("a fit");
    assert_eq!(fit.status, Status::Unreliable, "{fit:?}");
}

#[test]
fn a_binomial_outcome_must_be_zero_or_one() {
    let mut m = model(
        vec![0.0, 1.0, 2.0, 1.0],
        vec![numeric("x", vec![1.0, 2.0, 3.0, 4.0])],
    );
    m.family = Family::Binomial;
    assert_eq!(fit(&m), Err(StatsError::NotBinary { row: 3, value: 2.0 }));
}

#[test]
fn binomial_hc1_to_hc3_are_refused_rather_than_guessed() {
    let mut m = model(
        vec![0.0, 1.0, 0.0, 1.0, 1.0, 0.0],
        vec![numeric("x", vec![1.0, 2.0, 3.0, 4.0, 2.5, 1.5])],
    );
    m.family = Family::Binomial;
    for errors in [StdErrors::Hc1, StdErrors::Hc2, StdErrors::Hc3] {
        m.errors = errors;
        let error = fit(&m).expect_err("refused");
        assert!(
            error.to_string().contains("use classical, hc0 or cluster"),
            "{error}"
        );
    }
}

#[test]
fn logistic_regression_on_nearly_collinear_predictors_is_unreliable() {
    let n = 200;
    let x = noise(11, n);
    let near: Vec<f64> = x
        .iter()
        .zip(noise(12, n))
        .map(|(a, b)| a + 1e-7 * b)
        .collect();
    let y: Vec<f64> = noise(13, n).iter().map(|v| f64::from(*v > 0.0)).collect();
    let mut m = model(y, vec![numeric("x", x), numeric("near", near)]);
    m.family = Family::Binomial;
    let fit = fit(&m).expect("a fit");
    assert_eq!(fit.status, Status::Unreliable);
    assert!(
        fit.reason.as_deref().unwrap_or("").contains("collinear"),
        "{:?}",
        fit.reason
    );
}
