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
//!   step is `lr sign(g)` and SGD's `lr g` by definition), the least-squares slope `b` of
//!
//!   ```text
//!   ln ||update_l||_RMS = a + b ln ||grad_l||_RMS,   ||x_l||_RMS = ||x_l||_F / sqrt(n_l),
//!   ```
//!
//!   across the blocks `l = 1..=L` (`n_l` the block's parameter entries;
//!   [`normscope_core::train::sweep::Outcome::scaling`], the `slope_rms` column of
//!   `scaling.csv`): for Adam the slope itself (claimed equivalent to 0: the per-entry update
//!   does not follow the gradient's scale), for SGD the slope minus 1 (claimed equivalent to
//!   0: proportional); smallest effect of interest [`SLOPE_SESOI`];
//! - *rescue*: Post-LN's final score (units of the gap) under SGD minus under Adam, claimed
//!   positive (Adam rescues Post-LN), smallest effect of interest
//!   [`super::convergence::LOSS_SESOI`].
//!
//! **Why per-entry RMS norms** (a referee's point, 2026-12-07): a Transformer's blocks
//! alternate attention (4,160 entries at width 32) and MLP (8,256), and a Frobenius norm
//! grows with `sqrt(n_l)`, so with Frobenius norms both sides of the regression alternate with
//! the block's size and the slope is pulled towards 1 whatever the optimizer does: Adam's
//! Frobenius slope at 6 layers, update 150, read +0.58 ("opposite"), its RMS slope +0.061
//! [0.023, 0.126] (within +-0.2). Dividing both norms by `sqrt(n_l)` subtracts the same
//! `0.5 ln n_l` from both logarithms and leaves the per-entry scaling the claim is about.
//!
//! **The mechanism, tested directly**: the regression across blocks is observational; the
//! unit tests of `normscope_core::train::optim` (`gradient_scale`) rescale one block's
//! gradients by `k = 1e-3, 1e3` and check that Adam's step moves by at most
//! `max(1, 1/k) eps / sqrt(v_hat)` of itself (from `step = lr m_hat / (sqrt(v_hat) + eps)`),
//! plain SGD's by exactly `k`, and momentum SGD's by `k` only when its whole history is
//! rescaled.
//!
//! **Claim 7's three families** (per tier; each Holm-adjusted on its own and judged on its
//! own, rules set on 2026-12-07, after the referee's report and so after the data):
//!
//! - (a) *invariance*: Adam's RMS slope of Post-LN at both updates and every depth, TOST
//!   within `+-SLOPE_SESOI` of 0;
//! - (b) *proportionality*: SGD's RMS slope minus 1, the same comparisons. The SGD arm is
//!   trained **with momentum** ([`Config::momentum`], 0.9): momentum averages gradients over
//!   steps, so its slope measures the averaging as much as the gradient's scale, and the
//!   family is labelled secondary ("SGD with momentum 0.9 (secondary: momentum averages
//!   gradients over steps); plain SGD not run"); plain SGD is not run (adding it would change
//!   the regeneration budget). The momentum is read from `optimizers/manifest.json`;
//! - (c) *rescue*: Post-LN's SGD - Adam final score at every depth.
//!
//! A single family over all three (the rule before 2026-12-07, 15 comparisons at the `lm`
//! tier) could only pass at 10 of 10 seeds for every sub-claim at once. The tier's verdict
//! (`tier_verdict`) is `supported` when every family is, `refuted` when every family is,
//! `conditional` when some family is supported or conditional, else `inconclusive`, followed
//! by each family's own verdict (`supported by family: invariance: ... | proportionality
//! (...): ... | rescue: ...`).
//!
//! A scaling table without `slope_rms` (written before 2026-12-07, with the Frobenius `slope`)
//! makes every slope comparison unknown, so not estimable, and says so in its name: the
//! Frobenius slope is never read in its place.
//!
//! Outputs: `runs.csv` (tuning and evaluation runs), `scaling.csv`, `status.csv` (the SGD arm, as
//! `convergence` writes them), `effects.csv` (the three families' comparisons, `family` naming
//! each one's).

use super::convergence::{LOSS_SESOI, runs_with_early, status_table};
use super::lr_search::scaling_frame;
use super::tier::{Tier, TierSet};
use super::training::{
    TierVerdict, distinct_strings, f64s, frame, lines, obs_column, paired_obs, strs, unknown,
};
use super::tuned::{self, TunePlan, TunedCell};
use super::warmup::judge;
use super::{Analysis, Out};
use crate::runner::data::Data;
use normscope_core::output::progress::DelayedBar;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{Assessed, Claimed, Comparison, Family, Verdict};
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
    let families = claim7_families(
        &names,
        Some(c.momentum),
        &df,
        &sc,
        &adam_runs,
        &adam_scaling,
    )?;
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

/// The column of a scaling table claim 7 reads: the slope with per-entry RMS norms
/// ([`normscope_core::train::sweep::Outcome::scaling`]), never the Frobenius `slope` of tables
/// written before 2026-12-07.
pub const SLOPE_COLUMN: &str = "slope_rms";

/// Claim 7's three families on one tier (module docs), each `None` where the tables give it
/// no comparison.
#[derive(Clone, Debug)]
pub(crate) struct Claim7Families {
    /// (a) Adam's invariance: Adam's RMS slope equivalent to 0.
    pub(crate) invariance: Option<Family>,
    /// (b) SGD's proportionality: SGD's RMS slope equivalent to 1.
    pub(crate) proportionality: Option<Family>,
    /// (c) The rescue: Post-LN's final score under SGD minus under Adam, positive.
    pub(crate) rescue: Option<Family>,
    /// How the SGD arm was run, for family (b)'s label: `plain SGD` when its momentum is 0,
    /// else `SGD with momentum m (secondary: ...); plain SGD not run`.
    pub(crate) sgd_label: String,
}

impl Claim7Families {
    /// `(short name, family)` of the families present, in the order (a), (b), (c).
    pub(crate) fn named(&self) -> Vec<(&'static str, &Family)> {
        [
            ("invariance", &self.invariance),
            ("proportionality", &self.proportionality),
            ("rescue", &self.rescue),
        ]
        .into_iter()
        .filter_map(|(n, f)| Some((n, f.as_ref()?)))
        .collect()
    }
}

/// Family (b)'s label for an SGD arm with `momentum` (None: not recorded).
pub(crate) fn sgd_label(momentum: Option<f64>) -> String {
    match momentum {
        Some(0.0) => "plain SGD".into(),
        Some(m) => format!(
            "SGD with momentum {m} (secondary: momentum averages gradients over steps); plain SGD not run"
        ),
        None => "SGD, momentum not recorded (secondary); plain SGD not known to be run".into(),
    }
}

/// Claim 7's families per tier (module docs): the SGD arm's tables (`sgd_runs`, `sgd_scaling`,
/// run with `momentum`) and the Adam arm's (`convergence`'s).
fn claim7_families(
    tiers: &[String],
    momentum: Option<f64>,
    sgd_runs: &DataFrame,
    sgd_scaling: &DataFrame,
    adam_runs: &DataFrame,
    adam_scaling: &DataFrame,
) -> Result<Vec<(String, Claim7Families)>> {
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
    let label = sgd_label(momentum);
    let sgd_what = if momentum == Some(0.0) {
        "plain SGD RMS slope - 1".to_string()
    } else {
        match momentum {
            Some(m) => format!("SGD (momentum {m}) RMS slope - 1"),
            None => "SGD RMS slope - 1".to_string(),
        }
    };
    let mut out = Vec::new();
    for tier in tiers {
        let mut depths: Vec<(u64, u64)> = (0..sgd_runs.height())
            .filter(|&i| t[i] == *tier && p[i] == CLAIM_PRESET.name)
            .map(|i| (b[i] as u64, l[i] as u64))
            .collect();
        depths.sort_unstable();
        depths.dedup();
        let (mut inv, mut prop, mut rescue) = (Vec::new(), Vec::new(), Vec::new());
        for &(blocks, layers) in &depths {
            let at = |opt| (tier.as_str(), CLAIM_PRESET.name, blocks, opt);
            let sgd_score = values(sgd_runs, at("sgd"), "score", true, None)?;
            let adam_score = values(adam_runs, at("adam"), "score", true, None)?;
            for &step in &steps {
                for (opt, runs, scaling, shift, what, comps) in [
                    (
                        "adam",
                        &adam_score,
                        adam_scaling,
                        0.0,
                        "Adam RMS slope",
                        &mut inv,
                    ),
                    (
                        "sgd",
                        &sgd_score,
                        sgd_scaling,
                        1.0,
                        sgd_what.as_str(),
                        &mut prop,
                    ),
                ] {
                    if runs.is_empty() {
                        continue;
                    }
                    // A table written before the RMS measure: every run's slope unknown, said
                    // so, never the Frobenius slope in its place.
                    let (slopes, note) = if scaling.column(SLOPE_COLUMN).is_ok() {
                        (
                            values(scaling, at(opt), SLOPE_COLUMN, false, Some(step))?,
                            String::new(),
                        )
                    } else {
                        (
                            Vec::new(),
                            format!(
                                " (no {SLOPE_COLUMN} column: a table from before the RMS measure, regenerate it)"
                            ),
                        )
                    };
                    if slopes.is_empty() && note.is_empty() {
                        continue;
                    }
                    let (diffs, missing) = slopes_of_every_run(runs, &slopes, shift);
                    let unknown_text = if missing > 0 && note.is_empty() {
                        format!(
                            " ({missing} of {} runs without a slope: unknown)",
                            diffs.len()
                        )
                    } else {
                        note
                    };
                    comps.push(Comparison {
                        name: format!("{what}, {layers} layers, update {step}{unknown_text}"),
                        diffs,
                        claimed: Claimed::Equivalent,
                        sesoi: None,
                    });
                }
            }
            if sgd_score.is_empty() || adam_score.is_empty() {
                continue;
            }
            rescue.push(Comparison {
                name: format!("rescue (SGD - Adam, units of the gap), {layers} layers"),
                diffs: paired_obs(&sgd_score, &adam_score, "optimizers: rescue")?,
                claimed: Claimed::Increase,
                sesoi: Some(LOSS_SESOI),
            });
        }
        let fam = |claim: String, sesoi: f64, comps: Vec<Comparison>| {
            (!comps.is_empty()).then(|| Family::new(&claim, sesoi, comps))
        };
        let f = Claim7Families {
            invariance: fam(
                format!(
                    "Adam's update does not follow the gradient's scale: RMS slope within +-{SLOPE_SESOI} of 0 ({tier} tier)"
                ),
                SLOPE_SESOI,
                inv,
            ),
            proportionality: fam(
                format!(
                    "SGD's update is proportional to the gradient: RMS slope within +-{SLOPE_SESOI} of 1, {label} ({tier} tier)"
                ),
                SLOPE_SESOI,
                prop,
            ),
            rescue: fam(
                format!("Adam rescues Post-LN: final score under SGD above Adam's ({tier} tier)"),
                LOSS_SESOI,
                rescue,
            ),
            sgd_label: label.clone(),
        };
        if f.named().is_empty() {
            continue;
        }
        out.push((tier.clone(), f));
    }
    Ok(out)
}

/// The first word of a verdict's kind (`supported`, `conditional`, `inconclusive`, `refuted`,
/// `not estimable`).
fn kind_of(v: &Verdict) -> &'static str {
    match v {
        Verdict::Supported { .. } => "supported",
        Verdict::Conditional { .. } => "conditional",
        Verdict::Inconclusive { .. } => "inconclusive",
        Verdict::Refuted { .. } => "refuted",
        Verdict::NotEstimable { .. } => "not estimable",
    }
}

/// The tier's verdict over claim 7's three families: `supported` when every family is,
/// `refuted` when every family is, `inconclusive` when none is supported or conditional and not
/// all are refuted, else `conditional`; then each family's own verdict, named.
pub(crate) fn combined_verdict(fams: &Claim7Families, verdicts: &[Verdict]) -> String {
    let kinds: Vec<&str> = verdicts.iter().map(kind_of).collect();
    let overall = if kinds.iter().all(|k| *k == "supported") {
        "supported"
    } else if kinds.iter().all(|k| *k == "refuted") {
        "refuted"
    } else if kinds
        .iter()
        .any(|k| *k == "supported" || *k == "conditional")
    {
        "conditional"
    } else {
        "inconclusive"
    };
    let each: Vec<String> = fams
        .named()
        .iter()
        .zip(verdicts)
        .map(|((name, _), v)| match *name {
            "proportionality" => format!("proportionality ({}): {v}", fams.sgd_label),
            n => format!("{n}: {v}"),
        })
        .collect();
    format!("{overall} by family: {}", each.join(" | "))
}

fn effects_table(out: &mut Out, families: &[(String, Claim7Families)]) -> Result<()> {
    let mut rows: Vec<(String, &str, Assessed, String)> = Vec::new();
    for (tier, fams) in families {
        for (name, f) in fams.named() {
            let (assessed, v) = judge(f)?;
            for a in assessed {
                rows.push((tier.clone(), name, a, v.to_string()));
            }
        }
    }
    let a = |g: fn(&Assessed) -> f64| rows.iter().map(move |r| g(&r.2)).collect::<Vec<f64>>();
    let mut df = frame(vec![
        column("tier", rows.iter().map(|r| r.0.clone())),
        column("family", rows.iter().map(|r| r.1)),
        column("comparison", rows.iter().map(|r| r.2.name.clone())),
        column("n", rows.iter().map(|r| r.2.n as u64)),
        column("effect", a(|x| x.estimate)),
        column("effect_ci_low", a(|x| x.ci.0)),
        column("effect_ci_high", a(|x| x.ci.1)),
        column("q_two_sided", a(|x| x.q_two_sided)),
        column("q_equivalence", a(|x| x.q_equivalence)),
        column("q_beyond", a(|x| x.q_beyond)),
        column("outcome", rows.iter().map(|r| r.2.outcome_text())),
        column("family_verdict", rows.iter().map(|r| r.3.clone())),
    ])?;
    out.frame("effects.csv", &mut df)
}

/// One tier's verdict over claim 7's three families: the families' comparisons in order
/// (a), (b), (c) (`assessed`, `effects`), each family's rule and verdict named, and the
/// combined verdict of [`combined_verdict`].
pub(crate) fn tier_verdict(
    tier: &str,
    fams: &Claim7Families,
    context: String,
) -> Result<TierVerdict> {
    let (mut assessed, mut verdicts, mut rules, mut claims) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut of_family = Vec::new();
    for (name, f) in fams.named() {
        let (a, v) = judge(f)?;
        of_family.extend(a.iter().map(|x| (f.claim.clone(), x.clone())));
        assessed.extend(a);
        verdicts.push(v);
        rules.push(format!("({name}) {}", f.rule()));
        claims.push(format!("({name}) {}", f.claim));
    }
    Ok(TierVerdict {
        tier: tier.into(),
        effects: lines(&assessed),
        rule: format!(
            "three families, each Holm-adjusted on its own and judged on its own: {}",
            rules.join(" | ")
        ),
        verdict: combined_verdict(fams, &verdicts),
        context,
        family: claims.join("; "),
        assessed: of_family,
    })
}

/// The SGD arm's momentum as `optimizers/manifest.json` records it (its `config`), if it does.
fn recorded_momentum(d: &Data) -> Option<f64> {
    let path = d.path("optimizers/manifest.json").ok()?;
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("config")?.get("momentum")?.as_f64()
}

/// Claim 7's verdict per tier, from this analysis's and `convergence`'s tables: one
/// [`TierVerdict`] per tier combining the three families ([`tier_verdict`]).
pub(crate) fn claim7(d: &Data) -> Result<Vec<TierVerdict>> {
    let sgd_runs = d.frame("optimizers/runs.csv")?;
    let sgd_scaling = d.frame("optimizers/scaling.csv")?;
    let adam_runs = d.frame("convergence/runs.csv")?;
    let adam_scaling = d.frame("convergence/scaling.csv")?;
    let tiers = distinct_strings(&strs(&sgd_runs, "tier")?);
    let momentum = recorded_momentum(d);
    let mut out = Vec::new();
    for (tier, fams) in claim7_families(
        &tiers,
        momentum,
        &sgd_runs,
        &sgd_scaling,
        &adam_runs,
        &adam_scaling,
    )? {
        let context = [CONV_STATUS, "optimizers/status.csv"]
            .iter()
            .map(|f| super::convergence::edge_note(d, f, &tier, Some(CLAIM_PRESET.name)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        out.push(tier_verdict(&tier, &fams, context)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEDS: u64 = 10;

    /// A runs table of Post-LN on tier `lm` at 12 blocks (6 layers), `opt`'s evaluation runs
    /// with scores `score(seed)` (gap 1: floor 0, context-free 1).
    fn runs(opt: &str, score: impl Fn(u64) -> f64) -> DataFrame {
        let n = SEEDS as usize;
        frame(vec![
            column("tier", vec!["lm"; n]),
            column("preset", vec![CLAIM_PRESET.name; n]),
            column("blocks", vec![12u64; n]),
            column("layers", vec![6u64; n]),
            column("optimizer", vec![opt; n]),
            column("seed", (0..SEEDS).map(|s| s.to_string())),
            column("purpose", vec!["evaluation"; n]),
            column("score", (0..SEEDS).map(score)),
            column("floor", vec![0.0; n]),
            column("context_free", vec![1.0; n]),
        ])
        .unwrap()
    }

    /// A scaling table at updates 150 and 300 with the Frobenius `slope` and, when
    /// `rms` is given, `slope_rms` per seed.
    fn scaling(
        opt: &str,
        frob: impl Fn(u64) -> f64,
        rms: Option<&dyn Fn(u64) -> f64>,
    ) -> DataFrame {
        let rows: Vec<(u64, u64)> = [150u64, 300]
            .iter()
            .flat_map(|&st| (0..SEEDS).map(move |s| (st, s)))
            .collect();
        let n = rows.len();
        let mut cols = vec![
            column("tier", vec!["lm"; n]),
            column("preset", vec![CLAIM_PRESET.name; n]),
            column("blocks", vec![12u64; n]),
            column("optimizer", vec![opt; n]),
            column("seed", rows.iter().map(|r| r.1.to_string())),
            column("step", rows.iter().map(|r| r.0)),
            column("slope", rows.iter().map(|r| frob(r.1))),
        ];
        if let Some(f) = rms {
            cols.push(column(SLOPE_COLUMN, rows.iter().map(|r| f(r.1))));
        }
        frame(cols).unwrap()
    }

    /// Seed-dependent jitter in `[-w, w]`.
    fn jitter(s: u64, w: f64) -> f64 {
        w * ((s as f64 * 2.399).sin())
    }

    fn families(
        momentum: Option<f64>,
        sgd_rms: Option<&dyn Fn(u64) -> f64>,
        adam_rms: Option<&dyn Fn(u64) -> f64>,
    ) -> Claim7Families {
        let sgd_runs = runs("sgd", |s| 0.6 + jitter(s, 0.1));
        let adam_runs = runs("adam", |s| 0.2 + jitter(s, 0.1));
        // The Frobenius slopes a Transformer's alternating block sizes give: Adam's near
        // +0.58 (the artefact), momentum SGD's near 0.62.
        let sgd_sc = scaling("sgd", |s| 0.62 + jitter(s, 0.05), sgd_rms);
        let adam_sc = scaling("adam", |s| 0.58 + jitter(s, 0.05), adam_rms);
        let mut f = claim7_families(
            &["lm".into()],
            momentum,
            &sgd_runs,
            &sgd_sc,
            &adam_runs,
            &adam_sc,
        )
        .unwrap();
        assert_eq!(f.len(), 1);
        f.remove(0).1
    }

    #[test]
    fn three_families_each_judged_on_the_rms_slope() {
        // Per entry, Adam's slope is about 0.06 (within +-0.2 of 0) and SGD's about 1.0:
        // the RMS columns, not the Frobenius ones, are read.
        let adam_rms = |s| 0.06 + jitter(s, 0.04);
        let sgd_rms = |s| 1.0 + jitter(s, 0.05);
        let f = families(Some(0.9), Some(&sgd_rms), Some(&adam_rms));
        let names: Vec<&str> = f.named().iter().map(|x| x.0).collect();
        assert_eq!(names, ["invariance", "proportionality", "rescue"]);
        // Each family its own Holm: 2 updates, 2 updates, 1 depth.
        let sizes: Vec<usize> = f.named().iter().map(|x| x.1.comparisons.len()).collect();
        assert_eq!(sizes, [2, 2, 1]);
        let inv = &f.invariance.as_ref().unwrap().comparisons[0];
        assert_eq!(inv.name, "Adam RMS slope, 6 layers, update 150");
        let prop = &f.proportionality.as_ref().unwrap().comparisons[1];
        assert_eq!(
            prop.name,
            "SGD (momentum 0.9) RMS slope - 1, 6 layers, update 300"
        );
        let tv = tier_verdict("lm", &f, String::new()).unwrap();
        assert_eq!(
            tv.verdict,
            "supported by family: invariance: supported (holds in 2 of 2) | proportionality \
             (SGD with momentum 0.9 (secondary: momentum averages gradients over steps); plain \
             SGD not run): supported (holds in 2 of 2) | rescue: supported (holds in 1 of 1)"
        );
        assert_eq!(tv.assessed.len(), 5);
        assert!(tv.rule.starts_with("three families"), "{}", tv.rule);
        // Adam's median RMS slope is the effect; the Frobenius 0.58 appears nowhere.
        assert!(
            tv.assessed[0].1.estimate.abs() < 0.11,
            "{}",
            tv.assessed[0].1.estimate
        );
    }

    #[test]
    fn the_frobenius_artefact_would_have_read_as_opposite() {
        // The same runs judged on the Frobenius column (the old measure, passed as if RMS):
        // Adam's slope near 0.58 differs from 0 by more than the SESOI.
        let frob = |s| 0.58 + jitter(s, 0.05);
        let rms = |s| 0.06 + jitter(s, 0.04);
        let sgd_rms = |s| 1.0 + jitter(s, 0.05);
        let old = families(Some(0.9), Some(&sgd_rms), Some(&frob));
        let new = families(Some(0.9), Some(&sgd_rms), Some(&rms));
        let (_, v_old) = judge(old.invariance.as_ref().unwrap()).unwrap();
        let (_, v_new) = judge(new.invariance.as_ref().unwrap()).unwrap();
        assert!(matches!(v_old, Verdict::Refuted { .. }), "{v_old}");
        assert!(matches!(v_new, Verdict::Supported { n: 2 }), "{v_new}");
    }

    #[test]
    fn one_family_failing_makes_the_tier_conditional_and_says_which() {
        // SGD with momentum whose RMS slope is 0.6 (momentum averaging): proportionality
        // refuted, the other two supported.
        let adam_rms = |s| 0.06 + jitter(s, 0.04);
        let sgd_rms = |s| 0.6 + jitter(s, 0.05);
        let f = families(Some(0.9), Some(&sgd_rms), Some(&adam_rms));
        let tv = tier_verdict("lm", &f, String::new()).unwrap();
        assert!(
            tv.verdict
                .starts_with("conditional by family: invariance: supported")
        );
        assert!(
            tv.verdict.contains("plain SGD not run): refuted"),
            "{}",
            tv.verdict
        );
        assert!(tv.verdict.ends_with("rescue: supported (holds in 1 of 1)"));
    }

    #[test]
    fn tables_without_the_rms_column_are_not_estimable_never_frobenius() {
        let f = families(None, None, None);
        let inv = f.invariance.as_ref().unwrap();
        assert!(
            inv.comparisons[0].name.ends_with(
                "(no slope_rms column: a table from before the RMS measure, regenerate it)"
            ),
            "{}",
            inv.comparisons[0].name
        );
        let tv = tier_verdict("lm", &f, String::new()).unwrap();
        assert!(
            tv.verdict
                .starts_with("conditional by family: invariance: not estimable")
        );
        assert!(tv.verdict.contains(
            "proportionality (SGD, momentum not recorded (secondary); plain SGD not known to be run): not estimable"
        ));
        assert_eq!(sgd_label(Some(0.0)), "plain SGD");
    }
}
