//! Heartwood embedded in another Rust program: open a project, give the agent a task, show the
//! proposed action set whole, decide it, and print the session record's terminal hash.
//!
//! ```sh
//! cargo run -p heartwood-gateway --example embed -- PROJECT_DIR BASE_URL [MODEL]
//! ```
//!
//! `BASE_URL` is any OpenAI-compatible service (`http://localhost:11434/v1` for Ollama). The
//! program allows the first set it is shown; a real tool would ask a person.

use std::time::Duration;

use heartwood_gateway::config::{ProjectConfig, RouteConfig};
use heartwood_gateway::events::{ActionPolicy, Command, CommandKind, Decision, Outcome};
use heartwood_gateway::{ProjectContext, SessionAdmin, SessionGateway};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(base_url)) = (args.next(), args.next()) else {
        eprintln!("usage: embed PROJECT_DIR BASE_URL [MODEL]");
        std::process::exit(2);
    };
    let model = args.next().unwrap_or_else(|| "qwen2.5-coder".to_owned());

    // The project and its model route (stored in PROJECT_DIR/.heartwood/config.toml).
    let project = ProjectContext::at(std::path::Path::new(&dir))?;
    ProjectConfig::set_route(&project, RouteConfig::compatible(&base_url, &model))?;

    let gateway = SessionGateway::new(project.clone());
    let session = SessionGateway::new_session_id();
    // Commands go through the async API: their file reads and journal appends never block
    // this program's runtime.
    let submit = async |kind| {
        let command = Command::new(SessionGateway::new_command_id(), session.clone(), kind);
        match gateway.submit_async(command).await?.outcome {
            Outcome::Refused { reason } => Err(reason.into()),
            Outcome::Applied { .. } => Ok::<_, Box<dyn std::error::Error>>(()),
        }
    };
    submit(CommandKind::SubmitTask {
        text: "Count the lines of data.csv and write the count to count.txt.".into(),
        policy: ActionPolicy::AlwaysReview,
    })
    .await?;

    let mut decided = false;
    let finished = loop {
        // Until the agent stops: finished, failed, paused, or waiting on a published set.
        let p = gateway
            .settled(&session, Duration::from_secs(600))
            .await?
            .projection;
        match (&p.pending, decided) {
            (Some(set), false) => {
                println!("set {} (revision {}) proposes:", set.set_id, set.revision);
                for member in &set.members {
                    println!(
                        "  #{} {} {}",
                        member.action_id, member.tool, member.arguments
                    );
                }
                submit(CommandKind::Decide {
                    set_id: set.set_id.clone(),
                    revision: set.revision,
                    decision: Decision::AllowOnce,
                    reason: None,
                })
                .await?;
                decided = true;
            }
            // A second set: this example decides only one; leave it for a person.
            (Some(_), true) => break p,
            (None, _) => break p,
        }
    };
    println!("{}", finished.status_line);
    gateway.close().await;

    let (verified, _) = SessionAdmin::new(&project).verify(session.as_str(), None)?;
    println!(
        "session {session}: {} events, terminal hash {}",
        verified.count,
        verified.terminal_hash.to_hex()
    );
    Ok(())
}
