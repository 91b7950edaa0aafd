//! `warmup` (issue 12 item 1, claim 6; Xiong et al. 2020, arXiv:2002.04745): Adam on the
//! regression tier (a residual ReLU-MLP student of a random teacher, TRAINING.md section 2)
//! over a grid of preset x depth x peak learning rate (half-decade log grid) x linear-warmup
//! length, with paired seeds `0..seeds` (every cell trains from the same seeds).
//!
//! Statistics, fixed before the numbers (issue 12; TRAINING.md section 3):
//!
//! - a run *fails* by [`sweep::FAIL_FRACTION`]'s rule (diverged, or its final evaluation loss
//!   has not closed a tenth of the gap from the context-free loss to the floor);
//! - per cell, the failure rate `k/n` with its Wilson 95% interval (`rates.csv`);
//! - for every (preset, depth, lr), warmup 0 against `test_warmup` by Fisher's exact test,
//!   Holm-corrected over all those comparisons (`tests.csv`);
//! - the maximum stable learning rate of each (preset, depth, warmup, seed): bracketed by the
//!   grid ([`sweep::grid_bracket`]: the largest grid value with every smaller one stable, and
//!   the next one), then [`sweep::bisect`] with `bisect_iters` halvings of the log-bracket, so
//!   the resolution is a factor `r^(2^-k)` for a grid ratio `r` (half-decade grid, k = 2:
//!   `10^(1/8) = 1.33`); seeds failing at the grid's smallest lr are censored `below`, seeds
//!   stable at its largest `above` (`max_stable_lr.csv`);
//! - per (preset, depth, warmup), the median of the seeds' values with censored seeds at the
//!   bracket's end (a seed censored below is below every bracketed one, one censored above is
//!   above, so the order statistics, hence the median, are exact while fewer than half the
//!   seeds are censored on either side: [`censored_median`]), and its seeded bootstrap 95%
//!   interval (`max_stable_summary.csv`).
//!
//! Claim 6's verdict ([`verdict`]) uses `tests.csv` with the rule of [`rule`].

use super::claims::{Claim, Data};
use super::{Analysis, Out, common};
use crate::model::RawModel;
use crate::output::figure::{LinePlot, Series, tick};
use crate::output::heatmap::{Heatmap, Panel};
use crate::output::latex::{self, Table, plain as sig};
use crate::output::table::column;
use crate::spec::NormKind;
use crate::stats::{bootstrap, fisher, holm, wilson};
use crate::train::config::RawTrain;
use crate::train::sweep::{self, Cell, Censor, MaxStable, Outcome};
use crate::train::task::{TaskConfig, TaskKind};
use crate::{Error, Result};
use polars::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "warmup",
    about: "Adam with and without learning-rate warmup: failure rates, maximum stable lr against depth, claim 6",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: Some(
        "one (preset, depth, seed): its grid runs over every (warmup, lr) and its bisections for the maximum stable lr",
    ),
};

/// Claim 6: a difference between warmup 0 and `test_warmup` is significant when its
/// Holm-adjusted Fisher p-value is below this.
pub const ALPHA: f64 = 0.05;
/// Claim 6: the preset the claim says needs warmup.
pub const NEEDS_WARMUP: &str = "post";
/// Claim 6: the preset the claim contrasts it with (trains without warmup).
pub const NO_WARMUP_NEEDED: &str = "pre";

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<String>,
    /// Blocks L.
    pub depths: Vec<usize>,
    /// Peak learning rates, increasing (a log grid).
    pub lrs: Vec<f64>,
    /// Linear-warmup lengths in updates; must include 0.
    pub warmups: Vec<u64>,
    /// Warmup lengths whose maximum stable lr is bisected (each one of `warmups`).
    pub bisect_warmups: Vec<u64>,
    /// The warmup compared with 0 by Fisher's test (one of `warmups`, not 0).
    pub test_warmup: u64,
    /// Halvings of the log-bracket per bisection.
    pub bisect_iters: u32,
    /// Paired seeds `0..seeds`.
    pub seeds: u64,
    /// Branch.
    pub branch: String,
    /// Init scheme.
    pub init: String,
    /// Width d.
    pub width: usize,
    /// Task.
    pub task: String,
    /// Optimizer.
    pub optimizer: String,
    /// Updates per run.
    pub steps: u64,
    /// Batch size.
    pub batch: usize,
    /// Evaluation interval.
    pub eval_every: u64,
    /// Evaluation batches.
    pub eval_batches: usize,
    /// Teacher, evaluation set and bootstrap seed.
    pub seed: u64,
}

impl Config {
    /// The network at depth `depth` (the one every cell trains; `stability-law` evaluates
    /// its closed form).
    pub fn model(&self, depth: usize) -> RawModel {
        RawModel {
            depth,
            branch: self.branch.clone(),
            init: self.init.clone(),
            width: self.width,
            norm: NormKind::Layer,
            ..RawTrain::default().model
        }
    }

    /// The base request every cell of the sweep modifies.
    fn raw(&self) -> Result<RawTrain> {
        let d = RawTrain::default();
        Ok(RawTrain {
            presets: self.presets.join(","),
            model: self.model(self.depths.first().copied().unwrap_or(1)),
            task: TaskConfig {
                kind: TaskKind::parse(&self.task)?,
                teacher_seed: self.seed,
                ..d.task
            },
            optimizer: self.optimizer.clone(),
            lr: self.lrs.first().copied().unwrap_or(f64::NAN),
            warmup: 0,
            steps: self.steps,
            batch: self.batch,
            seeds: format!("0..{}", self.seeds),
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            log_every: self.steps,
            ..d
        })
    }

    fn cell(&self, preset: &str, depth: usize, lr: f64, warmup: u64) -> Cell {
        Cell {
            preset: preset.into(),
            depth,
            optimizer: self.optimizer.clone(),
            lr,
            warmup,
        }
    }

    /// Every grid cell, in (preset, depth, warmup, lr) order.
    fn cells(&self) -> Vec<Cell> {
        let mut v = Vec::new();
        for p in &self.presets {
            for &l in &self.depths {
                for &w in &self.warmups {
                    for &lr in &self.lrs {
                        v.push(self.cell(p, l, lr, w));
                    }
                }
            }
        }
        v
    }

    fn seed_list(&self) -> Vec<u64> {
        (0..self.seeds).collect()
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: [
                "pre", "post", "deepnorm", "admin", "sandwich", "lns", "rezero",
            ]
            .map(String::from)
            .to_vec(),
            depths: vec![6, 12, 24, 48],
            lrs: vec![1e-3, 3e-3, 1e-2, 3e-2, 1e-1],
            warmups: vec![0, 20, 100],
            bisect_warmups: vec![0, 100],
            test_warmup: 100,
            bisect_iters: 2,
            seeds: 20,
            branch: "relu-mlp".into(),
            init: RawModel::default().init,
            width: 16,
            task: "regression".into(),
            optimizer: "adam".into(),
            steps: 200,
            batch: 16,
            eval_every: 25,
            eval_batches: 4,
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm"].map(String::from).to_vec(),
            depths: vec![4, 8],
            lrs: vec![3e-3, 3e-2],
            warmups: vec![0, 20],
            bisect_warmups: vec![0, 20],
            test_warmup: 20,
            seeds: 4,
            steps: 100,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        let list = |field: &'static str, empty: bool, v: String| {
            if empty {
                Err(Error::invalid(field, v, "a non-empty list"))
            } else {
                Ok(())
            }
        };
        list("warmup.presets", self.presets.is_empty(), "[]".into())?;
        common::check_depths("warmup.depths", &self.depths)?;
        list("warmup.lrs", self.lrs.is_empty(), "[]".into())?;
        if self.lrs.iter().any(|x| !x.is_finite() || *x <= 0.0)
            || self.lrs.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(Error::invalid(
                "warmup.lrs",
                format!("{:?}", self.lrs),
                "finite learning rates > 0 in increasing order",
            ));
        }
        if !self.warmups.contains(&0) {
            return Err(Error::invalid(
                "warmup.warmups",
                format!("{:?}", self.warmups),
                "a list of warmup lengths that includes 0 (the arm without warmup)",
            ));
        }
        if self.test_warmup == 0 || !self.warmups.contains(&self.test_warmup) {
            return Err(Error::invalid(
                "warmup.test_warmup",
                self.test_warmup,
                "one of `warmups` other than 0",
            ));
        }
        if let Some(w) = self
            .bisect_warmups
            .iter()
            .find(|w| !self.warmups.contains(w))
        {
            return Err(Error::invalid(
                "warmup.bisect_warmups",
                w,
                "values from `warmups` (the grid brackets the bisection)",
            ));
        }
        if self.seeds == 0 {
            return Err(Error::invalid("warmup.seeds", 0, "an integer >= 1"));
        }
        let base = self.raw()?;
        for c in self.cells() {
            c.config(&base, 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        let mut s = vec![self.seed];
        s.extend(self.seed_list());
        s
    }
}

/// Where the median of a cell's seeds lies, given censored seeds (see [`censored_median`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MedianCensor {
    /// Fewer than half the seeds censored on either side: the median is a bracketed value.
    None,
    /// At least half the seeds fail at the grid's smallest lr: the median is an upper bound.
    Below,
    /// At least half the seeds are stable at the grid's largest lr: a lower bound.
    Above,
}

impl MedianCensor {
    /// `none`, `below`, `above`.
    pub fn name(self) -> &'static str {
        match self {
            MedianCensor::None => "none",
            MedianCensor::Below => "below",
            MedianCensor::Above => "above",
        }
    }
}

/// The median of per-seed maximum stable learning rates `(lr, censor)`, censored seeds at
/// their bracket's end, and whether it is censored: `Below` if `2 k_below >= n`, `Above` if
/// `2 k_above >= n` (then the middle order statistics include a bound), else `None`.
pub fn censored_median(v: &[(f64, Censor)]) -> (f64, MedianCensor) {
    let lrs: Vec<f64> = v.iter().map(|x| x.0).collect();
    let count = |c: Censor| v.iter().filter(|x| x.1 == c).count();
    let n = v.len();
    let status = if 2 * count(Censor::Below) >= n && n > 0 {
        MedianCensor::Below
    } else if 2 * count(Censor::Above) >= n && n > 0 {
        MedianCensor::Above
    } else {
        MedianCensor::None
    };
    (bootstrap::median(&lrs), status)
}

/// One warmup-0 against `test_warmup` comparison of `tests.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// Preset.
    pub preset: String,
    /// Blocks L.
    pub depth: u64,
    /// Peak learning rate.
    pub lr: f64,
    /// Failures without warmup.
    pub k_none: u64,
    /// Failures with the tested warmup.
    pub k_warm: u64,
    /// Seeds per arm.
    pub n: u64,
    /// Holm-adjusted two-sided Fisher p-value.
    pub q: f64,
}

impl Test {
    /// Warmup lowers the failure rate significantly: `k_warm < k_none` and `q <` [`ALPHA`].
    pub fn rescued(&self) -> bool {
        self.k_warm < self.k_none && self.q < ALPHA
    }

    fn text(&self) -> String {
        format!(
            "L = {}, lr = {}: {}/{} vs {}/{} (Holm p = {})",
            self.depth,
            sig(self.lr),
            self.k_none,
            self.n,
            self.k_warm,
            self.n,
            sig(self.q)
        )
    }
}

/// Claim 6's rule, printed from the constants.
pub fn rule(warm: u64) -> String {
    format!(
        "a (preset, L, lr) cell is rescued by warmup if warmup {warm} has fewer failures than warmup 0 with Holm-adjusted Fisher p < {ALPHA} (Holm over every preset x L x lr comparison); supported if {} is rescued at some lr at every depth tested and {} is rescued nowhere; refuted if {} is rescued nowhere; conditional otherwise (naming where)",
        common::label(NEEDS_WARMUP),
        common::label(NO_WARMUP_NEEDED),
        common::label(NEEDS_WARMUP),
    )
}

/// Claim 6's verdict and measurement from the comparisons (see [`rule`]).
pub fn verdict(tests: &[Test], warm: u64) -> (String, String) {
    let of = |p: &str| -> Vec<&Test> { tests.iter().filter(|t| t.preset == p).collect() };
    let (post, pre) = (of(NEEDS_WARMUP), of(NO_WARMUP_NEEDED));
    let rescued = |v: &[&Test]| -> Vec<Test> {
        v.iter()
            .filter(|t| t.rescued())
            .map(|t| (*t).clone())
            .collect()
    };
    let (post_r, pre_r) = (rescued(&post), rescued(&pre));
    let mut depths: Vec<u64> = post.iter().map(|t| t.depth).collect();
    depths.sort_unstable();
    depths.dedup();
    let missing: Vec<u64> = depths
        .iter()
        .copied()
        .filter(|l| !post_r.iter().any(|t| t.depth == *l))
        .collect();
    let list = |v: &[Test]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(Test::text).collect::<Vec<_>>().join("; ")
        }
    };
    let (npost, npre) = (common::label(NEEDS_WARMUP), common::label(NO_WARMUP_NEEDED));
    let measurement = format!(
        "failures without vs with warmup {warm} where warmup rescues significantly: {npost}: {}; {npre}: {}",
        list(&post_r),
        list(&pre_r)
    );
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let verdict = if post.is_empty() || post_r.is_empty() {
        "refuted".to_string()
    } else if missing.is_empty() && pre_r.is_empty() {
        "supported".to_string()
    } else {
        let mut when = vec![format!(
            "warmup rescues {npost} at L = {}",
            join(
                &depths
                    .iter()
                    .copied()
                    .filter(|l| !missing.contains(l))
                    .collect::<Vec<_>>()
            )
        )];
        if !missing.is_empty() {
            when.push(format!("not at L = {}", join(&missing)));
        }
        if !pre_r.is_empty() {
            let cells: Vec<String> = pre_r
                .iter()
                .map(|t| format!("L = {} lr = {}", t.depth, sig(t.lr)))
                .collect();
            when.push(format!("{npre} also needs it at {}", cells.join(", ")));
        }
        format!("conditional: {}", when.join("; "))
    };
    (measurement, verdict)
}

/// Text column `name` of `df`.
pub(crate) fn strs(df: &DataFrame, name: &str) -> Result<Vec<String>> {
    Ok(df
        .column(name)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|x| x.unwrap_or_default().to_string())
        .collect())
}

/// Numeric column `name` of `df` (empty cells NaN).
pub(crate) fn f64s(df: &DataFrame, name: &str) -> Result<Vec<f64>> {
    Ok(df
        .column(name)?
        .cast(&DataType::Float64)?
        .f64()?
        .iter()
        .map(|x| x.unwrap_or(f64::NAN))
        .collect())
}

/// Claim 6 from `warmup/tests.csv`, for the ledger.
// Called by the claims ledger, which the lead wires.
pub(crate) fn claim(d: &Data) -> Result<Claim> {
    let df = d.frame("warmup/tests.csv")?;
    let (p, l, lr) = (strs(&df, "preset")?, f64s(&df, "depth")?, f64s(&df, "lr")?);
    let (k0, kw, n, q) = (
        f64s(&df, "failures_no_warmup")?,
        f64s(&df, "failures_warmup")?,
        f64s(&df, "n")?,
        f64s(&df, "holm_p")?,
    );
    let warm = f64s(&df, "warmup")?.first().copied().unwrap_or(0.0) as u64;
    let tests: Vec<Test> = (0..df.height())
        .map(|i| Test {
            preset: p[i].clone(),
            depth: l[i] as u64,
            lr: lr[i],
            k_none: k0[i] as u64,
            k_warm: kw[i] as u64,
            n: n[i] as u64,
            q: q[i],
        })
        .collect();
    let (measurement, verdict) = verdict(&tests, warm);
    Ok(Claim {
        id: 6,
        statement: "Post-LN's gradients near the output are large at init, so learning-rate warmup is essential (Xiong et al. 2020).",
        seeds: "001, 002",
        data: "warmup/tests.csv",
        measurement: format!("Adam, regression tier, paired seeds: {measurement}"),
        rule: rule(warm),
        verdict,
        trained: None,
        finite_width: String::new(),
    })
}

/// The outcomes of one (preset, depth, warmup, lr) cell.
fn of_cell<'a>(o: &'a [Outcome], c: &'a Cell) -> impl Iterator<Item = &'a Outcome> + 'a {
    o.iter().filter(move |x| x.cell == *c)
}

/// One work unit (see [`super::shard`]): a (preset, depth, seed) with its grid runs over
/// every (warmup, lr) and its bisections for the maximum stable lr at `bisect_warmups`.
#[derive(Clone)]
struct Unit {
    preset: String,
    depth: usize,
    seed: u64,
}

/// What one [`Unit`] computes: its grid outcomes in (warmup, lr) order and its bisections in
/// `bisect_warmups` order.
type UnitResult = (Vec<Outcome>, Vec<MaxStable>);

/// The grid runs and bisections of `units`, one result per unit. Runs depend on their
/// (cell, seed) alone, so any subset of units gives the same results.
fn compute(c: &Config, base: &RawTrain, units: &[Unit]) -> Result<Vec<UnitResult>> {
    let cells_of = |u: &Unit| -> Vec<Cell> {
        let mut v = Vec::new();
        for &w in &c.warmups {
            for &lr in &c.lrs {
                v.push(c.cell(&u.preset, u.depth, lr, w));
            }
        }
        v
    };
    let cells: Vec<Vec<Cell>> = units.iter().map(cells_of).collect();
    let jobs: Vec<(&Cell, u64)> = units
        .iter()
        .zip(&cells)
        .flat_map(|(u, cs)| cs.iter().map(move |cell| (cell, u.seed)))
        .collect();
    let flat = sweep::run_jobs(base, &jobs, &())?;
    let grids: Vec<&[Outcome]> = flat.chunks(c.warmups.len() * c.lrs.len()).collect();
    // Maximum stable lr: grid bracket, then bisection.
    let mut brackets = Vec::new();
    for (u, grid) in units.iter().zip(&grids) {
        for &w in &c.bisect_warmups {
            let g: Vec<(f64, bool)> = c
                .lrs
                .iter()
                .map(|&lr| {
                    let cell = c.cell(&u.preset, u.depth, lr, w);
                    let o = grid.iter().find(|o| o.cell == cell);
                    (lr, o.is_none_or(|o| o.failed))
                })
                .collect();
            let first = c.cell(&u.preset, u.depth, c.lrs[0], w);
            brackets.push(sweep::grid_bracket(&first, u.seed, &g));
        }
    }
    let found = sweep::bisect(base, &brackets, c.bisect_iters, &())?;
    Ok(grids
        .iter()
        .zip(found.chunks(c.bisect_warmups.len()))
        .map(|(g, f)| (g.to_vec(), f.to_vec()))
        .collect())
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let base = c.raw()?;
    let seeds = c.seed_list();
    let cells = c.cells();
    let mut units = Vec::new();
    for p in &c.presets {
        for &depth in &c.depths {
            for &seed in &seeds {
                units.push(Unit {
                    preset: p.clone(),
                    depth,
                    seed,
                });
            }
        }
    }
    // A unit's cost: its runs (grid and bisection), each proportional to the depth.
    let runs = c.warmups.len() * c.lrs.len() + c.bisect_warmups.len() * c.bisect_iters as usize;
    let cost = |u: &Unit| (u.depth * runs) as f64;
    let results = out.units("grid", &units, cost, |mine| compute(c, &base, mine))?;
    let at = |p: &str, depth: usize, seed: u64| -> &UnitResult {
        let i = units
            .iter()
            .position(|u| u.preset == p && u.depth == depth && u.seed == seed)
            .expect("every (preset, depth, seed) is a unit");
        &results[i]
    };
    // The grid's outcomes in (cell, seed) order, the bisections in (preset, depth, warmup,
    // seed) order.
    let mut outcomes: Vec<Outcome> = Vec::new();
    for cell in &cells {
        for &s in &seeds {
            let o = at(&cell.preset, cell.depth, s)
                .0
                .iter()
                .find(|o| o.cell == *cell);
            outcomes.push(o.expect("every grid cell ran").clone());
        }
    }
    let mut found = Vec::new();
    for p in &c.presets {
        for &l in &c.depths {
            for k in 0..c.bisect_warmups.len() {
                for &s in &seeds {
                    found.push(at(p, l, s).1[k].clone());
                }
            }
        }
    }
    let n = seeds.len() as u64;
    let failures = |cell: &Cell| of_cell(&outcomes, cell).filter(|o| o.failed).count() as u64;
    rates(out, &outcomes, &cells)?;
    heatmaps(c, out, &failures)?;
    tests(c, out, &failures, n)?;
    max_stable(c, out, &found)
}

fn rates(out: &mut Out, outcomes: &[Outcome], cells: &[Cell]) -> Result<()> {
    let mut cols: (Vec<String>, Vec<u64>, Vec<u64>, Vec<f64>) = Default::default();
    let mut counts: (Vec<u64>, Vec<u64>, Vec<u64>) = Default::default();
    let mut stats: (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) = Default::default();
    for cell in cells {
        let v: Vec<&Outcome> = of_cell(outcomes, cell).collect();
        let (k, dv, n) = (
            v.iter().filter(|o| o.failed).count() as u64,
            v.iter().filter(|o| o.diverged).count() as u64,
            v.len() as u64,
        );
        let (lo, hi) = wilson::interval(k, n);
        let mut ex: Vec<f64> = v
            .iter()
            .map(|o| o.excess())
            .filter(|x| x.is_finite())
            .collect();
        ex.sort_by(f64::total_cmp);
        cols.0.push(cell.preset.clone());
        cols.1.push(cell.depth as u64);
        cols.2.push(cell.warmup);
        cols.3.push(cell.lr);
        counts.0.push(k);
        counts.1.push(dv);
        counts.2.push(n);
        stats.0.push(k as f64 / n.max(1) as f64);
        stats.1.push(lo);
        stats.2.push(hi);
        stats.3.push(if ex.is_empty() {
            0.0
        } else {
            bootstrap::median(&ex)
        });
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", cols.0),
        column("depth", cols.1),
        column("warmup", cols.2),
        column("lr", cols.3),
        column("failures", counts.0),
        column("diverged", counts.1),
        column("n", counts.2),
        column("rate", stats.0),
        column("wilson_lo", stats.1),
        column("wilson_hi", stats.2),
        column("median_final_excess", stats.3),
    ])?;
    out.frame("rates.csv", &mut df)
}

fn heatmaps(c: &Config, out: &mut Out, failures: &dyn Fn(&Cell) -> u64) -> Result<()> {
    let n = c.seeds as f64;
    for p in &c.presets {
        let panels = c
            .warmups
            .iter()
            .map(|&w| Panel {
                title: format!("{}, warmup {w}", common::label(p)),
                cells: c
                    .lrs
                    .iter()
                    .enumerate()
                    .flat_map(|(i, &lr)| {
                        c.depths
                            .iter()
                            .enumerate()
                            .map(move |(j, &l)| (i, j, lr, l))
                    })
                    .map(|(i, j, lr, l)| {
                        (
                            i as u64,
                            j as u64,
                            failures(&c.cell(p, l, lr, w)) as f64 / n,
                        )
                    })
                    .collect(),
            })
            .collect();
        out.figure(
            &format!("failure_rate_{p}"),
            &Heatmap {
                x_label: "peak learning rate".into(),
                y_label: "depth L".into(),
                value_label: format!("failure rate ({} seeds)", c.seeds),
                log10_range: (0.0, 0.0),
                panels,
                x_ticks: c.lrs.iter().map(|&x| tick(x)).collect(),
                y_ticks: c.depths.iter().map(usize::to_string).collect(),
                linear: Some((0.0, 1.0)),
            },
        )?;
    }
    Ok(())
}

fn tests(c: &Config, out: &mut Out, failures: &dyn Fn(&Cell) -> u64, n: u64) -> Result<()> {
    let mut t = Vec::new();
    for p in &c.presets {
        for &l in &c.depths {
            for &lr in &c.lrs {
                t.push(Test {
                    preset: p.clone(),
                    depth: l as u64,
                    lr,
                    k_none: failures(&c.cell(p, l, lr, 0)),
                    k_warm: failures(&c.cell(p, l, lr, c.test_warmup)),
                    n,
                    q: f64::NAN,
                });
            }
        }
    }
    let p: Vec<f64> = t
        .iter()
        .map(|x| fisher::two_sided(x.k_none, x.n, x.k_warm, x.n))
        .collect();
    for (x, q) in t.iter_mut().zip(holm::adjust(&p)) {
        x.q = q;
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", t.iter().map(|x| x.preset.clone())),
        column("depth", t.iter().map(|x| x.depth)),
        column("lr", t.iter().map(|x| x.lr)),
        column("warmup", t.iter().map(|_| c.test_warmup)),
        column("failures_no_warmup", t.iter().map(|x| x.k_none)),
        column("failures_warmup", t.iter().map(|x| x.k_warm)),
        column("n", t.iter().map(|x| x.n)),
        column("fisher_p", p.iter().copied()),
        column("holm_p", t.iter().map(|x| x.q)),
        column("rescued", t.iter().map(Test::rescued)),
    ])?;
    out.frame("tests.csv", &mut df)?;
    let (measurement, verdict) = verdict(&t, c.test_warmup);
    let text = format!(
        "claim 6 (warmup)\nrule: {}\nmeasurement: {measurement}\nverdict: {verdict}\n",
        rule(c.test_warmup)
    );
    out.bytes("verdict.txt", text.as_bytes())
}

/// One (preset, depth, warmup) summary of the maximum stable lr.
struct Summary {
    preset: String,
    depth: usize,
    warmup: u64,
    median: f64,
    lo: f64,
    hi: f64,
    below: usize,
    above: usize,
    status: MedianCensor,
}

fn max_stable(c: &Config, out: &mut Out, found: &[MaxStable]) -> Result<()> {
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", found.iter().map(|m| m.cell.preset.clone())),
        column("depth", found.iter().map(|m| m.cell.depth as u64)),
        column("warmup", found.iter().map(|m| m.cell.warmup)),
        column("seed", found.iter().map(|m| m.seed)),
        column("lr", found.iter().map(|m| m.lr)),
        column("unstable_lr", found.iter().map(|m| m.unstable)),
        column("censored", found.iter().map(|m| m.censored.name())),
    ])?;
    out.frame("max_stable_lr.csv", &mut df)?;
    let mut sums = Vec::new();
    for p in &c.presets {
        for &l in &c.depths {
            for &w in &c.bisect_warmups {
                let v: Vec<(f64, Censor)> = found
                    .iter()
                    .filter(|m| m.cell.preset == *p && m.cell.depth == l && m.cell.warmup == w)
                    .map(|m| (m.lr, m.censored))
                    .collect();
                let (median, status) = censored_median(&v);
                let lrs: Vec<f64> = v.iter().map(|x| x.0).collect();
                let (_, lo, hi) = bootstrap::median_interval(&lrs, c.seed);
                let count = |k: Censor| v.iter().filter(|x| x.1 == k).count();
                sums.push(Summary {
                    preset: p.clone(),
                    depth: l,
                    warmup: w,
                    median,
                    lo,
                    hi,
                    below: count(Censor::Below),
                    above: count(Censor::Above),
                    status,
                });
            }
        }
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", sums.iter().map(|s| s.preset.clone())),
        column("depth", sums.iter().map(|s| s.depth as u64)),
        column("warmup", sums.iter().map(|s| s.warmup)),
        column("n", sums.iter().map(|_| c.seeds)),
        column("median_lr", sums.iter().map(|s| s.median)),
        column("ci_lo", sums.iter().map(|s| s.lo)),
        column("ci_hi", sums.iter().map(|s| s.hi)),
        column("censored_below", sums.iter().map(|s| s.below as u64)),
        column("censored_above", sums.iter().map(|s| s.above as u64)),
        column("median_censored", sums.iter().map(|s| s.status.name())),
    ])?;
    out.frame("max_stable_summary.csv", &mut df)?;
    let ratio = c.lrs.windows(2).map(|w| w[1] / w[0]).fold(1.0, f64::max);
    let resolution = ratio.powf(0.5f64.powi(c.bisect_iters as i32));
    for &w in &c.bisect_warmups {
        let mut plot = LinePlot::new(
            &format!(
                "Maximum stable peak lr, Adam, warmup {w} (median of {} seeds, 95% bootstrap CI; resolution x{}; censored medians at the grid's ends)",
                c.seeds,
                sig(resolution)
            ),
            "depth L (residual blocks)",
            "max stable lr",
        );
        plot.y_log = true;
        for (i, p) in c.presets.iter().enumerate() {
            let pts: Vec<(f64, f64, f64, f64)> = sums
                .iter()
                .filter(|s| s.preset == *p && s.warmup == w)
                .map(|s| (s.depth as f64, s.median, s.lo, s.hi))
                .collect();
            plot.series.push(Series::points(common::label(p), i, &pts));
        }
        out.figure(&format!("max_stable_lr_vs_depth_warmup{w}"), &plot)?;
    }
    // One table per warmup length: five columns fit a paper's column.
    for &w in &c.bisect_warmups {
        let mut t = Table::new(
            format!(
                "Median maximum stable peak learning rate with warmup {w} (Adam, {} steps, {} paired seeds; grid {} refined by {} log-bisections, resolution $\\times{}$), with bootstrap 95\\% intervals. $\\le$: at least half the seeds fail at the grid's smallest lr; $\\ge$: at least half are stable at its largest.",
                c.steps,
                c.seeds,
                c.lrs.iter().map(|&x| sig(x)).collect::<Vec<_>>().join(", "),
                c.bisect_iters,
                sig(resolution)
            ),
            format!("tab:warmup-max-stable-lr-{w}"),
            &["$L$", "median", "lo", "hi"],
        );
        for p in &c.presets {
            t.group(common::tex_label(p));
            for &l in &c.depths {
                let s = sums
                    .iter()
                    .find(|s| s.preset == *p && s.depth == l && s.warmup == w)
                    .expect("every cell is summarised");
                let mark = match s.status {
                    MedianCensor::None => "",
                    MedianCensor::Below => "$\\le$ ",
                    MedianCensor::Above => "$\\ge$ ",
                };
                t.row(vec![
                    latex::Cell::Int(l as i64),
                    latex::Cell::Text(format!("{mark}{}", sig(s.median))),
                    latex::Cell::Num(s.lo),
                    latex::Cell::Num(s.hi),
                ]);
            }
        }
        t.write(out, &format!("max_stable_lr_warmup{w}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(preset: &str, depth: u64, k_none: u64, k_warm: u64) -> Test {
        let n = 20;
        Test {
            preset: preset.into(),
            depth,
            lr: 1e-2,
            k_none,
            k_warm,
            n,
            q: fisher::two_sided(k_none, n, k_warm, n),
        }
    }

    #[test]
    fn verdict_flips_where_the_rule_says() {
        let post = [t("post", 6, 20, 0), t("post", 12, 20, 1)];
        let pre_ok = [t("pre", 6, 0, 0), t("pre", 12, 1, 0)];
        let all: Vec<Test> = post.iter().chain(&pre_ok).cloned().collect();
        assert_eq!(verdict(&all, 100).1, "supported");
        // Pre-LN rescued too: conditional, naming the cell.
        let mut v = all.clone();
        v[3] = t("pre", 12, 18, 0);
        let c = verdict(&v, 100).1;
        assert!(
            c.starts_with("conditional") && c.contains("L = 12 lr = 0.01"),
            "{c}"
        );
        // Post-LN rescued at only one depth: conditional naming the other.
        let mut v = all.clone();
        v[1] = t("post", 12, 5, 3);
        let c = verdict(&v, 100).1;
        assert!(c.contains("not at L = 12"), "{c}");
        // Never rescued: refuted (a difference that is not significant does not count).
        let v = vec![t("post", 6, 3, 1), t("pre", 6, 0, 0)];
        assert_eq!(verdict(&v, 100).1, "refuted");
        // Warmup making things worse is no rescue.
        let v = vec![t("post", 6, 0, 20)];
        assert_eq!(verdict(&v, 100).1, "refuted");
        assert!(rule(100).contains(&ALPHA.to_string()));
    }

    #[test]
    fn censored_medians() {
        let (b, a, n) = (Censor::Below, Censor::Above, Censor::None);
        assert_eq!(
            censored_median(&[(1.0, n), (2.0, n), (3.0, a)]),
            (2.0, MedianCensor::None)
        );
        assert_eq!(
            censored_median(&[(1.0, b), (1.0, b), (3.0, n)]).1,
            MedianCensor::Below
        );
        // Exactly half censored: the median averages a bound, so it is censored.
        assert_eq!(
            censored_median(&[(1.0, b), (2.0, n)]).1,
            MedianCensor::Below
        );
        assert_eq!(
            censored_median(&[(3.0, a), (3.0, a), (2.0, n)]).1,
            MedianCensor::Above
        );
    }

    #[test]
    fn bad_fields_are_named() {
        use super::super::AnalysisConfig;
        let bad = |c: Config, field: &str| {
            let e = c.check().unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        };
        let q = Config::quick();
        q.check().unwrap();
        bad(
            Config {
                lrs: vec![1e-2, 1e-3],
                ..q.clone()
            },
            "warmup.lrs",
        );
        bad(
            Config {
                warmups: vec![20],
                ..q.clone()
            },
            "warmup.warmups",
        );
        bad(
            Config {
                test_warmup: 0,
                ..q.clone()
            },
            "warmup.test_warmup",
        );
        bad(
            Config {
                bisect_warmups: vec![100],
                ..q.clone()
            },
            "warmup.bisect_warmups",
        );
        bad(
            Config {
                seeds: 0,
                ..q.clone()
            },
            "warmup.seeds",
        );
        bad(
            Config {
                depths: vec![],
                ..q
            },
            "warmup.depths",
        );
    }
}
