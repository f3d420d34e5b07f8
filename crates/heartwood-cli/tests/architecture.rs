//! The frontends (the terminal, the browser's server, the notebook module) reach sessions only
//! through the gateway: their build dependencies and their source never name the journal,
//! workspace, agent or workflow crates.

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

/// Every frontend crate, from this crate's folder.
const FRONTENDS: [&str; 3] = [".", "../heartwood-web", "../heartwood-notebook"];

fn frontend(dir: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)
}

#[test]
fn frontends_depend_on_the_gateway_not_on_what_is_behind_it() {
    for dir in FRONTENDS {
        let manifest = std::fs::read_to_string(frontend(dir).join("Cargo.toml")).expect("read");
        let dependencies = manifest
            .split("\n[")
            .find(|section| section.starts_with("dependencies]"))
            .expect("a [dependencies] section");
        assert!(
            dependencies.contains("heartwood-gateway"),
            "{dir} should use the gateway"
        );
        for crate_name in FORBIDDEN {
            assert!(
                !dependencies.contains(crate_name),
                "{dir} depends directly on {crate_name}"
            );
        }
    }
}

#[test]
fn frontend_sources_never_name_the_crates_behind_the_gateway() {
    for dir in FRONTENDS {
        let mut pending = vec![frontend(dir).join("src")];
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
        assert!(checked >= 4, "only {checked} files were checked in {dir}");
    }
}
