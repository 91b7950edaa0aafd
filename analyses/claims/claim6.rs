//! Claim 6 as stated (Xiong et al. 2020, arXiv:2002.04745: "Post-LN's gradients near the output
//! are large at init, so learning-rate warmup is essential"), judged as the conjunction of three
//! sub-claims, each its own family with its own Holm adjustment (issue 58; rules set on
//! 2026-12-07, after a referee's report, i.e. after the data):
//!
//! - **effect**: warmup raises Post-LN's maximum stable learning rate, per depth: the paired
//!   `log2(lr_max with warmup / lr_max without)` ([`super::super::warmup::family`]), claimed
//!   positive, SESOI `log2` [`super::super::warmup::SESOI_RATIO`];
//! - **mechanism** (the claim's "because"): warmup helps Post-LN more than Pre-LN, whose
//!   gradients near the output are not large at init. Per depth and seed the
//!   difference-in-differences, in doublings,
//!
//!   ```text
//!   DiD_s = (log2 lr_max(Post, warmup) - log2 lr_max(Post, none))
//!         - (log2 lr_max(Pre, warmup)  - log2 lr_max(Pre, none))
//!   ```
//!
//!   by interval arithmetic on the half-open brackets (paired seeds: the same seed's four
//!   searches), claimed positive, the same SESOI;
//! - **essential**: without warmup Post-LN trains worse at its best learning rate. Per depth
//!   and seed, the best final score over the learning rates each arm's search tried (score:
//!   final loss minus the floor in units of the gap `C - F`, at least the context-free gap for
//!   a diverged run: [`super::super::training::score`]), none minus warmup, claimed positive,
//!   SESOI [`super::super::convergence::LOSS_SESOI`] of the gap. The searches try different
//!   rates in the two arms (each brackets its own boundary), so "best" is the best of what
//!   was tried, not of a common grid: stated in the rule.

use crate::runner::data::Data;
use crate::training::{TierVerdict, distinct_strings, f64s, layers_text, strs};
use crate::warmup::{
    CLAIM_PRESET, CONTRAST_PRESET, F64_SUFFIX, SESOI_RATIO, cell_obs, family, judge, paired_by_seed,
};
use normscope_core::Result;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{Claimed, Comparison, Family};
use polars::prelude::DataFrame;

/// The mechanism family on `tier` (module docs): one comparison per depth at which Post-LN
/// and Pre-LN were both searched with `warmup` and without; `None` when there is none.
pub fn mechanism(searches: &DataFrame, tier: &str, warmup: u64) -> Result<Option<Family>> {
    let (t, p, b, l, w) = (
        strs(searches, "tier")?,
        strs(searches, "preset")?,
        f64s(searches, "blocks")?,
        f64s(searches, "layers")?,
        f64s(searches, "warmup")?,
    );
    let has = |preset: &str, blocks: u64, arm: u64| {
        (0..searches.height())
            .any(|i| t[i] == tier && p[i] == preset && b[i] as u64 == blocks && w[i] as u64 == arm)
    };
    let mut depths: Vec<(u64, u64)> = (0..searches.height())
        .filter(|&i| t[i] == tier && p[i] == CLAIM_PRESET.name)
        .map(|i| (b[i] as u64, l[i] as u64))
        .filter(|&(blocks, _)| {
            [CLAIM_PRESET.name, CONTRAST_PRESET.name]
                .iter()
                .all(|p| has(p, blocks, warmup) && has(p, blocks, 0))
        })
        .collect();
    depths.sort_unstable();
    depths.dedup();
    let mut comparisons = Vec::new();
    for (blocks, layers) in depths {
        let effect = |preset: &str| -> Result<Vec<Obs>> {
            paired_by_seed(
                &cell_obs(searches, tier, preset, blocks, warmup)?,
                &cell_obs(searches, tier, preset, blocks, 0)?,
                &format!("{tier} {preset} at {blocks} blocks"),
            )
        };
        let (post, pre) = (effect(CLAIM_PRESET.name)?, effect(CONTRAST_PRESET.name)?);
        if post.len() != pre.len() {
            continue;
        }
        comparisons.push(Comparison {
            name: format!("Post - Pre, {}", layers_text(layers as usize)),
            diffs: post.iter().zip(&pre).map(|(a, b)| *a - *b).collect(),
            claimed: Claimed::Increase,
            sesoi: None,
        });
    }
    Ok((!comparisons.is_empty()).then(|| {
        Family::new(
            &format!(
                "warmup {warmup} helps {} more than {} ({tier} tier; difference-in-differences of log2 maximum stable lr, doublings)",
                CLAIM_PRESET.label, CONTRAST_PRESET.label
            ),
            SESOI_RATIO.log2(),
            comparisons,
        )
    }))
}

/// Each seed's best final score over the runs of one cell in `runs` (a `runs.csv` of
/// searches: `excess`, `diverged`, `floor`, `context_free`), in units of the gap, as an
/// interval: the smallest lower end and the smallest upper end over the runs (a diverged run's
/// score is at least `max(excess, gap)`); sorted by seed.
pub fn best_scores(
    runs: &DataFrame,
    tier: &str,
    blocks: u64,
    warmup: u64,
) -> Result<Vec<(u64, Obs)>> {
    let (t, p, b, w) = (
        strs(runs, "tier")?,
        strs(runs, "preset")?,
        f64s(runs, "blocks")?,
        f64s(runs, "warmup")?,
    );
    let (seed, excess, floor, cf) = (
        f64s(runs, "seed")?,
        f64s(runs, "excess")?,
        f64s(runs, "floor")?,
        f64s(runs, "context_free")?,
    );
    let diverged = strs(runs, "diverged")?;
    let mut best: Vec<(u64, f64, f64)> = Vec::new();
    for i in 0..runs.height() {
        if !(t[i] == tier
            && p[i] == CLAIM_PRESET.name
            && b[i] as u64 == blocks
            && w[i] as u64 == warmup)
        {
            continue;
        }
        let gap = cf[i] - floor[i];
        let (lo, hi) = if diverged[i] == "true" {
            let e = if excess[i].is_finite() {
                excess[i].max(gap)
            } else {
                gap
            };
            (e / gap, f64::INFINITY)
        } else {
            (excess[i] / gap, excess[i] / gap)
        };
        let s = seed[i] as u64;
        match best.iter_mut().find(|x| x.0 == s) {
            Some(x) => {
                x.1 = x.1.min(lo);
                x.2 = x.2.min(hi);
            }
            None => best.push((s, lo, hi)),
        }
    }
    best.sort_by_key(|x| x.0);
    Ok(best
        .into_iter()
        .map(|(s, lo, hi)| {
            let o = Obs::between(lo, hi).unwrap_or_else(crate::training::unknown);
            (s, o)
        })
        .collect())
}

/// The essential family on `tier` (module docs): one comparison per depth at which Post-LN
/// was searched with `warmup` and without; `None` when there is none.
pub fn essential(runs: &DataFrame, tier: &str, warmup: u64) -> Result<Option<Family>> {
    let (t, p, b, l, w) = (
        strs(runs, "tier")?,
        strs(runs, "preset")?,
        f64s(runs, "blocks")?,
        f64s(runs, "layers")?,
        f64s(runs, "warmup")?,
    );
    let mut depths: Vec<(u64, u64)> = (0..runs.height())
        .filter(|&i| t[i] == tier && p[i] == CLAIM_PRESET.name && w[i] as u64 == warmup)
        .map(|i| (b[i] as u64, l[i] as u64))
        .collect();
    depths.sort_unstable();
    depths.dedup();
    let mut comparisons = Vec::new();
    for (blocks, layers) in depths {
        let with = best_scores(runs, tier, blocks, warmup)?;
        let none = best_scores(runs, tier, blocks, 0)?;
        if none.is_empty() {
            continue;
        }
        comparisons.push(Comparison {
            name: format!("best final score, {}", layers_text(layers as usize)),
            diffs: paired_by_seed(
                &none,
                &with,
                &format!("{tier} best scores at {blocks} blocks"),
            )?,
            claimed: Claimed::Increase,
            sesoi: None,
        });
    }
    Ok((!comparisons.is_empty()).then(|| {
        Family::new(
            &format!(
                "without warmup {} trains worse at its best lr: best final score without minus with warmup {warmup} ({tier} tier; units of the gap C - F; best over the rates each arm's search tried)",
                CLAIM_PRESET.label
            ),
            crate::convergence::LOSS_SESOI,
            comparisons,
        )
    }))
}

/// Claim 6's verdict per tier (module docs), from `warmup/searches.csv` and `warmup/runs.csv`;
/// Pre-LN's own warmup effect is reported beside it.
pub(crate) fn claim6(d: &Data) -> Result<Vec<TierVerdict>> {
    let df = d.frame("warmup/searches.csv")?;
    let runs = d.frame("warmup/runs.csv")?;
    let tiers = strs(&df, "tier")?;
    let warmup = f64s(&df, "warmup")?
        .into_iter()
        .filter(|w| *w > 0.0)
        .fold(0.0, f64::max) as u64;
    let mut out = Vec::new();
    for tier in distinct_strings(&tiers)
        .into_iter()
        .filter(|t| !t.ends_with(F64_SUFFIX))
    {
        let Some((fam, _)) = family(&df, &tier, CLAIM_PRESET, warmup)? else {
            continue;
        };
        let mut parts = Vec::new();
        for (label, f) in [
            ("effect", Some(fam)),
            ("mechanism", mechanism(&df, &tier, warmup)?),
            ("essential", essential(&runs, &tier, warmup)?),
        ] {
            if let Some(f) = f {
                let (a, v) = judge(&f)?;
                parts.push((label, f, a, v));
            }
        }
        let contrast = match family(&df, &tier, CONTRAST_PRESET, warmup)? {
            Some((f, _)) => judge(&f)?.0,
            None => Vec::new(),
        };
        let context = if contrast.is_empty() {
            String::new()
        } else {
            format!(
                "{} with the same warmup (doublings): {}",
                CONTRAST_PRESET.label,
                contrast
                    .iter()
                    .map(|a| format!("{}: {a}", a.name))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        out.push(TierVerdict::combined(&tier, parts, context));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact: brackets are powers of 2, scores small binary fractions
mod tests {
    use super::*;
    use normscope_core::stats::verdict::Outcome;
    use polars::prelude::*;

    /// A `searches.csv` at one depth (8 blocks, 4 layers), ten seeds: per (preset, warmup) the
    /// bracket `[lo, 2 lo)`.
    fn searches(cells: &[(&str, u64, f64)]) -> DataFrame {
        let rows: Vec<(&str, f64, f64, f64)> = cells
            .iter()
            .flat_map(|&(p, w, lo)| (0..10).map(move |s| (p, w as f64, s as f64, lo)))
            .collect();
        let n = rows.len();
        let col = |f: fn(&(&str, f64, f64, f64)) -> f64| rows.iter().map(f).collect::<Vec<f64>>();
        df!(
            "tier" => vec!["t"; n], "preset" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            "blocks" => vec![8.0; n], "layers" => vec![4.0; n], "warmup" => col(|r| r.1),
            "seed" => col(|r| r.2), "max_lr_bracket_low" => col(|r| r.3),
            "max_lr_bracket_high" => col(|r| 2.0 * r.3)
        )
        .unwrap()
    }

    #[test]
    fn mechanism_is_the_difference_in_differences() {
        // In log2, Post with warmup [2, 3) and without [0, 1): (2 - 1, 3 - 0) = (1, 3); Pre
        // [1, 2) and [0, 1): (0, 2). DiD = (1 - 2, 3 - 0) = (-1, 3), straddling 0 in every
        // seed: not significant.
        let df = searches(&[
            ("post", 100, 4.0),
            ("post", 0, 1.0),
            ("pre", 100, 2.0),
            ("pre", 0, 1.0),
        ]);
        let f = mechanism(&df, "t", 100).unwrap().unwrap();
        assert_eq!(f.comparisons.len(), 1);
        let d = f.comparisons[0].diffs[0];
        assert_eq!((d.lo(), d.hi()), (-1.0, 3.0));
        let (a, _) = judge(&f).unwrap();
        assert_eq!(a[0].outcome, Outcome::Inconclusive);
        // Post gains 4 doublings ([16, 32) vs [1, 2)), Pre none: DiD (2, 6) above 0 in every
        // seed: p = 2/1024, as claimed.
        let df = searches(&[
            ("post", 100, 16.0),
            ("post", 0, 1.0),
            ("pre", 100, 1.0),
            ("pre", 0, 1.0),
        ]);
        let f = mechanism(&df, "t", 100).unwrap().unwrap();
        let (a, _) = judge(&f).unwrap();
        assert_eq!(a[0].outcome, Outcome::AsClaimed, "{}", a[0]);
        assert!((a[0].p_two_sided - 2.0 / 1024.0).abs() < 1e-15);
        // Without Pre-LN's arms there is no mechanism family.
        let df = searches(&[("post", 100, 16.0), ("post", 0, 1.0)]);
        assert!(mechanism(&df, "t", 100).unwrap().is_none());
    }

    /// A `runs.csv` of Post-LN at 8 blocks: `(warmup, seed, excess, diverged)`, floor 1,
    /// context-free 3 (gap 2).
    fn runs(rows: &[(u64, u64, f64, bool)]) -> DataFrame {
        let n = rows.len();
        df!(
            "tier" => vec!["t"; n], "preset" => vec!["post"; n], "blocks" => vec![8.0; n],
            "layers" => vec![4.0; n],
            "warmup" => rows.iter().map(|r| r.0 as f64).collect::<Vec<_>>(),
            "seed" => rows.iter().map(|r| r.1 as f64).collect::<Vec<_>>(),
            "excess" => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            "diverged" => rows.iter().map(|r| r.3.to_string()).collect::<Vec<_>>(),
            "floor" => vec![1.0; n], "context_free" => vec![3.0; n]
        )
        .unwrap()
    }

    #[test]
    fn best_scores_take_the_best_run_and_keep_divergence_censored() {
        // Seed 0: runs 1.0 and 0.5 (best 0.25 of the gap); seed 1: one diverged run with a low
        // last finite loss (at least the gap: [1, inf)) and one at 1.5 (0.75): best [0.75, 0.75].
        // Seed 2: only a diverged run: [1, inf).
        let df = runs(&[
            (0, 0, 1.0, false),
            (0, 0, 0.5, false),
            (0, 1, 0.2, true),
            (0, 1, 1.5, false),
            (0, 2, f64::NAN, true),
        ]);
        let b = best_scores(&df, "t", 8, 0).unwrap();
        let ends: Vec<(u64, f64, f64)> = b.iter().map(|(s, o)| (*s, o.lo(), o.hi())).collect();
        assert_eq!(
            ends,
            [(0, 0.25, 0.25), (1, 0.75, 0.75), (2, 1.0, f64::INFINITY)]
        );
    }

    #[test]
    fn essential_compares_best_scores_without_minus_with_warmup() {
        // Ten seeds: without warmup best 0.5 of the gap (excess 1), with warmup 0.1 (0.2):
        // +0.4 in every seed, beyond the SESOI 0.05: as claimed. Equal arms: not shown.
        let mut rows = Vec::new();
        for s in 0..10 {
            rows.push((0, s, 1.0, false));
            rows.push((100, s, 0.2, false));
        }
        let f = essential(&runs(&rows), "t", 100).unwrap().unwrap();
        let (a, _) = judge(&f).unwrap();
        assert_eq!(a[0].estimate, 0.4);
        assert_eq!(a[0].outcome, Outcome::AsClaimed, "{}", a[0]);
        let same: Vec<_> = (0..10)
            .flat_map(|s| [(0, s, 1.0, false), (100, s, 1.0, false)])
            .collect();
        let f = essential(&runs(&same), "t", 100).unwrap().unwrap();
        let (a, _) = judge(&f).unwrap();
        assert_ne!(a[0].outcome, Outcome::AsClaimed);
    }
}
