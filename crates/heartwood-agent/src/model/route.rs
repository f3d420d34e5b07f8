//! A model route: where to send chat completions and how.

use std::time::Duration;

/// Prices per million tokens, when the route knows them, in micro-units of the currency
/// (integers, so that usage stays canonical JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prices {
    /// Per million prompt tokens.
    pub prompt_micros_per_mtok: u64,
    /// Per million completion tokens.
    pub completion_micros_per_mtok: u64,
}

/// Where and how to call a model. Holds the *name* of the environment variable with the API
/// key, never the key itself, so a route can be logged, shown and stored safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRoute {
    /// For example `http://localhost:11434/v1` or `https://api.openai.com/v1`.
    pub base_url: String,
    /// The model name the service expects.
    pub model: String,
    /// Environment variable holding the API key; `None` for credential-free services.
    pub api_key_env: Option<String>,
    /// Stream replies (token text arrives as it is generated).
    pub stream: bool,
    /// Upper bound on prompt tokens the engine will send (the condenser keeps under it).
    pub max_input_tokens: u64,
    /// `max_tokens` sent with each request.
    pub max_output_tokens: u64,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Time allowed between two streamed chunks (or for a whole non-streamed reply).
    pub idle_timeout: Duration,
    /// Time allowed for one model call, every attempt and wait between attempts included.
    pub total_timeout: Duration,
    /// Retries after a rate limit, server error or connection failure.
    pub max_retries: u32,
    /// First backoff; it doubles per retry.
    pub initial_backoff: Duration,
    /// Prices, when known.
    pub prices: Option<Prices>,
    /// Serve the replies of this recording (see [`super::replay`]) instead of calling a service.
    pub replay: Option<std::path::PathBuf>,
    /// A ChatGPT subscription: the Responses API at `{base_url}/responses`, authorized with
    /// the signed-in tokens (refreshed before expiry) instead of an API key.
    pub subscription: Option<Subscription>,
}

/// What a subscription route signs in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The sign-in service.
    pub endpoints: super::chatgpt::Endpoints,
    /// The file holding the tokens.
    pub store: super::chatgpt::TokenStore,
}

impl ModelRoute {
    /// A route to an OpenAI-compatible service with sensible defaults.
    pub fn compatible(base_url: &str, model: &str) -> Self {
        ModelRoute {
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key_env: None,
            stream: true,
            max_input_tokens: 100_000,
            max_output_tokens: 4_096,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            total_timeout: Duration::from_secs(300),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            prices: None,
            replay: None,
            subscription: None,
        }
    }
}
