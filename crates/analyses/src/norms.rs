//! `norms`: claim 10, "the conclusions hold for other norms". The init-time quantities behind
//! claims 1-5 re-measured by Monte Carlo under every norm of `--norm` (LayerNorm, RMSNorm,
//! BatchNorm, InstanceNorm, GroupNorm and the normalization-free DyT; docs/theory.md, "Other
//! norms") for Pre-LN, Post-LN and DeepNorm, at one depth:
//!
//! - claim 1: the effective depth `eff_depth` at L;
//! - claim 2: Pre-Norm's stream growth, the exponent `p` of `||x_l|| ~ l^p` from `stream_sq`
//!   at L/2 and L;
//! - claim 3: `x_0`'s per-layer factor under Post-Norm, the geometric mean over blocks of
//!   `sqrt(skip_gain)` (the skip path's Jacobian gain; for LayerNorm and RMSNorm it is
//!   `C_{l,0}/C_{l-1,0}`, the factor the decomposition gives, which the other norms lack);
//! - claim 4: Post-Norm's first/last block weight-gradient ratio;
//! - claim 5: DeepNorm's effective depth against Post-Norm's.
//!
//! Each conclusion is judged under each norm with the rule the ledger uses for LayerNorm
//! ([`Measured::outcome`]); [`verdicts`] compares it with LayerNorm's outcome, and the ledger's
//! claim 10 reads that table. Claim 6's warmup effect per norm needs training with these norms,
//! which the training engine does not have yet; it is not measured here.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use crate::ledger::rules::{KEEPS_DEPTH_MIN, NO_VANISH_MIN, POST_OVER_PRE_MIN};
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::monte_carlo::{McConfig, RawMc};
use normscope_core::output::figure::{LinePlot, Series};
use normscope_core::output::latex::{Cell, Table};
use normscope_core::output::table::column;
use normscope_core::profile::Row;
use normscope_core::spec::NormKind;
use normscope_core::{Error, Result};
use polars::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "norms",
    about: "claim 10: the init-time conclusions of claims 1-5 under every norm, by Monte Carlo",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: None,
};

/// The file of every row (the analysis), which the ledger reads.
pub const ROWS: &str = "mc.csv";
/// The file of the per-norm conclusions ([`verdicts`]).
pub const VERDICTS: &str = "verdicts.csv";

/// Claim 2 under a norm: Pre-Norm's stream norm grows "as O(sqrt t)" (the LayerNorm reading)
/// if its exponent is within this of 1/2.
pub const EXPONENT_TOL: f64 = 0.15;
/// Claim 4 under a norm: the first block's weight gradient "explodes" if it exceeds this
/// multiple of the last block's (the mirror of `NO_VANISH_MIN` (0.5, the ledger's claim-4 threshold)).
pub const EXPLODE_MIN: f64 = 1.0 / NO_VANISH_MIN;
/// Claim 3 under a norm: Post-Norm's per-layer factor on `x_0` is the same number as under
/// LayerNorm if it differs by less than this share of LayerNorm's.
pub const SAME_FACTOR_REL: f64 = 0.1;

/// Configuration.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::norms::Config;
/// let c = Config::full();
/// assert_eq!((c.depth, c.groups, c.batch), (64, 8, 2));
/// assert_eq!(c.norms.len(), 6);
/// assert_eq!(Config::quick().depth, 16);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets: must include `pre`, `post` and `deepnorm` (the claims compare them).
    pub presets: Vec<String>,
    /// Depth L.
    pub depth: usize,
    /// Norms; the first is the reference the others are compared with (LayerNorm).
    pub norms: Vec<NormKind>,
    /// GroupNorm's groups (a divisor of the width).
    pub groups: usize,
    /// Sequences per input (BatchNorm's batch is `batch x tokens` columns).
    pub batch: usize,
    /// Branch and init.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Config {
            presets: s(&["pre", "post", "deepnorm"]),
            depth: 64,
            // Every norm but the identity, LayerNorm (the reference) first.
            norms: NormKind::ALL
                .into_iter()
                .filter(|&k| k != NormKind::Identity)
                .collect(),
            groups: 8,
            batch: 2,
            model: Model::relu_mlp(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            depth: 16,
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("norms.depth", &[self.depth])?;
        for p in ["pre", "post", "deepnorm"] {
            if !self.presets.iter().any(|q| q == p) {
                return Err(Error::invalid(
                    "norms.presets",
                    format!("{:?}", self.presets),
                    "a list including pre, post and deepnorm (the claims compare them)",
                ));
            }
        }
        if self.depth < 4 {
            return Err(Error::invalid(
                "norms.depth",
                self.depth,
                "an integer >= 4 (the stream exponent reads layers L/2 and L)",
            ));
        }
        if self.norms.first() != Some(&NormKind::Layer) {
            return Err(Error::invalid(
                "norms.norms",
                format!("{:?}", self.norms),
                "a list starting with layer (the reference)",
            ));
        }
        for &n in &self.norms {
            self.mc_config(n)?;
            common::check(&self.presets, &self.model(n), &self.mc, self.depth)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

impl Config {
    fn model(&self, norm: NormKind) -> Model {
        Model {
            norm,
            ..self.model.clone()
        }
    }

    fn mc_config(&self, norm: NormKind) -> Result<McConfig> {
        let raw = normscope_core::model::RawModel {
            groups: self.groups,
            ..self.model(norm).raw(self.depth, &self.mc)
        };
        McConfig::new(
            &raw,
            &RawMc {
                samples: self.mc.samples,
                seed: self.mc.seed,
                batch: self.batch,
                ..RawMc::default()
            },
        )
        .map_err(|e| Error::Undefined(format!("norms: {norm}: {e}")))
    }
}

/// The metrics measured, at every layer.
pub const METRICS: [Metric; 4] = [
    Metric::EffDepth,
    Metric::StreamSq,
    Metric::SkipGain,
    Metric::WeightGradSq,
];

/// One conclusion of claims 1-5 as the ledger states it for LayerNorm.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::norms::Conclusion;
/// assert_eq!(Conclusion::ALL.len(), 5);
/// assert_eq!(Conclusion::ALL[0].claim(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conclusion {
    /// Claim 1: Post-Norm's effective depth exceeds Pre-Norm's by `POST_OVER_PRE_MIN` (4, the ledger's).
    DepthSplit,
    /// Claim 2: Pre-Norm's stream norm grows as `l^(1/2)` (within [`EXPONENT_TOL`]).
    SqrtGrowth,
    /// Claim 3: Post-Norm's per-layer factor on `x_0` (compared with LayerNorm's: the same
    /// number within [`SAME_FACTOR_REL`]).
    X0Factor,
    /// Claim 4: Post-Norm's first/last weight-gradient ratio: below `NO_VANISH_MIN` (0.5, the ledger's claim-4 threshold)
    /// (vanishes), above [`EXPLODE_MIN`] (explodes) or between.
    NoVanish,
    /// Claim 5: DeepNorm's effective depth is at least `KEEPS_DEPTH_MIN` (0.5, the ledger's) of Post-Norm's.
    KeepsDepth,
}

impl Conclusion {
    /// In claim order.
    pub const ALL: [Conclusion; 5] = [
        Conclusion::DepthSplit,
        Conclusion::SqrtGrowth,
        Conclusion::X0Factor,
        Conclusion::NoVanish,
        Conclusion::KeepsDepth,
    ];

    /// The claim it belongs to.
    pub fn claim(self) -> u32 {
        self as u32 + 1
    }

    /// The rule, for the ledger.
    pub fn rule(self) -> String {
        match self {
            Conclusion::DepthSplit => {
                format!("1: Post eff_depth > {POST_OVER_PRE_MIN}x Pre's")
            }
            Conclusion::SqrtGrowth => {
                format!("2: Pre's stream-norm exponent within {EXPONENT_TOL} of 1/2")
            }
            Conclusion::X0Factor => format!(
                "3: Post's x_0 factor within {}% of LayerNorm's",
                SAME_FACTOR_REL * 100.0
            ),
            Conclusion::NoVanish => format!(
                "4: Post's first/last weight-gradient ratio below {NO_VANISH_MIN} (vanishes), above {EXPLODE_MIN} (explodes) or between"
            ),
            Conclusion::KeepsDepth => {
                format!("5: DeepNorm eff_depth >= {KEEPS_DEPTH_MIN}x Post's")
            }
        }
    }
}

/// A Monte Carlo quantity with its 95% interval (`lo <= v <= hi`; for a quantity derived from
/// several rows, the interval their intervals' ends give: conservative).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::norms::Iv;
/// let a = Iv { v: 2.0, lo: 1.0, hi: 3.0 };
/// let b = Iv { v: 10.0, lo: 8.0, hi: 12.0 };
/// assert_eq!(b.over(&a), Iv { v: 5.0, lo: 8.0 / 3.0, hi: 12.0 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Iv {
    /// The estimate.
    pub v: f64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

impl Iv {
    fn of(r: &Row) -> Iv {
        let (lo, hi) = r.interval();
        Iv { v: r.value, lo, hi }
    }

    /// `self / other` with the interval of the quotient of the two (positive) intervals.
    pub fn over(&self, other: &Iv) -> Iv {
        Iv {
            v: self.v / other.v,
            lo: self.lo / other.hi,
            hi: self.hi / other.lo,
        }
    }

    /// `f` of each end (an increasing map).
    fn map(&self, f: impl Fn(f64) -> f64) -> Iv {
        Iv {
            v: f(self.v),
            lo: f(self.lo),
            hi: f(self.hi),
        }
    }
}

impl std::fmt::Display for Iv {
    /// `v [lo, hi]`, four significant digits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use normscope_core::output::latex::plain;
        write!(
            f,
            "{} [{}, {}]",
            plain(self.v),
            plain(self.lo),
            plain(self.hi)
        )
    }
}

/// Where an interval lies against a threshold `t`: `above` if wholly above, `below` if wholly
/// below, `inconclusive` if it contains it.
fn side(x: Iv, t: f64) -> &'static str {
    if x.lo > t {
        "above"
    } else if x.hi < t {
        "below"
    } else {
        INCONCLUSIVE
    }
}

/// The outcome of a conclusion whose interval straddles its threshold.
pub const INCONCLUSIVE: &str = "inconclusive";

/// What one norm's rows give for the conclusions, each with its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// Effective depth at L: Pre, Post, DeepNorm.
    pub eff_depth: [Iv; 3],
    /// Pre-Norm's stream-norm exponent.
    pub exponent: Iv,
    /// Post-Norm's per-layer factor on `x_0`.
    pub x0_factor: Iv,
    /// Post-Norm's first/last weight-gradient ratio.
    pub grad_ratio: Iv,
}

impl Measured {
    /// Reads the quantities from one norm's rows at depth `depth`.
    pub fn of(rows: &[Row], depth: usize) -> Result<Self> {
        let v = |p: &str, m: Metric, l: usize| {
            common::find(rows, p, m, depth as u64, l as u64, None)
                .map(Iv::of)
                .filter(|x| x.lo > 0.0)
                .ok_or_else(|| {
                    Error::Undefined(format!(
                        "norms: no positive {} value for {p} at layer {l}",
                        m.name()
                    ))
                })
        };
        let ed = Metric::EffDepth;
        let half = depth / 2;
        let growth = v("pre", Metric::StreamSq, depth)?.over(&v("pre", Metric::StreamSq, half)?);
        let span = (depth as f64 / half as f64).ln();
        let exponent = growth.map(|g| 0.5 * g.ln() / span);
        let mut log_gain = Iv {
            v: 0.0,
            lo: 0.0,
            hi: 0.0,
        };
        for l in 2..=depth {
            let g = v("post", Metric::SkipGain, l)?.map(f64::ln);
            log_gain = Iv {
                v: log_gain.v + g.v,
                lo: log_gain.lo + g.lo,
                hi: log_gain.hi + g.hi,
            };
        }
        let x0_factor = log_gain.map(|x| (0.5 * x / (depth - 1) as f64).exp());
        let w = Metric::WeightGradSq;
        let grad_ratio = v("post", w, 1)?.over(&v("post", w, depth)?);
        Ok(Measured {
            eff_depth: [
                v("pre", ed, depth)?,
                v("post", ed, depth)?,
                v("deepnorm", ed, depth)?,
            ],
            exponent,
            x0_factor,
            grad_ratio,
        })
    }

    /// The outcome of conclusion `c` under this norm (`reference`: LayerNorm's measurements,
    /// which claim 3's comparison needs), from the intervals: `yes`/`no` when the interval
    /// clears the rule's threshold, `inconclusive` when it straddles it; for claim 4
    /// `vanishes` (ratio below `NO_VANISH_MIN` (0.5, the ledger's claim-4 threshold)), `balanced` or `explodes` (above
    /// [`EXPLODE_MIN`]), so that a gradient growing towards the input does not pass for one
    /// that merely does not vanish.
    pub fn outcome(&self, c: Conclusion, reference: &Measured) -> &'static str {
        let yes = |s: &'static str| match s {
            "above" => "yes",
            "below" => "no",
            other => other,
        };
        let [pre, post, deep] = self.eff_depth;
        match c {
            Conclusion::DepthSplit => yes(side(post.over(&pre), POST_OVER_PRE_MIN)),
            Conclusion::SqrtGrowth => {
                let off = Iv {
                    v: (self.exponent.v - 0.5).abs(),
                    lo: if self.exponent.lo <= 0.5 && self.exponent.hi >= 0.5 {
                        0.0
                    } else {
                        (self.exponent.lo - 0.5)
                            .abs()
                            .min((self.exponent.hi - 0.5).abs())
                    },
                    hi: (self.exponent.lo - 0.5)
                        .abs()
                        .max((self.exponent.hi - 0.5).abs()),
                };
                match side(off, EXPONENT_TOL) {
                    "below" => "yes",
                    "above" => "no",
                    other => other,
                }
            }
            // The reference against itself: the same number by definition.
            Conclusion::X0Factor if self.x0_factor == reference.x0_factor => "yes",
            Conclusion::X0Factor => {
                let r = self.x0_factor.over(&reference.x0_factor);
                if r.lo > 1.0 - SAME_FACTOR_REL && r.hi < 1.0 + SAME_FACTOR_REL {
                    "yes"
                } else if r.lo >= 1.0 + SAME_FACTOR_REL || r.hi <= 1.0 - SAME_FACTOR_REL {
                    "no"
                } else {
                    INCONCLUSIVE
                }
            }
            Conclusion::NoVanish => {
                let r = self.grad_ratio;
                if r.hi < NO_VANISH_MIN {
                    "vanishes"
                } else if r.lo > EXPLODE_MIN {
                    "explodes"
                } else if r.lo >= NO_VANISH_MIN && r.hi <= EXPLODE_MIN {
                    "balanced"
                } else {
                    INCONCLUSIVE
                }
            }
            Conclusion::KeepsDepth => yes(side(deep.over(&post), KEEPS_DEPTH_MIN)),
        }
    }
}

/// One norm's verdict on claim 10: the conclusions whose outcome differs from LayerNorm's.
#[derive(Clone, Debug, PartialEq)]
pub struct NormVerdict {
    /// The norm.
    pub norm: NormKind,
    /// Its measurements.
    pub measured: Measured,
    /// Each conclusion's outcome under this norm, in [`Conclusion::ALL`] order.
    pub outcomes: [&'static str; 5],
    /// Whether it is LayerNorm's outcome.
    pub same: [bool; 5],
    /// Whether this outcome or LayerNorm's is [`INCONCLUSIVE`].
    pub inconclusive: [bool; 5],
}

impl NormVerdict {
    /// Judges `measured` (norm `norm`) against LayerNorm's `reference`.
    pub fn judge(norm: NormKind, measured: Measured, reference: &Measured) -> Self {
        let outcomes = Conclusion::ALL.map(|c| measured.outcome(c, reference));
        let theirs = Conclusion::ALL.map(|c| reference.outcome(c, reference));
        NormVerdict {
            norm,
            measured,
            outcomes,
            same: std::array::from_fn(|i| outcomes[i] == theirs[i]),
            inconclusive: std::array::from_fn(|i| {
                outcomes[i] == INCONCLUSIVE || theirs[i] == INCONCLUSIVE
            }),
        }
    }

    /// `holds`, `differs on claims 2, 4`, `inconclusive on claims 3`, or both parts: a
    /// conclusion differs when both outcomes are definite and unequal, and is inconclusive
    /// when either is [`INCONCLUSIVE`].
    pub fn verdict(&self) -> String {
        let list = |want_differ: bool| -> Vec<String> {
            Conclusion::ALL
                .iter()
                .enumerate()
                .filter(|&(i, _)| !self.same[i] && (self.inconclusive[i] != want_differ))
                .map(|(_, c)| c.claim().to_string())
                .collect()
        };
        let (differ, open) = (list(true), list(false));
        let mut parts = Vec::new();
        if !differ.is_empty() {
            parts.push(format!("differs on claims {}", differ.join(", ")));
        }
        if !open.is_empty() {
            parts.push(format!("inconclusive on claims {}", open.join(", ")));
        }
        if parts.is_empty() {
            "holds".into()
        } else {
            parts.join(", ")
        }
    }
}

/// The norm row `r` was measured under: its `norm` column's name (`group:G=8` is GroupNorm).
pub fn norm_of(r: &Row) -> Option<NormKind> {
    NormKind::parse(r.setup.norm.as_deref()?.split(':').next()?)
}

fn is_norm(r: &Row, n: NormKind) -> bool {
    norm_of(r) == Some(n)
}

/// `(layer, value)` of `preset`'s positive values of `metric` under norm `n`.
fn by_layer(rows: &[Row], preset: &str, metric: Metric, n: NormKind) -> Vec<(f64, f64)> {
    rows.iter()
        .filter(|r| {
            r.preset == preset
                && r.metric == metric
                && r.missing.is_none()
                && r.value > 0.0
                && is_norm(r, n)
        })
        .map(|r| (r.layer as f64, r.value))
        .collect()
}

/// Every norm's verdict from the rows of [`ROWS`] (the first norm of `norms` is the
/// reference), at the largest depth present.
pub fn verdicts(rows: &[Row], norms: &[NormKind]) -> Result<Vec<NormVerdict>> {
    let depth = rows.iter().map(|r| r.depth).max().unwrap_or(0) as usize;
    let of = |n: NormKind| {
        let mine: Vec<Row> = rows.iter().filter(|r| is_norm(r, n)).cloned().collect();
        Measured::of(&mine, depth)
    };
    let reference = of(norms[0])?;
    norms
        .iter()
        .map(|&n| Ok(NormVerdict::judge(n, of(n)?, &reference)))
        .collect()
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let mut all = Vec::new();
    for &n in &c.norms {
        let cfg = c.mc_config(n)?;
        let mut notes = Vec::new();
        let rows = normscope_core::tables::mc_rows(
            &c.presets,
            &cfg,
            &METRICS,
            &LayerSpec::All,
            &mut notes,
        )?;
        for note in notes {
            normscope_core::output::console::note(format_args!("      note: {n}: {note}"));
        }
        all.extend(rows);
    }
    let v = verdicts(&all, &c.norms)?;
    // Figures: Post-Norm's weight gradient and Pre-Norm's stream, by layer, one line per norm.
    for (stem, preset, metric, title, y) in [
        (
            "post_weight_grad",
            "post",
            Metric::WeightGradSq,
            "Post-Norm's weight gradients by norm",
            "mean-square weight grad",
        ),
        (
            "pre_stream",
            "pre",
            Metric::StreamSq,
            "Pre-Norm's stream by norm",
            "||x_l||^2 / d",
        ),
        (
            "eff_depth",
            "post",
            Metric::EffDepth,
            "Post-Norm's effective depth by norm",
            "effective depth",
        ),
    ] {
        let mut plot = LinePlot::new(
            &format!(
                "{title} ({}, L = {}, d = {}, Monte Carlo)",
                c.model.branch, c.depth, c.mc.width
            ),
            "layer l",
            y,
        );
        plot.y_log = metric != Metric::EffDepth;
        plot.x_log = false;
        for (i, &n) in c.norms.iter().enumerate() {
            let pts = by_layer(&all, preset, metric, n);
            plot.series.push(Series::line(n.label(), i, pts));
        }
        out.figure(stem, &plot)?;
    }
    // What the residual placements do to BatchNorm's gradient explosion (Yang et al. 2019:
    // without skips it grows towards the input at a batch-size-dependent rate).
    if c.norms.contains(&NormKind::Batch) {
        let mut plot = LinePlot::new(
            &format!(
                "Weight gradients under BatchNorm by placement ({}, L = {}, batch {} x {} tokens)",
                c.model.branch, c.depth, c.batch, c.mc.tokens
            ),
            "layer l",
            "mean-square weight grad",
        );
        plot.y_log = true;
        plot.x_log = false;
        for (i, p) in c.presets.iter().enumerate() {
            let pts = by_layer(&all, p, Metric::WeightGradSq, NormKind::Batch);
            let label = common::label(p).replace("-LN", "-BN");
            plot.series.push(Series::line(label, i, pts));
        }
        out.figure("batch_norm_by_placement", &plot)?;
    }
    // The verdict table.
    let mut t = Table::new(
        format!(
            "Claims 1--5 under each norm at initialization ({} branch, $L = {}$, Monte Carlo $d = {}$, {} networks): effective depth (Pre, Post, DeepNorm), Pre-Norm's stream exponent, Post-Norm's $x_0$ factor and first/last weight-gradient ratio, and the claims whose conclusion differs from LayerNorm's.",
            common::branch_label(&c.model.branch),
            c.depth,
            c.mc.width,
            c.mc.samples
        ),
        "tab:norms-claim10",
        &[
            "norm", "Pre", "Post", "DeepNorm", "exp.", "$x_0$", "grad", "verdict",
        ],
    );
    for nv in &v {
        let m = &nv.measured;
        t.row(vec![
            Cell::Text(nv.norm.label().into()),
            Cell::Text(m.eff_depth[0].to_string()),
            Cell::Text(m.eff_depth[1].to_string()),
            Cell::Text(m.eff_depth[2].to_string()),
            Cell::Text(m.exponent.to_string()),
            Cell::Text(m.x0_factor.to_string()),
            Cell::Text(m.grad_ratio.to_string()),
            Cell::Text(nv.verdict()),
        ]);
    }
    out.latex(&t, "verdicts")?;
    let mut cols = vec![column("norm", v.iter().map(|x| x.norm.name()))];
    let mut push = |name: &str, get: &dyn Fn(&Measured) -> Iv| {
        cols.push(column(name, v.iter().map(|x| get(&x.measured).v)));
        cols.push(column(
            &format!("{name}_lo"),
            v.iter().map(|x| get(&x.measured).lo),
        ));
        cols.push(column(
            &format!("{name}_hi"),
            v.iter().map(|x| get(&x.measured).hi),
        ));
    };
    push("eff_depth_pre", &|m| m.eff_depth[0]);
    push("eff_depth_post", &|m| m.eff_depth[1]);
    push("eff_depth_deepnorm", &|m| m.eff_depth[2]);
    push("pre_stream_exponent", &|m| m.exponent);
    push("post_x0_factor", &|m| m.x0_factor);
    push("post_weight_grad_first_over_last", &|m| m.grad_ratio);
    for (i, c) in Conclusion::ALL.iter().enumerate() {
        cols.push(column(
            &format!("claim{}", c.claim()),
            v.iter().map(|x| x.outcomes[i]),
        ));
        cols.push(column(
            &format!("claim{}_as_layernorm", c.claim()),
            v.iter().map(|x| x.same[i]),
        ));
    }
    cols.push(column("verdict", v.iter().map(|x| x.verdict())));
    let mut df = DataFrame::new_infer_height(cols)?;
    out.frame(VERDICTS, &mut df)?;
    out.rows(ROWS, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point with a relative half-width `rel`.
    fn iv(v: f64, rel: f64) -> Iv {
        Iv {
            v,
            lo: v * (1.0 - rel),
            hi: v * (1.0 + rel),
        }
    }

    /// LayerNorm-like measurements: Post 20x deeper than Pre, Pre's stream exponent 1/2,
    /// DeepNorm shallow, gradients balanced; tight intervals.
    fn reference() -> Measured {
        Measured {
            eff_depth: [iv(2.0, 0.01), iv(40.0, 0.01), iv(1.0, 0.01)],
            exponent: Iv {
                v: 0.5,
                lo: 0.49,
                hi: 0.51,
            },
            x0_factor: iv(0.7, 0.01),
            grad_ratio: iv(1.2, 0.01),
        }
    }

    #[test]
    fn the_rules_give_the_known_answers_on_synthetic_measurements() {
        let r = reference();
        let outcomes = |m: &Measured| Conclusion::ALL.map(|c| m.outcome(c, &r));
        assert_eq!(outcomes(&r), ["yes", "yes", "yes", "balanced", "no"]);
        let m = Measured {
            eff_depth: [iv(11.0, 0.01), iv(40.0, 0.01), iv(21.0, 0.01)],
            ..r
        };
        assert_eq!(outcomes(&m), ["no", "yes", "yes", "balanced", "yes"]);
        // An interval across a threshold is inconclusive, whatever its point value says.
        let m = Measured {
            eff_depth: [iv(9.0, 0.2), iv(40.0, 0.01), iv(1.0, 0.01)],
            ..r
        };
        assert_eq!(m.outcome(Conclusion::DepthSplit, &r), INCONCLUSIVE);
        let m = Measured {
            exponent: iv(0.5 + EXPONENT_TOL * 1.1, 0.01),
            ..r
        };
        assert_eq!(m.outcome(Conclusion::SqrtGrowth, &r), "no");
        let m = Measured {
            exponent: iv(0.5 + EXPONENT_TOL * 0.9, 0.01),
            ..r
        };
        assert_eq!(m.outcome(Conclusion::SqrtGrowth, &r), "yes");
        let m = Measured {
            exponent: iv(0.5 + EXPONENT_TOL, 0.01),
            ..r
        };
        assert_eq!(m.outcome(Conclusion::SqrtGrowth, &r), INCONCLUSIVE);
        let m = Measured {
            x0_factor: iv(0.7 * (1.0 + SAME_FACTOR_REL * 1.5), 0.01),
            ..r
        };
        assert_eq!(m.outcome(Conclusion::X0Factor, &r), "no");
        let m = Measured {
            x0_factor: iv(0.7 * 1.02, 0.01),
            ..r
        };
        assert_eq!(m.outcome(Conclusion::X0Factor, &r), "yes");
        for (ratio, want) in [
            (0.4, "vanishes"),
            (0.6, "balanced"),
            (1.9, "balanced"),
            (2.2, "explodes"),
            (2.0, INCONCLUSIVE),
        ] {
            let m = Measured {
                grad_ratio: iv(ratio, 0.02),
                ..r
            };
            assert_eq!(m.outcome(Conclusion::NoVanish, &r), want, "{ratio}");
        }
    }

    #[test]
    fn a_norm_differs_only_where_its_outcome_differs_from_layernorms() {
        let r = reference();
        let nv = |m: Measured| NormVerdict::judge(NormKind::Batch, m, &r);
        assert_eq!(nv(r).verdict(), "holds");
        // A gradient that explodes towards the input is not "no vanishing".
        assert_eq!(
            nv(Measured {
                grad_ratio: iv(100.0, 0.1),
                ..r
            })
            .verdict(),
            "differs on claims 4"
        );
        let m = Measured {
            exponent: iv(1.0, 0.01),
            grad_ratio: iv(0.1, 0.1),
            ..r
        };
        assert_eq!(nv(m).verdict(), "differs on claims 2, 4");
        let m = Measured {
            exponent: iv(1.0, 0.01),
            grad_ratio: iv(2.0, 0.1),
            ..r
        };
        assert_eq!(
            nv(m).verdict(),
            "differs on claims 2, inconclusive on claims 4"
        );
    }
}
