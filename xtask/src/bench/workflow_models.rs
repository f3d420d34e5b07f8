//! `cargo xtask bench workflow`, second part: the maintained `tabular-linear` workflow at the
//! limits (10,000 rows, 8 numeric predictors, errors clustered by 128 training groups), every
//! stage timed together. The model report is written from the check's own recomputation, so
//! every stage passes and the time is that of a full, passing evaluation.

use anyhow::{Result, anyhow, bail};
use heartwood_workflow::check::{MAX_GROUPS, MAX_ROWS};
use heartwood_workflow::{CheckResult, catalog, checks};
use heartwood_workspace::Workspace;
use serde_json::json;

const PREDICTORS: usize = 8;

pub fn run() -> Result<()> {
    let dir = crate::workspace_root().join("target/bench-workflow-linear");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    generate(&dir)?;
    let definition =
        catalog::definition("tabular-linear")?.ok_or_else(|| anyhow!("no tabular-linear"))?;
    let workspace = Workspace::open(&dir)?;
    let (best, per_stage) = super::workflow::time_stages(&workspace, &definition)?;
    let ms = best * 1e3;
    println!(
        "{:<52} {ms:>8.1} ms   target < 100 ms  {}",
        format!("tabular-linear, {MAX_ROWS} rows x {PREDICTORS} predictors, {MAX_GROUPS} clusters"),
        if ms < 100.0 { "ok" } else { "MISSED" }
    );
    let stages_text: Vec<String> = definition
        .stages
        .iter()
        .zip(&per_stage)
        .map(|(s, t)| format!("{} {:.1}", s.id, t * 1e3))
        .collect();
    println!("{:<52} {} ms", "  per stage", stages_text.join(", "));
    Ok(())
}

fn generate(dir: &std::path::Path) -> Result<()> {
    for sub in ["data", "outputs", "analysis", "reports"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let groups = MAX_GROUPS + 1; // the last one is held out
    let names: Vec<String> = (0..PREDICTORS).map(|p| format!("x{p}")).collect();
    let mut table = format!("id,site,{},y\n", names.join(","));
    let mut split = String::from("key,partition\n");
    let mut sizes = std::collections::BTreeMap::new();
    let mut state = 11u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..MAX_ROWS {
        let g = i % groups;
        let xs: Vec<f64> = (0..PREDICTORS).map(|_| next() * 10.0).collect();
        let y = 1.0
            + xs.iter()
                .enumerate()
                .map(|(p, x)| (p as f64 - 3.5) * 0.1 * x)
                .sum::<f64>()
            + next()
            + g as f64 * 0.01;
        let cells: Vec<String> = xs.iter().map(f64::to_string).collect();
        table.push_str(&format!("u{i},g{g},{},{y}\n", cells.join(",")));
        let held = g == groups - 1;
        split.push_str(&format!(
            "u{i},{}\n",
            if held { "held_out" } else { "train" }
        ));
        *sizes.entry(format!("g{g}")).or_insert(0usize) += 1;
    }
    let held_group = format!("g{}", groups - 1);
    let mut columns = serde_json::Map::new();
    columns.insert("id".into(), json!({"type": "text", "required": true}));
    columns.insert("site".into(), json!({"type": "text", "required": true}));
    for name in names.iter().chain(std::iter::once(&"y".to_owned())) {
        columns.insert(name.clone(), json!({"type": "number", "required": true}));
    }
    let write = |path: &str, value: serde_json::Value| -> Result<()> {
        Ok(std::fs::write(dir.join(path), value.to_string())?)
    };
    std::fs::write(dir.join("data/panel.csv"), table)?;
    std::fs::write(dir.join("outputs/split.csv"), split)?;
    write(
        "data/dictionary.json",
        json!({"primary_key": "id", "group": "site", "outcome": "y", "predictors": names,
               "held_out_groups": [held_group], "columns": columns}),
    )?;
    write(
        "reports/readiness.json",
        json!({"rows": MAX_ROWS, "columns": PREDICTORS + 3, "group_sizes": sizes}),
    )?;
    write(
        "analysis/plan.json",
        json!({"outcome": "y", "predictors": names, "family": "gaussian",
               "std_errors": "cluster", "cluster": "site", "group": "site",
               "split": "group_disjoint", "held_out_groups": [held_group]}),
    )?;
    std::fs::write(
        dir.join("analysis/fit.py"),
        "import statistics\nprint(statistics.fmean([1, 2]))\n",
    )?;
    let model = reference_report(dir)?;
    write_report(dir, &model)?;
    write("outputs/model.json", model)?;
    std::fs::copy(
        dir.join("outputs/model.json"),
        dir.join("outputs/model.reproduced.json"),
    )?;
    Ok(())
}

/// A written result whose figures (held-out RMSE and count, one coefficient with its
/// cluster-robust standard error) are bound by a claims file, as the report stage asks.
fn write_report(dir: &std::path::Path, model: &serde_json::Value) -> Result<()> {
    let number = |v: &serde_json::Value| v.as_f64().ok_or_else(|| anyhow!("no figure"));
    let rmse = format!("{:.4e}", number(&model["held_out"]["rmse"])?);
    let held = model["held_out_predictions"]
        .as_array()
        .map_or(0, Vec::len)
        .to_string();
    let x0 = &model["coefficients"][1];
    let (estimate, se) = (
        format!("{:.4e}", number(&x0["estimate"])?),
        format!("{:.3e}", number(&x0["std_error"])?),
    );
    std::fs::write(
        dir.join("reports/final.md"),
        format!(
            "# Result\n\n{}\n\nThe held-out RMSE is {rmse} (n = {held}).\nThe coefficient of \
             x0 is {estimate} (cluster-robust SE {se}).\n",
            "word ".repeat(50)
        ),
    )?;
    std::fs::write(
        dir.join("reports/claims.json"),
        json!({"claims": [
            {"line": 5, "value": rmse, "quantity": "rmse", "sample": "held_out"},
            {"line": 5, "value": held, "quantity": "n", "sample": "held_out"},
            {"line": 6, "value": estimate, "quantity": "estimate", "coefficient": "x0"},
            {"line": 6, "value": se, "quantity": "std_error", "coefficient": "x0"},
        ]})
        .to_string(),
    )?;
    Ok(())
}

/// The report the check's own recomputation makes (a probe with an empty report publishes the
/// figures it compares against).
fn reference_report(dir: &std::path::Path) -> Result<serde_json::Value> {
    let read = |p: &str| std::fs::read(dir.join(p));
    let probe = json!({"outcome": "y", "family": "gaussian", "std_errors": "cluster",
        "n_train": 0, "coefficients": [], "held_out_predictions": [], "held_out": {}});
    let files = vec![
        read("data/panel.csv")?,
        read("data/dictionary.json")?,
        read("outputs/split.csv")?,
        probe.to_string().into_bytes(),
        read("analysis/plan.json")?,
    ];
    let params = serde_json::from_value(json!({"declared_by": "plan"}))?;
    let mut result = CheckResult::new("linear_model");
    checks::linear_model(&files, &params, &mut result);
    let f = &result.figures;
    if f.is_null() {
        bail!("the probe computed nothing: {:?}", result.reasons);
    }
    Ok(json!({
        "outcome": "y", "family": "gaussian", "std_errors": "cluster",
        "n_train": f["n_train"],
        "coefficients": f["coefficients"],
        "held_out_predictions": f["held_out"]["predictions"],
        "held_out": {"rmse": f["held_out"]["rmse"],
                     "mean_comparator_rmse": f["held_out"]["mean_comparator_rmse"]},
    }))
}
