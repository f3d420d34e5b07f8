//! The project's Agent Skills, as every interface reaches them: the gateway's one door to
//! `heartwood-skills` (catalog, review, approval, activation, sources) and the revalidated set
//! handed to the agent when it starts.
//!
//! Every call blocks (files, fsync, a signed source's verification): interfaces call them from
//! a blocking thread, as they call the rest of the gateway.

use heartwood_skills::catalog::{self, Catalog};
pub use heartwood_skills::catalog::{
    ActiveSkill, CatalogView, FileView, SkillDetail, SkillView, SourceKind, SourceRefresh,
    SourceView,
};
pub use heartwood_skills::signed::SourceUrls;
use heartwood_skills::store::Store;
use heartwood_skills::tree::Limits;
use heartwood_skills::{SkillError, prompt};

use crate::{ProjectContext, ProjectError};

/// The skills of one project.
#[derive(Debug, Clone)]
pub struct SkillsService {
    store: Store,
    limits: Limits,
    /// Whether the project has `.heartwood/` (a project without it is shown its catalog from
    /// a temporary store, so looking creates nothing).
    has_state: bool,
}

impl SkillsService {
    /// The skills of `project` (its store is `.heartwood/skills/`; nothing is created until a
    /// skill is shown or changed).
    pub fn open(project: &ProjectContext) -> Self {
        SkillsService {
            store: Store::new(project.state_dir().join("skills").into_std_path_buf()),
            limits: Limits::default(),
            has_state: project.state_dir().is_dir(),
        }
    }

    fn load(&self) -> Result<Catalog, ProjectError> {
        catalog::load(&self.store, &self.limits).map_err(skill_error)
    }

    /// Runs a read on the project's store, or on a temporary one when the project has no
    /// `.heartwood/` yet (only bundled skills, none approved).
    fn reading<T>(
        &self,
        read: impl FnOnce(&Store, Catalog) -> Result<T, ProjectError>,
    ) -> Result<T, ProjectError> {
        if self.has_state {
            return read(&self.store, self.load()?);
        }
        let temporary = tempfile::tempdir().map_err(|source| ProjectError::Io {
            doing: "cannot make a temporary store to check the skills in".into(),
            source,
        })?;
        let store = Store::new(temporary.path().join("skills"));
        let catalog = catalog::load(&store, &self.limits).map_err(skill_error)?;
        read(&store, catalog)
    }

    /// The catalog, revalidated.
    pub fn catalog(&self) -> Result<CatalogView, ProjectError> {
        self.reading(|_, catalog| Ok(catalog.view))
    }

    /// One skill in detail (its files and `SKILL.md`), as the researcher reviews it.
    pub fn show(&self, name: &str, source: Option<&str>) -> Result<SkillDetail, ProjectError> {
        self.reading(|store, catalog| catalog.show(store, name, source).map_err(skill_error))
    }

    /// Approves the exact tree `digest` the researcher reviewed.
    pub fn approve(
        &self,
        name: &str,
        source: Option<&str>,
        digest: &str,
    ) -> Result<SkillView, ProjectError> {
        catalog::approve(&self.store, name, source, digest, &self.limits).map_err(skill_error)
    }

    /// Makes an approved skill active.
    pub fn activate(&self, name: &str, source: Option<&str>) -> Result<SkillView, ProjectError> {
        catalog::activate(&self.store, name, source, &self.limits).map_err(skill_error)
    }

    /// Stops a skill reaching the agent; returns whether it was active.
    pub fn deactivate(&self, name: &str) -> Result<bool, ProjectError> {
        catalog::deactivate(&self.store, name).map_err(skill_error)
    }

    /// Adds a local skill directory (always unreviewed).
    pub fn add_local(&self, dir: &std::path::Path) -> Result<SkillView, ProjectError> {
        catalog::add_local(&self.store, dir, &self.limits).map_err(skill_error)
    }

    /// Adds a signed source trusting the deployment's `root` metadata, and refreshes it.
    pub fn add_signed(
        &self,
        name: &str,
        root: &[u8],
        urls: SourceUrls,
    ) -> Result<Vec<SkillView>, ProjectError> {
        catalog::add_signed(&self.store, name, root, urls, &self.limits).map_err(skill_error)
    }

    /// Removes a local directory or signed source (`local:<path>`, `signed:<name>`); returns
    /// whether it was there.
    pub fn remove_source(&self, id: &str) -> Result<bool, ProjectError> {
        catalog::remove_source(&self.store, id).map_err(skill_error)
    }

    /// Fetches and verifies every signed source; each source's outcome.
    pub fn refresh(&self) -> Result<Vec<SourceRefresh>, ProjectError> {
        catalog::refresh(&self.store, &self.limits).map_err(skill_error)
    }

    /// What reaches the agent now: revalidated from disk and source metadata, active, approved
    /// at the exact tree, unrevoked. Errors are reasons for the researcher: an agent does not
    /// start on skills that cannot be verified.
    pub fn for_agent(&self) -> Result<AgentSkills, ProjectError> {
        let catalog =
            catalog::load(&self.store, &self.limits).map_err(ProjectError::SkillsUnverified)?;
        let mut skills = Vec::new();
        for mut skill in catalog.active {
            // The agent's paths are compared as real paths.
            skill.dir = skill
                .dir
                .canonicalize()
                .map_err(|source| ProjectError::Io {
                    doing: format!("the skill {} cannot be read", skill.name),
                    source,
                })?;
            skills.push(skill);
        }
        Ok(AgentSkills(skills))
    }
}

/// The skills handed to one agent start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSkills(pub Vec<ActiveSkill>);

impl AgentSkills {
    /// The system prompt's skills section (empty without skills).
    pub fn prompt_section(&self) -> String {
        prompt::section(&self.0)
    }

    /// The verified directories the agent may read.
    pub fn directories(&self) -> Vec<heartwood_agent::tools::OutsideDirectory> {
        self.0
            .iter()
            .map(|s| {
                heartwood_agent::tools::OutsideDirectory::read_only(
                    s.dir.clone(),
                    format!("the skill {}'s verified copy", s.name),
                )
            })
            .collect()
    }

    /// The whole instructions of each of `names`, to inject into a specialist's prompt; `Err`
    /// names the first that is not active and verified (the role is then not offered).
    pub fn injected(&self, names: &[String]) -> Result<String, ProjectError> {
        let mut text = String::new();
        for name in names {
            let skill = self
                .0
                .iter()
                .find(|s| &s.name == name)
                .ok_or_else(|| crate::Absent::Skill(name.clone()))?;
            text.push_str(&prompt::injected(skill).map_err(skill_error)?);
        }
        Ok(text)
    }

    /// Whether skill `name` reaches the agent.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|s| s.name == name)
    }
}

fn skill_error(e: SkillError) -> ProjectError {
    ProjectError::Skills(e)
}
