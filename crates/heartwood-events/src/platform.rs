//! The research environment as every interface shows it: which platform adapter was selected
//! and why, and what it supplies (model categories, compute, its own model transport, ingress
//! modes, credential boundaries, data mounts, the tools' environment allowlist, the default
//! action policy). The gateway's platform module fills it in; this module owns its wire shape.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ActionPolicy;

/// Where the model credential lives relative to the agent's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CredentialBoundary {
    /// The route needs no secret.
    CredentialFree,
    /// The secret is in Heartwood's environment and removed from what tools can see; the model
    /// client and the tools still share an operating-system identity.
    ApplicationScrubbed,
    /// The platform's own model transport, authorized outside Heartwood: Heartwood and its
    /// tools hold no secret for it. Trusted only after a live synthetic qualification request.
    PlatformIsolated,
}

impl CredentialBoundary {
    /// The name as serialized and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialBoundary::CredentialFree => "credential_free",
            CredentialBoundary::ApplicationScrubbed => "application_scrubbed",
            CredentialBoundary::PlatformIsolated => "platform_isolated",
        }
    }
}

/// A platform adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlatformKind {
    /// A laptop or workstation (the default).
    Generic,
    /// Terra (the Broad Institute and Verily's platform; Jupyter runtimes run by Leonardo).
    Terra,
    /// Carina (a secure research computing environment for high-risk data).
    Carina,
}

impl PlatformKind {
    /// The name as written in a deployment file and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            PlatformKind::Generic => "generic",
            PlatformKind::Terra => "terra",
            PlatformKind::Carina => "carina",
        }
    }
}

/// How `heartwood serve` may be reached here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum IngressOffer {
    /// The browser talks to 127.0.0.1 directly.
    Loopback,
    /// Through the Jupyter server's proxy: `base_path`, when known, names the server's prefix
    /// (the port follows as `proxy/<port>/`); `external_host`, when the deployment declares
    /// it, is the host the browser uses.
    JupyterProxy {
        /// The Jupyter server's base path, e.g. `/user/alice/`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_path: Option<String>,
        /// The host the browser uses, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        external_host: Option<String>,
    },
    /// Through a reverse proxy, with the values the deployment declares (when it does; else
    /// `heartwood serve` is given them).
    TrustedProxy {
        /// The proxy's canonical origin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<String>,
        /// The path it serves Heartwood under.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_path: Option<String>,
        /// The proxy's addresses.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        proxies: Vec<String>,
    },
}

impl IngressOffer {
    /// The mode's name, as `heartwood serve` says it.
    pub fn name(&self) -> &'static str {
        match self {
            IngressOffer::Loopback => "loopback",
            IngressOffer::JupyterProxy { .. } => "jupyter_proxy",
            IngressOffer::TrustedProxy { .. } => "trusted_proxy",
        }
    }

    /// The offer in a few words, as every interface shows it.
    pub fn describe(&self) -> String {
        match self {
            IngressOffer::Loopback => "loopback".to_owned(),
            IngressOffer::JupyterProxy {
                base_path: Some(base),
                ..
            } => format!("the Jupyter proxy under {base}proxy/<port>/"),
            IngressOffer::JupyterProxy {
                base_path: None, ..
            } => "a Jupyter proxy (with --jupyter-prefix)".to_owned(),
            IngressOffer::TrustedProxy {
                origin: Some(origin),
                base_path: Some(base),
                ..
            } => format!("the declared proxy {origin}{base}"),
            IngressOffer::TrustedProxy { .. } => {
                "a trusted proxy (with --trusted-proxy)".to_owned()
            }
        }
    }
}

/// A path outside the project the agent may read (and write, when declared writable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DataMount {
    /// The absolute path.
    pub path: String,
    /// The agent's file editor may write inside it.
    #[serde(default)]
    pub writable: bool,
    /// What it holds, for the researcher.
    #[serde(default)]
    pub purpose: String,
    /// Who declared it: `platform`, the deployment file's path, or `project`.
    #[serde(default)]
    pub declared_by: String,
    /// It exists now (a mount that is not there is shown, and not given to the agent).
    #[serde(default)]
    pub present: bool,
}

/// The platform's own model transport.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelTransport {
    /// Its OpenAI-compatible base URL.
    pub base_url: String,
    /// The model it serves.
    pub model: String,
    /// Every model route on this platform must go through it.
    pub required: bool,
}

/// The selected platform adapter and what it supplies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlatformSummary {
    /// The adapter.
    pub platform: PlatformKind,
    /// Why this adapter was selected (the markers seen, or the deployment file that forces it).
    pub detected_by: String,
    /// The model route categories allowed here.
    pub route_categories: Vec<String>,
    /// Whether this machine may run a model itself.
    pub local_compute: bool,
    /// The platform's own model transport, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_transport: Option<ModelTransport>,
    /// The ingress modes `heartwood serve` may use, the first proposed.
    pub ingress: Vec<IngressOffer>,
    /// The credential boundaries a route may have here.
    pub credential_boundaries: Vec<CredentialBoundary>,
    /// Paths outside the project the agent may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_mounts: Vec<DataMount>,
    /// Environment variables the platform adds to the tools' allowlist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_env_allow: Vec<String>,
    /// Hosts the platform lets confined commands reach, through Heartwood's proxy only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// The action policy a new session starts with unless one is chosen.
    pub default_policy: ActionPolicy,
    /// The platform in one line, as every interface shows it.
    pub headline: String,
}

impl PlatformSummary {
    /// The platform in one line: which adapter, why, and the mounts the agent is given (the
    /// gateway fills [`PlatformSummary::headline`] with it).
    pub fn describe(&self) -> String {
        let mounts = self.data_mounts.iter().filter(|m| m.present).count();
        let mounts = match mounts {
            0 => String::new(),
            1 => "; 1 data mount".to_owned(),
            n => format!("; {n} data mounts"),
        };
        format!(
            "Platform: {} ({}){mounts}",
            self.platform.as_str(),
            self.detected_by
        )
    }
}
