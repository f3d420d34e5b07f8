//! Model errors, classified so that the engine (and the researcher) know what to do next.

use std::time::Duration;

/// Why a model call failed. Each message ends with what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A replayed run left its recording (or the recording could not be read).
    #[error("replay stopped: {detail}")]
    Replay {
        /// What happened, and where.
        detail: String,
    },
    /// Signing in with a subscription, or using its tokens, failed.
    #[error("ChatGPT sign-in: {detail}")]
    Auth {
        /// What happened, and what to do.
        detail: String,
    },
    /// The route names an API key variable that is not set.
    #[error(
        "the model route needs an API key in the environment variable {env}, which is not set; export it and try again"
    )]
    MissingApiKey {
        /// The variable's name.
        env: String,
    },
    /// The service refused the credentials.
    #[error("the model service refused the credentials (HTTP {status}: {detail}); check the API key{}", key_hint(env.as_deref()))]
    Authentication {
        /// HTTP status.
        status: u16,
        /// The service's words, with any key removed.
        detail: String,
        /// The variable the key came from.
        env: Option<String>,
    },
    /// The service does not serve the model.
    #[error(
        "the model service does not know the model {model:?} ({detail}); check the model name in the route, or list the service's models"
    )]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The service's words.
        detail: String,
    },
    /// The request did not fit the model's context window.
    #[error(
        "the conversation no longer fits the model's context window ({detail}); lower the route's input budget so older history is condensed, or use a model with a larger window"
    )]
    ContextWindowExceeded {
        /// The service's words.
        detail: String,
    },
    /// Still rate limited after every retry.
    #[error(
        "the model service is rate limiting requests (still after {attempts} attempts: {detail}); wait a minute and resume, or raise the route's limits with the provider"
    )]
    RateLimited {
        /// Attempts made.
        attempts: u32,
        /// The service's words.
        detail: String,
    },
    /// The service kept failing.
    #[error(
        "the model service failed with HTTP {status} on each of {attempts} attempts ({detail}); check the service's health, then resume"
    )]
    Server {
        /// Last HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The service's words.
        detail: String,
    },
    /// The service could not be reached.
    #[error(
        "could not reach the model service after {attempts} attempts ({detail}); check that it is running and that the route's base URL is right"
    )]
    Connection {
        /// Attempts made.
        attempts: u32,
        /// What failed.
        detail: String,
    },
    /// The service went quiet.
    #[error("the model service sent nothing for {}s (after {attempts} attempts); it may be overloaded: resume later or raise the route's idle timeout", idle.as_secs())]
    Timeout {
        /// Attempts made.
        attempts: u32,
        /// The idle limit.
        idle: Duration,
    },
    /// One model call, every attempt included, took longer than the route allows.
    #[error("the model call did not complete within {}s ({attempts} attempts); the service may be down or overloaded: check it, then resume, or raise the route's --timeout-secs", total.as_secs())]
    Deadline {
        /// Attempts made.
        attempts: u32,
        /// The limit for the whole call.
        total: Duration,
    },
    /// The reply was not a chat completion.
    #[error(
        "the model service sent a reply that is not a valid chat completion ({detail}); check that the base URL points at an OpenAI-compatible /v1 endpoint"
    )]
    Malformed {
        /// What was wrong.
        detail: String,
    },
    /// A streamed reply stopped before it was complete.
    #[error(
        "the model's streamed reply ended before it was complete ({detail}); resume to ask again"
    )]
    StreamEndedEarly {
        /// What was seen.
        detail: String,
    },
    /// The reply was larger than a reply may be (bytes, or tool calls in one reply).
    #[error(
        "the model's reply is too large ({detail}); it was not read further. Ask for smaller steps, or check the model's settings"
    )]
    TooLarge {
        /// What was over which limit.
        detail: String,
    },
    /// Another refusal (HTTP 4xx) that retrying will not fix.
    #[error(
        "the model service refused the request (HTTP {status}: {detail}); check the route's settings"
    )]
    Rejected {
        /// HTTP status.
        status: u16,
        /// The service's words.
        detail: String,
    },
}

fn key_hint(env: Option<&str>) -> String {
    env.map_or_else(
        || " (the route sends none)".to_owned(),
        |env| format!(" in {env}"),
    )
}

/// How one attempt failed: worth another try, or not.
pub(crate) enum AttemptError {
    Retry {
        error: ModelError,
        after: Option<Duration>,
    },
    Fatal(ModelError),
}

/// Classifies an HTTP error status and body.
pub(crate) fn classify_status(
    status: u16,
    body: &str,
    model: &str,
    env: Option<&str>,
    attempts: u32,
) -> AttemptError {
    let detail = error_detail(body);
    let lower = body.to_ascii_lowercase();
    let context = lower.contains("context_length_exceeded")
        || lower.contains("context length")
        || lower.contains("context window")
        || lower.contains("maximum context")
        || lower.contains("too many tokens");
    match status {
        401 | 403 => AttemptError::Fatal(ModelError::Authentication {
            status,
            detail,
            env: env.map(str::to_owned),
        }),
        404 if lower.contains("model") => AttemptError::Fatal(ModelError::UnknownModel {
            model: model.to_owned(),
            detail,
        }),
        400 | 413 | 422 if context => {
            AttemptError::Fatal(ModelError::ContextWindowExceeded { detail })
        }
        429 => AttemptError::Retry {
            error: ModelError::RateLimited { attempts, detail },
            after: None,
        },
        500..=599 => AttemptError::Retry {
            error: ModelError::Server {
                status,
                attempts,
                detail,
            },
            after: None,
        },
        _ => AttemptError::Fatal(ModelError::Rejected { status, detail }),
    }
}

/// The `error.message` of an OpenAI-style error body, or the start of the body.
fn error_detail(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
        })
        .and_then(|m| m.as_str().map(str::to_owned));
    let text = message.unwrap_or_else(|| body.trim().to_owned());
    let short: String = text.chars().take(300).collect();
    if short.is_empty() {
        "no details given".to_owned()
    } else {
        short
    }
}

/// Removes a secret from text that is about to be shown or stored: the route's own key, and
/// anything shaped like a credential (a service may echo someone's key in an error body).
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    let text = match secret {
        Some(secret) if secret.len() >= 4 => text.replace(secret, "[redacted]"),
        _ => text.to_owned(),
    };
    redact_secret_shapes(&text)
}

/// How credentials of common services begin.
const SECRET_PREFIXES: [&str; 12] = [
    "sk-",
    "sk_",
    "rk_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xox",
    "hf_",
    "AKIA",
    "AIza",
    "eyJ",
];

/// Replaces every word shaped like a credential (a known prefix and at least 16 characters of
/// key alphabet, or whatever follows `Bearer `) with `[redacted]`. Public so that text leaving
/// Heartwood in other forms (a provenance crate's command lines) is redacted the same way as
/// what the journal records of a service's error.
pub fn redact_secret_shapes(text: &str) -> String {
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut after_bearer = false;
    while !rest.is_empty() {
        let start = rest.find(is_key_char).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c: char| !is_key_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        let shaped = word.len() >= 16
            && (after_bearer || SECRET_PREFIXES.iter().any(|p| word.starts_with(p)));
        out.push_str(if shaped { "[redacted]" } else { word });
        after_bearer = word.eq_ignore_ascii_case("bearer");
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    #[test]
    fn credential_shapes_and_the_routes_key_are_redacted_and_prose_is_not() {
        let body = "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz. Header was \
                    Authorization: Bearer abcdefghijklmnopqrstu; also ghp_0123456789abcdefABCD \
                    and mine-own-key-42; see https://platform.example/account/api-keys";
        let clean = scrub(body, Some("mine-own-key-42"));
        for secret in [
            "sk-proj-AbCdEf0123456789xyz",
            "abcdefghijklmnopqrstu",
            "ghp_0123456789abcdefABCD",
            "mine-own-key-42",
        ] {
            assert!(!clean.contains(secret), "{secret} in {clean}");
        }
        assert!(
            clean.starts_with("Incorrect API key provided: [redacted]"),
            "{clean}"
        );
        assert!(
            clean.contains("https://platform.example/account/api-keys"),
            "{clean}"
        );
    }
}
