//! A CSV table as the evidence checks read it: parsing never panics, stays within the check
//! limits, and every field can be read as a number or not.
#![no_main]

use heartwood_workflow::check::{MAX_COLUMNS, MAX_ROWS};
use heartwood_workflow::table::{Table, number};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(table) = Table::parse(bytes) {
        assert!(table.columns.len() <= MAX_COLUMNS);
        assert!(table.rows.len() <= MAX_ROWS);
        for row in &table.rows {
            for column in 0..table.columns.len() {
                let _ = number(&row[column]);
            }
        }
        for name in &table.columns {
            assert!(
                table.column(name).is_some(),
                "a header name does not find its column"
            );
        }
    }
});
