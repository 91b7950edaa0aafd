//! `convergence` (claim 8: "Post-Norm converges faster early; Pre-Norm is better for deep nets,
//! Post-Norm for shallow ones"): Post-LN against Pre-LN, each at its own tuned learning rate,
//! per tier and depth, with Adam (these runs are also claim 7's Adam arm, read by
//! `optimizers`).
//!
//! **Design** ([`super::tuned`]): every (tier, preset, depth) is tuned over its tier's
//! learning-rate grid on held-out seeds (the lowest median final score), then trained from the
//! evaluation seeds `0..seeds`, paired across presets. Each run is classified from its curve
//! ([`normscope_core::train::classify`]); a run still descending at the end has not converged, and the
//! tables say so.
//!
//! **Effects**, per seed, in units of the task's gap `C - F` (context-free loss minus floor),
//! Post-LN minus Pre-LN: the *early excess* (evaluation loss minus floor at update
//! `early_step`; a run stopped before, or not finite there, counts as at least the gap) and the *final score* (the final
//! excess, a diverged run counting as at least the gap, [`super::training::score`]).
//!
//! **Claim 8's family** (one family per tier, Holm over all of it, smallest effect of interest
//! [`LOSS_SESOI`] of the gap): (a) early, at every depth: claimed lower for Post-LN; (b)
//! final, at the deep depths (at least [`DEEP_MIN_LAYERS`] layers): claimed higher for
//! Post-LN (Pre-LN better); (c) final, at the shallow depths (at most [`SHALLOW_MAX_LAYERS`]
//! layers): claimed lower for Post-LN.
//!
//! Outputs: `runs.csv` (every run), `scaling.csv` (per evaluation run and logged update: the
//! slope of log update norm on log gradient norm across blocks), `tuning.csv` (per cell: the grid's median scores, the
//! tuned lr), `status.csv` (per cell at its tuned lr: the runs of each class, median final
//! excess with its exact 95% interval), `effects.csv` (the family's comparisons), figures
//! `curves_<tier>_L<layers>` (median evaluation excess over updates per preset, exact 95%
//! intervals of the median).

use super::lr_search::outcome_frame;
use super::tier::{RunKey, TierSet, key_columns, seed_range};
use super::training::{
    TierVerdict, at_least_name, check_count, distinct_strings, f64s, frame, obs_column, paired_obs,
    score, score_at_least, score_obs, strs,
};
use super::tuned::{self, TunePlan, Tuned, TunedCell};
use super::warmup::judge;
use super::{Analysis, Out, common};
use crate::runner::data::Data;
use normscope_core::output::progress::DelayedBar;
use normscope_core::output::table::column;
use normscope_core::stats::bootstrap::median;
use normscope_core::stats::median_ci::median_ci;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{Claimed, Comparison, Family};
use normscope_core::train::classify::RunClass;
use normscope_core::train::sweep::{Cell, Outcome};
use normscope_core::{Error, Result};
use normscope_figure::{LinePlot, Series};
use polars::prelude::DataFrame;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "convergence",
    about: "Post-LN vs Pre-LN at each one's tuned lr per tier and depth: early and final excess, curves, claim 8",
    claims: &[7, 8],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some(
        "one (tier, preset, depth): its lr tuning runs and its evaluation runs at the tuned lr",
    ),
};

/// Claims 7-9's smallest effect of interest on a loss, as a fraction of the task's gap `C - F`.
pub const LOSS_SESOI: f64 = 0.05;
/// Depths of at least this many layers are "deep" for claim 8.
pub const DEEP_MIN_LAYERS: usize = 24;
/// Depths of at most this many layers are "shallow" for claim 8.
pub const SHALLOW_MAX_LAYERS: usize = 6;

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::convergence::Config;
/// let c = Config::full();
/// assert_eq!((c.optimizer.as_str(), c.early_step), ("adam", 60));
/// assert_eq!(c.tune.tune_seeds, vec![1000, 1001, 1002]);
/// assert_eq!(c.tiers[0].tier.name, "lm");
/// assert_eq!(c.tiers[1].depths, vec![6, 24, 48]);
/// let q = Config::quick();
/// assert_eq!((q.early_step, q.tiers[0].tier.steps, q.tiers[0].depths.clone()), (20, 60, vec![4]));
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Optimizer.
    pub optimizer: String,
    /// The update of the early excess (a multiple of every tier's `eval_every`).
    pub early_step: u64,
    /// Tuning and evaluation seeds.
    pub tune: TunePlan,
    /// Tiers, presets, depths and grids.
    pub tiers: Vec<TierSet>,
}

impl Config {
    fn cells(&self) -> Vec<TunedCell> {
        let mut v = Vec::new();
        for (t, s) in self.tiers.iter().enumerate() {
            for &p in &s.presets {
                for &depth in &s.depths {
                    v.push(TunedCell {
                        tier: t,
                        cell: Cell {
                            preset: p,
                            depth,
                            optimizer: self.optimizer.clone(),
                            lr: s.lrs[0],
                            warmup: 0,
                        },
                    });
                }
            }
        }
        v
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        let two = common::presets(&["pre", "post"]);
        Config {
            optimizer: "adam".into(),
            early_step: 60,
            tune: TunePlan {
                tune_seeds: vec![1000, 1001, 1002],
                seeds: 10,
            },
            tiers: vec![
                TierSet {
                    tier: super::tier::Tier::lm(),
                    presets: two.clone(),
                    depths: vec![12, 24, 48],
                    lrs: vec![1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
                },
                TierSet {
                    tier: super::tier::Tier::regression(),
                    presets: two,
                    depths: vec![6, 24, 48],
                    lrs: vec![1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
                },
            ],
        }
    }

    fn quick() -> Self {
        let full = Self::full();
        let small = |s: &TierSet, depths: Vec<usize>| TierSet {
            tier: super::tier::Tier {
                steps: 60,
                eval_every: 10,
                ..s.tier.clone()
            },
            depths,
            lrs: vec![1e-3, 1e-2],
            ..s.clone()
        };
        Config {
            early_step: 20,
            tune: TunePlan {
                tune_seeds: vec![1000],
                seeds: 3,
            },
            tiers: vec![
                small(&full.tiers[0], vec![4]),
                small(&full.tiers[1], vec![4]),
            ],
            ..full
        }
    }

    fn check(&self) -> Result<()> {
        self.tune
            .check("convergence.tune.tune_seeds", "convergence.tune.seeds")?;
        if self.tiers.is_empty() {
            return Err(Error::invalid(
                "convergence.tiers",
                "[]",
                "a non-empty list of tiers",
            ));
        }
        for s in &self.tiers {
            s.check("convergence.tiers")?;
            for need in ["pre", "post"] {
                if !s.presets.iter().any(|p| p.name == need) {
                    return Err(Error::invalid(
                        "convergence.tiers.presets",
                        format!("{:?}", s.presets),
                        "a list including pre and post (the claim compares them)",
                    ));
                }
            }
            if self.early_step == 0
                || self.early_step > s.tier.steps
                || !self.early_step.is_multiple_of(s.tier.eval_every)
            {
                return Err(Error::invalid(
                    "convergence.early_step",
                    self.early_step,
                    format!(
                        "a multiple of tier {}'s eval_every = {} in [1, steps = {}]",
                        s.tier.name, s.tier.eval_every, s.tier.steps
                    ),
                ));
            }
        }
        check_count("convergence.early_step", self.early_step, 1)?;
        for c in self.cells() {
            c.cell.config(&self.tiers[c.tier].tier.base()?, 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        let mut s = self.tune.eval_seeds();
        s.extend(&self.tune.tune_seeds);
        s
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let cells = c.cells();
    let total: usize = cells
        .iter()
        .map(|x| c.tune.runs(c.tiers[x.tier].lrs.len()))
        .sum();
    let bar = DelayedBar::training(total as u64, "runs");
    let Some(tuned) = out.units(
        "cells",
        &cells,
        |x| tuned::cost(&c.tiers, x, &c.tune),
        |mine| tuned::run_cells(&c.tiers, mine, &c.tune, &bar),
    )?
    else {
        return Ok(());
    };
    bar.finish();
    let runs = write_tables(out, &c.tiers, &cells, &tuned, &c.tune, c.early_step)?;
    let names: Vec<String> = c.tiers.iter().map(|s| s.tier.name.clone()).collect();
    effects_table(out, &claim8_families(&names, &runs)?)?;
    curves(c, out, &cells, &tuned)
}

/// The outcome table of `runs` with `score` and, when `early_step > 0`, `early_excess`, each
/// with its censoring flag ([`super::training::at_least_name`]).
pub(crate) fn runs_with_early(
    runs: &[(RunKey, &Outcome, &str)],
    early_step: u64,
) -> Result<DataFrame> {
    let mut df = outcome_frame(runs)?;
    df.with_column(column("score", runs.iter().map(|r| score(r.1))))?;
    df.with_column(column(
        &at_least_name("score"),
        runs.iter().map(|r| score_at_least(r.1)),
    ))?;
    if early_step > 0 {
        let early: Vec<(f64, bool)> = runs.iter().map(|r| early_excess(r.1, early_step)).collect();
        df.with_column(column("early_excess", early.iter().map(|e| e.0)))?;
        df.with_column(column(
            &at_least_name("early_excess"),
            early.iter().map(|e| e.1),
        ))?;
    }
    Ok(df)
}

/// A run's early excess: its evaluation loss at `step` minus the floor (exact whenever that
/// evaluation is finite, whatever happened later), or, when the run stopped before `step` or
/// its loss there is not finite, at least the context-free gap (`(value, at_least)`).
pub fn early_excess(o: &Outcome, step: u64) -> (f64, bool) {
    let gap = o.context_free - o.floor;
    match o.curve.iter().find(|(s, _)| *s == step) {
        Some((_, e)) if e.is_finite() => (e - o.floor, false),
        _ => (gap, true),
    }
}

fn write_tables(
    out: &mut Out,
    sets: &[TierSet],
    cells: &[TunedCell],
    tuned: &[Tuned],
    plan: &TunePlan,
    early_step: u64,
) -> Result<DataFrame> {
    let tiers: Vec<_> = sets.iter().map(|s| s.tier.clone()).collect();
    let runs = tuned::keyed(&tiers, cells, tuned);
    let mut all = runs_with_early(&runs, early_step)?;
    out.frame("runs.csv", &mut all)?;
    let mut sc = super::lr_search::scaling_frame(&runs)?;
    out.frame("scaling.csv", &mut sc)?;
    // Tuning: per cell and grid lr, the median score over the tuning seeds.
    let mut keys = Vec::new();
    let (mut med, mut best) = (Vec::new(), Vec::new());
    for (c, t) in cells.iter().zip(tuned) {
        for &lr in &sets[c.tier].lrs {
            let scores: Vec<f64> = t
                .tuning
                .iter()
                .filter(|o| o.cell.lr.to_bits() == lr.to_bits())
                .map(score)
                .collect();
            keys.push(RunKey::new(
                &tiers[c.tier],
                &c.cell.at_lr(lr),
                seed_range(&plan.tune_seeds),
            ));
            med.push(median(&scores));
            best.push(lr.to_bits() == t.lr.to_bits());
        }
    }
    let mut cols = key_columns(&keys);
    cols.extend([column("median_score", med), column("tuned", best)]);
    let mut df = frame(cols)?;
    out.frame("tuning.csv", &mut df)?;
    status_table(out, &tiers, cells, tuned, plan)?;
    Ok(all)
}

/// Per cell at its tuned lr: the runs of each class and the median final excess (fraction of
/// the gap) with its exact 95% interval.
pub(crate) fn status_table(
    out: &mut Out,
    tiers: &[super::tier::Tier],
    cells: &[TunedCell],
    tuned: &[Tuned],
    plan: &TunePlan,
) -> Result<()> {
    let keys: Vec<RunKey> = cells
        .iter()
        .zip(tuned)
        .map(|(c, t)| {
            RunKey::new(
                &tiers[c.tier],
                &c.cell.at_lr(t.lr),
                seed_range(&plan.eval_seeds()),
            )
        })
        .collect();
    let mut cols = key_columns(&keys);
    for class in RunClass::ALL {
        cols.push(column(
            class.name(),
            tuned
                .iter()
                .map(|t| t.runs.iter().filter(|o| o.class == class).count() as u64),
        ));
    }
    let rel: Vec<Option<normscope_core::stats::median_ci::MedianCi>> = tuned
        .iter()
        .map(|t| {
            let v: Vec<Obs> = t.runs.iter().map(score_obs).collect();
            median_ci(&v)
        })
        .collect();
    cols.extend([
        column(
            "median_score_gap",
            rel.iter()
                .map(|m| m.as_ref().map_or(f64::NAN, |m| m.estimate)),
        ),
        column(
            "median_score_gap_ci_low",
            rel.iter().map(|m| m.as_ref().map_or(f64::NAN, |m| m.lo)),
        ),
        column(
            "median_score_gap_ci_high",
            rel.iter().map(|m| m.as_ref().map_or(f64::NAN, |m| m.hi)),
        ),
        column(
            "converged",
            tuned.iter().map(|t| {
                !t.runs
                    .iter()
                    .any(|o| matches!(o.class, RunClass::Descending | RunClass::Slow))
            }),
        ),
        column(
            "tuned_at_grid_edge",
            tuned.iter().map(|t| {
                let lrs: Vec<f64> = t.tuning.iter().map(|o| o.cell.lr).collect();
                let (lo, hi) = lrs
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |a, &x| {
                        (a.0.min(x), a.1.max(x))
                    });
                t.lr <= lo || t.lr >= hi
            }),
        ),
    ]);
    let mut df = frame(cols)?;
    out.frame("status.csv", &mut df)
}

/// One comparison's place.
struct Place {
    tier: String,
    part: &'static str,
    layers: usize,
}

/// Per seed, `post - pre` of column `col` over the gap (interval observations: censored
/// values stay censored), for `(tier, blocks)`, from an evaluation-runs table.
fn diffs(df: &DataFrame, tier: &str, blocks: u64, col: &str) -> Result<Vec<Obs>> {
    let (t, p, b, seed) = (
        strs(df, "tier")?,
        strs(df, "preset")?,
        f64s(df, "blocks")?,
        strs(df, "seed")?,
    );
    let purpose = strs(df, "purpose")?;
    let v = obs_column(df, col, true)?;
    let arm = |preset: &str| -> Vec<(String, Obs)> {
        (0..df.height())
            .filter(|&i| {
                t[i] == tier
                    && p[i] == preset
                    && b[i] as u64 == blocks
                    && purpose[i] == "evaluation"
            })
            .map(|i| (seed[i].clone(), v[i]))
            .collect()
    };
    paired_obs(
        &arm("post"),
        &arm("pre"),
        &format!("convergence ({tier}, {blocks} blocks, {col})"),
    )
}

/// Claim 8's family per tier (module docs) from a runs table (its evaluation rows).
fn claim8_families(tiers: &[String], df: &DataFrame) -> Result<Vec<(Family, Vec<Place>)>> {
    let (t, b, l) = (strs(df, "tier")?, f64s(df, "blocks")?, f64s(df, "layers")?);
    let mut out = Vec::new();
    for tier in tiers {
        let mut depths: Vec<(u64, usize)> = (0..df.height())
            .filter(|&i| t[i] == *tier)
            .map(|i| (b[i] as u64, l[i] as usize))
            .collect();
        depths.sort_unstable();
        depths.dedup();
        let (mut comps, mut places) = (Vec::new(), Vec::new());
        let mut push = |part: &'static str,
                        blocks: u64,
                        layers: usize,
                        col: &str,
                        claimed: Claimed|
         -> Result<()> {
            comps.push(Comparison {
                name: format!("{part}, {layers} layers"),
                diffs: diffs(df, tier, blocks, col)?,
                claimed,
                sesoi: None,
            });
            places.push(Place {
                tier: tier.clone(),
                part,
                layers,
            });
            Ok(())
        };
        for &(blocks, layers) in &depths {
            push("early", blocks, layers, "early_excess", Claimed::Decrease)?;
        }
        for &(blocks, layers) in &depths {
            if layers >= DEEP_MIN_LAYERS {
                push("final (deep)", blocks, layers, "score", Claimed::Increase)?;
            }
            if layers <= SHALLOW_MAX_LAYERS {
                push(
                    "final (shallow)",
                    blocks,
                    layers,
                    "score",
                    Claimed::Decrease,
                )?;
            }
        }
        if comps.is_empty() {
            continue;
        }
        out.push((
            Family::new(
                &format!("Post-LN - Pre-LN at each one's tuned lr ({tier} tier; excess in units of the gap C - F)"),
                LOSS_SESOI,
                comps,
            ),
            places,
        ));
    }
    Ok(out)
}

fn effects_table(out: &mut Out, families: &[(Family, Vec<Place>)]) -> Result<()> {
    let mut rows = Vec::new();
    for (f, places) in families {
        let (assessed, v) = judge(f)?;
        for (a, p) in assessed.into_iter().zip(places) {
            rows.push((p, a, v.to_string()));
        }
    }
    let a = |g: fn(&normscope_core::stats::verdict::Assessed) -> f64| {
        rows.iter().map(move |r| g(&r.1)).collect::<Vec<f64>>()
    };
    let mut df = frame(vec![
        column("tier", rows.iter().map(|r| r.0.tier.clone())),
        column("part", rows.iter().map(|r| r.0.part.to_string())),
        column("layers", rows.iter().map(|r| r.0.layers as u64)),
        column("n", rows.iter().map(|r| r.1.n as u64)),
        column("effect_gap", a(|x| x.estimate)),
        column("effect_ci_low", a(|x| x.ci.0)),
        column("effect_ci_high", a(|x| x.ci.1)),
        column("coverage", a(|x| x.coverage)),
        column("p_two_sided", a(|x| x.p_two_sided)),
        column("q_two_sided", a(|x| x.q_two_sided)),
        column("p_equivalence", a(|x| x.p_equivalence)),
        column("q_equivalence", a(|x| x.q_equivalence)),
        column("outcome", rows.iter().map(|r| r.1.outcome_text())),
        column("family_verdict", rows.iter().map(|r| r.2.clone())),
    ])?;
    out.frame("effects.csv", &mut df)
}

fn curves(c: &Config, out: &mut Out, cells: &[TunedCell], tuned: &[Tuned]) -> Result<()> {
    let interval = common::ci_note(c.tune.seeds);
    for (t, s) in c.tiers.iter().enumerate() {
        for &depth in &s.depths {
            let layers = s.tier.layers(depth);
            let mut plot = LinePlot::new(
                &format!(
                    "Evaluation excess over the floor (fraction of the gap), {} tier, {layers} layers, each preset at its tuned lr (median of {} seeds, {interval})",
                    s.tier.name, c.tune.seeds
                ),
                "update",
                "excess / gap",
            );
            plot.y_log = true;
            for (i, p) in s.presets.iter().enumerate() {
                let Some((_, tu)) = cells
                    .iter()
                    .zip(tuned)
                    .find(|(x, _)| x.tier == t && x.cell.preset == *p && x.cell.depth == depth)
                else {
                    continue;
                };
                let steps: Vec<u64> = tu
                    .runs
                    .first()
                    .map_or(Vec::new(), |o| o.curve.iter().map(|x| x.0).collect());
                let pts: Vec<(f64, f64, f64, f64)> = steps
                    .iter()
                    .filter_map(|&step| {
                        let v: Vec<Obs> = tu
                            .runs
                            .iter()
                            .filter_map(|o| {
                                let e = o.curve.iter().find(|x| x.0 == step)?.1;
                                Obs::exact((e - o.floor) / (o.context_free - o.floor))
                            })
                            .collect();
                        let m = median_ci(&v)?;
                        Some(common::drawn((step as f64, m.estimate, m.lo, m.hi), m.n))
                    })
                    .filter(|p| p.1 > 0.0 && p.2 > 0.0)
                    .collect();
                let converged = !tu
                    .runs
                    .iter()
                    .any(|o| matches!(o.class, RunClass::Descending | RunClass::Slow));
                let label = format!(
                    "{}, lr {}{}",
                    p.label,
                    normscope_figure::tick(tu.lr),
                    if converged { "" } else { " (not converged)" }
                );
                plot.series.push(Series::points(label, i, &pts));
            }
            out.figure(&format!("curves_{}_L{layers}", s.tier.name), &plot)?;
        }
    }
    Ok(())
}

/// Claim 8's verdict per tier, from `convergence/runs.csv` (its manifest's early step is the
/// `early_excess` column's).
pub(crate) fn claim8(d: &Data) -> Result<Vec<TierVerdict>> {
    let df = d.frame("convergence/runs.csv")?;
    let tiers = distinct_strings(&strs(&df, "tier")?);
    let mut out = Vec::new();
    for (f, places) in claim8_families(&tiers, &df)? {
        let (assessed, v) = judge(&f)?;
        let tier = places.first().map(|p| p.tier.clone()).unwrap_or_default();
        out.push(TierVerdict::judged(&tier, &f, assessed, &v, String::new()));
    }
    for v in &mut out {
        v.context = edge_note(d, "convergence/status.csv", &v.tier, None)?;
    }
    Ok(out)
}

/// The cells of `status` (a `status.csv` of tuned cells) on `tier` (of `preset` when given) whose tuned learning rate
/// sits at an edge of its grid (the best rate may lie beyond it: the comparison is at the best
/// rate of the grid, not necessarily the preset's best), named for the ledger; empty when
/// none.
pub(crate) fn edge_note(
    d: &Data,
    status: &str,
    tier: &str,
    preset: Option<&str>,
) -> Result<String> {
    let df = d.frame(status)?;
    let (t, p, label, b, o, lr, edge) = (
        strs(&df, "tier")?,
        strs(&df, "preset")?,
        strs(&df, "label")?,
        f64s(&df, "blocks")?,
        strs(&df, "optimizer")?,
        f64s(&df, "lr")?,
        strs(&df, "tuned_at_grid_edge")?,
    );
    let at: Vec<String> = (0..df.height())
        .filter(|&i| t[i] == tier && edge[i] == "true" && preset.is_none_or(|x| p[i] == x))
        .map(|i| {
            format!(
                "{} {} {} blocks (lr {})",
                label[i],
                o[i],
                b[i],
                normscope_core::output::latex::plain(lr[i])
            )
        })
        .collect();
    Ok(if at.is_empty() {
        String::new()
    } else {
        format!("tuned lr at its grid's edge: {}", at.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_core::stats::verdict::Outcome as Found;

    /// A runs table where the answer is known: at 4 and 48 layers, 12 paired seeds, Post-LN's
    /// final excess is Pre-LN's + `final_gap` (units of the gap, C - F = 2) and its early
    /// excess the same as Pre-LN's + `early_gap`; seed 0's Post-LN run diverged (its score
    /// only a lower bound, `score_at_least`).
    fn table(final_gap: f64, early_gap: f64) -> DataFrame {
        let mut rows: Vec<(&str, f64, f64, u64, f64, bool, f64)> = Vec::new();
        for (blocks, layers) in [(8.0, 4.0), (96.0, 48.0)] {
            for seed in 0..12u64 {
                let base = 0.4 + 0.01 * seed as f64;
                rows.push(("pre", blocks, layers, seed, base, false, base));
                let diverged = seed == 0;
                let post = if diverged {
                    2.0
                } else {
                    base + 2.0 * final_gap
                };
                rows.push((
                    "post",
                    blocks,
                    layers,
                    seed,
                    post,
                    diverged,
                    base + 2.0 * early_gap,
                ));
            }
        }
        let n = rows.len();
        DataFrame::new_infer_height(vec![
            column("tier", vec!["lm"; n]),
            column("preset", rows.iter().map(|r| r.0)),
            column("blocks", rows.iter().map(|r| r.1)),
            column("layers", rows.iter().map(|r| r.2)),
            column("seed", rows.iter().map(|r| r.3)),
            column("purpose", vec!["evaluation"; n]),
            column("floor", vec![1.0; n]),
            column("context_free", vec![3.0; n]),
            column("score", rows.iter().map(|r| r.4)),
            column(&at_least_name("score"), rows.iter().map(|r| r.5)),
            column("early_excess", rows.iter().map(|r| r.6)),
        ])
        .unwrap()
    }

    fn outcomes(df: &DataFrame) -> Vec<(String, Found)> {
        let fams = claim8_families(&["lm".into()], df).unwrap();
        let (assessed, _) = judge(&fams[0].0).unwrap();
        assessed.into_iter().map(|a| (a.name, a.outcome)).collect()
    }

    #[test]
    fn a_post_ln_worse_everywhere_holds_deep_and_is_opposite_early_and_shallow() {
        let o = outcomes(&table(0.3, 0.3));
        let find = |n: &str| o.iter().find(|x| x.0 == n).unwrap().1;
        assert_eq!(find("final (deep), 48 layers"), Found::AsClaimed, "{o:?}");
        assert_eq!(find("final (shallow), 4 layers"), Found::Opposite, "{o:?}");
        assert_eq!(find("early, 4 layers"), Found::Opposite, "{o:?}");
        assert_eq!(find("early, 48 layers"), Found::Opposite, "{o:?}");
    }

    /// The diverged run stays censored: at least the gap (1 in gap units) minus Pre-LN's, not an
    /// exact difference.
    #[test]
    fn a_diverged_run_is_a_lower_bound_in_the_differences() {
        let d = diffs(&table(0.3, 0.3), "lm", 8, "score").unwrap();
        assert_eq!(d.len(), 12);
        assert!(
            d[0].hi().is_infinite() && (d[0].lo() - (1.0 - 0.2)).abs() < 1e-12,
            "{:?}",
            d[0]
        );
        assert!(d[1..].iter().all(|x| x.is_exact()), "{d:?}");
    }

    /// No difference at all: every comparison is negligible (TOST at the SESOI), so the claim
    /// is refuted, by equivalence and not by a lack of significance.
    #[test]
    fn equal_presets_are_negligible_not_merely_not_significant() {
        let o = outcomes(&table(0.0, 0.0));
        // The diverged seed 0 counts against the TOST but 11 of 12 still bound it.
        assert!(o.iter().all(|x| x.1 == Found::Negligible), "{o:?}");
    }
}
