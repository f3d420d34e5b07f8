//! The model client: OpenAI-compatible `POST {base_url}/chat/completions`, streaming or not,
//! with timeouts, bounded retries and classified errors.

mod client;
mod error;
mod route;
mod stream;
mod wire;

pub mod replay;

pub use client::{MAX_REPLY_BYTES, MAX_TOOL_CALLS, ModelClient, ModelReply};
pub use error::ModelError;
pub use route::{ModelRoute, Prices};
#[doc(hidden)]
pub use stream::decode_event_stream;
pub use wire::{ChatMessage, FunctionCall, FunctionSpec, ToolCall, ToolSpec, Usage};
