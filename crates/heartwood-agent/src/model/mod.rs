//! The model client: OpenAI-compatible `POST {base_url}/chat/completions`, streaming or not,
//! with timeouts, bounded retries and classified errors; and the Responses API a ChatGPT
//! subscription uses ([`chatgpt`] signs in).

pub mod chatgpt;
mod client;
mod error;
mod responses;
mod route;
mod stream;
mod wire;

pub mod replay;

pub use client::ModelClient;
pub use error::{ModelError, redact_secret_shapes};
pub use route::{ModelRoute, Prices, Subscription};
#[doc(hidden)]
pub use stream::decode_event_stream;
pub use stream::{MAX_REPLY_BYTES, MAX_TOOL_CALLS, ModelReply};
pub use wire::{ChatMessage, FunctionCall, FunctionSpec, ToolCall, ToolSpec, Usage};
