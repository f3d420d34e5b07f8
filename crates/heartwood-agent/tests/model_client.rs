//! The model client against the scripted OpenAI-compatible server, over real TCP and HTTP:
//! replies assembled correctly in both modes, and every injected fault classified.

use std::time::Duration;

use heartwood_agent::model::{ChatMessage, ModelClient, ModelError, ModelRoute, ToolSpec};
use heartwood_testkit::{Fault, Script, ScriptedModelServer, Turn};
use serde_json::json;

fn route(server: &ScriptedModelServer, stream: bool) -> ModelRoute {
    ModelRoute {
        stream,
        max_retries: 2,
        initial_backoff: Duration::from_millis(5),
        idle_timeout: Duration::from_millis(500),
        ..ModelRoute::compatible(&server.base_url(), "scripted-model")
    }
}

fn hello() -> Vec<ChatMessage> {
    vec![ChatMessage::User {
        content: "hello".into(),
    }]
}

async fn call(
    route: ModelRoute,
) -> (
    Result<heartwood_agent::model::ModelReply, ModelError>,
    String,
) {
    let client = ModelClient::new(route).expect("client");
    let mut streamed = String::new();
    let reply = client
        .complete(&hello(), &[] as &[ToolSpec], &mut |t: &str| {
            streamed.push_str(t)
        })
        .await;
    (reply, streamed)
}

fn two_calls() -> Turn {
    Turn::calls(&[
        ("terminal", json!({"command": "ls -la data/"})),
        (
            "file_editor",
            json!({"command": "view", "path": "notes/ünïcode.md"}),
        ),
    ])
    .with_usage(120, 30)
}

#[tokio::test]
async fn a_streamed_reply_is_assembled_by_index_with_usage_and_live_tokens() {
    let mut turn = two_calls();
    turn.content = Some("Let me look at the data first — then the notes.".into());
    let server = ScriptedModelServer::start(Script::of(vec![turn]))
        .await
        .expect("server");
    let (reply, streamed) = call(route(&server, true)).await;
    let reply = reply.expect("reply");
    assert_eq!(streamed, "Let me look at the data first — then the notes.");
    assert_eq!(reply.content.as_deref(), Some(streamed.as_str()));
    let calls: Vec<_> = reply
        .tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("terminal", r#"{"command":"ls -la data/"}"#),
            (
                "file_editor",
                r#"{"command":"view","path":"notes/ünïcode.md"}"#
            )
        ]
    );
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
    assert_eq!(
        (
            reply.usage.prompt_tokens,
            reply.usage.completion_tokens,
            reply.usage.calls
        ),
        (120, 30, 1)
    );
    let sent = &server.requests()[0];
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["model"], "scripted-model");
    assert_eq!(
        sent["messages"][0],
        json!({"role": "user", "content": "hello"})
    );
}

#[tokio::test]
async fn a_non_streamed_reply_gives_the_same_result() {
    let server = ScriptedModelServer::start(Script::of(vec![two_calls()]))
        .await
        .expect("server");
    let (reply, streamed) = call(route(&server, false)).await;
    let reply = reply.expect("reply");
    assert!(streamed.is_empty());
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(
        reply.tool_calls[0].function.arguments,
        r#"{"command":"ls -la data/"}"#
    );
    assert_eq!(reply.usage.prompt_tokens, 120);
    assert_eq!(server.requests()[0]["stream"], false);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_with_backoff() {
    let script = Script::of(vec![
        Turn::fault(Fault::Status {
            status: 429,
            body: None,
            retry_after_secs: None,
        }),
        Turn::fault(Fault::Status {
            status: 503,
            body: None,
            retry_after_secs: None,
        }),
        Turn::text("finally"),
    ]);
    let server = ScriptedModelServer::start(script).await.expect("server");
    let (reply, _) = call(route(&server, true)).await;
    assert_eq!(
        reply.expect("third attempt succeeds").content.as_deref(),
        Some("finally")
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn persistent_failures_are_classified_after_the_retry_budget() {
    let status = |status| {
        Turn::fault(Fault::Status {
            status,
            body: None,
            retry_after_secs: None,
        })
    };
    let server =
        ScriptedModelServer::start(Script::of(vec![status(429), status(429), status(429)]))
            .await
            .expect("server");
    let (reply, _) = call(route(&server, true)).await;
    assert!(
        matches!(reply, Err(ModelError::RateLimited { attempts: 3, .. })),
        "{reply:?}"
    );

    let server =
        ScriptedModelServer::start(Script::of(vec![status(500), status(502), status(500)]))
            .await
            .expect("server");
    let (reply, _) = call(route(&server, false)).await;
    let err = reply.expect_err("server errors");
    assert!(
        matches!(
            err,
            ModelError::Server {
                status: 500,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("resume"), "{err}");
}

#[tokio::test]
async fn refusals_are_classified_and_not_retried() {
    let cases = [
        (
            401,
            json!({"error": {"message": "Incorrect API key provided"}}),
            "authentication",
        ),
        (
            404,
            json!({"error": {"message": "The model `scripted-model` does not exist", "code": "model_not_found"}}),
            "unknown model",
        ),
        (
            400,
            json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}),
            "context window",
        ),
        (
            400,
            json!({"error": {"message": "temperature must be <= 2"}}),
            "rejected",
        ),
    ];
    for (status, body, label) in cases {
        let turn = Turn::fault(Fault::Status {
            status,
            body: Some(body),
            retry_after_secs: None,
        });
        let server = ScriptedModelServer::start(Script::of(vec![turn]))
            .await
            .expect("server");
        let (reply, _) = call(route(&server, true)).await;
        let err = reply.expect_err(label);
        let ok = match label {
            "authentication" => matches!(err, ModelError::Authentication { status: 401, .. }),
            "unknown model" => {
                matches!(&err, ModelError::UnknownModel { model, .. } if model == "scripted-model")
            }
            "context window" => matches!(err, ModelError::ContextWindowExceeded { .. }),
            _ => matches!(err, ModelError::Rejected { status: 400, .. }),
        };
        assert!(ok, "{label}: {err:?}");
        assert_eq!(server.requests().len(), 1, "{label} was retried");
    }
}

#[tokio::test]
async fn a_stream_cut_mid_chunk_is_retried_before_text_and_reported_after() {
    // Cut after the role chunk: no text yet, so the client asks again and succeeds.
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::text("whole reply").with_fault(Fault::CutAfterChunks(1)),
        Turn::text("whole reply"),
    ]))
    .await
    .expect("server");
    let (reply, streamed) = call(route(&server, true)).await;
    assert_eq!(
        reply.expect("retried").content.as_deref(),
        Some("whole reply")
    );
    assert_eq!(streamed, "whole reply");

    // Cut after text was shown: asking again would repeat it, so the error is reported.
    let long = "a reply long enough to arrive in several pieces";
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::text(long).with_fault(Fault::CutAfterChunks(3)),
    ]))
    .await
    .expect("server");
    let (reply, streamed) = call(route(&server, true)).await;
    assert!(
        matches!(reply, Err(ModelError::StreamEndedEarly { .. })),
        "{reply:?}"
    );
    assert!(!streamed.is_empty() && long.starts_with(&streamed));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_reply_that_is_not_a_completion_is_malformed() {
    for stream in [true, false] {
        let server = ScriptedModelServer::start(Script::of(vec![Turn::fault(Fault::Garbage)]))
            .await
            .expect("server");
        let (reply, _) = call(route(&server, stream)).await;
        assert!(
            matches!(
                reply,
                Err(ModelError::Malformed { .. }) | Err(ModelError::StreamEndedEarly { .. })
            ),
            "stream={stream}: {reply:?}"
        );
    }
}

#[tokio::test]
async fn slow_chunks_beyond_the_idle_timeout_are_a_timeout() {
    let slow = || Turn::text("slow").with_fault(Fault::ChunkDelayMs(800));
    let server = ScriptedModelServer::start(Script::of(vec![slow(), slow(), slow()]))
        .await
        .expect("server");
    let (reply, _) = call(route(&server, true)).await;
    assert!(
        matches!(reply, Err(ModelError::Timeout { attempts: 3, .. })),
        "{reply:?}"
    );
}

#[tokio::test]
async fn a_silent_service_is_given_up_on_at_the_calls_total_deadline() {
    // Each attempt stays within the idle limit chunk by chunk but the whole call is bounded:
    // the client gives up at the deadline instead of after every attempt's idle limits.
    let slow = || Turn::text("slow reply with many words").with_fault(Fault::ChunkDelayMs(300));
    let server = ScriptedModelServer::start(Script::of(vec![slow(), slow(), slow()]))
        .await
        .expect("server");
    let route = ModelRoute {
        total_timeout: Duration::from_millis(700),
        ..route(&server, true)
    };
    let (reply, _) = call(route).await;
    assert!(
        matches!(reply, Err(ModelError::Deadline { attempts: 1, .. })),
        "{reply:?}"
    );
    let message = reply.expect_err("deadline").to_string();
    assert!(message.contains("--timeout-secs"), "{message}");
}

#[tokio::test]
async fn an_unreachable_service_is_a_connection_error() {
    let server = ScriptedModelServer::start(Script::default())
        .await
        .expect("server");
    let mut route = route(&server, true);
    drop(server);
    // A port nothing listens on (the server is gone).
    route.base_url = "http://127.0.0.1:9/v1".to_owned();
    let (reply, _) = call(route).await;
    let err = reply.expect_err("nothing listens there");
    assert!(
        matches!(err, ModelError::Connection { attempts: 3, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("base URL"), "{err}");
}

#[tokio::test]
async fn the_api_key_comes_from_the_named_variable_and_never_appears_in_errors() {
    // Set for every test process by `.cargo/config.toml`; the other name is set nowhere.
    let env = "HEARTWOOD_TEST_MODEL_KEY";
    let unset = "HEARTWOOD_TEST_UNSET_MODEL_KEY";
    let server = ScriptedModelServer::start(Script::of(vec![
        Turn::text("ok"),
        Turn::fault(Fault::Status {
            status: 401,
            body: Some(
                json!({"error": {"message": "Incorrect API key provided: sk-test-secret-123"}}),
            ),
            retry_after_secs: None,
        }),
    ]))
    .await
    .expect("server");
    let mut route = route(&server, true);
    route.api_key_env = Some(unset.to_owned());
    let (missing, _) = call(route.clone()).await;
    assert_eq!(
        missing,
        Err(ModelError::MissingApiKey {
            env: unset.to_owned()
        })
    );
    assert!(
        server.requests().is_empty(),
        "a request was sent without the key"
    );

    route.api_key_env = Some(env.to_owned());
    let (reply, _) = call(route.clone()).await;
    assert_eq!(reply.expect("ok").content.as_deref(), Some("ok"));
    assert_eq!(
        server.authorizations()[0].as_deref(),
        Some("Bearer sk-test-secret-123")
    );
    let (reply, _) = call(route).await;
    let err = reply.expect_err("refused");
    assert!(
        !format!("{err} {err:?}").contains("sk-test-secret-123"),
        "{err:?}"
    );
    assert!(err.to_string().contains(env), "{err}");
}

#[tokio::test]
async fn an_oversized_reply_or_one_with_too_many_calls_is_refused_not_buffered() {
    let huge = "x".repeat(heartwood_agent::model::MAX_REPLY_BYTES + 1024);
    let many: Vec<(&str, serde_json::Value)> = (0..1000)
        .map(|_| ("think", json!({"thought": "t"})))
        .collect();
    for stream in [true, false] {
        let server =
            ScriptedModelServer::start(Script::of(vec![Turn::text(&huge), Turn::calls(&many)]))
                .await
                .expect("server");
        // Room to send the large reply: the limit, not a timeout, must be what stops it.
        let patient = ModelRoute {
            idle_timeout: Duration::from_secs(30),
            max_retries: 0,
            ..route(&server, stream)
        };
        let (reply, _) = call(patient.clone()).await;
        // Not `expect_err`: the reply would be printed, all 8 MB of it.
        let Err(error) = reply else {
            panic!("a reply over the limit was read")
        };
        assert!(matches!(error, ModelError::TooLarge { .. }), "{error}");
        assert!(error.to_string().contains("too large"), "{error}");
        let (reply, _) = call(patient).await;
        let Err(error) = reply else {
            panic!("1000 tool calls were read")
        };
        assert!(error.to_string().contains("1000 tool calls"), "{error}");
    }
}
