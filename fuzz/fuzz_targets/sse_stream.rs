//! A streamed model reply (server-sent events): decoding never panics, stays within the reply
//! limits, and does not depend on where the network cut the body into chunks. The first byte
//! picks the chunk size.
#![no_main]

use heartwood_agent::model::{MAX_REPLY_BYTES, MAX_TOOL_CALLS, decode_event_stream};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some((&size, body)) = bytes.split_first() else {
        return;
    };
    let whole = decode_event_stream(&[body]);
    let chunks: Vec<&[u8]> = body.chunks(usize::from(size % 64) + 1).collect();
    let split = decode_event_stream(&chunks);
    assert_eq!(whole, split, "the reply depends on where the body was cut");
    if let Ok(reply) = whole {
        assert!(reply.tool_calls.len() <= MAX_TOOL_CALLS);
        assert!(reply.content.map_or(0, |c| c.len()) <= MAX_REPLY_BYTES);
    }
});
