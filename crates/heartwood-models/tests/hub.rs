//! Pinned, resumable, verified downloads against a real HTTP hub on loopback.

mod common;

use heartwood_models::hub::Hub;
use heartwood_models::store::{Provenance, WayIn};
use heartwood_models::transfer::{TransferKind, Transfers};
use heartwood_models::{ModelError, ModelStore};
use heartwood_testkit::hub::HubServer;

use common::{noise, staged};

const REPO: &str = "heartwood-tests/tiny-GGUF";

fn provenance(sha: &str) -> Provenance {
    Provenance::now(WayIn::Download, false, sha)
}

#[test]
fn a_branch_that_moves_after_resolution_does_not_change_what_is_downloaded() {
    let server = HubServer::start();
    let weights = noise(200_000, 3);
    let first = server.publish(REPO, "main", "apache-2.0", &[("tiny.gguf", &weights)]);
    let hub = Hub::at(&server.endpoint(), None).expect("hub");
    let resolved = hub.resolve(REPO, "main").expect("resolve");
    assert_eq!(resolved.commit, first);
    assert_eq!(resolved.license, "apache-2.0");
    let manifest = resolved.manifest("tiny", &[], None).expect("manifest");

    // The branch moves before the download starts.
    server.publish(
        REPO,
        "main",
        "apache-2.0",
        &[("tiny.gguf", &noise(200_000, 4))],
    );
    let project = tempfile::tempdir().expect("project");
    let store = ModelStore::new(project.path());
    let transfers = Transfers::default();
    let transfer = transfers.begin(TransferKind::Download, "tiny");
    let model = hub
        .download(&store, &manifest, provenance(&manifest.digest()), &transfer)
        .expect("download");
    assert_eq!(std::fs::read(model.model_file()).expect("read"), weights);
    assert!(
        server.fetched().iter().all(|f| f.starts_with(&first)),
        "{:?}",
        server.fetched()
    );
    let view = &transfers.views()[0];
    assert_eq!((view.bytes_done, view.bytes_total), (200_000, 200_000));
    assert!(staged(project.path()).is_empty());

    // Resolving again sees the moved branch: a different manifest, needing a new decision.
    let moved = hub
        .resolve(REPO, "main")
        .expect("resolve")
        .manifest("tiny", &[], None)
        .expect("m");
    assert_ne!(moved.digest(), manifest.digest());
}

#[test]
fn an_interrupted_download_resumes_from_where_it_stopped() {
    let server = HubServer::start();
    let weights = noise(300_000, 5);
    server.publish(REPO, "main", "mit", &[("tiny.gguf", &weights)]);
    let hub = Hub::at(&server.endpoint(), None).expect("hub");
    let manifest = hub
        .resolve(REPO, "main")
        .expect("resolve")
        .manifest("tiny", &[], None)
        .expect("m");
    let project = tempfile::tempdir().expect("project");
    let store = ModelStore::new(project.path());
    let transfers = Transfers::default();

    server.cut_next_download_after(120_000);
    let err = hub
        .download(
            &store,
            &manifest,
            provenance(""),
            &transfers.begin(TransferKind::Download, "tiny"),
        )
        .expect_err("the connection broke");
    assert!(err.to_string().contains("resume"), "{err}");
    assert!(
        store.list().expect("list").is_empty(),
        "a partial download was selectable"
    );

    let model = hub
        .download(
            &store,
            &manifest,
            provenance(""),
            &transfers.begin(TransferKind::Download, "tiny"),
        )
        .expect("resumed");
    assert_eq!(std::fs::read(model.model_file()).expect("read"), weights);
    let ranges = server.ranges();
    assert_eq!(ranges.len(), 2, "{ranges:?}");
    assert_eq!(ranges[0], None);
    let resumed_from: u64 = ranges[1]
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse().ok())
        .expect("a range request");
    assert!(resumed_from > 0 && resumed_from <= 120_000, "{ranges:?}");
}

#[test]
fn a_corrupted_file_is_refused_and_deleted() {
    let server = HubServer::start();
    let weights = noise(50_000, 6);
    let commit = server.publish(REPO, "main", "mit", &[("tiny.gguf", &weights)]);
    let mut bad = weights.clone();
    bad[100] ^= 1;
    server.corrupt(&commit, "tiny.gguf", &bad);
    let hub = Hub::at(&server.endpoint(), None).expect("hub");
    let manifest = hub
        .resolve(REPO, "main")
        .expect("resolve")
        .manifest("tiny", &[], None)
        .expect("m");
    let project = tempfile::tempdir().expect("project");
    let store = ModelStore::new(project.path());
    let err = hub
        .download(
            &store,
            &manifest,
            provenance(""),
            &heartwood_models::transfer::Transfer::detached(TransferKind::Download, "t"),
        )
        .expect_err("corrupted");
    assert!(matches!(err, ModelError::Integrity(_)), "{err}");
    assert!(store.list().expect("list").is_empty());
    assert!(
        staged(project.path()).is_empty(),
        "the corrupted bytes were kept"
    );
}

#[test]
fn a_cancelled_download_leaves_nothing_selectable() {
    let server = HubServer::start();
    server.publish(REPO, "main", "mit", &[("tiny.gguf", &noise(80_000, 7))]);
    let hub = Hub::at(&server.endpoint(), None).expect("hub");
    let manifest = hub
        .resolve(REPO, "main")
        .expect("resolve")
        .manifest("tiny", &[], None)
        .expect("m");
    let project = tempfile::tempdir().expect("project");
    let store = ModelStore::new(project.path());
    let transfers = Transfers::default();
    let transfer = transfers.begin(TransferKind::Download, "tiny");
    assert!(transfers.cancel(transfer.view().id));
    let err = hub
        .download(&store, &manifest, provenance(""), &transfer)
        .expect_err("cancelled");
    assert!(matches!(err, ModelError::Cancelled), "{err}");
    transfer.finish::<()>(&Err(err), |_| String::new());
    assert_eq!(
        transfers.views()[0].state,
        heartwood_models::transfer::TransferState::Cancelled
    );
    assert!(store.list().expect("list").is_empty());
    assert!(staged(project.path()).is_empty());
}

#[test]
fn files_without_a_hub_digest_and_unknown_revisions_are_refused() {
    let server = HubServer::start();
    server.publish(REPO, "main", "mit", &[("a.gguf", b"a"), ("b.gguf", b"b")]);
    let hub = Hub::at(&server.endpoint(), None).expect("hub");
    let resolved = hub.resolve(REPO, "main").expect("resolve");
    let err = resolved
        .manifest("tiny", &[], None)
        .expect_err("two GGUF files");
    assert!(err.to_string().contains("--file"), "{err}");
    resolved
        .manifest("tiny", &["b.gguf".to_owned()], None)
        .expect("one chosen");
    let err = hub.resolve(REPO, "no-such-branch").expect_err("unknown");
    assert!(err.to_string().contains("no revision"), "{err}");
}
