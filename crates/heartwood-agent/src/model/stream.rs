//! Assembling a streamed reply: content deltas in order, tool-call deltas by index, usage from
//! the final chunk.

use eventsource_stream::Eventsource;
use futures_util::{FutureExt, StreamExt};

use super::wire::{ChatChunk, ToolCall};
use super::{ModelError, Usage};

/// The model's reply to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelReply {
    /// The provider's response id; every action from this reply shares it.
    pub response_id: String,
    /// Assistant text, if any.
    pub content: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens and cost of this call.
    pub usage: Usage,
    /// Why the model stopped, as reported.
    pub finish_reason: Option<String>,
}

/// What one server-sent event meant for the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// More is to come.
    Continue,
    /// The server's `[DONE]` marker.
    Done,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The reply so far.
#[derive(Default)]
pub(crate) struct Assembler {
    response_id: String,
    content: String,
    calls: Vec<PartialCall>,
    usage: Option<super::wire::WireUsage>,
    finish_reason: Option<String>,
    pub emitted_text: bool,
}

impl Assembler {
    /// Folds one chunk in; content deltas also go to `on_token`.
    pub fn push(&mut self, chunk: ChatChunk, on_token: &mut (dyn FnMut(&str) + Send)) {
        if self.response_id.is_empty() {
            self.response_id = chunk.id;
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                on_token(&text);
                self.emitted_text = true;
                self.content.push_str(&text);
            }
            for delta in choice.delta.tool_calls {
                // Bounded: an index far beyond the calls seen so far is a malformed stream.
                if delta.index > self.calls.len() + 64 {
                    continue;
                }
                if self.calls.len() <= delta.index {
                    self.calls
                        .resize_with(delta.index + 1, PartialCall::default);
                }
                let call = &mut self.calls[delta.index];
                if let Some(id) = delta.id {
                    call.id = id;
                }
                if let Some(function) = delta.function {
                    if let Some(name) = function.name {
                        call.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
    }

    /// Folds in one event's data: the `[DONE]` marker ends the reply, anything else must be a
    /// chunk, and the reply so far must stay within [`MAX_REPLY_BYTES`].
    pub fn accept(
        &mut self,
        data: &str,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Step, ModelError> {
        if data.trim() == "[DONE]" {
            return Ok(Step::Done);
        }
        let chunk: ChatChunk = serde_json::from_str(data).map_err(|e| ModelError::Malformed {
            detail: format!("a streamed chunk is not JSON: {e}"),
        })?;
        self.push(chunk, on_token);
        self.within_limits()?;
        Ok(Step::Continue)
    }

    /// The reply so far is within [`MAX_REPLY_BYTES`], or why not.
    pub(crate) fn within_limits(&self) -> Result<(), ModelError> {
        if self.size() > MAX_REPLY_BYTES {
            return Err(ModelError::TooLarge {
                detail: format!("over {MAX_REPLY_BYTES} bytes of text and tool-call arguments"),
            });
        }
        Ok(())
    }

    /// Names the reply (the first id given wins, as for chunks).
    pub(crate) fn set_response_id(&mut self, id: &str) {
        if self.response_id.is_empty() {
            self.response_id = id.to_owned();
        }
    }

    /// Adds streamed text.
    pub(crate) fn push_text(&mut self, text: &str, on_token: &mut (dyn FnMut(&str) + Send)) {
        if !text.is_empty() {
            on_token(text);
            self.emitted_text = true;
            self.content.push_str(text);
        }
    }

    /// Adds a whole tool call.
    pub(crate) fn push_call(&mut self, id: &str, name: &str, arguments: &str) {
        if self.calls.len() <= MAX_TOOL_CALLS {
            self.calls.push(PartialCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            });
        }
    }

    /// Sets the usage reported.
    pub(crate) fn set_usage(&mut self, usage: super::wire::WireUsage) {
        self.usage = Some(usage);
    }

    /// Marks the reply finished, for `reason`.
    pub(crate) fn finish_with(&mut self, reason: &str) {
        self.finish_reason = Some(reason.to_owned());
    }

    /// Bytes of text and tool calls so far.
    pub fn size(&self) -> usize {
        self.content.len()
            + self
                .calls
                .iter()
                .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                .sum::<usize>()
    }

    /// Whether the model said it was done.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The whole reply.
    pub fn finish(self, prices: Option<super::Prices>) -> ModelReply {
        let response_id = self.response_id;
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            // Slots the stream never filled (an index skipped) are dropped; a call that came
            // with anything at all is kept, even nameless, so the engine records and answers it.
            .filter(|(_, c)| !(c.name.is_empty() && c.arguments.is_empty() && c.id.is_empty()))
            .map(|(i, c)| {
                let id = if c.id.is_empty() {
                    format!("{response_id}-call-{i}")
                } else {
                    c.id
                };
                ToolCall::new(&id, &c.name, &c.arguments)
            })
            .collect();
        ModelReply {
            response_id,
            content: (!self.content.is_empty()).then_some(self.content),
            tool_calls,
            usage: self.usage.map_or(
                Usage {
                    calls: 1,
                    ..Usage::default()
                },
                |u| u.into_usage(prices),
            ),
            finish_reason: self.finish_reason,
        }
    }
}

/// Decodes a whole event-stream body that arrived in `chunks`, as the client would: the same
/// framing, chunk decoding and limits, without a connection. For the fuzzer and for tests; the
/// client itself folds events in as they arrive, with its timeouts.
#[doc(hidden)]
pub fn decode_event_stream(chunks: &[&[u8]]) -> Result<ModelReply, ModelError> {
    let body = chunks
        .iter()
        .map(|chunk| Ok::<_, std::convert::Infallible>(bytes::Bytes::copy_from_slice(chunk)));
    let mut events = futures_util::stream::iter(body).eventsource();
    let mut assembler = Assembler::default();
    let mut done = false;
    // The body is all here, so every poll is ready.
    while let Some(Some(event)) = events.next().now_or_never() {
        let event = event.map_err(|e| ModelError::StreamEndedEarly {
            detail: e.to_string(),
        })?;
        if assembler.accept(&event.data, &mut |_| {})? == Step::Done {
            done = true;
            break;
        }
    }
    if !done && !assembler.finished() {
        return Err(ModelError::StreamEndedEarly {
            detail: "the connection closed before the reply's end marker".to_owned(),
        });
    }
    bounded(assembler.finish(None))
}

/// The most bytes of text and tool-call arguments one reply may carry.
pub const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

/// The most tool calls one reply may propose: each is an action the researcher reviews.
pub const MAX_TOOL_CALLS: usize = 128;

/// A reply within the limits, or why not.
pub(super) fn bounded(reply: ModelReply) -> Result<ModelReply, ModelError> {
    let size = reply.content.as_ref().map_or(0, String::len)
        + reply
            .tool_calls
            .iter()
            .map(|c| c.id.len() + c.function.name.len() + c.function.arguments.len())
            .sum::<usize>();
    if size > MAX_REPLY_BYTES {
        return Err(ModelError::TooLarge {
            detail: format!("over {MAX_REPLY_BYTES} bytes of text and tool-call arguments"),
        });
    }
    if reply.tool_calls.len() > MAX_TOOL_CALLS {
        return Err(ModelError::TooLarge {
            detail: format!(
                "{} tool calls in one reply; at most {MAX_TOOL_CALLS} are read",
                reply.tool_calls.len()
            ),
        });
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::decode_event_stream;

    /// Text (with characters of two and three bytes), a tool call in two pieces, the finish
    /// reason, usage, and the end marker, as a provider streams them.
    const BODY: &str = concat!(
        r#"data: {"id":"r1","choices":[{"index":0,"delta":{"content":"Größe: 3 µm → ok"},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"r1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"terminal","arguments":"{\"comm"}}]},"finish_reason":null}]}"#,
        "\r\n\r\n",
        r#"data: {"id":"r1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]}"#,
        "\n\n",
        r#"data: {"id":"r1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7}}"#,
        "\n\ndata: [DONE]\n\n",
    );

    #[test]
    fn a_body_decodes_the_same_wherever_the_network_cuts_it() {
        let whole = decode_event_stream(&[BODY.as_bytes()]).expect("the body decodes");
        assert_eq!(whole.content.as_deref(), Some("Größe: 3 µm → ok"));
        assert_eq!(whole.tool_calls.len(), 1);
        assert_eq!(
            whole.tool_calls[0].function.arguments,
            r#"{"command":"ls"}"#
        );
        assert_eq!(whole.usage.prompt_tokens, 12);
        // Every chunk size, so that every character and every line ending is split somewhere.
        for size in 1..BODY.len() {
            let chunks: Vec<&[u8]> = BODY.as_bytes().chunks(size).collect();
            assert_eq!(
                decode_event_stream(&chunks).as_ref(),
                Ok(&whole),
                "cut into chunks of {size} bytes"
            );
        }
    }

    #[test]
    fn a_body_without_its_end_is_an_early_end() {
        // Before the chunk with the finish reason.
        let cut = &BODY[..BODY.find(r#""finish_reason":"tool_calls""#).unwrap_or(0) - 40];
        let error = decode_event_stream(&[cut.as_bytes()]).expect_err("a cut body is refused");
        assert!(
            matches!(error, super::ModelError::StreamEndedEarly { .. }),
            "{error:?}"
        );
    }
}
