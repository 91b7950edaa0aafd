//! `finetune` (claim 9, "Post-Norm fine-tunes better than Pre-Norm", seed 002): pre-train on a
//! language, fine-tune on a related one, compare the presets' fine-tuned loss; and the Curse of
//! Depth (Sun et al. 2025, arXiv:2502.05795) of the pre-trained models.
//!
//! **Protocol** (per preset, paired seeds: one seed fixes the initial draws and the data
//! order for every preset, [`normscope_core::train::run`]):
//!
//! 1. *Pre-training* on the tier's task A (the teacher LM of `tier.seed`), Adam, constant
//!    rate, no warmup, at the preset's learning rate tuned by `convergence` for this tier and
//!    depth (read from `convergence/tuning.csv`, recorded as an input).
//! 2. *Fine-tuning* on the related task A' — the same teacher with the embeddings of a
//!    fraction `rewire` of its vocabulary drawn anew (`--teacher-rewire`: the same language
//!    with a changed subset of its rules, so what was learnt can transfer) — from the
//!    pre-trained model with a fresh optimizer state, for `finetune_steps` updates, from the
//!    data stream `data_rng(seed XOR FINETUNE_SALT)`, at the preset's own fine-tuning rate:
//!    tuned over `lrs` on held-out seeds (each pre-trained first), the lowest median score.
//! 3. *Scratch* baseline: training on A' from init (the same seed) for `finetune_steps`
//!    updates at the preset's `convergence` rate: what pre-training is worth (transfer).
//!
//! **Effect**: per seed, the fine-tuned final score on A' (excess over its floor, diverged
//! counting as at least the gap, in units of A''s gap), Post-LN minus Pre-LN. **Claim 9's
//! family**: that difference claimed negative at the depth tested (Holm over the family,
//! smallest effect of interest [`super::convergence::LOSS_SESOI`]). Reported beside it: each
//! preset's transfer (scratch minus fine-tuned, per seed), without which the comparison would
//! not test fine-tuning.
//!
//! **Curse of Depth**: per block, the ablation cost and the angular distance to the previous
//! block ([`normscope_core::train::ablation`]) on A's evaluation set, at init and after pre-training.
//!
//! Outputs: `runs.csv` (every run, `purpose` pretrain / tuning / finetune / scratch),
//! `effects.csv`, `depth_use.csv`; figures `ablation_cost` and `angular_distance`.

use super::convergence::{LOSS_SESOI, runs_with_early};
use super::tier::{RunKey, TierSet};
use super::training::{
    TierVerdict, best_lr, check_count, f64s, frame, obs_column, paired_obs, strs,
};
use super::tuned::TunePlan;
use super::warmup::judge;
use super::{Analysis, Out, common};
use crate::runner::data::Data;
use normscope_core::monte_carlo::precision::Precision;
use normscope_core::output::progress::DelayedBar;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::stats::median_ci::median_ci;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{Claimed, Comparison, Family};
use normscope_core::train::config::RawTrain;
use normscope_core::train::model::TrainModel;
use normscope_core::train::sweep::{Cell, Outcome, Prepared};
use normscope_core::train::{ablation, run};
use normscope_core::{Error, Result};
use normscope_figure::{LinePlot, Series};
use normscope_numeric::gemm::Real;
use polars::prelude::DataFrame;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "finetune",
    about: "pre-train on a language, fine-tune on a related one at each preset's tuned lr: Post-LN vs Pre-LN, transfer, per-block ablation cost, claim 9",
    claims: &[9],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    // No work units: its runs need `convergence`'s tuned rates, which a shard's folder does not
    // hold, so the merge runs it (after `convergence`, in registry order).
    units: None,
};

/// Mixed into the training seed for the fine-tuning data stream, so it differs from the
/// pre-training stream and from the scratch baseline's (`data_rng(seed)`).
pub const FINETUNE_SALT: u64 = 0x0000_f17e_7a5e_0009;

const CONV_TUNING: &str = "data/convergence/tuning.csv";

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::finetune::Config;
/// let c = Config::full();
/// assert_eq!(c.tier.depths, vec![24]);
/// assert_eq!((c.rewire, c.rewire_seed, c.finetune_steps), (0.25, 1, 150));
/// assert_eq!(c.tier.lrs, vec![3e-4, 1e-3, 3e-3, 1e-2]);
/// assert_eq!(Config::quick().finetune_steps, 40);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The tier, presets (including pre and post), the one depth (blocks) and the fine-tuning
    /// grid.
    pub tier: TierSet,
    /// The fraction of the vocabulary rewired for task A'.
    pub rewire: f64,
    /// The seed of the rewiring.
    #[serde(with = "crate::seed")]
    pub rewire_seed: u64,
    /// Fine-tuning (and scratch) updates.
    pub finetune_steps: u64,
    /// Fine-tuning tuning seeds and evaluation seeds.
    pub tune: TunePlan,
}

impl Config {
    fn depth(&self) -> usize {
        self.tier.depths[0]
    }

    fn base_a(&self) -> Result<RawTrain> {
        self.tier.tier.base()
    }

    fn base_b(&self) -> Result<RawTrain> {
        let mut b = self.tier.tier.base()?;
        b.task.rewire = self.rewire;
        b.task.rewire_seed = self.rewire_seed;
        b.steps = self.finetune_steps;
        b.log_every = (self.finetune_steps / 2).max(1);
        Ok(b)
    }

    fn cell(&self, preset: &'static Preset, lr: f64) -> Cell {
        Cell {
            preset,
            depth: self.depth(),
            optimizer: "adam".into(),
            lr,
            warmup: 0,
        }
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            tier: TierSet {
                tier: super::tier::Tier::lm(),
                presets: common::presets(&["pre", "post"]),
                depths: vec![24],
                lrs: vec![3e-4, 1e-3, 3e-3, 1e-2],
            },
            rewire: 0.25,
            rewire_seed: 1,
            finetune_steps: 150,
            tune: TunePlan {
                tune_seeds: vec![1000, 1001, 1002],
                seeds: 10,
            },
        }
    }

    fn quick() -> Self {
        let full = Self::full();
        Config {
            tier: TierSet {
                tier: super::tier::Tier {
                    steps: 60,
                    eval_every: 10,
                    ..full.tier.tier.clone()
                },
                depths: vec![4],
                lrs: vec![1e-3, 1e-2],
                ..full.tier.clone()
            },
            finetune_steps: 40,
            tune: TunePlan {
                tune_seeds: vec![1000],
                seeds: 3,
            },
            ..full
        }
    }

    fn check(&self) -> Result<()> {
        self.tier.check("finetune.tier")?;
        self.tune
            .check("finetune.tune.tune_seeds", "finetune.tune.seeds")?;
        check_count("finetune.finetune_steps", self.finetune_steps, 1)?;
        if self.tier.depths.len() != 1 {
            return Err(Error::invalid(
                "finetune.tier.depths",
                format!("{:?}", self.tier.depths),
                "one depth (blocks)",
            ));
        }
        for p in ["pre", "post"] {
            if !self.tier.presets.iter().any(|x| x.name == p) {
                return Err(Error::invalid(
                    "finetune.tier.presets",
                    common::names(&self.tier.presets),
                    "a list including pre and post (the claim compares them)",
                ));
            }
        }
        if !(self.rewire > 0.0 && self.rewire <= 1.0) {
            return Err(Error::invalid(
                "finetune.rewire",
                self.rewire,
                "a fraction of the vocabulary in (0, 1] (0 would fine-tune on the same language)",
            ));
        }
        let (a, b) = (self.base_a()?, self.base_b()?);
        for p in &self.tier.presets {
            self.cell(p, self.tier.lrs[0]).config(&a, 0)?;
            self.cell(p, self.tier.lrs[0]).config(&b, 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        let mut s = self.tune.eval_seeds();
        s.extend(&self.tune.tune_seeds);
        s
    }
}

/// One preset's results: a work unit ([`super::shard`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Job {
    preset: &'static Preset,
    /// `(purpose, outcome)`: pretrain (task A), tuning and finetune and scratch (task A').
    runs: Vec<(String, Outcome)>,
    /// `(stage, seed, ablation costs, angular distances)` at init and after pre-training.
    depth_use: Vec<DepthUse>,
    /// The tuned fine-tuning rate.
    lr: f64,
    /// The pre-training rate (`convergence`'s).
    pre_lr: f64,
}

/// `(stage, seed, ablation costs, angular distances)` of one model.
type DepthUse = (String, u64, Vec<f64>, Vec<f64>);

/// One evaluation seed's runs (pretrain, finetune, scratch) and its depth use at init and
/// after pre-training.
type SeedRuns = (Vec<(String, Outcome)>, DepthUse, DepthUse);

/// The two prepared tasks and the pre-training rate of each preset.
struct Setup {
    a: Prepared,
    b: Prepared,
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let path = out.root().join(CONV_TUNING);
    if !path.exists() {
        return Err(Error::Undefined(format!(
            "finetune reads {CONV_TUNING} (each preset's tuned pre-training rate), which does not exist under the output root: run the convergence analysis first (`normscope reproduce --only convergence,finetune`)"
        )));
    }
    out.read_input(CONV_TUNING)?;
    let tuning = normscope_core::output::table::read_csv(&path)?;
    let pre_lr: Vec<(&'static Preset, f64)> = c
        .tier
        .presets
        .iter()
        .map(|p| {
            Ok((
                *p,
                tuned_rate(&tuning, &c.tier.tier.name, p.name, c.depth())?,
            ))
        })
        .collect::<Result<_>>()?;
    let presets = c.tier.presets.clone();
    let runs_per = c.tune.seeds as usize * 3 + c.tune.tune_seeds.len() * (1 + c.tier.lrs.len());
    let bar = DelayedBar::training((presets.len() * runs_per) as u64, "runs");
    let setup = Setup {
        a: Prepared::new(&c.base_a()?, presets.len() * runs_per)?,
        b: Prepared::new(&c.base_b()?, presets.len() * runs_per)?,
    };
    let jobs: Vec<Job> = presets
        .par_iter()
        .map(|p| {
            let lr = pre_lr.iter().find(|x| x.0 == *p).expect("every preset").1;
            match Precision::parse(&c.tier.tier.precision)? {
                Precision::F64 => job::<f64>(c, &setup, p, lr, &bar),
                Precision::F32 => job::<f32>(c, &setup, p, lr, &bar),
            }
        })
        .collect::<Result<_>>()?;
    bar.finish();
    tables(c, out, &jobs)
}

/// The tuned rate of `convergence/tuning.csv` for (tier, preset, blocks).
fn tuned_rate(df: &DataFrame, tier: &str, preset: &str, blocks: usize) -> Result<f64> {
    let (t, p, b, lr, best) = (
        strs(df, "tier")?,
        strs(df, "preset")?,
        f64s(df, "blocks")?,
        f64s(df, "lr")?,
        strs(df, "tuned")?,
    );
    (0..df.height())
        .find(|&i| t[i] == tier && p[i] == preset && b[i] as usize == blocks && best[i] == "true")
        .map(|i| lr[i])
        .ok_or_else(|| {
            Error::Undefined(format!(
                "finetune: {CONV_TUNING} has no tuned rate for {preset} at {blocks} blocks in tier {tier}: give convergence that tier and depth"
            ))
        })
}

/// Fine-tunes `model` on task A' at `lr` from the stream `data_rng(seed ^ FINETUNE_SALT)`.
fn fine_tune<T: Real>(
    c: &Config,
    s: &Setup,
    preset: &'static Preset,
    seed: u64,
    lr: f64,
    model: TrainModel<T>,
) -> Result<Outcome> {
    let cell = c.cell(preset, lr);
    let cfg = cell.config(s.b.base(), seed)?;
    let mut rng = run::data_rng(seed ^ FINETUNE_SALT);
    let first = s.b.task().batch(&mut rng, cfg.batch);
    let t = run::train(
        &cfg,
        s.b.task(),
        cfg.presets[0],
        seed,
        (model, rng, first),
        s.b.eval(),
        &run::Options::default(),
        &(),
    );
    // A run stopped early (`interrupt`) has no outcome.
    normscope_core::interrupt::check()?;
    Ok(Outcome::new(
        cell,
        seed,
        cfg.schedule.steps,
        &t.records,
        t.diverged_at.is_some(),
    ))
}

/// Pre-trains (preset, seed) on task A at `lr`: the outcome and the model (and the model at
/// init, for the Curse-of-Depth measures).
fn pretrain<T: Real>(
    c: &Config,
    s: &Setup,
    preset: &'static Preset,
    seed: u64,
    lr: f64,
) -> Result<(Outcome, TrainModel<T>, TrainModel<T>)> {
    let cell = c.cell(preset, lr);
    let cfg = cell.config(s.a.base(), seed)?;
    let begin = run::start_as::<T>(&cfg, s.a.task(), cfg.presets[0], seed)?;
    let init = begin.0.clone();
    let t = run::train(
        &cfg,
        s.a.task(),
        cfg.presets[0],
        seed,
        begin,
        s.a.eval(),
        &run::Options::default(),
        &(),
    );
    // A run stopped early (`interrupt`) has no outcome.
    normscope_core::interrupt::check()?;
    let o = Outcome::new(
        cell,
        seed,
        cfg.schedule.steps,
        &t.records,
        t.diverged_at.is_some(),
    );
    Ok((o, t.model, init))
}

fn job<T: Real>(
    c: &Config,
    s: &Setup,
    preset: &'static Preset,
    pre_lr: f64,
    bar: &DelayedBar,
) -> Result<Job> {
    use normscope_core::monte_carlo::Progress;
    let tick = |o: Result<Outcome>| {
        bar.tick();
        o
    };
    // Held-out seeds: pre-train, then fine-tune at every grid rate.
    let tuning: Vec<(String, Outcome)> = c
        .tune
        .tune_seeds
        .par_iter()
        .map(|&seed| {
            let (o, m, _) = pretrain::<T>(c, s, preset, seed, pre_lr)?;
            bar.tick();
            let mut v = vec![("tuning-pretrain".to_string(), o)];
            for &lr in &c.tier.lrs {
                v.push((
                    "tuning".into(),
                    tick(fine_tune(c, s, preset, seed, lr, m.clone()))?,
                ));
            }
            Ok(v)
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let tuned: Vec<&Outcome> = tuning
        .iter()
        .filter(|x| x.0 == "tuning")
        .map(|x| &x.1)
        .collect();
    let lr = best_lr(&tuned);
    let eval: Vec<SeedRuns> = c
        .tune
        .eval_seeds()
        .par_iter()
        .map(|&seed| {
            let (o, m, init) = pretrain::<T>(c, s, preset, seed, pre_lr)?;
            bar.tick();
            let at_init = (
                "init".to_string(),
                seed,
                ablation::costs(&init, s.a.eval()),
                ablation::angular_distances(&init, s.a.eval()),
            );
            let trained = (
                "pretrained".to_string(),
                seed,
                ablation::costs(&m, s.a.eval()),
                ablation::angular_distances(&m, s.a.eval()),
            );
            let ft = tick(fine_tune(c, s, preset, seed, lr, m))?;
            let scratch_cell = c.cell(preset, pre_lr);
            let scratch = tick(s.b.outcome(&scratch_cell, seed))?;
            Ok((
                vec![
                    ("pretrain".into(), o),
                    ("finetune".into(), ft),
                    ("scratch".into(), scratch),
                ],
                at_init,
                trained,
            ))
        })
        .collect::<Result<_>>()?;
    let mut runs = tuning;
    let mut depth_use = Vec::new();
    for (r, a, b) in eval {
        runs.extend(r);
        depth_use.push(a);
        depth_use.push(b);
    }
    Ok(Job {
        preset,
        runs,
        depth_use,
        lr,
        pre_lr,
    })
}

fn tables(c: &Config, out: &mut Out, jobs: &[Job]) -> Result<()> {
    let tier = &c.tier.tier;
    let runs: Vec<(RunKey, &Outcome, &str)> = jobs
        .iter()
        .flat_map(|j| {
            j.runs
                .iter()
                .map(move |(purpose, o)| (RunKey::new(tier, &o.cell, o.seed), o, purpose.as_str()))
        })
        .collect();
    let mut df = runs_with_early(&runs, 0)?;
    // The fine-tuning rows train task A' for `finetune_steps`; their keys carry the tier's
    // pre-training steps, so the steps column is set from the purpose.
    let steps: Vec<u64> = runs
        .iter()
        .map(|r| {
            if r.2 == "pretrain" || r.2 == "tuning-pretrain" {
                tier.steps
            } else {
                c.finetune_steps
            }
        })
        .collect();
    df.with_column(column("steps", steps))?;
    df.with_column(column(
        "task_variant",
        runs.iter().map(|r| {
            if r.2.contains("pretrain") {
                "A".to_string()
            } else {
                format!("A' (rewire {} seed {})", c.rewire, c.rewire_seed)
            }
        }),
    ))?;
    out.frame("runs.csv", &mut df)?;
    let (fam, transfer) = family(&df)?;
    let (assessed, v) = judge(&fam)?;
    let mut ef = frame(vec![
        column("comparison", assessed.iter().map(|a| a.name.clone())),
        column("n", assessed.iter().map(|a| a.n as u64)),
        column("effect_gap", assessed.iter().map(|a| a.estimate)),
        column("effect_ci_low", assessed.iter().map(|a| a.ci.0)),
        column("effect_ci_high", assessed.iter().map(|a| a.ci.1)),
        column("q_two_sided", assessed.iter().map(|a| a.q_two_sided)),
        column("q_equivalence", assessed.iter().map(|a| a.q_equivalence)),
        column("outcome", assessed.iter().map(|a| a.outcome_text())),
        column("family_verdict", assessed.iter().map(|_| v.to_string())),
        column("transfer", assessed.iter().map(|_| transfer.clone())),
    ])?;
    out.frame("effects.csv", &mut ef)?;
    depth_use(c, out, jobs)
}

/// Claim 9's family from `runs.csv` (Post-LN - Pre-LN fine-tuned score per seed, in units of
/// A''s gap), and the transfer text (each preset's scratch minus fine-tuned score, median and
/// exact 95% interval).
fn family(df: &DataFrame) -> Result<(Family, String)> {
    let (p, purpose, seed, layers) = (
        strs(df, "preset")?,
        strs(df, "purpose")?,
        strs(df, "seed")?,
        f64s(df, "layers")?,
    );
    let sc = obs_column(df, "score", true)?;
    let arm = |preset: &str, what: &str| -> Vec<(String, Obs)> {
        (0..df.height())
            .filter(|&i| p[i] == preset && purpose[i] == what)
            .map(|i| (seed[i].clone(), sc[i]))
            .collect()
    };
    let pair = |a: &[(String, Obs)], b: &[(String, Obs)]| paired_obs(a, b, "finetune");
    let l = layers.first().copied().unwrap_or(f64::NAN);
    let fam = Family::new(
        "Post-LN - Pre-LN fine-tuned score on the related language, each at its tuned fine-tuning lr (units of the gap)",
        LOSS_SESOI,
        vec![Comparison {
            name: super::training::layers_text(l as usize),
            diffs: pair(&arm("post", "finetune"), &arm("pre", "finetune"))?,
            claimed: Claimed::Decrease,
            sesoi: None,
        }],
    );
    let mut transfer = Vec::new();
    for preset in [
        normscope_core::placement::PRE,
        normscope_core::placement::POST,
    ] {
        let d = pair(&arm(preset.name, "scratch"), &arm(preset.name, "finetune"))?;
        if let Some(m) = median_ci(&d) {
            transfer.push(format!(
                "{} scratch - fine-tuned {} [{}, {}]",
                preset.label,
                normscope_core::output::latex::plain(m.estimate),
                normscope_core::output::latex::plain(m.lo),
                normscope_core::output::latex::plain(m.hi)
            ));
        }
    }
    Ok((fam, transfer.join("; ")))
}

fn depth_use(c: &Config, out: &mut Out, jobs: &[Job]) -> Result<()> {
    let mut rows: Vec<(&'static Preset, String, u64, usize, f64, f64)> = Vec::new();
    let mut keys = Vec::new();
    for j in jobs {
        for (stage, seed, cost, ang) in &j.depth_use {
            for (l, (a, b)) in cost.iter().zip(ang).enumerate() {
                rows.push((j.preset, stage.clone(), *seed, l + 1, *a, *b));
                keys.push(RunKey::new(&c.tier.tier, &c.cell(j.preset, j.pre_lr), seed));
            }
        }
    }
    let mut cols = super::tier::key_columns(&keys);
    cols.extend([
        column("stage", rows.iter().map(|r| r.1.clone())),
        column("block", rows.iter().map(|r| r.3 as u64)),
        column("ablation_cost", rows.iter().map(|r| r.4)),
        column("angular_distance", rows.iter().map(|r| r.5)),
    ]);
    let mut df = frame(cols)?;
    out.frame("depth_use.csv", &mut df)?;
    for (metric, col) in [("ablation_cost", 4), ("angular_distance", 5)] {
        let mut plot = LinePlot::new(
            &format!(
                "{} per block after pre-training ({} tier, {} blocks; median of {} seeds, {})",
                if col == 4 {
                    "Ablation cost"
                } else {
                    "Angular distance to the previous block"
                },
                c.tier.tier.name,
                c.depth(),
                c.tune.seeds,
                common::ci_note(c.tune.seeds)
            ),
            "block l",
            if col == 4 {
                "ablation cost (nats/token)"
            } else {
                "angular distance / π"
            },
        );
        for (i, p) in c.tier.presets.iter().enumerate() {
            let pts: Vec<(f64, f64, f64, f64)> = (1..=c.depth())
                .filter_map(|l| {
                    let v: Vec<Obs> = rows
                        .iter()
                        .filter(|r| r.0 == *p && r.1 == "pretrained" && r.3 == l)
                        .filter_map(|r| Obs::exact(if col == 4 { r.4 } else { r.5 }))
                        .collect();
                    let m = median_ci(&v)?;
                    Some(common::drawn((l as f64, m.estimate, m.lo, m.hi), m.n))
                })
                .filter(|p| p.2.is_finite() && p.3.is_finite())
                .collect();
            plot.series.push(Series::points(p.label, i, &pts));
        }
        out.figure(metric, &plot)?;
    }
    Ok(())
}

/// Claim 9's verdict (one tier), from `finetune/runs.csv`.
///
/// **Tested as stated only at parity** (issue 58; rule set on 2026-12-07, after the data): the
/// claim compares fine-tuning after equal pre-training, so the verdict is the family's only
/// when the paired Post-LN - Pre-LN pre-trained score's 95% interval lies within
/// `+-`[`LOSS_SESOI`] of the gap ([`parity`]); otherwise it is "not tested as stated", naming
/// the gap in pre-training, with the fine-tuned comparison reported beside it, never
/// "refuted".
pub(crate) fn claim9(d: &Data) -> Result<Vec<TierVerdict>> {
    let df = d.frame("finetune/runs.csv")?;
    let tier = strs(&df, "tier")?.first().cloned().unwrap_or_default();
    let (fam, transfer) = family(&df)?;
    let (assessed, v) = judge(&fam)?;
    let context = format!("transfer (units of the gap; > 0: pre-training helps): {transfer}");
    let mut tv = TierVerdict::judged(&tier, &fam, assessed, &v, context);
    let (at_parity, text) = parity(&df)?;
    if !at_parity {
        tv.verdict = format!(
            "not tested as stated: pre-training did not reach parity ({text}); the fine-tuned comparison, reported but not judged: {v}"
        );
    }
    Ok(vec![tv])
}

/// Whether the two presets' pre-trained scores are at parity: the median of the paired
/// Post-LN - Pre-LN pre-trained score (units of the gap, rows of purpose `pretrain`) has its
/// exact 95% interval within `+-`[`LOSS_SESOI`]; and that difference in words.
pub(crate) fn parity(df: &DataFrame) -> Result<(bool, String)> {
    let (p, purpose, seed) = (strs(df, "preset")?, strs(df, "purpose")?, strs(df, "seed")?);
    let sc = obs_column(df, "score", true)?;
    let arm = |preset: &str| -> Vec<(String, Obs)> {
        (0..df.height())
            .filter(|&i| p[i] == preset && purpose[i] == "pretrain")
            .map(|i| (seed[i].clone(), sc[i]))
            .collect()
    };
    let d = paired_obs(&arm("post"), &arm("pre"), "finetune pre-training")?;
    let Some(m) = median_ci(&d) else {
        return Ok((false, "no pre-trained runs".into()));
    };
    let at = m.lo > -LOSS_SESOI && m.hi < LOSS_SESOI;
    let f = normscope_core::stats::verdict::end_text;
    Ok((
        at,
        format!(
            "Post-LN - Pre-LN pre-trained score {} [{}, {}] of the gap, parity needs the interval within +-{}",
            normscope_core::stats::verdict::sig4(m.estimate),
            f(m.lo),
            f(m.hi),
            LOSS_SESOI
        ),
    ))
}

#[cfg(test)]
mod parity_tests {
    use super::*;
    use polars::prelude::*;

    /// Pre-trained runs of ten seeds: Pre-LN at score `pre`, Post-LN at `pre + d_s` (gap 1).
    fn pretrained(pre: f64, d: impl Fn(u64) -> f64) -> DataFrame {
        let mut rows: Vec<(&str, String, f64)> = Vec::new();
        for s in 0..10u64 {
            rows.push(("pre", s.to_string(), pre));
            rows.push(("post", s.to_string(), pre + d(s)));
        }
        let n = rows.len();
        df!(
            "preset" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            "purpose" => vec!["pretrain"; n],
            "seed" => rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
            "score" => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            "floor" => vec![1.0; n],
            "context_free" => vec![2.0; n]
        )
        .unwrap()
    }

    #[test]
    fn parity_needs_the_pretraining_gap_within_the_sesoi() {
        // Post-LN 0.44 of the gap behind in every seed (the committed run's size): not at
        // parity, so claim 9 is not tested as stated.
        let (at, text) = parity(&pretrained(0.19, |_| 0.44)).unwrap();
        assert!(!at, "{text}");
        assert!(
            text.starts_with("Post-LN - Pre-LN pre-trained score 0.44 [0.44, 0.44]"),
            "{text}"
        );
        // Within +-0.01 in every seed: at parity.
        let (at, text) = parity(&pretrained(0.19, |s| 0.002 * s as f64 - 0.01)).unwrap();
        assert!(at, "{text}");
        // Interval straddling the SESOI: not shown to be at parity.
        let (at, _) = parity(&pretrained(0.19, |s| 0.02 * s as f64 - 0.05)).unwrap();
        assert!(!at);
    }
}
