//! Many small training runs for the training analyses: a grid of cells (preset, depth,
//! optimizer, peak learning rate, warmup) times paired seeds, each run summarised by its
//! [`Outcome`] with its class ([`super::classify`]: diverged, collapsed, still descending,
//! trained), and the maximum stable learning rate of a (cell, seed) found by the widening
//! log-scale search of [`super::search`] ([`search()`]).
//!
//! A learning rate is *stable* for a (cell, seed) if that run is trained or still descending
//! ([`super::classify::RunClass::stable`]). The analyses' runs ([`Prepared`]) stop once
//! collapsed ([`SWEEP_OPTIONS`]); [`run()`] and [`run_jobs`] train every run to its end.
//!
//! **Precision**: a sweep trains in the base request's precision (`cfg.mc.precision`, f64 or
//! f32; [`outcome`] dispatches); [`train_one`], which returns the trained model, is f64 only.
//!
//! **Pairing**: every cell of a sweep trains from the same seeds; a seed fixes the data order
//! and the weight draws ([`super::run`]), so two presets or learning rates at one seed see the
//! same batches from the same initial draws where shapes match.
//!
//! **Determinism**: runs are independent and reduced in job order (a search's runs one after
//! the other), so the outcomes are byte-identical for any thread count.

use super::batch_cache::BatchCache;
use super::classify::{Curve, RunClass};
use super::config::{RawTrain, TrainConfig};
use super::run::{self, Record, Trained};
use super::search::{self, Plan, Search};
use super::task::{self, Batch, Task};
use crate::Result;
use crate::monte_carlo::Progress;
use crate::monte_carlo::precision::Precision;
use normscope_numeric::gemm::Real;
use rayon::prelude::*;

/// What varies between the runs of a sweep; everything else comes from the base request.
///
/// # Examples
///
/// A cell's checked request: the base with the cell's preset, depth, optimizer, rate and
/// warmup, and one seed.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::sweep::Cell;
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let cell = Cell {
///     preset: normscope_core::placement::POST,
///     depth: 3,
///     optimizer: "sgd".into(),
///     lr: 0.1,
///     warmup: 1,
/// };
/// assert_eq!(cell.at_lr(0.01).lr, 0.01);
/// let c = cell.config(&raw, 7)?;
/// assert_eq!(c.presets.iter().map(|p| p.name).collect::<Vec<_>>(), ["post"]);
/// assert_eq!((c.mc.model.depth, c.seeds.clone()), (3, vec![7]));
/// assert_eq!((c.schedule.peak, c.schedule.warmup), (0.1, 1));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    /// The preset (a name or alias in a configuration file; serialized as its canonical name).
    pub preset: &'static crate::placement::Preset,
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

    /// The checked request of this cell: `base` with the cell's settings and one seed. For an
    /// encoder-decoder base, `depth` counts all its blocks, 5 per layer (`--layers depth/5`).
    pub fn config(&self, base: &RawTrain, seed: u64) -> Result<TrainConfig> {
        let mut raw = base.clone();
        raw.model.depth = self.depth;
        if base.layers.is_some() {
            if !self.depth.is_multiple_of(5) {
                return Err(crate::Error::invalid(
                    "depth",
                    self.depth,
                    "a multiple of 5 blocks for an encoder-decoder (N layers: 2N encoder and 3N decoder blocks)",
                ));
            }
            raw.layers = Some(self.depth / 5);
        }
        raw.optimizer = self.optimizer.clone();
        raw.lr = self.lr;
        raw.warmup = self.warmup;
        raw.seeds = seed.to_string();
        raw.check_with(vec![self.preset])
    }
}

/// The summary of one run.
///
/// # Examples
///
/// A run from a made log: floor 0, context-free loss 2, evaluation loss 2 at init and 0.5 after
/// 4 updates: off the plateau and not falling over the last quarter, so trained, with excess
/// 0.5.
///
/// ```rust
/// use normscope_core::train::classify::RunClass;
/// use normscope_core::train::run::Record;
/// use normscope_core::train::sweep::{Cell, Outcome};
///
/// let rec = |step, metric, value| Record {
///     preset: "pre".into(), seed: 0, step, layer: None, param: None, metric, value,
/// };
/// let log = [
///     rec(0, "eval_floor", 0.0),
///     rec(0, "context_free_loss", 2.0),
///     rec(0, "eval_loss", 2.0),
///     rec(4, "eval_loss", 0.5),
/// ];
/// let cell = Cell {
///     preset: normscope_core::placement::PRE,
///     depth: 2,
///     optimizer: "adam".into(),
///     lr: 1e-3,
///     warmup: 0,
/// };
/// let o = Outcome::new(cell, 0, 4, &log, false);
/// assert_eq!(o.curve, [(0, 2.0), (4, 0.5)]);
/// assert_eq!((o.class, o.failed), (RunClass::Trained, false));
/// assert_eq!(o.excess(), 0.5);
/// assert_eq!((o.steps_to(1.0), o.steps_to(0.1)), (Some(4), None));
/// ```
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
    /// What became of it ([`super::classify`]).
    pub class: RunClass,
    /// Not stable: diverged, collapsed or slow ([`RunClass::stable`]).
    pub failed: bool,
    /// `(update, evaluation loss)` at every evaluation.
    pub curve: Vec<(u64, f64)>,
    /// `(update, layer, ||dL/dx_l|| / sqrt(columns))`: the logged stream gradients
    /// (`stream_grad`, [`super::trainable`]).
    pub stream: Vec<(u64, usize, f64)>,
    /// `(update, slope)` at every logged update: the least-squares slope of
    /// `ln ||update_l||_RMS` on `ln ||grad_l||_RMS` across the blocks `l = 1..=L`, with
    /// per-entry RMS norms `||x_l||_RMS = ||x_l||_F / sqrt(n_l)` (`n_l` the block's parameter
    /// entries, the log's `param_count`; a log without counts gives no slope). Adam's
    /// per-entry update does not follow the per-entry gradient's scale (slope 0); plain SGD's
    /// is proportional to it (slope 1). Claim 7's measure (`analyses/optimizers.rs`).
    ///
    /// **Why RMS, not Frobenius** (since 2026-12-07, after a referee's report): a Frobenius
    /// norm grows with `sqrt(n_l)`, so where block sizes alternate (a Transformer's attention
    /// blocks, 4,160 entries at width 32, and MLP blocks, 8,256) both norms alternate with it
    /// and the Frobenius slope is pulled towards 1 whatever the optimizer does (Adam's came out
    /// near +0.58). Dividing both by `sqrt(n_l)` subtracts the same `0.5 ln n_l` from both
    /// logarithms and removes the artefact.
    pub scaling: Vec<(u64, f64)>,
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

    /// Summarises a finished run of `steps` planned updates from its log.
    pub fn new(cell: Cell, seed: u64, steps: u64, records: &[Record], diverged: bool) -> Outcome {
        let one = |m: &str| {
            records
                .iter()
                .find(|r| r.metric == m)
                .map_or(f64::NAN, |r| r.value)
        };
        let curve: Vec<(u64, f64)> = records
            .iter()
            .filter(|r| r.metric == "eval_loss")
            .map(|r| (r.step, r.value))
            .collect();
        let (floor, context_free) = (one("eval_floor"), one("context_free_loss"));
        let final_loss = curve.last().map_or(f64::NAN, |c| c.1);
        let class = Curve {
            points: &curve,
            steps,
            diverged,
            floor,
            context_free,
        }
        .class();
        let scaling = scaling(records, true);
        let stream = records
            .iter()
            .filter(|r| r.metric == "stream_grad")
            .filter_map(|r| Some((r.step, r.layer?, r.value)))
            .collect();
        Outcome {
            cell,
            seed,
            scaling,
            stream,
            initial_loss: curve.first().map_or(f64::NAN, |c| c.1),
            final_loss,
            floor,
            context_free,
            diverged,
            class,
            failed: !class.stable(),
            curve,
        }
    }

    /// Summarises a finished f64 run ([`Outcome::new`] of its log).
    pub fn of(cell: Cell, seed: u64, steps: u64, t: &Trained) -> Outcome {
        Outcome::new(cell, seed, steps, &t.records, t.diverged_at.is_some())
    }
}

/// The slope of `ln ||update_l||` on `ln ||grad_l||` across blocks at every update whose log
/// has both for every block, with both norms divided by `sqrt(param_count_l)` when `rms`
/// ([`Outcome::scaling`]: no slope where a block's count is missing), else with Frobenius norms
/// (the parameter-count artefact, kept for the tests that show it); blocks are the layers between the input map (0) and the output (the
/// largest layer logged).
fn scaling(records: &[Record], rms: bool) -> Vec<(u64, f64)> {
    let top = records.iter().filter_map(|r| r.layer).max().unwrap_or(0);
    // `0.5 ln n_l`, subtracted from both logarithms (0 for Frobenius norms).
    let half_ln_count = |l: usize| -> Option<f64> {
        if !rms {
            return Some(0.0);
        }
        records
            .iter()
            .find(|r| {
                r.metric == "param_count" && r.layer == Some(l) && r.param.as_deref() == Some("all")
            })
            .filter(|r| r.value >= 1.0)
            .map(|r| 0.5 * r.value.ln())
    };
    let mut steps: Vec<u64> = records
        .iter()
        .filter(|r| r.metric == "update_norm")
        .map(|r| r.step)
        .collect();
    steps.dedup();
    steps
        .into_iter()
        .filter_map(|step| {
            let at = |metric: &str, l: usize| {
                records.iter().find(|r| {
                    r.step == step
                        && r.metric == metric
                        && r.layer == Some(l)
                        && r.param.as_deref() == Some("all")
                })
            };
            let pts: Option<Vec<(f64, f64)>> = (1..top)
                .map(|l| {
                    let c = half_ln_count(l)?;
                    Some((
                        at("grad_norm", l)?.value.ln() - c,
                        at("update_norm", l)?.value.ln() - c,
                    ))
                })
                .collect();
            let pts = pts?;
            (pts.len() >= 2).then(|| {
                let (x, y): (Vec<f64>, Vec<f64>) = pts.into_iter().unzip();
                (step, crate::stats::ols::line(&x, &y).0)
            })
        })
        .filter(|(_, slope)| slope.is_finite())
        .collect()
}

/// The options of every sweep run ([`run_jobs`], [`Prepared`]): a collapsed run is stopped
/// from [`super::classify::STOP_FROM`] of its updates on, and the log keeps only what an
/// [`Outcome`] reads (losses, per-layer gradient and update norms).
pub const SWEEP_OPTIONS: run::Options<'static> = run::Options {
    frozen: None,
    snapshots: &[],
    batches: None,
    stop_collapsed: true,
    lean: true,
};

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

/// Trains one (cell, seed) from its initial model, in f64 (a base of another precision is
/// refused, [`run::check_f64`]): for the analyses that use the trained model.
pub fn train_one(
    base: &RawTrain,
    task: &dyn Task,
    eval: &[Batch],
    cell: &Cell,
    seed: u64,
    options: &run::Options,
) -> Result<Trained> {
    let cfg = cell.config(base, seed)?;
    let begin = run::start(&cfg, task, cfg.presets[0], seed)?;
    let t = run::train(&cfg, task, cfg.presets[0], seed, begin, eval, options, &());
    // A run stopped early (`crate::interrupt`) is not a trained model.
    crate::interrupt::check()?;
    Ok(t)
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

/// The given (cell, seed) runs, in parallel, in the given order, each trained to its end with
/// its whole log (`train-grid`'s runs; the analyses' searches use [`Prepared`], whose runs stop
/// once collapsed). A run depends on its cell and
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
            let o = outcome(base, task.as_ref(), &eval, c, *s, &options)?;
            progress.tick();
            Ok(o)
        })
        .collect()
}

/// Trains one (cell, seed) in the base request's precision and summarises it.
pub fn outcome(
    base: &RawTrain,
    task: &dyn Task,
    eval: &[Batch],
    cell: &Cell,
    seed: u64,
    options: &run::Options,
) -> Result<Outcome> {
    let cfg = cell.config(base, seed)?;
    let steps = cfg.schedule.steps;
    let (records, diverged) = match cfg.mc.precision {
        Precision::F64 => trained_log::<f64>(&cfg, task, eval, seed, options)?,
        Precision::F32 => trained_log::<f32>(&cfg, task, eval, seed, options)?,
    };
    Ok(Outcome::new(cell.clone(), seed, steps, &records, diverged))
}

fn trained_log<T: Real>(
    cfg: &TrainConfig,
    task: &dyn Task,
    eval: &[Batch],
    seed: u64,
    options: &run::Options,
) -> Result<(Vec<Record>, bool)> {
    let t = match cfg.arch {
        super::config::Arch::Decoder => {
            let begin = run::start_as::<T>(cfg, task, cfg.presets[0], seed)?;
            let t = run::train(cfg, task, cfg.presets[0], seed, begin, eval, options, &());
            (t.records, t.diverged_at)
        }
        super::config::Arch::EncoderDecoder { .. } => {
            let begin = run::start_encdec::<T>(cfg, task, cfg.presets[0], seed)?;
            let t = run::train(cfg, task, cfg.presets[0], seed, begin, eval, options, &());
            (t.records, t.diverged_at)
        }
    };
    // A run stopped early (`crate::interrupt`) has no outcome.
    crate::interrupt::check()?;
    Ok((t.0, t.1.is_some()))
}

/// A base request with its task, evaluation set and batch cache made once, for many runs of
/// its cells ([`Prepared::outcome`], [`Prepared::search`]).
///
/// # Examples
///
/// The task and evaluation set made once, then one (cell, seed) trained with the sweeps'
/// options: evaluated at every update of 3.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::sweep::{Cell, Prepared};
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let prepared = Prepared::new(&raw, 1)?;
/// assert_eq!(prepared.eval().len(), 1);
/// let cell = Cell {
///     preset: normscope_core::placement::PRE,
///     depth: 2,
///     optimizer: "adam".into(),
///     lr: 1e-3,
///     warmup: 0,
/// };
/// let o = prepared.outcome(&cell, 0)?;
/// assert_eq!(o.curve.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
/// assert_eq!(o.floor, 0.1 * 0.1);
/// # Ok(())
/// # }
/// ```
pub struct Prepared {
    base: RawTrain,
    task: Box<dyn Task>,
    eval: Vec<Batch>,
    batches: Option<BatchCache>,
}

impl Prepared {
    /// Prepares `base` for about `runs` runs (whether a batch cache pays, [`BatchCache::for_runs`]).
    pub fn new(base: &RawTrain, runs: usize) -> Result<Prepared> {
        let (task, eval) = task_and_eval(base)?;
        let batches = BatchCache::for_runs(task.as_ref(), runs);
        Ok(Prepared {
            base: base.clone(),
            task,
            eval,
            batches,
        })
    }

    /// The base request.
    pub fn base(&self) -> &RawTrain {
        &self.base
    }

    /// The task.
    pub fn task(&self) -> &dyn Task {
        self.task.as_ref()
    }

    /// The evaluation set.
    pub fn eval(&self) -> &[Batch] {
        &self.eval
    }

    /// Draws into the batch cache the batches that the runs of `seeds` take from it in their
    /// first `updates` updates (a run draws its first batch itself, [`run::start`], then one
    /// per update from the cache), so that runs started afterwards find them drawn: what
    /// `normscope-bench --train-grid` does before it times training, as the PyTorch script
    /// times its loops on batches drawn beforehand. A draw is a function of the stream's state
    /// ([`super::batch_cache`]), so this changes no bit of any run. Nothing when the request
    /// keeps no cache ([`BatchCache::for_runs`]).
    pub fn predraw(&self, seeds: &[u64], updates: u64) -> Result<()> {
        let Some(cache) = &self.batches else {
            return Ok(());
        };
        let size = self.base.check()?.batch;
        let task = self.task.as_ref();
        seeds.par_iter().for_each(|s| {
            let mut data = run::data_rng(*s);
            // `run::start`'s own draw: never taken from the cache.
            task.batch(&mut data, size);
            for _ in 1..updates {
                cache.batch(task, &mut data, size);
            }
        });
        Ok(())
    }

    /// Trains one (cell, seed) ([`outcome`]) with the sweeps' options ([`SWEEP_OPTIONS`]).
    pub fn outcome(&self, cell: &Cell, seed: u64) -> Result<Outcome> {
        self.outcome_with(cell, seed, &SWEEP_OPTIONS)
    }

    /// [`Prepared::outcome`] with other options (their batch cache replaced by this one's).
    pub fn outcome_with(&self, cell: &Cell, seed: u64, options: &run::Options) -> Result<Outcome> {
        let options = run::Options {
            batches: self.batches.as_ref(),
            frozen: options.frozen,
            snapshots: options.snapshots,
            stop_collapsed: options.stop_collapsed,
            lean: options.lean,
        };
        outcome(
            &self.base,
            self.task.as_ref(),
            &self.eval,
            cell,
            seed,
            &options,
        )
    }

    /// The maximum stable learning rate of (cell, seed) ([`search::run`] with `plan`, the
    /// cell's own `lr` ignored): the search and the outcome of every run it trained, in the
    /// order tried, one run after the other.
    pub fn search(&self, cell: &Cell, seed: u64, plan: &Plan) -> Result<(Search, Vec<Outcome>)> {
        let mut runs = Vec::new();
        let found = search::run(plan, |lr| {
            let o = self.outcome(&cell.at_lr(lr), seed)?;
            let stable = !o.failed;
            runs.push(o);
            Ok(stable)
        })?;
        Ok((found, runs))
    }
}

/// The maximum stable learning rate of each (cell, seed) of `jobs` ([`Prepared::search`] with
/// `plan`): searches in parallel, each one's runs one after the other. Every request is
/// checked before anything runs.
pub fn search(
    base: &RawTrain,
    jobs: &[(&Cell, u64)],
    plan: &Plan,
    progress: &(dyn Progress + Sync),
) -> Result<Vec<(Search, Vec<Outcome>)>> {
    plan.check()?;
    for (c, s) in jobs {
        c.at_lr(plan.min).config(base, *s)?;
        c.at_lr(plan.max).config(base, *s)?;
    }
    let prepared = Prepared::new(base, jobs.len() * 4)?;
    jobs.par_iter()
        .map(|(c, seed)| {
            let r = prepared.search(c, *seed, plan)?;
            progress.tick();
            Ok(r)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RawModel;
    use crate::monte_carlo::RawMc;
    use crate::train::task::{TaskConfig, TaskKind};

    /// A made log of one update over 6 blocks alternating attention (4,160 entries) and MLP
    /// (8,256 entries) with per-entry gradient RMS `g_l` and per-entry update RMS `u_l`, both
    /// logged as Frobenius norms (`rms * sqrt(n_l)`), the counts at step 0.
    fn made_log(g: &[f64], u: impl Fn(f64) -> f64, counts: bool) -> Vec<Record> {
        let rec = |step, layer, metric, value| Record {
            preset: "post".into(),
            seed: 0,
            step,
            layer: Some(layer),
            param: Some("all".into()),
            metric,
            value,
        };
        let n = |l: usize| if l % 2 == 1 { 4160.0 } else { 8256.0_f64 };
        let mut log = Vec::new();
        // Layers 0 (input map) and 7 (output) bound the blocks 1..=6.
        for l in 0..=7 {
            if counts {
                log.push(rec(0, l, "param_count", n(l)));
            }
        }
        for (i, &gl) in g.iter().enumerate() {
            let l = i + 1;
            log.push(rec(5, l, "grad_norm", gl * n(l).sqrt()));
            log.push(rec(5, l, "update_norm", u(gl) * n(l).sqrt()));
        }
        log.push(rec(5, 7, "grad_norm", 1.0));
        log.push(rec(5, 7, "update_norm", 1.0));
        log
    }

    #[test]
    fn rms_slope_removes_the_parameter_count_artefact() {
        // Adam-like: every block's per-entry update is 1e-3 whatever its gradient. Per entry
        // the slope is 0; with Frobenius norms both sides carry sqrt(n_l), which alternates
        // with the blocks, and the slope comes out far from 0 (here above 1).
        let g = [1.0, 0.9, 1.1, 0.95, 1.05, 1.0];
        let adam = made_log(&g, |_| 1e-3, true);
        let frob = scaling(&adam, false);
        let rms = scaling(&adam, true);
        assert_eq!((frob.len(), rms.len()), (1, 1));
        assert!(frob[0].1 > 1.0, "Frobenius slope {}", frob[0].1);
        assert!(rms[0].1.abs() < 1e-9, "RMS slope {}", rms[0].1);
        // SGD-like (update = lr g per entry): slope 1 either way.
        let sgd = made_log(&g, |x| 0.03 * x, true);
        assert!((scaling(&sgd, true)[0].1 - 1.0).abs() < 1e-9);
        assert!((scaling(&sgd, false)[0].1 - 1.0).abs() < 1e-9);
        // A log without counts has no RMS slope (never a Frobenius one passed off as one).
        let old = made_log(&g, |_| 1e-3, false);
        assert!(scaling(&old, true).is_empty());
        assert_eq!(scaling(&old, false), frob);
    }

    #[test]
    fn predrawn_batches_are_found_and_change_no_bit() {
        // Post-LN, L = 2 Transformer blocks of width 8 with 2 heads, teacher-lm.
        let base = RawTrain {
            presets: "post".into(),
            model: RawModel {
                depth: 2,
                branch: "transformer".into(),
                width: 8,
                ..RawModel::default()
            },
            mc: RawMc {
                heads: 2,
                ..RawMc::default()
            },
            task: TaskConfig {
                kind: TaskKind::TeacherLm,
                vocab: 8,
                seq: 6,
                ..TaskConfig::default()
            },
            steps: 7,
            batch: 3,
            eval_every: 2,
            eval_batches: 1,
            log_every: 1,
            ..RawTrain::default()
        };
        let cell = Cell {
            preset: crate::placement::POST,
            depth: 2,
            optimizer: "adam".into(),
            lr: 1e-3,
            warmup: 0,
        };
        let seeds = [0, 1, 2];
        let jobs: Vec<(&Cell, u64)> = seeds.iter().map(|s| (&cell, *s)).collect();
        let want = run_jobs(&base, &jobs, &()).expect("runs");

        let prepared = Prepared::new(&base, seeds.len()).expect("prepared");
        prepared.predraw(&seeds, base.steps).expect("predraw");
        let cache = prepared
            .batches
            .as_ref()
            .expect("a teacher's runs share a cache");
        let kept = cache.len();
        assert_eq!(kept, seeds.len() * (base.steps as usize - 1));
        let options = run::Options::default();
        let got: Vec<Outcome> = seeds
            .par_iter()
            .map(|s| prepared.outcome_with(&cell, *s, &options).expect("run"))
            .collect();
        assert_eq!(
            cache.len(),
            kept,
            "every batch the runs took was drawn before"
        );
        // The log carries each block's parameter count, so every logged update has its RMS
        // slope (updates 1..=7).
        for o in &want {
            assert_eq!(o.scaling.len(), 7);
        }
        let text = |o: &[Outcome]| serde_json::to_string(o).expect("json");
        assert_eq!(text(&got), text(&want));
    }
}
