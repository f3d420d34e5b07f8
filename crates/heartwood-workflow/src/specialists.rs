//! The maintained catalog of advisory specialists: the roles the agent may consult with the
//! `task` tool, validated before any is registered. Enabled roles are advisory and tool-free,
//! inherit the parent's model route and run one at a time; a tool-capable role may sit in the
//! catalog, but registering one fails closed (a child that acts would act outside the
//! researcher's review of each action set).

use serde::{Deserialize, Serialize};

/// The maintained specialists, as shipped.
const MAINTAINED: [&str; 3] = [
    include_str!("../../../fixtures/specialists/planner.json"),
    include_str!("../../../fixtures/specialists/reviewer.json"),
    include_str!("../../../fixtures/specialists/implementer.json"),
];

/// Tools a catalog entry may name (those of the parent agent).
const KNOWN_TOOLS: [&str; 3] = ["terminal", "file_editor", "task_tracker"];

/// The most model calls one specialist task may make.
pub const MAX_ITERATIONS: u32 = 20;

/// One specialist role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Specialist {
    /// Format version (1).
    pub schema: u32,
    /// The role's id, as the `task` tool names it.
    pub role: String,
    /// A title for people.
    pub title: String,
    /// What it does, shown to the agent and to people.
    pub description: String,
    /// Which model route it uses: only `inherit` (the parent's).
    pub model: String,
    /// `tool_free` (it proposes no actions), or `inherit` (the parent's review of action sets).
    pub confirmation: String,
    /// Most model calls per task.
    pub max_iterations: u32,
    /// Most tokens per task, prompt and completion together.
    pub max_tokens: u64,
    /// Tools it would use (none for an advisory role).
    pub tools: Vec<String>,
    /// Skills it references, by name.
    pub skills: Vec<String>,
    /// Whether it is offered to the agent.
    pub enabled: bool,
    /// What its task returns.
    pub result: SpecialistResult,
    /// Its instructions.
    pub system_prompt: String,
}

/// What a specialist's task returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecialistResult {
    /// A plain-text summary.
    Summary,
    /// In workflow conversations, structured review proposals (elsewhere, a summary).
    ReviewProposals,
}

/// Why a catalog entry was refused; names the entry and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("specialist {role:?}: {reason}")]
pub struct SpecialistError {
    /// The entry.
    pub role: String,
    /// The rule it breaks.
    pub reason: String,
}

impl Specialist {
    /// Parses and validates one entry.
    pub fn parse(json: &str) -> Result<Specialist, SpecialistError> {
        let s: Specialist = serde_json::from_str(json).map_err(|e| SpecialistError {
            role: "?".into(),
            reason: format!("not a specialist definition: {e}"),
        })?;
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), SpecialistError> {
        let refuse = |reason: String| {
            Err(SpecialistError {
                role: self.role.clone(),
                reason,
            })
        };
        let id_ok = self.role.len() <= 32
            && self.role.starts_with(|c: char| c.is_ascii_lowercase())
            && self
                .role
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if self.schema != 1 {
            return refuse(format!("format version {} is not 1", self.schema));
        }
        if !id_ok {
            return refuse("a role is 1 to 32 of a-z, 0-9, _ and -, starting with a letter".into());
        }
        for (field, text) in [
            ("title", &self.title),
            ("description", &self.description),
            ("system_prompt", &self.system_prompt),
        ] {
            if text.trim().is_empty() {
                return refuse(format!("{field} is empty"));
            }
        }
        if self.model != "inherit" {
            return refuse(format!(
                "model {:?}: a specialist inherits the parent's model route (\"inherit\")",
                self.model
            ));
        }
        match self.confirmation.as_str() {
            "tool_free" if !self.tools.is_empty() => {
                return refuse("a tool-free role names tools".into());
            }
            "tool_free" | "inherit" => {}
            other => {
                return refuse(format!(
                    "confirmation {other:?} is not tool_free or inherit"
                ));
            }
        }
        if !(1..=MAX_ITERATIONS).contains(&self.max_iterations) {
            return refuse(format!("max_iterations must be 1 to {MAX_ITERATIONS}"));
        }
        if self.max_tokens == 0 {
            return refuse("max_tokens must be above 0".into());
        }
        if let Some(tool) = self
            .tools
            .iter()
            .find(|t| !KNOWN_TOOLS.contains(&t.as_str()))
        {
            return refuse(format!("unknown tool {tool:?}"));
        }
        // Skills are named here and resolved when an agent starts: the role is offered only
        // when every skill it names is active and verified, and those are injected whole.
        if let Some(skill) = self.skills.iter().find(|k| !is_skill_name(k)) {
            return refuse(format!(
                "{skill:?} is not a skill name (lowercase letters, digits and single hyphens)"
            ));
        }
        Ok(())
    }
}

/// The Agent Skills rules for a name (1 to 64 of a-z, 0-9 and single inner hyphens).
fn is_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Every maintained specialist, validated (enabled or not).
pub fn catalog() -> Result<Vec<Specialist>, SpecialistError> {
    let all = MAINTAINED
        .iter()
        .map(|json| Specialist::parse(json))
        .collect::<Result<Vec<_>, _>>()?;
    let mut roles: Vec<&str> = all.iter().map(|s| s.role.as_str()).collect();
    roles.sort_unstable();
    if let Some(twice) = roles.windows(2).find(|w| w[0] == w[1]) {
        return Err(SpecialistError {
            role: twice[0].to_owned(),
            reason: "two catalog entries have this role".into(),
        });
    }
    Ok(all)
}

/// The roles the agent may consult: the enabled ones. An enabled role that would use tools
/// is refused, and with it the whole registration (fail closed).
pub fn registered() -> Result<Vec<Specialist>, SpecialistError> {
    registered_from(catalog()?)
}

fn registered_from(all: Vec<Specialist>) -> Result<Vec<Specialist>, SpecialistError> {
    let enabled: Vec<Specialist> = all.into_iter().filter(|s| s.enabled).collect();
    if let Some(acting) = enabled.iter().find(|s| !s.tools.is_empty()) {
        return Err(SpecialistError {
            role: acting.role.clone(),
            reason: "a tool-capable specialist cannot be registered: its actions would not \
                     pass the researcher's review of each action set"
                .into(),
        });
    }
    Ok(enabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maintained_catalog_registers_the_two_advisory_roles_only() {
        let all = catalog().expect("catalog");
        assert_eq!(all.len(), 3);
        let roles: Vec<String> = registered()
            .expect("registered")
            .into_iter()
            .map(|s| s.role)
            .collect();
        assert_eq!(roles, ["planner", "reviewer"]);
    }

    #[test]
    fn a_tool_capable_role_fails_closed_and_bad_entries_are_named() {
        let mut all = catalog().expect("catalog");
        let implementer = all
            .iter_mut()
            .find(|s| s.role == "implementer")
            .expect("implementer");
        implementer.enabled = true;
        let refused = registered_from(all).expect_err("a tool-capable role registered");
        assert_eq!(refused.role, "implementer");

        let reviewer = include_str!("../../../fixtures/specialists/reviewer.json");
        for (from, to, why) in [
            ("\"inherit\"", "\"gpt-x\"", "inherits the parent's model"),
            (
                "\"skills\": []",
                "\"skills\": [\"Stats--x\"]",
                "is not a skill name",
            ),
            (
                "\"tools\": []",
                "\"tools\": [\"terminal\"]",
                "tool-free role names tools",
            ),
            (
                "\"max_iterations\": 3",
                "\"max_iterations\": 0",
                "max_iterations",
            ),
        ] {
            let edited = reviewer.replacen(from, to, 1);
            let err = Specialist::parse(&edited).expect_err(why);
            assert!(err.to_string().contains(why), "{err}");
        }
    }
}
