//! The manifest's route, as the frontend that owns route options reads and connects it: the
//! manifest keeps `heartwood model connect`'s options as given, and the frontend that parses
//! those options (the command line's) says what is wrong with them and connects an item's
//! project, so the rules of a connect typed by hand are the same for a batch.

use std::path::Path;

use crate::error::Result;

/// Reads and connects a manifest's route (`heartwood model connect`'s options, in order).
pub trait RouteConnector: Sync {
    /// What is wrong with `connect_args`, in words; `None` when they can be read.
    fn problem(&self, connect_args: &[String]) -> Option<String>;

    /// Connects `project` to the route `connect_args` describe.
    fn connect(&self, connect_args: &[String], project: &Path) -> Result<Connection>;
}

/// What connecting an item's project came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Connected; what was connected, in words.
    Connected(String),
    /// The route's check refused it (nothing saved); why.
    Refused(String),
}
