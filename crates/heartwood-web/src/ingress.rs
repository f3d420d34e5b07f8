//! The ingress policy: every request is judged here before any route sees it.
//!
//! Three declared modes: direct loopback; a local Jupyter server proxy (a base path and the
//! external host it serves under); an explicitly trusted proxy with one canonical origin and base
//! path. A request is refused with a plain 4xx, and nothing runs, when it comes from a peer the
//! mode does not expect, carries forwarding headers from an untrusted peer, names a Host or Origin
//! the mode does not serve, repeats a security-relevant header, has an ambiguous path (`..`,
//! `//`, backslashes, any percent-encoding), or lacks the launch capability.

use std::net::IpAddr;

use crate::capability::{COOKIE, Capability};

/// How the server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The browser talks to `127.0.0.1:port` directly.
    Loopback,
    /// A Jupyter server proxy on this machine forwards `base_path` to us; `external_host` is the
    /// host (and port) the browser sees, e.g. `hub.example.org`.
    JupyterProxy {
        /// The prefix, e.g. `/user/alice/proxy/8765/`.
        base_path: String,
        /// The host the browser uses.
        external_host: String,
    },
    /// A reverse proxy at a known address forwards `origin` + `base_path` to us.
    TrustedProxy {
        /// The canonical external origin, e.g. `https://heartwood.example.org`.
        origin: String,
        /// The prefix, e.g. `/heartwood/`.
        base_path: String,
        /// The proxy's addresses; no other peer is served.
        proxies: Vec<IpAddr>,
    },
}

/// The policy for one server.
#[derive(Debug, Clone)]
pub struct IngressPolicy {
    mode: Mode,
    port: u16,
    capability: Capability,
}

/// A request the policy admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The path below the base path, starting with `/`.
    pub route: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// Who the request acts for, derived from the capability (never from the request body).
    pub actor: &'static str,
    /// The request carried the capability in `?token=`; answer by setting the cookie and
    /// redirecting to the same page without it.
    pub exchange_token: bool,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The HTTP status.
    pub status: u16,
    /// What was wrong, in plain words (no secrets).
    pub reason: &'static str,
}

/// Headers that must appear at most once.
const SINGLE: [&str; 12] = [
    "host",
    "origin",
    "authorization",
    "cookie",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-prefix",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-protocol",
];

/// Why a page (a bookmarked `s/<id>`, say) opened without the capability is refused: the
/// answer is a page that asks for the launch link and comes back to the same address.
pub const PAGE_WITHOUT_CAPABILITY: &str = "this browser does not hold the launch capability yet; open the URL `heartwood serve` \
     printed (it ends in ?token=…), or paste its token here";

/// The actor every admitted request acts for.
pub const ACTOR: &str = "researcher (launch capability)";

fn refuse(status: u16, reason: &'static str) -> Result<Admitted, Refused> {
    Err(Refused { status, reason })
}

impl IngressPolicy {
    /// The policy for a server on `port` in `mode`.
    pub fn new(mode: Mode, port: u16, capability: Capability) -> Self {
        IngressPolicy {
            mode,
            port,
            capability,
        }
    }

    /// The launch capability (for setting the browser's cookie).
    pub(crate) fn capability(&self) -> &Capability {
        &self.capability
    }

    /// The base path the page and API live under.
    pub fn base_path(&self) -> &str {
        match &self.mode {
            Mode::Loopback => "/",
            Mode::JupyterProxy { base_path, .. } | Mode::TrustedProxy { base_path, .. } => {
                base_path
            }
        }
    }

    /// Judges one request. `headers` are as received (names in any case, repeats kept).
    pub fn admit(
        &self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        peer: IpAddr,
    ) -> Result<Admitted, Refused> {
        let header = |name: &str| {
            headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        // Peer.
        let trusted_peer = match &self.mode {
            Mode::TrustedProxy { proxies, .. } => proxies.contains(&peer),
            _ => peer.is_loopback(),
        };
        if !trusted_peer {
            return refuse(403, "this server does not serve that address");
        }
        // Repeated security headers.
        if SINGLE.iter().any(|name| header(name).len() > 1) {
            return refuse(400, "a security-relevant header appears more than once");
        }
        // Forwarding headers: only from the declared proxy.
        let forwarded = headers.iter().any(|(n, _)| {
            let n = n.to_ascii_lowercase();
            n == "forwarded" || n.starts_with("x-forwarded-")
        });
        if forwarded && self.mode == Mode::Loopback {
            return refuse(400, "forwarding headers are not accepted from this peer");
        }
        if let (Mode::JupyterProxy { base_path, .. }, Some(prefix)) =
            (&self.mode, header("x-forwarded-prefix").first())
            && base_path.trim_end_matches('/') != prefix.trim_end_matches('/')
        {
            return refuse(
                400,
                "the proxy prefix does not match the configured base path",
            );
        }
        // Host and Origin.
        let Some(host) = header("host").first().map(|h| h.to_ascii_lowercase()) else {
            return refuse(400, "the request names no host");
        };
        let (hosts, origins) = self.expected();
        if !hosts.contains(&host) {
            return refuse(421, "this server does not answer for that host");
        }
        let origin = header("origin").first().map(|o| o.to_ascii_lowercase());
        if let Some(origin) = &origin
            && !origins.contains(origin)
        {
            return refuse(403, "requests from that origin are not accepted");
        }
        let upgrade = !header("upgrade").is_empty();
        if upgrade && origin.is_none() {
            return refuse(403, "a WebSocket upgrade must name its origin");
        }
        // Path: origin-form only.
        if !target.starts_with('/') {
            return refuse(400, "the request target must be a path");
        }
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p, Some(q.to_owned())),
            None => (target, None),
        };
        if ambiguous(path) {
            return refuse(400, "the path is ambiguous");
        }
        let base = self.base_path();
        let route = if path == base.trim_end_matches('/') {
            "/".to_owned()
        } else if let Some(rest) = path.strip_prefix(base.trim_end_matches('/')) {
            if !rest.starts_with('/') {
                return refuse(404, "not found");
            }
            rest.to_owned()
        } else {
            return refuse(404, "not found");
        };
        // Capability.
        let bearer = header("authorization")
            .first()
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::to_owned);
        let cookie = header("cookie").first().and_then(|c| {
            c.split(';')
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| *k == COOKIE)
                .map(|(_, v)| v.to_owned())
        });
        let token = query.as_deref().and_then(|q| {
            q.split('&')
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| *k == "token")
                .map(|(_, v)| v.to_owned())
        });
        let holds = |v: &Option<String>| v.as_deref().is_some_and(|s| self.capability.matches(s));
        if holds(&bearer) || holds(&cookie) {
            return Ok(Admitted {
                route,
                query,
                actor: ACTOR,
                exchange_token: false,
            });
        }
        let page = method == "GET" && !route.starts_with("/api/");
        if page && holds(&token) && !upgrade {
            return Ok(Admitted {
                route,
                query,
                actor: ACTOR,
                exchange_token: true,
            });
        }
        if page && !upgrade {
            return refuse(401, PAGE_WITHOUT_CAPABILITY);
        }
        refuse(
            401,
            "the launch capability is missing or wrong; open the URL `heartwood serve` printed",
        )
    }

    /// The hosts and origins this mode serves.
    fn expected(&self) -> (Vec<String>, Vec<String>) {
        let port = self.port;
        let local = [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        let local_origins: Vec<String> = local.iter().map(|h| format!("http://{h}")).collect();
        match &self.mode {
            Mode::Loopback => (local.to_vec(), local_origins),
            Mode::JupyterProxy { external_host, .. } => {
                let host = external_host.to_ascii_lowercase();
                let mut hosts = local.to_vec();
                hosts.push(host.clone());
                let mut origins = local_origins;
                origins.push(format!("http://{host}"));
                origins.push(format!("https://{host}"));
                (hosts, origins)
            }
            Mode::TrustedProxy { origin, .. } => {
                let origin = origin.to_ascii_lowercase();
                let host = origin
                    .split_once("://")
                    .map(|(_, h)| h.to_owned())
                    .unwrap_or_default();
                (vec![host], vec![origin])
            }
        }
    }
}

/// Whether a raw path could mean more than one thing to the components that see it.
fn ambiguous(path: &str) -> bool {
    !path.starts_with('/')
        || path.contains("//")
        || path.contains('\\')
        || path.contains('%')
        || path.chars().any(|c| c.is_control() || c == ' ')
        || path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
}
