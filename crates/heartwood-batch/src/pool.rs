//! The local engine's pool: the items that have work left, a bounded number at once, each on a
//! thread of its own running what the caller gives it (the driver in this process, or a worker
//! process of the caller's), each item's record reported as it settles.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError, mpsc};

use crate::error::Result;
use crate::record::Record;

/// Runs `work` for each of `indices`, at most `jobs` at once, calling `settled` with each
/// result as it comes (on the calling thread); the records, in the order they settled.
pub fn run<W>(
    indices: &[usize],
    jobs: usize,
    work: W,
    mut settled: impl FnMut(usize, &Result<Record>),
) -> Vec<Record>
where
    W: Fn(usize) -> Result<Record> + Sync,
{
    let queue = Mutex::new(indices.iter().copied().collect::<VecDeque<_>>());
    let jobs = jobs.clamp(1, indices.len().max(1));
    let (tx, rx) = mpsc::channel::<(usize, Result<Record>)>();
    let mut records = Vec::with_capacity(indices.len());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (queue, work) = (&queue, &work);
            scope.spawn(move || {
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .pop_front();
                    let Some(index) = next else { break };
                    if tx.send((index, work(index))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (index, result) in rx {
            settled(index, &result);
            if let Ok(record) = result {
                records.push(record);
            }
        }
    });
    records
}
