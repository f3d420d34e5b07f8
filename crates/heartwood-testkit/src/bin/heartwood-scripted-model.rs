//! `heartwood-scripted-model SCRIPT.json`: the scripted OpenAI-compatible model server as a
//! process, for tests written in other languages (the notebook module's pytest suite). Prints
//! its base URL on the first line of stdout, serves until stdin closes (or it is killed), and
//! answers `GET /__heartwood/requests` with every request body received so far.

use std::io::Read;

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: heartwood-scripted-model SCRIPT.json");
        return std::process::ExitCode::from(2);
    };
    let script = match heartwood_testkit::Script::load(std::path::Path::new(&path)) {
        Ok(script) => script,
        Err(e) => {
            eprintln!("heartwood-scripted-model: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("heartwood-scripted-model: cannot start a runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let server = match runtime.block_on(heartwood_testkit::ScriptedModelServer::start(script)) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("heartwood-scripted-model: cannot listen: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("{}", server.base_url());
    // Served by the runtime's worker until the test that started it closes our stdin.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(server);
    std::process::ExitCode::SUCCESS
}
