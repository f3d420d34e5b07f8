//! The batch manifest (TOML): what runs (a workflow and its question, or a plain task), under
//! which policy and route, over which items. It is validated whole before anything runs, and
//! every problem is reported at once, each naming the item and the field.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use heartwood_events::ActionPolicy;

use crate::error::{BatchError, Result};
use crate::route::RouteConnector;

/// The most items one manifest may hold.
pub const MAX_ITEMS: usize = 10_000;
/// The longest item (and batch) name, so `batch-<name>` stays a valid session id.
const MAX_NAME: usize = 64;
/// Requests at once a route is assumed to allow when the manifest does not say.
const DEFAULT_ROUTE_CONCURRENCY: usize = 4;

/// What every item does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// A workflow run: the definition and the research question (an item may ask its own).
    Workflow {
        /// The definition id (`heartwood workflow catalog`).
        definition: String,
        /// The research question.
        question: String,
    },
    /// An ordinary agent task, as `heartwood exec` gives it.
    Task {
        /// The task, in the researcher's words.
        text: String,
    },
}

/// Where an item's project comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An existing project directory, used in place.
    Project(PathBuf),
    /// A fresh copy of the template, with these files copied in (destination inside the item
    /// project → source file).
    Template(BTreeMap<String, PathBuf>),
}

/// One item of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Its name: letters, digits, `-` and `_`.
    pub name: String,
    /// Where its project comes from.
    pub source: Source,
    /// Its own question (workflow) or task text, in place of the manifest's.
    pub ask: Option<String>,
    /// Workflow inputs at other paths than the definition's (`ID` → project-relative path).
    pub workflow_inputs: BTreeMap<String, String>,
}

/// The model route every item is connected to (as `heartwood model connect` takes it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Route {
    /// `heartwood model connect` options, in order (`--category compatible`, ...).
    pub connect_args: Vec<String>,
    /// How many requests the route takes at once.
    pub concurrency: usize,
}

/// Slurm options passed through to the job script.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SlurmOptions {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time`.
    pub time: Option<String>,
    /// `--mem`.
    pub mem: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// Further `#SBATCH` options, verbatim (`--account=lab`).
    pub extra: Vec<String>,
}

/// A validated manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest file (absolute).
    pub path: PathBuf,
    /// The batch's name.
    pub name: String,
    /// What every item does.
    pub work: Work,
    /// When proposed actions wait for a person.
    pub policy: ActionPolicy,
    /// The route, if the manifest names one (otherwise each project's own, or the user's).
    pub route: Option<Route>,
    /// The template directory, for items made from it.
    pub template: Option<PathBuf>,
    /// Slurm options.
    pub slurm: SlurmOptions,
    /// Where the batch keeps its item projects, records and results.
    pub batch_dir: PathBuf,
    /// The items, in order (an item's index is its Slurm array index).
    pub items: Vec<Item>,
}

impl Manifest {
    /// Reads and validates `path`, its route's options read as `routes` reads them; the error
    /// lists every problem found.
    pub fn load(path: &Path, routes: &dyn RouteConnector) -> Result<Manifest> {
        let unreadable = |path: &Path, why: String| BatchError::ManifestUnreadable {
            path: path.to_path_buf(),
            why,
        };
        let path = std::path::absolute(path)
            .map_err(|e| unreadable(path, format!("cannot resolve the path: {e}")))?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| unreadable(&path, format!("cannot read the manifest: {e}")))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e| unreadable(&path, format!("not valid TOML: {e}")))?;
        let catalog: Vec<String> = heartwood_gateway::shared_workflow_catalog()
            .map(|c| c.into_iter().map(|e| e.id).collect())
            .unwrap_or_default();
        let mut v = Validator {
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            problems: Vec::new(),
            routes,
        };
        let manifest = v.manifest(&path, &table, &catalog);
        if v.problems.is_empty() {
            Ok(manifest)
        } else {
            Err(BatchError::Manifest {
                path,
                problems: v.problems,
            })
        }
    }

    /// How many items may run at once by default: the cores, and no more than the route allows.
    pub fn default_jobs(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let route = self
            .route
            .as_ref()
            .map_or(DEFAULT_ROUTE_CONCURRENCY, |r| r.concurrency);
        cores.min(route).max(1)
    }

    /// The most items the route allows at once.
    pub fn route_concurrency(&self) -> usize {
        self.route
            .as_ref()
            .map_or(DEFAULT_ROUTE_CONCURRENCY, |r| r.concurrency)
    }
}

/// Collects every problem while building the manifest.
struct Validator<'r> {
    dir: PathBuf,
    problems: Vec<String>,
    routes: &'r dyn RouteConnector,
}

const TOP_KEYS: &[&str] = &[
    "name",
    "workflow",
    "question",
    "task",
    "policy",
    "template",
    "batch_dir",
    "route",
    "slurm",
    "items",
];
const ROUTE_KEYS: &[&str] = &[
    "preset",
    "category",
    "base_url",
    "model",
    "api_key_env",
    "max_input_tokens",
    "max_output_tokens",
    "timeout_secs",
    "concurrency",
];
const SLURM_KEYS: &[&str] = &["partition", "time", "mem", "cpus_per_task", "extra"];
const ITEM_KEYS: &[&str] = &[
    "name",
    "project",
    "inputs",
    "question",
    "task",
    "workflow_inputs",
];

impl Validator<'_> {
    fn problem(&mut self, at: &str, what: impl std::fmt::Display) {
        self.problems.push(format!("{at}: {what}"));
    }

    fn unknown_keys(&mut self, at: &str, table: &toml::Table, known: &[&str]) {
        for key in table.keys().filter(|k| !known.contains(&k.as_str())) {
            self.problem(
                &format!("{at}`{key}`"),
                format!("unknown field (known: {})", known.join(", ")),
            );
        }
    }

    fn string(&mut self, at: &str, table: &toml::Table, key: &str) -> Option<String> {
        match table.get(key)? {
            toml::Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            toml::Value::String(_) => {
                self.problem(&format!("{at}`{key}`"), "is empty");
                None
            }
            other => {
                self.problem(
                    &format!("{at}`{key}`"),
                    format!("must be a string, not {}", other.type_str()),
                );
                None
            }
        }
    }

    fn integer(&mut self, at: &str, table: &toml::Table, key: &str, min: i64) -> Option<i64> {
        match table.get(key)? {
            toml::Value::Integer(n) if *n >= min => Some(*n),
            other => {
                self.problem(
                    &format!("{at}`{key}`"),
                    format!("must be a whole number of at least {min}, not {other}"),
                );
                None
            }
        }
    }

    fn name(&mut self, at: &str, name: &str) -> bool {
        let ok = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            self.problem(
                at,
                format!("{name:?} is not a name: use 1 to {MAX_NAME} letters, digits, '-' or '_'"),
            );
        }
        ok
    }

    fn manifest(&mut self, path: &Path, t: &toml::Table, catalog: &[String]) -> Manifest {
        self.unknown_keys("", t, TOP_KEYS);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = self.string("", t, "name").unwrap_or(stem);
        self.name("`name`", &name);
        let work = self.work(t, catalog);
        let policy = match self.string("", t, "policy").as_deref() {
            None | Some("always-review") => ActionPolicy::AlwaysReview,
            Some("low-risk") => ActionPolicy::LowRiskAutomation,
            Some(other) => {
                self.problem(
                    "`policy`",
                    format!("{other:?} is not a policy: always-review or low-risk"),
                );
                ActionPolicy::AlwaysReview
            }
        };
        let template = self.string("", t, "template").map(|p| self.dir.join(p));
        if let Some(dir) = &template
            && !dir.is_dir()
        {
            self.problem(
                "`template`",
                format!("{} is not a directory", dir.display()),
            );
        }
        let batch_dir = match self.string("", t, "batch_dir") {
            Some(dir) => self.dir.join(dir),
            None => self.dir.join(format!("{name}.batch")),
        };
        let route = self.route(t);
        let slurm = self.slurm(t);
        let items = self.items(t, &work, template.as_deref());
        Manifest {
            path: path.to_path_buf(),
            name,
            work,
            policy,
            route,
            template,
            slurm,
            batch_dir,
            items,
        }
    }

    fn work(&mut self, t: &toml::Table, catalog: &[String]) -> Work {
        let workflow = self.string("", t, "workflow");
        let question = self.string("", t, "question");
        let task = self.string("", t, "task");
        match (workflow, task) {
            (Some(definition), None) => {
                if !catalog.is_empty() && !catalog.contains(&definition) {
                    self.problem(
                        "`workflow`",
                        format!(
                            "{definition:?} is not in the catalog ({}; see `heartwood workflow \
                             catalog`)",
                            catalog.join(", ")
                        ),
                    );
                }
                Work::Workflow {
                    definition,
                    question: question.unwrap_or_default(),
                }
            }
            (None, Some(text)) => {
                if question.is_some() {
                    self.problem("`question`", "belongs to a workflow; a task says it all");
                }
                Work::Task { text }
            }
            (Some(_), Some(_)) => {
                self.problem("`workflow`, `task`", "give one of them, not both");
                Work::Task {
                    text: String::new(),
                }
            }
            (None, None) => {
                self.problem(
                    "`workflow`, `task`",
                    "say what every item does: `workflow` (with `question`) or `task`",
                );
                Work::Task {
                    text: String::new(),
                }
            }
        }
    }

    fn route(&mut self, t: &toml::Table) -> Option<Route> {
        let table = match t.get("route")? {
            toml::Value::Table(table) => table,
            other => {
                self.problem(
                    "`route`",
                    format!("must be a table, not {}", other.type_str()),
                );
                return None;
            }
        };
        self.unknown_keys("route.", table, ROUTE_KEYS);
        let mut connect_args = Vec::new();
        for key in ["preset", "category", "base_url", "model", "api_key_env"] {
            if let Some(value) = self.string("route.", table, key) {
                connect_args.push(format!("--{}", key.replace('_', "-")));
                connect_args.push(value);
            }
        }
        for key in ["max_input_tokens", "max_output_tokens", "timeout_secs"] {
            if let Some(value) = self.integer("route.", table, key, 1) {
                connect_args.push(format!("--{}", key.replace('_', "-")));
                connect_args.push(value.to_string());
            }
        }
        if !table.contains_key("preset") && !table.contains_key("category") {
            self.problem(
                "route.`category`",
                "name the route's category (or a `preset`)",
            );
        }
        if let Some(why) = self.routes.problem(&connect_args) {
            self.problem("`route`", why);
        }
        let concurrency = self
            .integer("route.", table, "concurrency", 1)
            .map_or(DEFAULT_ROUTE_CONCURRENCY, |n| n as usize);
        Some(Route {
            connect_args,
            concurrency,
        })
    }

    fn slurm(&mut self, t: &toml::Table) -> SlurmOptions {
        let Some(value) = t.get("slurm") else {
            return SlurmOptions::default();
        };
        let toml::Value::Table(table) = value else {
            self.problem(
                "`slurm`",
                format!("must be a table, not {}", value.type_str()),
            );
            return SlurmOptions::default();
        };
        self.unknown_keys("slurm.", table, SLURM_KEYS);
        let mut extra = Vec::new();
        match table.get("extra") {
            None => {}
            Some(toml::Value::Array(values)) => {
                for value in values {
                    match value.as_str() {
                        Some(s) if s.starts_with("--") && !s.contains('\n') => {
                            extra.push(s.to_owned());
                        }
                        _ => self.problem(
                            "slurm.`extra`",
                            format!("{value} is not one `--option=value` on one line"),
                        ),
                    }
                }
            }
            Some(other) => self.problem(
                "slurm.`extra`",
                format!("must be a list of strings, not {}", other.type_str()),
            ),
        }
        let mut one_line = |key: &str| {
            let value = self.string("slurm.", table, key)?;
            if value.contains(char::is_whitespace) {
                self.problem(&format!("slurm.`{key}`"), "must be one word");
                return None;
            }
            Some(value)
        };
        SlurmOptions {
            partition: one_line("partition"),
            time: one_line("time"),
            mem: one_line("mem"),
            cpus_per_task: self
                .integer("slurm.", table, "cpus_per_task", 1)
                .map(|n| n.min(i64::from(u32::MAX)) as u32),
            extra,
        }
    }

    fn items(&mut self, t: &toml::Table, work: &Work, template: Option<&Path>) -> Vec<Item> {
        let values = match t.get("items") {
            Some(toml::Value::Array(values)) => values,
            Some(other) => {
                self.problem(
                    "`items`",
                    format!(
                        "must be a list of tables ([[items]]), not {}",
                        other.type_str()
                    ),
                );
                return Vec::new();
            }
            None => {
                self.problem("`items`", "the batch has no items: add [[items]] tables");
                return Vec::new();
            }
        };
        if values.is_empty() {
            self.problem("`items`", "the batch has no items");
        }
        if values.len() > MAX_ITEMS {
            self.problem(
                "`items`",
                format!("{} items; the limit is {MAX_ITEMS}", values.len()),
            );
        }
        let mut items: Vec<Item> = Vec::new();
        for (index, value) in values.iter().enumerate().take(MAX_ITEMS) {
            let Some(table) = value.as_table() else {
                self.problem(&format!("item {index}"), "must be a table");
                continue;
            };
            if let Some(item) = self.item(index, table, work, template) {
                if items.iter().any(|i| i.name == item.name) {
                    self.problem(
                        &format!("item {index} ({}) `name`", item.name),
                        format!("{:?} names an earlier item too", item.name),
                    );
                }
                items.push(item);
            }
        }
        items
    }

    fn item(
        &mut self,
        index: usize,
        t: &toml::Table,
        work: &Work,
        template: Option<&Path>,
    ) -> Option<Item> {
        let name = self.string(&format!("item {index} "), t, "name");
        let at = match &name {
            Some(name) => format!("item {index} ({name}) "),
            None => {
                self.problem(&format!("item {index} `name`"), "is missing");
                format!("item {index} ")
            }
        };
        if let Some(name) = &name {
            self.name(&format!("{at}`name`"), name);
        }
        self.unknown_keys(&at, t, ITEM_KEYS);
        let source = self.source(&at, t, template);
        let ask = match work {
            Work::Workflow { question, .. } => {
                if t.contains_key("task") {
                    self.problem(&format!("{at}`task`"), "this batch runs a workflow");
                }
                let own = self.string(&at, t, "question");
                if own.is_none() && question.is_empty() {
                    self.problem(
                        &format!("{at}`question`"),
                        "no research question: give `question` in the manifest or the item",
                    );
                }
                own
            }
            Work::Task { .. } => {
                if t.contains_key("question") {
                    self.problem(&format!("{at}`question`"), "this batch runs a task");
                }
                self.string(&at, t, "task")
            }
        };
        let workflow_inputs = self.workflow_inputs(&at, t, work);
        Some(Item {
            name: name?,
            source: source?,
            ask,
            workflow_inputs,
        })
    }

    fn source(&mut self, at: &str, t: &toml::Table, template: Option<&Path>) -> Option<Source> {
        let project = self.string(at, t, "project");
        let inputs = t.get("inputs");
        match (project, inputs) {
            (Some(_), Some(_)) => {
                self.problem(
                    &format!("{at}`project`, `inputs`"),
                    "an item is an existing project or a template copy with inputs, not both",
                );
                None
            }
            (Some(project), None) => {
                let dir = self.dir.join(&project);
                if !dir.is_dir() {
                    self.problem(
                        &format!("{at}`project`"),
                        format!("{} is not a directory", dir.display()),
                    );
                    return None;
                }
                Some(Source::Project(dir))
            }
            (None, Some(toml::Value::Table(table))) => {
                if template.is_none() {
                    self.problem(
                        &format!("{at}`inputs`"),
                        "copied into a fresh copy of the template, but the manifest names no \
                         `template`",
                    );
                }
                let mut files = BTreeMap::new();
                for (dest, src) in table {
                    let field = format!("{at}inputs.`{dest}`");
                    if !is_project_relative(dest) {
                        self.problem(
                            &field,
                            "must be a path inside the item project (relative, no `..`, not in \
                             .heartwood/ or .git/)",
                        );
                        continue;
                    }
                    let Some(src) = src.as_str() else {
                        self.problem(&field, "must name a source file (a string)");
                        continue;
                    };
                    let file = self.dir.join(src);
                    if !file.is_file() {
                        self.problem(&field, format!("{} is not a file", file.display()));
                        continue;
                    }
                    files.insert(dest.clone(), file);
                }
                Some(Source::Template(files))
            }
            (None, Some(other)) => {
                self.problem(
                    &format!("{at}`inputs`"),
                    format!(
                        "must be a table of `destination = \"source\"`, not {}",
                        other.type_str()
                    ),
                );
                None
            }
            (None, None) => {
                if template.is_some() {
                    Some(Source::Template(BTreeMap::new()))
                } else {
                    self.problem(
                        &format!("{at}`project`"),
                        "is missing: name the item's project directory (or give the manifest a \
                         `template` and the item its `inputs`)",
                    );
                    None
                }
            }
        }
    }

    fn workflow_inputs(
        &mut self,
        at: &str,
        t: &toml::Table,
        work: &Work,
    ) -> BTreeMap<String, String> {
        let Some(value) = t.get("workflow_inputs") else {
            return BTreeMap::new();
        };
        if matches!(work, Work::Task { .. }) {
            self.problem(&format!("{at}`workflow_inputs`"), "this batch runs a task");
            return BTreeMap::new();
        }
        let Some(table) = value.as_table() else {
            self.problem(
                &format!("{at}`workflow_inputs`"),
                "must be a table of `input_id = \"project-relative path\"`",
            );
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (id, path) in table {
            match path.as_str() {
                Some(p) if is_project_relative(p) => {
                    out.insert(id.clone(), p.to_owned());
                }
                _ => self.problem(
                    &format!("{at}workflow_inputs.`{id}`"),
                    "must be a project-relative path",
                ),
            }
        }
        out
    }
}

/// A relative path that stays inside a project and out of Heartwood's and Git's folders.
fn is_project_relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
        && !p
            .components()
            .any(|c| c.as_os_str() == ".heartwood" || c.as_os_str() == ".git")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads any route options (the command line's parser is not here).
    struct AnyRoute;

    impl RouteConnector for AnyRoute {
        fn problem(&self, _: &[String]) -> Option<String> {
            None
        }

        fn connect(&self, _: &[String], _: &Path) -> Result<crate::route::Connection> {
            Ok(crate::route::Connection::Refused(
                "not in these tests".to_owned(),
            ))
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn every_problem_is_reported_at_once_naming_item_and_field() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("a")).expect("a");
        let path = write(
            dir.path(),
            "b.toml",
            r#"
workflow = "no-such-flow"
policy = "yolo"
colour = "blue"
[route]
model = "m"
[[items]]
name = "a"
project = "a"
[[items]]
name = "a"
project = "missing"
[[items]]
project = "a"
inputs = { "../x" = "nowhere.csv" }
[[items]]
name = "bad name"
"#,
        );
        let err = Manifest::load(&path, &AnyRoute)
            .expect_err("invalid")
            .to_string();
        for expected in [
            "`workflow`: \"no-such-flow\" is not in the catalog",
            "`policy`: \"yolo\" is not a policy",
            "`colour`: unknown field",
            "route.`category`: name the route's category",
            "item 1 (a) `project`: ",
            "item 2 `name`: is missing",
            "item 2 `project`, `inputs`: an item is an existing project or a template copy",
            "item 3 (bad name) `name`: \"bad name\" is not a name",
            "no research question",
        ] {
            assert!(err.contains(expected), "{expected:?} not in:\n{err}");
        }
    }

    #[test]
    fn a_template_batch_resolves_its_paths_beside_the_manifest() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("template")).expect("template");
        write(dir.path(), "b.csv", "x\n1\n");
        let path = write(
            dir.path(),
            "cohorts.toml",
            r#"
task = "summarise the table"
policy = "low-risk"
template = "template"
[route]
category = "compatible"
base_url = "http://127.0.0.1:1/v1"
model = "m"
concurrency = 2
[slurm]
partition = "short"
extra = ["--account=lab"]
[[items]]
name = "b"
inputs = { "data/cohort.csv" = "b.csv" }
task = "summarise b"
"#,
        );
        let m = Manifest::load(&path, &AnyRoute).expect("valid");
        assert_eq!(m.name, "cohorts");
        assert_eq!(m.batch_dir, dir.path().join("cohorts.batch"));
        assert_eq!(m.policy, ActionPolicy::LowRiskAutomation);
        assert_eq!(m.route_concurrency(), 2);
        assert!(m.default_jobs() <= 2);
        assert_eq!(m.slurm.extra, ["--account=lab"]);
        let Source::Template(files) = &m.items[0].source else {
            panic!("a template item");
        };
        assert_eq!(files["data/cohort.csv"], dir.path().join("b.csv"));
        assert_eq!(m.items[0].ask.as_deref(), Some("summarise b"));
    }

    #[test]
    fn the_shipped_example_is_valid() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/batch/sleep.toml");
        let m = Manifest::load(&example, &AnyRoute).unwrap_or_else(|e| panic!("{e}"));
        assert!(m.items.len() >= 2);
    }
}
