//! Local models from the page: `heartwood serve` against a model hub on loopback and a trusted
//! catalog, driven in headless Chromium. The catalog's entries (one too large for this machine,
//! not offered), a review of the exact manifest, a download refused for a licence decision on
//! another manifest, the accepted one downloaded by the gateway with its progress in the one
//! transfer record, which a reload reads back; then the model is stored, validated, byte for
//! byte.
//!
//! It needs Debian's `chromium` and `playwright-core` from npm (`.ci/run` installs both; set
//! `HEARTWOOD_NODE_PATH` to the `node_modules` holding it).

mod support;

use std::path::Path;

use heartwood_testkit::hub::{HubServer, tiny_catalog};

#[test]
fn the_page_downloads_a_catalog_model_after_its_licence_is_accepted() {
    let Some(node_path) = support::node_path() else {
        return;
    };
    let hub = HubServer::start();
    let work = tempfile::tempdir().expect("work");
    let catalog = tiny_catalog(&hub, &work.path().join("models.toml"));
    // A repository the catalog does not list, inspected on the page by name and revision.
    let other: Vec<u8> = (0..40_000u32).map(|i| (i * 13 % 241) as u8).collect();
    hub.publish(
        "heartwood-tests/other-GGUF",
        "main",
        "mit",
        &[("other.gguf", &other)],
    );
    let endpoint = hub.endpoint();
    let project = tempfile::tempdir().expect("project");
    let served = support::serve_with(
        project.path(),
        &[],
        &[
            ("HF_ENDPOINT", Path::new(&endpoint)),
            ("HEARTWOOD_MODEL_CATALOG", &catalog),
        ],
    );
    let url = format!("http://127.0.0.1:{}/?token={}", served.port, served.token);
    let web_tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heartwood-web/tests");
    let screenshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-catalog.png");
    let out = std::process::Command::new("node")
        .arg(web_tests.join("catalog.mjs"))
        .arg(&url)
        .arg(&screenshot)
        .env("NODE_PATH", &node_path)
        .output()
        .expect("node");
    let stdout = support::text(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        support::text(&out.stderr)
    );
    assert!(
        stdout.contains("tiny: tiny: a tiny test model · apache-2.0"),
        "{stdout}"
    );
    assert!(stdout.contains("does not fit this machine"), "{stdout}");
    assert!(stdout.contains("license: apache-2.0"), "{stdout}");
    assert!(stdout.contains("refused: 4"), "{stdout}");
    assert!(
        stdout.contains("the license decision was for manifest 0000"),
        "{stdout}"
    );
    assert!(stdout.contains("stored: tiny"), "{stdout}");
    assert!(
        stdout.contains("download tiny: done (published tiny)"),
        "{stdout}"
    );
    drop(served);

    // The gateway stored it, validated (an exact catalog entry), byte for byte.
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_heartwood"))
        .args(["model", "list", "--json"])
        .env("HEARTWOOD_MODEL_CATALOG", &catalog)
        .current_dir(project.path())
        .output()
        .expect("model list");
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    let named = |name: &str| {
        listed
            .as_array()
            .and_then(|l| l.iter().find(|m| m["name"] == name))
            .unwrap_or_else(|| panic!("{name} is stored: {listed}"))
            .clone()
    };
    assert_eq!(named("tiny")["validation"], "validated", "{listed}");

    // Issue 56 item 3, the seed's rule that the transfer manager serves "the terminal, browser,
    // and notebook adapters" alike: a repository inspected at a revision is downloaded from
    // the page too, unvalidated (no catalog vouches for it), under the licence it declares.
    assert!(
        stdout.contains("other-gguf (unvalidated) license: mit"),
        "{stdout}"
    );
    assert!(stdout.contains("license: mit"), "{stdout}");
    assert!(stdout.contains("repository stored: other-gguf"), "{stdout}");
    let other = named("other-gguf");
    assert_eq!(other["validation"], "unvalidated", "{other}");
    assert_eq!(other["license"], "mit", "{other}");
}
