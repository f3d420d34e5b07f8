//! The session's worker: what it needs read before the lock ([`WorkerKit`]: the usable model
//! route, its configuration and platform, the verified skills), and starting it under the lock
//! from that kit.

use std::sync::Arc;

use heartwood_events::ActionPolicy;

use crate::backend::{BackendError, BackendSpec};
use crate::config::{CredentialBoundary, ProjectConfig, RouteConfig};
use crate::gateway::{SessionGateway, lock};
use crate::live::{Core, Live};
use crate::{GatewayError, ProjectError, worker};

/// Why the agent cannot start, or cannot be served, for a command: a reason for the
/// researcher, recorded as the command's refusal.
#[derive(Debug, thiserror::Error)]
pub(in crate::gateway) enum WorkerRefusal {
    /// The project has no route.
    #[error(
        "no model route is connected; run `heartwood model connect --category compatible \
         --base-url URL --model NAME` first"
    )]
    NotConnected,
    /// The stored route (perhaps edited by hand) is not a route `model connect` would store.
    #[error(
        "the connected model route cannot be used: {0}; connect it again with `heartwood model \
         connect`"
    )]
    Malformed(heartwood_project::RouteRefusal),
    /// The platform refuses the route.
    #[error("the connected model route cannot be used here: {0}")]
    Platform(heartwood_project::PlatformRefusal),
    /// The route's key variable is not set in this process.
    #[error(
        "the model route reads its API key from ${0}, which is not set; set it in this terminal \
         and try again"
    )]
    KeyNotSet(String),
    /// A subscription route with nobody signed in.
    #[error("{0}; run `heartwood model signin` and try again")]
    NotSignedIn(String),
    /// The route's credential class does not allow automatic runs.
    #[error(
        "low-risk automation is refused for this model route: {0}. Use the always-review \
         policy, or connect a credential-free route"
    )]
    Automation(String),
    /// A platform transport's qualification request did not answer well.
    #[error(
        "low-risk automation is refused: the platform's model transport did not pass its \
         qualification request ({0}); use the always-review policy, or ask the platform's \
         operators"
    )]
    NotQualified(ProjectError),
    /// Nothing answers at the route's address.
    #[error(
        "the model service at {url} cannot be reached ({why}); start it, or connect another \
         with `heartwood model connect`"
    )]
    Unreachable {
        /// The address, as shown.
        url: String,
        /// What the probe found.
        why: crate::startup::Unreachable,
    },
    /// The project folder's path is not UTF-8.
    #[error(
        "the path {} is not valid UTF-8; Heartwood serves projects whose paths are UTF-8",
        .0.display()
    )]
    NotUtf8(std::path::PathBuf),
    /// The session was started with another engine than the one this process serves.
    #[error(
        "this session was started with the {session} engine, and this process serves sessions \
         with the {served} engine only"
    )]
    OtherEngine {
        /// The engine the session recorded.
        session: String,
        /// The one engine this process serves.
        served: &'static str,
    },
    /// The session was started with an engine this build does not know.
    #[error(
        "this session was started with an agent engine this Heartwood does not know ({0}); open \
         it with the Heartwood that started it"
    )]
    UnknownEngine(String),
    /// A command that needs the agent reached the decision without its kit (a defect).
    #[error("the command was not prepared for the agent")]
    NotPrepared,
    /// The configuration, platform or skills could not be read.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The session or the worker's runtime failed.
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// The engine refused to open the session.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl From<WorkerRefusal> for heartwood_events::Refusal {
    fn from(refusal: WorkerRefusal) -> Self {
        heartwood_events::Refusal::AgentUnavailable {
            why: refusal.to_string(),
        }
    }
}

/// What starting (or keeping) the session's worker needs, read before the lock.
pub(in crate::gateway) struct WorkerKit {
    /// The policy the worker runs under.
    policy: ActionPolicy,
    /// The route the agent may use now, with what it was judged by.
    route: UsableRoute,
    /// The skills the agent would start with, read when no worker ran (`None`: one did).
    skills: Option<crate::skills::AgentSkills>,
}

/// A route the agent may use now, with the configuration and platform it was judged by.
struct UsableRoute {
    route: RouteConfig,
    config: ProjectConfig,
    platform: crate::platform::PlatformSummary,
}

impl SessionGateway {
    /// Reads what the session's worker needs under `policy` (`None`: the session's own),
    /// without holding the session: the route is checked (and qualified, which may take a
    /// request) even when a worker runs, since a route removed or broken since is refused
    /// now. `Err` is a reason for the researcher.
    pub(in crate::gateway) fn worker_kit(
        &self,
        live: &Arc<Live>,
        policy: Option<ActionPolicy>,
    ) -> Result<WorkerKit, WorkerRefusal> {
        let (policy, running) = {
            let core = live.lock();
            (
                policy.unwrap_or(core.projection().policy),
                core.worker().is_some(),
            )
        };
        let route = self.usable_route(policy)?;
        let skills = if running {
            None
        } else {
            Some(self.agent_skills()?)
        };
        Ok(WorkerKit {
            policy,
            route,
            skills,
        })
    }

    /// Starts the session's worker from `kit` if it has none. `Err` is a reason for the
    /// researcher.
    pub(in crate::gateway) fn ensure_worker(
        &self,
        live: &Arc<Live>,
        core: &mut Core,
        kit: Result<WorkerKit, WorkerRefusal>,
    ) -> Result<(), WorkerRefusal> {
        let WorkerKit {
            policy,
            route:
                UsableRoute {
                    route,
                    config,
                    platform,
                },
            skills,
        } = kit?;
        if core.worker().is_some() {
            return Ok(());
        }
        let state_dir = core.writer()?.paths().backend.clone();
        // The worker stopped since the kit was read: read its skills now.
        let skills = match skills {
            Some(skills) => skills,
            None => self.agent_skills()?,
        };
        let backend_kind = crate::config::BackendKind::from_name(&core.writer()?.meta().backend)
            .unwrap_or_default();
        let review = std::sync::Arc::new(crate::parallel_review::dispatch::ReviewRoute {
            project: self.shared.project.clone(),
            identity: crate::parallel_review::evidence::RouteIdentity::of(&route, backend_kind),
        });
        let spec = BackendSpec {
            skills,
            tool_env: config.tool_env(&platform),
            data_mounts: crate::platform::outside_directories(&platform),
            route,
            project: self.shared.project.root().to_owned(),
            state_dir: utf8(&state_dir)?,
            policy,
            finish_outcome: core
                .projection()
                .workflow
                .is_some()
                .then(crate::workflow_run::outcome_schema),
            // A catalog that cannot be registered (a tool-capable role enabled) offers none.
            specialists: heartwood_workflow::specialists::registered().unwrap_or_default(),
        };
        let backends = self
            .shared
            .backends
            .factory(&core.writer()?.meta().backend)?;
        let runtime = worker::runtime()?;
        let opened = {
            let _inside = runtime.enter();
            backends.open(spec)
        };
        let backend = match opened {
            Ok(backend) => backend,
            Err(e) => {
                // The caller may be on an async task, where dropping a runtime would panic.
                runtime.shutdown_background();
                return Err(e.into());
            }
        };
        worker::start(
            live,
            core,
            backend,
            runtime,
            self.shared.project.clone(),
            review,
        )
        .map_err(WorkerRefusal::from)
    }

    /// Revalidated on every start: only active, verified, unrevoked skills reach the agent,
    /// and an agent does not start on skills that cannot be verified.
    fn agent_skills(&self) -> Result<crate::skills::AgentSkills, WorkerRefusal> {
        Ok(crate::skills::SkillsService::open(&self.shared.project).for_agent()?)
    }

    /// The connected model route, or why the agent cannot use it under `policy` now (on this
    /// platform, with its credential class).
    fn usable_route(&self, policy: ActionPolicy) -> Result<UsableRoute, WorkerRefusal> {
        let config = ProjectConfig::load(&self.shared.project)?;
        let Some(route) = config.model.clone() else {
            return Err(WorkerRefusal::NotConnected);
        };
        // A route edited by hand is checked as strictly as one `model connect` stored.
        route.validate().map_err(WorkerRefusal::Malformed)?;
        let platform = config.platform()?;
        if let Some(why) = crate::platform::refusal(&platform, &route) {
            return Err(WorkerRefusal::Platform(why));
        }
        if let Some(var) = &route.api_key_env
            && std::env::var(var).map_or(true, |v| v.is_empty())
        {
            return Err(WorkerRefusal::KeyNotSet(var.clone()));
        }
        if let Some(why) = crate::subscription::not_signed_in(&route) {
            return Err(WorkerRefusal::NotSignedIn(why));
        }
        if policy == ActionPolicy::LowRiskAutomation {
            let boundary = crate::platform::boundary(&platform, &route);
            let allowance = crate::platform::automation(
                boundary,
                crate::platform::credential_name(&route).as_deref(),
            );
            if !allowance.allowed {
                return Err(WorkerRefusal::Automation(allowance.reason));
            }
            if boundary == CredentialBoundary::PlatformIsolated {
                self.qualified(&route)?;
            }
        }
        Ok(UsableRoute {
            route,
            config,
            platform,
        })
    }

    /// A platform-isolated route is trusted for automation only after a live synthetic
    /// request answered well, once per route for the life of this gateway.
    fn qualified(&self, route: &RouteConfig) -> Result<(), WorkerRefusal> {
        let key = (route.base_url.clone(), route.model.clone());
        if lock(&self.shared.qualified).contains(&key) {
            return Ok(());
        }
        crate::route_check::qualify(route).map_err(WorkerRefusal::NotQualified)?;
        lock(&self.shared.qualified).insert(key);
        Ok(())
    }

    /// [`Self::usable_route`], and reachable: for a task that would register a new session,
    /// since a service nobody can reach would fail the run at its first step and leave a
    /// session holding nothing but the failure. (Not asked on every command: it opens a
    /// connection, which an ordinary decision should not wait for.)
    pub(super) fn reachable_route(&self, policy: ActionPolicy) -> Result<(), WorkerRefusal> {
        let route = self.usable_route(policy)?.route;
        if route.recording_path(self.shared.project.root()).is_some() {
            return Ok(());
        }
        crate::startup::probe(&route.base_url).map_err(|why| WorkerRefusal::Unreachable {
            url: route.display_url(),
            why,
        })
    }
}

/// A path as UTF-8, or why the agent cannot work there.
fn utf8(path: &std::path::Path) -> Result<camino::Utf8PathBuf, WorkerRefusal> {
    camino::Utf8PathBuf::from_path_buf(path.to_owned()).map_err(WorkerRefusal::NotUtf8)
}
