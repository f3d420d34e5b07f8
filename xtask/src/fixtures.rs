//! `cargo xtask fixtures`: regenerates `fixtures/journals/`, small projects whose sessions were
//! written by the real journal code. `intact` verifies; the others are damaged in one documented
//! way each. Tests copy them and check what `heartwood sessions verify` says, so a change that
//! stops Heartwood reading sessions written earlier fails there.

use std::path::Path;

use anyhow::{Context, Result};
use heartwood_audit::SessionStore;
use heartwood_events::{CommandId, Event, Role, SessionId};

pub fn generate() -> Result<()> {
    let root = crate::workspace_root().join("fixtures/journals");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    let intact = root.join("intact");
    write_intact(&intact)?;
    let session = Path::new(".heartwood/sessions/example");

    let tampered = root.join("tampered");
    copy_dir(&intact, &tampered)?;
    let events = tampered.join(session).join("events.jsonl");
    let text = std::fs::read_to_string(&events)?.replacen("1,204 rows", "1,205 rows", 1);
    std::fs::write(&events, text)?;

    let torn = root.join("torn-tail");
    copy_dir(&intact, &torn)?;
    let audit = torn.join(session).join("audit.jsonl");
    let bytes = std::fs::read(&audit)?;
    std::fs::write(&audit, &bytes[..bytes.len() - 40])?;

    println!("wrote {}", root.display());
    Ok(())
}

fn write_intact(project: &Path) -> Result<()> {
    std::fs::create_dir_all(project)?;
    let store = SessionStore::new(project);
    let (mut writer, _) = store.create_or_open_writer(&SessionId::parse("example")?, "native")?;
    let say = |role, text: &str| Event::Message {
        role,
        text: text.to_owned(),
    };
    writer.append(
        None,
        vec![say(
            Role::Researcher,
            "Check data/cohort.csv is ready for analysis.",
        )],
    )?;
    writer.complete_command(
        &CommandId::parse("example-note-1")?,
        "note",
        vec![
            say(
                Role::Agent,
                "data/cohort.csv: 1,204 rows, 14 columns, no missing participant ids.",
            ),
            say(
                Role::Agent,
                "Readiness report written to reports/readiness.md.",
            ),
        ],
        serde_json::Value::Null,
    )?;
    writer.close();
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
