//! A Heartwood project's services, below its sessions: which project a process serves
//! ([`ProjectContext`]), its [`config`]uration and model route (written under a project-scoped
//! lock), the research [`platform`] it runs on, route [`presets`], the ChatGPT
//! [`subscription`] sign-in, the [`route_check`] before a route is saved and the
//! [`route_request`] an interface builds one from, the read-only [`startup`] planner, the
//! project's local [`models`] and their [`model_catalog`], and its Agent [`skills`].
//!
//! Nothing here knows sessions: the gateway above serves those and calls down into these
//! services, never the other way round. Every service reports a [`ProjectError`].

pub mod config;
mod engine_route;
mod error;
pub mod model_catalog;
pub mod models;
mod own_runtime;
pub mod platform;
pub mod presets;
mod project;
pub mod route_check;
mod route_refusal;
pub mod route_request;
pub mod skills;
pub mod startup;
pub mod subscription;

pub use error::{Absent, ErrorKind, ProjectError, ProjectUnusable};
pub use project::ProjectContext;
pub use route_refusal::{PlatformRefusal, RouteRefusal};
