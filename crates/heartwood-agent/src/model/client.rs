//! Sending one chat completion, with retries.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use super::error::{AttemptError, classify_status, scrub};
use super::stream::{Assembler, MAX_REPLY_BYTES, ModelReply, Step, bounded};
use super::wire::{ChatCompletion, ChatRequest};
use super::{ChatMessage, ModelError, ModelRoute, ToolSpec, Usage};

/// A client for one model route.
#[derive(Debug, Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    route: ModelRoute,
    replay: Option<super::replay::Replayer>,
}

impl ModelClient {
    /// A client for `route`.
    pub fn new(route: ModelRoute) -> Result<Self, ModelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(route.connect_timeout)
            .build()
            .map_err(|e| ModelError::Connection {
                attempts: 0,
                detail: e.to_string(),
            })?;
        let replay = match &route.replay {
            Some(path) => Some(super::replay::Replayer::new(super::replay::load(path)?, 0)),
            None => None,
        };
        Ok(ModelClient {
            http,
            route,
            replay,
        })
    }

    /// For a replaying client: continue after the first `position` recorded calls.
    pub fn replay_from(&self, position: usize) {
        if let Some(replay) = &self.replay {
            replay.set_position(position);
        }
    }

    /// The route this client calls.
    pub fn route(&self) -> &ModelRoute {
        &self.route
    }

    /// Sends `messages` (offering `tools`) and returns the reply. Streamed token text goes to
    /// `on_token` as it arrives and is not kept anywhere else.
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelReply, ModelError> {
        if let Some(replay) = &self.replay {
            return replay.reply(messages, on_token);
        }
        let key = match &self.route.api_key_env {
            Some(env) => match std::env::var(env) {
                Ok(key) if !key.is_empty() => Some(key),
                _ => return Err(ModelError::MissingApiKey { env: env.clone() }),
            },
            None => None,
        };
        // A subscription signs each call with its current token (refreshed when due).
        let (key, account) = match &self.route.subscription {
            Some(sub) => {
                let (token, account) = sub.store.access(&self.http, &sub.endpoints).await?;
                (Some(token), account)
            }
            None => (key, None),
        };
        let body = if self.route.subscription.is_some() {
            serde_json::to_vec(&super::responses::request_body(
                &self.route.model,
                messages,
                tools,
            ))
        } else {
            serde_json::to_vec(&ChatRequest {
                model: &self.route.model,
                messages,
                tools,
                max_tokens: self.route.max_output_tokens,
                stream: self.route.stream,
                stream_options: self
                    .route
                    .stream
                    .then(|| serde_json::json!({"include_usage": true})),
            })
        }
        .map_err(|e| ModelError::Malformed {
            detail: e.to_string(),
        })?;
        let mut backoff = self.route.initial_backoff;
        let mut attempt = 0;
        let total = self.route.total_timeout;
        let deadline = tokio::time::Instant::now() + total;
        let past_deadline = |attempts| ModelError::Deadline { attempts, total };
        loop {
            attempt += 1;
            let attempted = tokio::time::timeout_at(
                deadline,
                self.attempt(&body, key.as_deref(), account.as_deref(), attempt, on_token),
            )
            .await;
            let Ok(attempted) = attempted else {
                return Err(past_deadline(attempt));
            };
            match attempted {
                Ok(reply) => return Ok(reply),
                Err(AttemptError::Retry { after, .. }) if attempt <= self.route.max_retries => {
                    let wait = after.unwrap_or(backoff);
                    if tokio::time::Instant::now() + wait >= deadline {
                        return Err(past_deadline(attempt));
                    }
                    tokio::time::sleep(wait).await;
                    backoff = backoff.saturating_mul(2).min(Duration::from_secs(30));
                }
                Err(AttemptError::Retry { error, .. } | AttemptError::Fatal(error)) => {
                    return Err(scrub_error(error, key.as_deref()));
                }
            }
        }
    }

    /// The models the service lists at `GET {base_url}/models` (OpenAI's list format), in the
    /// service's order; `Ok(None)` when the service does not offer the listing (404, 405, 501).
    /// One attempt, bounded by the route's idle timeout and 1 MiB.
    pub async fn list_models(&self) -> Result<Option<Vec<String>>, ModelError> {
        let key = match &self.route.api_key_env {
            Some(env) => match std::env::var(env) {
                Ok(key) if !key.is_empty() => Some(key),
                _ => return Err(ModelError::MissingApiKey { env: env.clone() }),
            },
            None => None,
        };
        let mut request = self.http.get(format!("{}/models", self.route.base_url));
        if let Some(key) = &key {
            request = request.bearer_auth(key);
        }
        let idle = self.route.idle_timeout;
        let failed = |detail: String| {
            scrub_error(
                ModelError::Connection {
                    attempts: 1,
                    detail,
                },
                key.as_deref(),
            )
        };
        let response = tokio::time::timeout(idle, request.send())
            .await
            .map_err(|_| failed(format!("no answer within {}s", idle.as_secs())))?
            .map_err(|e| failed(e.to_string()))?;
        let status = response.status().as_u16();
        if matches!(status, 404 | 405 | 501) {
            return Ok(None);
        }
        if !(200..300).contains(&status) {
            let text = response.text().await.unwrap_or_default();
            let env = self.route.api_key_env.as_deref();
            return Err(
                match classify_status(status, &text, &self.route.model, env, 1) {
                    AttemptError::Retry { error, .. } | AttemptError::Fatal(error) => {
                        scrub_error(error, key.as_deref())
                    }
                },
            );
        }
        let mut response = response;
        let mut bytes = Vec::new();
        while let Some(chunk) = tokio::time::timeout(idle, response.chunk())
            .await
            .map_err(|_| failed("the model list stalled".into()))?
            .map_err(|e| failed(e.to_string()))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > 1 << 20 {
                return Err(ModelError::Malformed {
                    detail: "the model list is larger than 1 MiB".into(),
                });
            }
        }
        #[derive(serde::Deserialize)]
        struct Listed {
            id: String,
        }
        #[derive(serde::Deserialize)]
        struct List {
            data: Vec<Listed>,
        }
        let list: List = serde_json::from_slice(&bytes).map_err(|e| ModelError::Malformed {
            detail: format!("GET /models did not answer with a model list: {e}"),
        })?;
        Ok(Some(list.data.into_iter().map(|m| m.id).collect()))
    }

    async fn attempt(
        &self,
        body: &[u8],
        key: Option<&str>,
        account: Option<&str>,
        attempts: u32,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelReply, AttemptError> {
        let responses = self.route.subscription.is_some();
        let url = if responses {
            format!("{}/responses", self.route.base_url)
        } else {
            format!("{}/chat/completions", self.route.base_url)
        };
        let mut request = self
            .http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(account) = account {
            request = request.header("chatgpt-account-id", account);
        }
        let idle = self.route.idle_timeout;
        let timeout = || AttemptError::Retry {
            error: ModelError::Timeout { attempts, idle },
            after: None,
        };
        let response = match tokio::time::timeout(idle, request.send()).await {
            Err(_) => return Err(timeout()),
            Ok(Err(e)) => return Err(connection_failed(attempts, &e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let after = retry_after(&response);
            let text = tokio::time::timeout(idle, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let env = self.route.api_key_env.as_deref();
            return Err(
                match classify_status(status.as_u16(), &text, &self.route.model, env, attempts) {
                    AttemptError::Retry { error, .. } => AttemptError::Retry { error, after },
                    fatal => fatal,
                },
            );
        }
        let is_event_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        // Some servers ignore `stream: true` and answer with one JSON body; read it as such.
        // (The Responses API is always streamed.)
        if !responses && (!self.route.stream || !is_event_stream) {
            let mut response = response;
            let mut bytes = Vec::new();
            loop {
                match tokio::time::timeout(idle, response.chunk()).await {
                    Err(_) => return Err(timeout()),
                    Ok(Err(e)) => return Err(connection_failed(attempts, &e)),
                    Ok(Ok(None)) => break,
                    Ok(Ok(Some(chunk))) => {
                        bytes.extend_from_slice(&chunk);
                        if bytes.len() > MAX_WIRE_BYTES {
                            return Err(AttemptError::Fatal(too_large_wire()));
                        }
                    }
                }
            }
            return parse_completion(&bytes, self.route.prices)
                .and_then(bounded)
                .map_err(AttemptError::Fatal);
        }
        // The bytes received are counted as they arrive, so one endless line cannot grow the
        // reader's buffer past the limit either.
        let over = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&over);
        let mut received = 0usize;
        let mut events = response
            .bytes_stream()
            .take_while(move |chunk| {
                if let Ok(chunk) = chunk {
                    received += chunk.len();
                }
                let within = received <= MAX_WIRE_BYTES;
                if !within {
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                std::future::ready(within)
            })
            .eventsource();
        let mut assembler = Assembler::default();
        let mut done = false;
        loop {
            let next = match tokio::time::timeout(idle, events.next()).await {
                Err(_) if assembler.emitted_text => {
                    let detail = format!("no data for {}s after text had arrived", idle.as_secs());
                    return Err(AttemptError::Fatal(ModelError::StreamEndedEarly { detail }));
                }
                Err(_) => return Err(timeout()),
                Ok(next) => next,
            };
            match next {
                None => break,
                Some(Err(e)) => {
                    let error = ModelError::StreamEndedEarly {
                        detail: e.to_string(),
                    };
                    return Err(if assembler.emitted_text {
                        AttemptError::Fatal(error)
                    } else {
                        AttemptError::Retry { error, after: None }
                    });
                }
                Some(Ok(event)) => {
                    let step = if responses {
                        assembler.accept_response_event(&event.data, on_token)
                    } else {
                        assembler.accept(&event.data, on_token)
                    };
                    if step.map_err(AttemptError::Fatal)? == Step::Done {
                        done = true;
                        break;
                    }
                }
            }
        }
        if over.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(AttemptError::Fatal(too_large_wire()));
        }
        if !done && !assembler.finished() {
            let error = ModelError::StreamEndedEarly {
                detail: "the connection closed before the reply's end marker".to_owned(),
            };
            return Err(if assembler.emitted_text {
                AttemptError::Fatal(error)
            } else {
                AttemptError::Retry { error, after: None }
            });
        }
        bounded(assembler.finish(self.route.prices)).map_err(AttemptError::Fatal)
    }
}

/// The most bytes one reply may take on the wire (its framing included).
const MAX_WIRE_BYTES: usize = 2 * MAX_REPLY_BYTES;

fn too_large_wire() -> ModelError {
    ModelError::TooLarge {
        detail: format!("over {MAX_WIRE_BYTES} bytes on the wire"),
    }
}

fn parse_completion(bytes: &[u8], prices: Option<super::Prices>) -> Result<ModelReply, ModelError> {
    let completion: ChatCompletion =
        serde_json::from_slice(bytes).map_err(|e| ModelError::Malformed {
            detail: format!(
                "{e}; the reply began {:?}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
            ),
        })?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ModelError::Malformed {
            detail: "the reply has no choices".to_owned(),
        })?;
    Ok(ModelReply {
        response_id: completion.id,
        content: choice.message.content.filter(|c| !c.is_empty()),
        tool_calls: choice.message.tool_calls,
        usage: completion.usage.map_or(
            Usage {
                calls: 1,
                ..Usage::default()
            },
            |u| u.into_usage(prices),
        ),
        finish_reason: choice.finish_reason,
    })
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let secs: u64 = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs.min(60)))
}

/// A transport failure: worth another attempt.
fn connection_failed(attempts: u32, e: &reqwest::Error) -> AttemptError {
    let error = ModelError::Connection {
        attempts,
        detail: describe_reqwest(e),
    };
    AttemptError::Retry { error, after: None }
}

fn describe_reqwest(e: &reqwest::Error) -> String {
    // reqwest's Display names the URL, never headers, so the key cannot appear here.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn scrub_error(error: ModelError, key: Option<&str>) -> ModelError {
    let clean = |s: String| scrub(&s, key);
    match error {
        ModelError::Authentication {
            status,
            detail,
            env,
        } => ModelError::Authentication {
            status,
            detail: clean(detail),
            env,
        },
        ModelError::UnknownModel { model, detail } => ModelError::UnknownModel {
            model,
            detail: clean(detail),
        },
        ModelError::ContextWindowExceeded { detail } => ModelError::ContextWindowExceeded {
            detail: clean(detail),
        },
        ModelError::RateLimited { attempts, detail } => ModelError::RateLimited {
            attempts,
            detail: clean(detail),
        },
        ModelError::Server {
            status,
            attempts,
            detail,
        } => ModelError::Server {
            status,
            attempts,
            detail: clean(detail),
        },
        ModelError::Connection { attempts, detail } => ModelError::Connection {
            attempts,
            detail: clean(detail),
        },
        ModelError::Rejected { status, detail } => ModelError::Rejected {
            status,
            detail: clean(detail),
        },
        other => other,
    }
}
