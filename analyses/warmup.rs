//! `warmup` (claim 6; Xiong et al. 2020, arXiv:2002.04745): does learning-rate warmup raise
//! Post-LN's maximum stable learning rate, and by how much?
//!
//! **Design.** Per tier ([`super::tier`]: the Transformer LM tier is primary, the regression
//! tier the cheap one), every preset x depth is searched without warmup, and the presets of
//! `warmup_presets` also with a linear warmup of `warmup` updates; Adam, constant peak rate
//! after warmup, paired seeds `0..seeds` (a seed fixes the data order and the initial draws for
//! every cell). Each (cell, seed) gets its maximum stable learning rate from the widening
//! log-scale search of [`normscope_core::train::search`] (`search` in the configuration: its `min` and
//! `max` are hard caps, reported as censoring), a rate being stable when the run is trained or
//! still descending ([`normscope_core::train::classify`]).
//!
//! **Budget.** A run trains its tier's updates (300 on `lm`). A tier can train its deepest
//! cells longer ([`super::tier::LongBudget`]; the `--quick` run exercises it), but the full
//! run does not yet: at 300 updates Post-LN on `lm` at 48 blocks never leaves the plateau, so
//! that cell measures the budget, not the instability (docs/training.md, "Budgets").
//!
//! **The effect** of warmup for a (tier, preset, depth): the per-seed paired difference
//! `log2 lr_max(warmup) - log2 lr_max(none)` in doublings. Each search's bracket is half-open,
//! `[stable, unstable)` (stable at its low end, failed at its high end), so where both arms are
//! bracketed the difference is the open interval `(log2 lo_w - log2 hi_0, log2 hi_w - log2
//! lo_0)` ([`normscope_core::stats::obs`]), unbounded on a side where one is censored; two
//! touching brackets (no-warmup failed at the rate where warmup was stable) give a difference
//! certainly above 0. Its median with the exact distribution-free 95% interval, and the exact
//! sign tests of [`normscope_core::stats::verdict`].
//!
//! **Claim 6's family** (fixed before the data): Post-LN ([`CLAIM_PRESET`]) at every depth of
//! the tier, each comparison claiming an increase, Holm over the depths, smallest effect of
//! interest [`SESOI_RATIO`] (a factor 1.5 on the maximum stable rate, about the search's
//! resolution). Pre-LN's effect ([`CONTRAST_PRESET`]) is reported beside it, in a family of
//! its own, as the contrast the claim's "because Post-LN's gradients are large" implies.
//!
//! Outputs: `runs.csv` (every run trained), `searches.csv` (every (cell, seed): the interval
//! holding its maximum stable rate), `summary.csv` (per cell: the median maximum stable rate
//! with its 95% interval and the censored seeds), `effects.csv` (per (tier, preset, depth): the
//! warmup effect, its tests and outcome, and the family's verdict), `effects.tex`; figures
//! `max_stable_lr_<tier>` (median maximum stable rate against depth, with and without warmup).

use super::lr_search::{self, SearchCell, SeedSearch};
use super::tier::{LongBudget, RunKey, Tier, key_columns, seed_range};
use super::training::{check_count, check_presets, distinct_strings, f64s, frame, strs};
use super::{Analysis, Out, common};
use normscope_core::output::latex::{self, Cell as Tex, Table};
use normscope_core::output::progress::DelayedBar;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::stats::median_ci::median_ci;
use normscope_core::stats::obs::Obs;
use normscope_core::stats::verdict::{self, Assessed, Claimed, Comparison, Family, Verdict};
use normscope_core::train::search::Plan;
use normscope_core::train::sweep::Cell;
use normscope_core::{Error, Result};
use normscope_figure::{LinePlot, Series};
use polars::prelude::DataFrame;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "warmup",
    about: "maximum stable lr with and without warmup per tier, preset and depth (widening log search, paired seeds): claim 6",
    claims: &[6],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some("one (tier, preset, depth, warmup) cell: the searches of all its seeds"),
};

/// Claim 6's smallest effect of interest: a warmup effect within a factor of this on the
/// maximum stable learning rate is negligible (about the search's resolution, `sqrt 2`).
pub const SESOI_RATIO: f64 = 1.5;
/// The preset claim 6 is about.
pub const CLAIM_PRESET: &Preset = normscope_core::placement::POST;
/// The preset reported beside it (the claim implies warmup matters less there).
pub const CONTRAST_PRESET: &Preset = normscope_core::placement::PRE;
/// The tier whose verdict heads the ledger.
pub const PRIMARY_TIER: &str = "lm";

/// The suffix of an f64 copy of a tier in the tables (`lm-f64`).
pub(crate) const F64_SUFFIX: &str = "-f64";

/// A tier and the cells searched in it.
///
/// # Examples
///
/// The `--quick` run's `lm` tier, and a warmup preset that is not one of the tier's presets,
/// refused:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::warmup::{Config, TierCells};
/// use normscope_core::Error;
///
/// let mut c = Config::quick();
/// let lm: &TierCells = &c.tiers[0];
/// assert_eq!((lm.tier.name.as_str(), lm.tier.steps), ("lm", 60));
/// assert_eq!(lm.presets, ["pre", "post"]);
/// assert_eq!(lm.depths, [4]);
/// assert_eq!(lm.warmup_presets, ["post"]); // "pre" is searched without warmup only
/// c.tiers[0].warmup_presets.push(normscope_core::placement::DEEPNORM);
/// let err = c.check().unwrap_err();
/// assert!(matches!(err, Error::InvalidParam { field: "warmup.tiers.warmup_presets", .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierCells {
    /// The tier's settings.
    pub tier: Tier,
    /// Presets searched without warmup.
    pub presets: Vec<&'static Preset>,
    /// Depths in blocks (whole layers).
    pub depths: Vec<usize>,
    /// Presets (of `presets`) also searched with warmup.
    pub warmup_presets: Vec<&'static Preset>,
}

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::warmup::Config;
/// let c = Config::full();
/// assert_eq!((c.seeds, c.warmup, c.optimizer.as_str()), (10, 100, "adam"));
/// assert_eq!((c.search.start, c.search.factor, c.search.halvings), (3e-3, 2.0, 1));
/// assert_eq!(c.tiers.len(), 3);
/// assert_eq!(c.tiers[2].depths, vec![30]);
/// assert_eq!(c.precision_check[0].depth, 12);
/// assert_eq!(Config::quick().warmup, 20);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Paired seeds `0..seeds`.
    pub seeds: u64,
    /// The linear warmup compared with none (updates).
    pub warmup: u64,
    /// Optimizer.
    pub optimizer: String,
    /// The search of every (cell, seed): the first seed of a cell starts at `start`, the
    /// others at its answer; `min` and `max` are hard caps.
    pub search: Plan,
    /// The tiers and their cells.
    pub tiers: Vec<TierCells>,
    /// Cells searched again in f64 (both warmups), to show an f32 tier gives the f64 verdict.
    pub precision_check: Vec<PrecisionCheck>,
}

/// A (tier, preset, depth) of an f32 tier searched again in f64 with and without warmup
/// (`precision.csv`: per seed, both precisions' intervals; the warmup effect's verdict in
/// each).
///
/// # Examples
///
/// The `--quick` run's check, and one naming a preset its tier searches without warmup only,
/// refused:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::warmup::{Config, PrecisionCheck};
/// use normscope_core::Error;
///
/// let mut c = Config::quick();
/// let post = PrecisionCheck { tier: "lm".into(), preset: normscope_core::placement::POST, depth: 4 };
/// assert_eq!(c.precision_check, [post]);
/// c.precision_check[0].preset = normscope_core::placement::PRE;
/// let err = c.check().unwrap_err();
/// assert!(matches!(err, Error::InvalidParam { field: "warmup.precision_check", .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionCheck {
    /// The tier's name (one of `tiers`).
    pub tier: String,
    /// A preset of that tier's `warmup_presets`.
    pub preset: &'static Preset,
    /// A depth of that tier (blocks).
    pub depth: usize,
}

impl Config {
    /// The tiers, then an f64 copy of each tier a precision check names (named `<tier>-f64`).
    fn tiers(&self) -> Vec<Tier> {
        let mut v: Vec<Tier> = self.tiers.iter().map(|t| t.tier.clone()).collect();
        for name in self.checked_tiers() {
            let t = self
                .tiers
                .iter()
                .find(|t| t.tier.name == name)
                .expect("checked");
            v.push(Tier {
                name: format!("{name}{F64_SUFFIX}"),
                precision: "f64".into(),
                ..t.tier.clone()
            });
        }
        v
    }

    /// The tiers the precision checks name, in order of first appearance.
    fn checked_tiers(&self) -> Vec<String> {
        distinct_strings(
            &self
                .precision_check
                .iter()
                .map(|c| c.tier.clone())
                .collect::<Vec<_>>(),
        )
    }

    /// Every searched cell, in (tier, preset, depth, warmup) order.
    fn cells(&self) -> Vec<SearchCell> {
        let mut v = Vec::new();
        for (t, tc) in self.tiers.iter().enumerate() {
            for p in &tc.presets {
                for &depth in &tc.depths {
                    let mut warmups = vec![0];
                    if tc.warmup_presets.contains(p) {
                        warmups.push(self.warmup);
                    }
                    for warmup in warmups {
                        v.push(SearchCell {
                            tier: t,
                            cell: Cell {
                                preset: p,
                                depth,
                                optimizer: self.optimizer.clone(),
                                lr: self.search.start,
                                warmup,
                            },
                        });
                    }
                }
            }
        }
        let checked = self.checked_tiers();
        for c in &self.precision_check {
            let t = self.tiers.len() + checked.iter().position(|n| *n == c.tier).expect("named");
            for warmup in [0, self.warmup] {
                v.push(SearchCell {
                    tier: t,
                    cell: Cell {
                        preset: c.preset,
                        depth: c.depth,
                        optimizer: self.optimizer.clone(),
                        lr: self.search.start,
                        warmup,
                    },
                });
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
            seeds: 10,
            warmup: 100,
            optimizer: "adam".into(),
            search: Plan {
                start: 3e-3,
                factor: 2.0,
                halvings: 1,
                min: 1e-5,
                max: 4.0,
            },
            tiers: vec![
                TierCells {
                    tier: Tier::lm(),
                    presets: common::presets(&["pre", "post", "deepnorm", "admin"]),
                    depths: vec![12, 24, 48],
                    warmup_presets: common::presets(&["pre", "post"]),
                },
                TierCells {
                    tier: Tier::regression(),
                    presets: common::presets(&["pre", "post", "deepnorm", "admin"]),
                    depths: vec![6, 12, 24, 48],
                    warmup_presets: common::presets(&["pre", "post"]),
                },
                TierCells {
                    tier: Tier::seq2seq(),
                    presets: common::presets(&["pre", "post"]),
                    depths: vec![30],
                    warmup_presets: common::presets(&["pre", "post"]),
                },
            ],
            precision_check: vec![PrecisionCheck {
                tier: "lm".into(),
                preset: normscope_core::placement::POST,
                depth: 12,
            }],
        }
    }

    fn quick() -> Self {
        let full = Self::full();
        let small = |t: Tier, depths: Vec<usize>| TierCells {
            tier: Tier {
                steps: 60,
                eval_every: 10,
                ..t
            },
            presets: common::presets(&["pre", "post"]),
            depths,
            warmup_presets: vec![normscope_core::placement::POST],
        };
        Config {
            seeds: 3,
            warmup: 20,
            tiers: vec![
                // The longer budget's path (80 updates at 4 blocks), exercised quickly.
                small(
                    Tier {
                        long: Some(LongBudget {
                            from_blocks: 4,
                            steps: 80,
                        }),
                        ..Tier::lm()
                    },
                    vec![4],
                ),
                small(Tier::regression(), vec![4]),
                small(Tier::seq2seq(), vec![5]),
            ],
            precision_check: vec![PrecisionCheck {
                tier: "lm".into(),
                preset: normscope_core::placement::POST,
                depth: 4,
            }],
            ..full
        }
    }

    fn check(&self) -> Result<()> {
        check_count("warmup.seeds", self.seeds, 2)?;
        check_count("warmup.warmup", self.warmup, 1)?;
        self.search.check()?;
        if self.tiers.is_empty() {
            return Err(Error::invalid(
                "warmup.tiers",
                "[]",
                "a non-empty list of tiers",
            ));
        }
        for t in &self.tiers {
            check_presets(&t.presets)?;
            if let Some(p) = t.warmup_presets.iter().find(|p| !t.presets.contains(p)) {
                return Err(Error::invalid(
                    "warmup.tiers.warmup_presets",
                    p,
                    "presets of the tier's `presets`",
                ));
            }
            if self.warmup >= t.tier.steps {
                return Err(Error::invalid(
                    "warmup.warmup",
                    self.warmup,
                    format!(
                        "fewer updates than tier {}'s steps ({})",
                        t.tier.name, t.tier.steps
                    ),
                ));
            }
            common::check_depths("warmup.tiers.depths", &t.depths)?;
            t.tier.check("warmup.tiers", &t.depths)?;
        }
        for pc in &self.precision_check {
            let ok = self.tiers.iter().any(|t| {
                t.tier.name == pc.tier
                    && t.tier.precision == "f32"
                    && t.warmup_presets.contains(&pc.preset)
                    && t.depths.contains(&pc.depth)
            });
            if !ok {
                return Err(Error::invalid(
                    "warmup.precision_check",
                    format!("{} {} at {} blocks", pc.tier, pc.preset, pc.depth),
                    "a tier of `tiers` in f32, one of its warmup_presets and one of its depths",
                ));
            }
        }
        let tiers = self.tiers();
        for c in self.cells() {
            let base = tiers[c.tier].base()?;
            c.cell.config(&base, 0)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        self.seed_list()
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let tiers = c.tiers();
    let cells = c.cells();
    let seeds = c.seed_list();
    let bar = DelayedBar::training((cells.len() * seeds.len()) as u64, "searches");
    let Some(found) = out.units(
        "searches",
        &cells,
        |x| lr_search::cost(&tiers, x, seeds.len()),
        |mine| lr_search::run_cells(&tiers, mine, &seeds, &c.search, &bar),
    )?
    else {
        return Ok(());
    };
    bar.finish();
    let mut runs = lr_search::runs_frame(&tiers, &cells, &found)?;
    out.frame("runs.csv", &mut runs)?;
    let mut searches = lr_search::searches_frame(&tiers, &cells, &found)?;
    out.frame("searches.csv", &mut searches)?;
    summary(c, out, &tiers, &cells, &found)?;
    let effects = all_effects(c, &searches)?;
    effects_table(out, &effects)?;
    precision_table(c, out, &searches)?;
    figures(c, out, &tiers, &cells, &found)
}

/// `precision.csv`: for each precision check, per seed and warmup, both precisions' intervals
/// and whether they overlap (share a value: half-open brackets that only touch do not,
/// [`Obs::intersects`]); and per check, the warmup effect's outcome and the family's
/// verdict in each precision (the family of that one depth).
fn precision_table(c: &Config, out: &mut Out, searches: &DataFrame) -> Result<()> {
    let mut rows: Vec<(String, String, usize, u64, String, Obs, Obs)> = Vec::new();
    let mut verdicts: Vec<(String, String, usize, String, String)> = Vec::new();
    for pc in &c.precision_check {
        let f64_tier = format!("{}{F64_SUFFIX}", pc.tier);
        for warmup in [0, c.warmup] {
            let a = cell_obs(searches, &pc.tier, pc.preset.name, pc.depth as u64, warmup)?;
            let b = cell_obs(searches, &f64_tier, pc.preset.name, pc.depth as u64, warmup)?;
            paired_by_seed(&a, &b, "precision check")?;
            for ((s, x), (_, y)) in a.iter().zip(&b) {
                rows.push((
                    pc.tier.clone(),
                    pc.preset.name.to_string(),
                    pc.depth,
                    warmup,
                    s.to_string(),
                    *x,
                    *y,
                ));
            }
        }
        let one = |tier: &str| -> Result<String> {
            let with = cell_obs(searches, tier, pc.preset.name, pc.depth as u64, c.warmup)?;
            let none = cell_obs(searches, tier, pc.preset.name, pc.depth as u64, 0)?;
            let fam = Family::new(
                "warmup raises the maximum stable lr (one depth)",
                SESOI_RATIO.log2(),
                vec![Comparison {
                    name: format!("{} blocks", pc.depth),
                    diffs: paired_by_seed(&with, &none, tier)?,
                    claimed: Claimed::Increase,
                    sesoi: None,
                }],
            );
            let (a, v) = judge(&fam)?;
            Ok(format!(
                "{}: {v}",
                a.first().map(|x| x.to_string()).unwrap_or_default()
            ))
        };
        verdicts.push((
            pc.tier.clone(),
            pc.preset.name.to_string(),
            pc.depth,
            one(&pc.tier)?,
            one(&f64_tier)?,
        ));
    }
    let overlap = |x: &Obs, y: &Obs| x.intersects(y);
    let mut df = frame(vec![
        column("tier", rows.iter().map(|r| r.0.clone())),
        column("preset", rows.iter().map(|r| r.1.clone())),
        column("blocks", rows.iter().map(|r| r.2 as u64)),
        column("warmup", rows.iter().map(|r| r.3)),
        column("seed", rows.iter().map(|r| r.4.clone())),
        column("f32_log2_bracket_low", rows.iter().map(|r| r.5.lo())),
        column("f32_log2_bracket_high", rows.iter().map(|r| r.5.hi())),
        column("f64_log2_bracket_low", rows.iter().map(|r| r.6.lo())),
        column("f64_log2_bracket_high", rows.iter().map(|r| r.6.hi())),
        column("overlap", rows.iter().map(|r| overlap(&r.5, &r.6))),
    ])?;
    out.frame("precision.csv", &mut df)?;
    let mut dv = frame(vec![
        column("tier", verdicts.iter().map(|r| r.0.clone())),
        column("preset", verdicts.iter().map(|r| r.1.clone())),
        column("blocks", verdicts.iter().map(|r| r.2 as u64)),
        column("f32", verdicts.iter().map(|r| r.3.clone())),
        column("f64", verdicts.iter().map(|r| r.4.clone())),
        column(
            "same_verdict",
            verdicts
                .iter()
                .map(|r| r.3.rsplit(": ").next() == r.4.rsplit(": ").next()),
        ),
    ])?;
    out.frame("precision_verdicts.csv", &mut dv)
}

/// The interval holding a search's maximum stable rate `m`, in log2, from the ends of its
/// bracket ([`normscope_core::train::search::Search::interval`], the `max_lr_bracket_*`
/// columns): `[log2 lo, log2 hi)` when bracketed (stable at `lo`, so `m >= lo`; failed at
/// `hi`, so `m < hi`), `(-inf, log2 hi)` when censored below (`lo = 0`: failed at the plan's
/// `min`), `[log2 lo, +inf]` when censored above (`hi = +inf`: stable at its `max`). Ends that
/// coincide (stable and failing at one rate, which a monotone boundary never gives) are read
/// as that closed point.
pub(crate) fn log2_obs(lo: f64, hi: f64) -> Obs {
    let (a, b) = (lo.log2(), hi.log2());
    if lo == 0.0 {
        Obs::less_than(b)
    } else {
        Obs::half_open(a, b).or_else(|| Obs::between(a, b))
    }
    .expect("a search's interval is ordered and not empty")
}

/// The median maximum stable rate of a cell's seeds (exact 95% interval, interval data), in
/// linear units: `(median, lo, hi)`; the ends infinite or 0 where censored.
fn median_lr(seeds: &[SeedSearch]) -> (f64, f64, f64) {
    let obs: Vec<Obs> = seeds
        .iter()
        .map(|s| {
            let (lo, hi) = s.search.interval();
            log2_obs(lo, hi)
        })
        .collect();
    match median_ci(&obs) {
        Some(m) => (m.estimate.exp2(), m.lo.exp2(), m.hi.exp2()),
        None => (f64::NAN, f64::NAN, f64::NAN),
    }
}

fn summary(
    c: &Config,
    out: &mut Out,
    tiers: &[Tier],
    cells: &[SearchCell],
    found: &[Vec<SeedSearch>],
) -> Result<()> {
    let seeds = seed_range(&c.seed_list());
    let keys: Vec<RunKey> = cells
        .iter()
        .map(|x| RunKey::new(&tiers[x.tier], &x.cell, &seeds).at_lr(f64::NAN))
        .collect();
    let med: Vec<(f64, f64, f64)> = found.iter().map(|f| median_lr(f)).collect();
    let count = |name: &str| {
        found
            .iter()
            .map(|f| {
                f.iter()
                    .filter(|s| s.search.censored.name() == name)
                    .count() as u64
            })
            .collect::<Vec<u64>>()
    };
    let mut cols = key_columns(&keys);
    cols.extend([
        column("n", found.iter().map(|f| f.len() as u64)),
        column("median_max_lr", med.iter().map(|m| m.0)),
        column("median_max_lr_ci_low", med.iter().map(|m| m.1)),
        column("median_max_lr_ci_high", med.iter().map(|m| m.2)),
        column("censored_above", count("above")),
        column("censored_below", count("below")),
        column(
            "runs",
            found
                .iter()
                .map(|f| f.iter().map(|s| s.search.tried.len() as u64).sum::<u64>()),
        ),
    ]);
    let mut df = frame(cols)?;
    out.frame("summary.csv", &mut df)
}

/// One assessed warmup effect with its place.
///
/// # Examples
///
/// One depth's effect, assessed from eight paired seeds that all favour warmup:
///
/// ```rust
/// use normscope_analyses::warmup::Effect;
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{judge, Claimed, Comparison, Family, Outcome};
/// let diffs: Vec<Obs> = [1.0, 2.0, 1.5, 0.5, 1.0, 2.5, 1.0, 3.0]
///     .iter()
///     .map(|&x| Obs::exact(x).unwrap())
///     .collect();
/// let comparison = Comparison { name: "12 layers".into(), diffs, claimed: Claimed::Increase, sesoi: None };
/// let family = Family::new("warmup raises the largest stable rate", 0.1, vec![comparison]);
/// let (assessed, verdict) = judge(&family).unwrap();
/// let e = Effect {
///     tier: "lm".into(),
///     preset: normscope_core::placement::POST,
///     blocks: 24,
///     layers: 12,
///     assessed: assessed[0].clone(),
///     verdict: verdict.to_string(),
///     rule: "Holm over one depth".into(),
/// };
/// // The median of the eight differences is (1 + 1.5) / 2.
/// assert_eq!((e.assessed.n, e.assessed.estimate), (8, 1.25));
/// assert_eq!(e.assessed.outcome, Outcome::AsClaimed);
/// assert_eq!(e.verdict, "supported (holds in 1 of 1)");
/// ```
#[derive(Clone, Debug)]
pub struct Effect {
    /// Tier name.
    pub tier: String,
    /// Preset.
    pub preset: &'static Preset,
    /// Blocks.
    pub blocks: usize,
    /// Layers.
    pub layers: usize,
    /// The assessment.
    pub assessed: Assessed,
    /// Its family's verdict.
    pub verdict: String,
    /// Its family's rule.
    pub rule: String,
}

/// The per-seed log2 intervals of `searches.csv` rows of one cell ([`log2_obs`]: half-open
/// brackets), `(seed, interval)` sorted by the `seed` column (never by row order: merged shards
/// may be in any order).
pub(crate) fn cell_obs(
    df: &DataFrame,
    tier: &str,
    preset: &str,
    blocks: u64,
    warmup: u64,
) -> Result<Vec<(u64, Obs)>> {
    let (t, p) = (strs(df, "tier")?, strs(df, "preset")?);
    let (b, w) = (f64s(df, "blocks")?, f64s(df, "warmup")?);
    let (lo, hi) = (
        f64s(df, "max_lr_bracket_low")?,
        f64s(df, "max_lr_bracket_high")?,
    );
    let seed = f64s(df, "seed")?;
    let mut v: Vec<(u64, Obs)> = (0..df.height())
        .filter(|&i| {
            t[i] == tier && p[i] == preset && b[i] as u64 == blocks && w[i] as u64 == warmup
        })
        .map(|i| {
            (
                seed[i] as u64,
                log2_obs(lo[i], if hi[i].is_nan() { f64::INFINITY } else { hi[i] }),
            )
        })
        .collect();
    v.sort_by_key(|x| x.0);
    Ok(v)
}

/// The paired differences `a_s - b_s` of two cells' [`cell_obs`], which must hold the same
/// seeds, each once (else an error naming `what`).
pub(crate) fn paired_by_seed(a: &[(u64, Obs)], b: &[(u64, Obs)], what: &str) -> Result<Vec<Obs>> {
    let seeds = |v: &[(u64, Obs)]| v.iter().map(|x| x.0).collect::<Vec<u64>>();
    let (sa, sb) = (seeds(a), seeds(b));
    if sa != sb || sa.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::Undefined(format!(
            "warmup: {what}: the paired cells' seeds differ or repeat ({sa:?} and {sb:?})"
        )));
    }
    Ok(a.iter().zip(b).map(|(x, y)| x.1 - y.1).collect())
}

/// A depth as `(blocks, layers)`.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::warmup::Depth;
/// let d: Depth = (24, 12); // 24 blocks, 12 Transformer layers
/// assert_eq!(d.0 / d.1, 2);
/// ```
pub type Depth = (u64, u64);

/// The family of warmup effects of `preset` in `tier` (one comparison per depth with both
/// arms), from `searches.csv`; `None` when the tier has no such depth.
pub fn family(
    df: &DataFrame,
    tier: &str,
    preset: &'static Preset,
    warmup: u64,
) -> Result<Option<(Family, Vec<Depth>)>> {
    let (t, p, b, l, w) = (
        strs(df, "tier")?,
        strs(df, "preset")?,
        f64s(df, "blocks")?,
        f64s(df, "layers")?,
        f64s(df, "warmup")?,
    );
    let mut depths: Vec<(u64, u64)> = (0..df.height())
        .filter(|&i| t[i] == tier && p[i] == preset.name && w[i] as u64 == warmup)
        .map(|i| (b[i] as u64, l[i] as u64))
        .collect();
    depths.sort_unstable();
    depths.dedup();
    let mut comparisons = Vec::new();
    for &(blocks, layers) in &depths {
        let with = cell_obs(df, tier, preset.name, blocks, warmup)?;
        let none = cell_obs(df, tier, preset.name, blocks, 0)?;
        let diffs = paired_by_seed(
            &with,
            &none,
            &format!("{tier} {} at {blocks} blocks", preset.name),
        )?;
        comparisons.push(Comparison {
            name: super::training::layers_text(layers as usize),
            diffs,
            claimed: Claimed::Increase,
            sesoi: None,
        });
    }
    if comparisons.is_empty() {
        return Ok(None);
    }
    let claim = format!(
        "warmup {warmup} raises {}'s maximum stable lr ({tier} tier; effect in doublings, log2 of the ratio)",
        preset.label
    );
    Ok(Some((
        Family::new(&claim, SESOI_RATIO.log2(), comparisons),
        depths,
    )))
}

fn all_effects(c: &Config, searches: &DataFrame) -> Result<Vec<Effect>> {
    let mut out = Vec::new();
    for tc in &c.tiers {
        for &preset in &tc.warmup_presets {
            let Some((fam, depths)) = family(searches, &tc.tier.name, preset, c.warmup)? else {
                continue;
            };
            let (assessed, v) = judge(&fam)?;
            for (a, (blocks, layers)) in assessed.into_iter().zip(depths) {
                out.push(Effect {
                    tier: tc.tier.name.clone(),
                    preset,
                    blocks: blocks as usize,
                    layers: layers as usize,
                    assessed: a,
                    verdict: v.to_string(),
                    rule: fam.rule(),
                });
            }
        }
    }
    Ok(out)
}

/// [`verdict::judge`] with its error as the crate's.
pub fn judge(f: &Family) -> Result<(Vec<Assessed>, Verdict)> {
    verdict::judge(f).map_err(|e| Error::Undefined(format!("verdict: {e}")))
}

fn effects_table(out: &mut Out, effects: &[Effect]) -> Result<()> {
    let a = |f: fn(&Assessed) -> f64| {
        effects
            .iter()
            .map(move |e| f(&e.assessed))
            .collect::<Vec<f64>>()
    };
    let mut df = frame(vec![
        column("tier", effects.iter().map(|e| e.tier.clone())),
        column("preset", effects.iter().map(|e| e.preset.name)),
        column("label", effects.iter().map(|e| e.preset.label)),
        column("blocks", effects.iter().map(|e| e.blocks as u64)),
        column("layers", effects.iter().map(|e| e.layers as u64)),
        column("n", effects.iter().map(|e| e.assessed.n as u64)),
        column("effect_doublings", a(|x| x.estimate)),
        column("effect_ci_low", a(|x| x.ci.0)),
        column("effect_ci_high", a(|x| x.ci.1)),
        column("coverage", a(|x| x.coverage)),
        column("ratio", a(|x| x.estimate.exp2())),
        column("p_two_sided", a(|x| x.p_two_sided)),
        column("q_two_sided", a(|x| x.q_two_sided)),
        column("p_equivalence", a(|x| x.p_equivalence)),
        column("q_equivalence", a(|x| x.q_equivalence)),
        column("outcome", effects.iter().map(|e| e.assessed.outcome_text())),
        column("family_verdict", effects.iter().map(|e| e.verdict.clone())),
    ])?;
    out.frame("effects.csv", &mut df)?;
    let mut t = Table::new(
        format!(
            "Effect of warmup on the maximum stable peak learning rate (Adam): the median over paired seeds of $\\log_2$ of the ratio with and without warmup (doublings), with its exact distribution-free 95\\% interval; sign tests Holm-adjusted within each tier and preset; smallest effect of interest a factor {SESOI_RATIO}."
        ),
        "tab:warmup-effects",
        &["preset", "layers", "effect", latex::CI_HEADER, "$q$"],
    );
    let mut tier = None;
    for e in effects {
        if tier != Some(&e.tier) {
            t.group(format!("{} tier", e.tier));
            tier = Some(&e.tier);
        }
        let [effect, ci] = Tex::ci(e.assessed.estimate, e.assessed.ci);
        t.row(vec![
            Tex::Text(common::tex_label(e.preset)),
            Tex::Int(e.layers as i64),
            effect,
            ci,
            Tex::Num(e.assessed.deciding_q()),
        ]);
    }
    out.latex(&t, "effects")
}

/// A point of a figure: `(x, estimate, interval low, interval high)`.
type Estimate = (f64, f64, f64, f64);

fn figures(
    c: &Config,
    out: &mut Out,
    tiers: &[Tier],
    cells: &[SearchCell],
    found: &[Vec<SeedSearch>],
) -> Result<()> {
    for (ti, tc) in c.tiers.iter().enumerate() {
        let mut plot = LinePlot::new(
            &format!(
                "Maximum stable peak lr, {} tier, Adam (median of {} seeds, {})",
                tc.tier.name,
                c.seeds,
                super::common::ci_note(c.seeds)
            ),
            "layers",
            "max stable lr",
        );
        plot.x_log = true;
        plot.y_log = true;
        for (pi, p) in tc.presets.iter().enumerate() {
            for warmup in [0, c.warmup] {
                // An interval end that censoring leaves open (the exact interval's low end is
                // the k-th lowest seed's bracket end, k = 2 of 10 seeds: two seeds unstable at
                // every rate tried make it 0; likewise the high end infinite) is drawn at the
                // search's bound with an arrow past it.
                let (pts, open): (Vec<Estimate>, Vec<(bool, bool)>) = cells
                    .iter()
                    .zip(found)
                    .filter(|(x, _)| x.tier == ti && x.cell.preset == *p && x.cell.warmup == warmup)
                    .map(|(x, f)| {
                        let (m, lo, hi) = median_lr(f);
                        let cap = |v: f64| v.clamp(c.search.min, c.search.max);
                        let layers = tiers[ti].layers(x.cell.depth) as f64;
                        ((layers, m, cap(lo), cap(hi)), (lo <= 0.0, hi.is_infinite()))
                    })
                    .filter(|(p, _)| p.1.is_finite())
                    .unzip();
                if pts.is_empty() {
                    continue;
                }
                let label = if warmup == 0 {
                    p.label.to_string()
                } else {
                    format!("{}, warmup {warmup}", p.label)
                };
                // Warmup arms take the palette's second half, so each arm has its colour.
                let color = if warmup == 0 {
                    pi
                } else {
                    pi + tc.presets.len()
                };
                plot.series
                    .push(Series::points(label, color, &pts).open(open));
            }
        }
        out.figure(&format!("max_stable_lr_{}", tc.tier.name), &plot)?;
    }
    Ok(())
}

#[cfg(test)]
// Exact values: the brackets are powers of 2, their log2 small integers.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;
    use normscope_core::stats::sign::{Counts, counts};
    use normscope_core::stats::verdict::Outcome;
    use polars::prelude::df;

    /// A `searches.csv` of Post-LN on tier `t` at the given depths, ten seeds each, warmup
    /// 100 with bracket `with` and none with bracket `none` (`(low, high)`, as written: high
    /// NaN when censored above, low 0 when censored below).
    fn searches(depths: &[u64], with: (f64, f64), none: (f64, f64)) -> DataFrame {
        let mut r = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &blocks in depths {
            for (warmup, (lo, hi)) in [(100, with), (0, none)] {
                for seed in 0..10 {
                    r.0.push(blocks);
                    r.1.push(warmup as f64);
                    r.2.push(seed as f64);
                    r.3.push(lo);
                    r.4.push(hi);
                }
            }
        }
        let n = r.0.len();
        let layers: Vec<f64> = r.0.iter().map(|&b| (b / 2) as f64).collect();
        let blocks: Vec<f64> = r.0.iter().map(|&b| b as f64).collect();
        df!(
            "tier" => vec!["t"; n], "preset" => vec!["post"; n], "blocks" => blocks,
            "layers" => layers, "warmup" => r.1, "seed" => r.2,
            "max_lr_bracket_low" => r.3, "max_lr_bracket_high" => r.4,
        )
        .unwrap()
    }

    fn outcomes(df: &DataFrame) -> (Vec<Assessed>, Verdict) {
        let (fam, _) = family(df, "t", CLAIM_PRESET, 100).unwrap().unwrap();
        judge(&fam).unwrap()
    }

    #[test]
    fn brackets_are_read_half_open() {
        assert_eq!(log2_obs(0.25, 0.5), Obs::half_open(-2.0, -1.0).unwrap());
        assert_eq!(log2_obs(0.0, 0.5), Obs::less_than(-1.0).unwrap());
        assert_eq!(log2_obs(4.0, f64::INFINITY), Obs::at_least(2.0).unwrap());
        let v = cell_obs(
            &searches(&[24], (2.0, 4.0), (1.0, 2.0)),
            "t",
            "post",
            24,
            100,
        )
        .unwrap();
        assert_eq!(v.len(), 10);
        assert!(v.iter().all(|x| x.1 == Obs::half_open(1.0, 2.0).unwrap()));
    }

    #[test]
    fn touching_warmup_brackets_are_judged_as_claimed() {
        // Per seed, warmup's bracket [2, 4) x 1e-3 and none's [1, 2) x 1e-3 touch at 2e-3,
        // where warmup was stable and no-warmup failed: each difference is (0, 2) doublings,
        // above 0, ten of ten, p = 2/1024, and Holm over two depths q = 4/1024 < 0.05.
        let df = searches(&[24, 48], (2e-3, 4e-3), (1e-3, 2e-3));
        let with = cell_obs(&df, "t", "post", 24, 100).unwrap();
        let none = cell_obs(&df, "t", "post", 24, 0).unwrap();
        let d = paired_by_seed(&with, &none, "test").unwrap();
        assert_eq!(
            counts(&d, 0.0),
            Counts {
                above: 10,
                below: 0,
                ambiguous: 0
            }
        );
        let (a, v) = outcomes(&df);
        assert_eq!(a.len(), 2);
        for x in &a {
            assert_eq!(x.outcome, Outcome::AsClaimed, "{x}");
            assert!((x.p_two_sided - 2.0 / 1024.0).abs() < 1e-15, "{x}");
            assert!((x.q_two_sided - 4.0 / 1024.0).abs() < 1e-15, "{x}");
        }
        assert_eq!(v.to_string(), "supported (holds in 2 of 2)");
    }

    #[test]
    fn overlapping_warmup_brackets_stay_inconclusive() {
        // Warmup [1.5, 3) x 1e-3 against none [1, 2) x 1e-3: both arms may have been stable
        // at 1.75e-3, so no seed is certainly above 0, and nothing is significant.
        let (a, _) = outcomes(&searches(&[24], (1.5e-3, 3e-3), (1e-3, 2e-3)));
        assert_eq!(a[0].outcome, Outcome::Inconclusive, "{}", a[0]);
        assert_eq!(a[0].p_two_sided, 1.0);
    }

    #[test]
    fn a_censored_below_arm_touching_a_bracket_is_a_strict_win() {
        // No-warmup failing at the plan's min 1e-5 ((-inf, log2 1e-5)), warmup stable there
        // ([1e-5, 2e-5)): each difference is (0, inf), certainly above 0.
        let df = searches(&[24], (1e-5, 2e-5), (0.0, 1e-5));
        let with = cell_obs(&df, "t", "post", 24, 100).unwrap();
        let none = cell_obs(&df, "t", "post", 24, 0).unwrap();
        let d = paired_by_seed(&with, &none, "test").unwrap();
        assert!(
            d.iter()
                .all(|o| o.lo() == 0.0 && o.lo_open() && o.hi() == f64::INFINITY)
        );
        let (a, _) = outcomes(&df);
        assert_eq!(a[0].outcome, Outcome::AsClaimed, "{}", a[0]);
    }
}
