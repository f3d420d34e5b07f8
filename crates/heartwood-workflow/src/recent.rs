//! Recent computations, remembered by the exact inputs they were computed from: the stages of
//! one evaluation read the same table several times and recompute the same model (the model
//! stage checks it, the report stage judges the report's claims against it), and parsing and
//! fitting dominate their cost. A remembered answer is returned only when every input byte (and
//! parameter) is equal to the one it was computed from, so it is the answer the computation
//! would give again; `evaluate::forget` empties every store (a benchmark's cold pass).

use std::sync::{Mutex, PoisonError};

/// A small store of the most recent `(inputs, answer)` pairs, newest last.
pub(crate) struct Recent<K, V> {
    entries: Mutex<Vec<(K, V)>>,
    capacity: usize,
}

impl<K, V: Clone> Recent<K, V> {
    /// A store keeping the `capacity` most recent answers.
    pub(crate) const fn new(capacity: usize) -> Self {
        Recent {
            entries: Mutex::new(Vec::new()),
            capacity,
        }
    }

    /// The answer remembered for inputs that `same` recognizes, else `compute`d and remembered
    /// under `inputs()`. The store is held while computing, so two checks of one stage that
    /// need the same table parse it once (the second waits for the first's answer); stores
    /// are only ever taken in one order (a model's, then the split's, then the tables').
    pub(crate) fn answer(
        &self,
        same: impl Fn(&K) -> bool,
        inputs: impl FnOnce() -> K,
        compute: impl FnOnce() -> V,
    ) -> V {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, v)) = entries.iter().rev().find(|(k, _)| same(k)) {
            return v.clone();
        }
        let answer = compute();
        if entries.len() == self.capacity {
            entries.remove(0);
        }
        entries.push((inputs(), answer.clone()));
        answer
    }

    /// Forgets every answer.
    pub(crate) fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}
