//! The manifest's route in each item's project: read as `heartwood model connect` reads its
//! options, checked against the service once per process (one contact for a worker, however
//! many items it drives), and saved into each item's project through the gateway's route
//! service, with the same platform rules as a connect typed there.

use std::path::Path;
use std::sync::OnceLock;

use clap::Parser;
use heartwood_batch::{BatchError, Connection, RouteConnector};
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

/// The command line's reading of route options, for the batch crate.
pub struct CliRoutes;

/// What checking the route found, the first time any item of this process asked: a process
/// drives one manifest, so one route.
static CHECKED: OnceLock<RouteCheck> = OnceLock::new();

impl RouteConnector for CliRoutes {
    fn problem(&self, connect_args: &[String]) -> Option<String> {
        let e = ConnectLine::try_parse_from(connect_args).err()?;
        let text = e.render().to_string();
        // The first line says it; the rest is usage meant for a command line.
        Some(
            text.lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_owned(),
        )
    }

    fn connect(
        &self,
        connect_args: &[String],
        project: &Path,
    ) -> heartwood_batch::Result<Connection> {
        let route_error = |e: &dyn std::fmt::Display| BatchError::Route(format!("{e:#}"));
        let args = ConnectLine::try_parse_from(connect_args)
            .map_err(|e| route_error(&e))?
            .args;
        let context = ProjectContext::at(project).map_err(|e| route_error(&e))?;
        let route = args.route(&context).map_err(|e| route_error(&e))?;
        let check = CHECKED.get_or_init(|| route_check::check(&route)).clone();
        let described = format!(
            "{} route {} at {}",
            route.category.as_str(),
            route.model,
            route.base_url
        );
        let connected = route_check::connect_checked(&context, route, check, false, Scope::Project)
            .map_err(|e| route_error(&e))?;
        Ok(match connected.refusal {
            None => Connection::Connected(format!(
                "connected to the {described} (checked once for this worker)"
            )),
            Some(why) => Connection::Refused(why),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CliRoutes;
    use heartwood_batch::Manifest;

    #[test]
    fn a_route_is_read_as_model_connect_reads_it() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("a")).expect("a");
        let path = dir.path().join("b.toml");
        std::fs::write(
            &path,
            "task = \"t\"\n[route]\ncategory = \"cloud\"\nmodel = \"m\"\n\
             [[items]]\nname = \"a\"\nproject = \"a\"\n",
        )
        .expect("write");
        let err = Manifest::load(&path, &CliRoutes)
            .expect_err("invalid")
            .to_string();
        assert!(
            err.contains("`route`: invalid value 'cloud' for '--category <CATEGORY>'"),
            "{err}"
        );
    }
}
