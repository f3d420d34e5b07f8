//! Planted defects (leaked groups, relabelled groups, scaled residuals, ...) on generated tables of
//! every shape and on the shipped example: each must be caught.

use super::*;

/// The names a defect needs, read from the project's dictionary and plan.
struct Names {
    key: String,
    group: String,
    predictor: String,
    other_predictor: String,
    held_out: String,
}

impl Names {
    fn of(project: &Path) -> Self {
        let dictionary = read_json(&project.join("data/dictionary.json"));
        let plan = read_json(&project.join("analysis/plan.json"));
        let text = |v: &serde_json::Value| v.as_str().expect("text").to_owned();
        let predictor = text(&plan["predictor"]);
        let other_predictor = dictionary["predictors"]
            .as_array()
            .expect("predictors")
            .iter()
            .map(text)
            .find(|p| *p != predictor)
            .expect("a second permitted predictor");
        Names {
            key: text(&dictionary["primary_key"]),
            group: text(&dictionary["group"]),
            predictor,
            other_predictor,
            held_out: text(&dictionary["held_out_groups"][0]),
        }
    }
}

/// One planted defect: what it does to a correct project, and which check of which stage must
/// fail because of it (with a fragment of the reason).
struct Defect {
    name: &'static str,
    plant: fn(&Path, &Names),
    caught_by: &'static [(&'static str, &'static str, &'static str)],
}

/// Holds out `groups` everywhere a consistent project would (dictionary, split, plan), and
/// writes the model a careless fit would then report: nothing held out, errors of zero.
fn hold_out(project: &Path, groups: &[&str]) {
    edit_json(&project.join("data/dictionary.json"), |d| {
        d["held_out_groups"] = serde_json::json!(groups);
    });
    edit_json(&project.join("analysis/plan.json"), |p| {
        p["held_out_groups"] = serde_json::json!(groups);
    });
    let split = std::fs::read_to_string(project.join("outputs/split.csv")).expect("split");
    std::fs::write(
        project.join("outputs/split.csv"),
        split.replace(",held_out", ",train"),
    )
    .expect("write");
    edit_json(&project.join("outputs/model.json"), |m| {
        m["held_out_predictions"] = serde_json::json!([]);
        m["held_out_rmse"] = serde_json::json!(0.0);
        m["mean_comparator_rmse"] = serde_json::json!(0.0);
    });
}

pub(super) fn residual_scale(project: &Path) -> f64 {
    read_json(&project.join("reference/scale.json"))["residual_scale"]
        .as_f64()
        .expect("scale")
}

const DEFECTS: &[Defect] = &[
    Defect {
        name: "the held-out group is a typo that no row has",
        plant: |p, _| hold_out(p, &["no-such-group"]),
        caught_by: &[
            (
                "split",
                "group_disjoint_split",
                "which no row of the table has",
            ),
            ("model", "univariate_ols", "split is not valid"),
        ],
    },
    Defect {
        name: "nothing is held out",
        plant: |p, _| hold_out(p, &[]),
        caught_by: &[
            ("split", "group_disjoint_split", "holds out no group"),
            ("plan", "analysis_plan", "holds out no group"),
            ("model", "univariate_ols", "split is not valid"),
        ],
    },
    Defect {
        name: "every prediction shifted by five residual scales",
        plant: |p, _| {
            let shift = 5.0 * residual_scale(p);
            edit_json(&p.join("outputs/model.json"), |m| {
                for prediction in m["held_out_predictions"].as_array_mut().expect("list") {
                    let v = prediction["predicted"].as_f64().expect("number");
                    prediction["predicted"] = serde_json::json!(v + shift);
                }
            });
        },
        caught_by: &[("model", "univariate_ols", "prediction for")],
    },
    Defect {
        name: "the model fits a permitted predictor the plan did not declare",
        plant: |p, n| python_reference_planned(p, &n.other_predictor, &n.predictor),
        caught_by: &[("model", "univariate_ols", "the plan declared")],
    },
    Defect {
        name: "a wrong prediction, then the right one, for the same key",
        plant: |p, _| {
            let shift = 1000.0 * residual_scale(p).max(1.0);
            edit_json(&p.join("outputs/model.json"), |m| {
                let list = m["held_out_predictions"].as_array_mut().expect("list");
                let mut wrong = list[0].clone();
                wrong["predicted"] =
                    serde_json::json!(wrong["predicted"].as_f64().expect("number") + shift);
                list.insert(0, wrong);
            });
        },
        caught_by: &[("model", "univariate_ols", "twice")],
    },
    Defect {
        name: "a fabricated leave-one-group-out entry",
        plant: |p, _| {
            edit_json(&p.join("outputs/model.json"), |m| {
                let slope = m["slope"].clone();
                m["leave_one_group_out"]
                    .as_array_mut()
                    .expect("list")
                    .push(serde_json::json!({"group": "invented", "slope": slope}));
            });
        },
        caught_by: &[("model", "univariate_ols", "not a training group")],
    },
    Defect {
        name: "the readiness report counts empty values of a column that does not exist",
        plant: |p, _| {
            edit_json(&p.join("reports/readiness.json"), |r| {
                r["missing"]["ghost_column"] = serde_json::json!(0);
            });
        },
        caught_by: &[("readiness", "readiness_report", "which the table lacks")],
    },
    Defect {
        name: "the model report names its slope twice (a wrong one first)",
        plant: |p, _| {
            let path = p.join("outputs/model.json");
            let text = std::fs::read_to_string(&path).expect("model");
            std::fs::write(&path, text.replacen('{', r#"{"slope": 123456.5,"#, 1)).expect("write");
        },
        caught_by: &[("model", "univariate_ols", "appears twice")],
    },
    Defect {
        name: "a table with a header and no rows",
        plant: |p, _| {
            let path = p.join("data/cohort.csv");
            let text = std::fs::read_to_string(&path).expect("table");
            let header = text.lines().next().expect("header").to_owned();
            std::fs::write(&path, header + "\n").expect("write");
        },
        caught_by: &[
            ("readiness", "data_dictionary", "no rows"),
            ("readiness", "readiness_report", "no rows"),
            ("split", "group_disjoint_split", "no rows"),
            ("model", "univariate_ols", "no rows"),
        ],
    },
    Defect {
        name: "a key names two rows of the table; the split lists it once",
        plant: |p, n| {
            let path = p.join("data/cohort.csv");
            let text = std::fs::read_to_string(&path).expect("table");
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let header: Vec<&str> = lines[0].split(',').collect();
            let (k, g) = (
                header.iter().position(|c| *c == n.key).expect("key"),
                header.iter().position(|c| *c == n.group).expect("group"),
            );
            let training: Vec<usize> = (1..lines.len())
                .filter(|&i| lines[i].split(',').nth(g) != Some(n.held_out.as_str()))
                .take(2)
                .collect();
            let [first, second] = training[..] else {
                panic!("two training rows");
            };
            // The second training row takes the first one's key; the table keeps its size.
            let key = lines[first].split(',').nth(k).expect("key").to_owned();
            let mut fields: Vec<String> = lines[second].split(',').map(str::to_owned).collect();
            fields[k] = key;
            lines[second] = fields.join(",");
            std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        },
        caught_by: &[
            ("readiness", "data_dictionary", "appears twice"),
            ("split", "group_disjoint_split", "names two rows"),
            ("model", "univariate_ols", "split is not valid"),
        ],
    },
];

/// Copies a project (its files, not `.heartwood/`) into a new folder.
fn copy_project(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().expect("tempdir");
    let mut pending = vec![from.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let target = to.path().join(path.strip_prefix(from).expect("inside"));
            if entry.file_type().expect("type").is_dir() {
                std::fs::create_dir_all(&target).expect("mkdir");
                pending.push(path);
            } else {
                std::fs::copy(&path, &target).expect("copy");
            }
        }
    }
    to
}

/// Every stage but reproduction passes on `project`.
fn assert_all_stages_pass(project: &Path, what: &str) {
    for id in ["readiness", "plan", "split", "model", "report"] {
        for r in stage(project, id) {
            assert_eq!(
                r.status,
                Status::Passed,
                "{what}: {id}/{} on correct artifacts: {:?}",
                r.check,
                r.reasons
            );
        }
    }
}

/// Plants every defect in a copy of `correct` and checks each is caught where it must be.
fn assert_defects_caught(correct: &Path, what: &str) {
    for defect in DEFECTS {
        let planted = copy_project(correct);
        let names = Names::of(planted.path());
        (defect.plant)(planted.path(), &names);
        for (stage_id, check, fragment) in defect.caught_by {
            let results = stage(planted.path(), stage_id);
            let r = result(&results, check);
            assert_eq!(
                r.status,
                Status::Failed,
                "{what}: \"{}\" was not caught by {stage_id}/{check}: {:?}",
                defect.name,
                r.reasons
            );
            assert!(
                r.reasons.iter().any(|m| m.contains(fragment)),
                "{what}: \"{}\": {stage_id}/{check} failed, but not saying {fragment:?}: {:?}",
                defect.name,
                r.reasons
            );
        }
    }
}

/// Writes the artifacts a finished project also has: the fit code and the written result.
fn finish(project: &Path) {
    std::fs::write(
        project.join("analysis/fit.py"),
        "import statistics\nprint(statistics.fmean([1.0, 2.0]))\n",
    )
    .expect("write");
    std::fs::create_dir_all(project.join("reports")).expect("mkdir");
    std::fs::write(project.join("reports/final.md"), "word ".repeat(30)).expect("write");
    // The report states no figure, so it binds none.
    std::fs::write(project.join("reports/claims.json"), r#"{"claims": []}"#).expect("write");
}

#[test]
fn planted_defects_are_caught_on_generated_tables_of_every_shape() {
    let shapes = [
        Shape {
            x_offset: 0.0,
            ..Shape::new(3, 2, 21)
        },
        Shape {
            x_offset: 0.0,
            y_offset: 0.0,
            ..Shape::new(40, 2, 22)
        },
        // The probe's case: outcomes around 10⁶, residuals around 0.1.
        Shape {
            x_offset: 1e9,
            y_offset: 1e6,
            noise: 0.15,
            ..Shape::new(500, 16, 23)
        },
        Shape {
            x_offset: 1e12,
            y_offset: 1e12,
            noise: 2.0,
            ..Shape::new(2_000, 128, 24)
        },
        Shape::new(10_000, 64, 25),
    ];
    for shape in shapes {
        let correct = generate(shape);
        python_reference(correct.path(), "x");
        finish(correct.path());
        let what = format!("{shape:?}");
        assert_all_stages_pass(correct.path(), &what);
        assert_defects_caught(correct.path(), &what);
    }
}

#[test]
fn planted_defects_are_caught_on_the_shipped_example() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/projects/sleep-study");
    let correct = copy_project(&shipped);
    assert_all_stages_pass(correct.path(), "sleep-study as shipped");
    // The defects that need the reference's residual scale get it from the same data.
    let names = Names::of(correct.path());
    let with_scale = copy_project(correct.path());
    python_reference(with_scale.path(), &names.predictor);
    std::fs::copy(with_scale.path().join("reference/scale.json"), {
        std::fs::create_dir_all(correct.path().join("reference")).expect("mkdir");
        correct.path().join("reference/scale.json")
    })
    .expect("copy");
    assert_defects_caught(correct.path(), "sleep-study");
}
