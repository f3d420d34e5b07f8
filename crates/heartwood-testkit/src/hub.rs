//! A model hub on loopback that speaks the parts of Hugging Face's HTTP API Heartwood uses:
//! `GET /api/models/{owner}/{name}/revision/{revision}` (commit, files with LFS sizes and
//! SHA-256, license) and `GET /{owner}/{name}/resolve/{commit}/{path}` (the bytes, with HTTP
//! ranges). Branches move when a new commit is published; a file can be served corrupted, or
//! cut off mid-body to test resuming. It runs on its own thread, so sync tests and child
//! processes can use it alike.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use sha2::{Digest, Sha256};

#[derive(Default)]
struct Repo {
    branches: HashMap<String, String>,
    commits: HashMap<String, Vec<(String, Vec<u8>)>>,
    license: String,
}

#[derive(Default)]
struct HubState {
    repos: HashMap<String, Repo>,
    corrupted: HashMap<(String, String), Vec<u8>>,
    cut_next_after: Option<usize>,
    ranges: Vec<Option<String>>,
    fetched: Vec<String>,
}

type Shared = Arc<Mutex<HubState>>;

/// A running hub. Dropping it stops it.
pub struct HubServer {
    addr: SocketAddr,
    state: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl HubServer {
    /// Starts an empty hub on a free loopback port.
    pub fn start() -> HubServer {
        let state: Shared = Arc::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = Router::new()
            .route(
                "/api/models/{owner}/{name}/revision/{revision}",
                get(metadata),
            )
            .route("/{owner}/{name}/resolve/{commit}/{*path}", get(file))
            .with_state(state.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        HubServer {
            addr,
            state,
            stop: Some(stop),
        }
    }

    /// The endpoint (`HF_ENDPOINT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Publishes `files` as a new commit of `repository` (`owner/name`) and moves `branch` to
    /// it; returns the commit id.
    pub fn publish(
        &self,
        repository: &str,
        branch: &str,
        license: &str,
        files: &[(&str, &[u8])],
    ) -> String {
        let mut sha = Sha256::new();
        let mut state = self.state.lock().expect("hub");
        let repo = state.repos.entry(repository.to_owned()).or_default();
        sha.update(repository.as_bytes());
        sha.update(repo.commits.len().to_le_bytes());
        for (path, bytes) in files {
            sha.update(path.as_bytes());
            sha.update(bytes);
        }
        let commit: String = hex(&sha.finalize())[..40].to_owned();
        repo.commits.insert(
            commit.clone(),
            files
                .iter()
                .map(|(p, b)| (p.to_string(), b.to_vec()))
                .collect(),
        );
        repo.branches.insert(branch.to_owned(), commit.clone());
        repo.license = license.to_owned();
        commit
    }

    /// Serves `bytes` for `path` at `commit` while its metadata keeps the true SHA-256.
    pub fn corrupt(&self, commit: &str, path: &str, bytes: &[u8]) {
        self.state
            .lock()
            .expect("hub")
            .corrupted
            .insert((commit.to_owned(), path.to_owned()), bytes.to_vec());
    }

    /// The next file response sends `bytes` bytes of its body, then breaks the connection.
    pub fn cut_next_download_after(&self, bytes: usize) {
        self.state.lock().expect("hub").cut_next_after = Some(bytes);
    }

    /// The `Range` header of every file request, in order.
    pub fn ranges(&self) -> Vec<Option<String>> {
        self.state.lock().expect("hub").ranges.clone()
    }

    /// Every file request, as `commit/path`.
    pub fn fetched(&self) -> Vec<String> {
        self.state.lock().expect("hub").fetched.clone()
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn metadata(
    State(state): State<Shared>,
    Path((owner, name, revision)): Path<(String, String, String)>,
) -> Response {
    let state = state.lock().expect("hub");
    let id = format!("{owner}/{name}");
    let Some(repo) = state.repos.get(&id) else {
        return (StatusCode::NOT_FOUND, "Repository not found").into_response();
    };
    let commit = repo.branches.get(&revision).cloned().or_else(|| {
        repo.commits
            .contains_key(&revision)
            .then(|| revision.clone())
    });
    let Some(commit) = commit else {
        return (StatusCode::NOT_FOUND, "Revision not found").into_response();
    };
    let siblings: Vec<_> = repo.commits[&commit]
        .iter()
        .map(|(path, bytes)| {
            json!({
                "rfilename": path,
                "size": bytes.len(),
                "lfs": {"sha256": hex(&Sha256::digest(bytes)), "size": bytes.len(), "pointerSize": 134},
            })
        })
        .collect();
    axum::Json(json!({
        "id": id,
        "sha": commit,
        "siblings": siblings,
        "cardData": {"license": repo.license},
        "tags": ["gguf", format!("license:{}", repo.license)],
    }))
    .into_response()
}

async fn file(
    State(state): State<Shared>,
    Path((owner, name, commit, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut state = state.lock().expect("hub");
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    state.ranges.push(range.clone());
    state.fetched.push(format!("{commit}/{path}"));
    let id = format!("{owner}/{name}");
    let bytes = state
        .corrupted
        .get(&(commit.clone(), path.clone()))
        .cloned()
        .or_else(|| {
            let files = state.repos.get(&id)?.commits.get(&commit)?;
            files
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, b)| b.clone())
        });
    let Some(bytes) = bytes else {
        return (StatusCode::NOT_FOUND, "Entry not found").into_response();
    };
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok());
    let (status, body, content_range) = match start {
        Some(start) if start < bytes.len() => (
            StatusCode::PARTIAL_CONTENT,
            bytes[start..].to_vec(),
            Some(format!("bytes {start}-{}/{}", bytes.len() - 1, bytes.len())),
        ),
        _ => (StatusCode::OK, bytes, None),
    };
    let length = body.len();
    let body = match state.cut_next_after.take() {
        Some(cut) => {
            let sent = Bytes::from(body[..cut.min(length)].to_vec());
            // The first part goes out (headers and all) before the connection breaks.
            let parts = futures_util::stream::unfold(Some(sent), |part| async move {
                match part {
                    Some(bytes) => Some((Ok(bytes), None)),
                    None => {
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        let broken =
                            std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut off");
                        Some((Err(broken), None))
                    }
                }
            });
            Body::from_stream(parts)
        }
        None => Body::from(body),
    };
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, length)
        .header(header::ACCEPT_RANGES, "bytes");
    if let Some(range) = content_range {
        response = response.header(header::CONTENT_RANGE, range);
    }
    response.body(body).expect("a response")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Publishes a tiny GGUF-named model (150,000 bytes, Apache-2.0) on `hub` and writes a trusted
/// catalog at `path` with two entries for it: `tiny` (1 GiB to run) and `huge` (1 PiB, which no
/// machine here fits). The catalog's file is returned, for `HEARTWOOD_MODEL_CATALOG`.
pub fn tiny_catalog(hub: &HubServer, path: &std::path::Path) -> std::path::PathBuf {
    let weights: Vec<u8> = (0..150_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let commit = hub.publish(
        "heartwood-tests/tiny-GGUF",
        "main",
        "apache-2.0",
        &[("tiny.gguf", &weights)],
    );
    let sha256: String = Sha256::digest(&weights)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let entry = |id: &str, memory: u64| {
        format!(
            "[[model]]\nid = \"{id}\"\nsummary = \"a tiny test model\"\n\
             repository = \"heartwood-tests/tiny-GGUF\"\nrevision = \"{commit}\"\n\
             license = \"apache-2.0\"\nmodel_file = \"tiny.gguf\"\ncontext_length = 512\n\
             memory_bytes = {memory}\n\
             files = [{{ path = \"tiny.gguf\", size = 150000, sha256 = \"{sha256}\" }}]\n"
        )
    };
    std::fs::write(path, entry("tiny", 1 << 30) + &entry("huge", 1 << 50)).expect("catalog");
    path.to_path_buf()
}
