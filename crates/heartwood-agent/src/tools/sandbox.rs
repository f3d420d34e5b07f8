//! Tool process confinement: every shell the terminal tool starts runs at one [`SandboxLevel`],
//! enforced by the kernel (bubblewrap, namespaces, a syscall filter, limits), never by reading
//! the command. The mechanism is `heartwood-sandbox`'s; this module names it where the tools
//! live. See `docs/security.md`.

pub use heartwood_sandbox::confine::{HELPER, LandlockLayer};
pub use heartwood_sandbox::{
    Allowed, Confined, Limits, Sandbox, SandboxError, SandboxLevel, SandboxSupport, level_for,
    support,
};
