//! Many small training runs for the training analyses (issue 12): a grid of cells (preset,
//! depth, optimizer, peak learning rate, warmup) times paired seeds, each run summarised by its
//! [`Outcome`], and the maximum stable learning rate of a (cell, seed) found by bisection on a
//! log scale ([`bisect`]).
//!
//! **Failure** ([`FAIL_FRACTION`]; TRAINING.md section 2: "the failure is not a NaN", Post-LN
//! collapses to the context-free plateau and stays there): a run fails if it diverged (the
//! rule of [`super::run`]: a non-finite loss, or evaluation losses above `DIVERGE_FACTOR` times
//! the initial one), or if its final evaluation loss `E` has not come down even
//! `1 - FAIL_FRACTION` of the way from the task's context-free loss `C` (predicting without the
//! input) to its floor `F` (the teacher's own loss):
//!
//! ```text
//! failed  <=>  diverged  or  E > F + FAIL_FRACTION (C - F)
//! ```
//!
//! Measured before the rule was fixed (regression, ReLU MLP, d = 16, 200 Adam updates, 4 seeds
//! of 7 presets at L = 6 and 48): collapsed runs end at 0.89-1.07 C, trained ones at 0.2-0.6 C
//! for learning rates 1e-3 to 3e-2; at 3e-4 runs are merely slow (0.7-0.9 C, ReZero 1.4 C at
//! L = 6), so a learning rate far below the useful range also "fails" by this rule: sweeps
//! start their grids at 1e-3 and report a maximum stable learning rate below the grid as
//! censored.
//!
//! A learning rate is *stable* for a (cell, seed) if that run does not fail.
//!
//! **Pairing**: every cell of a sweep trains from the same seeds; a seed fixes the data order
//! and the weight draws ([`super::run`]), so two presets or learning rates at one seed see the
//! same batches from the same initial draws where shapes match.
//!
//! **Determinism**: runs are independent and reduced in job order, so the outcomes are
//! byte-identical for any thread count.

use super::batch_cache::BatchCache;
use super::config::{RawTrain, TrainConfig};
use super::run::{self, Trained};
use super::task::{self, Batch, Task};
use crate::Result;
use crate::monte_carlo::Progress;
use rayon::prelude::*;

/// A run fails if its final evaluation loss is above `floor + FAIL_FRACTION (context-free -
/// floor)` (or it diverged): it has not closed even a tenth of the gap between predicting
/// without the input and the teacher (it is stuck at, or back at, the context-free plateau).
pub const FAIL_FRACTION: f64 = 0.9;

/// What varies between the runs of a sweep; everything else comes from the base request.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    /// Preset name.
    pub preset: String,
    /// Residual blocks L.
    pub depth: usize,
    /// Optimizer name (`sgd`, `adam`, `adamw`).
    pub optimizer: String,
    /// Peak learning rate.
    pub lr: f64,
    /// Linear-warmup updates.
    pub warmup: u64,
}

impl Cell {
    /// The same cell at another peak learning rate.
    pub fn at_lr(&self, lr: f64) -> Cell {
        Cell { lr, ..self.clone() }
    }

    /// The checked request of this cell: `base` with the cell's settings and one seed. A sweep
    /// trains in f64: a `base` of another precision is refused ([`run::check_f64`]).
    pub fn config(&self, base: &RawTrain, seed: u64) -> Result<TrainConfig> {
        let mut raw = base.clone();
        raw.presets = self.preset.clone();
        raw.model.depth = self.depth;
        raw.optimizer = self.optimizer.clone();
        raw.lr = self.lr;
        raw.warmup = self.warmup;
        raw.seeds = seed.to_string();
        let cfg = raw.check()?;
        run::check_f64(&cfg)?;
        Ok(cfg)
    }
}

/// The summary of one run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// Its cell.
    pub cell: Cell,
    /// Its training seed.
    pub seed: u64,
    /// Evaluation loss at init.
    pub initial_loss: f64,
    /// The last finite evaluation loss (at the end, or where the run was stopped).
    pub final_loss: f64,
    /// The task's floor on the evaluation set.
    pub floor: f64,
    /// The task's context-free loss.
    pub context_free: f64,
    /// Flagged by the divergence rule of [`super::run`].
    pub diverged: bool,
    /// Failed by the rule of the module docs.
    pub failed: bool,
    /// `(update, evaluation loss)` at every evaluation.
    pub curve: Vec<(u64, f64)>,
}

impl Outcome {
    /// `final_loss - floor`.
    pub fn excess(&self) -> f64 {
        self.final_loss - self.floor
    }

    /// The first evaluated update whose loss is at most `floor + delta`, if any.
    pub fn steps_to(&self, delta: f64) -> Option<u64> {
        self.curve
            .iter()
            .find(|(_, e)| *e <= self.floor + delta)
            .map(|(s, _)| *s)
    }

    /// Summarises a finished run.
    pub fn new(cell: Cell, seed: u64, t: &Trained) -> Outcome {
        let one = |m: &str| {
            t.records
                .iter()
                .find(|r| r.metric == m)
                .map_or(f64::NAN, |r| r.value)
        };
        let curve: Vec<(u64, f64)> = t
            .records
            .iter()
            .filter(|r| r.metric == "eval_loss")
            .map(|r| (r.step, r.value))
            .collect();
        let (floor, context_free) = (one("eval_floor"), one("context_free_loss"));
        let final_loss = curve.last().map_or(f64::NAN, |c| c.1);
        let diverged = t.diverged_at.is_some();
        Outcome {
            cell,
            seed,
            initial_loss: curve.first().map_or(f64::NAN, |c| c.1),
            final_loss,
            floor,
            context_free,
            diverged,
            failed: diverged || final_loss > floor + FAIL_FRACTION * (context_free - floor),
            curve,
        }
    }
}

/// The task of `base` and its evaluation set (shared by every cell: the task does not depend
/// on the cell).
pub fn task_and_eval(base: &RawTrain) -> Result<(Box<dyn Task>, Vec<Batch>)> {
    let cfg = base.check()?;
    let t = task::build(&cfg.task)?;
    // Estimated once here, on every thread, before the cells share the task.
    t.context_free_loss();
    let mut er = run::eval_rng(cfg.task.teacher_seed);
    let eval: Vec<Batch> = (0..cfg.eval_batches)
        .map(|_| t.batch(&mut er, cfg.batch))
        .collect();
    Ok((t, eval))
}

/// Trains one (cell, seed) from its initial model.
pub fn train_one(
    base: &RawTrain,
    task: &dyn Task,
    eval: &[Batch],
    cell: &Cell,
    seed: u64,
    options: &run::Options,
) -> Result<Trained> {
    let cfg = cell.config(base, seed)?;
    let begin = run::start(&cfg, task, &cell.preset, seed)?;
    Ok(run::train(
        &cfg,
        task,
        &cell.preset,
        seed,
        begin,
        eval,
        options,
        &(),
    ))
}

/// Every cell at every seed, in parallel, in (cell, seed) order. Every request is checked
/// before anything runs.
pub fn run(
    base: &RawTrain,
    cells: &[Cell],
    seeds: &[u64],
    progress: &(dyn Progress + Sync),
) -> Result<Vec<Outcome>> {
    let jobs: Vec<(&Cell, u64)> = cells
        .iter()
        .flat_map(|c| seeds.iter().map(move |s| (c, *s)))
        .collect();
    run_jobs(base, &jobs, progress)
}

/// The given (cell, seed) runs, in parallel, in the given order. A run depends on its cell and
/// seed alone, so any subset gives the same outcomes (what a shard relies on,
/// `crate::analyses::shard`). Every request is checked before anything runs.
pub fn run_jobs(
    base: &RawTrain,
    jobs: &[(&Cell, u64)],
    progress: &(dyn Progress + Sync),
) -> Result<Vec<Outcome>> {
    for (c, s) in jobs {
        c.config(base, *s)?;
    }
    let (task, eval) = task_and_eval(base)?;
    let batches = BatchCache::for_runs(task.as_ref(), jobs.len());
    let options = run::Options {
        batches: batches.as_ref(),
        ..run::Options::default()
    };
    jobs.par_iter()
        .map(|(c, s)| {
            let t = train_one(base, task.as_ref(), &eval, c, *s, &options)?;
            progress.tick();
            Ok(Outcome::new((*c).clone(), *s, &t))
        })
        .collect()
}

/// The maximum stable learning rate of one (cell, seed): where the bisection ended, and
/// whether the true value lies outside the bracket searched.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MaxStable {
    /// The cell (its `lr` is the value found).
    pub cell: Cell,
    /// Training seed.
    pub seed: u64,
    /// The largest learning rate found stable (`lo` of the final bracket), or the bracket's end
    /// when censored.
    pub lr: f64,
    /// The smallest learning rate found unstable (`hi` of the final bracket), if any.
    pub unstable: Option<f64>,
    /// `below`: even the bracket's lower end fails; `above`: even its upper end is stable;
    /// `none`: bracketed.
    pub censored: Censor,
}

/// Where a bisection's answer lies relative to its bracket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Censor {
    /// Bracketed: `lr` stable, `unstable` not.
    None,
    /// Every learning rate tried fails: the maximum stable one is below `lr`.
    Below,
    /// Every learning rate tried is stable: the maximum stable one is at least `lr`.
    Above,
}

impl Censor {
    /// `none`, `below`, `above`.
    pub fn name(self) -> &'static str {
        match self {
            Censor::None => "none",
            Censor::Below => "below",
            Censor::Above => "above",
        }
    }
}

/// A bisection to run: a (cell, seed) and a bracket `[lo, hi]` on the learning rate, with what
/// is already known of its ends (from a grid: `Some(true)` stable, `Some(false)` failed).
#[derive(Clone, Debug)]
pub struct Bracket {
    /// The cell (its `lr` is ignored).
    pub cell: Cell,
    /// Training seed.
    pub seed: u64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Whether `lo` is known stable.
    pub lo_stable: Option<bool>,
    /// Whether `hi` is known stable.
    pub hi_stable: Option<bool>,
}

/// The bracket a grid of learning rates gives one (cell, seed), from its grid outcomes
/// `(lr, failed)`: `lo`
/// the largest grid value with every grid value up to it stable, `hi` the next grid value
/// (known to fail). The smallest value failing or every value stable give a bracket whose
/// both ends are known, which [`bisect`] reports as censored.
pub fn grid_bracket(cell: &Cell, seed: u64, grid: &[(f64, bool)]) -> Bracket {
    let mut g = grid.to_vec();
    g.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first_fail = g.iter().position(|(_, failed)| *failed);
    let (lo, hi, lo_s, hi_s) = match first_fail {
        Some(0) => (g[0].0, g[0].0, Some(false), Some(false)),
        Some(k) => (g[k - 1].0, g[k].0, Some(true), Some(false)),
        None => {
            let last = g.last().map_or(f64::NAN, |x| x.0);
            (last, last, Some(true), Some(true))
        }
    };
    Bracket {
        cell: cell.clone(),
        seed,
        lo,
        hi,
        lo_stable: lo_s,
        hi_stable: hi_s,
    }
}

/// Bisection on `log lr` ([`bisect`]): `iters` halvings of `log(hi/lo)`, each one training run
/// at the geometric midpoint `sqrt(lo hi)`, keeping the half whose lower end is stable and upper
/// end fails. After `k` halvings the bracket's ratio is `(hi/lo)^(2^-k)`. Assumes stability is
/// monotone in the learning rate over the bracket; where it is not, the answer is one point of
/// the stability boundary.
pub fn bisect(
    base: &RawTrain,
    brackets: &[Bracket],
    iters: u32,
    progress: &(dyn Progress + Sync),
) -> Result<Vec<MaxStable>> {
    for b in brackets {
        b.cell.at_lr(b.lo).config(base, b.seed)?;
        b.cell.at_lr(b.hi).config(base, b.seed)?;
    }
    let (task, eval) = task_and_eval(base)?;
    // A bisection trains each bracket's seed again at every midpoint.
    let batches = BatchCache::for_runs(task.as_ref(), brackets.len() * (iters as usize + 2));
    let options = run::Options {
        batches: batches.as_ref(),
        ..run::Options::default()
    };
    brackets
        .par_iter()
        .map(|b| {
            let stable = |lr: f64| -> Result<bool> {
                let t = train_one(
                    base,
                    task.as_ref(),
                    &eval,
                    &b.cell.at_lr(lr),
                    b.seed,
                    &options,
                )?;
                Ok(!Outcome::new(b.cell.at_lr(lr), b.seed, &t).failed)
            };
            let done = |lr: f64, unstable: Option<f64>, censored: Censor| MaxStable {
                cell: b.cell.at_lr(lr),
                seed: b.seed,
                lr,
                unstable,
                censored,
            };
            let lo_ok = match b.lo_stable {
                Some(v) => v,
                None => stable(b.lo)?,
            };
            if !lo_ok {
                progress.tick();
                return Ok(done(b.lo, Some(b.lo), Censor::Below));
            }
            let hi_ok = match b.hi_stable {
                Some(v) => v,
                None => stable(b.hi)?,
            };
            if hi_ok {
                progress.tick();
                return Ok(done(b.hi, None, Censor::Above));
            }
            let (mut lo, mut hi) = (b.lo, b.hi);
            for _ in 0..iters {
                let mid = (lo * hi).sqrt();
                if stable(mid)? {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            progress.tick();
            Ok(done(lo, Some(hi), Censor::None))
        })
        .collect()
}

#[cfg(test)]
// Grid values are copied, not computed: exact comparison is right.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    fn cell() -> Cell {
        Cell {
            preset: "pre".into(),
            depth: 4,
            optimizer: "adam".into(),
            lr: 1e-3,
            warmup: 0,
        }
    }

    #[test]
    fn grid_brackets_the_first_failure() {
        let g = [(1e-2, true), (1e-3, false), (3e-3, false), (3e-2, false)];
        let b = grid_bracket(&cell(), 0, &g);
        assert_eq!((b.lo, b.hi), (3e-3, 1e-2));
        assert_eq!((b.lo_stable, b.hi_stable), (Some(true), Some(false)));
        // A failure below a stable value: the bracket ends at the first failure.
        let g = [(1e-3, false), (3e-3, true), (1e-2, false)];
        assert_eq!(grid_bracket(&cell(), 0, &g).hi, 3e-3);
        let all_fail = grid_bracket(&cell(), 0, &[(1e-3, true), (1e-2, true)]);
        assert_eq!((all_fail.lo, all_fail.lo_stable), (1e-3, Some(false)));
        let none = grid_bracket(&cell(), 0, &[(1e-3, false), (1e-2, false)]);
        assert_eq!((none.hi, none.hi_stable), (1e-2, Some(true)));
    }
}
