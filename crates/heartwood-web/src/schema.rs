//! The HTTP API's published description, generated from the route table ([`crate::api::routes`]):
//! `docs/schema/http-api.schema.json` names every route by `METHOD path` with its query, body
//! and answer types, and `docs/schema/heartwood.d.ts` declares them, with the wire types, for the
//! page's script. `cargo xtask schema` writes both; a test fails when the checked-in files
//! drift from the code.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::api::{Answer, routes};

/// The description's file name in `docs/schema/`.
pub const HTTP_API_FILE: &str = "http-api.schema.json";

/// Every schema the page's types come from: the wire formats' and the HTTP API's, as
/// `(file name, pretty JSON text ending in a newline)`.
pub fn generated() -> Vec<(&'static str, String)> {
    let mut all = heartwood_events::schema::generated();
    all.push((HTTP_API_FILE, http_api()));
    all
}

/// TypeScript declarations for every type in [`generated`] (`docs/schema/heartwood.d.ts`);
/// `HttpApi["GET /api/models"]["answer"]` is that route's answer.
pub fn typescript() -> String {
    heartwood_events::schema::typescript_of(&generated())
}

/// The HTTP API as one JSON Schema: an object type with a property per route, whose `query`,
/// `body` and `answer` are that route's types.
pub fn http_api() -> String {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut properties = Map::new();
    for route in routes() {
        let mut parts = Map::new();
        let mut required = vec![Value::from("answer")];
        if let Some(query) = route.query {
            parts.insert("query".into(), query(&mut generator).to_value());
        }
        if let Some(body) = route.body {
            parts.insert("body".into(), body(&mut generator).to_value());
            required.push("body".into());
        }
        let answer = match route.answer {
            Answer::Json(answer) => answer(&mut generator).to_value(),
            Answer::Media(media) => json!({"type": "string", "contentMediaType": media}),
        };
        parts.insert("answer".into(), answer);
        properties.insert(
            format!("{} {}", route.method.as_str(), route.path),
            json!({
                "description": route.summary,
                "type": "object",
                "properties": parts,
                "required": required,
            }),
        );
    }
    let names: Vec<Value> = properties.keys().cloned().map(Value::from).collect();
    let document = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "HttpApi",
        "description": "Every route of `heartwood serve`, below its base path, by method and \
            path: its query parameters, JSON body and answer. Every route needs the launch \
            capability; a failure is answered in plain text with a status by its kind.",
        "type": "object",
        "properties": properties,
        "required": names,
        "$defs": generator.take_definitions(true),
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn checked_in(name: &str) -> String {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema");
        std::fs::read_to_string(dir.join(name)).unwrap_or_default()
    }

    #[test]
    fn the_checked_in_description_and_types_match_the_code() {
        assert!(
            checked_in(super::HTTP_API_FILE) == super::http_api(),
            "docs/schema/{} is out of date with the routes; run `cargo xtask schema`",
            super::HTTP_API_FILE
        );
        assert!(
            checked_in("heartwood.d.ts") == super::typescript(),
            "docs/schema/heartwood.d.ts is out of date with the Rust types; run `cargo xtask \
             schema`"
        );
    }

    /// No two schemas declare a type of the same name differently (one would hide the other
    /// in the page's types).
    #[test]
    fn no_type_name_means_two_types() {
        let conflicts = heartwood_events::schema::conflicting_names(&super::generated());
        assert!(conflicts.is_empty(), "declared twice: {conflicts:?}");
        // Within one schema, two types of one name come out as `Name` and `Name2`.
        let api: serde_json::Value = serde_json::from_str(&super::http_api()).expect("json");
        let numbered: Vec<&String> = api["$defs"]
            .as_object()
            .expect("definitions")
            .keys()
            .filter(|name| name.ends_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert!(
            numbered.is_empty(),
            "rename with #[schemars(rename)]: {numbered:?}"
        );
    }

    /// Every route is described by method and path, with the types its handler reads and
    /// answers, so the page can name them.
    #[test]
    fn every_route_is_described_with_its_types() {
        let api: serde_json::Value = serde_json::from_str(&super::http_api()).expect("json");
        let routes = super::routes();
        let described = api["properties"].as_object().expect("routes");
        assert_eq!(described.len(), routes.len(), "a route is described twice");
        let models = &described["GET /api/models"]["properties"]["answer"]["$ref"];
        assert_eq!(models, "#/$defs/LocalModelsView");
        let say = &described["POST /api/sessions/{session}/say"]["properties"];
        assert_eq!(say["body"]["$ref"], "#/$defs/Said");
        assert_eq!(say["query"]["$ref"], "#/$defs/Wait");
        let declared = super::typescript();
        assert!(
            declared.contains(r#""GET /api/workspace/changes": { answer: ChangeReport;"#),
            "{declared}"
        );
    }
}
