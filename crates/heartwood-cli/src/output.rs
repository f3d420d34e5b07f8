//! Standard output for every command: once the reader has gone (`heartwood decide … | head`),
//! nothing more is printed and the command carries on, so a closed pipe never cuts off an
//! action, a decision or a journal append midway. (Rust ignores SIGPIPE, so a write to a closed
//! pipe returns an error; `println!` would turn that error into a panic.)

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Prints `args`, and a newline when `newline`; a write to a closed pipe closes output for the
/// rest of the process instead of failing.
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| if newline { Ok(()) } else { out.flush() });
    if written.is_err() {
        // Gone (a closed pipe) or unwritable (a full disk): either way, printing more cannot
        // help, and stopping the work would lose what it was doing.
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Prints raw bytes (a generated script, a file's text), with the same rule.
pub fn bytes(data: &[u8]) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out.write_all(data).and_then(|()| out.flush()).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}
