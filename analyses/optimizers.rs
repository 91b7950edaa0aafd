//! `optimizers` (issue 12 item 2, claim 7): Adam against SGD with momentum on the same
//! networks (regression tier, [`super::regression_tier`]), paired seeds.
//!
//! 1. **Grid**: every preset x depth x optimizer x learning rate (Adam and SGD each on their
//!    own grid) x seed `0..seeds`, `steps` updates, no warmup. Per cell: failures
//!    ([`crate::train::sweep::FAIL_FRACTION`]) with a Wilson 95% interval and the median score
//!    (final excess loss, [`super::regression_tier::score`]) with a bootstrap 95% interval;
//!    each optimizer's **best learning rate** per (preset, depth) is the grid value with the
//!    lowest median score.
//! 2. **At the best learning rates**: SGD against Adam per (preset, depth), paired by seed:
//!    the median of `score_SGD - score_Adam` with its bootstrap interval and the sign test;
//!    failure counts with Fisher's exact test. Holm's correction runs over the (preset, depth)
//!    comparisons, separately for the sign tests and the Fisher tests.
//! 3. **The first updates** (`early_steps` of them, every seed, each optimizer at its best
//!    learning rate): per block `l = 1..L` and update `t`, the gradient norm `‖g_l‖` (logged by
//!    the run, before the update), the update norm `‖θ_l(t) - θ_l(t-1)‖` and the weight norm
//!    `‖θ_l(t-1)‖` (from copies of the model after every update), and the output change per
//!    update `‖f(θ_t; P) - f(θ_{t-1}; P)‖_F / sqrt(columns)` on the probe batch P (the
//!    normalisation of the logged `output_change`, Liu et al. 2020, which is also kept: the
//!    change since init). The **scaling slope** of a (run, update) is the least-squares slope
//!    of `ln ‖Δθ_l‖` on `ln ‖g_l‖` across the blocks; its median over seeds gets a bootstrap
//!    interval. SGD's first update is `-lr g` (slope 1 exactly); Adam's is `-lr m̂/(sqrt(v̂) +
//!    eps)`, about `lr` per coordinate whatever `g`'s scale (slope 0; Kingma and Ba 2015,
//!    section 2.1: "the effective step ... is invariant to the scale of the gradients").
//!
//! Verdict ([`verdict`], rule [`rule`]): the constants [`SLOPE_STEP`], [`SLOPE_TOL`], [`ALPHA`] and
//! [`RESCUED`], with the rule printed from them.

use super::regression_tier::{self as tier, Group};
use super::{Analysis, Out};
use crate::Result;
use crate::output::figure::{LinePlot, Series};
use crate::output::latex::{Cell as Tex, Table, plain};
use crate::output::table::column;
use crate::stats::{bootstrap, fisher, holm, ols};
use crate::train::batch_cache::BatchCache;
use crate::train::config::RawTrain;
use crate::train::model::TrainModel;
use crate::train::run::{self, views};
use crate::train::sweep::{self, Cell, Outcome};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "optimizers",
    about: "Adam vs SGD with momentum: per-block update size against gradient size, failures and final excess at each optimizer's best lr",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: Some(
        "one (optimizer, preset, depth): its lr grid on every seed and the first updates at its best lr",
    ),
};

/// The update at which the scaling slopes are judged (the first: before either optimizer's
/// state has a history).
pub const SLOPE_STEP: u64 = 1;
/// Adam's slope interval must lie in `[-SLOPE_TOL, SLOPE_TOL]`, SGD's in
/// `[1 - SLOPE_TOL, 1 + SLOPE_TOL]`.
pub const SLOPE_TOL: f64 = 0.1;
/// Family-wise error rate of the Holm-corrected tests.
pub const ALPHA: f64 = 0.05;
/// The preset the claim says Adam rescues.
pub const RESCUED: &str = "post";

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<String>,
    /// Residual blocks L.
    pub depths: Vec<usize>,
    /// Width d.
    pub width: usize,
    /// Examples per batch.
    pub batch: usize,
    /// Updates of the grid runs.
    pub steps: u64,
    /// Evaluation interval of the grid runs.
    pub eval_every: u64,
    /// Adam's learning-rate grid.
    pub adam_lrs: Vec<f64>,
    /// SGD's learning-rate grid.
    pub sgd_lrs: Vec<f64>,
    /// SGD's momentum.
    pub momentum: f64,
    /// Training seeds `0..seeds` (every cell).
    pub seeds: u64,
    /// Updates logged one by one at the best learning rates.
    pub early_steps: u64,
    /// The seed of the teacher and the evaluation set (and of the bootstrap).
    pub seed: u64,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm"].map(String::from).to_vec(),
            depths: vec![6, 24],
            width: 16,
            batch: 16,
            steps: 200,
            eval_every: 25,
            adam_lrs: vec![1e-3, 3e-3, 1e-2],
            sgd_lrs: vec![3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
            momentum: 0.9,
            seeds: 20,
            early_steps: 20,
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            presets: ["pre", "post"].map(String::from).to_vec(),
            depths: vec![4],
            seeds: 3,
            early_steps: 5,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        tier::check_tier(
            &self.presets,
            &self.depths,
            self.seeds,
            self.steps,
            self.eval_every,
            self.width,
            self.batch,
        )?;
        tier::check_lrs("adam_lrs", &self.adam_lrs)?;
        tier::check_lrs("sgd_lrs", &self.sgd_lrs)?;
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(crate::Error::invalid(
                "momentum",
                self.momentum,
                "a number in [0, 1)",
            ));
        }
        if self.early_steps == 0 || self.early_steps > self.steps {
            return Err(crate::Error::invalid(
                "early_steps",
                self.early_steps,
                format!("an integer in [1, steps = {}]", self.steps),
            ));
        }
        for (opt, lr) in [("adam", self.adam_lrs[0]), ("sgd", self.sgd_lrs[0])] {
            for p in &self.presets {
                for &depth in &self.depths {
                    let cell = cell(p, depth, opt, lr);
                    cell.config(&self.base(opt, self.steps, self.eval_every, self.steps), 0)?;
                    cell.config(&self.base(opt, self.early_steps, self.early_steps, 1), 0)?;
                }
            }
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

impl Config {
    /// The base request of optimizer `opt` (SGD gets the momentum).
    fn base(&self, opt: &str, steps: u64, eval_every: u64, log_every: u64) -> RawTrain {
        let b = tier::base(
            self.width, self.batch, steps, eval_every, log_every, self.seed,
        );
        RawTrain {
            optimizer: opt.into(),
            momentum: (opt == "sgd").then_some(self.momentum),
            ..b
        }
    }

    fn train_seeds(&self) -> Vec<u64> {
        (0..self.seeds).collect()
    }

    fn grid(&self, opt: &str) -> &[f64] {
        if opt == "adam" {
            &self.adam_lrs
        } else {
            &self.sgd_lrs
        }
    }
}

/// The two optimizers, in table order.
const OPTIMIZERS: [&str; 2] = ["adam", "sgd"];

fn cell(preset: &str, depth: usize, optimizer: &str, lr: f64) -> Cell {
    Cell {
        preset: preset.into(),
        depth,
        optimizer: optimizer.into(),
        lr,
        warmup: 0,
    }
}

fn opt_label(opt: &str) -> &'static str {
    if opt == "adam" { "Adam" } else { "SGD+mom." }
}

/// One (preset, depth, optimizer) at its best learning rate.
struct Best {
    preset: String,
    depth: usize,
    optimizer: &'static str,
    lr: f64,
    /// Scores by seed.
    scores: Vec<f64>,
    group: Group,
}

/// Per-block values of one run's update `step`.
#[derive(Clone, Serialize, Deserialize)]
struct BlockStep {
    step: u64,
    block: usize,
    grad: f64,
    update: f64,
    weight: f64,
}

/// The first updates of one run.
#[derive(Clone, Serialize, Deserialize)]
struct Early {
    cell: Cell,
    seed: u64,
    blocks: Vec<BlockStep>,
    /// `(update, output change in that update, output change since init)`.
    outputs: Vec<(u64, f64, f64)>,
}

/// Per-layer square norms of a model's parameters (index = layer).
fn layer_sq(m: &TrainModel, other: Option<&TrainModel>) -> Vec<f64> {
    let mut out = vec![0.0; m.depth() + 2];
    let a = m.params();
    match other {
        None => {
            for (i, w) in &a {
                out[i.layer] += w.norm_squared();
            }
        }
        Some(o) => {
            for ((i, w), (_, v)) in a.iter().zip(o.params()) {
                out[i.layer] += (*w - v).norm_squared();
            }
        }
    }
    out
}

fn early_runs(c: &Config, cells: &[Cell]) -> Result<Vec<Early>> {
    let snaps: Vec<u64> = (0..=c.early_steps).collect();
    let bases: Vec<RawTrain> = OPTIMIZERS
        .iter()
        .map(|o| c.base(o, c.early_steps, c.early_steps, 1))
        .collect();
    let (task, eval) = sweep::task_and_eval(&bases[0])?;
    let probe = &eval[0];
    let jobs: Vec<(&Cell, u64)> = cells
        .iter()
        .flat_map(|cl| c.train_seeds().into_iter().map(move |s| (cl, s)))
        .collect();
    let batches = BatchCache::for_runs(task.as_ref(), jobs.len());
    jobs.par_iter()
        .map(|(cl, seed)| {
            let base = &bases[usize::from(cl.optimizer == "sgd")];
            let options = run::Options {
                frozen: None,
                snapshots: &snaps,
                batches: batches.as_ref(),
            };
            let t = sweep::train_one(base, task.as_ref(), &eval, cl, *seed, &options)?;
            let out = |m: &TrainModel| m.forward(views(probe).0).output;
            let f0 = out(&t.snapshots[0].1);
            let cols = (f0.ncols() as f64).sqrt();
            let mut blocks = Vec::new();
            let mut outputs = Vec::new();
            for pair in t.snapshots.windows(2) {
                let ((_, prev), (s, now)) = (&pair[0], &pair[1]);
                let (dsq, wsq) = (layer_sq(now, Some(prev)), layer_sq(prev, None));
                for l in 1..=cl.depth {
                    let grad = t
                        .records
                        .iter()
                        .find(|r| {
                            r.step == *s
                                && r.metric == "grad_norm"
                                && r.layer == Some(l)
                                && r.param.as_deref() == Some("all")
                        })
                        .map_or(f64::NAN, |r| r.value);
                    blocks.push(BlockStep {
                        step: *s,
                        block: l,
                        grad,
                        update: dsq[l].sqrt(),
                        weight: wsq[l].sqrt(),
                    });
                }
                let f = out(now);
                outputs.push((*s, (&f - out(prev)).norm() / cols, (&f - &f0).norm() / cols));
            }
            Ok(Early {
                cell: (*cl).clone(),
                seed: *seed,
                blocks,
                outputs,
            })
        })
        .collect()
}

/// The scaling slope of one run's update `step`: OLS of `ln ‖Δθ_l‖` on `ln ‖g_l‖` over the
/// blocks with both norms positive and finite (NaN with fewer than two, or no spread).
fn slope(e: &Early, step: u64) -> f64 {
    let (x, y): (Vec<f64>, Vec<f64>) = e
        .blocks
        .iter()
        .filter(|b| b.step == step && b.grad > 0.0 && b.update > 0.0)
        .filter(|b| b.grad.is_finite())
        .map(|b| (b.grad.ln(), b.update.ln()))
        .unzip();
    if x.len() < 2 {
        return f64::NAN;
    }
    ols::line(&x, &y).0
}

/// Decades spanned by a run's per-block values at `step`: `log10(max / min)`.
fn decades(e: &Early, step: u64, v: impl Fn(&BlockStep) -> f64) -> f64 {
    let xs: Vec<f64> = e
        .blocks
        .iter()
        .filter(|b| b.step == step)
        .map(v)
        .filter(|x| *x > 0.0 && x.is_finite())
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    if xs.is_empty() {
        f64::NAN
    } else {
        (hi / lo).log10()
    }
}

fn finite(v: Vec<f64>) -> Vec<f64> {
    v.into_iter().filter(|x| x.is_finite()).collect()
}

/// One work unit (see [`super::shard`]): an (optimizer, preset, depth) family, its lr grid on
/// every seed and the first updates of its best cell. Its result: the grid outcomes in (lr,
/// seed) order and the early runs in seed order.
type UnitResult = (Vec<Outcome>, Vec<Early>);

/// The grid runs and early runs of the (optimizer, preset, depth) `units`, one result per unit.
/// A family's best lr depends on its own grid runs alone, so any subset gives the same results.
fn compute(c: &Config, units: &[(usize, String, usize)]) -> Result<Vec<UnitResult>> {
    let seeds = c.train_seeds();
    let mut grids: Vec<Vec<Outcome>> = Vec::new();
    for (k, opt) in OPTIMIZERS.iter().enumerate() {
        let mine: Vec<&(usize, String, usize)> = units.iter().filter(|u| u.0 == k).collect();
        let cells: Vec<Cell> = mine
            .iter()
            .flat_map(|(_, p, d)| c.grid(opt).iter().map(move |&lr| cell(p, *d, opt, lr)))
            .collect();
        let base = c.base(opt, c.steps, c.eval_every, c.steps);
        let flat = sweep::run(&base, &cells, &seeds, &())?;
        grids.extend(
            flat.chunks(c.grid(opt).len() * seeds.len())
                .map(<[_]>::to_vec),
        );
    }
    // `grids` is optimizer-major; put it back in the order of `units`.
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| units[i].0);
    let mut by_unit: Vec<Vec<Outcome>> = vec![Vec::new(); units.len()];
    for (g, i) in grids.into_iter().zip(order) {
        by_unit[i] = g;
    }
    let best_cells: Vec<Cell> = units
        .iter()
        .zip(&by_unit)
        .map(|((k, p, d), g)| {
            let family: Vec<&Outcome> = g.iter().collect();
            cell(p, *d, OPTIMIZERS[*k], tier::best_lr(&family))
        })
        .collect();
    let early = early_runs(c, &best_cells)?;
    Ok(by_unit
        .into_iter()
        .zip(early.chunks(seeds.len()))
        .map(|(g, e)| (g, e.to_vec()))
        .collect())
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let mut units: Vec<(usize, String, usize)> = Vec::new();
    for k in 0..OPTIMIZERS.len() {
        for p in &c.presets {
            for &d in &c.depths {
                units.push((k, p.clone(), d));
            }
        }
    }
    // A unit's cost: its runs, each proportional to the depth (early runs are short).
    let cost = |u: &(usize, String, usize)| (u.2 * c.grid(OPTIMIZERS[u.0]).len()) as f64;
    let results = out.units("families", &units, cost, |mine| compute(c, mine))?;
    // Units are in (optimizer, preset, depth) order, as the grid's runs are.
    let outcomes: Vec<Outcome> = results.iter().flat_map(|r| r.0.clone()).collect();
    let bests = grid_tables(c, &outcomes, out)?;
    compare_table(c, &bests, out)?;
    // The early runs in the order of the best cells.
    let mut early: Vec<Early> = Vec::new();
    for b in &bests {
        let k = OPTIMIZERS.iter().position(|o| *o == b.optimizer);
        let i = units
            .iter()
            .position(|u| Some(u.0) == k && u.1 == b.preset && u.2 == b.depth)
            .expect("every best cell is a unit's");
        early.extend(results[i].1.iter().cloned());
    }
    early_tables(c, &early, out)?;
    figures(c, &outcomes, &bests, &early, out)
}

/// `runs.csv`, `grid.csv` and `best.csv`; returns the best cells.
fn grid_tables(c: &Config, outcomes: &[Outcome], out: &mut Out) -> Result<Vec<Best>> {
    let mut df = tier::frame(vec![
        column("preset", outcomes.iter().map(|o| o.cell.preset.clone())),
        column("depth", outcomes.iter().map(|o| o.cell.depth as u64)),
        column(
            "optimizer",
            outcomes.iter().map(|o| o.cell.optimizer.clone()),
        ),
        column("lr", outcomes.iter().map(|o| o.cell.lr)),
        column("seed", outcomes.iter().map(|o| o.seed)),
        column("final_excess", outcomes.iter().map(|o| o.excess())),
        column("score", outcomes.iter().map(tier::score)),
        column("failed", outcomes.iter().map(|o| o.failed)),
        column("diverged", outcomes.iter().map(|o| o.diverged)),
    ])?;
    out.frame("runs.csv", &mut df)?;
    let mut g = tier::GroupTable::default();
    let mut bests = Vec::new();
    for p in &c.presets {
        for &d in &c.depths {
            for opt in OPTIMIZERS {
                let family: Vec<&Outcome> = outcomes
                    .iter()
                    .filter(|o| o.cell.preset == *p && o.cell.depth == d && o.cell.optimizer == opt)
                    .collect();
                let best = tier::best_lr(&family);
                for &lr in c.grid(opt) {
                    let runs: Vec<&Outcome> = family
                        .iter()
                        .copied()
                        .filter(|o| o.cell.lr.to_bits() == lr.to_bits())
                        .collect();
                    let scores: Vec<f64> = runs.iter().map(|o| tier::score(o)).collect();
                    let gr = tier::group(&runs, &scores, c.seed);
                    let is_best = lr.to_bits() == best.to_bits();
                    g.push(&cell(p, d, opt, lr), gr, is_best);
                    if is_best {
                        bests.push(Best {
                            preset: p.clone(),
                            depth: d,
                            optimizer: opt,
                            lr,
                            scores,
                            group: gr,
                        });
                    }
                }
            }
        }
    }
    out.frame("grid.csv", &mut g.frame("median_score")?)?;
    let mut t = Table::new(
        format!(
            "Adam against SGD with momentum {} at each optimizer's best learning rate (lowest median final excess loss on its grid), regression task, ReLU-MLP blocks, $d = {}$, {} updates, {} paired seeds. Failure counts and their Wilson 95\\% intervals are in \\texttt{{best.csv}}. Median final excess with bootstrap 95\\% intervals.",
            c.momentum, c.width, c.steps, c.seeds
        ),
        "tab:optimizers",
        &["opt.", "lr", "excess", "lo", "hi"],
    );
    for p in &c.presets {
        for &d in &c.depths {
            t.group(format!("{}, $L = {d}$", super::common::tex_label(p)));
            for b in bests.iter().filter(|b| b.preset == *p && b.depth == d) {
                t.row(vec![
                    // The caption says SGD is with momentum; the short name keeps a column.
                    Tex::Text(if b.optimizer == "adam" { "Adam" } else { "SGD" }.into()),
                    Tex::Text(super::regression_tier::lr_text(b.lr)),
                    Tex::Num(b.group.median),
                    Tex::Num(b.group.median_ci.0),
                    Tex::Num(b.group.median_ci.1),
                ]);
            }
        }
    }
    t.write(out, "best")?;
    Ok(bests)
}

/// `compare.csv`: SGD against Adam at their best learning rates per (preset, depth).
fn compare_table(c: &Config, bests: &[Best], out: &mut Out) -> Result<()> {
    let mut rows = Vec::new();
    for p in &c.presets {
        for &d in &c.depths {
            let get = |o: &str| {
                bests
                    .iter()
                    .find(|b| b.preset == *p && b.depth == d && b.optimizer == o)
                    .expect("every optimizer has a best cell")
            };
            let (a, s) = (get("adam"), get("sgd"));
            let pair = tier::paired(&s.scores, &a.scores, c.seed);
            let fisher = fisher::two_sided(s.group.failed, s.group.n, a.group.failed, a.group.n);
            rows.push((p.clone(), d, a, s, pair, fisher));
        }
    }
    let q_sign = holm::adjust(&rows.iter().map(|r| r.4.p).collect::<Vec<_>>());
    let q_fisher = holm::adjust(&rows.iter().map(|r| r.5).collect::<Vec<_>>());
    let mut df = tier::frame(vec![
        column("preset", rows.iter().map(|r| r.0.clone())),
        column("depth", rows.iter().map(|r| r.1 as u64)),
        column("adam_lr", rows.iter().map(|r| r.2.lr)),
        column("sgd_lr", rows.iter().map(|r| r.3.lr)),
        column("adam_median", rows.iter().map(|r| r.2.group.median)),
        column("sgd_median", rows.iter().map(|r| r.3.group.median)),
        column("diff_median", rows.iter().map(|r| r.4.median)),
        column("diff_lo", rows.iter().map(|r| r.4.ci.0)),
        column("diff_hi", rows.iter().map(|r| r.4.ci.1)),
        column("sgd_worse", rows.iter().map(|r| r.4.positive)),
        column("sgd_better", rows.iter().map(|r| r.4.negative)),
        column("p_sign", rows.iter().map(|r| r.4.p)),
        column("q_sign", q_sign),
        column("adam_failed", rows.iter().map(|r| r.2.group.failed)),
        column("sgd_failed", rows.iter().map(|r| r.3.group.failed)),
        column("n", rows.iter().map(|r| r.2.group.n)),
        column("p_fisher", rows.iter().map(|r| r.5)),
        column("q_fisher", q_fisher),
    ])?;
    out.frame("compare.csv", &mut df)
}

/// `early_blocks.csv` (per run, update and block), `early_runs.csv` (per run and update) and
/// `scaling.csv` (per cell and update: medians over seeds).
fn early_tables(c: &Config, early: &[Early], out: &mut Out) -> Result<()> {
    let rows: Vec<(&Early, &BlockStep)> = early
        .iter()
        .flat_map(|e| e.blocks.iter().map(move |b| (e, b)))
        .collect();
    let mut df = tier::frame(vec![
        column("preset", rows.iter().map(|r| r.0.cell.preset.clone())),
        column("depth", rows.iter().map(|r| r.0.cell.depth as u64)),
        column("optimizer", rows.iter().map(|r| r.0.cell.optimizer.clone())),
        column("lr", rows.iter().map(|r| r.0.cell.lr)),
        column("seed", rows.iter().map(|r| r.0.seed)),
        column("step", rows.iter().map(|r| r.1.step)),
        column("block", rows.iter().map(|r| r.1.block as u64)),
        column("grad_norm", rows.iter().map(|r| r.1.grad)),
        column("update_norm", rows.iter().map(|r| r.1.update)),
        column("weight_norm", rows.iter().map(|r| r.1.weight)),
        column("update_ratio", rows.iter().map(|r| r.1.update / r.1.weight)),
    ])?;
    out.frame("early_blocks.csv", &mut df)?;
    let per_run: Vec<(&Early, u64, f64, f64, f64)> = early
        .iter()
        .flat_map(|e| {
            e.outputs
                .iter()
                .map(move |&(s, step_change, change)| (e, s, slope(e, s), step_change, change))
        })
        .collect();
    let mut df = tier::frame(vec![
        column("preset", per_run.iter().map(|r| r.0.cell.preset.clone())),
        column("depth", per_run.iter().map(|r| r.0.cell.depth as u64)),
        column(
            "optimizer",
            per_run.iter().map(|r| r.0.cell.optimizer.clone()),
        ),
        column("lr", per_run.iter().map(|r| r.0.cell.lr)),
        column("seed", per_run.iter().map(|r| r.0.seed)),
        column("step", per_run.iter().map(|r| r.1)),
        column("slope", per_run.iter().map(|r| r.2)),
        column("output_step_change", per_run.iter().map(|r| r.3)),
        column("output_change", per_run.iter().map(|r| r.4)),
    ])?;
    out.frame("early_runs.csv", &mut df)?;
    let mut s = ScalingRows::default();
    for cl in distinct_cells(early) {
        let runs: Vec<&Early> = early.iter().filter(|e| e.cell == cl).collect();
        for step in 1..=c.early_steps {
            let at: Vec<&&Early> = runs
                .iter()
                .filter(|e| e.outputs.iter().any(|o| o.0 == step))
                .collect();
            let slopes = finite(at.iter().map(|e| slope(e, step)).collect());
            let (m, lo, hi) = bootstrap::median_interval(&slopes, c.seed);
            let med = |f: &dyn Fn(&Early) -> f64| {
                bootstrap::median(&finite(at.iter().map(|e| f(e)).collect()))
            };
            let ratio = |e: &Early| {
                bootstrap::median(&finite(
                    e.blocks
                        .iter()
                        .filter(|b| b.step == step)
                        .map(|b| b.update / b.weight)
                        .collect(),
                ))
            };
            let output = |i: usize| {
                move |e: &Early| {
                    e.outputs
                        .iter()
                        .find(|o| o.0 == step)
                        .map_or(f64::NAN, |o| if i == 0 { o.1 } else { o.2 })
                }
            };
            s.push(ScalingRow {
                cell: cl.clone(),
                step,
                runs: slopes.len() as u64,
                slope: (m, lo, hi),
                grad_decades: med(&|e| decades(e, step, |b| b.grad)),
                update_decades: med(&|e| decades(e, step, |b| b.update)),
                update_ratio: med(&ratio),
                output_step_change: med(&output(0)),
                output_change: med(&output(1)),
            });
        }
    }
    out.frame("scaling.csv", &mut s.frame()?)
}

fn distinct_cells(early: &[Early]) -> Vec<Cell> {
    let mut v: Vec<Cell> = Vec::new();
    for e in early {
        if !v.contains(&e.cell) {
            v.push(e.cell.clone());
        }
    }
    v
}

struct ScalingRow {
    cell: Cell,
    step: u64,
    runs: u64,
    slope: (f64, f64, f64),
    grad_decades: f64,
    update_decades: f64,
    update_ratio: f64,
    output_step_change: f64,
    output_change: f64,
}

#[derive(Default)]
struct ScalingRows(Vec<ScalingRow>);

impl ScalingRows {
    fn push(&mut self, r: ScalingRow) {
        self.0.push(r);
    }

    fn frame(&self) -> Result<polars::prelude::DataFrame> {
        let r = &self.0;
        tier::frame(vec![
            column("preset", r.iter().map(|x| x.cell.preset.clone())),
            column("depth", r.iter().map(|x| x.cell.depth as u64)),
            column("optimizer", r.iter().map(|x| x.cell.optimizer.clone())),
            column("lr", r.iter().map(|x| x.cell.lr)),
            column("step", r.iter().map(|x| x.step)),
            column("runs", r.iter().map(|x| x.runs)),
            column("slope", r.iter().map(|x| x.slope.0)),
            column("slope_lo", r.iter().map(|x| x.slope.1)),
            column("slope_hi", r.iter().map(|x| x.slope.2)),
            column("grad_decades", r.iter().map(|x| x.grad_decades)),
            column("update_decades", r.iter().map(|x| x.update_decades)),
            column("update_ratio", r.iter().map(|x| x.update_ratio)),
            column("output_step_change", r.iter().map(|x| x.output_step_change)),
            column("output_change", r.iter().map(|x| x.output_change)),
        ])
    }
}

fn series_color(c: &Config, preset: &str, opt: &str) -> usize {
    let p = c.presets.iter().position(|x| x == preset).unwrap_or(0);
    (p + c.presets.len() * usize::from(opt == "sgd")) % 7
}

fn series_label(preset: &str, opt: &str) -> String {
    format!("{}, {}", super::common::label(preset), opt_label(opt))
}

fn figures(
    c: &Config,
    outcomes: &[Outcome],
    bests: &[Best],
    early: &[Early],
    out: &mut Out,
) -> Result<()> {
    let deep = super::common::deepest(&c.depths);
    let setting = format!("regression, L = {deep}, d = {}, {} seeds", c.width, c.seeds);
    // Update norm against gradient norm per block at the first update (medians over seeds).
    let mut uv = LinePlot::new(
        &format!("Per-block update vs gradient at update {SLOPE_STEP} ({setting}; best lr)"),
        "||g_l||",
        "||Δθ_l||",
    );
    uv.y_log = true;
    let mut sl = LinePlot::new(
        &format!("Slope of ln||Δθ_l|| on ln||g_l|| across blocks ({setting})"),
        "update t",
        "slope",
    );
    sl.x_log = false;
    let mut oc = LinePlot::new(
        &format!("Output change per update on the probe batch ({setting})"),
        "update t",
        "||f_t - f_{t-1}||",
    );
    oc.x_log = false;
    oc.y_log = true;
    for p in &c.presets {
        for opt in OPTIMIZERS {
            let runs: Vec<&Early> = early
                .iter()
                .filter(|e| e.cell.preset == *p && e.cell.depth == deep && e.cell.optimizer == opt)
                .collect();
            let (color, label) = (series_color(c, p, opt), series_label(p, opt));
            let pts: Vec<(f64, f64, f64, f64)> = (1..=deep)
                .filter_map(|l| {
                    let at = |f: fn(&BlockStep) -> f64| {
                        finite(
                            runs.iter()
                                .flat_map(|e| e.blocks.iter())
                                .filter(|b| b.step == SLOPE_STEP && b.block == l)
                                .map(f)
                                .collect(),
                        )
                    };
                    let (g, u) = (at(|b| b.grad), at(|b| b.update));
                    let (m, lo, hi) = bootstrap::median_interval(&u, c.seed);
                    let x = bootstrap::median(&g);
                    (x > 0.0 && m > 0.0 && lo > 0.0).then_some((x, m, lo, hi))
                })
                .collect::<Vec<_>>();
            let mut pts = pts;
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            uv.series.push(Series::points(label.clone(), color, &pts));
            let mut slopes = Vec::new();
            let mut changes = Vec::new();
            for step in 1..=c.early_steps {
                let v = finite(runs.iter().map(|e| slope(e, step)).collect());
                let (m, lo, hi) = bootstrap::median_interval(&v, c.seed);
                if m.is_finite() && lo.is_finite() {
                    slopes.push((step as f64, m, lo, hi));
                }
                let o = finite(
                    runs.iter()
                        .filter_map(|e| e.outputs.iter().find(|o| o.0 == step).map(|o| o.1))
                        .collect(),
                );
                let m = bootstrap::median(&o);
                if m > 0.0 {
                    changes.push((step as f64, m));
                }
            }
            sl.series
                .push(Series::points(label.clone(), color, &slopes));
            oc.series.push(Series::line(label, color, changes));
        }
    }
    out.figure("update_vs_grad", &uv)?;
    out.figure("slope_vs_step", &sl)?;
    out.figure("output_step_change", &oc)?;
    // Failure rate against the learning rate at the deepest depth, and the best excess vs depth.
    let mut fr = LinePlot::new(
        &format!("Failure rate against lr, Wilson 95% ({setting})"),
        "learning rate",
        "failure rate",
    );
    let mut ex = LinePlot::new(
        &format!(
            "Median final excess at each optimizer's best lr (regression, d = {}, {} seeds)",
            c.width, c.seeds
        ),
        "blocks L",
        "final excess loss",
    );
    ex.y_log = true;
    for p in &c.presets {
        for opt in OPTIMIZERS {
            let (color, label) = (series_color(c, p, opt), series_label(p, opt));
            let pts: Vec<(f64, f64, f64, f64)> = c
                .grid(opt)
                .iter()
                .map(|&lr| {
                    let runs: Vec<&Outcome> = outcomes
                        .iter()
                        .filter(|o| o.cell == cell(p, deep, opt, lr))
                        .collect();
                    let k = runs.iter().filter(|o| o.failed).count() as u64;
                    let n = runs.len() as u64;
                    let (lo, hi) = crate::stats::wilson::interval(k, n);
                    (lr, k as f64 / n as f64, lo, hi)
                })
                .collect();
            fr.series.push(Series::points(label.clone(), color, &pts));
            let pts: Vec<(f64, f64, f64, f64)> = bests
                .iter()
                .filter(|b| b.preset == *p && b.optimizer == opt)
                .filter(|b| b.group.median_ci.0 > 0.0)
                .map(|b| {
                    (
                        b.depth as f64,
                        b.group.median,
                        b.group.median_ci.0,
                        b.group.median_ci.1,
                    )
                })
                .collect();
            ex.series.push(Series::points(label, color, &pts));
        }
    }
    out.figure("failure_vs_lr", &fr)?;
    out.figure("excess_at_best_lr", &ex)
}

/// Claim 7's inputs, read back from the tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// `(preset, depth, optimizer, slope median, lo, hi)` at [`SLOPE_STEP`].
    pub slopes: Vec<(String, u64, String, f64, f64, f64)>,
    /// `(depth, median score_SGD - score_Adam, lo, hi, Holm q)` for [`RESCUED`].
    pub rescue: Vec<(u64, f64, f64, f64, f64)>,
}

/// The rule text, from the constants.
pub fn rule() -> String {
    format!(
        "supported if, at update {SLOPE_STEP}, the median (over seeds) slope of ln||update_l|| on ln||grad_l|| across blocks has a bootstrap 95% interval inside [-{SLOPE_TOL}, {SLOPE_TOL}] for Adam and inside [1 - {SLOPE_TOL}, 1 + {SLOPE_TOL}] for SGD with momentum in every (preset, depth), and {RESCUED} at each optimizer's best lr ends with a lower final excess under Adam than under SGD (median paired difference SGD - Adam > 0, sign test Holm-corrected over the (preset, depth) comparisons, q < {ALPHA}) at every depth; conditional (naming the depths) if the slopes hold and the rescue holds at some depths; refuted otherwise"
    )
}

/// The verdict from the evidence ([`rule`]).
pub fn verdict(e: &Evidence) -> String {
    let inside = |lo: f64, hi: f64, a: f64, b: f64| lo >= a && hi <= b;
    let slopes_hold = !e.slopes.is_empty()
        && e.slopes.iter().all(|(_, _, opt, _, lo, hi)| {
            if opt == "adam" {
                inside(*lo, *hi, -SLOPE_TOL, SLOPE_TOL)
            } else {
                inside(*lo, *hi, 1.0 - SLOPE_TOL, 1.0 + SLOPE_TOL)
            }
        });
    let rescued: Vec<u64> = e
        .rescue
        .iter()
        .filter(|r| r.1 > 0.0 && r.4 < ALPHA)
        .map(|r| r.0)
        .collect();
    if !slopes_hold || rescued.is_empty() {
        "refuted".into()
    } else if rescued.len() == e.rescue.len() {
        "supported".into()
    } else {
        format!(
            "conditional: Adam rescues {} only at L = {}",
            super::common::label(RESCUED),
            rescued
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Reads the evidence from `data/optimizers/`.
fn evidence(d: &super::claims::Data) -> Result<Evidence> {
    let s = d.frame("optimizers/scaling.csv")?;
    let (preset, opt) = (tier::strs(&s, "preset")?, tier::strs(&s, "optimizer")?);
    let (depth, step) = (tier::f64s(&s, "depth")?, tier::f64s(&s, "step")?);
    let (m, lo, hi) = (
        tier::f64s(&s, "slope")?,
        tier::f64s(&s, "slope_lo")?,
        tier::f64s(&s, "slope_hi")?,
    );
    let slopes = (0..s.height())
        .filter(|&i| step[i] as u64 == SLOPE_STEP)
        .map(|i| {
            (
                preset[i].clone(),
                depth[i] as u64,
                opt[i].clone(),
                m[i],
                lo[i],
                hi[i],
            )
        })
        .collect();
    let c = d.frame("optimizers/compare.csv")?;
    let preset = tier::strs(&c, "preset")?;
    let cols = ["depth", "diff_median", "diff_lo", "diff_hi", "q_sign"]
        .iter()
        .map(|n| tier::f64s(&c, n))
        .collect::<Result<Vec<_>>>()?;
    let rescue = (0..c.height())
        .filter(|&i| preset[i] == RESCUED)
        .map(|i| {
            (
                cols[0][i] as u64,
                cols[1][i],
                cols[2][i],
                cols[3][i],
                cols[4][i],
            )
        })
        .collect();
    Ok(Evidence { slopes, rescue })
}

/// Claim 7's ledger line.
// Wired into the ledger by claims.rs (the lead's part); until then only the tests call it.
pub(crate) fn claim(d: &super::claims::Data) -> Result<super::claims::Claim> {
    let e = evidence(d)?;
    let slopes = |opt: &str| {
        e.slopes
            .iter()
            .filter(|s| s.2 == opt)
            .map(|s| {
                format!(
                    "{} L = {}: {} [{}, {}]",
                    super::common::label(&s.0),
                    s.1,
                    plain(s.3),
                    plain(s.4),
                    plain(s.5)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let rescue = e
        .rescue
        .iter()
        .map(|r| {
            format!(
                "L = {}: {} [{}, {}], q = {}",
                r.0,
                plain(r.1),
                plain(r.2),
                plain(r.3),
                plain(r.4)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok(super::claims::Claim {
        id: 7,
        statement: "Adam's update is O(1) whatever the gradient's scale, which rescues Post-Norm from small gradients; SGD's update is proportional to the gradient.",
        seeds: "002",
        data: "optimizers/scaling.csv, optimizers/compare.csv",
        measurement: format!(
            "slope of ln||update|| on ln||grad|| across blocks at update {SLOPE_STEP} (median over seeds [95% CI]): Adam {}; SGD {}. {} final excess, SGD - Adam at each one's best lr (median paired difference [95% CI], Holm q): {}",
            slopes("adam"),
            slopes("sgd"),
            super::common::label(RESCUED),
            rescue
        ),
        rule: rule(),
        verdict: verdict(&e),
        trained: None,
        finite_width: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(adam: (f64, f64), sgd: (f64, f64), rescue: &[(f64, f64)]) -> Evidence {
        Evidence {
            slopes: vec![
                ("post".into(), 6, "adam".into(), 0.0, adam.0, adam.1),
                ("post".into(), 6, "sgd".into(), 1.0, sgd.0, sgd.1),
            ],
            rescue: rescue
                .iter()
                .enumerate()
                .map(|(i, &(diff, q))| (6 * (i as u64 + 1), diff, diff, diff, q))
                .collect(),
        }
    }

    #[test]
    fn verdict_follows_the_rule() {
        let ok = ((-0.01, 0.01), (0.99, 1.01));
        let e = evidence(ok.0, ok.1, &[(0.2, 0.001), (0.3, 0.01)]);
        assert_eq!(verdict(&e), "supported");
        // The rescue at one depth only.
        let e = evidence(ok.0, ok.1, &[(0.2, 0.001), (0.3, ALPHA)]);
        assert_eq!(
            verdict(&e),
            "conditional: Adam rescues Post-LN only at L = 6"
        );
        // SGD better, or no significant difference: refuted.
        assert_eq!(verdict(&evidence(ok.0, ok.1, &[(-0.2, 0.001)])), "refuted");
        assert_eq!(verdict(&evidence(ok.0, ok.1, &[(0.2, 0.2)])), "refuted");
        // Adam's slope interval leaving the band, or SGD's, refutes.
        let rescue = [(0.2, 0.001)];
        assert_eq!(
            verdict(&evidence((-0.01, SLOPE_TOL + 0.01), ok.1, &rescue)),
            "refuted"
        );
        assert_eq!(verdict(&evidence(ok.0, (0.8, 1.0), &rescue)), "refuted");
        assert!(rule().contains(&SLOPE_TOL.to_string()));
    }
}
