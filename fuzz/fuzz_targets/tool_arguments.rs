//! A model's tool call: the tool's name on the first line, its arguments after. Parsing never
//! panics; what parses is a schema-checked request that serializes.
#![no_main]

use heartwood_agent::tools::ToolCallRequest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let (name, arguments) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(request) = ToolCallRequest::parse(name, arguments) {
        serde_json::to_vec(&request).expect("a parsed tool call serializes");
    }
});
