//! `finetune` (issue 12 item 4; claim 9, "Post-Norm fine-tunes better than Pre-Norm", seed
//! 002): pre-train on one task, fine-tune on another, compare the presets' fine-tuned loss, and
//! measure the Curse of Depth (Sun et al. 2025, arXiv:2502.05795) of the pre-trained models.
//!
//! **Protocol** (every preset at every seed of `0..seeds`, paired: one seed fixes the initial
//! draws and the data order for every preset, [`crate::train::run`]):
//!
//! 1. *Pre-training*: regression on the random teacher of seed `seed` (task A), Adam, constant
//!    learning rate, no warmup ([`sweep::train_one`]).
//! 2. *Fine-tuning* on the teacher of seed `finetune_teacher` (task B, same shapes, new
//!    weights), from the pre-trained model, with the data stream
//!    `data_rng(seed XOR FINETUNE_SALT)` ([`FINETUNE_SALT`]; its first batch is the run's
//!    first batch), for the same number of updates with a fresh optimizer state, in two modes:
//!    - `full`: every parameter trained;
//!    - `frozen`: every parameter of layer `l <= L/2` fixed ([`frozen_layer`]). Layer 0 is the
//!      input map, so the input map is frozen too, with blocks `1..=L/2`; blocks
//!      `L/2 + 1..=L` and the output norm and head (layer `L + 1`) are trained.
//! 3. *Scratch* baseline: training on task B from init (the same seed), what pre-training is
//!    worth.
//!
//! The measured quantity is the **excess loss** on task B's evaluation set after the last
//! update: `E - F`, the evaluation loss minus the teacher's own (the noise floor).
//!
//! **Statistics** (stated before the numbers): per (preset, mode) the median excess over seeds
//! with its seeded percentile-bootstrap 95% interval ([`crate::stats::bootstrap`]). Post-LN vs
//! Pre-LN, per mode: the per-seed paired difference `D_s = excess_post(s) - excess_pre(s)`, the
//! median of `D` and its bootstrap 95% interval; Post-LN is *significantly lower* if the interval
//! lies below [`DIFF_NULL`] (= 0), Pre-LN if it lies above. No p-values are computed, so no Holm
//! step: each interval is a plain 95% interval (two modes; the verdict needs both, which is
//! more stringent than either alone).
//!
//! **Curse of Depth**: per block, the ablation cost (evaluation loss with the block's branch
//! removed minus the model's own) and the angular distance between consecutive blocks'
//! outputs ([`crate::train::ablation`]), on task A's evaluation set, at init and after
//! pre-training: medians over seeds with bootstrap intervals (`depth_use.csv`). The deep-half
//! summary of a seed is the mean ablation cost over blocks `l > L/2`; Pre-LN vs Post-LN as
//! above (paired differences, bootstrap interval of their median). Sun et al.: in Pre-LN the
//! deep blocks barely matter (small cost), unlike Post-LN's.
//!
//! **Verdict** ([`verdict`]): `supported` if Post-LN's excess is significantly lower in both
//! modes of [`MODES`]; `conditional: <mode> fine-tuning only` if in one and Pre-LN's is not
//! significantly lower in the other; `refuted` if Pre-LN's is significantly lower in some mode,
//! or neither differs.
//!
//! Outputs: `finetune.csv` (preset, mode, seed, excess), `summary.csv`, `tests.csv`,
//! `depth_use.csv`, `summary.tex`; figures `ablation_cost` and `angular_distance` per block.

use super::{Analysis, Out};
use crate::Result;
use crate::model::RawModel;
use crate::output::figure::{LinePlot, Series};
use crate::output::latex::{self, Cell, plain as sig};
use crate::output::table::column;
use crate::stats::bootstrap::{self, median};
use crate::train::ablation;
use crate::train::config::RawTrain;
use crate::train::model::{ParamInfo, TrainModel};
use crate::train::run::{self, Trained};
use crate::train::sweep::{self, Cell as SweepCell, Outcome};
use crate::train::task::{Batch, Task, TaskKind};
use polars::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "finetune",
    about: "pre-train, then fine-tune (all weights or the upper half) on a new teacher: Post-LN vs Pre-LN, and per-block ablation cost",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: Some(
        "one (preset, seed): pre-training, both fine-tunings, training from scratch and the depth-use measures",
    ),
};

/// Mixed into the training seed for the fine-tuning data stream, so it differs from the
/// pre-training stream and from the scratch baseline's (`data_rng(seed)`).
pub const FINETUNE_SALT: u64 = 0x0000_f17e_7a5e_0009;

/// The fine-tuning modes the claim is tested in.
pub const MODES: [&str; 2] = ["full", "frozen"];

/// The paired median difference (Post-LN minus Pre-LN excess loss) a 95% interval must
/// exclude to count as a difference.
pub const DIFF_NULL: f64 = 0.0;

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (must include `pre` and `post`).
    pub presets: Vec<String>,
    /// Branch.
    pub branch: String,
    /// Blocks L (>= 2, so that `L/2 >= 1` blocks are frozen).
    pub depth: usize,
    /// Width d.
    pub width: usize,
    /// Adam learning rate (constant, no warmup), for every stage.
    pub lr: f64,
    /// Updates per stage (pre-training, fine-tuning, scratch).
    pub steps: u64,
    /// Examples per batch.
    pub batch: usize,
    /// Training seeds `0..seeds`.
    pub seeds: u64,
    /// Evaluation interval.
    pub eval_every: u64,
    /// The pre-training teacher's seed (task A); also seeds the bootstrap.
    pub seed: u64,
    /// The fine-tuning teacher's seed (task B); must differ from `seed`.
    pub finetune_teacher: u64,
}

impl Config {
    /// The request of task A (teacher `teacher`).
    fn raw(&self, teacher: u64) -> RawTrain {
        let d = RawTrain::default();
        let mut r = RawTrain {
            presets: self.presets.join(","),
            model: RawModel {
                depth: self.depth,
                branch: self.branch.clone(),
                width: self.width,
                ..d.model.clone()
            },
            optimizer: "adam".into(),
            lr: self.lr,
            warmup: 0,
            steps: self.steps,
            batch: self.batch,
            seeds: format!("0..{}", self.seeds),
            eval_every: self.eval_every,
            eval_batches: 4,
            log_every: self.steps,
            affine: true,
            ..d
        };
        r.task.kind = TaskKind::Regression;
        r.task.teacher_seed = teacher;
        r
    }

    fn cell(&self, preset: &str) -> SweepCell {
        SweepCell {
            preset: preset.into(),
            depth: self.depth,
            optimizer: "adam".into(),
            lr: self.lr,
            warmup: 0,
        }
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm", "lns"]
                .map(String::from)
                .to_vec(),
            branch: "relu-mlp".into(),
            depth: 12,
            width: 16,
            lr: 1e-3,
            steps: 200,
            batch: 16,
            seeds: 20,
            eval_every: 25,
            seed: 0,
            finetune_teacher: 1,
        }
    }

    fn quick() -> Self {
        Config {
            presets: ["pre", "post"].map(String::from).to_vec(),
            depth: 4,
            seeds: 4,
            steps: 60,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |field: &'static str, v: &dyn std::fmt::Display, want: &str| {
            Err(crate::Error::invalid(field, v, want))
        };
        for p in ["pre", "post"] {
            if !self.presets.iter().any(|x| x == p) {
                return bad(
                    "finetune.presets",
                    &self.presets.join(","),
                    "a list including pre and post (the claim compares them)",
                );
            }
        }
        if self.depth < 2 {
            return bad(
                "finetune.depth",
                &self.depth,
                "at least 2 (L/2 blocks frozen)",
            );
        }
        if self.seeds < 2 {
            return bad("finetune.seeds", &self.seeds, "at least 2");
        }
        if self.finetune_teacher == self.seed {
            return bad(
                "finetune.finetune_teacher",
                &self.finetune_teacher,
                "a teacher seed other than `seed` (the pre-training teacher)",
            );
        }
        self.raw(self.seed).check()?;
        self.raw(self.finetune_teacher).check().map(|_| ())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed, self.finetune_teacher]
    }
}

/// The frozen set of the `frozen` mode at depth `depth`: layers `0..=depth/2` (the input map
/// and the lower half of the blocks).
pub fn frozen_layer(depth: usize) -> impl Fn(&ParamInfo) -> bool + Sync {
    move |i: &ParamInfo| i.layer <= depth / 2
}

/// Fine-tunes `model` on `task` (teacher B) for `cfg`'s schedule from the stream
/// `data_rng(seed ^ FINETUNE_SALT)`, with the lower half frozen if `frozen`.
pub fn fine_tune(
    cfg: &crate::train::config::TrainConfig,
    task: &dyn Task,
    eval: &[Batch],
    preset: &str,
    seed: u64,
    model: TrainModel,
    frozen: bool,
) -> Trained {
    let mut rng = run::data_rng(seed ^ FINETUNE_SALT);
    let first = task.batch(&mut rng, cfg.batch);
    let f = frozen_layer(model.depth());
    let options = run::Options {
        frozen: if frozen { Some(&f) } else { None },
        snapshots: &[],
        batches: None,
    };
    run::train(
        cfg,
        task,
        preset,
        seed,
        (model, rng, first),
        eval,
        &options,
        &(),
    )
}

/// The results of one (preset, seed): a work unit (see [`super::shard`]).
#[derive(Serialize, Deserialize)]
struct Job {
    preset: String,
    seed: u64,
    /// `(mode, task, outcome)`: pretrain (task A), full, frozen, scratch (task B).
    runs: Vec<(String, String, Outcome)>,
    /// `(stage, ablation costs, angular distances)` at init and after pre-training.
    depth_use: Vec<(String, Vec<f64>, Vec<f64>)>,
}

fn one(c: &Config, preset: &str, seed: u64) -> Result<Job> {
    let (base_a, base_b) = (c.raw(c.seed), c.raw(c.finetune_teacher));
    let (task_a, eval_a) = sweep::task_and_eval(&base_a)?;
    let (task_b, eval_b) = sweep::task_and_eval(&base_b)?;
    let cell = c.cell(preset);
    let cfg_a = cell.config(&base_a, seed)?;
    let cfg_b = cell.config(&base_b, seed)?;
    let init = run::start(&cfg_a, task_a.as_ref(), preset, seed)?.0;
    let opts = run::Options::default();
    let pre = sweep::train_one(&base_a, task_a.as_ref(), &eval_a, &cell, seed, &opts)?;
    let use_of = |m: &TrainModel| {
        (
            ablation::costs(m, &eval_a),
            ablation::angular_distances(m, &eval_a),
        )
    };
    let (ci, ai) = use_of(&init);
    let (cp, ap) = use_of(&pre.model);
    let mut runs = vec![(
        "pretrain".into(),
        "A".into(),
        Outcome::new(cell.clone(), seed, &pre),
    )];
    for (mode, frozen) in [("full", false), ("frozen", true)] {
        let t = fine_tune(
            &cfg_b,
            task_b.as_ref(),
            &eval_b,
            preset,
            seed,
            pre.model.clone(),
            frozen,
        );
        runs.push((
            mode.into(),
            "B".into(),
            Outcome::new(cell.clone(), seed, &t),
        ));
    }
    let s = sweep::train_one(&base_b, task_b.as_ref(), &eval_b, &cell, seed, &opts)?;
    runs.push((
        "scratch".into(),
        "B".into(),
        Outcome::new(cell.clone(), seed, &s),
    ));
    Ok(Job {
        preset: preset.into(),
        seed,
        runs,
        depth_use: vec![("init".into(), ci, ai), ("pretrained".into(), cp, ap)],
    })
}

/// The median of `v` and its bootstrap interval, NaN-free (`None` without finite values).
fn med_ci(v: &[f64], seed: u64) -> Option<(f64, f64, f64)> {
    let f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if f.is_empty() {
        return None;
    }
    let (m, lo, hi) = bootstrap::median_interval(&f, seed);
    // One value: its interval is the value itself.
    Some((
        m,
        if lo.is_finite() { lo } else { m },
        if hi.is_finite() { hi } else { m },
    ))
}

/// A Post-LN vs Pre-LN comparison: the medians of each, the median paired difference
/// (post - pre) and its interval.
struct Paired {
    quantity: &'static str,
    mode: &'static str,
    n: usize,
    pre: f64,
    post: f64,
    diff: (f64, f64, f64),
}

impl Paired {
    fn new(
        quantity: &'static str,
        mode: &'static str,
        pre: &[f64],
        post: &[f64],
        seed: u64,
    ) -> Option<Self> {
        let d: Vec<f64> = pre.iter().zip(post).map(|(a, b)| b - a).collect();
        Some(Paired {
            quantity,
            mode,
            n: d.iter().filter(|x| x.is_finite()).count(),
            pre: median(pre),
            post: median(post),
            diff: med_ci(&d, seed)?,
        })
    }
}

/// Which preset a paired interval `[lo, hi]` of `post - pre` favours: `post` (lower), `pre`,
/// or `none`.
pub fn lower(lo: f64, hi: f64) -> &'static str {
    if hi < DIFF_NULL {
        "post"
    } else if lo > DIFF_NULL {
        "pre"
    } else {
        "none"
    }
}

/// The claim-9 verdict from the paired intervals `(mode, lo, hi)` of `post - pre` fine-tuned
/// excess loss, one per mode of [`MODES`] (see the module docs).
pub fn verdict(cis: &[(&str, f64, f64)]) -> String {
    let who: Vec<(&str, &str)> = cis
        .iter()
        .map(|(m, lo, hi)| (*m, lower(*lo, *hi)))
        .collect();
    if who.iter().any(|(_, w)| *w == "pre") {
        return "refuted".into();
    }
    let post: Vec<&str> = who
        .iter()
        .filter(|(_, w)| *w == "post")
        .map(|(m, _)| *m)
        .collect();
    match post.len() {
        0 => "refuted".into(),
        n if n == cis.len() => "supported".into(),
        _ => format!("conditional: {} fine-tuning only", post.join(", ")),
    }
}

/// The rule text, from the constants.
pub fn rule() -> String {
    format!(
        "per mode ({}), the paired per-seed difference D = excess(Post-LN) - excess(Pre-LN) on the fine-tuning task; Post-LN is significantly lower if the {}% bootstrap interval of median D lies below {DIFF_NULL}, Pre-LN if above; supported if Post-LN is lower in every mode, conditional (naming the modes) if in some and Pre-LN in none, refuted if Pre-LN is lower in some mode or none differs",
        MODES.join(", "),
        crate::stats::LEVEL * 100.0
    )
}

// Tuple rows of the tables, local to this function.
#[allow(clippy::type_complexity)]
fn run(c: &Config, out: &mut Out) -> Result<()> {
    let jobs: Vec<(&String, u64)> = c
        .presets
        .iter()
        .flat_map(|p| (0..c.seeds).map(move |s| (p, s)))
        .collect();
    // A unit's cost: four training runs of `depth` blocks.
    let cost = |_: &(&String, u64)| c.depth as f64;
    let done: Vec<Job> = out.units("runs", &jobs, cost, |mine| {
        mine.par_iter().map(|(p, s)| one(c, p, *s)).collect()
    })?;
    let mut rows: Vec<(&str, &str, &str, u64, &Outcome)> = Vec::new();
    for j in &done {
        for (mode, task, o) in &j.runs {
            rows.push((&j.preset, mode.as_str(), task.as_str(), j.seed, o));
        }
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", rows.iter().map(|r| r.0)),
        column("mode", rows.iter().map(|r| r.1)),
        column("task", rows.iter().map(|r| r.2)),
        column("seed", rows.iter().map(|r| r.3)),
        column("excess_loss", rows.iter().map(|r| r.4.excess())),
        column("final_loss", rows.iter().map(|r| r.4.final_loss)),
        column("floor", rows.iter().map(|r| r.4.floor)),
        column("failed", rows.iter().map(|r| r.4.failed)),
    ])?;
    out.frame("finetune.csv", &mut df)?;

    let excess = |p: &str, mode: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.0 == p && r.1 == mode)
            .map(|r| r.4.excess())
            .collect()
    };
    let modes = ["pretrain", "full", "frozen", "scratch"];
    let mut sum: Vec<(&str, &str, usize, (f64, f64, f64), usize)> = Vec::new();
    for p in &c.presets {
        for m in modes {
            let v = excess(p, m);
            let failed = rows
                .iter()
                .filter(|r| r.0 == p && r.1 == m && r.4.failed)
                .count();
            if let Some(mci) = med_ci(&v, c.seed) {
                sum.push((p, m, v.len(), mci, failed));
            }
        }
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", sum.iter().map(|r| r.0)),
        column("mode", sum.iter().map(|r| r.1)),
        column("n", sum.iter().map(|r| r.2 as u64)),
        column("median_excess", sum.iter().map(|r| r.3.0)),
        column("ci_lo", sum.iter().map(|r| r.3.1)),
        column("ci_hi", sum.iter().map(|r| r.3.2)),
        column("failed", sum.iter().map(|r| r.4 as u64)),
    ])?;
    out.frame("summary.csv", &mut df)?;
    let mut t = latex::Table::new(
        format!(
            "Excess loss (over the noise floor) after pre-training on teacher A (pretrain) and on teacher B after fine-tuning all weights (full), the upper half only (frozen: input map and blocks $l \\le L/2$ fixed), or training from init (scratch). ReLU MLP, $d = {}$, $L = {}$, Adam, lr $= {}$, no warmup, {} updates per stage; median over {} seeds with bootstrap 95\\% interval.",
            c.width, c.depth, c.lr, c.steps, c.seeds
        ),
        "tab:finetune",
        &["mode", "median", "95\\% low", "95\\% high", "failed"],
    );
    for p in &c.presets {
        t.group(super::common::tex_label(p));
        for r in sum.iter().filter(|r| r.0 == p) {
            t.row(vec![
                Cell::Text(r.1.into()),
                Cell::Num(r.3.0),
                Cell::Num(r.3.1),
                Cell::Num(r.3.2),
                Cell::Int(r.4 as i64),
            ]);
        }
    }
    t.write(out, "summary")?;

    // Per-block depth use.
    let per_block = |p: &str, stage: &str, ablation: bool| -> Vec<Vec<f64>> {
        done.iter()
            .filter(|j| j.preset == p)
            .filter_map(|j| j.depth_use.iter().find(|d| d.0 == stage))
            .map(|d| if ablation { d.1.clone() } else { d.2.clone() })
            .collect()
    };
    let mut du: Vec<(&str, &str, &str, u64, usize, (f64, f64, f64))> = Vec::new();
    for p in &c.presets {
        for stage in ["init", "pretrained"] {
            for (metric, abl) in [("ablation_cost", true), ("angular_distance", false)] {
                let seeds = per_block(p, stage, abl);
                for l in 1..=c.depth {
                    let v: Vec<f64> = seeds.iter().map(|s| s[l - 1]).collect();
                    if let Some(mci) = med_ci(&v, c.seed) {
                        let n = v.iter().filter(|x| x.is_finite()).count();
                        du.push((p, stage, metric, l as u64, n, mci));
                    }
                }
            }
        }
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("preset", du.iter().map(|r| r.0)),
        column("stage", du.iter().map(|r| r.1)),
        column("metric", du.iter().map(|r| r.2)),
        column("block", du.iter().map(|r| r.3)),
        column("n", du.iter().map(|r| r.4 as u64)),
        column("median", du.iter().map(|r| r.5.0)),
        column("ci_lo", du.iter().map(|r| r.5.1)),
        column("ci_hi", du.iter().map(|r| r.5.2)),
    ])?;
    out.frame("depth_use.csv", &mut df)?;

    // Post vs Pre, paired by seed (jobs are in seed order within a preset).
    let deep = |p: &str, stage: &str| -> Vec<f64> {
        per_block(p, stage, true)
            .iter()
            .map(|v| {
                let d = &v[c.depth / 2..];
                d.iter().sum::<f64>() / d.len() as f64
            })
            .collect()
    };
    let mut tests: Vec<Paired> = MODES
        .iter()
        .filter_map(|m| {
            Paired::new(
                "finetune_excess",
                m,
                &excess("pre", m),
                &excess("post", m),
                c.seed,
            )
        })
        .collect();
    for stage in ["init", "pretrained"] {
        tests.extend(Paired::new(
            "deep_half_ablation_cost",
            stage,
            &deep("pre", stage),
            &deep("post", stage),
            c.seed,
        ));
    }
    let mut df = DataFrame::new_infer_height(vec![
        column("quantity", tests.iter().map(|t| t.quantity)),
        column("mode", tests.iter().map(|t| t.mode)),
        column("n", tests.iter().map(|t| t.n as u64)),
        column("median_pre", tests.iter().map(|t| t.pre)),
        column("median_post", tests.iter().map(|t| t.post)),
        column("median_diff", tests.iter().map(|t| t.diff.0)),
        column("ci_lo", tests.iter().map(|t| t.diff.1)),
        column("ci_hi", tests.iter().map(|t| t.diff.2)),
        column("lower", tests.iter().map(|t| lower(t.diff.1, t.diff.2))),
    ])?;
    out.frame("tests.csv", &mut df)?;

    // Figures: per-block ablation cost and angular distance (median and interval over seeds).
    let setting = format!(
        "ReLU MLP, L = {}, d = {}, Adam lr {}, {} updates, {} seeds",
        c.depth, c.width, c.lr, c.steps, c.seeds
    );
    for (metric, title, y) in [
        (
            "ablation_cost",
            "Ablation cost per block after pre-training",
            "ablation cost",
        ),
        (
            "angular_distance",
            "Angular distance between consecutive blocks' outputs",
            "angular distance / π",
        ),
    ] {
        let mut fig = LinePlot::new(&format!("{title} ({setting})"), "block l", y);
        fig.x_log = false;
        let stages: &[&str] = if metric == "ablation_cost" {
            &["pretrained"]
        } else {
            &["init", "pretrained"]
        };
        let mut all_positive = true;
        for (i, p) in c.presets.iter().enumerate() {
            for (k, stage) in stages.iter().enumerate() {
                let pts: Vec<(f64, f64, f64, f64)> = du
                    .iter()
                    .filter(|r| r.0 == p && r.1 == *stage && r.2 == metric)
                    .map(|r| (r.3 as f64, r.5.0, r.5.1, r.5.2))
                    .collect();
                all_positive &= pts.iter().all(|q| q.1 > 0.0 && q.2 > 0.0);
                let label = if stages.len() > 1 {
                    format!("{} ({stage})", super::common::label(p))
                } else {
                    super::common::label(p).to_string()
                };
                fig.series
                    .push(Series::points(label, i + k * c.presets.len(), &pts));
            }
        }
        fig.y_log = metric == "ablation_cost" && all_positive;
        out.figure(metric, &fig)?;
    }
    Ok(())
}

/// A column of a frame as `f64` values.
fn f64s(df: &DataFrame, name: &str) -> Result<Vec<f64>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// A column of a frame as strings.
fn strs(df: &DataFrame, name: &str) -> Result<Vec<String>> {
    let c = df.column(name)?.cast(&DataType::String)?;
    Ok(c.str()?
        .iter()
        .map(|v| v.unwrap_or("").to_string())
        .collect())
}

/// Claim 9 from `finetune/tests.csv` and `finetune/summary.csv`.
// Wired into the ledger (analyses/claims.rs) by the lead.
pub(crate) fn claim(d: &super::claims::Data) -> Result<super::claims::Claim> {
    let tests = d.frame("finetune/tests.csv")?;
    let summary = d.frame("finetune/summary.csv")?;
    let (q, m) = (strs(&tests, "quantity")?, strs(&tests, "mode")?);
    let cols: Vec<Vec<f64>> = ["median_pre", "median_post", "median_diff", "ci_lo", "ci_hi"]
        .iter()
        .map(|n| f64s(&tests, n))
        .collect::<Result<_>>()?;
    let row = |quantity: &str, mode: &str| -> Result<[f64; 5]> {
        let i = (0..q.len())
            .find(|&i| q[i] == quantity && m[i] == mode)
            .ok_or_else(|| {
                crate::Error::Undefined(format!(
                    "finetune/tests.csv has no {quantity} row for {mode}"
                ))
            })?;
        Ok([cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i]])
    };
    let (sp, sm, smed) = (
        strs(&summary, "preset")?,
        strs(&summary, "mode")?,
        f64s(&summary, "median_excess")?,
    );
    let scratch = |p: &str| {
        (0..sp.len())
            .find(|&i| sp[i] == p && sm[i] == "scratch")
            .map_or(f64::NAN, |i| smed[i])
    };
    let mut parts = Vec::new();
    let mut cis = Vec::new();
    for mode in MODES {
        let r = row("finetune_excess", mode)?;
        parts.push(format!(
            "{mode}: median excess Post-LN {} vs Pre-LN {}, paired median difference {} [{}, {}]",
            sig(r[1]),
            sig(r[0]),
            sig(r[2]),
            sig(r[3]),
            sig(r[4])
        ));
        cis.push((mode, r[3], r[4]));
    }
    parts.push(format!(
        "from scratch: Post-LN {} vs Pre-LN {}",
        sig(scratch("post")),
        sig(scratch("pre"))
    ));
    for stage in ["pretrained", "init"] {
        let r = row("deep_half_ablation_cost", stage)?;
        parts.push(format!(
            "Curse of Depth, mean ablation cost of blocks l > L/2 ({stage}): Pre-LN {} vs Post-LN {}, paired median difference {} [{}, {}]",
            sig(r[0]),
            sig(r[1]),
            sig(r[2]),
            sig(r[3]),
            sig(r[4])
        ));
    }
    Ok(super::claims::Claim {
        id: 9,
        statement: "Post-Norm fine-tunes better than Pre-Norm.",
        seeds: "002",
        data: "finetune/tests.csv, finetune/summary.csv",
        measurement: format!(
            "regression (random ReLU-MLP teacher), pre-trained on teacher A, fine-tuned on teacher B, paired seeds: {}",
            parts.join("; ")
        ),
        rule: rule(),
        verdict: verdict(&cis),
        trained: None,
        finite_width: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::AnalysisConfig;

    #[test]
    fn verdict_follows_the_rule() {
        // Post lower in both modes.
        assert_eq!(
            verdict(&[("full", -0.3, -0.1), ("frozen", -0.2, -0.01)]),
            "supported"
        );
        // In one: conditional on it.
        assert_eq!(
            verdict(&[("full", -0.3, 0.1), ("frozen", -0.2, -0.01)]),
            "conditional: frozen fine-tuning only"
        );
        // Neither differs, or Pre lower somewhere.
        assert_eq!(
            verdict(&[("full", -0.3, 0.1), ("frozen", -0.2, 0.01)]),
            "refuted"
        );
        assert_eq!(
            verdict(&[("full", -0.3, -0.1), ("frozen", 0.01, 0.2)]),
            "refuted"
        );
        // An interval touching 0 is no difference.
        assert_eq!(lower(DIFF_NULL, 0.1), "none");
        assert_eq!(lower(-0.1, DIFF_NULL), "none");
        assert!(rule().contains("95%"));
    }

    #[test]
    fn frozen_fine_tuning_keeps_the_lower_half_bitwise() {
        let mut c = Config::quick();
        c.steps = 5;
        let base_b = c.raw(c.finetune_teacher);
        let (task, eval) = sweep::task_and_eval(&base_b).unwrap();
        let cfg = c.cell("post").config(&base_b, 0).unwrap();
        let m = run::start(&cfg, task.as_ref(), "post", 0).unwrap().0;
        let t = fine_tune(&cfg, task.as_ref(), &eval, "post", 0, m.clone(), true);
        let half = c.depth / 2;
        let (mut same, mut moved) = (0, 0);
        for ((i, a), (_, b)) in m.params().iter().zip(t.model.params()) {
            if i.layer <= half {
                assert!(*a == b, "layer {} {} changed", i.layer, i.name);
                same += 1;
            } else if *a != b {
                moved += 1;
            }
        }
        assert!(same > 0 && moved > 0, "{same} frozen, {moved} moved");
        // Full fine-tuning moves the input map.
        let t = fine_tune(&cfg, task.as_ref(), &eval, "post", 0, m.clone(), false);
        let (a, b) = (m.params(), t.model.params());
        assert!(a.iter().zip(&b).any(|(x, y)| x.0.layer == 0 && x.1 != y.1));
    }

    #[test]
    fn bad_configs_are_refused_naming_the_field() {
        let mut c = Config::quick();
        c.presets = vec!["pre".into()];
        assert!(c.check().unwrap_err().to_string().contains("presets"));
        let mut c = Config::quick();
        c.finetune_teacher = c.seed;
        assert!(
            c.check()
                .unwrap_err()
                .to_string()
                .contains("finetune_teacher")
        );
        let mut c = Config::quick();
        c.depth = 1;
        assert!(c.check().unwrap_err().to_string().contains("depth"));
        assert!(Config::full().check().is_ok());
    }
}
