//! `encoder-decoder` (claim 4 after training, in the papers' own setting; Liu et al. 2020,
//! arXiv:2004.08249, section 3): does Post-LN's decoder gradient vanish toward its input
//! during training, as the encoder-attention argument predicts?
//!
//! **Design.** The seq2seq tier ([`super::tier::Tier::seq2seq`]: an encoder-decoder
//! Transformer of N + N layers on reversing 12 tokens), every preset at the same peak rate with
//! the same linear warmup (the papers' recipe, so that every preset trains), paired seeds.
//! Each run logs `stream_grad`, `||dL/dx_l||_F / sqrt(columns)` at every block boundary
//! ([`normscope_core::train::trainable`]), at updates 1, `S/4`, `S/2`, `3S/4` and `S`.
//!
//! **Measure**: per run and logged update, the decoder's gradient at its input (the decoder
//! embeddings' output, layer `2N + 2`) over its gradient at the top (the last decoder block's
//! output, layer `5N + 2`); and what reaches the encoder output through cross-attention (layer
//! `2N + 1`) over the same top.
//!
//! **Claim 4's family** (this tier): Post-LN's `log10` decoder input/top ratio at every logged
//! update after the first, each claimed below 0 (the gradient vanishes toward the input),
//! Holm over the updates, smallest effect of interest `log10` [`VANISH_SESOI_FACTOR`]. Pre-LN's
//! ratio and the paired Post-LN - Pre-LN difference at the last update are reported beside it.
//!
//! Outputs: `runs.csv` (every run), `gradients.csv` (per run and logged update: the two
//! ratios), `profile.csv` (per preset and logged update: the median stream gradient of every
//! layer over the top's), `effects.csv`; figures `decoder_gradient_ratio` (median ratio against
//! the update) and `stream_gradient_profile` (per layer, at the last update).

use super::lr_search::outcome_frame;
use super::tier::{RunKey, Tier, key_columns};
use super::training::{
    TierVerdict, check_count, check_presets, f64s, frame, paired_obs, strs, unknown,
};
use super::warmup::judge;
use super::{Analysis, Out, common};
use crate::runner::data::Data;
use normscope_core::output::progress::DelayedBar;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::stats::median_ci::median_ci;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{Claimed, Comparison, Family};
use normscope_core::train::sweep::{Cell, Outcome, Prepared};
use normscope_core::{Error, Result};
use normscope_figure::{LinePlot, Series};
use polars::prelude::DataFrame;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "encoder-decoder",
    about: "encoder-decoder Transformers trained with warmup: the decoder's gradient toward its input through cross-attention, Post-LN vs Pre-LN, claim 4 after training",
    claims: &[4],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some("one (preset, seed) training run"),
};

/// Claim 4 (this tier): Post-LN's decoder input/top gradient ratio counts as vanishing when it
/// is below 1 by more than this factor.
pub const VANISH_SESOI_FACTOR: f64 = 2.0;
/// The preset claim 4 is about.
pub const CLAIM_PRESET: &Preset = normscope_core::placement::POST;
/// The preset reported beside it.
pub const CONTRAST_PRESET: &Preset = normscope_core::placement::PRE;

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::encoder_decoder::Config;
/// let c = Config::full();
/// assert_eq!(c.tier.name, "seq2seq");
/// assert_eq!(c.presets, ["pre", "post", "deepnorm", "admin"]);
/// assert_eq!((c.depth, c.lr, c.warmup, c.seeds), (30, 1e-3, 100, 10));
/// let q = Config::quick();
/// assert_eq!((q.depth, q.warmup, q.seeds, q.tier.steps), (10, 10, 3, 40));
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The tier (an encoder-decoder one).
    pub tier: Tier,
    /// Presets (including pre and post).
    pub presets: Vec<&'static Preset>,
    /// Blocks, 5 per layer (N encoder layers of 2, N decoder layers of 3).
    pub depth: usize,
    /// Peak learning rate (Adam).
    pub lr: f64,
    /// Linear-warmup updates.
    pub warmup: u64,
    /// Paired seeds `0..seeds`.
    pub seeds: u64,
}

impl Config {
    fn layers(&self) -> usize {
        self.depth / 5
    }

    fn base(&self) -> Result<normscope_core::train::config::RawTrain> {
        let mut b = self.tier.base()?;
        b.log_every = (self.tier.steps / 4).max(1);
        Ok(b)
    }

    fn cell(&self, preset: &'static Preset) -> Cell {
        Cell {
            preset,
            depth: self.depth,
            optimizer: "adam".into(),
            lr: self.lr,
            warmup: self.warmup,
        }
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            tier: Tier::seq2seq(),
            presets: common::presets(&["pre", "post", "deepnorm", "admin"]),
            depth: 30,
            lr: 1e-3,
            warmup: 100,
            seeds: 10,
        }
    }

    fn quick() -> Self {
        Config {
            tier: Tier {
                steps: 40,
                eval_every: 10,
                ..Tier::seq2seq()
            },
            presets: common::presets(&["pre", "post"]),
            depth: 10,
            warmup: 10,
            seeds: 3,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        check_presets(&self.presets)?;
        check_count("encoder-decoder.seeds", self.seeds, 2)?;
        if !self.tier.encdec() {
            return Err(Error::invalid(
                "encoder-decoder.tier.arch",
                &self.tier.arch,
                "encoder-decoder",
            ));
        }
        for p in [CLAIM_PRESET, CONTRAST_PRESET] {
            if !self.presets.contains(&p) {
                return Err(Error::invalid(
                    "encoder-decoder.presets",
                    common::names(&self.presets),
                    "a list including pre and post (the claim compares them)",
                ));
            }
        }
        self.tier.check("encoder-decoder.tier", &[self.depth])?;
        let base = self.base()?;
        for p in &self.presets {
            self.cell(p).config(&base, 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        (0..self.seeds).collect()
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let jobs: Vec<(&'static Preset, u64)> = c
        .presets
        .iter()
        .flat_map(|&p| (0..c.seeds).map(move |s| (p, s)))
        .collect();
    let bar = DelayedBar::training(jobs.len() as u64, "runs");
    let prepared = Prepared::new(&c.base()?, jobs.len())?;
    let Some(runs) = out.units(
        "runs",
        &jobs,
        |_| 1.0,
        |mine| {
            mine.par_iter()
                .map(|(p, s)| {
                    let o = prepared.outcome_with(&c.cell(p), *s, &Default::default());
                    use normscope_core::monte_carlo::Progress;
                    bar.tick();
                    o
                })
                .collect()
        },
    )?
    else {
        return Ok(());
    };
    bar.finish();
    let keyed: Vec<(RunKey, &Outcome, &str)> = runs
        .iter()
        .map(|o| (RunKey::new(&c.tier, &o.cell, o.seed), o, "evaluation"))
        .collect();
    let mut df = outcome_frame(&keyed)?;
    out.frame("runs.csv", &mut df)?;
    let mut g = gradients_frame(c, &keyed)?;
    out.frame("gradients.csv", &mut g)?;
    profile(c, out, &runs)?;
    let (fam, context) = family(&g)?;
    let (assessed, v) = judge(&fam)?;
    let mut ef = frame(vec![
        column("comparison", assessed.iter().map(|a| a.name.clone())),
        column("n", assessed.iter().map(|a| a.n as u64)),
        column("effect_log10", assessed.iter().map(|a| a.estimate)),
        column("effect_ci_low", assessed.iter().map(|a| a.ci.0)),
        column("effect_ci_high", assessed.iter().map(|a| a.ci.1)),
        column("q_two_sided", assessed.iter().map(|a| a.q_two_sided)),
        column("q_equivalence", assessed.iter().map(|a| a.q_equivalence)),
        column("outcome", assessed.iter().map(|a| a.outcome_text())),
        column("family_verdict", assessed.iter().map(|_| v.to_string())),
        column("context", assessed.iter().map(|_| context.clone())),
    ])?;
    out.frame("effects.csv", &mut ef)?;
    ratio_figure(c, out, &g)
}

/// The stream gradient of layer `l` at `step` in a run, if logged.
fn stream(o: &Outcome, step: u64, l: usize) -> Option<f64> {
    o.stream
        .iter()
        .find(|x| x.0 == step && x.1 == l)
        .map(|x| x.2)
}

/// Per run and logged update: `decoder_input_over_top` and `memory_over_top`.
fn gradients_frame(c: &Config, runs: &[(RunKey, &Outcome, &str)]) -> Result<DataFrame> {
    let n = c.layers();
    let (input, memory, top) = (2 * n + 2, 2 * n + 1, 5 * n + 2);
    let mut rows: Vec<(RunKey, u64, f64, f64)> = Vec::new();
    // Every run at every update any run logged: a run stopped before an update (diverged)
    // keeps its row, with the ratios empty (unknown to the verdict, never dropped).
    let mut steps: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.1.stream.iter().map(|x| x.0))
        .collect();
    steps.sort_unstable();
    steps.dedup();
    for (k, o, _) in runs {
        for &step in &steps {
            let ratio = |l: usize| match (stream(o, step, l), stream(o, step, top)) {
                (Some(a), Some(t)) => a / t,
                _ => f64::NAN,
            };
            rows.push((k.clone(), step, ratio(input), ratio(memory)));
        }
    }
    let keys: Vec<RunKey> = rows.iter().map(|r| r.0.clone()).collect();
    let mut cols = key_columns(&keys);
    cols.extend([
        column("step", rows.iter().map(|r| r.1)),
        column("decoder_input_over_top", rows.iter().map(|r| r.2)),
        column("memory_over_top", rows.iter().map(|r| r.3)),
    ]);
    frame(cols)
}

/// `(seed, log10 ratio)` of `gradients.csv` for (preset, step), every run: a ratio that
/// underflowed to 0 (the vanishing the claim is about) is at most `log10` of the smallest
/// normal double; an empty one (the run stopped before) or any other non-finite one is
/// unknown ([`unknown`]).
fn ratios(df: &DataFrame, preset: &str, step: u64) -> Result<Vec<(String, Obs)>> {
    let (p, st, seed, r) = (
        strs(df, "preset")?,
        f64s(df, "step")?,
        strs(df, "seed")?,
        f64s(df, "decoder_input_over_top")?,
    );
    Ok((0..df.height())
        .filter(|&i| p[i] == preset && st[i] as u64 == step)
        .map(|i| (seed[i].clone(), log10_obs(r[i])))
        .collect())
}

/// `log10 x` as an observation (see [`ratios`]).
fn log10_obs(x: f64) -> Obs {
    if x == 0.0 {
        Obs::at_most(f64::MIN_POSITIVE.log10()).expect("finite")
    } else {
        Obs::exact(x.log10()).unwrap_or_else(unknown)
    }
}

/// How many of `v` are unknown, as a note for a comparison's name (empty when none).
fn unknown_note(v: &[Obs]) -> String {
    let k = v
        .iter()
        .filter(|o| !o.lo().is_finite() && !o.hi().is_finite())
        .count();
    if k == 0 {
        String::new()
    } else {
        format!(" ({k} of {} runs stopped before: unknown)", v.len())
    }
}

/// Claim 4's family on this tier (module docs) from `gradients.csv`, and the context text.
fn family(df: &DataFrame) -> Result<(Family, String)> {
    let mut steps: Vec<u64> = f64s(df, "step")?
        .iter()
        .map(|s| *s as u64)
        .filter(|s| *s > 1)
        .collect();
    steps.sort_unstable();
    steps.dedup();
    let values = |v: &[(String, Obs)]| -> Vec<Obs> { v.iter().map(|x| x.1).collect() };
    let comparisons: Vec<Comparison> = steps
        .iter()
        .map(|&step| {
            let diffs = values(&ratios(df, CLAIM_PRESET.name, step)?);
            Ok(Comparison {
                name: format!("update {step}{}", unknown_note(&diffs)),
                diffs,
                claimed: Claimed::Decrease,
                sesoi: None,
            })
        })
        .collect::<Result<_>>()?;
    let mut context = Vec::new();
    if let Some(&last) = steps.last() {
        let (post, pre) = (
            ratios(df, CLAIM_PRESET.name, last)?,
            ratios(df, CONTRAST_PRESET.name, last)?,
        );
        if let Some(m) = median_ci(&values(&pre)) {
            context.push(format!(
                "{} log10 ratio at update {last}: {} [{}, {}]",
                CONTRAST_PRESET.label,
                normscope_core::output::latex::plain(m.estimate),
                normscope_core::output::latex::plain(m.lo),
                normscope_core::output::latex::plain(m.hi)
            ));
        }
        let diff = paired_obs(&post, &pre, "encoder-decoder")?;
        if let Some(m) = median_ci(&diff) {
            context.push(format!(
                "Post-LN - Pre-LN (log10, paired) {} [{}, {}]",
                normscope_core::output::latex::plain(m.estimate),
                normscope_core::output::latex::plain(m.lo),
                normscope_core::output::latex::plain(m.hi)
            ));
        }
    }
    Ok((
        Family::new(
            "Post-LN's decoder gradient at its input is below its gradient at the top during training (log10 of the ratio; seq2seq tier)",
            VANISH_SESOI_FACTOR.log10(),
            comparisons,
        ),
        context.join("; "),
    ))
}

/// Per preset and logged update, the median over seeds of every layer's stream gradient over
/// the decoder top's (`profile.csv`), and its figure at the last update.
fn profile(c: &Config, out: &mut Out, runs: &[Outcome]) -> Result<()> {
    let top = 5 * c.layers() + 2;
    // (preset, step, layer, median, lo, hi, values)
    let mut rows: Vec<(&'static Preset, u64, usize, f64, f64, f64, usize)> = Vec::new();
    for &p in &c.presets {
        let mine: Vec<&Outcome> = runs.iter().filter(|o| o.cell.preset == p).collect();
        let mut steps: Vec<u64> = mine
            .first()
            .map_or(Vec::new(), |o| o.stream.iter().map(|x| x.0).collect());
        steps.dedup();
        let layers: Vec<usize> = mine.first().map_or(Vec::new(), |o| {
            let mut v: Vec<usize> = o.stream.iter().map(|x| x.1).collect();
            v.sort_unstable();
            v.dedup();
            v
        });
        for &step in &steps {
            for &l in &layers {
                let v: Vec<Obs> = mine
                    .iter()
                    .filter_map(|o| Obs::exact(stream(o, step, l)? / stream(o, step, top)?))
                    .collect();
                if let Some(m) = median_ci(&v) {
                    rows.push((p, step, l, m.estimate, m.lo, m.hi, m.n));
                }
            }
        }
    }
    let seeds = super::tier::seed_range(&(0..c.seeds).collect::<Vec<_>>());
    let keys: Vec<RunKey> = rows
        .iter()
        .map(|r| RunKey::new(&c.tier, &c.cell(r.0), &seeds))
        .collect();
    let mut cols = key_columns(&keys);
    cols.extend([
        column("step", rows.iter().map(|r| r.1)),
        column("layer", rows.iter().map(|r| r.2 as u64)),
        column(
            "part",
            rows.iter().map(|r| {
                normscope_core::train::seq2seq::part(c.layers(), r.2)
                    .name()
                    .to_string()
            }),
        ),
        column("median_over_top", rows.iter().map(|r| r.3)),
        column("ci_low", rows.iter().map(|r| r.4)),
        column("ci_high", rows.iter().map(|r| r.5)),
    ]);
    let mut df = frame(cols)?;
    out.frame("profile.csv", &mut df)?;
    let last = rows.iter().map(|r| r.1).max().unwrap_or(0);
    let mut plot = LinePlot::new(
        &format!(
            "Stream gradient per layer over the decoder top's, after {last} updates ({} + {} layers; median of {} seeds, {})",
            c.layers(),
            c.layers(),
            c.seeds,
            common::ci_note(c.seeds)
        ),
        "layer (encoder, then decoder)",
        "||dL/dx_l|| / decoder top's",
    );
    plot.y_log = true;
    for (i, p) in c.presets.iter().enumerate() {
        let pts: Vec<(f64, f64, f64, f64)> = rows
            .iter()
            .filter(|r| r.0 == *p && r.1 == last)
            .map(|r| common::drawn((r.2 as f64, r.3, r.4, r.5), r.6))
            .filter(|p| p.1 > 0.0 && p.2 > 0.0)
            .collect();
        plot.series.push(Series::points(p.label, i, &pts));
    }
    out.figure("stream_gradient_profile", &plot)
}

fn ratio_figure(c: &Config, out: &mut Out, g: &DataFrame) -> Result<()> {
    let mut steps: Vec<u64> = f64s(g, "step")?.iter().map(|s| *s as u64).collect();
    steps.sort_unstable();
    steps.dedup();
    let mut plot = LinePlot::new(
        &format!(
            "Decoder gradient at its input over at its top, during training ({} + {} layers, lr {}, warmup {}; median of {} seeds, {})",
            c.layers(),
            c.layers(),
            normscope_figure::tick(c.lr),
            c.warmup,
            c.seeds,
            common::ci_note(c.seeds)
        ),
        "update",
        "decoder input / top",
    );
    plot.y_log = true;
    for (i, p) in c.presets.iter().enumerate() {
        let pts: Vec<(f64, f64, f64, f64)> = steps
            .iter()
            .filter_map(|&s| {
                let v: Vec<Obs> = ratios(g, p.name, s).ok()?.iter().map(|x| x.1).collect();
                let m = median_ci(&v)?;
                let e = |x: f64| 10f64.powf(x);
                let (x, est, lo, hi) = common::drawn((s as f64, m.estimate, m.lo, m.hi), m.n);
                (est.is_finite() && lo.is_finite() && hi.is_finite()).then_some((
                    x,
                    e(est),
                    e(lo),
                    e(hi),
                ))
            })
            .collect();
        plot.series.push(Series::points(p.label, i, &pts));
    }
    out.figure("decoder_gradient_ratio", &plot)
}

/// Claim 4's after-training verdict on this tier, from `encoder-decoder/gradients.csv`.
pub(crate) fn claim4(d: &Data) -> Result<TierVerdict> {
    let df = d.frame("encoder-decoder/gradients.csv")?;
    let tier = strs(&df, "tier")?.first().cloned().unwrap_or_default();
    let (fam, context) = family(&df)?;
    let (assessed, v) = judge(&fam)?;
    Ok(TierVerdict::judged(&tier, &fam, assessed, &v, context))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ratio that underflowed to 0 is the claimed vanishing itself: kept, as at most the
    /// smallest normal double's log10; an empty one (a run stopped before) is unknown.
    #[test]
    fn vanished_and_missing_ratios_are_kept() {
        let z = log10_obs(0.0);
        assert!(z.lo().is_infinite() && (z.hi() - f64::MIN_POSITIVE.log10()).abs() < 1e-12);
        let u = log10_obs(f64::NAN);
        assert!(u.lo().is_infinite() && u.hi().is_infinite());
        assert_eq!(log10_obs(100.0), Obs::exact(2.0).unwrap());
        assert_eq!(
            unknown_note(&[u, z]),
            " (1 of 2 runs stopped before: unknown)"
        );
    }
}
