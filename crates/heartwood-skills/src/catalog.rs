//! The catalog: every skill every source offers, revalidated, with the researcher's decisions,
//! and the one answer to "which skills reach the agent".
//!
//! [`load`] is the revalidation run before every agent start and behind every view: bundled
//! skills are written from the build, local directories read again, signed sources' cached
//! metadata verified again (signatures, thresholds, expiry, versions) and their revocations
//! reapplied; every offered tree is published to, or verified in, the store. A skill reaches
//! the agent only when it is active at the exact tree that was approved, that tree is still
//! offered by a source that verified, verifies in the store, and is not revoked.
//!
//! The functions block (files, fsync, and a signed source's verification on a runtime of its
//! own): call them from a blocking thread.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SkillError;
use crate::bundled::BUNDLED;
use crate::signed::{self, SourceUrls};
use crate::skill::Skill;
use crate::store::{Activation, Approval, Revoked, SignedSource, State, Store};
use crate::tree::{EntryKind, Limits, TreeDigest, parse_digest};

/// The id of the bundled source.
pub const BUNDLED_SOURCE: &str = "bundled";

/// What kind of source offers a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// Shipped with Heartwood.
    Bundled,
    /// A TUF repository the deployment trusts.
    Signed,
    /// A directory on this machine: never reviewed by anyone but the researcher.
    Local,
}

impl SourceKind {
    /// Whether someone other than the researcher reviewed what the source offers.
    pub fn reviewed(self) -> bool {
        !matches!(self, SourceKind::Local)
    }

    /// Who reviewed what the source offers, as every interface shows it.
    pub fn review_label(self) -> &'static str {
        if self.reviewed() {
            "reviewed by its source"
        } else {
            "unreviewed"
        }
    }
}

/// The catalog, as every interface shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "SkillCatalogView")]
pub struct CatalogView {
    /// Every skill offered, and every active one that is no longer offered.
    pub skills: Vec<SkillView>,
    /// Every source and whether it verified.
    pub sources: Vec<SourceView>,
}

/// One skill in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillView {
    /// Its name.
    pub name: String,
    /// Its description (empty when it could not be read).
    pub description: String,
    /// The source's id (`bundled`, `signed:<name>`, `local:<path>`).
    pub source: String,
    /// The source's kind.
    pub source_kind: SourceKind,
    /// Whether the source is a reviewed one (bundled, signed) or not (local).
    pub reviewed: bool,
    /// The same, in words for people (`reviewed by its source`, `unreviewed`).
    pub review: String,
    /// The tree offered (`None` when it could not be read).
    pub digest: Option<String>,
    /// Whether the researcher approved this exact tree.
    pub approved: bool,
    /// Whether it reaches the agent.
    pub active: bool,
    /// The revocation's reason, when the tree is revoked.
    pub revoked: Option<String>,
    /// Why it cannot be used, when it cannot.
    pub problem: Option<String>,
    /// One line saying where it stands.
    pub status: String,
    /// Its files and directories.
    pub files: Vec<FileView>,
}

/// One entry of a skill's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileView {
    /// Path inside the skill.
    pub path: String,
    /// Whether it is a directory.
    pub directory: bool,
    /// Size in bytes.
    pub size: u64,
    /// Whether it is executable.
    pub executable: bool,
}

/// One source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceView {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: SourceKind,
    /// Whether it verified (always, for bundled).
    pub verified: bool,
    /// One line saying where it stands.
    pub status: String,
}

/// A skill the agent gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveSkill {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The verified tree.
    pub digest: TreeDigest,
    /// Its verified directory in the store (read-only to the agent).
    pub dir: PathBuf,
}

/// A skill in detail: its view and its `SKILL.md`, as the researcher reviews it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillDetail {
    /// The catalog entry.
    pub view: SkillView,
    /// The full `SKILL.md` of the offered tree.
    pub skill_md: String,
}

/// The catalog after revalidation.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// As shown.
    pub view: CatalogView,
    /// What reaches the agent.
    pub active: Vec<ActiveSkill>,
    offered: Vec<Offer>,
}

#[derive(Debug, Clone)]
struct Offer {
    source: String,
    kind: SourceKind,
    name: String,
    /// The skill, or why it cannot be used (shared: the catalog is cloned whole).
    skill: Result<Skill, std::sync::Arc<SkillError>>,
}

/// Revalidates every source and the store, reapplies revocations (deactivating revoked
/// skills), and returns the catalog.
pub fn load(store: &Store, limits: &Limits) -> Result<Catalog, SkillError> {
    let state = store.state()?;
    let mut offered = Vec::new();
    let mut sources = vec![SourceView {
        id: BUNDLED_SOURCE.into(),
        kind: SourceKind::Bundled,
        verified: true,
        status: format!("shipped with Heartwood {}", env!("CARGO_PKG_VERSION")),
    }];
    for (name, files) in BUNDLED {
        offered.push(Offer {
            source: BUNDLED_SOURCE.into(),
            kind: SourceKind::Bundled,
            name: name.into(),
            skill: store
                .publish_files(name, files, limits)
                .map_err(std::sync::Arc::new),
        });
    }
    for path in &state.local {
        let dir = Path::new(path);
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let skill = store
            .publish_directory(dir, limits)
            .map_err(std::sync::Arc::new);
        sources.push(SourceView {
            id: local_id(path),
            kind: SourceKind::Local,
            verified: skill.is_ok(),
            status: match &skill {
                Ok(_) => "a local directory: unreviewed".into(),
                Err(e) => format!("cannot be read: {e}"),
            },
        });
        offered.push(Offer {
            source: local_id(path),
            kind: SourceKind::Local,
            name,
            skill,
        });
    }
    let mut signed_revocations = Vec::new();
    for source in &state.signed {
        let id = signed_id(&source.name);
        let dir = store.source_dir(&source.name);
        match wait(async move { signed::revalidate(&dir).await })? {
            Ok(listing) => {
                sources.push(SourceView {
                    id: id.clone(),
                    kind: SourceKind::Signed,
                    verified: true,
                    status: format!(
                        "verified: targets version {}, metadata valid until {}",
                        listing.targets_version, listing.expires
                    ),
                });
                signed_revocations.extend(listing.revoked.into_iter().map(|r| Revoked {
                    tree: r.tree,
                    source: id.clone(),
                    reason: r.reason,
                }));
                for bundle in listing.skills {
                    offered.push(Offer {
                        source: id.clone(),
                        kind: SourceKind::Signed,
                        skill: store
                            .publish_bundle(&bundle.bundle, &bundle.tree, limits)
                            .map_err(std::sync::Arc::new),
                        name: bundle.name,
                    });
                }
            }
            Err(e) => sources.push(SourceView {
                id,
                kind: SourceKind::Signed,
                verified: false,
                status: format!("not verified, so none of its skills is used: {e}"),
            }),
        }
    }
    let state = apply_revocations(store, signed_revocations)?;
    let (view, active) = project(store, &state, &offered, limits);
    Ok(Catalog {
        view: CatalogView {
            skills: view,
            sources,
        },
        active,
        offered,
    })
}

/// Records revocations not seen before and deactivates every revoked tree.
fn apply_revocations(store: &Store, seen: Vec<Revoked>) -> Result<State, SkillError> {
    store.update(|state| {
        for revoked in seen {
            if !state.revoked.iter().any(|r| r.tree == revoked.tree) {
                state.revoked.push(revoked);
            }
        }
        let revoked: Vec<String> = state.revoked.iter().map(|r| r.tree.clone()).collect();
        state.active.retain(|a| !revoked.contains(&a.digest));
        Ok(state.clone())
    })
}

fn project(
    store: &Store,
    state: &State,
    offered: &[Offer],
    limits: &Limits,
) -> (Vec<SkillView>, Vec<ActiveSkill>) {
    let mut views = Vec::new();
    let mut active = Vec::new();
    for offer in offered {
        let digest = offer.skill.as_ref().ok().map(|s| s.tree.digest.clone());
        let digest_text = digest.as_ref().map(|d| d.as_str().to_owned());
        let approved = digest_text.as_ref().is_some_and(|d| {
            state
                .approvals
                .iter()
                .any(|a| a.name == offer.name && a.source == offer.source && &a.digest == d)
        });
        let revoked = digest_text.as_ref().and_then(|d| {
            state
                .revoked
                .iter()
                .find(|r| &r.tree == d)
                .map(|r| format!("{} (signed by {})", r.reason, r.source))
        });
        let activation = state
            .active
            .iter()
            .find(|a| a.name == offer.name && a.source == offer.source);
        let mut problem = offer.skill.as_ref().err().map(ToString::to_string);
        if let (Some(activation), Some(d)) = (activation, &digest_text)
            && &activation.digest != d
            && problem.is_none()
        {
            problem = Some(format!(
                "the active tree {} is no longer what the source offers; review and approve \
                 the new tree to use it",
                activation.digest
            ));
        }
        let mut is_active = activation.is_some_and(|a| Some(&a.digest) == digest_text.as_ref())
            && approved
            && revoked.is_none()
            && problem.is_none();
        if is_active && let (Some(d), Ok(skill)) = (&digest, &offer.skill) {
            // The copy the agent reads is verified once more, right before it is handed over.
            match store.verify(d, &offer.name, limits) {
                Ok(_) => active.push(ActiveSkill {
                    name: offer.name.clone(),
                    description: skill.front.description.trim().to_owned(),
                    digest: d.clone(),
                    dir: store.object_dir(d, &offer.name),
                }),
                Err(e) => {
                    problem = Some(e.to_string());
                    is_active = false;
                }
            }
        }
        let status = status(
            offer.kind,
            approved,
            is_active,
            revoked.as_deref(),
            problem.as_deref(),
        );
        views.push(SkillView {
            name: offer.name.clone(),
            description: offer
                .skill
                .as_ref()
                .map(|s| s.front.description.trim().to_owned())
                .unwrap_or_default(),
            source: offer.source.clone(),
            source_kind: offer.kind,
            reviewed: offer.kind.reviewed(),
            review: offer.kind.review_label().to_owned(),
            digest: digest_text,
            approved,
            active: is_active,
            revoked,
            problem,
            status,
            files: offer.skill.as_ref().map(files).unwrap_or_default(),
        });
    }
    for activation in &state.active {
        let offered_here = offered
            .iter()
            .any(|o| o.name == activation.name && o.source == activation.source);
        if !offered_here {
            let problem = format!(
                "{} no longer offers it (or did not verify); it does not reach the agent",
                activation.source
            );
            views.push(SkillView {
                name: activation.name.clone(),
                description: String::new(),
                source: activation.source.clone(),
                source_kind: kind_of(&activation.source),
                reviewed: kind_of(&activation.source).reviewed(),
                review: kind_of(&activation.source).review_label().to_owned(),
                digest: Some(activation.digest.clone()),
                approved: true,
                active: false,
                revoked: None,
                status: format!("unavailable: {problem}"),
                problem: Some(problem),
                files: Vec::new(),
            });
        }
    }
    views.sort_by(|a, b| a.name.cmp(&b.name).then(a.source.cmp(&b.source)));
    (views, active)
}

fn status(
    kind: SourceKind,
    approved: bool,
    active: bool,
    revoked: Option<&str>,
    problem: Option<&str>,
) -> String {
    match (revoked, problem) {
        (Some(reason), _) => format!("revoked: {reason}"),
        (None, Some(problem)) => format!("unavailable: {problem}"),
        (None, None) if active => "active".into(),
        (None, None) if approved => "approved, not active".into(),
        (None, None) if kind == SourceKind::Local => {
            "needs review and approval (an unreviewed local directory)".into()
        }
        (None, None) => "needs approval".into(),
    }
}

fn files(skill: &Skill) -> Vec<FileView> {
    skill
        .tree
        .entries
        .iter()
        .map(|e| FileView {
            path: e.path.clone(),
            directory: e.kind == EntryKind::Directory,
            size: e.size,
            executable: matches!(e.kind, EntryKind::File { executable: true }),
        })
        .collect()
}

fn kind_of(source: &str) -> SourceKind {
    if source == BUNDLED_SOURCE {
        SourceKind::Bundled
    } else if source.starts_with("signed:") {
        SourceKind::Signed
    } else {
        SourceKind::Local
    }
}

fn local_id(path: &str) -> String {
    format!("local:{path}")
}

fn signed_id(name: &str) -> String {
    format!("signed:{name}")
}

impl Catalog {
    /// The one offered skill called `name` (from `source`, when several sources offer it).
    fn find(&self, name: &str, source: Option<&str>) -> Result<(&Offer, &SkillView), SkillError> {
        let matches: Vec<(&Offer, &SkillView)> = self
            .offered
            .iter()
            .filter(|o| o.name == name && source.is_none_or(|s| s == o.source))
            .filter_map(|o| {
                self.view
                    .skills
                    .iter()
                    .find(|v| v.name == o.name && v.source == o.source)
                    .map(|v| (o, v))
            })
            .collect();
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(SkillError::Invalid(format!(
                "no source offers a skill named {name:?}{}; `heartwood skills ls` lists them",
                source.map(|s| format!(" from {s}")).unwrap_or_default()
            ))),
            several => Err(SkillError::Invalid(format!(
                "{name:?} is offered by {}; name one with --source",
                several
                    .iter()
                    .map(|(o, _)| o.source.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))),
        }
    }

    /// The skill in detail, with its `SKILL.md` as stored.
    pub fn show(
        &self,
        store: &Store,
        name: &str,
        source: Option<&str>,
    ) -> Result<SkillDetail, SkillError> {
        let (offer, view) = self.find(name, source)?;
        let skill = offer
            .skill
            .as_ref()
            .map_err(|e| SkillError::Invalid(format!("{name} cannot be shown: {e}")))?;
        let path = store.object_dir(&skill.tree.digest, name).join("SKILL.md");
        let skill_md = std::fs::read_to_string(&path).map_err(|e| crate::io_error(&path, &e))?;
        Ok(SkillDetail {
            view: view.clone(),
            skill_md,
        })
    }
}

/// Approves the exact tree `digest` of skill `name`: refused when the catalog offers a
/// different tree (the skill changed since the researcher looked), when it is revoked, or
/// when it cannot be used.
pub fn approve(
    store: &Store,
    name: &str,
    source: Option<&str>,
    digest: &str,
    limits: &Limits,
) -> Result<SkillView, SkillError> {
    let catalog = load(store, limits)?;
    let (offer, view) = catalog.find(name, source)?;
    usable(view)?;
    let shown = parse_digest(digest).ok_or_else(|| {
        SkillError::Invalid(format!(
            "{digest:?} is not a full tree digest (blake3: and 64 hex digits, as \
             `heartwood skills show {name}` prints it)"
        ))
    })?;
    if view.digest.as_deref() != Some(shown.as_str()) {
        return Err(SkillError::Invalid(format!(
            "{name} is now {}, not the {shown} you reviewed; review it again with \
             `heartwood skills show {name}`",
            view.digest.as_deref().unwrap_or("unreadable")
        )));
    }
    let approval = Approval {
        name: name.to_owned(),
        source: offer.source.clone(),
        digest: shown.as_str().to_owned(),
        approved_at: jiff::Timestamp::now().to_string(),
    };
    store.update(|state| {
        if !state.approvals.iter().any(|a| {
            a.name == approval.name && a.source == approval.source && a.digest == approval.digest
        }) {
            state.approvals.push(approval.clone());
        }
        Ok(())
    })?;
    after(store, name, &offer.source, limits)
}

/// Makes skill `name` active at its approved tree (replacing any other active skill of that
/// name).
pub fn activate(
    store: &Store,
    name: &str,
    source: Option<&str>,
    limits: &Limits,
) -> Result<SkillView, SkillError> {
    let catalog = load(store, limits)?;
    let (offer, view) = catalog.find(name, source)?;
    usable(view)?;
    let digest = view.digest.clone().unwrap_or_default();
    if !view.approved {
        return Err(SkillError::Invalid(format!(
            "{name} ({digest}) is not approved; review it with `heartwood skills show {name}` \
             and approve that tree first"
        )));
    }
    let activation = Activation {
        name: name.to_owned(),
        source: offer.source.clone(),
        digest,
    };
    store.update(|state| {
        state.active.retain(|a| a.name != activation.name);
        state.active.push(activation.clone());
        Ok(())
    })?;
    after(store, name, &offer.source, limits)
}

/// Stops skill `name` reaching the agent; returns whether it was active.
pub fn deactivate(store: &Store, name: &str) -> Result<bool, SkillError> {
    store.update(|state| {
        let before = state.active.len();
        state.active.retain(|a| a.name != name);
        Ok(state.active.len() != before)
    })
}

/// Adds the skill directory `dir` as a local (unreviewed) source.
pub fn add_local(store: &Store, dir: &Path, limits: &Limits) -> Result<SkillView, SkillError> {
    let dir = dir.canonicalize().map_err(|e| crate::io_error(dir, &e))?;
    let skill = store.publish_directory(&dir, limits)?;
    let path = dir.to_string_lossy().into_owned();
    store.update(|state| {
        if !state.local.contains(&path) {
            state.local.push(path.clone());
        }
        Ok(())
    })?;
    after(store, &skill.front.name, &local_id(&path), limits)
}

/// Removes the source `id` (`local:<path>` or `signed:<name>`): its skills leave the catalog and
/// stop reaching the agent; approvals stay, bound to their trees. Returns whether it was there.
pub fn remove_source(store: &Store, id: &str) -> Result<bool, SkillError> {
    let removed = store.update(|state| {
        let before = state.local.len() + state.signed.len();
        if let Some(path) = id.strip_prefix("local:") {
            state.local.retain(|p| p != path);
        } else if let Some(name) = id.strip_prefix("signed:") {
            state.signed.retain(|s| s.name != name);
        } else {
            return Err(SkillError::Invalid(format!(
                "{id:?} is not a source that can be removed (local:<path> or signed:<name>;                  `heartwood skills ls` lists them)"
            )));
        }
        state.active.retain(|a| a.source != id);
        Ok(state.local.len() + state.signed.len() != before)
    })?;
    if let Some(name) = id.strip_prefix("signed:")
        && removed
    {
        // Its trusted root and cache go too: adding it again trusts the root given then.
        let dir = store.root().join("sources").join(name);
        if dir.starts_with(store.root().join("sources")) && crate::skill::check_name(name).is_ok() {
            std::fs::remove_dir_all(&dir).map_err(|e| crate::io_error(&dir, &e))?;
        }
    }
    Ok(removed)
}

/// Adds a signed source `name` served at `urls`, trusting `root` (the deployment's root
/// metadata), and refreshes it. A source of that name with a different root is refused.
pub fn add_signed(
    store: &Store,
    name: &str,
    root: &[u8],
    urls: SourceUrls,
    limits: &Limits,
) -> Result<Vec<SkillView>, SkillError> {
    crate::skill::check_name(name)
        .map_err(|why| SkillError::Invalid(format!("the source name {name:?} {why}")))?;
    let dir = store.source_dir(name);
    let root_path = dir.root();
    match std::fs::read(&root_path) {
        Ok(existing) if existing != root => {
            return Err(SkillError::Invalid(format!(
                "a source named {name} already trusts another root; remove it first"
            )));
        }
        Ok(_) => {}
        Err(_) => {
            let parent = root_path.parent().unwrap_or(store.root());
            std::fs::create_dir_all(parent).map_err(|e| crate::io_error(parent, &e))?;
            std::fs::write(&root_path, root).map_err(|e| crate::io_error(&root_path, &e))?;
        }
    }
    let source = SignedSource {
        name: name.to_owned(),
        urls,
    };
    store.update(|state| {
        state.signed.retain(|s| s.name != source.name);
        state.signed.push(source.clone());
        Ok(())
    })?;
    let refreshed = refresh(store, limits)?
        .into_iter()
        .find(|r| r.source == signed_id(name));
    match refreshed {
        Some(SourceRefresh { refused: None, .. }) => {}
        Some(SourceRefresh {
            refused: Some(why), ..
        }) => return Err(SkillError::Refused(why)),
        None => return Err(SkillError::Invalid("the source was not refreshed".into())),
    }
    let catalog = load(store, limits)?;
    Ok(catalog
        .view
        .skills
        .into_iter()
        .filter(|s| s.source == signed_id(name))
        .collect())
}

/// How one signed source's refresh went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRefresh {
    /// The source's id.
    pub source: String,
    /// Why it was refused (`None`: verified and updated).
    pub refused: Option<String>,
}

/// Fetches and verifies every signed source again; a source that fails keeps its last
/// verified cache (which must still verify to be used). Returns each source's outcome.
pub fn refresh(store: &Store, limits: &Limits) -> Result<Vec<SourceRefresh>, SkillError> {
    let state = store.state()?;
    let mut outcomes = Vec::new();
    for source in &state.signed {
        let dir = store.source_dir(&source.name);
        let urls = source.urls.clone();
        let fetched = wait(async move { signed::refresh(&dir, &urls).await })?;
        let outcome = fetched.and_then(|listing| {
            for bundle in &listing.skills {
                store.publish_bundle(&bundle.bundle, &bundle.tree, limits)?;
            }
            Ok(())
        });
        outcomes.push(SourceRefresh {
            source: signed_id(&source.name),
            refused: outcome.err().map(|e| e.to_string()),
        });
    }
    // Revalidating applies the new revocations.
    load(store, limits)?;
    Ok(outcomes)
}

fn usable(view: &SkillView) -> Result<(), SkillError> {
    if let Some(reason) = &view.revoked {
        return Err(SkillError::Invalid(format!(
            "{} is revoked: {reason}",
            view.name
        )));
    }
    if let Some(problem) = &view.problem
        && view.digest.is_none()
    {
        return Err(SkillError::Invalid(format!(
            "{} cannot be used: {problem}",
            view.name
        )));
    }
    Ok(())
}

fn after(
    store: &Store,
    name: &str,
    source: &str,
    limits: &Limits,
) -> Result<SkillView, SkillError> {
    let catalog = load(store, limits)?;
    Ok(catalog.find(name, Some(source))?.1.clone())
}

/// Waits for a source's verification from synchronous code, on the process's one waiting
/// runtime (see [`crate::blocking`]).
fn wait<T: Send + 'static>(
    future: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, SkillError> {
    crate::blocking::wait_for(future).map_err(|e| SkillError::Refused(e.to_string()))
}
