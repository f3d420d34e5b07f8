//! What the sandbox tests share: running one command in a terminal at a level.

use heartwood_agent::tools::{SandboxLevel, Terminal, ToolCallRequest};

/// Runs `command` at `level`; its output followed by `[exit CODE]`.
pub async fn run(term: &mut Terminal, command: &str, level: SandboxLevel) -> String {
    let value = serde_json::json!({ "command": command });
    let ToolCallRequest::Terminal(args) =
        ToolCallRequest::parse("terminal", &value.to_string()).expect("valid args")
    else {
        panic!("a terminal call");
    };
    let observation = term.run(&args, level).await;
    format!("{}[exit {:?}]", observation.content, observation.exit_code)
}
