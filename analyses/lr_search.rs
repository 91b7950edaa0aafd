//! Maximum stable learning rates of many cells, for `warmup` and `stability-law`: every
//! (tier, preset, depth, warmup) cell at every paired seed, found by the widening log-scale
//! search of [`normscope_core::train::search`].
//!
//! **Order within a cell**: the first seed's search starts at the plan's `start`; every other
//! seed's starts at the first seed's answer (its point: the bracket's geometric midpoint, or
//! its finite end when censored), so the searches of a cell need about three runs each. The
//! start changes only how many runs a search takes (given monotone stability, not the answer),
//! and it is a function of the configuration alone, so the results are the same for any
//! thread count, shard or subset of cells. A work unit ([`super::shard`]) is one cell with all
//! its seeds.
//!
//! **Budget**: a cell deep enough for its tier's longer budget ([`super::tier::LongBudget`])
//! trains every run of every seed, at every rate, for that budget's updates; the `steps`
//! column of both tables says which.
//!
//! Tables: [`runs_frame`] (every run trained: its settings, class, losses) and
//! [`searches_frame`] (every (cell, seed): the interval holding its maximum stable rate).

use super::tier::{RunKey, Tier, key_columns};
use super::training::frame;
use normscope_core::Result;
use normscope_core::monte_carlo::Progress;
use normscope_core::output::table::column;
use normscope_core::train::search::{Plan, Search};
use normscope_core::train::sweep::{Cell, Outcome};
use polars::prelude::DataFrame;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// One searched cell: the index of its tier and the cell (its `lr` ignored).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::lr_search::{cost, SearchCell};
/// use normscope_analyses::tier::Tier;
/// use normscope_core::train::sweep::Cell;
/// let cell = Cell {
///     preset: normscope_core::placement::POST,
///     depth: 8,
///     optimizer: "adam".into(),
///     lr: 1e-3,
///     warmup: 0,
/// };
/// let c = SearchCell { tier: 0, cell };
/// // Cost for sharding: blocks x steps x seeds = 8 x 300 x 2.
/// assert_eq!(cost(&[Tier::lm()], &c, 2), 4800.0);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchCell {
    /// Index into the analysis's tiers.
    pub tier: usize,
    /// Preset, depth, optimizer and warmup.
    pub cell: Cell,
}

/// One seed's search in a cell and the runs it trained.
///
/// # Examples
///
/// Two seeds' searches in one cell, as [`searches_frame`] tabulates them: seed 0 bracketed
/// its maximum stable rate in `[0.25, 1]`, seed 1 was stable up to the plan's cap, 4.
///
/// ```rust
/// use normscope_analyses::lr_search::{searches_frame, SearchCell, SeedSearch};
/// use normscope_analyses::tier::Tier;
/// use normscope_analyses::training::{f64s, strs};
/// use normscope_core::train::search::{Censor, Search};
/// use normscope_core::train::sweep::Cell;
///
/// let one = |seed, stable, unstable, censored, tried: &[(f64, bool)]| SeedSearch {
///     seed,
///     search: Search { stable, unstable, censored, tried: tried.to_vec() },
///     runs: Vec::new(), // the runs' outcomes, for `runs_frame`
/// };
/// let found = vec![vec![
///     one(0, Some(0.25), Some(1.0), Censor::None, &[(0.25, true), (1.0, false)]),
///     one(1, Some(4.0), None, Censor::Above, &[(1.0, true), (4.0, true)]),
/// ]];
/// let cell = Cell {
///     preset: normscope_core::placement::POST,
///     depth: 8,
///     optimizer: "adam".into(),
///     lr: 1e-3,
///     warmup: 0,
/// };
/// let df = searches_frame(&[Tier::lm()], &[SearchCell { tier: 0, cell }], &found)?;
/// assert_eq!(strs(&df, "seed")?, ["0", "1"]);
/// assert_eq!(f64s(&df, "max_lr")?, [0.5, 4.0]); // sqrt(0.25 x 1), and the cap
/// assert_eq!(strs(&df, "censored")?, ["none", "above"]);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeedSearch {
    /// Training seed.
    pub seed: u64,
    /// Where its maximum stable rate lies.
    pub search: Search,
    /// Every run, in the order tried.
    pub runs: Vec<Outcome>,
}

/// The searches of `cells` at `seeds` (module docs), one `Vec` per cell in seed order. The
/// tiers' tasks are prepared once each.
pub fn run_cells(
    tiers: &[Tier],
    cells: &[SearchCell],
    seeds: &[u64],
    plan: &Plan,
    progress: &(dyn Progress + Sync),
) -> Result<Vec<Vec<SeedSearch>>> {
    let runs = cells.len() * seeds.len() * 4;
    // A cell deep enough for its tier's longer budget trains on that budget's request.
    let long = |c: &SearchCell| tiers[c.tier].steps_at(c.cell.depth) != tiers[c.tier].steps;
    let prepared = super::tuned::prepare(
        tiers,
        cells.iter().filter(|c| !long(c)).map(|c| c.tier),
        runs,
    )?;
    let long_tiers: Vec<Tier> = tiers
        .iter()
        .map(|t| {
            t.long
                .map_or_else(|| t.clone(), |l| t.at_blocks(l.from_blocks))
        })
        .collect();
    let prepared_long = super::tuned::prepare(
        &long_tiers,
        cells.iter().filter(|c| long(c)).map(|c| c.tier),
        runs,
    )?;
    cells
        .par_iter()
        .map(|c| {
            let p = if long(c) {
                &prepared_long[c.tier]
            } else {
                &prepared[c.tier]
            };
            let p = p.as_ref().expect("prepared for its cells");
            let Some((&first, rest)) = seeds.split_first() else {
                return Ok(Vec::new());
            };
            let (s0, r0) = p.search(&c.cell, first, plan)?;
            progress.tick();
            let start = s0.point().clamp(plan.min, plan.max);
            let plan_rest = Plan { start, ..*plan };
            let mut out = vec![SeedSearch {
                seed: first,
                search: s0,
                runs: r0,
            }];
            let others: Vec<SeedSearch> = rest
                .par_iter()
                .map(|&seed| {
                    let (search, runs) = p.search(&c.cell, seed, &plan_rest)?;
                    progress.tick();
                    Ok(SeedSearch { seed, search, runs })
                })
                .collect::<Result<_>>()?;
            out.extend(others);
            Ok(out)
        })
        .collect()
}

/// Every run of every search: the run's settings ([`RunKey`]), then `purpose` (`search`),
/// `class`, `diverged`, `initial_loss`, `final_loss`, `floor`, `context_free`, `excess` (final
/// minus floor) and `closed` (the fraction of the gap `C - F` closed).
pub fn runs_frame(
    tiers: &[Tier],
    cells: &[SearchCell],
    found: &[Vec<SeedSearch>],
) -> Result<DataFrame> {
    let runs: Vec<(RunKey, &Outcome, &str)> = cells
        .iter()
        .zip(found)
        .flat_map(|(c, seeds)| {
            seeds.iter().flat_map(move |s| {
                s.runs
                    .iter()
                    .map(move |o| (RunKey::new(&tiers[c.tier], &o.cell, o.seed), o, "search"))
            })
        })
        .collect();
    outcome_frame(&runs)
}

/// A table of outcomes with their keys and purposes (the columns of [`runs_frame`]).
pub fn outcome_frame(runs: &[(RunKey, &Outcome, &str)]) -> Result<DataFrame> {
    let keys: Vec<RunKey> = runs.iter().map(|r| r.0.clone()).collect();
    let o = |f: fn(&Outcome) -> f64| runs.iter().map(move |r| f(r.1)).collect::<Vec<f64>>();
    let mut cols = key_columns(&keys);
    cols.extend([
        column("purpose", runs.iter().map(|r| r.2.to_string())),
        column("class", runs.iter().map(|r| r.1.class.name().to_string())),
        column("diverged", runs.iter().map(|r| r.1.diverged)),
        column("initial_loss", o(|x| x.initial_loss)),
        column("final_loss", o(|x| x.final_loss)),
        column("floor", o(|x| x.floor)),
        column("context_free", o(|x| x.context_free)),
        column("excess", o(|x| x.excess())),
        column(
            "closed",
            o(|x| (x.context_free - x.final_loss) / (x.context_free - x.floor)),
        ),
    ]);
    frame(cols)
}

/// Every logged update of every run (evaluation runs only): the run's settings, the update
/// (`step`) and `slope_rms`, the slope of `ln ||update_l||_RMS` on `ln ||grad_l||_RMS` across
/// its blocks with per-entry RMS norms `||.||_F / sqrt(n_l)` ([`Outcome::scaling`]). Named
/// `slope_rms` since 2026-12-07: earlier tables' `slope` used Frobenius norms, a
/// parameter-count artefact where block sizes alternate, and must not be read as this.
pub(crate) fn scaling_frame(runs: &[(RunKey, &Outcome, &str)]) -> Result<DataFrame> {
    let rows: Vec<(&RunKey, u64, f64)> = runs
        .iter()
        .filter(|r| r.2 == "evaluation")
        .flat_map(|r| r.1.scaling.iter().map(move |(s, v)| (&r.0, *s, *v)))
        .collect();
    let keys: Vec<RunKey> = rows.iter().map(|r| r.0.clone()).collect();
    let mut cols = key_columns(&keys);
    cols.extend([
        column("step", rows.iter().map(|r| r.1)),
        column("slope_rms", rows.iter().map(|r| r.2)),
    ]);
    frame(cols)
}

/// Every (cell, seed): its settings (the `lr` column empty), then `max_lr_bracket_low` and
/// `max_lr_bracket_high` (the bracket the search closed around the maximum stable rate, not a
/// confidence interval; the high end empty when censored above, the low end 0 when censored
/// below), `max_lr` (the interval's geometric midpoint, or its finite end when
/// censored), `censored` (`none`, `above`, `below`) and `runs` (runs the search trained).
pub fn searches_frame(
    tiers: &[Tier],
    cells: &[SearchCell],
    found: &[Vec<SeedSearch>],
) -> Result<DataFrame> {
    let rows: Vec<(RunKey, &Search)> = cells
        .iter()
        .zip(found)
        .flat_map(|(c, seeds)| {
            seeds.iter().map(move |s| {
                (
                    RunKey::new(&tiers[c.tier], &c.cell, s.seed).at_lr(f64::NAN),
                    &s.search,
                )
            })
        })
        .collect();
    let keys: Vec<RunKey> = rows.iter().map(|r| r.0.clone()).collect();
    let mut cols = key_columns(&keys);
    cols.extend([
        column("max_lr_bracket_low", rows.iter().map(|r| r.1.interval().0)),
        column("max_lr_bracket_high", rows.iter().map(|r| r.1.interval().1)),
        column("max_lr", rows.iter().map(|r| r.1.point())),
        column(
            "censored",
            rows.iter().map(|r| r.1.censored.name().to_string()),
        ),
        column("runs", rows.iter().map(|r| r.1.tried.len() as u64)),
    ]);
    frame(cols)
}

/// The estimated cost of a cell's searches, for sharding: blocks x steps x seeds (the steps
/// of the cell's depth, [`Tier::steps_at`]).
pub fn cost(tiers: &[Tier], c: &SearchCell, seeds: usize) -> f64 {
    (c.cell.depth as f64) * tiers[c.tier].steps_at(c.cell.depth) as f64 * seeds as f64
}
