//! Signed sources against TUF repositories this test generates and signs itself (with `tough`'s
//! editor and fresh Ed25519 keys): a valid refresh; expired, under-threshold, rolled-back and
//! tampered repositories refused; a revocation deactivating an active skill on the next refresh,
//! so it never reaches the agent.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::Ed25519KeyPair;
use heartwood_skills::catalog::{self, SkillView};
use heartwood_skills::signed::{REVOCATIONS_FORMAT, SKILL_CUSTOM_KEY, SourceUrls};
use heartwood_skills::store::Store;
use heartwood_skills::tree::Limits;
use tough::editor::RepositoryEditor;
use tough::editor::signed::SignedRole;
use tough::key_source::{KeySource, LocalKeySource};
use tough::schema::{KeyHolder, RoleKeys, RoleType, Root, Target};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// The keys of one repository: one per role, two for timestamp (threshold 2).
struct Keys {
    root: PathBuf,
    targets: PathBuf,
    snapshot: PathBuf,
    timestamp: [PathBuf; 2],
}

impl Keys {
    fn generate(dir: &Path) -> Keys {
        std::fs::create_dir_all(dir).expect("keys dir");
        let key = |name: &str| {
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("key");
            let path = dir.join(name);
            std::fs::write(&path, pkcs8.as_ref()).expect("write key");
            path
        };
        Keys {
            root: key("root.pk8"),
            targets: key("targets.pk8"),
            snapshot: key("snapshot.pk8"),
            timestamp: [key("timestamp-1.pk8"), key("timestamp-2.pk8")],
        }
    }

    fn sources(&self) -> Vec<Box<dyn KeySource>> {
        [
            &self.root,
            &self.targets,
            &self.snapshot,
            &self.timestamp[0],
            &self.timestamp[1],
        ]
        .into_iter()
        .map(|p| Box::new(LocalKeySource { path: p.clone() }) as Box<dyn KeySource>)
        .collect()
    }

    /// Writes the signed root metadata (version 1) to `path`.
    async fn write_root(&self, path: &Path) {
        let mut keys = HashMap::new();
        let mut roles = HashMap::new();
        let assignments = [
            (RoleType::Root, vec![&self.root], 1),
            (RoleType::Targets, vec![&self.targets], 1),
            (RoleType::Snapshot, vec![&self.snapshot], 1),
            (
                RoleType::Timestamp,
                vec![&self.timestamp[0], &self.timestamp[1]],
                2,
            ),
        ];
        for (role, paths, threshold) in assignments {
            let mut keyids = Vec::new();
            for path in paths {
                let sign = LocalKeySource { path: path.clone() }
                    .as_sign()
                    .await
                    .expect("key");
                let key = sign.tuf_key();
                let id = key.key_id().expect("key id");
                keys.insert(id.clone(), key);
                keyids.push(id);
            }
            roles.insert(
                role,
                RoleKeys {
                    keyids,
                    threshold: NonZeroU64::new(threshold).expect("threshold"),
                    _extra: HashMap::new(),
                },
            );
        }
        let root = Root {
            spec_version: "1.0.0".into(),
            consistent_snapshot: false,
            version: NonZeroU64::MIN,
            expires: jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 365),
            keys,
            roles,
            _extra: HashMap::new(),
        };
        let signed = SignedRole::new(
            root.clone(),
            &KeyHolder::Root(root),
            &self.sources(),
            &SystemRandom::new(),
        )
        .await
        .expect("sign root");
        std::fs::write(path, signed.buffer()).expect("write root");
    }
}

/// One published version of the repository.
struct Publish<'a> {
    version: u64,
    skills: &'a [&'a Path],
    revoked: &'a [(&'a str, &'a str)],
    expires_in_hours: i64,
}

async fn publish(keys: &Keys, root: &Path, out: &Path, p: Publish<'_>) {
    let _ = std::fs::remove_dir_all(out);
    let targets_dir = out.join("targets");
    std::fs::create_dir_all(&targets_dir).expect("targets dir");
    let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(p.expires_in_hours);
    let version = NonZeroU64::new(p.version).expect("version");
    let mut editor = RepositoryEditor::new(root).await.expect("editor");
    editor
        .snapshot_version(version)
        .snapshot_expires(expires)
        .timestamp_version(version)
        .timestamp_expires(expires)
        .targets_version(version)
        .expect("targets version")
        .targets_expires(expires)
        .expect("targets expires");
    for dir in p.skills {
        let skill = heartwood_skills::skill::validate(dir, &Limits::default()).expect("skill");
        let bundle = heartwood_skills::bundle::pack(dir, &Limits::default()).expect("pack");
        let name = format!("{}.skill.json", skill.front.name);
        let path = targets_dir.join(&name);
        std::fs::write(&path, &bundle).expect("bundle");
        let mut target = Target::from_path(&path).await.expect("target");
        target.custom.insert(
            SKILL_CUSTOM_KEY.into(),
            serde_json::json!({"name": skill.front.name, "tree": skill.tree.digest.as_str()}),
        );
        editor
            .add_target(name.as_str(), target)
            .expect("add target");
    }
    if !p.revoked.is_empty() {
        let list = serde_json::json!({
            "format": REVOCATIONS_FORMAT,
            "revoked": p.revoked.iter().map(|(tree, reason)| serde_json::json!({"tree": tree, "reason": reason})).collect::<Vec<_>>(),
        });
        let path = targets_dir.join("revocations.json");
        std::fs::write(&path, list.to_string()).expect("revocations");
        let target = Target::from_path(&path).await.expect("target");
        editor
            .add_target("revocations.json", target)
            .expect("add revocations");
    }
    let signed = editor.sign(&keys.sources()).await.expect("sign");
    signed.write(out.join("metadata")).await.expect("write");
}

fn skill_dir(parent: &Path, name: &str, body: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("skill dir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: {name} for testing signed sources.\n---\n{body}\n"
        ),
    )
    .expect("SKILL.md");
    dir
}

struct World {
    _dir: tempfile::TempDir,
    keys: Keys,
    root: PathBuf,
    served: PathBuf,
    store: Store,
    skills: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let keys = Keys::generate(&dir.path().join("keys"));
        let root = dir.path().join("root.json");
        runtime().block_on(keys.write_root(&root));
        World {
            served: dir.path().join("served"),
            store: Store::new(dir.path().join("project/.heartwood/skills")),
            skills: dir.path().join("skills"),
            keys,
            root,
            _dir: dir,
        }
    }

    fn publish(&self, p: Publish<'_>) {
        runtime().block_on(publish(&self.keys, &self.root, &self.served, p));
    }

    fn urls(&self) -> SourceUrls {
        SourceUrls {
            metadata: url::Url::from_directory_path(self.served.join("metadata")).expect("url"),
            targets: url::Url::from_directory_path(self.served.join("targets")).expect("url"),
        }
    }

    fn add(&self) -> Result<Vec<SkillView>, heartwood_skills::SkillError> {
        let root = std::fs::read(&self.root).expect("root");
        catalog::add_signed(&self.store, "lab", &root, self.urls(), &Limits::default())
    }

    fn refresh_error(&self) -> String {
        let outcomes = catalog::refresh(&self.store, &Limits::default()).expect("refresh runs");
        let outcome = outcomes.into_iter().next().expect("one source");
        outcome.refused.expect("refused")
    }

    fn view(&self, name: &str) -> SkillView {
        let catalog = catalog::load(&self.store, &Limits::default()).expect("catalog");
        catalog
            .view
            .skills
            .into_iter()
            .find(|s| s.name == name)
            .expect("listed")
    }
}

fn ok<'a>(expires_in_hours: i64, version: u64, skills: &'a [&'a Path]) -> Publish<'a> {
    Publish {
        version,
        skills,
        revoked: &[],
        expires_in_hours,
    }
}

#[test]
fn a_valid_repository_offers_its_skills_as_reviewed_and_a_revocation_deactivates_one() {
    let world = World::new();
    let tidy = skill_dir(&world.skills, "tidy-data", "Tidy the table.");
    world.publish(ok(24, 1, &[&tidy]));
    let offered = world.add().expect("a valid repository is added");
    assert_eq!(offered.len(), 1);
    let view = &offered[0];
    assert_eq!(view.name, "tidy-data");
    assert_eq!(view.source, "signed:lab");
    assert!(view.reviewed);
    assert!(!view.approved && !view.active);
    let digest = view.digest.clone().expect("digest");
    let expected = heartwood_skills::skill::validate(&tidy, &Limits::default()).expect("skill");
    assert_eq!(digest, expected.tree.digest.as_str());

    catalog::approve(&world.store, "tidy-data", None, &digest, &Limits::default())
        .expect("approve");
    let active =
        catalog::activate(&world.store, "tidy-data", None, &Limits::default()).expect("activate");
    assert!(active.active, "{active:?}");
    let loaded = catalog::load(&world.store, &Limits::default()).expect("catalog");
    assert_eq!(
        loaded
            .active
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>(),
        ["tidy-data"]
    );

    // Version 2 revokes the tree; the next refresh deactivates it for good.
    world.publish(Publish {
        version: 2,
        skills: &[&tidy],
        revoked: &[(&digest, "instructions leak held-out data")],
        expires_in_hours: 24,
    });
    let outcomes = catalog::refresh(&world.store, &Limits::default()).expect("refresh");
    assert!(outcomes.iter().all(|o| o.refused.is_none()), "{outcomes:?}");
    let view = world.view("tidy-data");
    assert!(!view.active);
    assert!(
        view.revoked
            .as_deref()
            .is_some_and(|r| r.contains("leak held-out data")),
        "{view:?}"
    );
    let loaded = catalog::load(&world.store, &Limits::default()).expect("catalog");
    assert!(loaded.active.iter().all(|a| a.name != "tidy-data"));
    let again = catalog::activate(&world.store, "tidy-data", None, &Limits::default())
        .expect_err("a revoked skill cannot be activated");
    assert!(again.to_string().contains("revoked"), "{again}");
}

#[test]
fn expired_metadata_is_refused_before_any_target_is_used() {
    let world = World::new();
    let tidy = skill_dir(&world.skills, "tidy-data", "Tidy.");
    world.publish(ok(-1, 1, &[&tidy]));
    let error = world.add().expect_err("expired metadata is refused");
    assert!(
        error.to_string().to_lowercase().contains("expired"),
        "{error}"
    );
    assert!(
        !world.store.root().join("objects").exists()
            || std::fs::read_dir(world.store.root().join("objects"))
                .expect("objects")
                .filter_map(Result::ok)
                .all(|e| !e.path().join("tidy-data").exists()),
        "no target of an expired repository is stored"
    );
}

#[test]
fn a_timestamp_below_its_signature_threshold_is_refused() {
    let world = World::new();
    let tidy = skill_dir(&world.skills, "tidy-data", "Tidy.");
    world.publish(ok(24, 1, &[&tidy]));
    let path = world.served.join("metadata/timestamp.json");
    let mut timestamp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("timestamp")).expect("json");
    let signatures = timestamp["signatures"].as_array_mut().expect("signatures");
    assert_eq!(signatures.len(), 2);
    signatures.pop();
    std::fs::write(&path, timestamp.to_string()).expect("write");
    let error = world.add().expect_err("one signature of two is refused");
    assert!(
        error.to_string().to_lowercase().contains("signature"),
        "{error}"
    );
}

#[test]
fn a_rolled_back_repository_is_refused_and_the_last_verified_one_stays_in_use() {
    let world = World::new();
    let tidy = skill_dir(&world.skills, "tidy-data", "Tidy.");
    world.publish(ok(24, 1, &[&tidy]));
    let old = world.served.with_file_name("served-v1");
    copy_dir(&world.served, &old);
    world.add().expect("version 1");
    world.publish(ok(24, 2, &[&tidy]));
    assert!(
        catalog::refresh(&world.store, &Limits::default()).expect("refresh")[0]
            .refused
            .is_none()
    );
    // An attacker serves the old, validly signed version 1 again.
    std::fs::remove_dir_all(&world.served).expect("remove");
    copy_dir(&old, &world.served);
    let error = world.refresh_error();
    assert!(
        error.to_lowercase().contains("version") || error.to_lowercase().contains("rollback"),
        "{error}"
    );
    let view = world.view("tidy-data");
    assert!(view.problem.is_none(), "{view:?}");
}

#[test]
fn tampered_metadata_or_a_tampered_bundle_is_refused() {
    let world = World::new();
    let tidy = skill_dir(&world.skills, "tidy-data", "Tidy.");
    world.publish(ok(24, 1, &[&tidy]));
    world.add().expect("version 1");

    // A signed field of targets.json changed after signing.
    world.publish(ok(24, 2, &[&tidy]));
    let path = world.served.join("metadata/targets.json");
    let text = std::fs::read_to_string(&path).expect("targets");
    std::fs::write(&path, text.replacen("\"version\": 2", "\"version\": 3", 1)).expect("write");
    let error = world.refresh_error();
    assert!(
        error.contains("targets.json") && error.contains("mismatch"),
        "{error}"
    );

    // A bundle whose bytes differ from what the metadata pins.
    world.publish(ok(24, 3, &[&tidy]));
    let bundle = world.served.join("targets/tidy-data.skill.json");
    let mut bytes = std::fs::read(&bundle).expect("bundle");
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    std::fs::write(&bundle, bytes).expect("write");
    let error = world.refresh_error();
    assert!(error.contains("tidy-data.skill.json"), "{error}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// Serves the files under `root` over HTTP/1.0 on a loopback port until the test ends.
fn serve_files(root: PathBuf) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            if BufReader::new(&stream).read_line(&mut request).is_err() {
                continue;
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let file = root.join(path.trim_start_matches('/'));
            let answer = match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => {
                    let mut head = format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    head.extend(body);
                    head
                }
                _ => b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&answer);
        }
    });
    port
}

#[test]
fn a_source_served_over_http_is_verified_the_same_way() {
    let world = World::new();
    let tidy = skill_dir(&world.skills, "tidy-data", "Tidy.");
    world.publish(ok(24, 1, &[&tidy]));
    let port = serve_files(world.served.clone());
    let urls = SourceUrls::parse(
        &format!("http://127.0.0.1:{port}/metadata"),
        &format!("http://127.0.0.1:{port}/targets"),
    )
    .expect("urls");
    let root = std::fs::read(&world.root).expect("root");
    let offered = catalog::add_signed(&world.store, "lab", &root, urls, &Limits::default())
        .expect("a valid repository over HTTP");
    assert_eq!(offered.len(), 1);
    assert!(offered[0].problem.is_none(), "{:?}", offered[0]);

    world.publish(ok(24, 2, &[&tidy]));
    let bundle = world.served.join("targets/tidy-data.skill.json");
    let mut bytes = std::fs::read(&bundle).expect("bundle");
    bytes.push(b' ');
    std::fs::write(&bundle, bytes).expect("write");
    let error = world.refresh_error();
    assert!(error.contains("tidy-data.skill.json"), "{error}");
}
