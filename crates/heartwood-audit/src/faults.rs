//! Injected storage faults, for tests only (`test-faults`): the write points of a paired
//! append (the intent's write and fsync, each file's write and fsync, the intent's clearing)
//! and of an atomic file replacement (exports, config) can be made to fail as a full disk, an
//! I/O error, a short write or a failed fsync would. The plan is per thread, so tests running
//! side by side do not see each other's faults.

use std::cell::Cell;
use std::io;

/// A storage failure to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// The disk is full (`ENOSPC`).
    NoSpace,
    /// The device failed (`EIO`).
    Io,
    /// Half the bytes were written, then the device failed.
    ShortWrite,
    /// The data was written but `fsync` failed.
    FailedSync,
    /// The process stops at this point for good (nothing is written), holding whatever it
    /// holds, so another process can kill it exactly there: between an append's intent and
    /// its data, say.
    Stall,
}

thread_local! {
    /// Write points left before the fault, and the fault.
    static PLAN: Cell<Option<(usize, StorageFault)>> = const { Cell::new(None) };
    /// Write points passed since [`reset`].
    static SEEN: Cell<usize> = const { Cell::new(0) };
}

/// Fails the write point `at` (0 = the next one) on this thread with `fault`.
pub fn inject(at: usize, fault: StorageFault) {
    PLAN.set(Some((at, fault)));
}

/// Removes any planned fault and starts counting write points again.
pub fn reset() {
    PLAN.set(None);
    SEEN.set(0);
}

/// Write points this thread has passed since [`reset`].
pub fn points_seen() -> usize {
    SEEN.get()
}

/// The fault planned for this write point, if this is the one.
fn this_point() -> Option<StorageFault> {
    SEEN.set(SEEN.get() + 1);
    let (left, fault) = PLAN.get()?;
    if left == 0 {
        PLAN.set(None);
        Some(fault)
    } else {
        PLAN.set(Some((left - 1, fault)));
        None
    }
}

fn error(fault: StorageFault) -> io::Error {
    match fault {
        StorageFault::NoSpace => io::Error::from_raw_os_error(28), // ENOSPC
        StorageFault::Io
        | StorageFault::ShortWrite
        | StorageFault::FailedSync
        | StorageFault::Stall => {
            io::Error::from_raw_os_error(5) // EIO
        }
    }
}

/// A write point: `write` writes the bytes it is given (all, or half for a short write; a
/// failed sync planned at a write point writes everything and then reports the failure, as a
/// device that loses the acknowledgement would).
pub(crate) fn write(bytes: &[u8], write: impl FnOnce(&[u8]) -> io::Result<()>) -> io::Result<()> {
    match this_point() {
        None => write(bytes),
        Some(StorageFault::Stall) => stall(),
        Some(StorageFault::FailedSync) => {
            write(bytes)?;
            Err(error(StorageFault::FailedSync))
        }
        Some(StorageFault::ShortWrite) => {
            write(&bytes[..bytes.len() / 2])?;
            Err(error(StorageFault::ShortWrite))
        }
        Some(fault) => Err(error(fault)),
    }
}

/// A sync point: a planned fault fails it (the data may be written already).
pub(crate) fn sync(sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    match this_point() {
        None => sync(),
        Some(StorageFault::Stall) => stall(),
        Some(fault) => Err(error(fault)),
    }
}

/// Waits here until the process is killed.
fn stall() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
