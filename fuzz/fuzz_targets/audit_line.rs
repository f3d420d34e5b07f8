//! One audit line (`audit.jsonl`): checking never panics, and only the canonical form of a
//! record is accepted, so two different lines never pass as the same record.
#![no_main]

use heartwood_audit::AuditRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    if let Ok(record) = AuditRecord::parse_and_check(line) {
        assert_eq!(
            record.to_line(),
            line,
            "a non-canonical audit line was accepted"
        );
    }
});
