//! `heartwood skills` on the real binary: looking creates nothing, a local skill is shown whole
//! for review, approval binds to the digest shown, and a changed directory stops reaching the
//! agent until its new tree is approved.

mod support;

use support::{code, heartwood, text};

/// The `skills ls --json` entry of `name`.
fn listed_entry(project: &std::path::Path, name: &str) -> serde_json::Value {
    let json = heartwood(project, &["skills", "ls", "--json"]);
    let catalog: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    catalog["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .find(|s| s["name"] == name)
        .expect("listed")
        .clone()
}

#[test]
fn review_approve_activate_and_a_change_needs_a_new_approval() {
    let project = tempfile::tempdir().expect("project");
    let listed = heartwood(project.path(), &["skills", "ls"]);
    assert_eq!(code(&listed), 0, "{}", text(&listed.stderr));
    let out = text(&listed.stdout);
    for bundled in [
        "group-disjoint-splits",
        "reading-a-data-dictionary",
        "writing-a-readiness-report",
    ] {
        assert!(out.contains(bundled), "{out}");
    }
    assert!(
        !project.path().join(".heartwood").exists(),
        "listing creates nothing"
    );

    let elsewhere = tempfile::tempdir().expect("skills");
    let dir = elsewhere.path().join("check-units");
    std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: check-units\ndescription: Check units before fitting a model.\n---\nRead the dictionary's units.\n",
    )
    .expect("write");
    std::fs::write(dir.join("scripts/units.py"), "print('units')\n").expect("write");
    let dir_arg = dir.to_str().expect("utf-8");
    let added = heartwood(project.path(), &["skills", "add", dir_arg]);
    assert_eq!(code(&added), 0, "{}", text(&added.stderr));
    assert!(text(&added.stdout).contains("unreviewed"));

    let shown = heartwood(project.path(), &["skills", "show", "check-units"]);
    let shown = text(&shown.stdout);
    assert!(shown.contains("scripts/units.py"), "{shown}");
    assert!(shown.contains("Read the dictionary's units."), "{shown}");
    let digest = shown
        .split_whitespace()
        .find(|w| w.starts_with("blake3:"))
        .expect("the digest is shown")
        .to_owned();

    let early = heartwood(project.path(), &["skills", "activate", "check-units"]);
    assert_eq!(code(&early), 1);
    assert!(text(&early.stderr).contains("not approved"));

    std::fs::write(dir.join("scripts/units.py"), "print('changed')\n").expect("write");
    let stale = heartwood(
        project.path(),
        &["skills", "approve", "check-units", "--digest", &digest],
    );
    assert_eq!(code(&stale), 1, "the tree changed after it was shown");
    assert!(
        text(&stale.stderr).contains("review it again"),
        "{}",
        text(&stale.stderr)
    );

    std::fs::write(dir.join("scripts/units.py"), "print('units')\n").expect("write");
    let approved = heartwood(
        project.path(),
        &["skills", "approve", "check-units", "--digest", &digest],
    );
    assert_eq!(code(&approved), 0, "{}", text(&approved.stderr));
    let active = heartwood(project.path(), &["skills", "activate", "check-units"]);
    assert_eq!(code(&active), 0, "{}", text(&active.stderr));
    assert!(text(&active.stdout).contains("active"));

    let entry = listed_entry(project.path(), "check-units");
    assert_eq!(entry["active"], true);
    assert_eq!(entry["reviewed"], false);

    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: check-units\ndescription: Now something else.\n---\nDifferent.\n",
    )
    .expect("write");
    let entry = listed_entry(project.path(), "check-units");
    assert_eq!(entry["active"], false, "{entry}");
    assert_eq!(entry["approved"], false, "{entry}");

    let off = heartwood(project.path(), &["skills", "deactivate", "check-units"]);
    assert_eq!(code(&off), 0);

    let source = format!("local:{}", dir.canonicalize().expect("real").display());
    let removed = heartwood(project.path(), &["skills", "remove", &source]);
    assert_eq!(code(&removed), 0, "{}", text(&removed.stderr));
    let listed = text(&heartwood(project.path(), &["skills", "ls"]).stdout);
    assert!(!listed.contains("check-units"), "{listed}");
}
