//! ChatGPT subscription sign-in, for every interface: where the sign-in service and the
//! Responses endpoint are (configuration: `HEARTWOOD_CHATGPT_ISSUER` and
//! `HEARTWOOD_CHATGPT_BASE_URL`, else OpenAI's), where the tokens are kept (`chatgpt.json` in the
//! user's configuration folder, mode 0600, outside every project), and the device-code flow.
//!
//! Interfaces see only non-secret status ([`SignedIn`]) and the short-lived device-code values
//! ([`Pending`]); the pending handle stays in this process's memory, inside [`SignIn`].

use std::time::{Duration, Instant};

pub use heartwood_agent::model::chatgpt::SignedIn;
use heartwood_agent::model::chatgpt::{self, DeviceCode, Endpoints, TokenStore};
use serde::Serialize;

use crate::ProjectError;

/// OpenAI's accounts service.
const DEFAULT_ISSUER: &str = "https://auth.openai.com";
/// The client id Codex CLI signs in as (the subscription's terms are the account's).
const DEFAULT_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// Where a subscription's Responses API is served.
pub const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";
/// A device code is good for this long.
const CODE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The sign-in service, as configured.
pub fn endpoints() -> Endpoints {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    Endpoints {
        issuer: var("HEARTWOOD_CHATGPT_ISSUER")
            .unwrap_or_else(|| DEFAULT_ISSUER.to_owned())
            .trim_end_matches('/')
            .to_owned(),
        client_id: var("HEARTWOOD_CHATGPT_CLIENT_ID")
            .unwrap_or_else(|| DEFAULT_CLIENT_ID.to_owned()),
    }
}

/// The subscription's Responses API base URL, as configured.
pub fn base_url() -> String {
    std::env::var("HEARTWOOD_CHATGPT_BASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// The tokens' file.
pub fn store() -> Result<TokenStore, ProjectError> {
    let dir = crate::config::user_config_path()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .ok_or(ProjectError::NoConfigHome {
            purpose: " for the sign-in",
        })?;
    Ok(TokenStore::at(dir.join("chatgpt.json")))
}

/// Who is signed in, if anyone.
pub fn status() -> Result<Option<SignedIn>, ProjectError> {
    store()?.signed_in().map_err(ProjectError::from)
}

/// Forgets the sign-in; `false` when there was none.
pub fn sign_out() -> Result<bool, ProjectError> {
    store()?.sign_out().map_err(ProjectError::from)
}

/// Why a subscription route cannot be used now (nobody signed in, or the sign-in file cannot be
/// read); `None` for other routes and a usable sign-in.
pub fn not_signed_in(route: &crate::config::RouteConfig) -> Option<String> {
    if route.category != crate::config::RouteCategory::Subscription {
        return None;
    }
    match status() {
        Ok(Some(_)) => None,
        Ok(None) => Some("the route is a ChatGPT subscription and nobody is signed in".into()),
        Err(e) => Some(e.to_string()),
    }
}

/// What an interface shows while the person signs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "SignInPending")]
pub struct Pending {
    /// The code to type.
    pub user_code: String,
    /// Where to type it.
    pub verification_url: String,
    /// Seconds left before the code expires.
    pub expires_in_secs: u64,
}

/// The sign-in as every interface shows it: who is signed in, and the sign-in in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SignInStatus {
    /// Who is signed in, when someone is.
    pub signed_in: Option<SignedIn>,
    /// The code to type, while a sign-in is in progress.
    pub pending: Option<Pending>,
}

/// How a poll went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "SignInProgress")]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Progress {
    /// Not approved yet: poll again after `retry_in_secs`.
    Waiting {
        /// When to poll again.
        retry_in_secs: u64,
    },
    /// Signed in.
    SignedIn(SignedIn),
    /// The code expired before it was approved; start again.
    Expired,
}

/// A sign-in in progress: the device code (its pending handle never leaves this value).
pub struct SignIn {
    code: DeviceCode,
    endpoints: Endpoints,
    started: Instant,
    /// When the service was last asked, so interfaces that poll often ask it once per interval.
    last_poll: std::sync::Mutex<Option<Instant>>,
}

impl SignIn {
    /// Asks the service for a device code.
    pub async fn start() -> Result<SignIn, ProjectError> {
        let endpoints = endpoints();
        let code = chatgpt::request_device_code(&endpoints).await?;
        Ok(SignIn {
            code,
            endpoints,
            started: Instant::now(),
            last_poll: std::sync::Mutex::new(None),
        })
    }

    /// What to show.
    pub fn pending(&self) -> Pending {
        Pending {
            user_code: self.code.user_code.clone(),
            verification_url: self.code.verification_url.clone(),
            expires_in_secs: CODE_LIFETIME
                .saturating_sub(self.started.elapsed())
                .as_secs(),
        }
    }

    /// How long to wait between polls.
    pub fn interval(&self) -> Duration {
        self.code.interval
    }

    /// Polls once; on approval the tokens are stored and the sign-in is done. Asked again
    /// within the interval, it answers "waiting" without asking the service.
    pub async fn poll(&self) -> Result<Progress, ProjectError> {
        if self.started.elapsed() > CODE_LIFETIME {
            return Ok(Progress::Expired);
        }
        {
            let mut last = self
                .last_poll
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(at) = *last
                && at.elapsed() < self.code.interval
            {
                return Ok(Progress::Waiting {
                    retry_in_secs: (self.code.interval - at.elapsed()).as_secs().max(1),
                });
            }
            *last = Some(Instant::now());
        }
        let store = store()?;
        match chatgpt::poll_device_code(&self.endpoints, &self.code, &store).await? {
            Some(signed_in) => Ok(Progress::SignedIn(signed_in)),
            None => Ok(Progress::Waiting {
                retry_in_secs: self.code.interval.as_secs(),
            }),
        }
    }
}

/// The sign-in an interface started, kept in the gateway's memory (the pending handle never
/// leaves it): one at a time per gateway; a new start replaces it.
#[derive(Default)]
pub struct SignInDesk(std::sync::Mutex<Option<std::sync::Arc<SignIn>>>);

impl SignInDesk {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<std::sync::Arc<SignIn>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a sign-in (blocking: the service is asked on the requests' runtime).
    pub fn start(&self) -> Result<Pending, ProjectError> {
        let sign_in = crate::own_runtime::on_own_runtime(SignIn::start())?;
        let pending = sign_in.pending();
        *self.slot() = Some(std::sync::Arc::new(sign_in));
        Ok(pending)
    }

    /// The sign-in in progress, if any.
    pub fn pending(&self) -> Option<Pending> {
        self.slot().as_ref().map(|s| s.pending())
    }

    /// Polls the sign-in in progress (blocking); a finished or expired one is let go.
    pub fn poll(&self) -> Result<Progress, ProjectError> {
        let Some(sign_in) = self.slot().clone() else {
            return Err(crate::Absent::SignIn.into());
        };
        let polled = std::sync::Arc::clone(&sign_in);
        let progress = crate::own_runtime::on_own_runtime(async move { polled.poll().await })?;
        if !matches!(progress, Progress::Waiting { .. }) {
            let mut slot = self.slot();
            if slot
                .as_ref()
                .is_some_and(|s| std::sync::Arc::ptr_eq(s, &sign_in))
            {
                *slot = None;
            }
        }
        Ok(progress)
    }
}
