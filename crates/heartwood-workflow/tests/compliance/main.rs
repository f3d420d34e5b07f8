//! The workflow checks against independent references: Python's standard library computes the
//! OLS answers in the test run, and planted defects must each be caught.

use std::path::Path;
use std::process::Command;

use heartwood_workflow::Registry;
use heartwood_workflow::catalog;
use heartwood_workflow::definition::{Definition, DefinitionError};
use heartwood_workflow::evaluate::check_stage;
use heartwood_workflow::{CheckResult, Status};
use heartwood_workspace::Workspace;

mod defects;
mod precision;

/// A deterministic generator (no randomness crate, no seed drift).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The shape of a generated project.
#[derive(Debug, Clone, Copy)]
struct Shape {
    rows: usize,
    /// Training groups; one more group is held out.
    train_groups: usize,
    x_offset: f64,
    y_offset: f64,
    noise: f64,
    seed: u64,
}

impl Shape {
    const fn new(rows: usize, train_groups: usize, seed: u64) -> Self {
        Shape {
            rows,
            train_groups,
            x_offset: 1e6,
            y_offset: 0.0,
            noise: 1.0,
            seed,
        }
    }
}

/// Writes a project: `rows` rows in `groups` groups, the last group held out.
fn project(rows: usize, groups: usize, seed: u64) -> tempfile::TempDir {
    generate(Shape::new(rows, groups - 1, seed))
}

/// Writes a project of `shape`: the table, the dictionary and the split (the last group held
/// out). Artifacts come from [`python_reference`].
fn generate(shape: Shape) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).expect("mkdir");
    std::fs::create_dir_all(d.join("outputs")).expect("mkdir");
    let groups = shape.train_groups + 1;
    let mut rng = Lcg(shape.seed);
    let mut table = String::from("id,site,x,noise,y\n");
    let mut split = String::from("key,partition\n");
    for i in 0..shape.rows {
        let g = i % groups;
        let dx = rng.next() * 10.0;
        let x = shape.x_offset + dx;
        let y = shape.y_offset + 3.25 - 0.75 * dx
            + (rng.next() - 0.5) * 2.0 * shape.noise
            + g as f64 * 0.1;
        table.push_str(&format!("u{i},g{g},{x},{},{y}\n", rng.next()));
        let side = if g == groups - 1 { "held_out" } else { "train" };
        split.push_str(&format!("u{i},{side}\n"));
    }
    std::fs::write(d.join("data/cohort.csv"), table).expect("write");
    std::fs::write(d.join("outputs/split.csv"), split).expect("write");
    let dictionary = serde_json::json!({
        "primary_key": "id", "group": "site", "outcome": "y", "predictors": ["x", "noise"],
        "held_out_groups": [format!("g{}", groups - 1)],
        "columns": {
            "id": {"type": "text", "required": true},
            "x": {"type": "number", "required": true},
            "y": {"type": "number", "required": true}
        }
    });
    std::fs::write(d.join("data/dictionary.json"), dictionary.to_string()).expect("write");
    dir
}

/// Writes every artifact with the exact-arithmetic reference, the model fitted on `predictor`.
fn python_reference(project: &Path, predictor: &str) {
    python_reference_planned(project, predictor, predictor);
}

/// As [`python_reference`], with the plan declaring `planned`.
fn python_reference_planned(project: &Path, predictor: &str, planned: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(project)
        .arg(predictor)
        .arg(planned)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stage(project: &Path, stage: &str) -> Vec<CheckResult> {
    let definition = catalog::definition("tabular-ols")
        .expect("catalog")
        .expect("definition");
    let workspace = Workspace::open(project).expect("workspace");
    check_stage(&workspace, &definition, stage).expect("stage")
}

fn result<'a>(results: &'a [CheckResult], check: &str) -> &'a CheckResult {
    results
        .iter()
        .find(|r| r.check == check)
        .expect("check ran")
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json")
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value = read_json(path);
    edit(&mut value);
    std::fs::write(path, value.to_string()).expect("write");
}

#[test]
fn ols_agrees_with_exact_arithmetic() {
    for (rows, groups, seed) in [(12, 4, 1), (500, 7, 2), (10_000, 129, 3), (2_000, 3, 4)] {
        let p = project(rows, groups, seed);
        python_reference(p.path(), "x");
        let results = stage(p.path(), "model");
        let ols = result(&results, "univariate_ols");
        let reference = read_json(&p.path().join("outputs/model.json"));
        assert_figures_agree(ols, &reference);
        if groups - 1 > heartwood_workflow::check::MAX_GROUPS {
            assert_eq!(ols.status, Status::Unverified, "{ols:?}");
            continue;
        }
        assert_eq!(ols.status, Status::Passed, "{rows} rows: {:?}", ols.reasons);
        assert_eq!(ols.inspected.len(), 5, "every file read is bound by digest");
        // No fit.py was written, so its syntax cannot be established.
        assert_eq!(result(&results, "python_syntax").status, Status::Unverified);
    }
}

/// The check's own figures agree with the exact reference to 1e-9 relative.
fn assert_figures_agree(ols: &CheckResult, reference: &serde_json::Value) {
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(f64::MIN_POSITIVE);
    for field in [
        "slope",
        "intercept",
        "held_out_rmse",
        "mean_comparator_rmse",
    ] {
        let ours = ols.figures[field].as_f64().expect("figure");
        let exact = reference[field].as_f64().expect("reference");
        assert!(
            rel(ours, exact) < 1e-9,
            "{field}: {ours} vs exact {exact} ({:e} relative)",
            rel(ours, exact)
        );
    }
    if let Some(logo) = ols.figures["leave_one_group_out"].as_array() {
        let exact = reference["leave_one_group_out"].as_array().expect("logo");
        assert_eq!(logo.len(), exact.len());
        for (ours, exact) in logo.iter().zip(exact) {
            let (a, b) = (
                ours["slope"].as_f64().expect("slope"),
                exact["slope"].as_f64().expect("slope"),
            );
            assert!(rel(a, b) < 1e-9, "{ours} vs exact {exact}");
        }
    }
}

#[test]
fn split_defects_leakage_duplicates_and_missing_keys_are_caught() {
    let p = project(40, 4, 9);
    let split_path = p.path().join("outputs/split.csv");
    let good = std::fs::read_to_string(&split_path).expect("split");
    assert_eq!(
        result(&stage(p.path(), "split"), "group_disjoint_split").status,
        Status::Passed
    );

    // Leakage: one row of the held-out group g3 moved to training.
    std::fs::write(&split_path, good.replacen("u3,held_out", "u3,train", 1)).expect("write");
    let leak = stage(p.path(), "split");
    let r = result(&leak, "group_disjoint_split");
    assert_eq!(r.status, Status::Failed);
    assert!(
        r.reasons.iter().any(|m| m.contains("both sides")),
        "{:?}",
        r.reasons
    );

    // A key assigned twice, and a key missing.
    std::fs::write(
        &split_path,
        good.replacen("u5,train\n", "u5,train\nu5,train\n", 1),
    )
    .expect("write");
    assert!(
        result(&stage(p.path(), "split"), "group_disjoint_split")
            .reasons
            .iter()
            .any(|m| m.contains("assigned twice"))
    );
    std::fs::write(&split_path, good.replacen("u6,train\n", "", 1)).expect("write");
    assert!(
        result(&stage(p.path(), "split"), "group_disjoint_split")
            .reasons
            .iter()
            .any(|m| m.contains("not assigned"))
    );

    // A duplicated key in the table itself.
    let table_path = p.path().join("data/cohort.csv");
    let table = std::fs::read_to_string(&table_path).expect("table");
    let second = table.lines().nth(2).expect("row").to_owned();
    std::fs::write(&table_path, format!("{table}{second}\n")).expect("write");
    let readiness = stage(p.path(), "readiness");
    let dictionary = result(&readiness, "data_dictionary");
    assert_eq!(dictionary.status, Status::Failed);
    assert!(
        dictionary
            .reasons
            .iter()
            .any(|m| m.contains("appears twice")),
        "{:?}",
        dictionary.reasons
    );
}

#[test]
fn a_table_over_the_row_limit_is_unverified_not_passed() {
    let p = project(10_001, 4, 10);
    let readiness = stage(p.path(), "readiness");
    let r = result(&readiness, "data_dictionary");
    assert_eq!(r.status, Status::Unverified, "{r:?}");
    assert!(r.reasons.iter().any(|m| m.contains("more than 10000 rows")));
}

#[test]
fn the_catalog_says_what_is_not_implemented_and_definitions_are_validated() {
    let entries = catalog::catalog().expect("catalog");
    let ols = entries
        .iter()
        .find(|e| e.id == "tabular-ols")
        .expect("entry");
    assert!(ols.supported, "{:?}", ols.missing_checks);
    assert_eq!(ols.stages.len(), 6);
    // Reproduction is reachable, and never passes on bytes alone (see the reproduction test).
    assert_eq!(
        ols.stages.last().map(|s| s.checks.clone()),
        Some(vec!["byte_comparison".to_owned()])
    );

    let json = include_str!("../../../../fixtures/workflows/tabular-ols.json");
    let registry = Registry::builtin();
    let broken = |from: &str, to: &str| Definition::parse(&json.replacen(from, to, 1), &registry);
    assert!(matches!(
        broken(r#""produces": ["plan"]"#, r#""produces": ["plan", "readiness"]"#),
        Err(DefinitionError::Producers { artifact, count: 2 }) if artifact == "readiness"
    ));
    assert!(matches!(
        broken(r#""covers": ["split"]"#, r#""covers": []"#),
        Err(DefinitionError::Unchecked { artifact, .. }) if artifact == "split"
    ));
    assert!(matches!(
        broken(r#""consumes": ["dictionary", "readiness"]"#, r#""consumes": ["dictionary", "model"]"#),
        Err(DefinitionError::BadDependency { item, why: "a later stage produces", .. }) if item == "model"
    ));
    assert!(matches!(
        broken(r#""path": "outputs/split.csv""#, r#""path": "../split.csv""#),
        Err(DefinitionError::BadPath { item, .. }) if item == "split"
    ));
    // Issue 56 item 6, the seed: "Availability derives from registered check implementations;
    // a definition with a missing evaluator is not advertised as supported." A check the
    // registry lacks is no fault of the file: it parses, and the catalog lists it unsupported,
    // saying which check is missing.
    let vibes = broken(r#""check": "nonempty_report""#, r#""check": "vibes""#).expect("valid");
    let listed = catalog::entry(&vibes, &registry);
    assert!(!listed.supported);
    assert_eq!(listed.missing_checks.len(), 1);
    assert!(
        listed.missing_checks[0].starts_with("vibes"),
        "{:?}",
        listed.missing_checks
    );
    // A registry lacking a check this build has makes the maintained definition unsupported.
    let fewer = Registry::builtin().without("byte_comparison");
    let ols_def = Definition::parse(json, &fewer).expect("valid");
    let entry = catalog::entry(&ols_def, &fewer);
    assert!(!entry.supported);
    assert!(entry.missing_checks[0].starts_with("byte_comparison"));
    assert!(catalog::entry(&ols_def, &registry).supported);
}

#[test]
fn validation_reports_every_problem_at_once() {
    let json = include_str!("../../../../fixtures/workflows/tabular-ols.json")
        .replacen(r#""covers": ["split"]"#, r#""covers": []"#, 1)
        .replacen(
            r#""path": "outputs/split.csv""#,
            r#""path": "../split.csv""#,
            1,
        )
        .replacen(
            r#""check": "nonempty_report", "reads": ["report"]"#,
            r#""check": "nonempty_report", "reads": ["report"], "params": {"words": 5}"#,
            1,
        );
    let problems = Definition::parse_all(&json, &Registry::builtin()).expect_err("invalid");
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(matches!(&problems[0], DefinitionError::BadPath { item, .. } if item == "split"));
    assert!(
        problems.iter().any(
            |p| matches!(p, DefinitionError::Unchecked { artifact, .. } if artifact == "split")
        )
    );
    assert!(
        problems
            .iter()
            .any(|p| p.to_string().contains("takes no parameters"))
    );
}

#[test]
fn python_is_parsed_never_run_and_an_empty_report_does_not_count() {
    let p = project(30, 3, 11);
    python_reference(p.path(), "x");
    std::fs::create_dir_all(p.path().join("analysis")).expect("mkdir");
    let marker = p.path().join("ran");
    let code = format!(
        "open({:?}, 'w').write('x')\nslope = 1\n",
        marker.display().to_string()
    );
    std::fs::write(p.path().join("analysis/fit.py"), &code).expect("write");
    let ok = stage(p.path(), "model");
    assert_eq!(result(&ok, "python_syntax").status, Status::Passed);
    assert!(!marker.exists(), "the syntax check ran the code");
    std::fs::write(p.path().join("analysis/fit.py"), "def fit(:\n    pass\n").expect("write");
    let bad = stage(p.path(), "model");
    let syntax = result(&bad, "python_syntax");
    assert_eq!(syntax.status, Status::Failed);
    assert!(syntax.reasons[0].contains("line 1"), "{:?}", syntax.reasons);

    std::fs::create_dir_all(p.path().join("reports")).expect("mkdir");
    std::fs::write(p.path().join("reports/final.md"), "# Result\n\nTBD\n").expect("write");
    assert_eq!(
        result(&stage(p.path(), "report"), "nonempty_report").status,
        Status::Failed
    );
    std::fs::write(p.path().join("reports/final.md"), "word ".repeat(25)).expect("write");
    assert_eq!(
        result(&stage(p.path(), "report"), "nonempty_report").status,
        Status::Passed
    );
}

/// A readiness report for `project`'s table computed with Python's standard library.
fn python_readiness(project: &Path) -> serde_json::Value {
    let script = r#"
import csv, json, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/data/cohort.csv")))
cols = list(rows[0].keys())
sizes = {}
for r in rows:
    sizes[r["site"]] = sizes.get(r["site"], 0) + 1
numeric = {}
for c in ["x", "y"]:
    v = [float(r[c]) for r in rows]
    numeric[c] = {"min": min(v), "max": max(v), "mean": statistics.fmean(v)}
print(json.dumps({"rows": len(rows), "columns": len(cols), "group_sizes": sizes, "numeric": numeric}))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(project)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn readiness_counts_plan_and_reproduction_are_checked() {
    let p = project(250, 5, 12);
    std::fs::create_dir_all(p.path().join("reports")).expect("mkdir");
    let mut report = python_readiness(p.path());
    let path = p.path().join("reports/readiness.json");
    std::fs::write(&path, report.to_string()).expect("write");
    let ok = stage(p.path(), "readiness");
    assert_eq!(
        result(&ok, "readiness_report").status,
        Status::Passed,
        "{ok:?}"
    );
    // A count off by one.
    report["group_sizes"]["g0"] =
        serde_json::json!(report["group_sizes"]["g0"].as_u64().expect("n") + 1);
    std::fs::write(&path, report.to_string()).expect("write");
    let off = stage(p.path(), "readiness");
    assert_eq!(result(&off, "readiness_report").status, Status::Failed);

    std::fs::create_dir_all(p.path().join("analysis")).expect("mkdir");
    let plan = |predictor: &str| {
        serde_json::json!({"outcome": "y", "predictor": predictor, "group": "site",
            "split": "group_disjoint", "held_out_groups": ["g4"]})
        .to_string()
    };
    std::fs::write(p.path().join("analysis/plan.json"), plan("x")).expect("write");
    assert_eq!(
        result(&stage(p.path(), "plan"), "analysis_plan").status,
        Status::Passed
    );
    std::fs::write(p.path().join("analysis/plan.json"), plan("y")).expect("write");
    assert_eq!(
        result(&stage(p.path(), "plan"), "analysis_plan").status,
        Status::Failed
    );

    // Reproduction: a copied artifact is not evidence of a reproduction.
    let mut files = vec![b"slope,1.5\n".to_vec(), b"slope,1.5\n".to_vec()];
    let mut copy = CheckResult::new("byte_comparison");
    heartwood_workflow::checks::byte_comparison(&files, &mut copy);
    assert_eq!(copy.status, Status::Unverified);
    files[1] = b"slope,1.6\n".to_vec();
    let mut differs = CheckResult::new("byte_comparison");
    heartwood_workflow::checks::byte_comparison(&files, &mut differs);
    assert_eq!(differs.status, Status::Failed);
    assert!(
        differs.reasons[0].contains("byte 8"),
        "{:?}",
        differs.reasons
    );
}

#[test]
fn the_evidence_gate_refuses_failed_missing_and_stale_evidence() {
    let p = project(120, 4, 13);
    let definition = catalog::definition("tabular-ols")
        .expect("catalog")
        .expect("definition");
    let workspace = Workspace::open(p.path()).expect("workspace");
    let results = stage(p.path(), "split");
    let fresh = heartwood_workflow::gate::assess(&workspace, &definition, "split", &results)
        .expect("stage");
    assert!(fresh.eligible, "{:?}", fresh.problems);
    assert!(!fresh.researcher_review_required);
    assert_eq!(fresh.fingerprint.len(), 64);

    // The input changed after the check, even to data the split is still consistent with.
    let table = p.path().join("data/cohort.csv");
    let text = std::fs::read_to_string(&table).expect("table");
    std::fs::write(&table, text.replacen(",", ", ", 1)).expect("write");
    let stale = heartwood_workflow::gate::assess(&workspace, &definition, "split", &results)
        .expect("stage");
    assert!(!stale.eligible);
    assert!(
        stale
            .problems
            .iter()
            .any(|m| m.contains("stale: data/cohort.csv changed")),
        "{:?}",
        stale.problems
    );

    let missing = heartwood_workflow::gate::assess(&workspace, &definition, "model", &results)
        .expect("stage");
    assert!(!missing.eligible);
    assert!(missing.researcher_review_required);
    assert!(
        missing
            .problems
            .iter()
            .any(|m| m.contains("no result for the required check"))
    );
}

#[test]
fn a_one_row_table_cannot_be_split_and_says_why() {
    let p = generate(Shape::new(1, 1, 26));
    let split = stage(p.path(), "split");
    let r = result(&split, "group_disjoint_split");
    assert_eq!(r.status, Status::Failed);
    assert!(
        r.reasons
            .iter()
            .any(|m| m.contains("which no row of the table has") || m.contains("empty")),
        "{:?}",
        r.reasons
    );
}

#[test]
fn a_definite_failure_is_failed_even_beside_a_limit() {
    // More training groups than leave-one-group-out is checked for, and a slope 0.1% off.
    let p = generate(Shape::new(
        2_000,
        heartwood_workflow::check::MAX_GROUPS + 1,
        27,
    ));
    python_reference(p.path(), "x");
    let limited = stage(p.path(), "model");
    assert_eq!(
        result(&limited, "univariate_ols").status,
        Status::Unverified
    );
    edit_json(&p.path().join("outputs/model.json"), |m| {
        m["slope"] = serde_json::json!(m["slope"].as_f64().expect("slope") * 1.001);
    });
    let results = stage(p.path(), "model");
    let r = result(&results, "univariate_ols");
    assert_eq!(r.status, Status::Failed, "{:?}", r.reasons);
    assert!(r.reasons.iter().any(|m| m.starts_with("slope:")));
    assert!(
        r.reasons.iter().any(|m| m.contains("leave-one-group-out")),
        "the limit is still listed: {:?}",
        r.reasons
    );
}
