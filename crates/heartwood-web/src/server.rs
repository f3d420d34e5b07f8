//! The HTTP server's frame: the state every route shares and the ingress policy run on every
//! request before routing. The routes themselves are in [`crate::api`], answering in the
//! forms of [`crate::answer`]; they only adapt HTTP to the gateway, which keeps every rule.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use heartwood_events::SessionId;
use heartwood_gateway::{ProjectContext, SessionGateway};

use crate::answer::plain;
use crate::capability::COOKIE;
use crate::ingress::IngressPolicy;

pub use crate::body::MAX_BODY_BYTES;

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

    /// The state for serving `project`'s sessions kept in `store` under `policy`.
    pub fn in_store(
        project: ProjectContext,
        policy: IngressPolicy,
        store: &heartwood_gateway::SessionStoreChoice,
    ) -> Self {
        let mut state = AppState::new(project, policy);
        state.gateway = state.gateway.with_store(store);
        state
    }

    /// Session `id` from a request path, if the API serves it: minted here or on disk.
    /// Anything else is 400 (not an id) or 404 (an id nobody registered).
    pub(crate) fn known(&self, id: &str) -> Result<SessionId, (StatusCode, String)> {
        let Ok(id) = SessionId::parse(id) else {
            return Err((StatusCode::BAD_REQUEST, "not a session id".into()));
        };
        let stored = self
            .gateway
            .exists_checked(&id)
            .map_err(|e| (crate::answer::status_of(&e), e.to_string()))?;
        if self.minted.contains(&id) || stored || self.gateway.was_issued(&id) {
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

/// The router: every request passes the ingress policy ([`admit`]) before the API's routes
/// ([`crate::api`]) see it, with its path made relative to the base path the policy checked.
pub fn router(state: Arc<AppState>) -> Router {
    // The policy wraps the whole API router rather than being one of its layers: it rewrites
    // the path, which must happen before routing.
    let api = crate::api::router().with_state(Arc::clone(&state));
    Router::new()
        .fallback_service(api)
        .layer(middleware::from_fn_with_state(state, admit))
}

/// Who an admitted request acts for, derived from the capability (never from its body).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Actor(pub &'static str);

/// Runs the ingress policy on `request`: a refused request is answered here and reaches no
/// route; an admitted one goes on with its path below the base path and its [`Actor`].
async fn admit(
    State(app): State<Arc<AppState>>,
    mut request: Request,
    next: middleware::Next,
) -> Response {
    let Some(ConnectInfo(peer)) = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .copied()
    else {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "no peer address");
    };
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
    let admitted = match app
        .policy
        .admit(request.method().as_str(), &target, &headers, peer.ip())
    {
        Ok(admitted) => admitted,
        Err(refused) if refused.reason == crate::ingress::PAGE_WITHOUT_CAPABILITY => {
            return crate::answer::sign_in_page(refused.reason);
        }
        Err(refused) => {
            let status = StatusCode::from_u16(refused.status).unwrap_or(StatusCode::BAD_REQUEST);
            return plain(status, refused.reason);
        }
    };
    app.admitted.fetch_add(1, Ordering::SeqCst);
    if admitted.exchange_token {
        return exchange(&app, &admitted.route);
    }
    let relative = match &admitted.query {
        Some(query) => format!("{}?{query}", admitted.route),
        None => admitted.route.clone(),
    };
    match relative.parse::<Uri>() {
        Ok(uri) => *request.uri_mut() = uri,
        Err(_) => return plain(StatusCode::BAD_REQUEST, "the path is ambiguous"),
    }
    request.extensions_mut().insert(Actor(admitted.actor));
    next.run(request).await
}

/// Sets the capability cookie and sends the browser to the same page without the token: a
/// launch link to `s/<id>` lands on that session, not on the start page.
fn exchange(app: &AppState, route: &str) -> Response {
    let base = app.policy.base_path();
    // The route was judged unambiguous (no `..`, `//` or encoding) and starts with `/`.
    let location = format!("{}{route}", base.trim_end_matches('/'));
    let cookie = format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path={base}",
        app.policy.capability().reveal()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(location), Ok(cookie)) = (
        HeaderValue::from_str(&location),
        HeaderValue::from_str(&cookie),
    ) {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}
