//! The page's script is checked by TypeScript against the gateway's own types
//! (`docs/schema/heartwood.d.ts`, generated from the JSON Schemas): a field the page reads that
//! the projection does not have fails here, not in a researcher's browser.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// TypeScript's compiler from `HEARTWOOD_NODE_PATH` (which `.ci/run` fills), or `None` to skip
/// outside CI.
fn tsc() -> Option<PathBuf> {
    let node_path = std::env::var("HEARTWOOD_NODE_PATH").unwrap_or_default();
    let tsc = Path::new(&node_path).join("typescript/bin/tsc");
    if tsc.is_file() {
        return Some(tsc);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "HEARTWOOD_NODE_PATH must name a node_modules with typescript (.ci/run installs it)"
    );
    eprintln!("skipped: no typescript; run .ci/run once, or set HEARTWOOD_NODE_PATH");
    None
}

/// `tsc`'s verdict on the script at `page` (types resolved from where it lies): whether it
/// passed, and what it printed.
fn check(tsc: &Path, page: &Path) -> (bool, String) {
    let out = Command::new("node")
        .arg(tsc)
        .args([
            "--allowJs",
            "--checkJs",
            "--noEmit",
            "--lib",
            "dom,dom.iterable,es2022",
            "--target",
            "es2022",
            "--module",
            "es2022",
            "--moduleResolution",
            "bundler",
        ])
        .arg(page)
        .output()
        .expect("node runs");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

#[test]
fn the_pages_script_agrees_with_the_gateways_types() {
    let Some(tsc) = tsc() else { return };
    let (passed, said) = check(&tsc, &root().join("crates/heartwood-web/assets/page.js"));
    assert!(
        passed,
        "tsc found the page's script at odds with the types:\n{said}"
    );
}

/// The check is not vacuous: the same script reading a field the projection does not have
/// (`status_lines` for `status_line`), or one an HTTP route's answer does not have (`sumary` in
/// `GET /api/workspace/changes`'s `ChangeReport`), is refused, by name.
#[test]
fn a_field_the_types_lack_is_refused() {
    let Some(tsc) = tsc() else { return };
    let script = std::fs::read_to_string(root().join("crates/heartwood-web/assets/page.js"))
        .expect("page.js");
    for (field, edited, misspelt) in [
        ("p.status_line :", "p.status_lines :", "status_lines"),
        ("data.summary;", "data.sumary;", "sumary"),
    ] {
        assert!(script.contains(field), "the line this test edits moved");
        let copy = tempfile::tempdir().expect("temp");
        let assets = copy.path().join("crates/heartwood-web/assets");
        let schema = copy.path().join("docs/schema");
        std::fs::create_dir_all(&assets).expect("assets");
        std::fs::create_dir_all(&schema).expect("schema");
        std::fs::write(assets.join("page.js"), script.replacen(field, edited, 1)).expect("write");
        std::fs::copy(
            root().join("docs/schema/heartwood.d.ts"),
            schema.join("heartwood.d.ts"),
        )
        .expect("copy");
        let (passed, said) = check(&tsc, &assets.join("page.js"));
        assert!(!passed, "a misspelt field ({edited}) passed:\n{said}");
        assert!(said.contains(misspelt), "{said}");
    }
}
