//! How active skills reach a model, as Agent Skills work: the agent's system prompt lists each
//! skill's name, description and where its `SKILL.md` is, and the agent reads the body on
//! demand with the file viewer; a tool-free specialist cannot read files, so the skills its
//! role names are injected whole, and it discovers nothing.

use crate::SkillError;
use crate::catalog::ActiveSkill;

/// The system prompt's section listing `skills` (empty when there are none).
pub fn section(skills: &[ActiveSkill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n\n## Skills\n\nThe researcher approved these skills: instructions for particular kinds \
         of work, verified before this run. When a task matches a skill's description, first \
         read its SKILL.md with the file editor's `view` at the path given, then follow it; \
         files it mentions are in the same directory (read-only).\n",
    );
    for skill in skills {
        text.push_str(&format!(
            "\n- {}: {}\n  SKILL.md: {}\n",
            skill.name,
            skill.description,
            skill.dir.join("SKILL.md").display()
        ));
    }
    text
}

/// The instructions of `skill`, to inject whole into a specialist's prompt.
pub fn injected(skill: &ActiveSkill) -> Result<String, SkillError> {
    let path = skill.dir.join("SKILL.md");
    let text = std::fs::read_to_string(&path).map_err(|e| crate::io_error(&path, &e))?;
    let (_, body) = crate::skill::parse(&text)?;
    Ok(format!(
        "\n\n## Skill: {}\n\n{}\n\n{}",
        skill.name,
        skill.description,
        body.trim()
    ))
}
