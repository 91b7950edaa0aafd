//! `optimizers` (claim 7: "Adam's update is O(1) whatever the gradient's scale, which rescues
//! Post-Norm from small gradients; SGD's update is proportional to the gradient"; Liu et al.
//! 2020, arXiv:2004.08249): SGD with momentum against Adam, each at its own tuned learning
//! rate, per tier and depth.
//!
//! **Runs.** The SGD arm is trained here ([`super::tuned`]: tuned on held-out seeds over its
//! tier's SGD grid, then the evaluation seeds); the Adam arm is `convergence`'s (the same
//! tiers, depths and seeds, read from `convergence/runs.csv` and `convergence/scaling.csv`,
//! recorded as inputs), so both arms start from the same draws and see the same batches.
//!
//! **Effects**, per seed:
//!
//! - *scaling*: at updates beyond the first (`steps / 2` and `steps`: at update 1 Adam's
//!   step is `lr sign(g)` and SGD's `lr g` by definition), the least-squares slope of `ln
//!   ||update_l||` on `ln ||grad_l||` across the blocks ([`normscope_core::train::sweep::Outcome::scaling`]):
//!   for Adam the slope itself (claimed equivalent to 0: the update does not follow the
//!   gradient's scale), for SGD the slope minus 1 (claimed equivalent to 0: proportional);
//!   smallest effect of interest [`SLOPE_SESOI`];
//! - *rescue*: Post-LN's final score (units of the gap) under SGD minus under Adam, claimed
//!   positive (Adam rescues Post-LN), smallest effect of interest
//!   [`super::convergence::LOSS_SESOI`].
//!
//! **Claim 7's family** (per tier, Holm over all of it): the scaling comparisons of Post-LN
//! for both optimizers at both updates and every depth, and the rescue at every depth.
//!
//! Outputs: `runs.csv` (tuning and evaluation runs), `scaling.csv`, `status.csv` (the SGD arm, as
//! `convergence` writes them), `effects.csv` (the family's comparisons).

use super::convergence::{LOSS_SESOI, runs_with_early, status_table};
use super::lr_search::scaling_frame;
use super::tier::{Tier, TierSet};
use super::training::{
    TierVerdict, distinct_strings, f64s, frame, obs_column, paired_obs, strs, unknown,
};
use super::tuned::{self, TunePlan, TunedCell};
use super::warmup::judge;
use super::{Analysis, Out};
use crate::runner::data::Data;
use normscope_core::output::progress::DelayedBar;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{Assessed, Claimed, Comparison, Family};
use normscope_core::train::sweep::Cell;
use normscope_core::{Error, Result};
use polars::prelude::DataFrame;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "optimizers",
    about: "SGD (momentum) vs Adam at each one's tuned lr: update-vs-gradient scaling beyond update 1, Post-LN's rescue by Adam, claim 7",
    claims: &[7],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some("one (tier, preset, depth): its SGD lr tuning runs and evaluation runs"),
};

/// Claim 7's smallest effect of interest on a scaling slope.
pub const SLOPE_SESOI: f64 = 0.2;
/// The preset claim 7 is about.
pub const CLAIM_PRESET: &Preset = normscope_core::placement::POST;

const CONV_RUNS: &str = "data/convergence/runs.csv";
const CONV_SCALING: &str = "data/convergence/scaling.csv";
const CONV_STATUS: &str = "convergence/status.csv";

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::optimizers::Config;
/// let c = Config::full();
/// assert_eq!(c.momentum, 0.9);
/// assert_eq!(c.tiers.len(), 2);
/// assert_eq!(c.tiers[0].lrs, vec![3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0]);
/// assert_eq!(c.tiers[0].presets.len(), 1);
/// assert_eq!(Config::quick().tiers[1].lrs, vec![3e-2, 3e-1]);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// SGD's momentum.
    pub momentum: f64,
    /// Tuning and evaluation seeds (the evaluation seeds must be `convergence`'s).
    pub tune: TunePlan,
    /// Tiers, presets, depths and SGD grids (`convergence`'s tiers and depths).
    pub tiers: Vec<TierSet>,
}

impl Config {
    fn cells(&self) -> Vec<TunedCell> {
        let mut v = Vec::new();
        for (t, s) in self.tiers.iter().enumerate() {
            for p in &s.presets {
                for &depth in &s.depths {
                    v.push(TunedCell {
                        tier: t,
                        cell: Cell {
                            preset: p,
                            depth,
                            optimizer: "sgd".into(),
                            lr: s.lrs[0],
                            warmup: 0,
                        },
                    });
                }
            }
        }
        v
    }

    /// The tier sets (the SGD grids).
    fn sets(&self) -> Vec<TierSet> {
        self.tiers.clone()
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        let conv = super::convergence::Config::full();
        Config {
            momentum: 0.9,
            tune: conv.tune.clone(),
            tiers: conv
                .tiers
                .iter()
                .map(|s| TierSet {
                    presets: vec![CLAIM_PRESET],
                    lrs: vec![3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0],
                    ..s.clone()
                })
                .collect(),
        }
    }

    fn quick() -> Self {
        let conv = super::convergence::Config::quick();
        Config {
            tune: conv.tune.clone(),
            tiers: conv
                .tiers
                .iter()
                .map(|s| TierSet {
                    presets: vec![CLAIM_PRESET],
                    lrs: vec![3e-2, 3e-1],
                    ..s.clone()
                })
                .collect(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        self.tune
            .check("optimizers.tune.tune_seeds", "optimizers.tune.seeds")?;
        if !(self.momentum.is_finite() && (0.0..1.0).contains(&self.momentum)) {
            return Err(Error::invalid(
                "optimizers.momentum",
                self.momentum,
                "a number in [0, 1)",
            ));
        }
        if self.tiers.is_empty() {
            return Err(Error::invalid(
                "optimizers.tiers",
                "[]",
                "a non-empty list of tiers",
            ));
        }
        for s in &self.tiers {
            s.check("optimizers.tiers")?;
        }
        for c in self.cells() {
            c.cell
                .config(&sgd_base(&self.tiers[c.tier].tier, self.momentum)?, 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        let mut s = self.tune.eval_seeds();
        s.extend(&self.tune.tune_seeds);
        s
    }
}

/// A tier's base request with SGD's momentum.
fn sgd_base(t: &Tier, momentum: f64) -> Result<normscope_core::train::config::RawTrain> {
    let mut b = t.base()?;
    b.optimizer = "sgd".into();
    b.optimizer_flags.sgd.momentum = Some(momentum);
    b.optimizer_flags.adam.beta2 = None;
    Ok(b)
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let cells = c.cells();
    let sets = c.sets();
    let total: usize = cells
        .iter()
        .map(|x| c.tune.runs(sets[x.tier].lrs.len()))
        .sum();
    let bar = DelayedBar::training(total as u64, "runs");
    let momentum = c.momentum;
    let Some(tuned) = out.units(
        "cells",
        &cells,
        |x| tuned::cost(&sets, x, &c.tune),
        |mine| tuned::run_cells_with(&sets, mine, &c.tune, &bar, |t| sgd_base(t, momentum)),
    )?
    else {
        return Ok(());
    };
    bar.finish();
    let tiers: Vec<Tier> = sets.iter().map(|s| s.tier.clone()).collect();
    let runs = tuned::keyed(&tiers, &cells, &tuned);
    let mut df = runs_with_early(&runs, 0)?;
    out.frame("runs.csv", &mut df)?;
    let mut sc = scaling_frame(&runs)?;
    out.frame("scaling.csv", &mut sc)?;
    status_table(out, &tiers, &cells, &tuned, &c.tune)?;
    // The Adam arm, read after the SGD runs (a shard computes its runs and stops before).
    for rel in [CONV_RUNS, CONV_SCALING] {
        if !out.root().join(rel).exists() {
            return Err(Error::Undefined(format!(
                "optimizers reads {rel} (the Adam arm), which does not exist under the output root: run the convergence analysis first (`normscope reproduce --only convergence,optimizers`)"
            )));
        }
        out.read_input(rel)?;
    }
    let adam_runs = normscope_core::output::table::read_csv(&out.root().join(CONV_RUNS))?;
    let adam_scaling = normscope_core::output::table::read_csv(&out.root().join(CONV_SCALING))?;
    let names: Vec<String> = tiers.iter().map(|t| t.name.clone()).collect();
    let families = claim7_families(&names, &df, &sc, &adam_runs, &adam_scaling)?;
    effects_table(out, &families)
}

/// `(seed, value)` of the evaluation runs of `(tier, preset, blocks, optimizer)` in a runs or
/// scaling table, `value` from `col` (over the gap when `gap`; censored where its flag says
/// so, unknown where not finite: [`obs_column`]), at `step` when given.
fn values(
    df: &DataFrame,
    at: (&str, &str, u64, &str),
    col: &str,
    gap: bool,
    step: Option<u64>,
) -> Result<Vec<(String, Obs)>> {
    let (t, p, b, o) = (
        strs(df, "tier")?,
        strs(df, "preset")?,
        f64s(df, "blocks")?,
        strs(df, "optimizer")?,
    );
    let seed = strs(df, "seed")?;
    let v = obs_column(df, col, gap)?;
    let purpose = strs(df, "purpose").unwrap_or_else(|_| vec!["evaluation".into(); df.height()]);
    let steps = if step.is_some() {
        f64s(df, "step")?
    } else {
        vec![0.0; df.height()]
    };
    Ok((0..df.height())
        .filter(|&i| {
            t[i] == at.0
                && p[i] == at.1
                && b[i] as u64 == at.2
                && o[i] == at.3
                && purpose[i] == "evaluation"
                && step.is_none_or(|s| steps[i] as u64 == s)
        })
        .map(|i| (seed[i].clone(), v[i]))
        .collect())
}

/// Every evaluation seed of `runs` (the arm's runs) with its slope `- shift` from `slopes`; a
/// run without a slope at that update (stopped before it, or undefined) counts as unknown
/// (`[-inf, inf]`), never dropped. Returns the observations and how many are unknown.
fn slopes_of_every_run(
    runs: &[(String, Obs)],
    slopes: &[(String, Obs)],
    shift: f64,
) -> (Vec<Obs>, usize) {
    let shift = Obs::exact(shift).expect("a finite shift");
    let obs: Vec<Obs> = runs
        .iter()
        .map(|(s, _)| {
            slopes
                .iter()
                .find(|(u, _)| u == s)
                .map_or_else(unknown, |x| x.1 - shift)
        })
        .collect();
    let missing = obs
        .iter()
        .filter(|o| !o.lo().is_finite() && !o.hi().is_finite())
        .count();
    (obs, missing)
}

/// Claim 7's family per tier (module docs).
fn claim7_families(
    tiers: &[String],
    sgd_runs: &DataFrame,
    sgd_scaling: &DataFrame,
    adam_runs: &DataFrame,
    adam_scaling: &DataFrame,
) -> Result<Vec<(String, Family)>> {
    let (t, p, b, l) = (
        strs(sgd_runs, "tier")?,
        strs(sgd_runs, "preset")?,
        f64s(sgd_runs, "blocks")?,
        f64s(sgd_runs, "layers")?,
    );
    let steps_of = |df: &DataFrame| -> Result<Vec<u64>> {
        let mut s: Vec<u64> = f64s(df, "step")?
            .iter()
            .map(|x| *x as u64)
            .filter(|x| *x > 1)
            .collect();
        s.sort_unstable();
        s.dedup();
        Ok(s)
    };
    let steps = steps_of(sgd_scaling)?;
    let mut out = Vec::new();
    for tier in tiers {
        let mut depths: Vec<(u64, u64)> = (0..sgd_runs.height())
            .filter(|&i| t[i] == *tier && p[i] == CLAIM_PRESET.name)
            .map(|i| (b[i] as u64, l[i] as u64))
            .collect();
        depths.sort_unstable();
        depths.dedup();
        let mut comps = Vec::new();
        for &(blocks, layers) in &depths {
            let at = |opt| (tier.as_str(), CLAIM_PRESET.name, blocks, opt);
            let sgd_score = values(sgd_runs, at("sgd"), "score", true, None)?;
            let adam_score = values(adam_runs, at("adam"), "score", true, None)?;
            for &step in &steps {
                for (opt, runs, scaling, shift, what) in [
                    ("adam", &adam_score, adam_scaling, 0.0, "Adam slope"),
                    ("sgd", &sgd_score, sgd_scaling, 1.0, "SGD slope - 1"),
                ] {
                    let slopes = values(scaling, at(opt), "slope", false, Some(step))?;
                    if runs.is_empty() || slopes.is_empty() {
                        continue;
                    }
                    let (diffs, missing) = slopes_of_every_run(runs, &slopes, shift);
                    let unknown_text = if missing > 0 {
                        format!(
                            " ({missing} of {} runs without a slope: unknown)",
                            diffs.len()
                        )
                    } else {
                        String::new()
                    };
                    comps.push(Comparison {
                        name: format!("{what}, {layers} layers, update {step}{unknown_text}"),
                        diffs,
                        claimed: Claimed::Equivalent,
                        sesoi: None,
                    });
                }
            }
            comps.push(Comparison {
                name: format!("rescue (SGD - Adam, units of the gap), {layers} layers"),
                diffs: paired_obs(&sgd_score, &adam_score, "optimizers: rescue")?,
                claimed: Claimed::Increase,
                sesoi: Some(LOSS_SESOI),
            });
        }
        if comps.is_empty() {
            continue;
        }
        out.push((
            tier.clone(),
            Family::new(
                &format!("Adam's update does not follow the gradient's scale, SGD's does, and Adam rescues Post-LN ({tier} tier)"),
                SLOPE_SESOI,
                comps,
            ),
        ));
    }
    Ok(out)
}

fn effects_table(out: &mut Out, families: &[(String, Family)]) -> Result<()> {
    let mut rows: Vec<(String, Assessed, String)> = Vec::new();
    for (tier, f) in families {
        let (assessed, v) = judge(f)?;
        for a in assessed {
            rows.push((tier.clone(), a, v.to_string()));
        }
    }
    let a = |g: fn(&Assessed) -> f64| rows.iter().map(move |r| g(&r.1)).collect::<Vec<f64>>();
    let mut df = frame(vec![
        column("tier", rows.iter().map(|r| r.0.clone())),
        column("comparison", rows.iter().map(|r| r.1.name.clone())),
        column("n", rows.iter().map(|r| r.1.n as u64)),
        column("effect", a(|x| x.estimate)),
        column("effect_ci_low", a(|x| x.ci.0)),
        column("effect_ci_high", a(|x| x.ci.1)),
        column("q_two_sided", a(|x| x.q_two_sided)),
        column("q_equivalence", a(|x| x.q_equivalence)),
        column("q_beyond", a(|x| x.q_beyond)),
        column("outcome", rows.iter().map(|r| r.1.outcome_text())),
        column("family_verdict", rows.iter().map(|r| r.2.clone())),
    ])?;
    out.frame("effects.csv", &mut df)
}

/// Claim 7's verdict per tier, from this analysis's and `convergence`'s tables.
pub(crate) fn claim7(d: &Data) -> Result<Vec<TierVerdict>> {
    let sgd_runs = d.frame("optimizers/runs.csv")?;
    let sgd_scaling = d.frame("optimizers/scaling.csv")?;
    let adam_runs = d.frame("convergence/runs.csv")?;
    let adam_scaling = d.frame("convergence/scaling.csv")?;
    let tiers = distinct_strings(&strs(&sgd_runs, "tier")?);
    let mut out = Vec::new();
    for (tier, f) in claim7_families(&tiers, &sgd_runs, &sgd_scaling, &adam_runs, &adam_scaling)? {
        let (assessed, v) = judge(&f)?;
        let context = [CONV_STATUS, "optimizers/status.csv"]
            .iter()
            .map(|f| super::convergence::edge_note(d, f, &tier, Some(CLAIM_PRESET.name)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        out.push(TierVerdict::judged(&tier, &f, assessed, &v, context));
    }
    Ok(out)
}
