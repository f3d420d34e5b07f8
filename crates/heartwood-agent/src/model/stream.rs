//! Assembling a streamed reply: content deltas in order, tool-call deltas by index, usage from
//! the final chunk.

use super::wire::{ChatChunk, ToolCall};
use super::{ModelReply, Usage};

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
