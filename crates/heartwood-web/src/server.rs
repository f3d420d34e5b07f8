//! The HTTP server: one entry point that runs the ingress policy on every request, then the
//! gateway's API under `{base}/api/`. Handlers only adapt HTTP to the gateway; the gateway keeps
//! every rule.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use heartwood_events::{Change, SessionId, Suspended, Update};
use heartwood_gateway::skills::SkillsService;
use heartwood_gateway::{ProjectContext, SessionGateway};
use tokio::sync::{broadcast, mpsc};

use crate::capability::COOKIE;
use crate::commands::{self, Routed};
use crate::ingress::{Admitted, IngressPolicy};

/// Most bytes of a request body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What every request handler shares.
pub struct AppState {
    /// The project's gateway.
    pub gateway: SessionGateway,
    /// The project.
    pub project: ProjectContext,
    /// The ingress policy.
    pub policy: IngressPolicy,
    /// Requests that passed the policy (for tests: refused ones never reach a handler).
    pub admitted: AtomicU64,
    /// The session ids this server handed out.
    pub minted: crate::minted::MintedIds,
}

impl AppState {
    /// The state for serving `project` under `policy`.
    pub fn new(project: ProjectContext, policy: IngressPolicy) -> Self {
        AppState {
            gateway: SessionGateway::new(project.clone()),
            project,
            policy,
            admitted: AtomicU64::new(0),
            minted: Default::default(),
        }
    }

    /// Session `id` from a request path, if the API serves it: minted here or on disk.
    /// Anything else is 400 (not an id) or 404 (an id nobody registered).
    pub(crate) fn known(&self, id: &str) -> Result<SessionId, (StatusCode, String)> {
        let Ok(id) = SessionId::parse(id) else {
            return Err((StatusCode::BAD_REQUEST, "not a session id".into()));
        };
        if self.minted.contains(&id) || self.gateway.exists(&id) {
            Ok(id)
        } else {
            Err((
                StatusCode::NOT_FOUND,
                "no such session: mint an id with POST api/sessions, or list them with GET \
                 api/sessions"
                    .into(),
            ))
        }
    }
}

/// The most sessions the list returns (most recently active first).
const LISTED_SESSIONS: usize = 200;

/// The router: everything goes through [`entry`].
pub fn router(state: Arc<AppState>) -> Router {
    Router::new().fallback(entry).with_state(state)
}

async fn entry(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                v.to_str().unwrap_or("\u{fffd}").to_owned(),
            )
        })
        .collect();
    // An absolute-form target (`GET http://host/path`) goes to the policy whole, which
    // refuses it: only the Host header may name the host.
    let uri = request.uri();
    let target = match uri.authority() {
        Some(_) => uri.to_string(),
        None => uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
    };
    let method = request.method().as_str().to_owned();
    let admitted = match app.policy.admit(&method, &target, &headers, peer.ip()) {
        Ok(admitted) => admitted,
        Err(refused) => {
            let status = StatusCode::from_u16(refused.status).unwrap_or(StatusCode::BAD_REQUEST);
            return (status, format!("{}\n", refused.reason)).into_response();
        }
    };
    app.admitted.fetch_add(1, Ordering::SeqCst);
    if admitted.exchange_token {
        return exchange(&app);
    }
    if let ["api", "sessions", id, "ws"] = admitted
        .route
        .trim_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        let id = (*id).to_owned();
        let since = since_of(&admitted);
        let (mut parts, _) = request.into_parts();
        let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &app).await {
            Ok(upgrade) => upgrade,
            Err(rejection) => return rejection.into_response(),
        };
        let opened = Arc::clone(&app);
        let feed = tokio::task::spawn_blocking(move || feed(&opened, &id, since)).await;
        return match feed {
            Ok(Ok(feed)) => websocket(feed, upgrade),
            Ok(Err((status, why))) => plain(status, &why),
            Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
        };
    }
    let Some(body) = read_body(request.into_body()).await else {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large",
        );
    };
    // The gateway's calls block (journal appends with fsync, verification, `git`): they run on
    // the blocking pool, never on the runtime's workers.
    // A command that waits for its run to settle waits here, on the runtime, woken by the
    // session's updates: not on the blocking pool, where a long run would hold a thread.
    let routing = Arc::clone(&app);
    match tokio::task::spawn_blocking(move || route(&routing, &method, &admitted, body)).await {
        Ok(Routed::Now(response)) => response,
        Ok(Routed::Settle(settling)) => commands::settled_answer(&app, settling).await,
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
    }
}

/// Most bytes of an oversized body read and discarded before its `413` is sent.
const DRAINED_BYTES: usize = 16 * MAX_BODY_BYTES;

/// Longest an oversized body is read for before its `413` is sent.
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// A request body of at most [`MAX_BODY_BYTES`], or `None` for a longer (or broken) one.
///
/// A longer body is read on and discarded, within bounds, before the caller answers: closing a
/// connection with unread bytes in it resets the connection, and a client still sending its body
/// would then lose the `413` that says why.
async fn read_body(body: Body) -> Option<Bytes> {
    use futures_util::StreamExt;
    let mut chunks = body.into_data_stream();
    let mut collected = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.ok()?;
        if collected.len() + chunk.len() > MAX_BODY_BYTES {
            let mut read = collected.len() + chunk.len();
            let _ = tokio::time::timeout(DRAIN_TIME, async {
                while let Some(Ok(chunk)) = chunks.next().await {
                    read += chunk.len();
                    if read > DRAINED_BYTES {
                        break;
                    }
                }
            })
            .await;
            return None;
        }
        collected.extend_from_slice(&chunk);
    }
    Some(Bytes::from(collected))
}

/// Sets the capability cookie and sends the browser to the same page without the token.
fn exchange(app: &AppState) -> Response {
    let base = app.policy.base_path();
    let cookie = format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path={base}",
        app.policy.capability().reveal()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(location), Ok(cookie)) =
        (HeaderValue::from_str(base), HeaderValue::from_str(&cookie))
    {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

fn since_of(admitted: &Admitted) -> u64 {
    admitted
        .query
        .as_deref()
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("since=")))
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0)
}

/// The same updates as the event stream, over a WebSocket (the policy has checked its Origin).
fn websocket(mut feed: mpsc::Receiver<String>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |mut socket| async move {
        while let Some(text) = feed.recv().await {
            if socket.send(Message::Text(text.into())).await.is_err() {
                return;
            }
        }
    })
}

/// One session's updates as JSON text, in order, for the event stream and the WebSocket alike:
/// the events after `since`, then every update as it happens (durable events the backlog already
/// carried are skipped). One task writes both, so live updates never overtake the backlog.
fn feed(
    app: &Arc<AppState>,
    id: &str,
    since: u64,
) -> Result<mpsc::Receiver<String>, (StatusCode, String)> {
    let session = app.known(id)?;
    let mut updates = app
        .gateway
        .subscribe(&session)
        .map_err(|e| (status_of(&e), e.to_string()))?;
    let first = app
        .gateway
        .snapshot(&session, since)
        .map_err(|e| (status_of(&e), e.to_string()))?;
    let (sender, receiver) = mpsc::channel(256);
    tokio::spawn(async move {
        let mut last = first.revision;
        let backlog = first.events.into_iter().map(|event| Update {
            revision: event.seq.get(),
            transient_revision: 0,
            change: Change::Event { event },
        });
        // A client that connects while the run waits is told so at once, as one that was
        // following when it stopped was.
        let waiting = Suspended::of(&first.projection).map(|suspended| Update {
            revision: first.revision,
            transient_revision: first.transient_revision,
            change: Change::Suspended(suspended),
        });
        for update in backlog.chain(waiting) {
            let Ok(text) = serde_json::to_string(&update) else {
                continue;
            };
            if sender.send(text).await.is_err() {
                return;
            }
        }
        loop {
            let text = match updates.recv().await {
                Ok(update) => {
                    if let Change::Event { event } = &update.change {
                        if event.seq.get() <= last {
                            continue;
                        }
                        last = event.seq.get();
                    }
                    let Ok(text) = serde_json::to_string(&update) else {
                        continue;
                    };
                    text
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let lagged = Update {
                        revision: last,
                        transient_revision: 0,
                        change: Change::Lagged {},
                    };
                    serde_json::to_string(&lagged).unwrap_or_default()
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if sender.send(text).await.is_err() {
                return;
            }
        }
    });
    Ok(receiver)
}

fn route(app: &Arc<AppState>, method: &str, admitted: &Admitted, body: Bytes) -> Routed {
    let parts: Vec<&str> = admitted.route.trim_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("POST", ["api", "sessions", id, "commands"]) => {
            commands::submit(app, id, &body, admitted.actor, commands::waits(admitted))
        }
        ("POST", ["api", "sessions", id, "say"]) => {
            commands::say(app, id, &body, admitted.actor, commands::waits(admitted))
        }
        _ => Routed::Now(respond(app, method, admitted, body)),
    }
}

/// The answer to every request but a command's or typed text's.
fn respond(app: &Arc<AppState>, method: &str, admitted: &Admitted, body: Bytes) -> Response {
    let parts: Vec<&str> = admitted.route.trim_matches('/').split('/').collect();
    let since = since_of(admitted);
    match (method, parts.as_slice()) {
        // That the server is taking requests: answered without reading any session.
        ("GET", ["api", "health"]) => {
            json_response(StatusCode::OK, &serde_json::json!({"ok": true}))
        }
        ("GET", ["api", "status"]) => match heartwood_gateway::startup::plan(&app.project) {
            Ok(plan) => json_response(StatusCode::OK, &plan),
            Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        },
        // ChatGPT sign-in: the code and page to show, and its progress; never a token.
        ("POST", ["api", "signin"]) => match app.gateway.start_sign_in() {
            Ok(pending) => json_response(StatusCode::OK, &pending),
            Err(e) => plain(StatusCode::BAD_GATEWAY, &e.to_string()),
        },
        ("GET", ["api", "signin"]) => match heartwood_gateway::subscription::status() {
            Ok(who) => json_response(
                StatusCode::OK,
                &serde_json::json!({"signed_in": who, "pending": app.gateway.sign_in_pending()}),
            ),
            Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        },
        ("POST", ["api", "signin", "poll"]) => match app.gateway.poll_sign_in() {
            Ok(progress) => json_response(StatusCode::OK, &progress),
            Err(e) => plain(StatusCode::CONFLICT, &e.to_string()),
        },
        ("GET", ["api", "models"]) => {
            match heartwood_gateway::models::ModelDesk::new(&app.project).view() {
                Ok(view) => json_response(StatusCode::OK, &view),
                Err(e) => failure(&e),
            }
        }
        ("GET", ["api", "models", "catalog"]) => {
            match heartwood_gateway::model_catalog::catalog(&app.project) {
                Ok(view) => json_response(StatusCode::OK, &view),
                Err(e) => failure(&e),
            }
        }
        ("POST", ["api", "models", step @ ("review" | "download")]) => {
            catalog_download(app, step, &body)
        }
        ("GET", ["api", "workflows"]) => match heartwood_gateway::workspace::workflow_catalog() {
            Ok(catalog) => json_response(StatusCode::OK, &catalog),
            Err(e) => failure(&e),
        },
        ("GET", ["api", "sessions"]) => match app.gateway.rows(LISTED_SESSIONS) {
            Ok(rows) => json_response(StatusCode::OK, &rows),
            Err(e) => failure(&e),
        },
        // The server mints the id; callers cannot choose one.
        ("POST", ["api", "sessions"]) => json_response(
            StatusCode::CREATED,
            &heartwood_gateway::events::NewSession {
                session: app.minted.mint(),
            },
        ),
        ("GET", ["api", "sessions", id, "snapshot"]) => {
            let id = match app.known(id) {
                Ok(id) => id,
                Err((status, why)) => return plain(status, &why),
            };
            match app.gateway.snapshot(&id, since) {
                Ok(snapshot) => {
                    // A run stopped for a decision is not an error: 202 with the pending set.
                    let status = if Suspended::of(&snapshot.projection).is_some() {
                        StatusCode::ACCEPTED
                    } else {
                        StatusCode::OK
                    };
                    json_response(status, &snapshot)
                }
                Err(e) => failure(&e),
            }
        }
        ("GET", ["api", "workspace", what]) => workspace(app, what, admitted.query.as_deref()),
        ("GET", ["api", "skills"]) => match SkillsService::open(&app.project).catalog() {
            Ok(catalog) => json_response(StatusCode::OK, &catalog),
            Err(e) => failure(&e),
        },
        ("GET", ["api", "skills", "show"]) => {
            let param = |name: &str| query_param(admitted.query.as_deref(), name);
            let Some(name) = param("name") else {
                return plain(StatusCode::BAD_REQUEST, "name= is required");
            };
            match SkillsService::open(&app.project).show(&name, param("source").as_deref()) {
                Ok(detail) => json_response(StatusCode::OK, &detail),
                Err(e) => failure(&e),
            }
        }
        ("POST", ["api", "skills", decision]) => skill_decision(app, decision, &body),
        ("GET", ["api", "sessions", id, "workflow", "figure.svg"]) => figure(app, id),
        ("GET", ["api", "sessions", id, "workflow", "preview"]) => {
            let path = query_param(admitted.query.as_deref(), "path").unwrap_or_default();
            match app.known(id) {
                Ok(id) => match app.gateway.workflow_preview(&id, &path) {
                    Ok(preview) => json_response(StatusCode::OK, &preview),
                    Err(e) => failure(&e),
                },
                Err((status, why)) => plain(status, &why),
            }
        }
        ("GET", ["api", "sessions", id, "events"]) => events(app, id, since),
        // Every session has its own address: the page opens it (a bookmark, a reload).
        ("GET", [""] | ["s", _]) => crate::page::page(app.policy.base_path()),
        _ => plain(StatusCode::NOT_FOUND, "not found"),
    }
}

/// A download from the trusted catalog: `review` (`{"catalog"}`) answers with the exact
/// manifest and its SHA-256; `download` (`{"catalog", "accept_license"}`) starts it once that
/// SHA-256 is the one accepted, and answers at once (`202`): its progress is in `api/models`.
fn catalog_download(app: &Arc<AppState>, step: &str, body: &[u8]) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Asked {
        catalog: String,
        #[serde(default)]
        accept_license: Option<String>,
    }
    let asked: Asked = match serde_json::from_slice(body) {
        Ok(asked) => asked,
        Err(e) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("not a catalog request: {e}"),
            );
        }
    };
    let desk = heartwood_gateway::models::ModelDesk::new(&app.project);
    match (step, asked.accept_license) {
        ("review", _) => match desk.review_catalog(&asked.catalog, None) {
            Ok(review) => json_response(StatusCode::OK, &review),
            Err(e) => failure(&e),
        },
        (_, Some(sha)) => {
            match heartwood_gateway::model_catalog::start_download(
                &app.project,
                &asked.catalog,
                &sha,
            ) {
                Ok(started) => json_response(StatusCode::ACCEPTED, &started),
                Err(e) => failure(&e),
            }
        }
        (_, None) => plain(
            StatusCode::BAD_REQUEST,
            "accept_license is required: review the entry and accept its manifest's SHA-256",
        ),
    }
}

/// The workspace calls: `tree`, `file`, `changes`, `diff`, with `path=` (and `session=` for
/// changes in a project without Git). Read-only; paths are checked by the workspace service.
fn workspace(app: &Arc<AppState>, what: &str, query: Option<&str>) -> Response {
    use heartwood_gateway::workspace::{
        ChangeLimits, DiffLimits, TextLimits, TreeLimits, WorkspaceService,
    };
    let param = |name: &str| query_param(query, name);
    let service = match WorkspaceService::open(&app.project) {
        Ok(s) => s,
        Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let path = param("path").unwrap_or_default();
    let answer = match what {
        "tree" => service
            .tree(&path, TreeLimits::default())
            .map(|t| serde_json::to_value(t).unwrap_or_default()),
        "file" => service
            .text(&path, 1, TextLimits::default())
            .map(|t| serde_json::to_value(t).unwrap_or_default()),
        "changes" => service
            .changes(param("session").as_deref(), ChangeLimits::default())
            .map(|c| serde_json::to_value(c).unwrap_or_default()),
        "diff" => service
            .diff(&path, DiffLimits::default())
            .map(|d| serde_json::to_value(d).unwrap_or_default()),
        // One changed file as the workspace view words it: against HEAD, or without Git what
        // the session's edits of it changed.
        "change_diff" => service
            .change_diff(param("session").as_deref(), &path)
            .map(|text| serde_json::json!({"path": path, "text": text})),
        _ => return plain(StatusCode::NOT_FOUND, "not found"),
    };
    match answer {
        Ok(value) => json_response(StatusCode::OK, &value),
        Err(e) => plain(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
    }
}

/// A decision on a skill: `approve` (the exact `digest` shown), `activate`, `deactivate`; the
/// body is `{"name", "source"?, "digest"?}`. Answers with the skill's catalog entry.
fn skill_decision(app: &Arc<AppState>, decision: &str, body: &[u8]) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Asked {
        name: String,
        #[serde(default)]
        source: Option<String>,
        #[serde(default)]
        digest: Option<String>,
    }
    let asked: Asked = match serde_json::from_slice(body) {
        Ok(asked) => asked,
        Err(e) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("not a skill decision: {e}"),
            );
        }
    };
    let skills = SkillsService::open(&app.project);
    let source = asked.source.as_deref();
    let answer = match decision {
        "approve" => match &asked.digest {
            Some(digest) => skills.approve(&asked.name, source, digest),
            None => return plain(StatusCode::BAD_REQUEST, "approve needs the digest reviewed"),
        },
        "activate" => skills.activate(&asked.name, source),
        "deactivate" => skills
            .deactivate(&asked.name)
            .and_then(|_| skills.show(&asked.name, source).map(|d| d.view)),
        _ => return plain(StatusCode::NOT_FOUND, "not found"),
    };
    match answer {
        Ok(view) => json_response(StatusCode::OK, &view),
        Err(e) => failure(&e),
    }
}

/// The value of `name` in a URL query, percent-decoded.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// The picture of the model the session's workflow run has just judged, as SVG (shown with
/// `<img>`, so nothing in it runs): 404 when there is none, 409 when its files changed since.
fn figure(app: &Arc<AppState>, id: &str) -> Response {
    let id = match app.known(id) {
        Ok(id) => id,
        Err((status, why)) => return plain(status, &why),
    };
    match app.gateway.workflow_figure(&id) {
        Ok(Some(figure)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            figure.svg,
        )
            .into_response(),
        Ok(None) => plain(
            StatusCode::NOT_FOUND,
            "there is no model to draw yet: no model stage has been checked",
        ),
        Err(heartwood_gateway::GatewayError::Invalid(why)) => plain(StatusCode::CONFLICT, &why),
        Err(e) => failure(&e),
    }
}

/// The HTTP status for a gateway failure, by its kind (never by its message).
fn status_of(e: &heartwood_gateway::GatewayError) -> StatusCode {
    use heartwood_gateway::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Owned | ErrorKind::Unavailable => StatusCode::CONFLICT,
        ErrorKind::Invalid => StatusCode::BAD_REQUEST,
        ErrorKind::Damaged => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Io => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Backend => StatusCode::BAD_GATEWAY,
    }
}

/// A gateway failure as a plain-text answer with the status of its kind.
pub(crate) fn failure(e: &heartwood_gateway::GatewayError) -> Response {
    plain(status_of(e), &e.to_string())
}

/// Server-sent events: the events after `since`, then every update as it happens.
fn events(app: &Arc<AppState>, id: &str, since: u64) -> Response {
    let feed = match feed(app, id, since) {
        Ok(feed) => feed,
        Err((status, why)) => return plain(status, &why),
    };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        let text = feed.recv().await?;
        Some((Ok::<_, Infallible>(SseEvent::default().data(text)), feed))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(bytes),
        )
            .into_response(),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

pub(crate) fn plain(status: StatusCode, text: &str) -> Response {
    (status, format!("{text}\n")).into_response()
}
