//! `heartwood serve`: the gateway's API over HTTP on loopback, guarded by the ingress policy and
//! a launch capability printed once, in the URL to open.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use heartwood_gateway::{ProjectContext, SessionGateway};
use heartwood_web::{AppState, Capability, IngressPolicy, Mode};

/// Arguments of `heartwood serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The loopback port (default: one the system picks).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// Runs the server until interrupted.
pub fn run(project: ProjectContext, args: ServeArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
        let port = listener.local_addr()?.port();
        let capability = Capability::generate()
            .map_err(|e| anyhow::anyhow!("no randomness for the launch capability: {e}"))?;
        println!(
            "Heartwood serves {} on loopback. Open (the link carries this run's capability):\n\n    http://127.0.0.1:{port}/?token={}\n\nPrograms send it as `Authorization: Bearer …`. Ctrl-C stops the server.",
            project.root().display(),
            capability.reveal()
        );
        let state = Arc::new(AppState {
            gateway: SessionGateway::new(project.clone())?,
            policy: IngressPolicy::new(Mode::Loopback, port, capability),
            project,
            admitted: Default::default(),
        });
        tokio::select! {
            served = heartwood_web::serve(listener, Arc::clone(&state)) => served?,
            _ = tokio::signal::ctrl_c() => {}
        }
        state.gateway.close().await;
        Ok(ExitCode::SUCCESS)
    })
}
