//! `finite-width`: where the mean field holds. Over a grid of depth L and width d, the relative
//! deviation of the Monte Carlo estimate from the closed form, `mc/theory - 1` with the 95%
//! interval of the Monte Carlo mean divided by the closed form, for four quantities: `grad_sq`
//! at x_0, `weight_grad_sq` of block 1, `eff_depth` and `corr` at layer L. Presets: Pre-LN,
//! Post-LN, DeepNorm and Admin, linear branch, Xavier init (g = 1), LayerNorm, n = 8 tokens of
//! correlation `c0` (so that `corr` is not zero).
//!
//! Where [`crate::theory::finite_width`] derives the leading 1/d correction (`grad_sq` and
//! `weight_grad_sq` of Post-LN, DeepNorm and Admin), the deviation from the corrected closed
//! form is written beside it, and `law.csv` says up to which L/d each agrees with the Monte
//! Carlo interval. For the rest the measured law is fitted, not derived:
//!
//! ```text
//! ln(1 + deviation) = kappa L/d          (weighted least squares through the origin,
//!                                         weights 1/Var ln(mc), 95% bootstrap over cells)
//! ```
//!
//! and the edge of the region where the closed form describes the network is the L/d at which
//! the fitted `|exp(kappa L/d) - 1|` reaches [`DEVIATION_LIMIT`].
//!
//! Memory: the Monte Carlo engine keeps every block's weights and gradients (about
//! `2 * 8 L d^2` bytes per network for the linear branch), so cells with `L d^2` above
//! `max_entries` are not run (listed as skipped; the memory issue removes the limit). Networks
//! per cell: `clamp(sample_budget / (L d^2), min_samples, max_samples)`, so small cells get
//! tight intervals and the largest at least `min_samples`.

use super::common::{self, Model};
use super::{Analysis, Out};
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::model::RawModel;
use crate::monte_carlo::{McConfig, RawMc};
use crate::output::figure::{LinePlot, Series, tick};
use crate::output::heatmap::{Heatmap, Panel};
use crate::output::latex::plain as sig;
use crate::output::latex::{Cell, Table};
use crate::output::table::column;
use crate::profile::Row;
use crate::theory::finite_width;
use crate::{Error, Result};
use polars::prelude::*;
use serde::{Deserialize, Serialize};

/// The fitted `|deviation|` at which the closed form stops describing the network.
pub const DEVIATION_LIMIT: f64 = 0.05;

/// The law is fitted on cells with `L/d` up to this. Beyond, the per-network gradient is
/// log-normal with a variance growing like L/d (Hanin and Nica 2019, arXiv:1812.05994): the
/// mean is carried by rare networks, and the sample mean of a few networks falls below it
/// (at L/d = 32 Post-LN's mean is ~e^24 times the closed form), so those cells are shown but
/// not fitted.
pub const FIT_MAX_L_OVER_D: f64 = 1.0;

/// Decimals of kappa and its interval in `law.tex` (`law.csv` keeps every digit).
pub const KAPPA_DECIMALS: usize = 3;

/// The four quantities and the layer each is read at (`None`: layer L).
pub const QUANTITIES: [(Metric, Option<u64>); 4] = [
    (Metric::GradSq, Some(0)),
    (Metric::WeightGradSq, Some(1)),
    (Metric::EffDepth, None),
    (Metric::Corr, None),
];

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "finite-width",
    about: "where the mean field holds: Monte Carlo against the closed form over depth L and width d, the L/d law and the 1/d correction",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    units: Some("one (preset, L, d) cell: both engines at that depth and width"),
};

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<String>,
    /// Depths L.
    pub depths: Vec<usize>,
    /// Widths d.
    pub widths: Vec<usize>,
    /// Cells with `L d^2` above this are not run (memory).
    pub max_entries: u64,
    /// Networks per cell: `sample_budget / (L d^2)`, clamped to `[min_samples, max_samples]`.
    pub sample_budget: u64,
    /// Fewest networks per cell.
    pub min_samples: usize,
    /// Most networks per cell.
    pub max_samples: usize,
    /// Tokens n per network.
    pub tokens: usize,
    /// Correlation of the input tokens.
    pub c0: f64,
    /// Exact path polynomial up to this depth, the factorized estimator beyond.
    pub path_max: usize,
    /// Base seed.
    pub seed: u64,
    /// The network.
    pub model: Model,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm", "admin"]
                .map(String::from)
                .to_vec(),
            depths: vec![8, 16, 32, 64, 128, 256, 512, 1024],
            widths: vec![32, 64, 128, 256, 512, 1024],
            max_entries: 1 << 26,
            sample_budget: 1 << 26,
            min_samples: 8,
            max_samples: 128,
            tokens: 8,
            c0: 0.5,
            path_max: 32,
            seed: 0,
            model: Model::seeds(),
        }
    }

    fn quick() -> Self {
        Config {
            depths: vec![8, 32],
            widths: vec![32, 64],
            sample_budget: 1 << 18,
            min_samples: 4,
            max_samples: 16,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("finite-width.depths", &self.depths)?;
        common::check_depths("finite-width.widths", &self.widths)?;
        if self.min_samples < 2 || self.max_samples < self.min_samples {
            return Err(Error::invalid(
                "finite-width.min_samples",
                format!("{}..{}", self.min_samples, self.max_samples),
                "2 <= min_samples <= max_samples",
            ));
        }
        for &d in &self.widths {
            if d < finite_width::MIN_WIDTH {
                return Err(Error::invalid(
                    "finite-width.widths",
                    d.to_string(),
                    format!("widths >= {}", finite_width::MIN_WIDTH),
                ));
            }
        }
        let (l, d) = (self.depths[0], self.widths[0]);
        common::check(&self.presets, &self.model, &self.mc(d, 2), l)
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

impl Config {
    fn mc(&self, width: usize, samples: usize) -> common::Mc {
        common::Mc {
            width,
            tokens: self.tokens,
            samples,
            seed: self.seed,
        }
    }

    fn entries(l: usize, d: usize) -> u64 {
        (l as u64) * (d as u64) * (d as u64)
    }

    fn samples(&self, l: usize, d: usize) -> usize {
        let s = (self.sample_budget / Self::entries(l, d)) as usize;
        s.clamp(self.min_samples, self.max_samples)
    }
}

/// One measured quantity of one cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Point {
    preset: String,
    metric: Metric,
    depth: usize,
    width: usize,
    samples: usize,
    theory: f64,
    mc: f64,
    ci: (f64, f64),
    /// The corrected closed form, where derived.
    corrected: Option<f64>,
    estimator: String,
}

impl Point {
    fn x(&self) -> f64 {
        self.depth as f64 / self.width as f64
    }

    fn dev(&self, t: f64) -> (f64, f64, f64) {
        (self.mc / t - 1.0, self.ci.0 / t - 1.0, self.ci.1 / t - 1.0)
    }

    fn deviation(&self) -> (f64, f64, f64) {
        self.dev(self.theory)
    }

    /// Whether the interval of the Monte Carlo mean covers `t`.
    fn covers(&self, t: f64) -> bool {
        self.ci.0 <= t && t <= self.ci.1
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    let metrics: Vec<Metric> = QUANTITIES.iter().map(|q| q.0).collect();
    for p in &c.presets {
        for &d in &c.widths {
            for &l in &c.depths {
                if Config::entries(l, d) > c.max_entries {
                    skipped.push((p.clone(), l, d));
                } else {
                    cells.push((p.clone(), l, d));
                }
            }
        }
    }
    // A cell's cost: networks x blocks x d^2 entries per weight matrix.
    let cost = |&(_, l, d): &(String, usize, usize)| (c.samples(l, d) * l * d * d) as f64;
    let points: Vec<Point> = out
        .units("cells", &cells, cost, |mine| {
            mine.iter()
                .map(|(p, l, d)| {
                    eprintln!("      finite-width: {p}, L = {l}, d = {d}");
                    cell(c, p, &metrics, *l, *d)
                })
                .collect()
        })?
        .into_iter()
        .flatten()
        .collect();
    write_cells(c, out, &points, &skipped)?;
    let laws = laws(c, &points);
    write_laws(c, out, &laws)?;
    figures(c, out, &points, &laws)
}

/// Both engines at one (L, d) for preset `p`.
fn cell(c: &Config, p: &str, metrics: &[Metric], l: usize, d: usize) -> Result<Vec<Point>> {
    let s = c.samples(l, d);
    let mc = c.mc(d, s);
    let raw = RawModel {
        c0: c.c0,
        ..c.model.raw(l, &mc)
    };
    let layers = LayerSpec::List(vec![0, 1, l]);
    let presets = [p.to_string()];
    let theory = common::theory(&presets, &raw, metrics, &layers)?;
    let cfg = McConfig::new(
        &raw,
        &RawMc {
            samples: s,
            seed: c.seed,
            path_max: c.path_max,
            ..RawMc::default()
        },
    )?;
    let mut notes = Vec::new();
    let mcr = crate::tables::mc_rows(&presets, &cfg, metrics, &layers, &mut notes)?;
    let model = raw.check()?;
    let spec = model.stack(p)?;
    let correction = finite_width::unsupported(&spec, model.branch.kind)
        .is_none()
        .then(|| {
            let b = crate::branch::BranchModel::new(
                &model.branch,
                spec.beta,
                model.inputs.q0,
                model.inputs.c0,
            );
            finite_width::correction(&spec, &b, d)
        });
    let find = |rows: &[Row], m: Metric, layer: u64| {
        rows.iter()
            .find(|r| r.metric == m && r.layer == layer && r.source.is_none())
            .cloned()
    };
    let mut pts = Vec::new();
    for &(m, at) in &QUANTITIES {
        let layer = at.unwrap_or(l as u64);
        let (Some(t), Some(r)) = (find(&theory, m, layer), find(&mcr, m, layer)) else {
            continue;
        };
        if !(t.value.is_finite() && r.value.is_finite() && t.value != 0.0) {
            continue;
        }
        let corrected = correction
            .as_ref()
            .and_then(|k| k.factor(m, layer as usize))
            .map(|f| t.value * f);
        pts.push(Point {
            preset: p.to_string(),
            metric: m,
            depth: l,
            width: d,
            samples: s,
            theory: t.value,
            mc: r.value,
            ci: r.interval(),
            corrected,
            estimator: match m {
                Metric::EffDepth if l <= c.path_max => "exact path polynomial",
                Metric::EffDepth => "factorized",
                _ => "direct",
            }
            .into(),
        });
    }
    Ok(pts)
}

fn write_cells(
    c: &Config,
    out: &mut Out,
    pts: &[Point],
    skipped: &[(String, usize, usize)],
) -> Result<()> {
    let dev: Vec<(f64, f64, f64)> = pts.iter().map(Point::deviation).collect();
    let cdev: Vec<Option<(f64, f64, f64)>> =
        pts.iter().map(|p| p.corrected.map(|t| p.dev(t))).collect();
    let mut df = super::regression_tier::frame(vec![
        column("preset", pts.iter().map(|p| p.preset.clone())),
        column("metric", pts.iter().map(|p| p.metric.name().to_string())),
        column("depth", pts.iter().map(|p| p.depth as u64)),
        column("width", pts.iter().map(|p| p.width as u64)),
        column("l_over_d", pts.iter().map(Point::x)),
        column("networks", pts.iter().map(|p| p.samples as u64)),
        column("theory", pts.iter().map(|p| p.theory)),
        column("mc", pts.iter().map(|p| p.mc)),
        column("mc_ci_low", pts.iter().map(|p| p.ci.0)),
        column("mc_ci_high", pts.iter().map(|p| p.ci.1)),
        column("deviation", dev.iter().map(|x| x.0)),
        column("deviation_ci_low", dev.iter().map(|x| x.1)),
        column("deviation_ci_high", dev.iter().map(|x| x.2)),
        column("ci_covers_theory", pts.iter().map(|p| p.covers(p.theory))),
        column("corrected", pts.iter().map(|p| p.corrected)),
        column("deviation_corrected", cdev.iter().map(|x| x.map(|v| v.0))),
        column(
            "ci_covers_corrected",
            pts.iter().map(|p| p.corrected.map(|t| p.covers(t))),
        ),
        column("estimator", pts.iter().map(|p| p.estimator.to_string())),
    ])?;
    out.frame("deviation.csv", &mut df)?;
    let why = |l: usize, d: usize| {
        format!(
            "L d^2 = {} > max_entries = {} (the Monte Carlo engine keeps every block's weights)",
            Config::entries(l, d),
            c.max_entries
        )
    };
    let mut sk = DataFrame::new_infer_height(vec![
        column("preset", skipped.iter().map(|s| s.0.clone())),
        column("depth", skipped.iter().map(|s| s.1 as u64)),
        column("width", skipped.iter().map(|s| s.2 as u64)),
        column("reason", skipped.iter().map(|s| why(s.1, s.2))),
    ])?;
    out.frame("skipped.csv", &mut sk)
}

/// The fitted law of one preset and quantity.
#[derive(Clone, Debug)]
pub struct Law {
    /// Preset.
    pub preset: String,
    /// Metric.
    pub metric: Metric,
    /// Cells fitted.
    pub cells: usize,
    /// `kappa` of `ln(1 + deviation) = kappa L/d`.
    pub kappa: f64,
    /// Its 95% bootstrap interval over cells.
    pub kappa_ci: (f64, f64),
    /// The L/d at which the fitted `|deviation|` reaches [`DEVIATION_LIMIT`] (`None`: the
    /// interval of kappa holds 0, so no edge is resolved within the grid).
    pub edge: Option<f64>,
    /// The smallest L/d measured.
    pub min_x: f64,
    /// The largest L/d measured.
    pub max_x: f64,
    /// Share of the cells with `L/d <= FIT_MAX_L_OVER_D` whose 95% interval covers the closed
    /// form (about 0.95 where it describes the network).
    pub covered: f64,
    /// The same for the corrected closed form (NaN when no correction is derived).
    pub covered_corrected: f64,
    /// The smallest L/d from which every larger cell's interval misses the closed form (`None`:
    /// the largest cell is covered), robust to single chance misses.
    pub miss_from: Option<f64>,
    /// The same for the corrected closed form (`None` also when no correction is derived).
    pub miss_from_corrected: Option<f64>,
    /// Whether a correction is derived for this preset and quantity.
    pub corrected: bool,
}

/// `kappa = sum w x y / sum w x^2` with `y = ln(mc/theory)`, `w = 1/Var y` (the delta method on
/// the Monte Carlo standard error, floored at 1e-12).
fn kappa(pts: &[&Point], idx: &[usize]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for &i in idx {
        let p = pts[i];
        let se = (p.ci.1 - p.ci.0) / (2.0 * 1.96) / p.mc.abs();
        let w = 1.0 / (se * se).max(1e-12);
        let (x, y) = (p.x(), (p.mc / p.theory).ln());
        num += w * x * y;
        den += w * x * x;
    }
    num / den
}

/// The smallest L/d from which every cell (at that L/d or above) misses `t`.
fn miss_from(pts: &[&Point], t: impl Fn(&Point) -> Option<f64>) -> Option<f64> {
    let mut v: Vec<(f64, bool)> = pts
        .iter()
        .filter_map(|p| t(p).map(|x| (p.x(), !p.covers(x))))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut edge = None;
    for &(x, miss) in v.iter().rev() {
        if !miss {
            break;
        }
        edge = Some(x);
    }
    // Cells at the same L/d as a covered one do not start the region.
    edge.filter(|&e| v.iter().all(|&(x, miss)| x < e || miss))
}

/// Share of the cells with `L/d <= FIT_MAX_L_OVER_D` whose interval covers `t` (NaN if none).
fn coverage(pts: &[&Point], t: impl Fn(&Point) -> Option<f64>) -> f64 {
    let v: Vec<bool> = pts
        .iter()
        .filter(|p| p.x() <= FIT_MAX_L_OVER_D)
        .filter_map(|p| t(p).map(|x| p.covers(x)))
        .collect();
    v.iter().filter(|&&c| c).count() as f64 / v.len() as f64
}

fn laws(c: &Config, all: &[Point]) -> Vec<Law> {
    let mut out = Vec::new();
    for p in &c.presets {
        for &(m, _) in &QUANTITIES {
            let pts: Vec<&Point> = all
                .iter()
                .filter(|x| &x.preset == p && x.metric == m && x.mc / x.theory > 0.0)
                .collect();
            if pts.len() < 2 {
                continue;
            }
            let fit: Vec<&Point> = pts
                .iter()
                .copied()
                .filter(|x| x.x() <= FIT_MAX_L_OVER_D)
                .collect();
            let idx: Vec<usize> = (0..fit.len()).collect();
            let k = kappa(&fit, &idx);
            let seed = c.seed ^ crate::monte_carlo::rng::config_hash(&format!("{p}/{}", m.name()));
            let ci = crate::stats::bootstrap::interval(fit.len(), seed, |i| kappa(&fit, i));
            let holds_zero = ci.0 <= 0.0 && 0.0 <= ci.1;
            let edge = (!holds_zero && k != 0.0).then(|| {
                let target = if k > 0.0 {
                    DEVIATION_LIMIT
                } else {
                    -DEVIATION_LIMIT
                };
                target.ln_1p() / k
            });
            let corrected = pts.iter().any(|x| x.corrected.is_some());
            out.push(Law {
                preset: p.clone(),
                metric: m,
                cells: fit.len(),
                kappa: k,
                kappa_ci: ci,
                edge,
                min_x: pts.iter().map(|x| x.x()).fold(f64::INFINITY, f64::min),
                max_x: pts.iter().map(|x| x.x()).fold(0.0, f64::max),
                covered: coverage(&pts, |x| Some(x.theory)),
                covered_corrected: coverage(&pts, |x| x.corrected),
                miss_from: miss_from(&pts, |x| Some(x.theory)),
                miss_from_corrected: miss_from(&pts, |x| x.corrected),
                corrected,
            });
        }
    }
    out
}

fn write_laws(c: &Config, out: &mut Out, laws: &[Law]) -> Result<()> {
    let mut df = super::regression_tier::frame(vec![
        column("preset", laws.iter().map(|l| l.preset.clone())),
        column("metric", laws.iter().map(|l| l.metric.name().to_string())),
        column("cells", laws.iter().map(|l| l.cells as u64)),
        column("kappa", laws.iter().map(|l| l.kappa)),
        column("kappa_ci_low", laws.iter().map(|l| l.kappa_ci.0)),
        column("kappa_ci_high", laws.iter().map(|l| l.kappa_ci.1)),
        column("deviation_limit", laws.iter().map(|_| DEVIATION_LIMIT)),
        column("edge_l_over_d", laws.iter().map(|l| l.edge)),
        column("max_l_over_d", laws.iter().map(|l| l.max_x)),
        column("covered", laws.iter().map(|l| l.covered)),
        column("miss_from_l_over_d", laws.iter().map(|l| l.miss_from)),
        column("correction_derived", laws.iter().map(|l| l.corrected)),
        column(
            "covered_corrected",
            laws.iter().map(|l| l.covered_corrected),
        ),
        column(
            "miss_from_corrected_l_over_d",
            laws.iter().map(|l| l.miss_from_corrected),
        ),
    ])?;
    out.frame("law.csv", &mut df)?;
    let mut t = Table::new(
        format!(
            "Measured finite-width law $\\ln(1 + \\text{{dev}}) = \\kappa L/d$ of the Monte Carlo estimate against the closed form ({} branch, $n = {}$ tokens, $c_0 = {}$); 95\\% bootstrap intervals over the cells. Edge: the $L/d$ where the fitted $|\\text{{dev}}|$ reaches {}. grad: \\texttt{{grad\\_sq}} at $x_0$; weight grad: \\texttt{{weight\\_grad\\_sq}} of block 1; eff.\\ depth, corr: \\texttt{{eff\\_depth}}, \\texttt{{corr}} at layer $L$.",
            common::branch_label(&c.model.branch),
            c.tokens,
            c.c0,
            DEVIATION_LIMIT
        ),
        "tab:finite-width",
        &["quantity", "$\\kappa$ [95\\% CI]", "edge\n$L/d$"],
    );
    let mut preset = None;
    for l in laws {
        if preset != Some(&l.preset) {
            t.group(common::tex_label(&l.preset));
            preset = Some(&l.preset);
        }
        t.row(vec![
            Cell::Text(quantity_tex(l.metric).into()),
            Cell::Text(format!(
                "{} [{}, {}]",
                crate::output::latex::fixed(l.kappa, KAPPA_DECIMALS),
                crate::output::latex::fixed(l.kappa_ci.0, KAPPA_DECIMALS),
                crate::output::latex::fixed(l.kappa_ci.1, KAPPA_DECIMALS)
            )),
            Cell::opt(l.edge),
        ]);
    }
    t.write(out, "law")
}

/// A quantity's short name in `law.tex` (the caption says what each is).
fn quantity_tex(m: Metric) -> &'static str {
    match m {
        Metric::GradSq => "grad",
        Metric::WeightGradSq => "weight grad",
        Metric::EffDepth => "eff.\\ depth",
        Metric::Corr => "corr",
        _ => unreachable!("law.tex lists the QUANTITIES only"),
    }
}

fn figures(c: &Config, out: &mut Out, pts: &[Point], laws: &[Law]) -> Result<()> {
    for &(m, _) in &QUANTITIES {
        let name = m.name();
        let panels = c
            .presets
            .iter()
            .map(|p| Panel {
                title: common::label(p).to_string(),
                cells: pts
                    .iter()
                    .filter(|x| &x.preset == p && x.metric == m)
                    .map(|x| {
                        let xi = c.widths.iter().position(|&d| d == x.width).unwrap_or(0);
                        let yi = c.depths.iter().position(|&l| l == x.depth).unwrap_or(0);
                        (xi as u64, yi as u64, x.deviation().0.abs())
                    })
                    .collect(),
            })
            .collect();
        // Cells not run (memory) are left blank.
        out.figure(
            &format!("heatmap_{name}"),
            &Heatmap {
                x_label: "width d".into(),
                y_label: "depth L".into(),
                value_label: "|MC / closed form - 1|".into(),
                log10_range: (-4.0, 2.0),
                panels,
                x_ticks: c.widths.iter().map(usize::to_string).collect(),
                y_ticks: c.depths.iter().map(usize::to_string).collect(),
                linear: None,
            },
        )?;
        let mut plot = LinePlot::new(
            &format!("{name}: deviation from the closed form against L/d"),
            "L/d",
            "|MC / closed form - 1|",
        );
        plot.y_log = true;
        for (i, p) in c.presets.iter().enumerate() {
            let dots: Vec<(f64, f64, f64, f64)> = pts
                .iter()
                .filter(|x| &x.preset == p && x.metric == m)
                .filter(|x| x.deviation().0 != 0.0)
                .map(|x| {
                    let (v, lo, hi) = x.deviation();
                    let (a, b) = (lo.abs().min(hi.abs()), lo.abs().max(hi.abs()));
                    let a = if lo <= 0.0 && hi >= 0.0 { v.abs() } else { a };
                    (x.x(), v.abs(), a, b)
                })
                .collect();
            plot.series.push(Series::points(common::label(p), i, &dots));
            if let Some(l) = laws.iter().find(|l| &l.preset == p && l.metric == m) {
                let (lo, hi) = (l.min_x.ln(), l.max_x.ln());
                let curve: Vec<(f64, f64)> = (0..=40)
                    .map(|j| {
                        let x = (lo + (hi - lo) * j as f64 / 40.0).exp();
                        (x, (l.kappa * x).exp_m1().abs())
                    })
                    .filter(|q| q.1 > 0.0)
                    .collect();
                plot.series.push(Series::line(
                    format!("{} fit, kappa = {}", common::label(p), tick(l.kappa)),
                    i,
                    curve,
                ));
            }
        }
        out.figure(&format!("collapse_{name}"), &plot)?;
    }
    Ok(())
}

/// Where a Monte Carlo measurement of the ledger lies on the finite-width map: for each
/// `(preset, metric, L, d)`, whether `L/d` is inside the region where the closed form describes
/// the network (fitted `|deviation|` below [`DEVIATION_LIMIT`]), from the `law.csv` this
/// analysis wrote under the same root. Metrics the map does not cover are left out.
pub(crate) fn region_note(
    d: &super::claims::Data,
    items: &[(&str, Metric, u64, u64)],
) -> Result<String> {
    let df = d.frame(&format!("{}/law.csv", ANALYSIS.id))?;
    let (s, f) = (super::regression_tier::strs, super::regression_tier::f64s);
    let (p, m, k, e, x) = (
        s(&df, "preset")?,
        s(&df, "metric")?,
        f(&df, "kappa")?,
        f(&df, "edge_l_over_d")?,
        f(&df, "max_l_over_d")?,
    );
    let mut parts = Vec::new();
    for &(preset, metric, depth, width) in items {
        let Some(i) = (0..df.height()).find(|&i| p[i] == preset && m[i] == metric.name()) else {
            continue;
        };
        let r = depth as f64 / width as f64;
        let fitted = (k[i] * r).exp_m1();
        let place = if e[i].is_finite() {
            let side = if r <= e[i] { "inside" } else { "outside" };
            format!(
                "{side} the region (edge L/d = {}; fitted deviation at this L/d: {})",
                sig(e[i]),
                sig(fitted)
            )
        } else if r <= x[i] {
            format!(
                "inside (no deviation resolved up to the map's L/d = {})",
                sig(x[i])
            )
        } else {
            format!(
                "beyond the map (L/d up to {}; no deviation resolved there)",
                sig(x[i])
            )
        };
        parts.push(format!(
            "{} {} at L = {depth}, d = {width} (L/d = {}): {place}",
            common::label(preset),
            metric.name(),
            sig(r)
        ));
    }
    Ok(if parts.is_empty() {
        String::new()
    } else {
        format!(
            "finite-width map (|deviation| < {DEVIATION_LIMIT}): {}",
            parts.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(l: usize, d: usize, mc: f64) -> Point {
        Point {
            preset: "post".into(),
            metric: Metric::GradSq,
            depth: l,
            width: d,
            samples: 8,
            theory: 1.0,
            mc,
            ci: (mc * 0.99, mc * 1.01),
            corrected: None,
            estimator: "direct".into(),
        }
    }

    #[test]
    fn kappa_recovers_an_exponential_law() {
        // mc = exp(0.75 L/d) exactly: the weighted fit through the origin returns 0.75.
        let pts: Vec<Point> = [(8, 64), (64, 64), (128, 64), (256, 128)]
            .iter()
            .map(|&(l, d)| point(l, d, (0.75 * l as f64 / d as f64).exp()))
            .collect();
        let refs: Vec<&Point> = pts.iter().collect();
        let k = kappa(&refs, &[0, 1, 2, 3]);
        assert!((k - 0.75).abs() < 1e-12, "{k}");
        // The edge at DEVIATION_LIMIT: exp(0.75 x) - 1 = 0.05.
        let edge = DEVIATION_LIMIT.ln_1p() / k;
        assert!(((0.75 * edge).exp_m1() - DEVIATION_LIMIT).abs() < 1e-12);
    }

    #[test]
    fn misses_count_from_where_they_persist() {
        // Covered at 1/8, a chance miss at 1/4, covered at 1/2, missed from 1 on.
        let pts = [
            point(8, 64, 1.0),
            point(16, 64, 1.5),
            point(32, 64, 1.0),
            point(64, 64, 1.5),
            point(128, 64, 2.0),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        assert_eq!(miss_from(&refs, |x| Some(x.theory)), Some(1.0));
        // Two of the four cells with L/d <= 1 cover the closed form.
        assert!((coverage(&refs, |x| Some(x.theory)) - 0.5).abs() < 1e-15);
    }
}
