//! Batches shared between the runs of one request that draw from the same data stream.
//!
//! A run's batches are `task.batch(rng, size)` from its seed's data stream
//! ([`super::run::data_rng`]), so every run with that seed and batch size, whatever its preset
//! or learning rate, draws the same batches in the same order (data order is paired across
//! compared variants). For the teacher-lm task a batch costs a teacher forward per token
//! position (about a millisecond at the training bench's size, 10% of an f32 update). A
//! [`BatchCache`] keeps each batch it sees with the stream's state before and after it, so the
//! next run to reach that state takes the batch and the state after it instead of drawing:
//!
//! ```text
//! draw(rng, size) = (task.batch(rng', size), rng')   where rng' is rng advanced by the draw
//! ```
//!
//! is a function of the state and the size alone, so a run gets the same batch and the same
//! stream afterwards whether it drew or found it: the cache changes no bit of any result, for
//! any thread count or order of the runs.
//!
//! Runs of one seed that train side by side reach each state at about the same time, and the
//! draws are a chain (each starts from the state the previous one left). So a run claims a
//! state before drawing it, a run that finds its state claimed waits for that draw, and a run
//! draws its *next* batch ([`BatchCache::prefetch`]) before its update whenever no run has
//! claimed it: of two runs in step, the one that found its batch drawn draws the next while
//! the other updates, and the two share the draws instead of waiting on each other. The cache
//! holds at most [`BATCH_CACHE_BYTES`] of batches (their values; each kept draw also holds two
//! stream states and a few words of bookkeeping) and keeps them for the whole request; when
//! full, runs draw for themselves. A run that stops early (diverged) may have drawn one batch
//! no run uses. [`BatchCache::for_runs`] makes one only where sharing pays.
//!
//! A run waits for a claimed state on a rayon thread. This cannot deadlock because a claim is
//! held only while `Task::batch` runs, and `Task::batch` runs no rayon work (its contract): a
//! thread holding a claim never picks up another run's job that could wait for it.

use super::task::{Batch, Task, TaskKind};
use normscope_numeric::rng::Rng;
use rand::Rng as _;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// At most this many bytes of batches (their token ids and weights, or their matrices) are
/// kept: about 8,000 batches of the training bench's size (16 sequences of 32 tokens).
pub const BATCH_CACHE_BYTES: usize = 64 << 20;

/// One draw: the batch and the stream's state after it.
#[derive(Debug)]
struct Drawn {
    after: Rng,
    batch: Batch,
}

impl Drawn {
    /// The batch, with `rng` set to the state after it: what drawing from the state before
    /// would have given.
    fn take(&self, rng: &mut Rng) -> Batch {
        *rng = self.after.clone();
        self.batch.clone()
    }
}

/// A state some run has claimed: being drawn (`None`) or drawn.
#[derive(Debug)]
struct Slot {
    before: Rng,
    drawn: Option<Arc<Drawn>>,
}

/// The claimed states by (first output of the state, batch size), and the bytes kept.
#[derive(Debug, Default)]
struct Kept {
    slots: HashMap<(u64, usize), Vec<Slot>>,
    bytes: usize,
}

impl Kept {
    fn slot(&mut self, key: (u64, usize), rng: &Rng) -> Option<&mut Slot> {
        self.slots
            .get_mut(&key)?
            .iter_mut()
            .find(|s| s.before == *rng)
    }

    fn remove(&mut self, key: (u64, usize), rng: &Rng) {
        if let Some(v) = self.slots.get_mut(&key) {
            v.retain(|s| s.before != *rng);
        }
    }
}

/// Batches drawn by the runs of one task ([module docs](self)).
///
/// # Examples
///
/// A batch taken through the cache is the one drawn directly, and leaves the stream in the
/// same state. (The copy task's batches are cheap, so [`BatchCache::for_runs`] makes no cache
/// for it.)
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::batch_cache::BatchCache;
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::{self, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig { kind: TaskKind::Copy, vocab: 5, seq: 4, ..TaskConfig::default() };
/// let copy = task::build(&cfg)?;
/// assert!(BatchCache::for_runs(copy.as_ref(), 4).is_none());
///
/// let cache = BatchCache::new();
/// let (mut a, mut b, mut c) = (data_rng(0), data_rng(0), data_rng(0));
/// let direct = copy.batch(&mut a, 2);
/// assert_eq!(cache.batch(copy.as_ref(), &mut b, 2), direct); // drawn and kept
/// assert_eq!(cache.batch(copy.as_ref(), &mut c, 2), direct); // taken from the cache
/// assert_eq!((&b, &c), (&a, &a));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct BatchCache {
    kept: Mutex<Kept>,
    /// Woken when a claimed state is drawn (or given up).
    drawn: Condvar,
}

/// Bytes of a batch's values.
fn bytes(b: &Batch) -> usize {
    match b {
        Batch::Tokens(t) => {
            std::mem::size_of_val(t.inputs.as_slice())
                + std::mem::size_of_val(t.targets.as_slice())
                + std::mem::size_of_val(t.weights.as_slice())
        }
        Batch::Vectors(v) => (v.x.len() + v.y.len()) * std::mem::size_of::<f64>(),
        Batch::Pairs(p) => {
            std::mem::size_of_val(p.source.as_slice())
                + std::mem::size_of_val(p.inputs.as_slice())
                + std::mem::size_of_val(p.targets.as_slice())
                + std::mem::size_of_val(p.weights.as_slice())
        }
    }
}

/// Gives up a claim whose draw did not finish (a panic in `task.batch`), so that a run waiting
/// for it draws the batch itself.
struct Claim<'a> {
    cache: &'a BatchCache,
    key: (u64, usize),
    before: Rng,
    done: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cache.lock().remove(self.key, &self.before);
            self.cache.drawn.notify_all();
        }
    }
}

impl BatchCache {
    /// A new, empty cache.
    pub fn new() -> BatchCache {
        BatchCache::default()
    }

    /// A cache for `runs` runs of `task`, when sharing pays: more than one run, and a task
    /// whose batches cost more than keeping them (teacher-lm's, a teacher forward per
    /// position; regression's and the algorithmic tasks' are a few random draws per value,
    /// no dearer than the cache's lock and copy).
    pub fn for_runs(task: &dyn Task, runs: usize) -> Option<BatchCache> {
        (runs > 1 && task.kind() == TaskKind::TeacherLm).then(BatchCache::new)
    }

    /// `task.batch(rng, size)`: taken from the cache when a run drew from this state (then
    /// `rng` is set to the state after that draw); waited for when a run is drawing it; else
    /// drawn here, and kept while the cache has room.
    pub fn batch(&self, task: &dyn Task, rng: &mut Rng, size: usize) -> Batch {
        let key = (rng.clone().next_u64(), size);
        let mut kept = self.lock();
        loop {
            match kept.slot(key, rng) {
                Some(Slot { drawn: Some(d), .. }) => {
                    let d = Arc::clone(d);
                    drop(kept);
                    return d.take(rng);
                }
                Some(_) => {
                    kept = self.drawn.wait(kept).unwrap_or_else(|e| e.into_inner());
                }
                None => {
                    drop(kept);
                    return match self.draw_claimed(task, rng, size, key) {
                        Some(d) => d.take(rng),
                        None => task.batch(rng, size),
                    };
                }
            }
        }
    }

    /// Draws the batch of state `rng` now, unless a run has already claimed that state or the
    /// cache is full: a run calls it for its next batch before its update, so that of two runs
    /// in step the one that finds its batch drawn draws the next while the other updates.
    pub fn prefetch(&self, task: &dyn Task, rng: &Rng, size: usize) {
        let key = (rng.clone().next_u64(), size);
        self.draw_claimed(task, rng, size, key);
    }

    /// Claims state `rng` and draws its batch, returning the draw; `None` without drawing when
    /// the state is already claimed or the cache is full.
    fn draw_claimed(
        &self,
        task: &dyn Task,
        rng: &Rng,
        size: usize,
        key: (u64, usize),
    ) -> Option<Arc<Drawn>> {
        {
            let mut kept = self.lock();
            if kept.bytes >= BATCH_CACHE_BYTES || kept.slot(key, rng).is_some() {
                return None;
            }
            kept.slots.entry(key).or_default().push(Slot {
                before: rng.clone(),
                drawn: None,
            });
        }
        let mut claim = Claim {
            cache: self,
            key,
            before: rng.clone(),
            done: false,
        };
        let mut after = rng.clone();
        let batch = task.batch(&mut after, size);
        let size_bytes = bytes(&batch);
        let d = Arc::new(Drawn { after, batch });
        let mut kept = self.lock();
        if let Some(slot) = kept.slot(key, rng) {
            slot.drawn = Some(Arc::clone(&d));
        }
        kept.bytes += size_bytes;
        claim.done = true;
        drop(kept);
        self.drawn.notify_all();
        Some(d)
    }

    /// Batches kept.
    pub fn len(&self) -> usize {
        self.lock()
            .slots
            .values()
            .flatten()
            .filter(|s| s.drawn.is_some())
            .count()
    }

    /// Whether no batch is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        // A panic while the lock was held left the map whole (no update spans an unlock).
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `task.batch(rng, size)` through `cache` when there is one.
pub fn draw(cache: Option<&BatchCache>, task: &dyn Task, rng: &mut Rng, size: usize) -> Batch {
    match cache {
        Some(c) => c.batch(task, rng, size),
        None => task.batch(rng, size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::task::{TaskConfig, TaskKind, build};
    use rand::SeedableRng;

    fn teacher() -> Box<dyn Task> {
        build(&TaskConfig {
            kind: TaskKind::TeacherLm,
            vocab: 8,
            seq: 6,
            ..TaskConfig::default()
        })
        .expect("a valid task")
    }

    #[test]
    fn found_batches_and_streams_equal_drawn_ones() {
        let task = teacher();
        let cache = BatchCache::new();
        let (mut plain, mut first, mut second) = (
            Rng::seed_from_u64(7),
            Rng::seed_from_u64(7),
            Rng::seed_from_u64(7),
        );
        for size in [3, 3, 5, 3] {
            let want = task.batch(&mut plain, size);
            assert_eq!(cache.batch(task.as_ref(), &mut first, size), want);
            let kept = cache.len();
            assert_eq!(cache.batch(task.as_ref(), &mut second, size), want);
            assert_eq!(cache.len(), kept, "the second run found the batch");
            assert!(first == plain && second == plain, "streams advanced alike");
        }
        assert_eq!(cache.len(), 4);
        // Another size from a kept state is another draw.
        let mut other = Rng::seed_from_u64(7);
        let want = task.batch(&mut Rng::seed_from_u64(7), 4);
        assert_eq!(cache.batch(task.as_ref(), &mut other, 4), want);
        assert_eq!(cache.len(), 5);
    }

    #[test]
    fn runs_in_parallel_get_the_plain_batches() {
        use rayon::prelude::*;
        let task = teacher();
        let cache = BatchCache::new();
        let plain: Vec<Batch> = {
            let mut r = Rng::seed_from_u64(1);
            (0..20).map(|_| task.batch(&mut r, 4)).collect()
        };
        let runs: Vec<Vec<Batch>> = (0..4)
            .into_par_iter()
            .map(|_| {
                let mut r = Rng::seed_from_u64(1);
                (0..20)
                    .map(|_| draw(Some(&cache), task.as_ref(), &mut r, 4))
                    .collect()
            })
            .collect();
        assert!(runs.iter().all(|r| *r == plain));
        assert_eq!(cache.len(), 20, "each state kept once");
    }

    #[test]
    fn shared_only_between_runs_of_a_dear_task() {
        let regression = build(&TaskConfig {
            kind: TaskKind::Regression,
            ..TaskConfig::default()
        })
        .expect("a valid task");
        assert!(BatchCache::for_runs(teacher().as_ref(), 2).is_some());
        assert!(BatchCache::for_runs(teacher().as_ref(), 1).is_none());
        assert!(BatchCache::for_runs(regression.as_ref(), 8).is_none());
    }

    #[test]
    fn bytes_count_every_value() {
        let task = teacher();
        let b = task.batch(&mut Rng::seed_from_u64(2), 3);
        // 18 positions: two u32 ids and one f64 weight each.
        assert_eq!(bytes(&b), 18 * (4 + 4 + 8));
    }
}
