//! One stored event line (`events.jsonl`): decoding never panics, and an event that decodes
//! serializes to a line that decodes to the same event.
#![no_main]

use heartwood_events::RecordedEvent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    if let Ok(event) = RecordedEvent::decode(line) {
        let written = serde_json::to_vec(&event).expect("a decoded event serializes");
        let reread = RecordedEvent::decode(&written).expect("a serialized event decodes");
        assert_eq!(event, reread, "an event changed on a round trip");
    }
});
