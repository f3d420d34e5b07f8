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
