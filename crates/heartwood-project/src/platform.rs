//! Platform adapters: which research environment Heartwood runs in, and what it supplies.
//!
//! An adapter is data, not code: Generic, Terra and Carina differ only in what they detect and
//! the values they supply (model categories, local compute, the platform's own model
//! transport, ingress modes, credential boundaries, data mounts, the tools' environment
//! allowlist, the default action policy), so each is one function from what it sees to a
//! [`PlatformSummary`]. The summary is the one description every part of the gateway consults
//! (the startup plan, the route check before an agent starts, the tools' environment and
//! mounts, `heartwood serve`'s ingress), and it is what every interface shows. A trait with
//! three implementations would put the same fields behind methods and make the description
//! harder to show whole.
//!
//! Detection reads only marker variables and the deployment file
//! (`$HEARTWOOD_PLATFORM_FILE`, else `/etc/heartwood/platform.toml`), which a platform's
//! operators write to force an adapter and supply exact values (a proxy's host, a model
//! transport, mounts). See `docs/platforms.md` for each adapter's sources.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use serde::Deserialize;

use crate::config::{RouteCategory, RouteConfig};
use crate::{PlatformRefusal, ProjectError};
use heartwood_events::ActionPolicy;

pub use heartwood_events::platform::{
    DataMount, IngressOffer, ModelTransport, PlatformKind, PlatformSummary,
};
pub use heartwood_events::startup::{AutomationAllowance, CredentialBoundary};

/// Where the deployment file is looked for when `$HEARTWOOD_PLATFORM_FILE` is not set.
pub const DEPLOYMENT_FILE: &str = "/etc/heartwood/platform.toml";

/// The variables Terra's notebook service (Leonardo) sets in every Jupyter runtime, which
/// researchers' own scripts read (`os.getenv("WORKSPACE_BUCKET")`); detection needs the first
/// two and a runtime name.
const TERRA_VARIABLES: [&str; 7] = [
    "GOOGLE_PROJECT",
    "WORKSPACE_BUCKET",
    "WORKSPACE_NAME",
    "WORKSPACE_NAMESPACE",
    "CLUSTER_NAME",
    "RUNTIME_NAME",
    "OWNER_EMAIL",
];

/// The variable a JupyterHub single-user server sets to its URL prefix (`/user/alice/`).
const JUPYTERHUB_PREFIX: &str = "JUPYTERHUB_SERVICE_PREFIX";

pub use crate::config::MountDeclaration;

/// A trusted reverse proxy, as a deployment file declares it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedProxyDeclaration {
    /// The proxy's canonical external origin.
    pub origin: String,
    /// The path it serves Heartwood under.
    pub base_path: String,
    /// The proxy's addresses.
    pub proxies: Vec<IpAddr>,
}

/// The platform's model transport, as a deployment file declares it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportDeclaration {
    /// Its OpenAI-compatible base URL.
    pub base_url: String,
    /// The model it serves.
    pub model: String,
    /// Every model route must go through it (default: yes).
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

/// The deployment file: what a platform's operators declare. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Forces an adapter.
    pub platform: Option<PlatformKind>,
    /// Replaces the adapter's model route categories.
    pub route_categories: Option<Vec<RouteCategory>>,
    /// Whether a model may run on this machine.
    pub local_compute: Option<bool>,
    /// The platform's own model transport.
    pub model_transport: Option<TransportDeclaration>,
    /// Paths outside projects the agent may read.
    #[serde(default)]
    pub data_mounts: Vec<MountDeclaration>,
    /// Variables added to the tools' environment allowlist.
    #[serde(default)]
    pub tool_env_allow: Vec<String>,
    /// Hosts confined commands may reach through Heartwood's proxy.
    #[serde(default)]
    pub network: Vec<String>,
    /// The host (and port) browsers use to reach the Jupyter server.
    pub jupyter_external_host: Option<String>,
    /// Replaces the Jupyter server's base path the adapter derives.
    pub jupyter_base_path: Option<String>,
    /// A reverse proxy `heartwood serve` may sit behind.
    pub trusted_proxy: Option<TrustedProxyDeclaration>,
    /// The action policy new sessions start with unless one is chosen.
    pub default_policy: Option<ActionPolicy>,
}

/// What detection looks at: marker variables, and the deployment file with its path.
#[derive(Debug, Clone, Default)]
pub struct Surroundings {
    variables: BTreeMap<String, String>,
    deployment: Option<(String, Deployment)>,
}

impl Surroundings {
    /// This process's environment and deployment file. A deployment file that exists and
    /// cannot be read or parsed is an error: guessing past it could give the agent a mount or
    /// a model the operators did not declare.
    pub fn of_this_process() -> Result<Self, ProjectError> {
        let variables = TERRA_VARIABLES
            .iter()
            .chain(&[JUPYTERHUB_PREFIX])
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        let path = std::env::var("HEARTWOOD_PLATFORM_FILE")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEPLOYMENT_FILE.to_owned());
        let deployment = match std::fs::read_to_string(&path) {
            Ok(text) => Some((path.clone(), parse_deployment(&path, &text)?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ProjectError::io(
                    format!("cannot read the platform deployment file {path}"),
                    e,
                ));
            }
        };
        Ok(Surroundings {
            variables,
            deployment,
        })
    }

    /// Surroundings made of the given variables and deployment (for tests and tools that
    /// simulate a platform).
    pub fn simulated(variables: &[(&str, &str)], deployment: Option<Deployment>) -> Self {
        Surroundings {
            variables: variables
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            deployment: deployment.map(|d| ("deployment file".to_owned(), d)),
        }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.variables
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// Parses a deployment file's text; the error names the file and the problem.
pub fn parse_deployment(path: &str, text: &str) -> Result<Deployment, ProjectError> {
    toml::from_str(text).map_err(|source| ProjectError::Malformed {
        file: format!("the platform deployment file {path}"),
        source: Box::new(source),
        fix: "correct it, or set HEARTWOOD_PLATFORM_FILE to another",
    })
}

/// The platform for these surroundings, with `project_mounts` (the project's own
/// declarations) added to the platform's.
pub fn detect(surroundings: &Surroundings, project_mounts: &[MountDeclaration]) -> PlatformSummary {
    let deployment = surroundings.deployment.as_ref();
    let declared = deployment.map(|(_, d)| d);
    let terra_runtime = surroundings
        .var("CLUSTER_NAME")
        .or_else(|| surroundings.var("RUNTIME_NAME"));
    let terra = match (
        surroundings.var("GOOGLE_PROJECT"),
        surroundings.var("WORKSPACE_BUCKET"),
        terra_runtime,
    ) {
        (Some(project), Some(_), Some(runtime)) => Some((project, runtime)),
        _ => None,
    };
    let (kind, detected_by) = match (declared.and_then(|d| d.platform), terra) {
        (Some(kind), _) => (
            kind,
            format!(
                "{} says so",
                deployment.map_or("the deployment file", |(p, _)| p.as_str())
            ),
        ),
        (None, Some(_)) => (
            PlatformKind::Terra,
            "GOOGLE_PROJECT, WORKSPACE_BUCKET and a runtime name (CLUSTER_NAME or RUNTIME_NAME) \
             are set, as Terra's notebook service sets them in its Jupyter runtimes"
                .to_owned(),
        ),
        (None, None) => (
            PlatformKind::Generic,
            "no platform's markers are set and no deployment file selects one".to_owned(),
        ),
    };
    let transport = declared
        .and_then(|d| d.model_transport.as_ref())
        .map(|t| ModelTransport {
            base_url: t.base_url.trim_end_matches('/').to_owned(),
            model: t.model.clone(),
            required: t.required,
        });

    // What each adapter supplies by itself.
    let mut categories = match kind {
        PlatformKind::Generic | PlatformKind::Terra => vec![
            RouteCategory::Hosted,
            RouteCategory::Subscription,
            RouteCategory::Compatible,
        ],
        // A platform for high-risk data sends nothing to outside providers unless its
        // operators say otherwise.
        PlatformKind::Carina => vec![RouteCategory::Compatible],
    };
    let jupyter_base = match kind {
        // Leonardo serves each runtime's Jupyter under /notebooks/<project>/<runtime>/.
        PlatformKind::Terra => {
            terra.map(|(project, runtime)| format!("/notebooks/{project}/{runtime}/"))
        }
        PlatformKind::Generic | PlatformKind::Carina => {
            surroundings.var(JUPYTERHUB_PREFIX).map(slashed)
        }
    };
    let tool_env_allow: Vec<String> = match kind {
        PlatformKind::Terra => TERRA_VARIABLES.iter().map(|v| v.to_string()).collect(),
        PlatformKind::Generic | PlatformKind::Carina => Vec::new(),
    };

    // What the deployment adds or replaces.
    if transport.is_some() {
        categories.push(RouteCategory::Research);
    }
    categories.push(RouteCategory::Replay);
    let local_compute = declared.and_then(|d| d.local_compute).unwrap_or(true);
    // A model Heartwood runs on this machine sends nothing anywhere; it needs only the compute.
    if local_compute {
        categories.push(RouteCategory::Local);
    }
    if let Some(declared) = declared.and_then(|d| d.route_categories.clone()) {
        categories = declared;
    }
    let ingress = ingress_offers(kind, declared, jupyter_base);
    let mut credential_boundaries = vec![
        CredentialBoundary::CredentialFree,
        CredentialBoundary::ApplicationScrubbed,
    ];
    if transport.is_some() {
        credential_boundaries.push(CredentialBoundary::PlatformIsolated);
    }
    let data_mounts = data_mounts(deployment, project_mounts);
    let mut allow = tool_env_allow;
    allow.extend(
        declared
            .map(|d| d.tool_env_allow.clone())
            .unwrap_or_default(),
    );
    let mut summary = PlatformSummary {
        platform: kind,
        detected_by,
        route_categories: categories.iter().map(|c| c.as_str().to_owned()).collect(),
        local_compute,
        model_transport: transport,
        ingress,
        credential_boundaries,
        data_mounts,
        tool_env_allow: allow,
        network: declared.map(|d| d.network.clone()).unwrap_or_default(),
        default_policy: declared
            .and_then(|d| d.default_policy)
            .unwrap_or(ActionPolicy::AlwaysReview),
        headline: String::new(),
    };
    summary.headline = summary.describe();
    summary
}

/// How the page may be reached on a platform of `kind`: its adapter's offers (`jupyter_base`
/// is where its Jupyter proxy serves, when it has one) with the deployment's declarations.
fn ingress_offers(
    kind: PlatformKind,
    declared: Option<&Deployment>,
    jupyter_base: Option<String>,
) -> Vec<IngressOffer> {
    let jupyter_base = declared
        .and_then(|d| d.jupyter_base_path.as_deref())
        .map(slashed)
        .or(jupyter_base);
    let trusted_proxy = declared
        .and_then(|d| d.trusted_proxy.as_ref())
        .map(|proxy| IngressOffer::TrustedProxy {
            origin: Some(proxy.origin.trim_end_matches('/').to_owned()),
            base_path: Some(slashed(&proxy.base_path)),
            proxies: proxy.proxies.iter().map(IpAddr::to_string).collect(),
        });
    let jupyter = IngressOffer::JupyterProxy {
        external_host: declared.and_then(|d| d.jupyter_external_host.clone()),
        base_path: jupyter_base,
    };
    let in_jupyter = matches!(
        &jupyter,
        IngressOffer::JupyterProxy {
            base_path: Some(_),
            ..
        }
    );
    match kind {
        // On Terra the browser reaches a runtime only through Leonardo's proxy: loopback would
        // serve nobody, and nothing else may expose the runtime.
        PlatformKind::Terra => vec![jupyter],
        // A platform for high-risk data: loopback or its Jupyter proxy, and a reverse proxy
        // only where its operators declared one.
        PlatformKind::Carina => [
            Some(jupyter).filter(|_| in_jupyter),
            Some(IngressOffer::Loopback),
            trusted_proxy,
        ]
        .into_iter()
        .flatten()
        .collect(),
        // A workstation: every mode, declared by the researcher (`heartwood serve`'s flags) or
        // the deployment file; inside a JupyterHub server its proxy comes first, since the
        // browser is elsewhere.
        PlatformKind::Generic => {
            let proxy = trusted_proxy.unwrap_or(IngressOffer::TrustedProxy {
                origin: None,
                base_path: None,
                proxies: Vec::new(),
            });
            if in_jupyter {
                vec![jupyter, IngressOffer::Loopback, proxy]
            } else {
                vec![IngressOffer::Loopback, jupyter, proxy]
            }
        }
    }
}

/// The data mounts the deployment and the project declare, each with who declared it and
/// whether it is there.
fn data_mounts(
    deployment: Option<&(String, Deployment)>,
    project_mounts: &[MountDeclaration],
) -> Vec<DataMount> {
    let deployment_name = deployment.map_or(String::new(), |(p, _)| p.clone());
    let declared = deployment.map(|(_, d)| d);
    declared
        .map(|d| d.data_mounts.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|m| (m, deployment_name.as_str()))
        .chain(project_mounts.iter().map(|m| (m, "project")))
        .map(|(m, by)| DataMount {
            path: m.path.clone(),
            writable: m.writable,
            purpose: m.purpose.clone(),
            declared_by: by.to_owned(),
            present: Path::new(&m.path).is_absolute() && Path::new(&m.path).is_dir(),
        })
        .collect()
}

/// A base path as every ingress mode keeps it: `/path/` from `path`, `/path` or `path/`, and
/// `/` (never `//`) from `/` or nothing.
pub fn slashed(path: &str) -> String {
    let inner = path.trim_matches('/');
    if inner.is_empty() {
        "/".to_owned()
    } else {
        format!("/{inner}/")
    }
}

/// Why `heartwood serve` may not use the ingress mode named `mode` here (`None`: it may).
pub fn ingress_refusal(platform: &PlatformSummary, mode: &str) -> Option<String> {
    if platform.ingress.iter().any(|offer| offer.name() == mode) {
        return None;
    }
    Some(format!(
        "this platform ({}) does not offer the {mode} ingress mode; it offers {}",
        platform.platform.as_str(),
        platform
            .ingress
            .iter()
            .map(IngressOffer::name)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Where the route's credential sits on this platform.
pub fn boundary(platform: &PlatformSummary, route: &RouteConfig) -> CredentialBoundary {
    if route.category == RouteCategory::Research && platform.model_transport.is_some() {
        CredentialBoundary::PlatformIsolated
    } else {
        route.boundary()
    }
}

/// Why `route` cannot be used on this platform (a stale combination: a route saved elsewhere,
/// or before the platform's operators changed what it offers), with the next step.
pub fn refusal(platform: &PlatformSummary, route: &RouteConfig) -> Option<PlatformRefusal> {
    let name = || platform.platform.as_str().to_owned();
    if !platform
        .route_categories
        .iter()
        .any(|c| c == route.category.as_str())
    {
        return Some(PlatformRefusal::Category {
            category: route.category.as_str().to_owned(),
            platform: name(),
            allowed: platform.route_categories.clone(),
        });
    }
    let transport = platform.model_transport.as_ref();
    if route.category == RouteCategory::Research {
        let Some(transport) = transport else {
            return Some(PlatformRefusal::NoTransport(name()));
        };
        if route.base_url.trim_end_matches('/') != transport.base_url
            || route.model != transport.model
        {
            return Some(PlatformRefusal::OtherTransport {
                route_url: route.display_url(),
                route_model: route.model.clone(),
                url: transport.base_url.clone(),
                model: transport.model.clone(),
            });
        }
    } else if let Some(transport) = transport.filter(|t| t.required)
        && route.category != RouteCategory::Replay
    {
        return Some(PlatformRefusal::TransportRequired {
            platform: name(),
            url: transport.base_url.clone(),
        });
    }
    None
}

/// Whether low-risk automation may be chosen with a route of `boundary`; `key` names the
/// route's credential when it has one ("$VAR", or the sign-in's file).
pub fn automation(boundary: CredentialBoundary, key: Option<&str>) -> AutomationAllowance {
    // Automatic runs are confined read-only: where nothing can be confined, none runs.
    let sandbox = heartwood_agent::tools::sandbox::support();
    if !sandbox.enforcing {
        return AutomationAllowance {
            allowed: false,
            reason: format!(
                "commands cannot be confined on this machine ({}); every action set waits for \
                 a decision",
                sandbox.detail
            ),
        };
    }
    match boundary {
        CredentialBoundary::CredentialFree => AutomationAllowance {
            allowed: true,
            reason: "the route needs no secret, so automatically run commands cannot leak one"
                .to_owned(),
        },
        CredentialBoundary::ApplicationScrubbed => AutomationAllowance {
            allowed: false,
            reason: format!(
                "the route's credential ({}) is readable by Heartwood's user, as by every \
                 automatically run command; every action set waits for a decision",
                key.unwrap_or("its key")
            ),
        },
        CredentialBoundary::PlatformIsolated => AutomationAllowance {
            allowed: true,
            reason: "the platform authorizes its model transport outside Heartwood; a live \
                     qualification request is sent before the first automated session"
                .to_owned(),
        },
    }
}

/// How the route's credential is named to people: `$VAR`, or the sign-in's file.
pub fn credential_name(route: &RouteConfig) -> Option<String> {
    match (&route.api_key_env, route.category) {
        (Some(var), _) => Some(format!("${var}")),
        (None, RouteCategory::Subscription) => Some(
            crate::subscription::store()
                .map(|s| format!("the ChatGPT sign-in in {}", s.path().display()))
                .unwrap_or_else(|_| "the ChatGPT sign-in".to_owned()),
        ),
        (None, _) => None,
    }
}

/// The mounts the agent's tools may reach (those present now).
pub fn outside_directories(
    platform: &PlatformSummary,
) -> Vec<heartwood_agent::tools::OutsideDirectory> {
    platform
        .data_mounts
        .iter()
        .filter(|m| m.present)
        .map(|m| heartwood_agent::tools::OutsideDirectory {
            path: m.path.clone().into(),
            writable: m.writable,
            what: format!(
                "data mount {}{}",
                m.path,
                if m.writable {
                    ""
                } else {
                    ", declared read-only"
                }
            ),
        })
        .collect()
}

impl crate::config::ProjectConfig {
    /// The environment the agent's terminal tool starts with in this project on `platform`:
    /// the standard list, the platform's variables and the project's own.
    pub fn tool_env(&self, platform: &PlatformSummary) -> heartwood_agent::tools::ToolEnvironment {
        heartwood_agent::tools::ToolEnvironment::default()
            .allowing(platform.tool_env_allow.clone())
            .allowing(self.tool_env_allow.clone())
            .reaching_hosts(platform.network.iter().chain(&self.network).cloned())
    }

    /// The platform this project runs on, with the project's data mounts.
    pub fn platform(&self) -> Result<PlatformSummary, ProjectError> {
        let surroundings = Surroundings::of_this_process()?;
        Ok(detect(&surroundings, &self.data_mounts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(text: &str) -> Deployment {
        parse_deployment("test", text).expect("valid")
    }

    #[test]
    fn a_laptop_is_generic_and_offers_loopback_only() {
        let p = detect(&Surroundings::simulated(&[], None), &[]);
        assert_eq!(p.platform, PlatformKind::Generic);
        assert_eq!(p.ingress[0], IngressOffer::Loopback);
        assert_eq!(ingress_refusal(&p, "trusted_proxy"), None);
        assert_eq!(
            p.route_categories,
            ["hosted", "subscription", "compatible", "replay", "local"]
        );
        assert!(p.model_transport.is_none());
        assert!(p.detected_by.contains("no platform's markers"));
    }

    #[test]
    fn terra_is_detected_from_leonardo_s_variables_and_proposes_its_proxy_path() {
        let vars = [
            ("GOOGLE_PROJECT", "terra-1234"),
            ("WORKSPACE_BUCKET", "gs://fc-abc"),
            ("CLUSTER_NAME", "saturn-xyz"),
        ];
        let p = detect(&Surroundings::simulated(&vars, None), &[]);
        assert_eq!(p.platform, PlatformKind::Terra);
        assert!(p.detected_by.contains("WORKSPACE_BUCKET"));
        assert_eq!(
            p.ingress,
            vec![IngressOffer::JupyterProxy {
                base_path: Some("/notebooks/terra-1234/saturn-xyz/".into()),
                external_host: None
            }],
            "the browser reaches a Terra runtime only through Leonardo's proxy"
        );
        for refused in ["loopback", "trusted_proxy"] {
            assert!(
                ingress_refusal(&p, refused)
                    .expect("refused")
                    .contains("offers jupyter_proxy")
            );
        }
        assert!(p.tool_env_allow.iter().any(|v| v == "WORKSPACE_BUCKET"));
        // One marker alone is not Terra.
        let partial = detect(
            &Surroundings::simulated(&[("GOOGLE_PROJECT", "p")], None),
            &[],
        );
        assert_eq!(partial.platform, PlatformKind::Generic);
    }

    #[test]
    fn a_deployment_file_forces_carina_and_its_transport_is_required() {
        let d = deployment(
            r#"
platform = "carina"
jupyter_external_host = "carina.example.edu"
[model_transport]
base_url = "http://10.0.0.5:9000/v1/"
model = "platform-llm"
[[data_mounts]]
path = "/nonexistent/cohort"
purpose = "cohort extract"
"#,
        );
        let vars = [(JUPYTERHUB_PREFIX, "/user/alice")];
        let p = detect(&Surroundings::simulated(&vars, Some(d)), &[]);
        assert_eq!(p.platform, PlatformKind::Carina);
        assert_eq!(
            p.route_categories,
            ["compatible", "research", "replay", "local"]
        );
        assert_eq!(
            p.ingress[0],
            IngressOffer::JupyterProxy {
                base_path: Some("/user/alice/".into()),
                external_host: Some("carina.example.edu".into())
            }
        );
        assert!(
            ingress_refusal(&p, "trusted_proxy").is_some(),
            "no reverse proxy was declared for Carina"
        );
        assert!(
            p.credential_boundaries
                .contains(&CredentialBoundary::PlatformIsolated)
        );
        assert!(!p.data_mounts[0].present && !p.data_mounts[0].writable);
        assert!(
            outside_directories(&p).is_empty(),
            "an absent mount is not given"
        );

        let hosted = RouteConfig {
            category: RouteCategory::Hosted,
            api_key_env: Some("OPENAI_API_KEY".into()),
            ..RouteConfig::compatible("https://api.openai.com/v1", "gpt")
        };
        assert!(
            refusal(&p, &hosted)
                .expect("refused")
                .to_string()
                .contains("not allowed")
        );
        let compatible = RouteConfig::compatible("http://localhost:8000/v1", "m");
        assert!(
            refusal(&p, &compatible)
                .expect("refused")
                .to_string()
                .contains("requires its own model transport")
        );
        let research = RouteConfig {
            category: RouteCategory::Research,
            ..RouteConfig::compatible("http://10.0.0.5:9000/v1", "platform-llm")
        };
        assert_eq!(refusal(&p, &research), None);
        assert_eq!(
            boundary(&p, &research),
            CredentialBoundary::PlatformIsolated
        );
        let elsewhere = detect(&Surroundings::simulated(&[], None), &[]);
        assert!(
            refusal(&elsewhere, &research)
                .expect("stale")
                .to_string()
                .contains("not allowed"),
            "a research route saved on Carina is refused where no transport exists"
        );
    }

    #[test]
    fn each_credential_class_decides_low_risk_automation() {
        assert!(automation(CredentialBoundary::CredentialFree, None).allowed);
        let scrubbed = automation(CredentialBoundary::ApplicationScrubbed, Some("$KEY"));
        assert!(!scrubbed.allowed && scrubbed.reason.contains("$KEY"));
        assert!(automation(CredentialBoundary::PlatformIsolated, None).allowed);
    }

    #[test]
    fn a_broken_deployment_file_is_an_error_naming_it() {
        let err = parse_deployment("/etc/heartwood/platform.toml", "platform = \"moon\"")
            .expect_err("unknown platform");
        assert!(err.to_string().contains("/etc/heartwood/platform.toml"));
    }
}
