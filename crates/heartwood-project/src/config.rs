//! Project settings in `.heartwood/config.toml`: the model route. Reading creates nothing;
//! writing takes the project-scoped lock (`.heartwood/config.lock`, through `fd-lock`) and
//! replaces the file atomically, so two processes never interleave a configuration write.

use std::io::Write;
use std::path::{Path, PathBuf};

use camino::{Utf8Path, Utf8PathBuf};

use serde::{Deserialize, Serialize};

use crate::{ProjectContext, ProjectError, RouteRefusal};

/// How Heartwood reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteCategory {
    /// A hosted provider (OpenAI and the like), reached with an API key.
    Hosted,
    /// An OpenAI-compatible service: vLLM, Ollama, llama.cpp server, LiteLLM, ...
    Compatible,
    /// An endpoint the research environment provides.
    Research,
    /// A local model Heartwood downloads and runs.
    Local,
    /// The recorded replies of an earlier session, served in order (no model service).
    Replay,
    /// A ChatGPT subscription, signed in with `heartwood model signin` (the Responses API).
    Subscription,
}

impl RouteCategory {
    /// The name used in configuration and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteCategory::Hosted => "hosted",
            RouteCategory::Compatible => "compatible",
            RouteCategory::Research => "research",
            RouteCategory::Local => "local",
            RouteCategory::Replay => "replay",
            RouteCategory::Subscription => "subscription",
        }
    }
}

pub use heartwood_events::startup::CredentialBoundary;

/// The configured model route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// How the model is reached.
    pub category: RouteCategory,
    /// The service's OpenAI-compatible base URL, for example `http://localhost:11434/v1`.
    pub base_url: String,
    /// The model name the service expects.
    pub model: String,
    /// The environment variable holding the API key (never the key itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// For `replay` routes: the recording to serve (a session's `exchanges.jsonl`), relative to
    /// the project folder or absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<String>,
    /// Upper bound on prompt tokens per model call.
    #[serde(default = "default_input")]
    pub max_input_tokens: u64,
    /// `max_tokens` per model call.
    #[serde(default = "default_output")]
    pub max_output_tokens: u64,
    /// Seconds allowed for one model call, retries included.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Prices in US dollars per million tokens, when known (from a preset or set by the
    /// researcher); without them usage is shown in tokens and its cost as unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<RoutePrices>,
}

pub use heartwood_events::startup::RoutePrices;

/// The smallest input budget a route may have: the agent's instructions and tool schemas alone
/// take about a thousand tokens.
pub const MIN_INPUT_TOKENS: u64 = 1_024;

fn default_input() -> u64 {
    100_000
}

fn default_output() -> u64 {
    4_096
}

/// Five minutes: long enough for a slow local model's reply, short enough that a service that
/// accepts and never answers is noticed.
fn default_timeout() -> u64 {
    300
}

/// The longest a route may allow one model call to take: a day.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// The port of a local route's base URL (`http://127.0.0.1:PORT/v1`).
pub fn local_port(base_url: &str) -> Option<u16> {
    base_url
        .strip_prefix("http://127.0.0.1:")?
        .strip_suffix("/v1")?
        .parse()
        .ok()
        .filter(|&p| p != 0)
}

impl RouteConfig {
    /// Checks a route before it is stored; the error says what to change.
    pub fn validate(&self) -> Result<(), RouteRefusal> {
        use RouteCategory::{Hosted, Local, Replay, Research, Subscription};
        let keyed = self.api_key_env.is_some();
        if self.category == Local {
            heartwood_models::manifest::check_name(&self.model).map_err(RouteRefusal::LocalName)?;
            if keyed || local_port(&self.base_url).is_none() {
                return Err(RouteRefusal::LocalNotLoopback(self.base_url.clone()));
            }
        }
        if matches!(self.category, Research | Replay | Subscription) && keyed {
            return Err(RouteRefusal::TakesNoKey(self.category));
        }
        match (self.category == Replay, self.recording.is_some()) {
            (true, true) => return Ok(()),
            (true, false) => return Err(RouteRefusal::ReplayNeedsRecording),
            (false, true) => return Err(RouteRefusal::RecordingOutsideReplay),
            (false, false) => {}
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(RouteRefusal::NotHttp(self.base_url.clone()));
        }
        if self.model.trim().is_empty() {
            return Err(RouteRefusal::EmptyModel);
        }
        if let Some(env) = &self.api_key_env {
            let valid = !env.is_empty()
                && env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !env.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return Err(RouteRefusal::NotAVariable(env.clone()));
            }
        }
        if self.category == Hosted && !keyed {
            return Err(RouteRefusal::HostedNeedsKey);
        }
        if self.timeout_secs == 0 || self.timeout_secs > MAX_TIMEOUT_SECS {
            return Err(RouteRefusal::Timeout {
                secs: self.timeout_secs,
                max: MAX_TIMEOUT_SECS,
            });
        }
        if self.max_output_tokens == 0 {
            return Err(RouteRefusal::NoOutputBudget);
        }
        if self.max_input_tokens < MIN_INPUT_TOKENS {
            return Err(RouteRefusal::InputBudget {
                tokens: self.max_input_tokens,
                default: default_input(),
            });
        }
        Ok(())
    }

    /// A route to an OpenAI-compatible service at `base_url` serving `model`, with no API key
    /// and the default budgets and timeout.
    pub fn compatible(base_url: &str, model: &str) -> Self {
        RouteConfig::of(RouteCategory::Compatible, base_url, model)
    }

    pub(crate) fn of(category: RouteCategory, base_url: &str, model: &str) -> Self {
        RouteConfig {
            category,
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key_env: None,
            recording: None,
            max_input_tokens: default_input(),
            max_output_tokens: default_output(),
            timeout_secs: default_timeout(),
            prices: None,
        }
    }

    /// A route that replays `recording` (project-relative), with default budgets.
    pub fn replay(recording: String) -> Self {
        RouteConfig {
            category: RouteCategory::Replay,
            base_url: "replay".into(),
            model: "recorded".into(),
            api_key_env: None,
            recording: Some(recording),
            max_input_tokens: default_input(),
            max_output_tokens: default_output(),
            timeout_secs: default_timeout(),
            prices: None,
        }
    }

    /// The recording a replay route serves, resolved against the project folder.
    pub fn recording_path(&self, project: impl AsRef<Path>) -> Option<PathBuf> {
        self.recording.as_ref().map(|r| project.as_ref().join(r))
    }

    /// The base URL as it may be shown or logged: a user name, password or query string in it
    /// (where some services take a key) is replaced by `***`.
    pub fn display_url(&self) -> String {
        redact_url(&self.base_url)
    }

    /// Where the credential sits relative to the agent's tools.
    pub fn boundary(&self) -> CredentialBoundary {
        if self.api_key_env.is_some() || self.category == RouteCategory::Subscription {
            CredentialBoundary::ApplicationScrubbed
        } else {
            CredentialBoundary::CredentialFree
        }
    }
}

/// `url` with its user information and query replaced by `***`.
fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_owned(),
    };
    let path = match path.split_once('?') {
        Some((path, _)) => format!("{path}?***"),
        None => path.to_owned(),
    };
    format!("{scheme}{host}{path}")
}

/// Stores a model recording in the project (`.heartwood/recordings/NAME`) so a replay route can
/// name it; returns the project-relative path to put in the route.
pub fn install_recording(
    project: &ProjectContext,
    name: &str,
    bytes: &[u8],
) -> Result<String, ProjectError> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if !plain {
        return Err(ProjectError::NotAFileName(name.to_owned()));
    }
    let dir = project.state_dir().join("recordings");
    let io = |what: &str, path: &Utf8Path, e| ProjectError::io(format!("cannot {what} {path}"), e);
    std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| io("write", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", &path, e))?;
    Ok(format!(".heartwood/recordings/{name}"))
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The model route, once connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<RouteConfig>,
    /// The agent engine that serves new sessions (a session keeps the one it started with).
    #[serde(default, skip_serializing_if = "BackendKind::is_native")]
    pub backend: BackendKind,
    /// Environment variables the agent's terminal may see besides the standard list (names; a
    /// trailing `*` is a prefix). Everything else is left out of the commands' environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_env_allow: Vec<String>,
    /// Paths outside the project the agent may read (and write, when declared writable),
    /// besides those the platform declares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_mounts: Vec<MountDeclaration>,
    /// Hosts the agent's confined commands may reach, through Heartwood's proxy only
    /// (`"pypi.org"`, or `"*.example.org"` for its subdomains), besides those the platform
    /// names. None: no network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// When the project sets no route of its own and `model` is the user's default route: the
    /// file it came from. Never written.
    #[serde(skip)]
    pub route_from_user: Option<String>,
}

/// A data mount as a deployment file or a project declares it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MountDeclaration {
    /// The absolute path.
    pub path: String,
    /// The agent's file editor may write inside it (default: read-only).
    #[serde(default)]
    pub writable: bool,
    /// What it holds.
    #[serde(default)]
    pub purpose: String,
}

/// The user's configuration file (`$HEARTWOOD_CONFIG_HOME/config.toml`, else
/// `$XDG_CONFIG_HOME/heartwood/config.toml`, else `~/.config/heartwood/config.toml`), whose
/// model route every project without its own inherits.
pub fn user_config_path() -> Option<std::path::PathBuf> {
    let dir = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    dir("HEARTWOOD_CONFIG_HOME")
        .or_else(|| dir("XDG_CONFIG_HOME").map(|d| d.join("heartwood")))
        .or_else(|| dir("HOME").map(|h| h.join(".config/heartwood")))
        .map(|d| d.join("config.toml"))
}

/// An agent engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Heartwood's own engine (`heartwood-agent`).
    #[default]
    Native,
    /// OpenHands' agent server (`heartwood-openhands`).
    OpenHands,
}

/// The native engine's name, as sessions record it.
pub const NATIVE_BACKEND: &str = "native";
/// The OpenHands engine's name, as sessions record it.
pub const OPENHANDS_BACKEND: &str = "openhands";

impl BackendKind {
    /// Its name, as sessions record it.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Native => NATIVE_BACKEND,
            BackendKind::OpenHands => OPENHANDS_BACKEND,
        }
    }

    /// The engine a session names.
    pub fn from_name(name: &str) -> Option<BackendKind> {
        [BackendKind::Native, BackendKind::OpenHands]
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    fn is_native(&self) -> bool {
        *self == BackendKind::Native
    }
}

impl ProjectConfig {
    /// The configuration in force: `.heartwood/config.toml`, with the user's default route
    /// (see [`user_config_path`]) when the project sets none; no file, no route.
    pub fn load(project: &ProjectContext) -> Result<Self, ProjectError> {
        let mut config = ProjectConfig::load_file(&config_path(project))?;
        if config.model.is_none()
            && let Some(user) = user_config_path()
            && user.is_file()
            && let Ok(user_path) = Utf8PathBuf::from_path_buf(user)
        {
            config.model = ProjectConfig::load_file(&user_path)?.model;
            if config.model.is_some() {
                config.route_from_user = Some(user_path.to_string());
            }
        }
        Ok(config)
    }

    /// One configuration file as written (a missing file is the default).
    fn load_file(path: &Utf8Path) -> Result<Self, ProjectError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ProjectConfig::default());
            }
            Err(e) => {
                return Err(ProjectError::io(format!("cannot read {path}"), e));
            }
        };
        toml::from_str(&text).map_err(|source| ProjectError::Malformed {
            file: path.to_string(),
            source: Box::new(source),
            fix: "fix it or connect the model again",
        })
    }

    /// Validates and stores `route` as the project's model route, under the project lock.
    pub fn set_route(project: &ProjectContext, route: RouteConfig) -> Result<Self, ProjectError> {
        route.validate()?;
        ProjectConfig::update(project, |config| config.model = Some(route))
    }

    /// Validates and stores `route` as the user's default route (every project without a
    /// route of its own uses it), replacing the user's file atomically.
    pub fn set_user_route(route: RouteConfig) -> Result<Utf8PathBuf, ProjectError> {
        route.validate()?;
        let path = user_config_path()
            .and_then(|p| Utf8PathBuf::from_path_buf(p).ok())
            .ok_or(ProjectError::NoConfigHome { purpose: "" })?;
        let dir = path.parent().map(Utf8Path::to_owned).unwrap_or_default();
        write_config(&dir, &path, |config| config.model = Some(route))?;
        Ok(path)
    }

    /// Stores which engine serves the project's new sessions, under the project lock.
    pub fn set_backend(
        project: &ProjectContext,
        backend: BackendKind,
    ) -> Result<Self, ProjectError> {
        ProjectConfig::update(project, |config| config.backend = backend)
    }

    /// Applies `change` to the stored configuration and writes it atomically, under the
    /// project lock.
    fn update(
        project: &ProjectContext,
        change: impl FnOnce(&mut ProjectConfig),
    ) -> Result<Self, ProjectError> {
        project.prepare_state_dir()?;
        write_config(&project.state_dir(), &config_path(project), change)
    }
}

/// Applies `change` to the configuration file `path` (in `dir`) and replaces it atomically,
/// under `dir/config.lock`, reading it under the lock so a concurrent change to other settings
/// is not lost. The file is read as written: a user's default route is never copied into a
/// project.
fn write_config(
    dir: &Utf8Path,
    path: &Utf8Path,
    change: impl FnOnce(&mut ProjectConfig),
) -> Result<ProjectConfig, ProjectError> {
    let io = |what: &str, path: &Utf8Path, e| ProjectError::io(format!("cannot {what} {path}"), e);
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    let lock_path = dir.join("config.lock");
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| io("open", &lock_path, e))?;
    let mut lock = fd_lock::RwLock::new(lock_file);
    let _guard = lock.write().map_err(|e| io("lock", &lock_path, e))?;
    let mut config = ProjectConfig::load_file(path)?;
    change(&mut config);
    let text = toml::to_string_pretty(&config)?;
    let tmp = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("replace", path, e))?;
    Ok(config)
}

fn config_path(project: &ProjectContext) -> Utf8PathBuf {
    project.state_dir().join("config.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(category: RouteCategory) -> RouteConfig {
        RouteConfig {
            category,
            base_url: "http://localhost:11434/v1".into(),
            model: "qwen2.5-coder".into(),
            api_key_env: None,
            recording: None,
            max_input_tokens: 32_000,
            max_output_tokens: 2_048,
            timeout_secs: 300,
            prices: None,
        }
    }

    #[test]
    fn credentials_in_a_base_url_are_never_shown() {
        for (url, shown) in [
            ("http://localhost:11434/v1", "http://localhost:11434/v1"),
            (
                "https://user:s3cret@api.example.com/v1",
                "https://***@api.example.com/v1",
            ),
            (
                "https://api.example.com/v1?key=s3cret",
                "https://api.example.com/v1?***",
            ),
            ("http://tok@host", "http://***@host"),
        ] {
            let route = RouteConfig {
                base_url: url.into(),
                ..route(RouteCategory::Compatible)
            };
            assert_eq!(route.display_url(), shown);
            assert!(!route.display_url().contains("s3cret"));
        }
    }

    #[test]
    fn a_route_round_trips_through_the_config_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = ProjectContext::at(dir.path()).expect("a UTF-8 project path");
        assert_eq!(
            ProjectConfig::load(&project).expect("load"),
            ProjectConfig::default()
        );
        assert!(
            !dir.path().join(".heartwood").exists(),
            "loading created state"
        );
        let stored =
            ProjectConfig::set_route(&project, route(RouteCategory::Compatible)).expect("store");
        assert_eq!(ProjectConfig::load(&project).expect("load"), stored);
        assert_eq!(
            stored.model.map(|r| r.boundary()),
            Some(CredentialBoundary::CredentialFree)
        );
    }

    #[test]
    fn invalid_routes_are_refused_with_what_to_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = ProjectContext::at(dir.path()).expect("a UTF-8 project path");
        let cases = [
            (
                RouteConfig {
                    base_url: "localhost:11434".into(),
                    ..route(RouteCategory::Compatible)
                },
                "http://",
            ),
            (
                RouteConfig {
                    api_key_env: Some("MY KEY".into()),
                    ..route(RouteCategory::Compatible)
                },
                "environment variable",
            ),
            (route(RouteCategory::Hosted), "--api-key-env"),
            (
                RouteConfig {
                    max_input_tokens: 50,
                    ..route(RouteCategory::Compatible)
                },
                "at least 1024",
            ),
            (
                RouteConfig {
                    timeout_secs: 0,
                    ..route(RouteCategory::Compatible)
                },
                "timeout",
            ),
            (route(RouteCategory::Local), "heartwood model use"),
            (
                RouteConfig {
                    api_key_env: Some("KEY".into()),
                    ..route(RouteCategory::Research)
                },
                "platform's own model transport",
            ),
            (route(RouteCategory::Replay), "needs --recording"),
            (
                RouteConfig {
                    recording: Some("exchanges.jsonl".into()),
                    ..route(RouteCategory::Compatible)
                },
                "replay routes only",
            ),
            (
                RouteConfig {
                    recording: Some("exchanges.jsonl".into()),
                    api_key_env: Some("KEY".into()),
                    ..route(RouteCategory::Replay)
                },
                "calls no service",
            ),
        ];
        for (bad, expected) in cases {
            let err = ProjectConfig::set_route(&project, bad).expect_err("accepted");
            assert!(err.to_string().contains(expected), "{err}");
        }
        assert!(!dir.path().join(".heartwood/config.toml").exists());
    }
}
