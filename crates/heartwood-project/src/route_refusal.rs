//! Why a model route is refused: [`RouteRefusal`] when it is malformed or incomplete as asked,
//! [`PlatformRefusal`] when this platform does not allow it. Each says what to change.

use crate::config::{MIN_INPUT_TOKENS, RouteCategory};

/// Why a route (as stored, or as an interface asked for it) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RouteRefusal {
    /// A local route's model name is not a stored model's.
    #[error(transparent)]
    LocalName(heartwood_models::ModelError),
    /// A local route that is not a loopback address without a key.
    #[error(
        "a local route serves a stored model on this machine (base URL http://127.0.0.1:PORT/v1, \
         no API key), not {0:?}; connect it with heartwood model use NAME"
    )]
    LocalNotLoopback(String),
    /// A local route asked for without a model from the store.
    #[error(
        "a local route serves a model from this project's store: see heartwood model list, then \
         heartwood model use NAME (and heartwood model start)"
    )]
    LocalNeedsStore,
    /// A route of a category that takes no API key was given one.
    #[error("{}", keyless(*.0))]
    TakesNoKey(RouteCategory),
    /// A replay route without its recording.
    #[error("a replay route needs --recording naming the recorded exchanges")]
    ReplayNeedsRecording,
    /// A recording on a route that is not a replay.
    #[error("--recording belongs to replay routes only")]
    RecordingOutsideReplay,
    /// A base URL that is not HTTP.
    #[error("base URL {0:?} must start with http:// or https://")]
    NotHttp(String),
    /// No model name.
    #[error("the model name is empty")]
    EmptyModel,
    /// A subscription route asked for without a model.
    #[error("a model is needed (--model; for example gpt-5-codex)")]
    SubscriptionNeedsModel,
    /// The key variable's name is not one.
    #[error("{0:?} is not an environment variable name (use letters, digits and _)")]
    NotAVariable(String),
    /// A hosted route without the variable that holds its key.
    #[error("a hosted route needs --api-key-env naming the variable that holds the key")]
    HostedNeedsKey,
    /// A model call timeout outside what Heartwood allows.
    #[error("a model call timeout of {secs} s is out of range; use 1 to {max} seconds")]
    Timeout {
        /// What was asked.
        secs: u64,
        /// The most allowed.
        max: u64,
    },
    /// No output tokens.
    #[error("the output token budget must be positive")]
    NoOutputBudget,
    /// An input budget too small for the agent's instructions and tools.
    #[error(
        "an input budget of {tokens} tokens cannot hold the agent's instructions and tools; use \
         at least {MIN_INPUT_TOKENS} (the default is {default})"
    )]
    InputBudget {
        /// What was asked.
        tokens: u64,
        /// The default budget.
        default: u64,
    },
    /// A research route on a platform with no transport of its own.
    #[error("this platform ({0}) offers no model transport of its own; connect another category")]
    NoPlatformTransport(String),
    /// A compatible (or other) route asked for without its URL and model.
    #[error(
        "a base URL and a model are needed (--base-url and --model), or a preset (--preset \
         NAME; see heartwood model presets)"
    )]
    NeedsUrlAndModel,
    /// Neither a category nor a preset.
    #[error("give --category or --preset")]
    NeedsCategory,
    /// This platform does not allow the route.
    #[error(transparent)]
    Platform(#[from] PlatformRefusal),
}

fn keyless(category: RouteCategory) -> &'static str {
    match category {
        RouteCategory::Research => {
            "a research route is the platform's own model transport, authorized outside \
             Heartwood; it takes no API key"
        }
        RouteCategory::Replay => "a replay route calls no service and takes no API key",
        RouteCategory::Subscription => {
            "a subscription route signs in with `heartwood model signin`; it takes no API key"
        }
        _ => "this route takes no API key",
    }
}

/// Why this platform does not allow a route (a stale combination: a route saved elsewhere, or
/// before the platform's operators changed what it offers), with the next step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformRefusal {
    /// The platform does not allow routes of this category.
    #[error(
        "{category} routes are not allowed on this platform ({platform}; it allows {}); connect \
         one of those with `heartwood model connect`",
        allowed.join(", ")
    )]
    Category {
        /// The route's category.
        category: String,
        /// The platform.
        platform: String,
        /// The categories it allows.
        allowed: Vec<String>,
    },
    /// The route uses a platform transport and this platform has none.
    #[error(
        "the route uses a platform model transport, and this platform ({0}) offers none; connect \
         another route with `heartwood model connect`"
    )]
    NoTransport(String),
    /// The route names another platform's transport.
    #[error(
        "the route names a platform transport ({route_url} {route_model}) that is not this \
         platform's ({url} {model}); connect it again with `heartwood model connect --category \
         research`"
    )]
    OtherTransport {
        /// The route's URL, as shown.
        route_url: String,
        /// The route's model.
        route_model: String,
        /// This platform's transport URL.
        url: String,
        /// This platform's transport model.
        model: String,
    },
    /// The platform requires its own transport.
    #[error(
        "this platform ({platform}) requires its own model transport at {url}; connect it with \
         `heartwood model connect --category research`"
    )]
    TransportRequired {
        /// The platform.
        platform: String,
        /// Its transport's URL.
        url: String,
    },
}
