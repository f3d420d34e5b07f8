//! The curated skills shipped in `bundled/` are complete, valid skills: the same validation a
//! skill from any source goes through, run on every build of the suite.

use heartwood_skills::skill::validate;
use heartwood_skills::tree::Limits;

#[test]
fn every_bundled_skill_is_valid_and_named_after_its_directory() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bundled");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&root).expect("bundled/") {
        let dir = entry.expect("entry").path();
        let skill =
            validate(&dir, &Limits::default()).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(
            skill.front.description.len() > 40,
            "{}: a description says what and when",
            skill.front.name
        );
        names.push(skill.front.name);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "group-disjoint-splits",
            "reading-a-data-dictionary",
            "writing-a-readiness-report"
        ]
    );
}

#[test]
fn the_skills_compiled_in_are_the_bundled_directories_byte_for_byte() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bundled");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = heartwood_skills::store::Store::new(dir.path().join("skills"));
    assert_eq!(
        heartwood_skills::bundled::BUNDLED.len(),
        std::fs::read_dir(&root).expect("bundled/").count(),
        "every directory in bundled/ is compiled in"
    );
    for (name, files) in heartwood_skills::bundled::BUNDLED {
        let compiled = store
            .publish_files(name, files, &Limits::default())
            .expect("publish");
        let shipped = validate(&root.join(name), &Limits::default()).expect("valid");
        assert_eq!(compiled.tree.digest, shipped.tree.digest, "{name}");
    }
}
