//! The shape of the code, checked: the frontends (the terminal, the browser's server, the
//! notebook module, the batch driver) reach sessions only through the gateway (their build dependencies and
//! their source never name the journal, workspace, agent, workflow, stats or project crates), the
//! project's services sit below the sessions (heartwood-project never depends on the gateway
//! or the journal), no source file
//! is over 800 lines, no product function over 150, and no circle of modules inside a crate
//! passes through more than two files.

use std::path::Path;

mod circles;

const FORBIDDEN: [&str; 9] = [
    "heartwood-project",
    "heartwood-audit",
    "heartwood-workspace",
    "heartwood-agent",
    "heartwood-workflow",
    "heartwood-models",
    "heartwood-skills",
    "heartwood-openhands",
    "heartwood-stats",
];

/// Every frontend crate, from this crate's folder (the batch crate is one: it drives items
/// through the gateway like any interface).
const FRONTENDS: [&str; 4] = [
    ".",
    "../heartwood-web",
    "../heartwood-notebook",
    "../heartwood-batch",
];

fn frontend(dir: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)
}

#[test]
fn frontends_depend_on_the_gateway_not_on_what_is_behind_it() {
    for dir in FRONTENDS {
        let dependencies = dependencies_of(dir);
        assert!(
            dependencies.contains("heartwood-gateway"),
            "{dir} should use the gateway"
        );
        for crate_name in FORBIDDEN {
            assert!(
                !dependencies.contains(crate_name),
                "{dir} depends directly on {crate_name}"
            );
        }
    }
}

#[test]
fn frontend_sources_never_name_the_crates_behind_the_gateway() {
    for dir in FRONTENDS {
        let sources = files_under(&frontend(dir).join("src"));
        for path in &sources {
            let text = std::fs::read_to_string(path).expect("read");
            for crate_name in FORBIDDEN {
                let ident = crate_name.replace('-', "_");
                assert!(!text.contains(&ident), "{} names {ident}", path.display());
            }
        }
        let checked = sources.len();
        assert!(checked >= 4, "only {checked} files were checked in {dir}");
    }
}

/// The gateway is one facade: its crate root names what interfaces use, and its own modules are
/// private but for the few namespaces that carry a lower crate's vocabulary (its crate doc says
/// why each), so a frontend cannot come to depend on the gateway's insides.
#[test]
fn the_gateway_publishes_only_its_documented_namespaces() {
    let root = std::fs::read_to_string(frontend("../heartwood-gateway/src/lib.rs")).expect("read");
    let public: Vec<&str> = root
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|name| name.trim_end_matches(';'))
        .collect();
    assert_eq!(
        public,
        ["backend", "startup", "stats", "workspace"],
        "a new public module of the gateway belongs behind its facade (a `pub use` at the root)"
    );
}

/// The `[dependencies]` section of a crate's manifest, from this crate's folder.
fn dependencies_of(dir: &str) -> String {
    let manifest = std::fs::read_to_string(frontend(dir).join("Cargo.toml")).expect("read");
    manifest
        .split("\n[")
        .find(|section| section.starts_with("dependencies]"))
        .expect("a [dependencies] section")
        .to_owned()
}

#[test]
fn the_project_services_never_reach_up_into_sessions() {
    let dependencies = dependencies_of("../heartwood-project");
    for above in ["heartwood-gateway", "heartwood-audit", "heartwood-workflow"] {
        assert!(
            !dependencies.contains(above),
            "heartwood-project depends on {above}: the gateway tells it what it needs of sessions"
        );
    }
    assert!(
        dependencies_of("../heartwood-gateway").contains("heartwood-project"),
        "the gateway serves the project's services"
    );
}

/// Every file under `dir` (recursively), skipping build output and installed packages.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.expect("entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !matches!(name, "target" | "node_modules" | "__pycache__")
                    && !name.starts_with('.')
                {
                    pending.push(path);
                }
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// The workspace's own source: Rust, the page's HTML, CSS and JavaScript, and Python.
fn workspace_sources() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut sources: Vec<_> = ["crates", "xtask"]
        .iter()
        .flat_map(|dir| files_under(&root.join(dir)))
        .filter(|path| {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            matches!(ext, "rs" | "js" | "mjs" | "css" | "html" | "py")
        })
        .collect();
    sources.sort();
    sources
}

#[test]
fn no_source_file_is_over_800_lines() {
    let sources = workspace_sources();
    assert!(sources.len() > 200, "only {} sources found", sources.len());
    let long: Vec<String> = sources
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).expect("read").lines().count();
            (lines > 800).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by what they own: {long:#?}");
}

/// The length of every function in `text` whose body rustfmt laid out (opening line through
/// the closing brace at the function's own indentation), with its first line.
fn function_lengths(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut lengths = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if !is_signature(code) {
            continue;
        }
        let indent = &line[..line.len() - code.len()];
        let Some(open) = (start..lines.len()).find(|&i| {
            let l = lines[i].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let closing = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&i| lines[i] == closing) {
            lengths.push((end - start + 1, code.to_owned()));
        }
    }
    lengths
}

/// Whether `code` (a line, indentation removed) begins a function: any visibility, then any of
/// `const`, `async`, `unsafe` and `extern "ABI"`, then `fn`.
fn is_signature(code: &str) -> bool {
    let mut rest = code;
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => match scoped.split_once(')') {
                Some((_, tail)) => tail,
                None => return false,
            },
            None => after,
        }
        .trim_start();
    }
    loop {
        let before = rest;
        for qualifier in ["const ", "async ", "unsafe "] {
            rest = rest.strip_prefix(qualifier).unwrap_or(rest);
        }
        if let Some(abi) = rest.strip_prefix("extern \"") {
            rest = abi.split_once("\" ").map_or(rest, |(_, tail)| tail);
        }
        if rest == before {
            break;
        }
    }
    rest.starts_with("fn ")
}

#[test]
fn no_product_function_is_over_150_lines() {
    let product = workspace_sources().into_iter().filter(|path| {
        let text = path.to_string_lossy();
        text.ends_with(".rs")
            && text.contains("/src/")
            && !text.contains("/tests/")
            && !text.ends_with("/tests.rs")
    });
    let mut long = Vec::new();
    let mut measured = 0;
    for path in product {
        for (length, first) in function_lengths(&std::fs::read_to_string(&path).expect("read")) {
            measured += 1;
            if length > 150 {
                long.push(format!("{}: {first} ({length} lines)", path.display()));
            }
        }
    }
    assert!(measured > 1000, "only {measured} functions were measured");
    assert!(
        long.is_empty(),
        "split these into steps of their own: {long:#?}"
    );
}

#[test]
fn a_function_is_measured_from_its_signature_to_its_closing_brace() {
    for signature in [
        "pub const fn f() {",
        "pub(crate) const unsafe fn f() {",
        "unsafe fn f() {",
        "pub(in crate::a) async fn f() {",
        "pub unsafe extern \"C\" fn f() {",
        "const fn f() {",
    ] {
        assert!(is_signature(signature), "{signature}");
    }
    for not in [
        "fn_name();",
        "pub struct Fn {",
        "let f = |x| x;",
        "pub use a::fn_b;",
    ] {
        assert!(!is_signature(not), "{not}");
    }
    let text = "fn short() {\n    one();\n}\n\n    pub(crate) async fn nested(\n        a: u8,\n    ) -> u8 {\n        a\n    }\nfn declared();\n";
    let lengths = function_lengths(text);
    assert_eq!(
        lengths,
        vec![
            (3, "fn short() {".to_owned()),
            (5, "pub(crate) async fn nested(".to_owned())
        ]
    );
}
