//! A batch as one crate: each item's own crate under `items/<item>/` (verified on its own
//! terms), the results table as the `results/` dataset, and the verifier at the top, which
//! checks every part in turn.

use std::path::Path;

use serde_json::{Value, json};
use sha2::Digest as _;

use super::graph::id;
use super::runs::hex;
use super::{CrateError, CrateReport, VERIFIER_NAME, VERIFIER_SCRIPT, archive};

/// One item's crate, already written.
pub struct BatchItem<'a> {
    /// The item's name in the manifest.
    pub name: &'a str,
    /// Its crate's directory.
    pub krate: &'a Path,
}

fn file(path: &str, bytes: &[u8], format: &str) -> Value {
    json!({
        "@id": path, "@type": "File", "name": path,
        "sha256": hex(&sha2::Sha256::digest(bytes)), "contentSize": bytes.len().to_string(),
        "encodingFormat": format,
    })
}

/// Writes the batch crate at `destination` (a new directory).
pub fn write_batch_crate(
    destination: &Path,
    name: &str,
    items: &[BatchItem<'_>],
    tables: &[(&str, Vec<u8>, &str)],
) -> Result<CrateReport, CrateError> {
    if destination.exists() {
        return Err(CrateError::Exists(destination.to_owned()));
    }
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut graph = vec![json!({
        "@id": "ro-crate-metadata.json", "@type": "CreativeWork",
        "conformsTo": id("https://w3id.org/ro/crate/1.1"), "about": id("./"),
    })];
    let mut parts = vec![id("results/")];
    let mut table_parts = Vec::new();
    for (table, bytes, format) in tables {
        let path = format!("results/{table}");
        graph.push(file(&path, bytes, format));
        table_parts.push(id(&path));
        entries.push((path, bytes.clone()));
    }
    graph.push(json!({
        "@id": "results/", "@type": "Dataset", "name": "Results table",
        "description": "One row per item: its accepted stages, figures from the accepted reports and the evidence digests (as `heartwood batch collect` wrote them).",
        "hasPart": table_parts,
    }));
    for item in items {
        let prefix = format!("items/{}/", item.name);
        let inner = archive::read(item.krate)?;
        let metadata = inner.get("ro-crate-metadata.json").ok_or_else(|| {
            CrateError::Unreadable(format!(
                "{}: no ro-crate-metadata.json",
                item.krate.display()
            ))
        })?;
        let meta_path = format!("{prefix}ro-crate-metadata.json");
        graph.push(file(&meta_path, metadata, "application/ld+json"));
        graph.push(json!({
            "@id": prefix, "@type": "Dataset", "name": format!("item {}", item.name),
            "description": "The item's own Provenance Run Crate: its workflow run, journal and checkpoint.",
            "hasPart": id(&meta_path),
        }));
        parts.push(id(&prefix));
        entries.extend(inner.into_iter().map(|(k, v)| (format!("{prefix}{k}"), v)));
    }
    graph.push(file(
        VERIFIER_NAME,
        VERIFIER_SCRIPT.as_bytes(),
        "text/x-python",
    ));
    parts.push(id(VERIFIER_NAME));
    graph.push(json!({
        "@id": "./", "@type": "Dataset",
        "name": format!("Heartwood batch {name}"),
        "description": format!("{} items, each its own verifiable crate, and the batch's results table.", items.len()),
        "datePublished": heartwood_events::Timestamp::now().as_str(),
        "license": id("https://spdx.org/licenses/CC-BY-4.0"),
        "hasPart": parts,
    }));
    let metadata = json!({
        "@context": [
            "https://w3id.org/ro/crate/1.1/context",
            { "sha256": "http://schema.org/sha256" },
        ],
        "@graph": graph,
    });
    let mut text = serde_json::to_vec_pretty(&metadata).unwrap_or_default();
    text.push(b'\n');
    entries.push(("ro-crate-metadata.json".into(), text));
    entries.push((VERIFIER_NAME.into(), VERIFIER_SCRIPT.as_bytes().to_vec()));
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    archive::write_dir(destination, &entries)
}
