//! The `heartwood` command's library half: the terminal interface, kept here so that
//! `cargo xtask bench tui` can draw frames with exactly the code the binary runs.
//!
//! Like the binary, it reaches sessions only through `heartwood-gateway`.

pub mod runtime;
pub mod tui;
