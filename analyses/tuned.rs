//! Training at each cell's own tuned learning rate, for `convergence`, `optimizers` and
//! `finetune`: every (tier, preset, depth, optimizer) cell is trained over its tier's
//! learning-rate grid ([`TierSet::lrs`]) on held-out tuning seeds, the rate with the lowest median score is kept
//! ([`super::training::best_lr`]; score: the final excess over the floor, a diverged run
//! counting as the context-free gap, [`super::training::score`]), and the cell is trained at
//! that rate from the evaluation seeds (paired across cells), every evaluation run to its end
//! ([`EVAL_OPTIONS`]). A work unit ([`super::shard`]) is
//! one cell: its tuning runs and its evaluation runs.

use super::tier::{RunKey, Tier, TierSet};
use super::training::best_lr;
use normscope_core::Result;
use normscope_core::monte_carlo::Progress;
use normscope_core::train::config::RawTrain;
use normscope_core::train::sweep::{Cell, Outcome, Prepared};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The options of the evaluation runs at a tuned rate: every run trained to its end (its curve,
/// and its gradient and update statistics at every logged update, whole), the log lean. The
/// tuning runs stop once collapsed ([`normscope_core::train::sweep::SWEEP_OPTIONS`]).
pub const EVAL_OPTIONS: normscope_core::train::run::Options<'static> =
    normscope_core::train::run::Options {
        frozen: None,
        snapshots: &[],
        batches: None,
        stop_collapsed: false,
        lean: true,
    };

/// One tuned cell: the index of its tier and the cell (its `lr` ignored).
///
/// # Examples
///
/// A cell of the `lm` tier (300 updates) tuned over a 3-rate grid, and its cost for sharding:
///
/// ```rust
/// use normscope_analyses::tier::{Tier, TierSet};
/// use normscope_analyses::tuned::{cost, TunePlan, TunedCell};
/// use normscope_core::train::sweep::Cell;
///
/// let set = TierSet {
///     tier: Tier::lm(),
///     presets: vec![normscope_core::placement::POST],
///     depths: vec![12],
///     lrs: vec![1e-3, 3e-3, 1e-2],
/// };
/// let cell = Cell {
///     preset: normscope_core::placement::POST,
///     depth: 12,
///     optimizer: "adam".into(),
///     lr: 0.0, // set per run
///     warmup: 0,
/// };
/// let c = TunedCell { tier: 0, cell };
/// let plan = TunePlan { tune_seeds: vec![100, 101], seeds: 4 };
/// // Blocks x steps x runs: 12 x 300 x (3 rates x 2 tuning seeds + 4 evaluation seeds).
/// assert_eq!(cost(&[set], &c, &plan), 36_000.0);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedCell {
    /// Index into the analysis's tiers.
    pub tier: usize,
    /// Preset, depth, optimizer and warmup.
    pub cell: Cell,
}

/// A tuned cell's runs.
///
/// # Examples
///
/// Tuning runs at two rates, the tuned rate (the lower final excess, [`best_lr`]) and an
/// evaluation run at it, keyed for the tables ([`keyed`]):
///
/// ```rust
/// use normscope_analyses::tier::Tier;
/// use normscope_analyses::training::best_lr;
/// use normscope_analyses::tuned::{keyed, Tuned, TunedCell};
/// use normscope_core::train::run::Record;
/// use normscope_core::train::sweep::{Cell, Outcome};
///
/// let cell = Cell {
///     preset: normscope_core::placement::PRE,
///     depth: 4,
///     optimizer: "adam".into(),
///     lr: 0.0, // set per run
///     warmup: 0,
/// };
/// // A run whose evaluation loss fell from 2 to `last` in 4 updates (floor 0).
/// let run = |lr: f64, seed, last| {
///     let rec = |step, metric, value| Record {
///         preset: "pre".into(), seed, step, layer: None, param: None, metric, value,
///     };
///     let log = [
///         rec(0, "eval_floor", 0.0),
///         rec(0, "context_free_loss", 2.0),
///         rec(0, "eval_loss", 2.0),
///         rec(4, "eval_loss", last),
///     ];
///     Outcome::new(cell.at_lr(lr), seed, 4, &log, false)
/// };
/// let tuning = vec![run(1e-3, 100, 0.5), run(1e-2, 100, 0.25)];
/// let lr = best_lr(&tuning.iter().collect::<Vec<_>>());
/// assert_eq!(lr, 1e-2);
/// let tuned = [Tuned { tuning, lr, runs: vec![run(lr, 0, 0.3)] }];
/// let keys = keyed(&[Tier::lm()], &[TunedCell { tier: 0, cell: cell.clone() }], &tuned);
/// let keys: Vec<(f64, &str)> = keys.iter().map(|k| (k.0.lr, k.2)).collect();
/// assert_eq!(keys, [(1e-3, "tuning"), (1e-2, "tuning"), (1e-2, "evaluation")]);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tuned {
    /// Every tuning run, in (lr, seed) order.
    pub tuning: Vec<Outcome>,
    /// The tuned learning rate.
    pub lr: f64,
    /// The evaluation runs at the tuned rate, in seed order.
    pub runs: Vec<Outcome>,
}

/// The seeds of the tuning and of the evaluation (the grids are the tiers', [`TierSet::lrs`]).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::tuned::TunePlan;
/// use normscope_core::Error;
///
/// let plan = TunePlan { tune_seeds: vec![100, 101], seeds: 8 };
/// plan.check("tune_seeds", "seeds")?;
/// // Per cell of a 5-rate grid: 5 x 2 tuning runs and 8 evaluation runs.
/// assert_eq!(plan.runs(5), 18);
/// // The tuning seeds are held out: 3 is an evaluation seed (0..8).
/// let overlap = TunePlan { tune_seeds: vec![3, 100], ..plan };
/// let err = overlap.check("tune_seeds", "seeds").unwrap_err();
/// assert!(matches!(err, Error::InvalidParam { field: "tune_seeds", .. }));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunePlan {
    /// Held-out tuning seeds (none of the evaluation seeds).
    pub tune_seeds: Vec<u64>,
    /// Evaluation seeds `0..seeds`.
    pub seeds: u64,
}

impl TunePlan {
    /// Checks the plan, each error naming the field given.
    pub fn check(&self, tune_seeds: &'static str, seeds: &'static str) -> Result<()> {
        super::training::check_count(seeds, self.seeds, 2)?;
        let distinct = super::training::distinct(self.tune_seeds.iter().copied()).len();
        if self.tune_seeds.is_empty()
            || distinct != self.tune_seeds.len()
            || self.tune_seeds.iter().any(|s| *s < self.seeds)
        {
            return Err(normscope_core::Error::invalid(
                tune_seeds,
                format!("{:?}", self.tune_seeds),
                format!(
                    "a non-empty list of distinct seeds >= seeds = {} (held out from the evaluation seeds 0..{})",
                    self.seeds, self.seeds
                ),
            ));
        }
        Ok(())
    }

    /// The evaluation seeds.
    pub(crate) fn eval_seeds(&self) -> Vec<u64> {
        (0..self.seeds).collect()
    }

    /// Runs per cell of a grid of `lrs` rates (tuning and evaluation).
    pub fn runs(&self, lrs: usize) -> usize {
        lrs * self.tune_seeds.len() + self.seeds as usize
    }
}

/// Tunes and evaluates `cells` (module docs) over the grids of their tiers' sets, one result
/// per cell in order. The tiers' tasks are prepared once each; cells and their runs go in
/// parallel.
pub fn run_cells(
    sets: &[TierSet],
    cells: &[TunedCell],
    plan: &TunePlan,
    progress: &(dyn Progress + Sync),
) -> Result<Vec<Tuned>> {
    run_cells_with(sets, cells, plan, progress, Tier::base)
}

/// [`run_cells`] with each tier's base request made by `base` (e.g. SGD's momentum set).
pub(crate) fn run_cells_with(
    sets: &[TierSet],
    cells: &[TunedCell],
    plan: &TunePlan,
    progress: &(dyn Progress + Sync),
    base: impl Fn(&Tier) -> Result<RawTrain>,
) -> Result<Vec<Tuned>> {
    let tiers: Vec<Tier> = sets.iter().map(|s| s.tier.clone()).collect();
    let runs = cells.len() * plan.runs(sets.iter().map(|s| s.lrs.len()).max().unwrap_or(0));
    let prepared = prepare_with(&tiers, cells.iter().map(|c| c.tier), runs, base)?;
    cells
        .par_iter()
        .map(|c| {
            let p = prepared[c.tier].as_ref().expect("prepared for its cells");
            let jobs: Vec<(f64, u64)> = sets[c.tier]
                .lrs
                .iter()
                .flat_map(|&lr| plan.tune_seeds.iter().map(move |&s| (lr, s)))
                .collect();
            let tuning: Vec<Outcome> = jobs
                .par_iter()
                .map(|&(lr, s)| {
                    let o = p.outcome(&c.cell.at_lr(lr), s);
                    progress.tick();
                    o
                })
                .collect::<Result<_>>()?;
            let lr = best_lr(&tuning.iter().collect::<Vec<_>>());
            let runs: Vec<Outcome> = plan
                .eval_seeds()
                .par_iter()
                .map(|&s| {
                    let o = p.outcome_with(&c.cell.at_lr(lr), s, &EVAL_OPTIONS);
                    progress.tick();
                    o
                })
                .collect::<Result<_>>()?;
            Ok(Tuned { tuning, lr, runs })
        })
        .collect()
}

/// The prepared tier of every tier index that `used` names (`None` for the others), each for
/// about `runs` runs.
pub fn prepare(
    tiers: &[Tier],
    used: impl Iterator<Item = usize>,
    runs: usize,
) -> Result<Vec<Option<Prepared>>> {
    prepare_with(tiers, used, runs, Tier::base)
}

/// [`prepare`] with each tier's base request made by `base`.
pub(crate) fn prepare_with(
    tiers: &[Tier],
    used: impl Iterator<Item = usize>,
    runs: usize,
    base: impl Fn(&Tier) -> Result<RawTrain>,
) -> Result<Vec<Option<Prepared>>> {
    let used: Vec<usize> = used.collect();
    (0..tiers.len())
        .map(|t| {
            used.contains(&t)
                .then(|| Prepared::new(&base(&tiers[t])?, runs))
                .transpose()
        })
        .collect()
}

/// The estimated cost of a cell, for sharding: blocks x steps x runs.
pub fn cost(sets: &[TierSet], c: &TunedCell, plan: &TunePlan) -> f64 {
    let s = &sets[c.tier];
    c.cell.depth as f64 * s.tier.steps as f64 * plan.runs(s.lrs.len()) as f64
}

/// Every run of `cells` with its key and purpose (`tuning` or `evaluation`), for
/// [`super::lr_search::outcome_frame`]-style tables.
pub fn keyed<'a>(
    tiers: &[Tier],
    cells: &[TunedCell],
    tuned: &'a [Tuned],
) -> Vec<(RunKey, &'a Outcome, &'static str)> {
    let mut out = Vec::new();
    for (c, t) in cells.iter().zip(tuned) {
        for o in &t.tuning {
            out.push((RunKey::new(&tiers[c.tier], &o.cell, o.seed), o, "tuning"));
        }
        for o in &t.runs {
            out.push((
                RunKey::new(&tiers[c.tier], &o.cell, o.seed),
                o,
                "evaluation",
            ));
        }
    }
    out
}
