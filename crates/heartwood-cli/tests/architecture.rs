//! The terminal frontend reaches sessions only through the gateway: its build dependencies and
//! its source never name the journal, workspace, agent or workflow crates.

use std::path::Path;

const FORBIDDEN: [&str; 7] = [
    "heartwood-audit",
    "heartwood-workspace",
    "heartwood-agent",
    "heartwood-workflow",
    "heartwood-models",
    "heartwood-skills",
    "heartwood-openhands",
];

#[test]
fn the_cli_depends_on_the_gateway_not_on_what_is_behind_it() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("read");
    let dependencies = manifest
        .split("\n[")
        .find(|section| section.starts_with("dependencies]"))
        .expect("a [dependencies] section");
    assert!(
        dependencies.contains("heartwood-gateway"),
        "the CLI should use the gateway"
    );
    for crate_name in FORBIDDEN {
        assert!(
            !dependencies.contains(crate_name),
            "the CLI depends directly on {crate_name}"
        );
    }
}

#[test]
fn the_cli_source_never_names_the_crates_behind_the_gateway() {
    let mut pending = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut checked = 0;
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read");
            for crate_name in FORBIDDEN {
                let ident = crate_name.replace('-', "_");
                assert!(!text.contains(&ident), "{} names {ident}", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} files were checked");
}
