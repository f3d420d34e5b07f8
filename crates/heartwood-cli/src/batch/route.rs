//! The manifest's route in each item's project: read as `heartwood model connect` reads its
//! options, checked against the service once per process (one contact for a whole local batch,
//! one per Slurm task, instead of one per item), and saved into each item's project through the
//! gateway's route service, with the same platform rules as a connect typed there.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use clap::Parser;
use heartwood_gateway::ProjectContext;
use heartwood_gateway::route_check::{self, RouteCheck, Scope};

use crate::model::ConnectArgs;

/// `heartwood model connect`'s options, as the manifest's route gives them.
#[derive(Parser)]
#[command(no_binary_name = true, name = "route")]
struct ConnectLine {
    #[command(flatten)]
    args: ConnectArgs,
}

/// The options `connect_args` spell, or clap's words for what is wrong with them.
pub fn parse(connect_args: &[String]) -> Result<ConnectArgs, String> {
    ConnectLine::try_parse_from(connect_args)
        .map(|line| line.args)
        .map_err(|e| {
            let text = e.render().to_string();
            // The first line says it; the rest is usage meant for a command line.
            text.lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_owned()
        })
}

/// What checking the route found, the first time any item of this process asked: a process
/// drives one manifest, so one route.
static CHECKED: OnceLock<RouteCheck> = OnceLock::new();

/// Connects `project` to the route `connect_args` describe; `Ok(Err(why))` when the route's
/// check refused it (nothing saved).
pub fn connect(connect_args: &[String], project: &Path) -> Result<Result<String, String>> {
    let args = parse(connect_args).map_err(anyhow::Error::msg)?;
    let context = ProjectContext::at(project)
        .with_context(|| format!("{} cannot be a project", project.display()))?;
    let route = args.route(&context)?;
    let check = CHECKED.get_or_init(|| route_check::check(&route)).clone();
    let described = format!(
        "{} route {} at {}",
        route.category.as_str(),
        route.model,
        route.base_url
    );
    let connected = route_check::connect_checked(&context, route, check, false, Scope::Project)?;
    Ok(match connected.refusal {
        None => Ok(format!(
            "connected to the {described} (checked once for this batch)"
        )),
        Some(why) => Err(why),
    })
}
