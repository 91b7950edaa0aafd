//! `trained-lens`: trained networks through the init-time lens (issue 12, item 6). Claims 1, 3
//! and 5 are stated about networks in use, so the Monte Carlo engine's own estimators
//! ([`crate::train::lens`]: effective depth from the path-length law, branch weights from the
//! exact decomposition, `cos_prev`, per-block weight gradients) are run on the weights of
//! trained networks at several points of training, and the ledger gives those claims a second
//! verdict, after training (`after_training`, read by the ledger).
//!
//! Setting: the regression tier (teacher-student, ReLU-MLP blocks, TRAINING.md section 2),
//! He-initialized so that the branch gain (g = 2) lies inside claim 1's init-time condition,
//! Adam at a learning rate every preset trains at, no warmup, norms without affine maps (the
//! engine's network carries none; [`crate::train::lens`]). Each (preset, seed) is one trained
//! network, measured at the snapshots on the evaluation set's first batch (its columns are the
//! engine's tokens) with one draw of the engine's Gaussian tangents per measurement. Seeds are
//! paired across presets; medians over seeds carry seeded bootstrap 95% intervals
//! ([`crate::stats::bootstrap`]).
//!
//! Per (preset, seed, step) it records:
//!
//! | quantity | definition |
//! |---|---|
//! | `eff_depth_over_L` | mean Jacobian path length of blocks `1..=L`, over L |
//! | `x0_factor` | `(x_0's share of ||x_L||^2)^(1/(2L))`: the per-layer factor on x_0's coefficient (claim 3; `2^(-1/2)` in Post-LN at init) |
//! | `grad_first_over_last` | block 1's over block L's mean-square last-weight gradient (claims 4, 5) |
//! | `cos_prev_mean` | `cos(x_l, x_{l-1})` averaged over blocks (claim 2's "adjacent layers barely differ") |

use super::claims::{
    AfterTraining, Data, KEEPS_DEPTH_MIN, LINEAR_MIN, MC_WIDEN, NO_VANISH_MIN, POST_OVER_PRE_MIN,
    WIDTH_MAX,
};
use super::{Analysis, Out};
use crate::metrics::Metric;
use crate::model::RawModel;
use crate::monte_carlo::measure::NetworkPlan;
use crate::monte_carlo::rng::{Rng, config_hash, splitmix64};
use crate::output::figure::{LinePlot, Series};
use crate::output::latex::plain as sig;
use crate::output::table::column;
use crate::stats::bootstrap;
use crate::train::batch_cache::BatchCache;
use crate::train::config::RawTrain;
use crate::train::run::{Options, views};
use crate::train::sweep::{self, Cell};
use crate::train::task::{TaskConfig, TaskKind};
use crate::{Error, Result};
use polars::prelude::*;
use rand::SeedableRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "trained-lens",
    about: "init-time metrics (effective depth, x_0's factor, gradient ratio, cos_prev) on trained weights, against the training step",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: Some("one (preset, seed): its training run and the measurements at its snapshots"),
};

/// The quantities recorded, in table order.
pub const QUANTITIES: [&str; 4] = [
    "eff_depth_over_L",
    "x0_factor",
    "grad_first_over_last",
    "cos_prev_mean",
];

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (each must map onto the engine's network: no ReZero or Admin).
    pub presets: Vec<String>,
    /// Blocks L.
    pub depth: usize,
    /// Width d.
    pub width: usize,
    /// Init scheme of the branch matrices (`he` gives a ReLU MLP branch gain g = 2, inside
    /// claim 1's init-time condition g >= 0.398; `xavier` gives g = 0.32, outside it).
    pub init: String,
    /// Adam's peak learning rate (constant, no warmup).
    pub lr: f64,
    /// Updates.
    pub steps: u64,
    /// Updates at which the lens is applied (0 = init; each in `0..=steps`).
    pub snapshots: Vec<u64>,
    /// Training seeds `0..seeds`, paired across presets.
    pub seeds: u64,
    /// The seed of the teacher, the evaluation set and the lens's tangents.
    pub seed: u64,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm"].map(String::from).to_vec(),
            depth: 24,
            width: 16,
            init: "he".into(),
            lr: 1e-3,
            steps: 200,
            snapshots: vec![0, 25, 50, 100, 200],
            seeds: 20,
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            depth: 6,
            steps: 40,
            snapshots: vec![0, 20, 40],
            seeds: 4,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        if self.presets.is_empty() {
            return Err(Error::invalid(
                "trained-lens.presets",
                "[]",
                "at least one preset",
            ));
        }
        if self.seeds < 2 {
            return Err(Error::invalid(
                "trained-lens.seeds",
                self.seeds,
                "an integer >= 2 (medians carry bootstrap intervals)",
            ));
        }
        if self.snapshots.is_empty() || self.snapshots.iter().any(|&s| s > self.steps) {
            return Err(Error::invalid(
                "trained-lens.snapshots",
                format!("{:?}", self.snapshots),
                format!("a non-empty list of updates in 0..={}", self.steps),
            ));
        }
        for p in &self.presets {
            if matches!(p.as_str(), "rezero" | "admin") {
                return Err(Error::invalid(
                    "trained-lens.presets",
                    p,
                    "presets without a learnable skip or branch scale (not rezero or admin: the engine's network takes those from the stack spec)",
                ));
            }
            self.cell(p).config(&self.base(), 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

impl Config {
    /// The training request shared by every run.
    fn base(&self) -> RawTrain {
        let d = RawTrain::default();
        RawTrain {
            model: RawModel {
                depth: self.depth,
                branch: "relu-mlp".into(),
                width: self.width,
                init: self.init.clone(),
                ..d.model
            },
            affine: false,
            task: TaskConfig {
                kind: TaskKind::Regression,
                teacher_seed: self.seed,
                ..TaskConfig::default()
            },
            lr: self.lr,
            steps: self.steps,
            batch: 16,
            eval_every: 25,
            eval_batches: 4,
            log_every: self.steps,
            ..d
        }
    }

    fn cell(&self, preset: &str) -> Cell {
        Cell {
            preset: preset.into(),
            depth: self.depth,
            optimizer: "adam".into(),
            lr: self.lr,
            warmup: 0,
        }
    }
}

/// One measurement: (preset, seed, step, quantity, value).
type Point = (String, u64, u64, &'static str, f64);

/// A [`Point`] as a work unit stores it: the quantity by its index in [`QUANTITIES`].
type Stored = (String, u64, u64, usize, f64);

/// The four quantities of one measured network (NaN where an estimator is undefined).
fn quantities(v: &crate::monte_carlo::measure::Values, depth: usize) -> [f64; 4] {
    let get = |m: Metric, l: usize, s: Option<usize>| v.get(&(m, l, s)).copied();
    let eff = get(Metric::EffDepth, depth, None).map_or(f64::NAN, |e| e / depth as f64);
    let share = get(Metric::BranchWeight, depth, Some(0)).unwrap_or(f64::NAN);
    let factor = (share.ln() / (2.0 * depth as f64)).exp();
    let ratio = match (
        get(Metric::WeightGradSq, 1, None),
        get(Metric::WeightGradSq, depth, None),
    ) {
        (Some(a), Some(b)) if b > 0.0 => a / b,
        _ => f64::NAN,
    };
    let cos: Vec<f64> = (1..=depth)
        .filter_map(|l| get(Metric::CosPrev, l, None))
        .collect();
    let cos = if cos.len() == depth {
        cos.iter().sum::<f64>() / depth as f64
    } else {
        f64::NAN
    };
    [eff, factor, ratio, cos]
}

fn measure_all(c: &Config, out: &mut Out) -> Result<Vec<Point>> {
    let base = c.base();
    let (task, eval) = sweep::task_and_eval(&base)?;
    let plan = NetworkPlan {
        metrics: vec![
            Metric::EffDepth,
            Metric::BranchWeight,
            Metric::WeightGradSq,
            Metric::CosPrev,
        ],
        selected: vec![true; c.depth + 1],
        path_max: c.depth,
    };
    let jobs: Vec<(&String, u64)> = c
        .presets
        .iter()
        .flat_map(|p| (0..c.seeds).map(move |s| (p, s)))
        .collect();
    // A unit (see [`super::shard`]) is one (preset, seed): its training run and the
    // measurements at its snapshots, each quantity by its index in [`QUANTITIES`].
    let batches = BatchCache::for_runs(task.as_ref(), jobs.len());
    let measure = |&(p, seed): &(&String, u64)| -> Result<Vec<Stored>> {
        let options = Options {
            frozen: None,
            snapshots: &c.snapshots,
            batches: batches.as_ref(),
        };
        let t = sweep::train_one(&base, task.as_ref(), &eval, &c.cell(p), seed, &options)?;
        let mut out = Vec::new();
        for (step, m) in &t.snapshots {
            let x0 = m.embed(views(&eval[0]).0);
            let mut rng = Rng::seed_from_u64(splitmix64(
                splitmix64(c.seed ^ splitmix64(seed) ^ splitmix64(*step + 1))
                    ^ config_hash("normscope-trained-lens-v1"),
            ));
            let v = crate::train::lens::measure(m, x0, &plan, &mut rng)?;
            for (q, value) in quantities(&v, c.depth).into_iter().enumerate() {
                if value.is_finite() {
                    out.push((p.clone(), seed, *step, q, value));
                }
            }
        }
        Ok(out)
    };
    // Every unit trains the same model for the same number of updates.
    let parts = out.units(
        "runs",
        &jobs,
        |_| 1.0,
        |mine| mine.par_iter().map(measure).collect(),
    )?;
    Ok(parts
        .into_iter()
        .flatten()
        .map(|(p, seed, step, q, value)| (p, seed, step, QUANTITIES[q], value))
        .collect())
}

/// `(median, lo, hi, n)` over seeds.
type Median = (f64, f64, f64, usize);

/// One row of `summary.csv`: preset, step, quantity and its [`Median`].
type SummaryRow<'a> = (String, u64, &'a str, Median);

/// `(median, lo, hi, n)` over seeds of one (preset, step, quantity).
fn summary(points: &[Point], preset: &str, step: u64, q: &str, seed: u64) -> Median {
    let v: Vec<f64> = points
        .iter()
        .filter(|x| x.0 == preset && x.2 == step && x.3 == q)
        .map(|x| x.4)
        .collect();
    let (m, lo, hi) = bootstrap::median_interval(&v, seed);
    (m, lo, hi, v.len())
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let points = measure_all(c, out)?;
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", points.iter().map(|p| p.0.as_str())),
        column("seed", points.iter().map(|p| p.1)),
        column("step", points.iter().map(|p| p.2)),
        column("quantity", points.iter().map(|p| p.3)),
        column("value", points.iter().map(|p| p.4)),
    ])?;
    out.frame("lens.csv", &mut df)?;
    let mut rows: Vec<SummaryRow> = Vec::new();
    for p in &c.presets {
        for &s in &c.snapshots {
            for q in QUANTITIES {
                let r = summary(&points, p, s, q, c.seed);
                if r.3 > 0 && r.0.is_finite() && r.1.is_finite() && r.2.is_finite() {
                    rows.push((p.clone(), s, q, r));
                }
            }
        }
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", rows.iter().map(|r| r.0.as_str())),
        column("depth", rows.iter().map(|_| c.depth as u64)),
        column("step", rows.iter().map(|r| r.1)),
        column("quantity", rows.iter().map(|r| r.2)),
        column("median", rows.iter().map(|r| r.3.0)),
        column("ci_low", rows.iter().map(|r| r.3.1)),
        column("ci_high", rows.iter().map(|r| r.3.2)),
        column("seeds", rows.iter().map(|r| r.3.3 as u64)),
    ])?;
    out.frame("summary.csv", &mut df)?;
    let titles = [
        ("eff_depth_over_L", "Effective depth / L on trained weights"),
        ("x0_factor", "x₀'s per-layer factor on trained weights"),
        (
            "grad_first_over_last",
            "First/last block weight-gradient ratio on trained weights",
        ),
        ("cos_prev_mean", "Mean cos(x_l, x_{l-1}) on trained weights"),
    ];
    for (q, title) in titles {
        let mut fig = LinePlot::new(
            &format!("{title} (L = {}, {} seeds)", c.depth, c.seeds),
            "update t",
            q,
        );
        fig.x_log = false;
        for (i, p) in c.presets.iter().enumerate() {
            let pts: Vec<(f64, f64, f64, f64)> = rows
                .iter()
                .filter(|r| &r.0 == p && r.2 == q)
                .map(|r| (r.1 as f64, r.3.0, r.3.1, r.3.2))
                .collect();
            fig.series
                .push(Series::points(super::common::label(p), i, &pts));
        }
        out.figure(q, &fig)?;
    }
    Ok(())
}

/// The median and interval of one quantity at one step, read back from `summary.csv`.
struct Read {
    rows: Vec<(String, u64, String, f64, f64, f64)>,
    depth: u64,
}

impl Read {
    fn new(d: &Data) -> Result<Read> {
        let df = d.frame("trained-lens/summary.csv")?;
        let s = |n: &str| super::regression_tier::strs(&df, n);
        let f = |n: &str| super::regression_tier::f64s(&df, n);
        let (p, q) = (s("preset")?, s("quantity")?);
        let (step, depth) = (f("step")?, f("depth")?);
        let (m, lo, hi) = (f("median")?, f("ci_low")?, f("ci_high")?);
        Ok(Read {
            rows: (0..df.height())
                .map(|k| {
                    (
                        p[k].clone(),
                        step[k] as u64,
                        q[k].clone(),
                        m[k],
                        lo[k],
                        hi[k],
                    )
                })
                .collect(),
            depth: depth.first().map_or(0, |d| *d as u64),
        })
    }

    fn last_step(&self) -> u64 {
        self.rows.iter().map(|r| r.1).max().unwrap_or(0)
    }

    /// `(median, lo, hi)` of `q` for `preset` at `step`.
    fn get(&self, preset: &str, step: u64, q: &str) -> Result<(f64, f64, f64)> {
        self.rows
            .iter()
            .find(|r| r.0 == preset && r.1 == step && r.2 == q)
            .map(|r| (r.3, r.4, r.5))
            .ok_or_else(|| {
                Error::Undefined(format!(
                    "claims: trained-lens/summary.csv has no {q} for {preset} at update {step}"
                ))
            })
    }
}

fn ci3(x: (f64, f64, f64)) -> String {
    format!("{} [{}, {}]", sig(x.0), sig(x.1), sig(x.2))
}

/// The after-training verdicts of claims 1, 3 and 5, with the same thresholds as their
/// init-time verdicts in [`super::claims`], applied to the medians over seeds (and their
/// bootstrap intervals) at the last snapshot; the step-0 values of the same pipeline are
/// printed beside them.
pub(crate) fn after_training(d: &Data) -> Result<Vec<(u32, AfterTraining)>> {
    let r = Read::new(d)?;
    let (t, l) = (r.last_step(), r.depth);
    let ed = "eff_depth_over_L";
    let (pre, post, dn) = (
        r.get("pre", t, ed)?,
        r.get("post", t, ed)?,
        r.get("deepnorm", t, ed)?,
    );
    let (pre0, post0) = (r.get("pre", 0, ed)?, r.get("post", 0, ed)?);
    let setting = format!(
        "regression tier, ReLU MLP (He init, g = 2 at init), L = {l}, Adam, no affine norms; medians over seeds with bootstrap 95% intervals, after {t} updates (at update 0 in the same pipeline)"
    );
    // Claim 1.
    let width = pre.0 < WIDTH_MAX;
    let full = post.0 >= LINEAR_MIN;
    let order = post.1 > POST_OVER_PRE_MIN * pre.2;
    let c1 = if width && full && order {
        "supported".to_string()
    } else if pre.0 < LINEAR_MIN && full {
        format!(
            "conditional: Post-LN's depth stays at least {LINEAR_MIN} L and Pre-LN's below it after training, but Pre-LN's eff_depth/L ({}) is not below {WIDTH_MAX} at L = {l}",
            sig(pre.0)
        )
    } else {
        "refuted".to_string()
    };
    let one = AfterTraining {
        measurement: format!(
            "eff_depth/L after training: Pre-LN {}, Post-LN {} (at init {}, {}); {setting}",
            ci3(pre),
            ci3(post),
            sig(pre0.0),
            sig(post0.0)
        ),
        rule: format!(
            "supported if Pre-LN's median eff_depth/L < {WIDTH_MAX}, Post-LN's >= {LINEAR_MIN} and Post-LN's lower interval end > {POST_OVER_PRE_MIN} x Pre-LN's upper end; conditional if only Pre-LN < {LINEAR_MIN} <= Post-LN holds"
        ),
        verdict: c1,
    };
    // Claim 3.
    let f = r.get("post", t, "x0_factor")?;
    let f0 = r.get("post", 0, "x0_factor")?;
    let target = 0.5f64.sqrt();
    let c3 = if f.1 * (1.0 - MC_WIDEN) <= target && target <= f.2 * (1.0 + MC_WIDEN) {
        "supported".to_string()
    } else {
        format!(
            "refuted: after training x_0's per-layer factor in Post-LN is {}, not 2^(-1/2) = {}",
            sig(f.0),
            sig(target)
        )
    };
    let three = AfterTraining {
        measurement: format!(
            "Post-LN x_0 factor (x_0's share)^(1/(2L)) after training {} (at init {}); {setting}",
            ci3(f),
            sig(f0.0)
        ),
        rule: format!(
            "supported if 2^(-1/2) lies in the bootstrap interval widened by {}% on each side",
            MC_WIDEN * 100.0
        ),
        verdict: c3,
    };
    // Claim 5.
    let g = r.get("deepnorm", t, "grad_first_over_last")?;
    let keeps = dn.0 >= KEEPS_DEPTH_MIN * post.0;
    let no_vanish = g.0 >= NO_VANISH_MIN;
    let c5 = if keeps && no_vanish {
        "supported".to_string()
    } else {
        format!(
            "refuted: depth kept {}, vanishing avoided {}",
            if keeps { "yes" } else { "no" },
            if no_vanish { "yes" } else { "no" }
        )
    };
    let five = AfterTraining {
        measurement: format!(
            "eff_depth/L after training: DeepNorm {}, Post-LN {}; DeepNorm first/last weight-gradient ratio {}; {setting}",
            ci3(dn),
            ci3(post),
            ci3(g)
        ),
        rule: format!(
            "supported if DeepNorm's median eff_depth >= {KEEPS_DEPTH_MIN} x Post-LN's and its median first/last weight-gradient ratio >= {NO_VANISH_MIN} (the init-time rule on trained weights)"
        ),
        verdict: c5,
    };
    Ok(vec![(1, one), (3, three), (5, five)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::AnalysisConfig;

    #[test]
    fn configs_check_and_bad_fields_are_named() {
        Config::full().check().unwrap();
        Config::quick().check().unwrap();
        let bad = Config {
            presets: vec!["rezero".into()],
            ..Config::quick()
        };
        assert!(
            bad.check()
                .unwrap_err()
                .to_string()
                .contains("trained-lens.presets")
        );
        let bad = Config {
            snapshots: vec![1000],
            ..Config::quick()
        };
        assert!(
            bad.check()
                .unwrap_err()
                .to_string()
                .contains("trained-lens.snapshots")
        );
    }
}
