//! The startup planner: one read-only look at the project that says which phase it is in and
//! what the researcher should do next. Every interface shows the same plan (the gateway's
//! `startup::plan`, which tells this one what the sessions are). It creates nothing; its only
//! outside action is a TCP connection attempt to the configured model service.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::config::{ProjectConfig, RouteConfig};
use crate::{ProjectContext, ProjectError};

/// How long the planner waits for the model service to accept a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub use heartwood_events::startup::{
    PendingDecision, Phase, RouteSummary, StartupPlan, WorkflowWait,
};

/// What the planner is told of the project's sessions (the gateway reads them; this crate
/// knows no sessions).
#[derive(Debug, Clone, Default)]
pub struct SessionsSeen {
    /// How many sessions the project has.
    pub count: usize,
    /// A session with an append a crash interrupted, which must be recovered first.
    pub interrupted: Option<heartwood_events::SessionId>,
    /// Sessions waiting for a decision, with the command that answers each.
    pub pending_decisions: Vec<PendingDecision>,
    /// Sessions whose run stopped with nobody serving them, with what continues each.
    pub stopped_sessions: Vec<PendingDecision>,
    /// Sessions whose workflow run waits for the researcher, with what continues each.
    pub workflow_waits: Vec<WorkflowWait>,
}

/// Plans startup for `project`, whose sessions are as `sessions` says.
///
/// ```
/// use heartwood_project::startup::{Phase, SessionsSeen, plan};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let folder = tempfile::tempdir()?;
/// let project = heartwood_project::ProjectContext::at(folder.path())?;
/// let plan = plan(&project, SessionsSeen::default());
/// assert_eq!(plan.phase, Phase::ModelRequired);
/// assert!(plan.next_action.starts_with("heartwood model connect"));
/// # Ok(())
/// # }
/// ```
pub fn plan(project: &ProjectContext, sessions: SessionsSeen) -> StartupPlan {
    let config = ProjectConfig::load(project);
    let detected = match &config {
        Ok(config) => config.platform(),
        Err(_) => ProjectConfig::default().platform(),
    };
    // A deployment file that cannot be read is said first; meanwhile the plan shows the
    // generic platform, which offers nothing the file might have declared.
    let (platform, platform_error) = match detected {
        Ok(platform) => (platform, None),
        Err(e) => (
            crate::platform::detect(&crate::platform::Surroundings::default(), &[]),
            Some(e.to_string()),
        ),
    };
    let tool_env = config.as_ref().map(|c| c.tool_env(&platform)).ok();
    let scrubbed = tool_env.as_ref().map(|e| e.scrubbed()).unwrap_or_default();
    let hosts = tool_env
        .map(|e| e.network().hosts().to_vec())
        .unwrap_or_default();
    let (phase, explanation, next_action, route) = verdict(
        project,
        sessions.interrupted.as_ref(),
        platform_error,
        config,
        &platform,
    );
    StartupPlan {
        phase,
        explanation,
        next_action,
        route,
        platform,
        sandbox: sandbox_summary(&scrubbed, &hosts),
        sessions: sessions.count,
        pending_decisions: sessions.pending_decisions,
        stopped_sessions: sessions.stopped_sessions,
        state_folder: project.state_folder(),
        // The gateway judges the evidence (it knows reviews); the plan starts without it.
        parallel_review: Default::default(),
        workflow_waits: sessions.workflow_waits,
    }
}

/// What connecting a route takes, as typed.
const CONNECT: &str =
    "heartwood model connect --category compatible --base-url URL --model NAME [--api-key-env VAR]";

/// What the plan says: the phase, why, what to do next, and the route when one is stored.
type Verdict = (Phase, String, String, Option<RouteSummary>);

/// The first thing in the way, in the order a researcher meets them: a session to recover, a
/// folder that is no project, the platform, the route (stored, usable, reachable), the engine.
fn verdict(
    project: &ProjectContext,
    interrupted: Option<&heartwood_events::SessionId>,
    platform_error: Option<String>,
    config: Result<ProjectConfig, ProjectError>,
    platform: &crate::platform::PlatformSummary,
) -> Verdict {
    if let Some(id) = interrupted {
        return (
            Phase::RecoveryRequired,
            format!(
                "session {id} has an append a crash interrupted, waiting for recovery (its record \
                 is intact, the append held whole in its recovery journal); recovering it, or the \
                 next command on that session, completes it"
            ),
            format!("heartwood sessions recover {id}"),
            None,
        );
    }
    if let Some(reason) = not_a_project(project) {
        return (
            Phase::ProjectReview,
            format!("{reason}; Heartwood gives the agent the whole folder it runs in"),
            "cd into the project's own folder and run heartwood there".to_owned(),
            None,
        );
    }
    let connect = CONNECT.to_owned();
    if let Some(why) = platform_error {
        return (
            Phase::ProjectReview,
            why,
            "fix the platform deployment file (or unset HEARTWOOD_PLATFORM_FILE) and run \
             heartwood again"
                .to_owned(),
            None,
        );
    }
    let config = match config {
        Ok(config) => config,
        Err(e) => return (Phase::ModelRequired, e.to_string(), connect, None),
    };
    let engine = config.backend;
    let Some(route) = config.model else {
        if let Some(transport) = platform.model_transport.as_ref().filter(|t| t.required) {
            return (
                Phase::ConnectionRequired,
                format!(
                    "this platform ({}) requires its own model transport ({} at {}), and no \
                     route is connected yet",
                    platform.platform.as_str(),
                    transport.model,
                    transport.base_url
                ),
                "heartwood model connect --category research".to_owned(),
                None,
            );
        }
        return (
            Phase::ModelRequired,
            "no model is connected to this project yet".to_owned(),
            connect,
            None,
        );
    };
    let mut summary = summarize(&route, platform);
    summary.inherited_from.clone_from(&config.route_from_user);
    if let Some(blocked) = unusable(&route, platform, &summary)
        .or_else(|| unreachable(project, &route, engine, &summary))
    {
        return blocked;
    }
    let inherited = config
        .route_from_user
        .as_deref()
        .map(|path| format!(" (your default route, from {path})"))
        .unwrap_or_default();
    (
        Phase::Ready,
        format!(
            "model {} at {} is reachable{inherited}; new sessions run on the {} engine",
            route.model,
            route.display_url(),
            engine.name()
        ),
        "run heartwood to open the terminal interface, or heartwood exec \"task\"".to_owned(),
        Some(summary),
    )
}

/// Why the stored route cannot be used here as it stands: invalid, refused by the platform,
/// a key or a sign-in missing.
fn unusable(
    route: &RouteConfig,
    platform: &crate::platform::PlatformSummary,
    summary: &RouteSummary,
) -> Option<Verdict> {
    let summary = summary.clone();
    let connect = CONNECT.to_owned();
    if let Err(e) = route.validate() {
        let explanation = format!("the stored model route cannot be used: {e}");
        return Some((Phase::ModelRequired, explanation, connect, Some(summary)));
    }
    if let Some(why) = crate::platform::refusal(platform, route) {
        let transport_required = platform
            .model_transport
            .as_ref()
            .is_some_and(|t| t.required);
        return Some((
            if transport_required {
                Phase::ConnectionRequired
            } else {
                Phase::ModelRequired
            },
            format!("the stored model route cannot be used here: {why}"),
            if transport_required {
                "heartwood model connect --category research".to_owned()
            } else {
                connect
            },
            Some(summary),
        ));
    }
    let unset_key = route
        .api_key_env
        .as_ref()
        .filter(|env| std::env::var(env).map_or(true, |v| v.is_empty()));
    if let Some(env) = unset_key {
        return Some((
            Phase::CredentialRequired,
            format!("the model route reads its API key from {env}, which is not set in this shell"),
            format!("export {env}=<your key> and run heartwood again"),
            Some(summary),
        ));
    }
    if let Some(why) = crate::subscription::not_signed_in(route) {
        return Some((
            Phase::CredentialRequired,
            why,
            "heartwood model signin".to_owned(),
            Some(summary),
        ));
    }
    None
}

/// Why the route cannot be reached now: a missing recording, a local model not ready, a
/// service that does not answer, or an engine not installed.
fn unreachable(
    project: &ProjectContext,
    route: &RouteConfig,
    engine: crate::config::BackendKind,
    summary: &RouteSummary,
) -> Option<Verdict> {
    let summary = summary.clone();
    let connect = CONNECT.to_owned();
    if let Some(recording) = route.recording_path(project.root()) {
        return Some(if recording.is_file() {
            (
                Phase::Ready,
                format!(
                    "the agent replays the recorded model replies in {}",
                    recording.display()
                ),
                "run heartwood to open the terminal interface, or heartwood exec \"task\""
                    .to_owned(),
                Some(summary),
            )
        } else {
            (
                Phase::ModelRequired,
                format!(
                    "the replay recording {} does not exist",
                    recording.display()
                ),
                connect,
                Some(summary),
            )
        });
    }
    if route.category == crate::config::RouteCategory::Local
        && let Some((stored, why, next)) = crate::models::not_ready(project, route)
    {
        let phase = if stored {
            Phase::ComputeRequired
        } else {
            Phase::ModelRequired
        };
        return Some((phase, why, next, Some(summary)));
    }
    // A local route's runtime was just asked for its models; connecting again proves nothing.
    let reached = if route.category == crate::config::RouteCategory::Local {
        Ok(())
    } else {
        probe(&route.base_url)
    };
    if let Err(why) = reached {
        return Some((
            Phase::ConnectionRequired,
            format!(
                "the model service at {} cannot be reached ({why})",
                route.display_url()
            ),
            "start the model service, or connect another one with heartwood model connect"
                .to_owned(),
            Some(summary),
        ));
    }
    if engine == crate::config::BackendKind::OpenHands
        && let Err(why) = heartwood_openhands::Installation::find()
    {
        return Some((
            Phase::ComputeRequired,
            format!("this project's sessions run on OpenHands, which is not ready: {why}"),
            "heartwood backend install openhands (or heartwood backend use native)".to_owned(),
            Some(summary),
        ));
    }
    None
}

fn summarize(route: &RouteConfig, platform: &crate::platform::PlatformSummary) -> RouteSummary {
    let boundary = crate::platform::boundary(platform, route);
    RouteSummary {
        category: route.category.as_str().to_owned(),
        base_url: route.display_url(),
        model: route.model.clone(),
        api_key_env: route.api_key_env.clone(),
        credential_boundary: boundary,
        low_risk_automation: crate::platform::automation(
            boundary,
            crate::platform::credential_name(route).as_deref(),
        ),
        prices: route.prices,
        inherited_from: None,
    }
}

fn not_a_project(project: &ProjectContext) -> Option<String> {
    let root = project.root();
    if root.parent().is_none() {
        return Some("this is the filesystem root".to_owned());
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from)?;
    let same = home
        .canonicalize()
        .ok()
        .zip(root.canonicalize().ok())
        .is_some_and(|(h, r)| h == r);
    same.then(|| "this is your home folder".to_owned())
}

/// Why a model service could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum Unreachable {
    /// The URL names no scheme Heartwood connects with.
    #[error("the base URL has no http:// or https:// scheme")]
    NoScheme,
    /// The host name did not resolve.
    #[error("cannot resolve {target}: {source}")]
    Resolve {
        /// `host:port`.
        target: String,
        /// What the resolver said.
        #[source]
        source: std::io::Error,
    },
    /// The host name resolved to no address.
    #[error("{target} has no address")]
    NoAddress {
        /// `host:port`.
        target: String,
    },
    /// No address accepted a connection; the last one tried, and why.
    #[error("{address}: {source}")]
    Refused {
        /// The address tried last.
        address: std::net::SocketAddr,
        /// What the connection attempt said.
        #[source]
        source: std::io::Error,
    },
}

/// Opens (and closes) a TCP connection to the URL's host and port. Sends nothing.
pub fn probe(base_url: &str) -> Result<(), Unreachable> {
    let (default_port, rest) = match base_url.split_once("://") {
        Some(("https", rest)) => (443, rest),
        Some(("http", rest)) => (80, rest),
        _ => return Err(Unreachable::NoScheme),
    };
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty())
        && !authority.ends_with(']');
    let target = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    };
    let addresses: Vec<_> = match target.to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(source) => return Err(Unreachable::Resolve { target, source }),
    };
    let mut last = Unreachable::NoAddress { target };
    for address in addresses {
        match TcpStream::connect_timeout(&address, PROBE_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(source) => last = Unreachable::Refused { address, source },
        }
    }
    Err(last)
}

/// How this machine confines tool processes, as the plan says it; `scrubbed` names the
/// allowed variables whose values carry a credential that commands get without, `hosts` the
/// hosts they may reach through Heartwood's proxy.
fn sandbox_summary(
    scrubbed: &[String],
    hosts: &[String],
) -> heartwood_events::startup::SandboxSummary {
    let found = heartwood_agent::tools::sandbox::support();
    let scrubbed = match scrubbed {
        [] => String::new(),
        names => format!(
            "; {} reach commands with the credential in their value taken out",
            names.join(", ")
        ),
    };
    heartwood_events::startup::SandboxSummary {
        enforcing: found.enforcing,
        detail: if found.enforcing {
            format!(
                "commands run confined ({}): read-only when run without review, writing only \
                 inside the project when you allow them; they see the system's directories, \
                 the project and the data mounts listed here, nothing else of this machine; {}; \
                 limits: {}{scrubbed}",
                found.detail,
                if hosts.is_empty() {
                    "no network".to_owned()
                } else {
                    format!(
                        "the network only to {} through Heartwood's proxy, each connection \
                         reported with the command's result",
                        hosts.join(", ")
                    )
                },
                heartwood_agent::tools::sandbox::Limits::default().describe()
            )
        } else {
            format!(
                "commands cannot be confined here: {}. They run unsandboxed, and only after \
                 your decision (low-risk automation is off)",
                found.detail
            )
        },
    }
}
