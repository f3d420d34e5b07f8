//! A batch as one crate: each item's own crate under `items/<item>/` (verified on its own
//! terms), the results table as the `results/` dataset, and the verifier at the top, which
//! checks every part in turn.
//!
//! The batch crate is itself a Provenance Run Crate: a batch runs one workflow over many
//! inputs, so its main entity is that workflow's definition (copied once to the top) and each
//! item's run is a `CreateAction` with it as instrument, the item's inputs as `object` and its
//! artifacts as `result` (the files inside the item's crate), and the batch's orchestration
//! controls them. Everything it states is read back from the items' own metadata, so the
//! batch graph says nothing an item's crate does not.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use sha2::Digest as _;

use super::graph::{self, id, ids};
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

/// An item's crate as read back: its files and its metadata graph by id.
struct Inner {
    files: BTreeMap<String, Vec<u8>>,
    graph: BTreeMap<String, Value>,
}

impl Inner {
    fn read(item: &BatchItem<'_>) -> Result<Self, CrateError> {
        let files = archive::read(item.krate)?;
        let unreadable = || {
            CrateError::Unreadable(format!(
                "{}: no readable ro-crate-metadata.json",
                item.krate.display()
            ))
        };
        let metadata: Value = files
            .get("ro-crate-metadata.json")
            .and_then(|b| serde_json::from_slice(b).ok())
            .ok_or_else(unreadable)?;
        let graph = metadata["@graph"]
            .as_array()
            .ok_or_else(unreadable)?
            .iter()
            .filter_map(|e| Some((e["@id"].as_str()?.to_owned(), e.clone())))
            .collect();
        Ok(Inner { files, graph })
    }

    /// The item's main workflow: its path in the item's crate and its entity.
    fn workflow(&self) -> Option<(&str, &Value)> {
        let main = self.graph.get("./")?["mainEntity"]["@id"].as_str()?;
        Some((main, self.graph.get(main)?))
    }

    /// The item's run action (the one whose instrument is its main workflow).
    fn run(&self) -> Option<&Value> {
        let (main, _) = self.workflow()?;
        self.graph
            .values()
            .find(|e| e["@type"] == "CreateAction" && e["instrument"]["@id"] == main)
    }
}

/// What one item's run contributes to the batch graph: its run, its stage executions and
/// their orchestration, as the item's crate states them, with ids made the item's own
/// (`#item-<item>…`) and the item's files named at their place in the batch; the steps and
/// tools they refer to are the batch workflow's. Returns the actions' ids, the run first.
fn item_run(
    prefix: &str,
    name: &str,
    inner: &Inner,
    instrument: &str,
    graph: &mut Vec<Value>,
) -> Vec<String> {
    let Some(run) = inner.run() else {
        return Vec::new();
    };
    let run_id = run["@id"].as_str().unwrap_or_default().to_owned();
    let own = |at: &str| -> Option<String> {
        if at == run_id {
            Some(format!("#item-{name}"))
        } else if at.starts_with("#stage-") || at.starts_with("#control-") || at == "#orchestration"
        {
            Some(format!("#item-{name}-{}", &at[1..]))
        } else {
            None
        }
    };
    let mut files: BTreeMap<String, Value> = BTreeMap::new();
    let mut remap = |value: &Value| -> Value {
        let refs: Vec<&Value> = match value {
            Value::Array(list) => list.iter().collect(),
            Value::Object(_) => vec![value],
            _ => return value.clone(),
        };
        let mut out = Vec::new();
        for r in refs {
            let Some(at) = r["@id"].as_str() else {
                continue;
            };
            if let Some(mapped) = own(at) {
                out.push(id(&mapped));
            } else if at == main_path(inner) {
                out.push(id(instrument));
            } else if at.starts_with('#') || at.contains("://") {
                // Shared (steps, tools, the researcher, Heartwood) or withheld: kept as is when
                // shared, dropped when it is the item's own digest-only entry.
                if !at.starts_with("#withheld-") {
                    out.push(id(at));
                }
            } else if let Some(bytes) = inner.files.get(at) {
                let path = format!("{prefix}{at}");
                let mut entity = file(&path, bytes, "");
                entity["name"] = json!(at);
                entity.as_object_mut().map(|o| o.remove("encodingFormat"));
                files.insert(path.clone(), entity);
                out.push(id(&path));
            }
        }
        Value::Array(out)
    };
    let mut actions = Vec::new();
    let mut ids_out = Vec::new();
    for e in inner.graph.values() {
        let Some(at) = e["@id"].as_str().and_then(&own) else {
            continue;
        };
        let mut copy = e.clone();
        copy["@id"] = json!(at);
        for key in ["instrument", "object", "result", "agent"] {
            if !copy[key].is_null() {
                copy[key] = remap(&copy[key]);
            }
        }
        copy.as_object_mut().map(|o| o.remove("resourceUsage"));
        if e["@id"] == run_id.as_str() {
            copy["name"] = json!(format!(
                "item {name}: {}",
                run["name"].as_str().unwrap_or("its run")
            ));
            copy["subjectOf"] = id(&format!("{prefix}ro-crate-metadata.json"));
            ids_out.insert(0, at);
        } else {
            ids_out.push(at);
        }
        actions.push(copy);
    }
    graph.extend(files.into_values());
    graph.extend(actions);
    ids_out
}

/// The item's main workflow's path in its own crate ("" when it states none).
fn main_path(inner: &Inner) -> &str {
    inner.workflow().map(|(p, _)| p).unwrap_or_default()
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
    let mut graph = graph::fixed(None);
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
    let inners: Vec<Inner> = items.iter().map(Inner::read).collect::<Result<_, _>>()?;
    // The batch's workflow: the first item's definition, copied to the top.
    let main = inners.iter().find_map(|inner| {
        let (path, _) = inner.workflow()?;
        Some((path.to_owned(), inner.files.get(path)?.clone()))
    });
    let mut runs = Vec::new();
    for (item, inner) in items.iter().zip(&inners) {
        let prefix = format!("items/{}/", item.name);
        let meta_path = format!("{prefix}ro-crate-metadata.json");
        let metadata = inner.files.get("ro-crate-metadata.json").cloned();
        graph.push(file(
            &meta_path,
            &metadata.unwrap_or_default(),
            "application/ld+json",
        ));
        // An item that ran another definition's bytes names its own copy as instrument.
        let instrument = match (&main, inner.workflow()) {
            (Some((path, bytes)), Some((own, _)))
                if own == path && inner.files.get(own) == Some(bytes) =>
            {
                path.clone()
            }
            (_, Some((own, entity))) => {
                let path = format!("{prefix}{own}");
                graph.push(workflow_entity(&path, entity));
                path
            }
            (_, None) => String::new(),
        };
        let acted = if instrument.is_empty() {
            Vec::new()
        } else {
            item_run(&prefix, item.name, inner, &instrument, &mut graph)
        };
        let mut item_parts = vec![meta_path.clone()];
        item_parts.extend(graph.iter().filter_map(|e| {
            let at = e["@id"].as_str()?;
            (at.starts_with(prefix.as_str()) && at != meta_path && e["sha256"].is_string())
                .then(|| at.to_owned())
        }));
        runs.extend(acted);
        item_parts.sort();
        item_parts.dedup();
        graph.push(json!({
            "@id": prefix, "@type": "Dataset", "name": format!("item {}", item.name),
            "description": "The item's own Provenance Run Crate: its workflow run, journal and checkpoint.",
            "hasPart": ids(item_parts.iter().map(String::as_str)),
        }));
        parts.push(id(&prefix));
        entries.extend(
            inner
                .files
                .iter()
                .map(|(k, v)| (format!("{prefix}{k}"), v.clone())),
        );
    }
    let mut root = json!({
        "@id": "./", "@type": "Dataset",
        "name": format!("Heartwood batch {name}"),
        "description": format!("{} items, each its own verifiable crate, and the batch's results table.", items.len()),
        "datePublished": heartwood_events::Timestamp::now().as_str(),
        "license": id("https://spdx.org/licenses/CC-BY-4.0"),
    });
    if let Some((path, bytes)) = &main {
        entries.push((path.clone(), bytes.clone()));
        parts.insert(0, id(path));
        // Only a batch with a run states the Run Crate profiles: they need a workflow run.
        root["conformsTo"] = ids(graph::PROFILES);
        root["mainEntity"] = id(path);
        root["mentions"] = ids(runs.iter().map(String::as_str));
        graph.extend(steps_of(&inners, path, bytes));
    }
    graph.push(file(
        VERIFIER_NAME,
        VERIFIER_SCRIPT.as_bytes(),
        "text/x-python",
    ));
    parts.push(id(VERIFIER_NAME));
    root["hasPart"] = Value::Array(parts);
    graph.push(root);
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

/// The steps, tools and formal parameters of the stages that ran in any item that ran the
/// batch's definition, as the items' crates describe them (their ids are the stages' and the
/// bindings', the same in every item).
fn steps_of(inners: &[Inner], path: &str, bytes: &[u8]) -> Vec<Value> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    let mut step = Vec::new();
    let mut has_part = Vec::new();
    for inner in inners {
        let Some((_, entity)) = inner.workflow().filter(|(own, _)| {
            *own == path && inner.files.get(*own).map(Vec::as_slice) == Some(bytes)
        }) else {
            continue;
        };
        for (key, into) in [("step", &mut step), ("hasPart", &mut has_part)] {
            for at in entity[key].as_array().into_iter().flatten() {
                let Some(at) = at["@id"].as_str() else {
                    continue;
                };
                if !into.iter().any(|s: &String| s == at) {
                    into.push(at.to_owned());
                }
            }
        }
        // The steps and tools, and every parameter the workflow and its tools name.
        for e in inner.graph.values() {
            let at = e["@id"].as_str().unwrap_or_default();
            if at.starts_with("#step-") || at.starts_with("#tool-") || at.starts_with("#param-") {
                out.entry(at.to_owned()).or_insert_with(|| e.clone());
            }
        }
        if out.values().all(|e| e["@id"] != path) {
            let mut w = workflow_entity(path, entity);
            for key in ["input", "output"] {
                w[key] = entity[key].clone();
            }
            out.insert(path.to_owned(), w);
        }
    }
    if let Some(w) = out.get_mut(path) {
        w["step"] = ids(step.iter().map(String::as_str));
        w["hasPart"] = ids(has_part.iter().map(String::as_str));
    }
    out.into_values().collect()
}

/// The definition as the batch's computational workflow, described as the item's crate
/// describes it.
fn workflow_entity(path: &str, entity: &Value) -> Value {
    let mut out = json!({
        "@id": path,
        "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
        "programmingLanguage": id("#heartwood-workflow"),
    });
    for key in [
        "name",
        "version",
        "identifier",
        "sha256",
        "contentSize",
        "encodingFormat",
    ] {
        if !entity[key].is_null() {
            out[key] = entity[key].clone();
        }
    }
    out
}
