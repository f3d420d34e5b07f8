//! Property tests of the checks' numeric tolerances.

use proptest::prelude::*;

use super::defects::residual_scale;
use super::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Correct artifacts pass and agree with exact arithmetic to 1e-9 at any offset up to
    /// 10¹² and any residual scale; a prediction moved three allowed differences (the
    /// stated tolerance, relative to the residual scale, plus the rounding allowance of the
    /// terms) fails.
    #[test]
    fn correct_passes_and_beyond_the_tolerance_fails(
        x_exp in 0.0f64..12.0,
        y_exp in 0.0f64..12.0,
        noise_exp in -1.0f64..3.0,
        rows in 20usize..400,
        train_groups in 2usize..8,
        seed in 0u64..1_000,
    ) {
        let shape = Shape {
            rows,
            train_groups,
            x_offset: 10f64.powf(x_exp),
            y_offset: 10f64.powf(y_exp),
            noise: 10f64.powf(noise_exp),
            seed,
        };
        let p = generate(shape);
        python_reference(p.path(), "x");
        let results = stage(p.path(), "model");
        let ols = result(&results, "univariate_ols");
        prop_assert_eq!(ols.status, Status::Passed, "{:?}", ols.reasons);
        let model = read_json(&p.path().join("outputs/model.json"));
        assert_figures_agree(ols, &model);

        // An upper bound of the terms any prediction is computed from.
        let table = std::fs::read_to_string(p.path().join("data/cohort.csv")).expect("table");
        let (mut max_x, mut max_y) = (0f64, 0f64);
        for line in table.lines().skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            max_x = max_x.max(fields[2].parse::<f64>().expect("x").abs());
            max_y = max_y.max(fields[4].parse::<f64>().expect("y").abs());
        }
        let slope = model["slope"].as_f64().expect("slope");
        let intercept = model["intercept"].as_f64().expect("intercept");
        let terms = intercept.abs() + (slope * max_x).abs() + 2.0 * max_y;
        let allowed = heartwood_workflow::checks::TOLERANCE * residual_scale(p.path())
            + heartwood_workflow::checks::ROUNDING * terms;
        edit_json(&p.path().join("outputs/model.json"), |m| {
            let first = &mut m["held_out_predictions"][0]["predicted"];
            *first = serde_json::json!(first.as_f64().expect("number") + 3.0 * allowed);
        });
        let moved = stage(p.path(), "model");
        let r = result(&moved, "univariate_ols");
        prop_assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
        prop_assert!(r.reasons.iter().any(|m| m.contains("prediction for")));
    }
}
