//! JSON Schema for the on-disk and wire formats, generated from the Rust types.
//!
//! `cargo xtask schema` writes these into `docs/schema/`; a test fails when the checked-in
//! files drift from the code.

use schemars::{JsonSchema, generate::SchemaSettings};

use crate::{Command, Receipt, RecordedEvent, SessionProjection, SessionRow, Snapshot, Update};

/// Every generated schema as `(file name, pretty JSON text ending in a newline)`.
pub fn generated() -> Vec<(&'static str, String)> {
    vec![
        ("event.schema.json", render::<RecordedEvent>()),
        ("command.schema.json", render::<Command>()),
        ("receipt.schema.json", render::<Receipt>()),
        ("projection.schema.json", render::<SessionProjection>()),
        ("session-row.schema.json", render::<SessionRow>()),
        ("update.schema.json", render::<Update>()),
        ("snapshot.schema.json", render::<Snapshot>()),
    ]
}

fn render<T: JsonSchema>() -> String {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn checked_in_schemas_match_the_code() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema");
        for (name, text) in super::generated() {
            let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                on_disk == text,
                "docs/schema/{name} is out of date with the Rust types; run `cargo xtask schema`"
            );
        }
    }
}
