//! Kernel confinement for every process Heartwood starts over project content, and paths the
//! kernel resolves beneath the project.
//!
//! Owns: the levels a tool process runs at ([`SandboxLevel`]), whether this machine can enforce
//! them ([`support`]), the view a confined process gets ([`Sandbox`]: an allow-list of system
//! directories, the project, a private `/tmp` and an empty home, never the host minus a list),
//! the syscall filter bubblewrap installs ([`seccomp`]), the programs Heartwood itself runs over
//! project files ([`host`]: by absolute path, with a minimal environment, confined), the only way
//! out to the network ([`network`]: a proxy for named hosts), the Landlock layer applied
//! inside the view by Heartwood's helper ([`confine`]), and opening files beneath a directory
//! without following a link out of it ([`beneath`]).
//!
//! Never: reads a command's text to decide its confinement (that is the kernel's), or hands a
//! confined process anything it was not given by name.

#![forbid(unsafe_code)]

pub mod beneath;
pub mod confine;
mod error;
pub mod host;
mod launcher;
mod level;
pub mod network;
pub mod seccomp;
mod support;
mod system;
mod view;

pub use error::SandboxError;
pub use launcher::Limits;
pub use level::{Allowed, SandboxLevel};
pub use support::{SandboxSupport, level_for, required_by_test, support};
pub use view::{Confined, Sandbox};
