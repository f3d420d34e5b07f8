//! Circles of modules inside a crate: two files that use each other are a pair that belongs
//! together, but a circle through three or more files means none of them can be understood,
//! tested or moved without the others (the gateway's services once went round through seven).
//!
//! A module uses another when its source names it by a `crate::` or `super::` path (a `use`
//! or a qualified name, comments left out); the longest module the path names counts, and an
//! item the crate root re-exports counts as the module it comes from. This
//! reads source as text, so it can miss a use (a glob re-export) but does not invent one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of the crate whose sources are under `src`, by path (`""` for the crate root),
/// with its file.
fn modules(src: &Path) -> BTreeMap<String, std::path::PathBuf> {
    super::files_under(src)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .filter_map(|file| {
            let relative = file.strip_prefix(src).ok()?.with_extension("");
            let mut parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            // Binaries under src/bin are crates of their own.
            (parts.first().map(String::as_str) != Some("bin")).then(|| (parts.join("::"), file))
        })
        .collect()
}

/// The `crate::`/`super::` paths `text` names, resolved against `module`, as path segments.
fn named_paths(module: &str, text: &str) -> Vec<Vec<String>> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let parent: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let parent = &parent[..parent.len().saturating_sub(1)];
    for (prefix, base) in [("crate::", &[][..]), ("super::", parent)] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            let heads: Vec<&str> = match rest.strip_prefix('{') {
                // `use crate::{a::X, b}`: each item of the group, to its first brace.
                Some(group) => group
                    .split(['}', ';'])
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|item| item.split("::{").next().unwrap_or("").trim())
                    .collect(),
                None => vec![rest],
            };
            for head in heads {
                let path: String = head
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut segments: Vec<String> = base.to_vec();
                segments.extend(
                    path.split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                );
                found.push(segments);
            }
        }
    }
    found
}

/// The items the crate root re-exports (`pub use module::{Item, ..}`), by name, with the path
/// they come from: `crate::Item` names that module as much as `crate::module::Item` does.
fn root_exports(modules: &BTreeMap<String, std::path::PathBuf>) -> BTreeMap<String, Vec<String>> {
    let Some(root) = modules.get("") else {
        return BTreeMap::new();
    };
    exports_in(&std::fs::read_to_string(root).expect("a readable crate root"))
}

/// The `pub use` re-exports in a crate root's `text`: each item's name, with its path.
fn exports_in(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut exports = BTreeMap::new();
    for statement in text.split(';') {
        // A comment above the statement is not part of it.
        let code: String = statement
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let Some(used) = code.trim().strip_prefix("pub use ") else {
            continue;
        };
        let (base, items) = match used.split_once("::{") {
            Some((base, group)) => (base, group.trim_end_matches('}').split(',').collect()),
            None => match used.rsplit_once("::") {
                Some((base, item)) => (base, vec![item]),
                None => continue,
            },
        };
        for item in items {
            // `item as name` is exported as `name`.
            let (item, alias) = match item.split_once(" as ") {
                Some((item, alias)) => (item, Some(alias.trim().to_owned())),
                None => (item, None),
            };
            let path: Vec<String> = base
                .split("::")
                .chain(item.trim().split("::"))
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect();
            if let Some(name) = alias.or_else(|| path.last().cloned()) {
                exports.insert(name, path[..path.len() - 1].to_vec());
            }
        }
    }
    exports
}

/// Which modules each module uses (itself and the crate root left out).
fn uses(modules: &BTreeMap<String, std::path::PathBuf>) -> BTreeMap<&str, BTreeSet<&str>> {
    let exports = root_exports(modules);
    let mut graph = BTreeMap::new();
    for (module, file) in modules {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let mut used = BTreeSet::new();
        for mut path in named_paths(module, &text) {
            // A re-exported item named at the root stands for the module it comes from.
            if let Some(from) = path.first().and_then(|head| exports.get(head)) {
                path = from.clone();
            }
            let longest = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find_map(|candidate| modules.get_key_value(&candidate).map(|(k, _)| k.as_str()));
            // The crate's error type is its vocabulary, like the root: every module may name
            // it, and it names the refusals of the modules it wraps.
            if let Some(target) = longest.filter(|t| *t != module && *t != "error") {
                used.insert(target);
            }
        }
        graph.insert(module.as_str(), used);
    }
    graph
}

/// A circle of three or more modules in `graph`, if there is one.
fn long_circle<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Option<Vec<&'a str>> {
    fn walk<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>, path: &mut Vec<&'a str>) -> bool {
        let (start, here) = (path[0], *path.last().expect("a start"));
        for &next in graph.get(here).into_iter().flatten() {
            if next == start && path.len() >= 3 {
                return true;
            }
            // Each circle is found from its least member, so only greater ones are walked.
            if next > start && !path.contains(&next) {
                path.push(next);
                if walk(graph, path) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    graph.keys().find_map(|&start| {
        let mut path = vec![start];
        walk(graph, &mut path).then_some(path)
    })
}

/// Every pair of modules in `graph` that use each other, each pair once.
fn pairs<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<(&'a str, &'a str)> {
    graph
        .iter()
        .flat_map(|(&a, used)| used.iter().map(move |&b| (a, b)))
        .filter(|&(a, b)| a < b && graph.get(b).is_some_and(|back| back.contains(a)))
        .collect()
}

/// A module that is one half of two or more pairs: a circle through three files in disguise
/// (`app` ↔ `catalog` and `app` ↔ `files` is `catalog` → `app` → `files` → `app` → `catalog`),
/// with its partners.
fn hubs<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut partners: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in pairs(graph) {
        partners.entry(a).or_default().push(b);
        partners.entry(b).or_default().push(a);
    }
    partners.into_iter().filter(|(_, p)| p.len() >= 2).collect()
}

#[test]
fn no_module_is_the_hub_of_two_pairs() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("the crates folder") {
        let src = entry.expect("entry").path().join("src");
        if !src.is_dir() {
            continue;
        }
        for (hub, partners) in hubs(&uses(&modules(&src))) {
            found.push(format!(
                "{}: {hub} ↔ {}",
                src.display(),
                partners.join(", ")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "modules that each use, and are used by, two or more others (what the partners share \
         with the hub belongs in a module of its own):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_circle_of_modules_passes_through_more_than_two_files() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    let mut circles = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("the crates folder") {
        let src = entry.expect("entry").path().join("src");
        if !src.is_dir() {
            continue;
        }
        let modules = modules(&src);
        checked += modules.len();
        if let Some(circle) = long_circle(&uses(&modules)) {
            circles.push(format!("{}: {}", src.display(), circle.join(" → ")));
        }
    }
    assert!(
        circles.is_empty(),
        "modules that use each other in a circle (move what they share into one of them or a \
         module of its own):\n{}",
        circles.join("\n")
    );
    assert!(checked > 100, "only {checked} modules were read");
}

#[test]
fn a_circle_through_three_modules_is_found_and_so_is_a_hub_of_pairs() {
    let graph = |edges: &[(&'static str, &'static str)]| {
        let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for &(from, to) in edges {
            graph.entry(from).or_default().insert(to);
            graph.entry(to).or_default();
        }
        graph
    };
    let pairs = graph(&[
        ("app", "files"),
        ("files", "app"),
        ("app", "catalog"),
        ("catalog", "app"),
    ]);
    assert_eq!(long_circle(&pairs), None);
    assert_eq!(hubs(&pairs), vec![("app", vec!["catalog", "files"])]);
    assert_eq!(hubs(&graph(&[("app", "files"), ("files", "app")])), vec![]);
    let three = graph(&[
        ("config", "platform"),
        ("platform", "subscription"),
        ("subscription", "config"),
    ]);
    assert_eq!(
        long_circle(&three),
        Some(vec!["config", "platform", "subscription"])
    );
    assert_eq!(
        named_paths(
            "tui::files",
            "use super::app::{App, Intent};\n// crate::ignored\nlet x = crate::{a::B, c};"
        ),
        vec![
            vec!["a".to_owned(), "B".to_owned()],
            vec!["c".to_owned()],
            vec!["tui".to_owned(), "app".to_owned()],
        ]
    );
}

#[test]
fn a_root_re_export_stands_for_the_module_it_comes_from() {
    let exports = exports_in(
        "mod gateway;\npub use gateway::{IDLE_RELEASE, SessionGateway};\npub use live::blank_snapshot;\nuse private::Hidden;\n// The reducer.\npub use reducer::replay as reduce;\npub use review::{review as review_set_with, stale};\n",
    );
    assert_eq!(exports["reduce"], vec!["reducer".to_owned()]);
    assert_eq!(exports["review_set_with"], vec!["review".to_owned()]);
    assert_eq!(exports["stale"], vec!["review".to_owned()]);
    assert_eq!(exports["SessionGateway"], vec!["gateway".to_owned()]);
    assert_eq!(exports["IDLE_RELEASE"], vec!["gateway".to_owned()]);
    assert_eq!(exports["blank_snapshot"], vec!["live".to_owned()]);
    assert!(
        !exports.contains_key("Hidden"),
        "a private use exports nothing"
    );
}
