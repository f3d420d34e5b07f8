//! Heartwood embedded in another Rust program, through the gateway's async API: open a
//! project, follow a session's updates, give the agent a task, show each proposed action set
//! whole as the stream announces it, decide it, and print the session record's terminal hash.
//!
//! ```sh
//! cargo run -p heartwood-gateway --example embed -- PROJECT_DIR BASE_URL [MODEL]
//! ```
//!
//! `BASE_URL` is any OpenAI-compatible service (`http://localhost:11434/v1` for Ollama). The
//! program allows the first set it is shown; a real tool would ask a person.

use heartwood_gateway::config::{ProjectConfig, RouteConfig};
use heartwood_gateway::events::{
    ActionPolicy, Change, Command, CommandKind, Decision, Lifecycle, Outcome, Receipt, Suspended,
};
use heartwood_gateway::{ProjectContext, SessionAdmin, SessionGateway};

type Error = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() -> Result<(), Error> {
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
    // Followed before the first command, so nothing the command sets going is missed.
    let mut updates = gateway.updates(&session)?;
    // A command is answered once it is decided (recorded or refused); the work it sets going
    // arrives on the updates, each event naming the command that caused it.
    let submit = async |kind| -> Result<Receipt, Error> {
        let command = Command::new(SessionGateway::new_command_id(), session.clone(), kind);
        let receipt = gateway.submit(command).await?;
        match &receipt.outcome {
            Outcome::Refused(refusal) => Err(refusal.to_string().into()),
            Outcome::Applied { .. } => Ok(receipt),
        }
    };
    let task = submit(CommandKind::SubmitTask {
        text: "Count the lines of data.csv and write the count to count.txt.".into(),
        policy: ActionPolicy::AlwaysReview,
    })
    .await?;
    println!("task accepted as command {}", task.command_id);

    let mut decided = false;
    while let Some(update) = updates.next().await {
        let waiting = match update.change {
            Change::Event { event } => {
                println!("  event {} {}", event.seq, event.event.kind());
                None
            }
            Change::Suspended(suspended) => Some(suspended),
            // The agent stopped for another reason than a decision: the run is over.
            Change::ExecutionSettled { lifecycle }
                if lifecycle != Lifecycle::WaitingForDecision =>
            {
                break;
            }
            // Updates may have been missed: the session as it stands says what to do next.
            Change::Lagged {} => {
                let now = gateway.current(&session).await?.projection;
                if now.is_settled() && now.lifecycle != Lifecycle::WaitingForDecision {
                    break;
                }
                Suspended::of(&now)
            }
            _ => None,
        };
        let Some(set) = waiting else { continue };
        println!("set {} (revision {}) proposes:", set.set_id, set.revision);
        for member in &set.members {
            println!(
                "  #{} {} {}",
                member.action_id, member.tool, member.arguments
            );
        }
        if decided {
            // A second set: this example decides only one; leave it for a person.
            break;
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
    println!(
        "{}",
        gateway.current(&session).await?.projection.status_line
    );
    gateway.close().await;

    let (verified, _) = SessionAdmin::new(&project).verify(session.as_str(), None)?;
    println!(
        "session {session}: {} events, terminal hash {}",
        verified.count,
        verified.terminal_hash.to_hex()
    );
    Ok(())
}
