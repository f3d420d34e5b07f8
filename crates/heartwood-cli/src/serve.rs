//! `heartwood serve`: the gateway's API over HTTP on loopback, guarded by the ingress policy and
//! a launch capability printed once, in the URL to open.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use heartwood_gateway::ProjectContext;
use heartwood_web::{AppState, Capability, IngressPolicy, Mode};

/// Arguments of `heartwood serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The loopback port (default: one the system picks).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Behind a Jupyter server proxy: the prefix it forwards, e.g. /user/alice/proxy/8765/.
    #[arg(long, requires = "external_host", conflicts_with = "trusted_proxy")]
    jupyter_prefix: Option<String>,
    /// Behind a proxy: the host (and port) the browser uses, e.g. hub.example.org.
    #[arg(long)]
    external_host: Option<String>,
    /// Behind a reverse proxy at this address (repeatable); requires --origin and --base-path.
    #[arg(long, requires_all = ["origin", "base_path"])]
    trusted_proxy: Vec<std::net::IpAddr>,
    /// The proxy's canonical external origin, e.g. https://heartwood.example.org.
    #[arg(long)]
    origin: Option<String>,
    /// The path the proxy serves Heartwood under, e.g. /heartwood/.
    #[arg(long)]
    base_path: Option<String>,
    /// Draw a new launch capability (links and pages opened with the old one stop working).
    /// Otherwise the port and capability of the last run in this project are kept, so
    /// bookmarks and reloads still work.
    #[arg(long)]
    new_token: bool,
    /// Where sessions are kept: `files` (the project's, the default) or a `postgres://` URL
    /// shared by several replicas behind a load balancer (see docs/deployment.md).
    #[arg(long, value_name = "URL")]
    session_store: Option<String>,
    /// The launch capability the deployment provides (one secret in a file of mode 0600),
    /// shared by every replica; replaces the drawn one, and is never saved.
    #[arg(long, value_name = "FILE", conflicts_with = "new_token")]
    capability_file: Option<std::path::PathBuf>,
    /// How long a replica's lease on a session lasts without renewal, in seconds (a shared
    /// store only): a replica that dies is replaced after this long.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    lease_seconds: u64,
}

/// The ingress mode the arguments declare (`None`: none was declared).
fn declared_mode(args: &ServeArgs) -> Option<Mode> {
    let mode = flag_mode(args);
    let declared = args.jupyter_prefix.is_some() || !args.trusted_proxy.is_empty();
    declared.then_some(mode)
}

/// The ingress mode for this platform: the declared one when the platform offers it, else the
/// platform's first offer (on a Jupyter platform, its proxy with the right base path, at a
/// port picked now). `Err` says why not and what to run instead.
fn platform_mode(
    args: &mut ServeArgs,
    platform: &heartwood_gateway::platform::PlatformSummary,
) -> Result<Mode> {
    use heartwood_gateway::platform::{IngressOffer, ingress_refusal};
    if let Some(mode) = declared_mode(args) {
        let name = match mode {
            Mode::Loopback => "loopback",
            Mode::JupyterProxy { .. } => "jupyter_proxy",
            Mode::TrustedProxy { .. } => "trusted_proxy",
        };
        if let Some(why) = ingress_refusal(platform, name) {
            anyhow::bail!("{why}; nothing was started");
        }
        return Ok(mode);
    }
    match platform.ingress.first() {
        Some(IngressOffer::JupyterProxy {
            base_path: Some(base),
            external_host,
        }) => {
            let port = match args.port {
                0 => free_port()?,
                port => port,
            };
            let prefix = format!("{base}proxy/{port}/");
            let Some(host) = external_host.clone().or_else(|| args.external_host.clone()) else {
                anyhow::bail!(
                    "on this platform ({}) the browser reaches Heartwood through the Jupyter \
                     server's proxy; run `heartwood serve --jupyter-prefix {prefix} \
                     --external-host HOST` with the host your browser shows for Jupyter",
                    platform.platform.as_str()
                );
            };
            say!(
                "This is {}: serving through the Jupyter server's proxy under {prefix}.",
                platform.platform.as_str()
            );
            args.port = port;
            args.jupyter_prefix = Some(prefix);
            args.external_host = Some(host);
            Ok(flag_mode(args))
        }
        Some(IngressOffer::Loopback) => Ok(Mode::Loopback),
        _ => anyhow::bail!(
            "this platform ({}) offers no ingress mode heartwood serve can choose by itself; \
             declare one (--jupyter-prefix or --trusted-proxy)",
            platform.platform.as_str()
        ),
    }
}

/// A loopback port free now (the Jupyter proxy's prefix must name the port before we listen).
fn free_port() -> Result<u16> {
    let probe = std::net::TcpListener::bind(("127.0.0.1", 0)).context("cannot find a free port")?;
    Ok(probe.local_addr()?.port())
}

/// The ingress mode the arguments describe; anything not declared is loopback only.
fn flag_mode(args: &ServeArgs) -> Mode {
    use heartwood_gateway::platform::slashed;
    if let (Some(prefix), Some(host)) = (&args.jupyter_prefix, &args.external_host) {
        return Mode::JupyterProxy {
            base_path: slashed(prefix),
            external_host: host.clone(),
        };
    }
    if let (false, Some(origin), Some(base)) =
        (args.trusted_proxy.is_empty(), &args.origin, &args.base_path)
    {
        return Mode::TrustedProxy {
            origin: origin.trim_end_matches('/').to_owned(),
            base_path: slashed(base),
            proxies: args.trusted_proxy.clone(),
        };
    }
    Mode::Loopback
}

/// The port to listen on. Behind a Jupyter server proxy, the prefix names it
/// (`/user/me/proxy/8765/` forwards to port 8765), so that port is the default, and a different
/// `--port` is refused: the proxy link would never reach it.
fn listening_port(args: &ServeArgs) -> Result<u16> {
    let named = args.jupyter_prefix.as_deref().and_then(proxied_port);
    match (named, args.port) {
        (Some(named), 0) => Ok(named),
        (Some(named), given) if given != named => anyhow::bail!(
            "--port {given} differs from the port the Jupyter prefix forwards to ({named}); \
             drop --port, or use a prefix that names port {given}"
        ),
        (_, given) => Ok(given),
    }
}

/// The port a Jupyter server-proxy prefix forwards to: the number after its `proxy` segment.
fn proxied_port(prefix: &str) -> Option<u16> {
    let segments: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
    let at = segments
        .iter()
        .rposition(|s| *s == "proxy" || *s == "proxy-absolute")?;
    segments.get(at + 1)?.parse().ok()
}

/// Listens on `wanted`, or, when any port will do, on the port the last run used if it is free
/// (else on one the system picks).
async fn listen(address: &str, wanted: u16, last: Option<u16>) -> Result<tokio::net::TcpListener> {
    if wanted == 0
        && let Some(last) = last
        && let Ok(listener) = tokio::net::TcpListener::bind((address, last)).await
    {
        return Ok(listener);
    }
    tokio::net::TcpListener::bind((address, wanted))
        .await
        .with_context(|| format!("cannot listen on {address}:{wanted}"))
}

/// Runs the server until interrupted.
pub fn run(project: ProjectContext, mut args: ServeArgs) -> Result<ExitCode> {
    let platform = heartwood_gateway::config::ProjectConfig::load(&project)?.platform()?;
    let mode = platform_mode(&mut args, &platform)?;
    // The port and capability the last run kept (read before the runtime starts: a file read).
    let kept = heartwood_gateway::config::user_config_path().and_then(|config| {
        config
            .parent()
            .map(|dir| heartwood_web::launch::path_for(dir, project.root().as_std_path()))
    });
    let store = match &args.session_store {
        Some(url) => heartwood_gateway::SessionStoreChoice::parse(url)?
            .with_lease(std::time::Duration::from_secs(args.lease_seconds)),
        None => heartwood_gateway::SessionStoreChoice::Files,
    };
    let provided = match &args.capability_file {
        Some(path) => Some(Capability::read_file(path)?),
        None => None,
    };
    // A deployment's replicas share its capability and their ports: nothing of this run is
    // kept for the next one.
    let from_file = provided.is_some();
    let kept = kept.filter(|_| !from_file);
    let saved = kept
        .as_deref()
        .filter(|_| !args.new_token)
        .and_then(heartwood_web::launch::load);
    heartwood_cli::runtime::block_on(heartwood_cli::runtime::Workers::PerCore, async move {
        // Loopback unless a trusted proxy was declared, which must be able to reach us.
        let address = if matches!(mode, Mode::TrustedProxy { .. }) {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        let listener = listen(
            address,
            listening_port(&args)?,
            saved.as_ref().map(|s| s.port),
        )
        .await?;
        let port = listener.local_addr()?.port();
        say!("Listening on {address}:{port}.");
        let capability = match (provided, saved) {
            (Some(provided), _) => provided,
            (None, Some(saved)) => saved.capability,
            (None, None) => Capability::generate()
                .map_err(|e| anyhow::anyhow!("no randomness for the launch capability: {e}"))?,
        };
        let launch = heartwood_web::launch::Launch {
            port,
            capability: capability.clone(),
        };
        // A small write and its sync, off the runtime's threads.
        let saving = kept.clone().map(|path| {
            tokio::task::spawn_blocking(move || heartwood_web::launch::save(&path, &launch))
        });
        let saved_now = match saving {
            Some(task) => Some(task.await.map_err(std::io::Error::other).and_then(|r| r)),
            None => None,
        };
        match saved_now {
            Some(Ok(())) => {}
            Some(Err(e)) => eprintln!(
                "heartwood: the port and capability were not kept for the next run ({e}); links will change"
            ),
            None if from_file => {}
            None => eprintln!(
                "heartwood: no configuration folder (set HOME), so the port and capability are not kept for the next run"
            ),
        }
        say!(
            "Heartwood serves {} ({}). Open (the link carries the project's capability; it stays the same when serve restarts, and `--new-token` replaces it):\n\n    {}?token={}\n\nEach session has its own address under s/ (bookmark it). Programs send the capability as `Authorization: Bearer …`. Ctrl-C stops the server.",
            project.root(),
            match &mode {
                Mode::Loopback => "loopback only",
                Mode::JupyterProxy { .. } => "behind the Jupyter server proxy",
                Mode::TrustedProxy { .. } => "behind the declared proxy only",
            },
            match &mode {
                Mode::Loopback => format!("http://127.0.0.1:{port}/"),
                Mode::JupyterProxy {
                    base_path,
                    external_host,
                } => format!("https://{external_host}{base_path}"),
                Mode::TrustedProxy {
                    origin, base_path, ..
                } => format!("{origin}{base_path}"),
            },
            capability.reveal()
        );
        if let heartwood_gateway::SessionStoreChoice::Shared(_) = &store {
            say!("Sessions are kept in {}.", store.shown());
        }
        let state = Arc::new(AppState::in_store(
            project,
            IngressPolicy::new(mode, port, capability),
            &store,
        ));
        // Showing a session is not acting on it: sessions idle for a while are let go, so
        // another interface takes them directly (pages keep following them).
        let releasing = Arc::clone(&state);
        let release = async move {
            loop {
                tokio::time::sleep(heartwood_gateway::IDLE_RELEASE).await;
                releasing
                    .gateway
                    .release_idle(heartwood_gateway::IDLE_RELEASE)
                    .await;
            }
        };
        tokio::select! {
            served = heartwood_web::serve(listener, Arc::clone(&state)) => served?,
            () = release => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        state.gateway.close().await;
        Ok(ExitCode::SUCCESS)
    })?
}

#[cfg(test)]
mod tests {
    use super::proxied_port;

    #[test]
    fn the_jupyter_prefix_names_the_port() {
        assert_eq!(proxied_port("/user/alice/proxy/8765/"), Some(8765));
        assert_eq!(proxied_port("user/alice/proxy/8765"), Some(8765));
        assert_eq!(proxied_port("/proxy-absolute/9000/"), Some(9000));
        assert_eq!(proxied_port("/user/alice/lab/"), None);
        assert_eq!(proxied_port("/user/alice/proxy/not-a-port/"), None);
    }
}
