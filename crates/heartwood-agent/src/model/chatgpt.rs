//! Signing in with a ChatGPT subscription, and the tokens it yields.
//!
//! The sign-in is the device-code dialect Codex CLI uses against OpenAI's accounts service (not
//! RFC 8628): ask for a user code (`POST {issuer}/api/accounts/deviceauth/usercode`), show it
//! with the verification page (`{issuer}/codex/device`), poll `POST
//! {issuer}/api/accounts/deviceauth/token` (403/404 while the person has not approved) until it
//! returns an authorization code with a PKCE verifier the service minted, and exchange those at
//! `{issuer}/oauth/token`. The same endpoint refreshes the access token before it expires. The
//! issuer and client id are configuration ([`Endpoints`]), so tests point them at a local
//! server.
//!
//! The tokens live in one file outside every project, created with mode 0600 and replaced
//! atomically ([`TokenStore`]); nothing else of Heartwood holds them. What interfaces may see is
//! [`SignedIn`]: who and until when, never a token.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::ModelError;

/// Refresh an access token that expires within this long.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// How long one request to the sign-in service may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the sign-in service is, and who Heartwood is to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoints {
    /// The accounts service, e.g. `https://auth.openai.com`.
    pub issuer: String,
    /// The OAuth client id.
    pub client_id: String,
}

/// A device code waiting for the person to approve it. `device_auth_id` is the pending handle:
/// it stays in the memory of the process that asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCode {
    /// The code the person types on the verification page.
    pub user_code: String,
    /// The page where they type it.
    pub verification_url: String,
    /// How often to poll.
    pub interval: Duration,
    device_auth_id: String,
}

/// The tokens, as stored.
#[derive(Clone, Serialize, Deserialize)]
struct Tokens {
    access_token: String,
    refresh_token: String,
    /// Seconds since the epoch.
    expires_at: u64,
    #[serde(default)]
    account_id: Option<String>,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    plan: Option<String>,
}

/// Who is signed in, for interfaces (no token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SignedIn {
    /// The account's email, when the service said.
    pub email: Option<String>,
    /// The subscription plan, when the service said.
    pub plan: Option<String>,
    /// When the current access token expires (seconds since the epoch); it is refreshed
    /// before then.
    pub expires_at: u64,
}

/// The file holding the tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    path: PathBuf,
}

impl TokenStore {
    /// The store at `path` (created on the first sign-in).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        TokenStore { path: path.into() }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Who is signed in, if anyone.
    pub fn signed_in(&self) -> Result<Option<SignedIn>, ModelError> {
        Ok(self.load()?.map(|t| SignedIn {
            email: t.email,
            plan: t.plan,
            expires_at: t.expires_at,
        }))
    }

    /// Forgets the tokens.
    pub fn sign_out(&self) -> Result<bool, ModelError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(store_error(&self.path, &e)),
        }
    }

    fn load(&self) -> Result<Option<Tokens>, ModelError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error(&self.path, &e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ModelError::Auth {
                detail: format!(
                    "{} is not a ChatGPT sign-in ({e}); sign in again",
                    self.path.display()
                ),
            })
    }

    /// Writes the tokens to a new file with mode 0600 and renames it over the old one, so a
    /// reader never sees half a file and no other user can read it at any moment.
    fn save(&self, tokens: &Tokens) -> Result<(), ModelError> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // The folder is private whatever the umask: made 0700, and tightened if it exists.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| store_error(dir, &e))?;
        let tmp = dir.join(format!(".chatgpt.{}.tmp", std::process::id()));
        let bytes = serde_json::to_vec(tokens).map_err(|e| ModelError::Auth {
            detail: e.to_string(),
        })?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| store_error(&tmp, &e))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| store_error(&tmp, &e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| store_error(&self.path, &e))
    }

    /// A usable access token and its account, refreshed first when it expires within five
    /// minutes (the refreshed tokens are stored before they are used).
    pub async fn access(
        &self,
        http: &reqwest::Client,
        endpoints: &Endpoints,
    ) -> Result<(String, Option<String>), ModelError> {
        let Some(tokens) = self.load()? else {
            return Err(ModelError::Auth {
                detail: "not signed in to ChatGPT; run `heartwood model signin`".into(),
            });
        };
        if tokens.expires_at > now() + REFRESH_MARGIN.as_secs() {
            return Ok((tokens.access_token, tokens.account_id));
        }
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens.refresh_token.as_str()),
            ("client_id", endpoints.client_id.as_str()),
        ];
        let fresh = token_request(http, endpoints, &form).await?;
        let tokens = Tokens {
            // A service that does not rotate the refresh token keeps the old one valid.
            refresh_token: if fresh.refresh_token.is_empty() {
                tokens.refresh_token
            } else {
                fresh.refresh_token.clone()
            },
            email: fresh.email.clone().or(tokens.email),
            plan: fresh.plan.clone().or(tokens.plan),
            account_id: fresh.account_id.clone().or(tokens.account_id),
            ..fresh
        };
        self.save(&tokens)?;
        Ok((tokens.access_token, tokens.account_id))
    }
}

fn store_error(path: &Path, e: &std::io::Error) -> ModelError {
    ModelError::Auth {
        detail: format!("cannot use the sign-in file {}: {e}", path.display()),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn client() -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| ModelError::Auth {
            detail: e.to_string(),
        })
}

/// Asks the service for a device code.
pub async fn request_device_code(endpoints: &Endpoints) -> Result<DeviceCode, ModelError> {
    #[derive(Deserialize)]
    struct Answer {
        device_auth_id: String,
        user_code: String,
        #[serde(default)]
        interval: Option<serde_json::Value>,
    }
    let url = format!("{}/api/accounts/deviceauth/usercode", endpoints.issuer);
    let response = client()?
        .post(&url)
        .json(&serde_json::json!({"client_id": endpoints.client_id}))
        .send()
        .await
        .map_err(|e| auth_failed("ask for a device code", &e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(auth_failed("ask for a device code", &status.to_string()));
    }
    let answer: Answer = response
        .json()
        .await
        .map_err(|e| auth_failed("read the device code", &e.to_string()))?;
    // The service sends the interval as a number or a numeric string.
    let secs = match answer.interval {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .unwrap_or(5)
    .clamp(1, 60);
    Ok(DeviceCode {
        user_code: answer.user_code,
        verification_url: format!("{}/codex/device", endpoints.issuer),
        interval: Duration::from_secs(secs),
        device_auth_id: answer.device_auth_id,
    })
}

/// Polls once: `Ok(None)` while the person has not approved; once they have, exchanges the
/// authorization code, stores the tokens in `store` and says who signed in.
pub async fn poll_device_code(
    endpoints: &Endpoints,
    code: &DeviceCode,
    store: &TokenStore,
) -> Result<Option<SignedIn>, ModelError> {
    #[derive(Deserialize)]
    struct Approved {
        authorization_code: String,
        code_verifier: String,
    }
    let http = client()?;
    let url = format!("{}/api/accounts/deviceauth/token", endpoints.issuer);
    let response = http
        .post(&url)
        .json(&serde_json::json!({"device_auth_id": code.device_auth_id, "user_code": code.user_code}))
        .send()
        .await
        .map_err(|e| auth_failed("poll the sign-in", &e.to_string()))?;
    let status = response.status();
    if status == reqwest::StatusCode::FORBIDDEN || status == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(auth_failed("poll the sign-in", &status.to_string()));
    }
    let approved: Approved = response
        .json()
        .await
        .map_err(|e| auth_failed("read the approval", &e.to_string()))?;
    let redirect = format!("{}/deviceauth/callback", endpoints.issuer);
    let form = [
        ("grant_type", "authorization_code"),
        ("code", approved.authorization_code.as_str()),
        ("redirect_uri", redirect.as_str()),
        ("client_id", endpoints.client_id.as_str()),
        ("code_verifier", approved.code_verifier.as_str()),
    ];
    let tokens = token_request(&http, endpoints, &form).await?;
    store.save(&tokens)?;
    store.signed_in()
}

async fn token_request(
    http: &reqwest::Client,
    endpoints: &Endpoints,
    form: &[(&str, &str)],
) -> Result<Tokens, ModelError> {
    #[derive(Deserialize)]
    struct Granted {
        access_token: String,
        #[serde(default)]
        refresh_token: String,
        #[serde(default)]
        id_token: Option<String>,
        #[serde(default)]
        expires_in: Option<u64>,
    }
    let url = format!("{}/oauth/token", endpoints.issuer);
    let response = http
        .post(&url)
        .form(form)
        .send()
        .await
        .map_err(|e| auth_failed("get tokens", &e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        let why = if status == reqwest::StatusCode::BAD_REQUEST
            || status == reqwest::StatusCode::UNAUTHORIZED
        {
            format!(
                "{status}: the sign-in was refused or has expired; run `heartwood model signin` again"
            )
        } else {
            status.to_string()
        };
        return Err(auth_failed("get tokens", &why));
    }
    let granted: Granted = response
        .json()
        .await
        .map_err(|e| auth_failed("read the tokens", &e.to_string()))?;
    let access = claims(&granted.access_token);
    let id = granted.id_token.as_deref().map(claims).unwrap_or_default();
    let auth = |c: &serde_json::Value, key: &str| {
        c["https://api.openai.com/auth"][key]
            .as_str()
            .map(str::to_owned)
    };
    let expires_at = granted
        .expires_in
        .map(|secs| now() + secs)
        .or_else(|| access["exp"].as_u64())
        .unwrap_or_else(|| now() + 3600);
    Ok(Tokens {
        account_id: auth(&access, "chatgpt_account_id").or_else(|| auth(&id, "chatgpt_account_id")),
        plan: auth(&access, "chatgpt_plan_type").or_else(|| auth(&id, "chatgpt_plan_type")),
        email: id["email"].as_str().map(str::to_owned),
        access_token: granted.access_token,
        refresh_token: granted.refresh_token,
        expires_at,
    })
}

/// A JSON Web Token's claims, unverified (the service that issued the token verifies it; the
/// client only reads who and until when). Anything unreadable is no claims.
fn claims(token: &str) -> serde_json::Value {
    token
        .split('.')
        .nth(1)
        .and_then(|part| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part.trim_end_matches('='))
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn auth_failed(what: &str, why: &str) -> ModelError {
    ModelError::Auth {
        detail: format!("could not {what}: {why}"),
    }
}
