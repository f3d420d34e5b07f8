//! Local directories: the same verifier and store as every source, always unreviewed, and an
//! approval that holds only for the exact tree the researcher reviewed.

use std::path::{Path, PathBuf};

use heartwood_skills::catalog;
use heartwood_skills::store::Store;
use heartwood_skills::tree::Limits;

fn skill(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: Check units before fitting a model.\n---\nLook at every unit column.\n"),
    )
    .expect("SKILL.md");
    dir
}

#[test]
fn a_changed_local_skill_needs_a_new_approval_and_stops_reaching_the_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path().join("project/.heartwood/skills"));
    let limits = Limits::default();
    let source = skill(dir.path(), "check-units");
    let added = catalog::add_local(&store, &source, &limits).expect("add");
    assert!(
        !added.reviewed,
        "a local directory is never shown as reviewed"
    );
    assert!(added.status.contains("unreviewed"), "{}", added.status);
    let digest = added.digest.clone().expect("digest");

    let early = catalog::activate(&store, "check-units", None, &limits)
        .expect_err("an unapproved skill is not activated");
    assert!(early.to_string().contains("not approved"), "{early}");
    let wrong = format!("blake3:{}", "0".repeat(64));
    let stale = catalog::approve(&store, "check-units", None, &wrong, &limits)
        .expect_err("approving a tree that is not the one offered is refused");
    assert!(stale.to_string().contains("review it again"), "{stale}");

    catalog::approve(&store, "check-units", None, &digest, &limits).expect("approve");
    let view = catalog::activate(&store, "check-units", None, &limits).expect("activate");
    assert!(view.active);
    let active = catalog::load(&store, &limits).expect("load").active;
    assert_eq!(active.len(), 1);
    assert!(active[0].dir.join("SKILL.md").is_file());
    assert!(
        active[0].dir.starts_with(store.root()),
        "the agent reads the store's copy"
    );

    // One byte changes in the directory: the approved tree is no longer what is offered.
    std::fs::write(source.join("notes.txt"), "x").expect("write");
    let catalog = catalog::load(&store, &limits).expect("load");
    assert!(
        catalog.active.is_empty(),
        "a changed tree never reaches the agent"
    );
    let view = catalog
        .view
        .skills
        .iter()
        .find(|s| s.name == "check-units")
        .expect("listed");
    assert!(!view.approved && !view.active);
    assert_ne!(view.digest.as_deref(), Some(digest.as_str()));
    assert!(view.files.iter().any(|f| f.path == "notes.txt"));
}

#[test]
fn a_stored_tree_changed_on_disk_is_caught_and_replaced_from_its_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path().join("skills"));
    let limits = Limits::default();
    let source = skill(dir.path(), "check-units");
    let added = catalog::add_local(&store, &source, &limits).expect("add");
    let digest = heartwood_skills::tree::parse_digest(added.digest.as_deref().expect("digest"))
        .expect("digest");
    let stored = store.object_dir(&digest, "check-units").join("SKILL.md");
    std::fs::write(&stored, "tampered").expect("tamper");
    let error = store
        .verify(&digest, "check-units", &limits)
        .expect_err("a changed stored copy does not verify");
    assert!(error.to_string().contains("SKILL.md"), "{error}");
    // The next revalidation republishes the source's tree over the damaged copy.
    catalog::load(&store, &limits).expect("load");
    store
        .verify(&digest, "check-units", &limits)
        .expect("replaced with the verified tree");
}

#[test]
fn every_bundled_skill_is_offered_as_reviewed_and_none_is_active_until_approved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path().join("skills"));
    let catalog = catalog::load(&store, &Limits::default()).expect("load");
    assert_eq!(catalog.view.skills.len(), 3);
    assert!(catalog.view.skills.iter().all(|s| s.reviewed && !s.active));
    assert!(catalog.active.is_empty());
}
