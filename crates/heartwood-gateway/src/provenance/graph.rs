//! The crate's fixed entities: the metadata descriptor, the root dataset with its profiles,
//! the workflow definition as the computational workflow with a step and a tool per stage,
//! its formal parameters, Heartwood, the researcher and the model route.

use serde_json::{Value, json};

/// The profiles every crate states (RO-Crate 1.1 and the Workflow Run Crate family).
pub const PROFILES: [&str; 4] = [
    "https://w3id.org/ro/wfrun/process/0.5",
    "https://w3id.org/ro/wfrun/workflow/0.5",
    "https://w3id.org/ro/wfrun/provenance/0.5",
    "https://w3id.org/workflowhub/workflow-ro-crate/1.0",
];

/// The researcher's entity id (never named: the record keeps no personal data).
pub const RESEARCHER: &str = "#researcher";
/// Heartwood's entity id.
pub const HEARTWOOD: &str = "#heartwood";
/// The model route's entity id.
pub const MODEL: &str = "#model-route";

/// A reference.
pub fn id(to: &str) -> Value {
    json!({ "@id": to })
}

/// References.
pub fn ids<'a>(to: impl IntoIterator<Item = &'a str>) -> Value {
    Value::Array(to.into_iter().map(id).collect())
}

/// A name/value pair entity.
pub fn property(at: &str, name: &str, value: impl Into<Value>) -> Value {
    json!({ "@id": at, "@type": "PropertyValue", "name": name, "value": value.into() })
}

/// The descriptor, the profiles and the agents every crate has.
pub fn fixed(model: Option<(&str, &str)>) -> Vec<Value> {
    let mut out = vec![
        json!({
            "@id": "ro-crate-metadata.json",
            "@type": "CreativeWork",
            "conformsTo": id("https://w3id.org/ro/crate/1.1"),
            "about": id("./"),
        }),
        json!({
            "@id": RESEARCHER,
            "@type": "Person",
            "name": "The researcher (not named in the record)",
        }),
        json!({
            "@id": HEARTWOOD,
            "@type": "SoftwareApplication",
            "name": "Heartwood",
            "softwareVersion": env!("CARGO_PKG_VERSION"),
            "description": "The research workbench that ran the workflow and kept its journal.",
        }),
        json!({
            "@id": "#python",
            "@type": "ComputerLanguage",
            "name": "Python",
            "url": id("https://www.python.org/"),
        }),
        json!({
            "@id": "#heartwood-workflow",
            "@type": "ComputerLanguage",
            "name": "Heartwood workflow definition",
            "alternateName": "heartwood-workflow",
            "version": heartwood_workflow::definition::DEFINITION_SCHEMA.to_string(),
        }),
    ];
    for (n, profile) in PROFILES.iter().enumerate() {
        let (name, version) = match n {
            0 => ("Process Run Crate", "0.5"),
            1 => ("Workflow Run Crate", "0.5"),
            2 => ("Provenance Run Crate", "0.5"),
            _ => ("Workflow RO-Crate", "1.0"),
        };
        out.push(
            json!({"@id": profile, "@type": "CreativeWork", "name": name, "version": version}),
        );
    }
    if let Some((category, model)) = model {
        out.push(json!({
            "@id": MODEL,
            "@type": "SoftwareApplication",
            "name": model,
            "description": "The model the agent called (its route's category and model; never a key).",
            "additionalProperty": ids([format!("{MODEL}-category").as_str()]),
        }));
        out.push(property(
            &format!("{MODEL}-category"),
            "route category",
            category,
        ));
    }
    out
}

/// The workflow's own entities for the stages that ran: `(stage id, title, consumes,
/// produces)`, each binding id mapped to its parameter id.
pub struct Stages<'a> {
    /// The stages that ran, in the definition's order.
    pub ran: Vec<(&'a str, &'a str, Vec<String>, Vec<String>)>,
}

impl Stages<'_> {
    /// A step, a tool and their parameters per stage.
    pub fn entities(&self, bindings: &[(String, String)]) -> (Vec<Value>, Value, Value) {
        let mut out = Vec::new();
        let mut steps = Vec::new();
        let mut tools = Vec::new();
        for (n, (stage, title, consumes, produces)) in self.ran.iter().enumerate() {
            let step = format!("#step-{stage}");
            let tool = format!("#tool-{stage}");
            out.push(json!({
                "@id": step, "@type": "HowToStep", "name": title,
                "position": (n + 1).to_string(), "workExample": id(&tool),
            }));
            out.push(json!({
                "@id": tool, "@type": "SoftwareApplication",
                "name": format!("stage {stage}: {title}"),
                "description": "An agent turn under the researcher's review, judged by the stage's checks.",
                "input": ids(consumes.iter().map(|b| param_of(b)).collect::<Vec<_>>().iter().map(String::as_str)),
                "output": ids(produces.iter().map(|b| param_of(b)).collect::<Vec<_>>().iter().map(String::as_str)),
            }));
            steps.push(step);
            tools.push(tool);
        }
        for (binding, role) in bindings {
            out.push(json!({
                "@id": param_of(binding), "@type": "FormalParameter",
                "conformsTo": id("https://bioschemas.org/profiles/FormalParameter/1.0-RELEASE"),
                "additionalType": "File", "name": binding, "description": role,
            }));
        }
        (
            out,
            ids(steps.iter().map(String::as_str)),
            ids(tools.iter().map(String::as_str)),
        )
    }
}

/// A binding's formal parameter.
pub fn param_of(binding: &str) -> String {
    format!("#param-{binding}")
}
