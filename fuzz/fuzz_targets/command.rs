//! One submitted command, as an interface sends it: decoding never panics, and a command that
//! decodes serializes to bytes that decode to the same command.
#![no_main]

use heartwood_events::Command;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(command) = Command::decode(bytes) {
        let written = serde_json::to_vec(&command).expect("a decoded command serializes");
        let reread = Command::decode(&written).expect("a serialized command decodes");
        assert_eq!(command, reread, "a command changed on a round trip");
    }
});
