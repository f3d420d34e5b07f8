//! Checking a model route before it is saved: can the service be reached, and, where it lists
//! its models (`GET /models`), is the chosen one among them. The CLI's `model connect` and the
//! terminal interface's connect form both go through [`connect`], so a wrong port or a mistyped
//! model name is caught before it is written, with the models to choose from.

use std::time::Duration;

use serde::Serialize;

use crate::config::{ProjectConfig, RouteCategory, RouteConfig};
use crate::{ProjectContext, ProjectError, RouteRefusal};

/// How long the model listing may take (a service that accepts connections and says nothing is
/// reported, not waited on).
const LISTING_TIMEOUT: Duration = Duration::from_secs(5);

/// What checking a route found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteCheck {
    /// Why the service cannot be reached (`None`: it accepted a connection).
    pub unreachable: Option<String>,
    /// The models the service lists (`None`: it lists none, or could not be asked).
    pub models: Option<Vec<String>>,
    /// Why the models could not be listed, when they could not (a note, not a refusal).
    pub listing_note: Option<String>,
}

impl RouteCheck {
    /// Why the route should not be saved as it is: unreachable, or its model is not among the
    /// ones the service lists.
    pub fn refusal(&self, model: &str) -> Option<String> {
        if let Some(why) = &self.unreachable {
            return Some(format!("the model service cannot be reached ({why})"));
        }
        match &self.models {
            Some(models) if !models.iter().any(|m| m == model) => Some(format!(
                "the service does not list the model {model:?}; it lists {}",
                list(models)
            )),
            _ => None,
        }
    }
}

/// Where a route is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The project's `.heartwood/config.toml`.
    Project,
    /// The user's default route, which projects without their own inherit.
    User,
}

/// The outcome of [`connect`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Connected {
    /// What the check found.
    pub check: RouteCheck,
    /// Why the route is not as it should be (saved anyway, or not saved).
    pub refusal: Option<String>,
    /// Whether the route was saved.
    pub saved: bool,
    /// The user's file, when it was saved as the default route.
    pub saved_to: Option<String>,
}

/// Checks `route` and saves it when the check finds nothing against it, or regardless with
/// `save_anyway`. A route that is invalid in itself is refused either way.
pub fn connect(
    project: &ProjectContext,
    route: RouteConfig,
    save_anyway: bool,
    scope: Scope,
) -> Result<Connected, ProjectError> {
    admissible(project, &route, scope)?;
    let check = check(&route);
    save(project, route, check, save_anyway, scope)
}

/// [`connect`] with a check made already: what a batch does, which checks its route once and
/// then connects every item's project with it.
pub fn connect_checked(
    project: &ProjectContext,
    route: RouteConfig,
    check: RouteCheck,
    save_anyway: bool,
    scope: Scope,
) -> Result<Connected, ProjectError> {
    admissible(project, &route, scope)?;
    save(project, route, check, save_anyway, scope)
}

/// Refuses a malformed route, and one the project's platform does not allow (whatever the
/// service would say, so it is not asked).
fn admissible(
    project: &ProjectContext,
    route: &RouteConfig,
    scope: Scope,
) -> Result<(), ProjectError> {
    route.validate()?;
    if scope == Scope::Project {
        let platform = ProjectConfig::load(project)?.platform()?;
        if let Some(why) = crate::platform::refusal(&platform, route) {
            return Err(RouteRefusal::Platform(why).into());
        }
    }
    Ok(())
}

/// Saves `route` when `check` passed (or `save_anyway`).
fn save(
    project: &ProjectContext,
    route: RouteConfig,
    check: RouteCheck,
    save_anyway: bool,
    scope: Scope,
) -> Result<Connected, ProjectError> {
    let refusal = check.refusal(&route.model);
    let saved = refusal.is_none() || save_anyway;
    let mut saved_to = None;
    if saved {
        match scope {
            Scope::Project => {
                ProjectConfig::set_route(project, route)?;
            }
            Scope::User => saved_to = Some(ProjectConfig::set_user_route(route)?.to_string()),
        }
    }
    Ok(Connected {
        check,
        refusal,
        saved,
        saved_to,
    })
}

/// Checks `route` (a replay route has no service to check).
pub fn check(route: &RouteConfig) -> RouteCheck {
    if route.category == RouteCategory::Replay {
        return RouteCheck {
            unreachable: None,
            models: None,
            listing_note: Some("a replay route serves recorded replies".into()),
        };
    }
    if let Err(why) = crate::startup::probe(&route.base_url) {
        return RouteCheck {
            unreachable: Some(why.to_string()),
            models: None,
            listing_note: None,
        };
    }
    if route.category == RouteCategory::Subscription {
        return RouteCheck {
            unreachable: None,
            models: None,
            listing_note: Some(
                crate::subscription::not_signed_in(route).unwrap_or_else(|| {
                    "a subscription does not list its models; the name is checked at the first \
                     call"
                        .into()
                }),
            ),
        };
    }
    if let Some(env) = &route.api_key_env
        && std::env::var(env).map_or(true, |v| v.is_empty())
    {
        return RouteCheck {
            unreachable: None,
            models: None,
            listing_note: Some(format!(
                "{env} is not set in this shell, so the models were not listed"
            )),
        };
    }
    let (models, listing_note) = match list_models(route) {
        Ok(Some(models)) => (Some(models), None),
        Ok(None) => (None, Some("the service does not list its models".into())),
        Err(why) => (None, Some(format!("the models could not be listed: {why}"))),
    };
    RouteCheck {
        unreachable: None,
        models,
        listing_note,
    }
}

/// `GET {base_url}/models` through the agent's model client, on the requests' runtime (the
/// caller may be inside one or on a blocking thread).
fn list_models(route: &RouteConfig) -> Result<Option<Vec<String>>, ProjectError> {
    let mut model_route = route.model_route(std::path::Path::new("."));
    model_route.replay = None;
    model_route.connect_timeout = LISTING_TIMEOUT;
    model_route.idle_timeout = LISTING_TIMEOUT;
    let client = heartwood_agent::model::ModelClient::new(model_route)?;
    crate::own_runtime::on_own_runtime(async move { client.list_models().await })
}

/// Sends the platform transport's qualification request: one short synthetic chat completion
/// with nothing of the project in it. A well-formed reply qualifies the transport (its content
/// is not judged: the request shows the transport answers as a model service, authorized
/// without anything of Heartwood's).
pub fn qualify(route: &RouteConfig) -> Result<(), ProjectError> {
    use heartwood_agent::model::ChatMessage;
    let mut model_route = route.model_route(std::path::Path::new("."));
    model_route.replay = None;
    model_route.stream = false;
    model_route.max_output_tokens = 8;
    model_route.max_retries = 0;
    model_route.total_timeout = QUALIFICATION_TIMEOUT;
    model_route.connect_timeout = QUALIFICATION_TIMEOUT;
    model_route.idle_timeout = QUALIFICATION_TIMEOUT;
    let client = heartwood_agent::model::ModelClient::new(model_route)?;
    let messages = vec![
        ChatMessage::System {
            content: "This is a connectivity check from Heartwood; no task follows.".into(),
        },
        ChatMessage::User {
            content: "Reply with the single word: ready".into(),
        },
    ];
    crate::own_runtime::on_own_runtime(async move {
        client.complete(&messages, &[], &mut |_| {}).await
    })?;
    Ok(())
}

/// How long a qualification request may take.
const QUALIFICATION_TIMEOUT: Duration = Duration::from_secs(30);

fn list(models: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut text = models
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if models.len() > SHOWN {
        text.push_str(&format!(" and {} more", models.len() - SHOWN));
    }
    text
}
