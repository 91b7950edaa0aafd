//! `finite-width`: where the mean field holds. Over a grid of depth L and width d, the relative
//! deviation of the Monte Carlo estimate from the closed form, `mc/theory - 1` with the 95%
//! interval of the Monte Carlo mean divided by the closed form, for four quantities: `grad_sq`
//! at x_0, `weight_grad_sq` of block 1, `eff_depth` and `corr` at layer L. Presets: Pre-LN,
//! Post-LN, DeepNorm and Admin, linear branch, Xavier init (g = 1), LayerNorm, n = 8 tokens of
//! correlation `c0` (so that `corr` is not zero).
//!
//! Where [`normscope_core::theory::finite_width`] derives the leading 1/d correction (`grad_sq` and
//! `weight_grad_sq` of Post-LN, DeepNorm and Admin), the deviation from the corrected closed
//! form is written beside it. For every preset and quantity the measured law is fitted:
//!
//! ```text
//! ln(1 + deviation) = a/d + kappa L/d    (weighted least squares, weights 1/Var ln(mc),
//!                                         on the cells with L/d <= FIT_MAX_L_OVER_D;
//!                                         95% bootstrap intervals over cells)
//! ```
//!
//! The form is the first order of the theory: a finite-width effect that each block adds
//! (`1 + kappa/d` per block, accumulated over L blocks: `kappa L/d`), plus one that does not
//! grow with depth (the input's and the output's blocks, a norm's Jacobian or a ratio
//! estimator at one layer: `a/d`). The derived correction of Post-LN's gradients has exactly
//! this form (`a = 1, kappa = 3/4` for `grad_sq` at x_0, g = 1); the same fit applied to the
//! derived correction is written beside the measured one. `L/d` alone is the right variable
//! only when no boundary term is resolved ([`variables`]). Coverage by the 95% intervals is
//! reported on the fitted range and on the whole grid (`law.csv`) and per L/d
//! (`coverage.csv`); the fitted law is never evaluated beyond its fitted range.
//!
//! `eff_depth` is measured with the exact path polynomial at every depth (`path_max` covers
//! the grid). The factorized estimator (one isotropic tangent per block, the network's
//! `p_l = b_l^2/(a_l^2+b_l^2)` summed) makes the closed form's own factorization: at L = 1 the
//! two coincide, but the tangent that reaches block l through the real network is orthogonal
//! to the stream x_{l-1} (and to 1 for LayerNorm), which the norm's Jacobian treats differently
//! on the skip and branch paths, a 1/d effect the factorized estimator cannot see (DeepNorm at
//! L = 8, d = 32: exact 0.448, factorized 0.470, closed form 0.471). Mixing the two over the grid
//! made DeepNorm's deviation jump from -6% to 0 at the switch.
//!
//! Memory: the Monte Carlo engine keeps every block's weights and gradients (about
//! `2 * 8 L d^2` bytes per network for the linear branch), so cells with `L d^2` above
//! `max_entries` are not run (listed as skipped; the memory issue removes the limit). Networks
//! per cell: `clamp(sample_budget / (L d^2), min_samples, max_samples)`, so small cells get
//! tight intervals and the largest at least `min_samples`.

use super::common::{self, Model};
use super::{Analysis, Out};
use normscope_core::engine::refusal::{NormUse, reason};
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::model::RawModel;
use normscope_core::monte_carlo::{McConfig, RawMc};
use normscope_core::output::latex::plain as sig;
use normscope_core::output::latex::{self, Cell, Table};
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::profile::Row;
use normscope_core::theory::finite_width;
use normscope_core::{Error, Result};
use normscope_figure::heatmap::{Heatmap, Panel};
use normscope_figure::{LinePlot, Series, tick};
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

/// The four quantities, the layer each is read at (`None`: layer L) and its short name in
/// `law.tex` (the caption says what each is).
pub const QUANTITIES: [(Metric, Option<u64>, &str); 4] = [
    (Metric::GradSq, Some(0), "grad"),
    (Metric::WeightGradSq, Some(1), "weight grad"),
    (Metric::EffDepth, None, "eff.\\ depth"),
    (Metric::Corr, None, "corr"),
];

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "finite-width",
    about: "where the mean field holds: Monte Carlo against the closed form over depth L and width d, the L/d law and the 1/d correction",
    claims: &[1, 4, 5],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some("one (preset, L, d) cell: both engines at that depth and width"),
};

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::finite_width::Config;
/// let c = Config::full();
/// assert_eq!(c.depths, vec![8, 16, 32, 64, 128, 256, 512, 1024]);
/// assert_eq!(c.widths, vec![32, 64, 128, 256, 512, 1024]);
/// assert_eq!((c.max_entries, c.sample_budget), (1 << 26, 1 << 26));
/// assert_eq!((c.min_samples, c.max_samples, c.tokens, c.c0), (8, 128, 8, 0.5));
/// assert_eq!(Config::quick().path_max, 32);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
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
    /// Exact path polynomial up to this depth, the factorized estimator beyond; at least the
    /// largest depth, so that `eff_depth` has one estimator over the grid (the factorized one
    /// shares the closed form's factorization and misses a 1/d effect the exact one measures;
    /// see the module docs).
    pub path_max: usize,
    /// Base seed.
    #[serde(with = "crate::seed")]
    pub seed: u64,
    /// The network.
    pub model: Model,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm", "admin"]),
            depths: vec![8, 16, 32, 64, 128, 256, 512, 1024],
            widths: vec![32, 64, 128, 256, 512, 1024],
            max_entries: 1 << 26,
            sample_budget: 1 << 26,
            min_samples: 8,
            max_samples: 128,
            tokens: 8,
            c0: 0.5,
            path_max: 1024,
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
            path_max: 32,
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
        let deepest = self.depths.iter().copied().max().unwrap_or(0);
        if self.path_max < deepest {
            return Err(Error::invalid(
                "finite-width.path_max",
                self.path_max.to_string(),
                format!(
                    "path_max >= the largest depth ({deepest}), one eff_depth estimator over the grid"
                ),
            ));
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
    preset: &'static Preset,
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
    for &p in &c.presets {
        for &d in &c.widths {
            for &l in &c.depths {
                if Config::entries(l, d) > c.max_entries {
                    skipped.push((p, l, d));
                } else {
                    cells.push((p, l, d));
                }
            }
        }
    }
    // A cell's cost: networks x blocks x d^2 entries per weight matrix.
    let cost = |&(_, l, d): &(&'static Preset, usize, usize)| (c.samples(l, d) * l * d * d) as f64;
    let Some(cells) = out.units::<_, Vec<Point>>("cells", &cells, cost, |mine| {
        mine.iter()
            .map(|(p, l, d)| {
                normscope_core::output::console::note(format_args!(
                    "      finite-width: {p}, L = {l}, d = {d}"
                ));
                cell(c, p, &metrics, *l, *d)
            })
            .collect()
    })?
    else {
        return Ok(());
    };
    let points: Vec<Point> = cells.into_iter().flatten().collect();
    write_cells(c, out, &points, &skipped)?;
    write_coverage(c, out, &points)?;
    let laws = laws(c, &points);
    write_laws(c, out, &laws)?;
    figures(c, out, &points, &laws)
}

/// Both engines at one (L, d) for preset `p`.
fn cell(
    c: &Config,
    p: &'static Preset,
    metrics: &[Metric],
    l: usize,
    d: usize,
) -> Result<Vec<Point>> {
    let s = c.samples(l, d);
    let mc = c.mc(d, s);
    let raw = RawModel {
        c0: c.c0,
        ..c.model.raw(l, &mc)
    };
    let layers = LayerSpec::List(vec![0, 1, l]);
    let presets = [p];
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
    let mcr = normscope_core::tables::mc_rows(&presets, &cfg, metrics, &layers, &mut notes)?;
    let model = raw.check()?;
    let spec = model.stack(p)?;
    let correction = reason(NormUse::FiniteWidth {
        spec: &spec,
        branch: model.branch.kind,
    })
    .is_none()
    .then(|| {
        let b = normscope_core::branch::BranchModel::new(
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
    for &(m, at, _) in &QUANTITIES {
        let layer = at.unwrap_or(l as u64);
        let (Some(t), Some(r)) = (find(&theory, m, layer), find(&mcr, m, layer)) else {
            continue;
        };
        if !(t.value.is_finite() && r.value.is_finite() && t.value != 0.0) {
            continue;
        }
        let corrected = correction
            .as_ref()
            .and_then(|k| m.correction_factor(k, layer as usize))
            .map(|f| t.value * f);
        pts.push(Point {
            preset: p,
            metric: m,
            depth: l,
            width: d,
            samples: s,
            theory: t.value,
            mc: r.value,
            ci: r.interval(),
            corrected,
            estimator: m.info().estimator(l, c.path_max).into(),
        });
    }
    Ok(pts)
}

fn write_cells(
    c: &Config,
    out: &mut Out,
    pts: &[Point],
    skipped: &[(&'static Preset, usize, usize)],
) -> Result<()> {
    let dev: Vec<(f64, f64, f64)> = pts.iter().map(Point::deviation).collect();
    let cdev: Vec<Option<(f64, f64, f64)>> =
        pts.iter().map(|p| p.corrected.map(|t| p.dev(t))).collect();
    let mut df = super::training::frame(vec![
        column("preset", pts.iter().map(|p| p.preset.name)),
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
        column("preset", skipped.iter().map(|s| s.0.name)),
        column("depth", skipped.iter().map(|s| s.1 as u64)),
        column("width", skipped.iter().map(|s| s.2 as u64)),
        column("reason", skipped.iter().map(|s| why(s.1, s.2))),
    ])?;
    out.frame("skipped.csv", &mut sk)
}

/// The fitted law of one preset and quantity.
///
/// # Examples
///
/// A fitted law (as the analysis writes one per row of `law.csv`):
///
/// ```rust
/// use normscope_analyses::finite_width::{variables, Law, BOUNDARY_ONLY};
/// use normscope_core::metrics::Metric;
/// let (a_ci, kappa_ci) = ((0.5, 1.5), (-0.1, 0.2));
/// let law = Law {
///     preset: normscope_core::placement::POST,
///     metric: Metric::GradSq,
///     estimator: "exact".into(),
///     cells: 12,
///     fit: (1.0, 0.05),
///     a_ci,
///     kappa_ci,
///     chi2_dof: 1.1,
///     derived: None,
///     variables: variables(a_ci, kappa_ci),
///     edge: None,
///     width_min: Some(16.0),
///     min_x: 0.0625,
///     max_x: 1.0,
///     covered: 0.95,
///     covered_corrected: f64::NAN,
///     covered_all: 0.9,
///     covered_corrected_all: f64::NAN,
///     miss_from: None,
///     miss_from_corrected: None,
///     corrected: false,
/// };
/// // a's interval excludes 0, kappa's holds it: a boundary term only.
/// assert_eq!(law.variables, BOUNDARY_ONLY);
/// assert_eq!(law.cells, 12);
/// ```
#[derive(Clone, Debug)]
pub struct Law {
    /// Preset.
    pub preset: &'static Preset,
    /// Metric.
    pub metric: Metric,
    /// The Monte Carlo estimator of every fitted cell (one per law: the configuration check keeps
    /// `eff_depth` on the exact path polynomial over the whole grid).
    pub estimator: String,
    /// Cells fitted (those with `L/d <= FIT_MAX_L_OVER_D`).
    pub cells: usize,
    /// `(a, kappa)` of [`LAW`], weighted least squares.
    pub fit: (f64, f64),
    /// The 95% bootstrap interval of `a` over the fitted cells.
    pub a_ci: (f64, f64),
    /// The same for `kappa`.
    pub kappa_ci: (f64, f64),
    /// `chi^2` per degree of freedom of the weighted fit (about 1 where the law describes the
    /// cells within their Monte Carlo errors).
    pub chi2_dof: f64,
    /// `(a, kappa)` of the same fit to the derived correction `ln(corrected / closed form)` on
    /// the same cells and weights (`None`: no correction derived).
    pub derived: Option<(f64, f64)>,
    /// The verdict on the variables ([`variables`]).
    pub variables: &'static str,
    /// The L/d at which the fitted accumulated term alone, `|exp(kappa L/d) - 1|`, reaches
    /// [`DEVIATION_LIMIT`] (`None`: kappa's interval holds 0, or the L/d lies beyond
    /// [`FIT_MAX_L_OVER_D`], where the law is not evaluated).
    pub edge: Option<f64>,
    /// The width below which the fitted boundary term alone, `|exp(a/d) - 1|`, exceeds
    /// [`DEVIATION_LIMIT`] (`None`: a's interval holds 0, or the width lies outside the
    /// fitted widths).
    pub width_min: Option<f64>,
    /// The smallest L/d measured.
    pub min_x: f64,
    /// The largest L/d measured.
    pub max_x: f64,
    /// Share of the cells with `L/d <= FIT_MAX_L_OVER_D` whose 95% interval covers the closed
    /// form (about 0.95 where it describes the network).
    pub covered: f64,
    /// The same for the corrected closed form (NaN when no correction is derived).
    pub covered_corrected: f64,
    /// Share of all cells of the grid whose interval covers the closed form.
    pub covered_all: f64,
    /// The same for the corrected closed form (NaN when no correction is derived).
    pub covered_corrected_all: f64,
    /// The smallest L/d from which every cell at that L/d or above misses the closed form
    /// (`None`: some cell at the largest L/d covers it), robust to single chance misses.
    pub miss_from: Option<f64>,
    /// The same for the corrected closed form (`None` also when no correction is derived).
    pub miss_from_corrected: Option<f64>,
    /// Whether a correction is derived for this preset and quantity.
    pub corrected: bool,
}

/// The law's form, as `law.csv` and the README print it.
pub const LAW: &str = "ln(1 + deviation) = a/d + kappa L/d";

/// [`variables`]: the 95% interval of `a` excludes 0 and that of `kappa` does not.
pub const BOUNDARY_ONLY: &str = "1/d only: a boundary term, no accumulation over depth resolved";
/// [`variables`]: both intervals exclude 0.
pub(crate) const BOTH: &str = "1/d and L/d: a boundary term and accumulation over depth";
/// [`variables`]: only kappa's interval excludes 0.
pub const L_OVER_D_ONLY: &str = "L/d alone: accumulation over depth, no boundary term resolved";
/// [`variables`]: both intervals hold 0.
pub(crate) const NEITHER: &str = "none: no deviation resolved";

/// Which variables the measured deviation needs, from the 95% intervals of `a` and `kappa`: a
/// term is present when its interval excludes 0. `L/d` alone suffices only when no boundary
/// term is resolved ([`L_OVER_D_ONLY`]).
pub fn variables(a_ci: (f64, f64), kappa_ci: (f64, f64)) -> &'static str {
    let resolved = |c: (f64, f64)| !(c.0 <= 0.0 && 0.0 <= c.1);
    match (resolved(a_ci), resolved(kappa_ci)) {
        (true, true) => BOTH,
        (true, false) => BOUNDARY_ONLY,
        (false, true) => L_OVER_D_ONLY,
        (false, false) => NEITHER,
    }
}

/// The weight of a cell, `1/Var ln(mc)` by the delta method on the Monte Carlo standard error
/// (the variance floored at 1e-12).
fn weight(p: &Point) -> f64 {
    let se = (p.ci.1 - p.ci.0) / (2.0 * 1.96) / p.mc.abs();
    1.0 / (se * se).max(1e-12)
}

/// `(a, kappa)` of `y = a u + kappa x` with `u = 1/d`, `x = L/d`, weighted least squares
/// through the origin over the cells `idx` (with repeats: a bootstrap resample), weights
/// [`weight`]; NaN when the two regressors are collinear on those cells (one depth).
fn fit(pts: &[&Point], idx: &[usize], y: impl Fn(&Point) -> f64) -> (f64, f64) {
    let (mut suu, mut sux, mut sxx, mut suy, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &i in idx {
        let p = pts[i];
        let (w, u, x, v) = (weight(p), 1.0 / p.width as f64, p.x(), y(p));
        suu += w * u * u;
        sux += w * u * x;
        sxx += w * x * x;
        suy += w * u * v;
        sxy += w * x * v;
    }
    let det = suu * sxx - sux * sux;
    // Collinear (every cell at one depth: L/d is L times 1/d) up to rounding: no separate a and kappa.
    if det.abs() <= 1e-12 * suu * sxx {
        return (f64::NAN, f64::NAN);
    }
    ((sxx * suy - sux * sxy) / det, (suu * sxy - sux * suy) / det)
}

/// `ln(mc / closed form)`.
fn log_ratio(p: &Point) -> f64 {
    (p.mc / p.theory).ln()
}

/// `chi^2` per degree of freedom of `fit` on `pts` (NaN with fewer than 3 cells).
fn chi2_dof(pts: &[&Point], f: (f64, f64)) -> f64 {
    if pts.len() < 3 {
        return f64::NAN;
    }
    let chi2: f64 = pts
        .iter()
        .map(|p| weight(p) * (log_ratio(p) - f.0 / p.width as f64 - f.1 * p.x()).powi(2))
        .sum();
    chi2 / (pts.len() - 2) as f64
}

/// The smallest L/d from which every cell (at that L/d or above) misses `t`. Cells sharing an
/// L/d form one group: scanning the groups from the largest L/d down, the region ends below
/// the first group with a covered cell.
fn miss_from(pts: &[&Point], t: impl Fn(&Point) -> Option<f64>) -> Option<f64> {
    let mut v: Vec<(f64, bool)> = pts
        .iter()
        .filter_map(|p| t(p).map(|x| (p.x(), !p.covers(x))))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut edge = None;
    let mut groups = v.chunk_by(|a, b| a.0.total_cmp(&b.0).is_eq()).rev();
    for g in &mut groups {
        if !g.iter().all(|&(_, miss)| miss) {
            break;
        }
        edge = Some(g[0].0);
    }
    edge
}

/// Share of the cells `keep` accepts whose interval covers `t` (NaN if none).
fn coverage(
    pts: &[&Point],
    keep: impl Fn(&Point) -> bool,
    t: impl Fn(&Point) -> Option<f64>,
) -> f64 {
    let v: Vec<bool> = pts
        .iter()
        .filter(|p| keep(p))
        .filter_map(|p| t(p).map(|x| p.covers(x)))
        .collect();
    v.iter().filter(|&&c| c).count() as f64 / v.len() as f64
}

fn fitted(p: &Point) -> bool {
    p.x() <= FIT_MAX_L_OVER_D
}

fn laws(c: &Config, all: &[Point]) -> Vec<Law> {
    let mut out = Vec::new();
    for p in &c.presets {
        for &(m, _, _) in &QUANTITIES {
            let pts: Vec<&Point> = all
                .iter()
                .filter(|x| x.preset == *p && x.metric == m && x.mc / x.theory > 0.0)
                .collect();
            let fit_pts: Vec<&Point> = pts.iter().copied().filter(|x| fitted(x)).collect();
            if fit_pts.len() < 3 {
                continue;
            }
            let idx: Vec<usize> = (0..fit_pts.len()).collect();
            let f = fit(&fit_pts, &idx, log_ratio);
            let seed = c.seed ^ normscope_numeric::rng::config_hash(&format!("{p}/{}", m.name()));
            // One seed for both coefficients: the same resamples give both intervals.
            let boot = |k: fn((f64, f64)) -> f64| {
                normscope_core::stats::bootstrap::interval(fit_pts.len(), seed, |i| {
                    k(fit(&fit_pts, i, log_ratio))
                })
            };
            let (a_ci, kappa_ci) = (boot(|f| f.0), boot(|f| f.1));
            let corrected = pts.iter().any(|x| x.corrected.is_some());
            let derived = corrected.then(|| {
                fit(&fit_pts, &idx, |x| {
                    x.corrected.map_or(f64::NAN, |t| (t / x.theory).ln())
                })
            });
            let holds_zero = |c: (f64, f64)| c.0 <= 0.0 && 0.0 <= c.1;
            let limit = |v: f64| {
                if v > 0.0 {
                    DEVIATION_LIMIT.ln_1p()
                } else {
                    (-DEVIATION_LIMIT).ln_1p()
                }
            };
            let edge = (!holds_zero(kappa_ci) && f.1 != 0.0)
                .then(|| limit(f.1) / f.1)
                .filter(|&x| x <= FIT_MAX_L_OVER_D);
            let widths =
                |g: fn(f64, f64) -> f64| fit_pts.iter().map(|x| x.width as f64).fold(f64::NAN, g);
            let width_min = (!holds_zero(a_ci) && f.0 != 0.0)
                .then(|| f.0 / limit(f.0))
                .filter(|&w| w >= widths(f64::min) && w <= widths(f64::max));
            let x_of = |g: fn(f64, f64) -> f64| pts.iter().map(|x| x.x()).fold(f64::NAN, g);
            out.push(Law {
                preset: p,
                metric: m,
                estimator: fit_pts[0].estimator.clone(),
                cells: fit_pts.len(),
                fit: f,
                a_ci,
                kappa_ci,
                chi2_dof: chi2_dof(&fit_pts, f),
                derived,
                variables: variables(a_ci, kappa_ci),
                edge,
                width_min,
                min_x: x_of(f64::min),
                max_x: x_of(f64::max),
                covered: coverage(&pts, fitted, |x| Some(x.theory)),
                covered_corrected: coverage(&pts, fitted, |x| x.corrected),
                covered_all: coverage(&pts, |_| true, |x| Some(x.theory)),
                covered_corrected_all: coverage(&pts, |_| true, |x| x.corrected),
                miss_from: miss_from(&pts, |x| Some(x.theory)),
                miss_from_corrected: miss_from(&pts, |x| x.corrected),
                corrected,
            });
        }
    }
    out
}

fn write_laws(c: &Config, out: &mut Out, laws: &[Law]) -> Result<()> {
    let inside = |v: Option<f64>, ci: (f64, f64)| v.map(|v| ci.0 <= v && v <= ci.1);
    let mut df = super::training::frame(vec![
        column("preset", laws.iter().map(|l| l.preset.name)),
        column("metric", laws.iter().map(|l| l.metric.name().to_string())),
        column("estimator", laws.iter().map(|l| l.estimator.clone())),
        column("law", laws.iter().map(|_| LAW.to_string())),
        column("fit_max_l_over_d", laws.iter().map(|_| FIT_MAX_L_OVER_D)),
        column("cells", laws.iter().map(|l| l.cells as u64)),
        column("a", laws.iter().map(|l| l.fit.0)),
        column("a_ci_low", laws.iter().map(|l| l.a_ci.0)),
        column("a_ci_high", laws.iter().map(|l| l.a_ci.1)),
        column("kappa", laws.iter().map(|l| l.fit.1)),
        column("kappa_ci_low", laws.iter().map(|l| l.kappa_ci.0)),
        column("kappa_ci_high", laws.iter().map(|l| l.kappa_ci.1)),
        column("chi2_per_dof", laws.iter().map(|l| l.chi2_dof)),
        column("variables", laws.iter().map(|l| l.variables.to_string())),
        column("correction_derived", laws.iter().map(|l| l.corrected)),
        column("derived_a", laws.iter().map(|l| l.derived.map(|x| x.0))),
        column(
            "derived_a_in_ci",
            laws.iter().map(|l| inside(l.derived.map(|x| x.0), l.a_ci)),
        ),
        column("derived_kappa", laws.iter().map(|l| l.derived.map(|x| x.1))),
        column(
            "derived_kappa_in_ci",
            laws.iter()
                .map(|l| inside(l.derived.map(|x| x.1), l.kappa_ci)),
        ),
        column("deviation_limit", laws.iter().map(|_| DEVIATION_LIMIT)),
        column("edge_l_over_d", laws.iter().map(|l| l.edge)),
        column("width_min", laws.iter().map(|l| l.width_min)),
        column("max_l_over_d", laws.iter().map(|l| l.max_x)),
        column("covered", laws.iter().map(|l| l.covered)),
        column("covered_all", laws.iter().map(|l| l.covered_all)),
        column("miss_from_l_over_d", laws.iter().map(|l| l.miss_from)),
        column(
            "covered_corrected",
            laws.iter().map(|l| l.covered_corrected),
        ),
        column(
            "covered_corrected_all",
            laws.iter().map(|l| l.covered_corrected_all),
        ),
        column(
            "miss_from_corrected_l_over_d",
            laws.iter().map(|l| l.miss_from_corrected),
        ),
    ])?;
    out.frame("law.csv", &mut df)?;
    let mut t = Table::new(
        format!(
            "Measured finite-width law $\\ln(1 + \\text{{dev}}) = a/d + \\kappa L/d$ of the Monte Carlo estimate against the closed form ({} branch, $n = {}$ tokens, $c_0 = {}$), weighted least squares on the cells with $L/d \\le {}$; 95\\% bootstrap intervals over the cells (\\texttt{{law.csv}} adds the same fit to the derived $1/d$ correction). grad: \\texttt{{grad\\_sq}} at $x_0$; weight grad: \\texttt{{weight\\_grad\\_sq}} of block 1; eff.\\ depth, corr: \\texttt{{eff\\_depth}}, \\texttt{{corr}} at layer $L$.",
            common::branch_label(&c.model.branch),
            c.tokens,
            c.c0,
            FIT_MAX_L_OVER_D
        ),
        "tab:finite-width",
        &["quantity", "fit", latex::CI_HEADER, "fit", latex::CI_HEADER],
    )
    .page_wide();
    t.spans = vec![("$a$".into(), 1, 2), ("$\\kappa$".into(), 3, 2)];
    let mut preset = None;
    for l in laws {
        if preset != Some(&l.preset) {
            t.group(common::tex_label(l.preset));
            preset = Some(&l.preset);
        }
        // Each coefficient and its interval to the place of the interval's half-width.
        let mut cells = vec![Cell::Text(quantity_tex(l.metric).into())];
        cells.extend(Cell::ci(l.fit.0, l.a_ci));
        cells.extend(Cell::ci(l.fit.1, l.kappa_ci));
        t.row(cells);
    }
    out.latex(&t, "law")
}

/// Interval coverage by L/d over the whole grid: per preset, quantity and L/d, the cells and
/// the share whose Monte Carlo interval covers the closed form and the corrected one.
fn write_coverage(c: &Config, out: &mut Out, pts: &[Point]) -> Result<()> {
    let mut rows: Vec<(&str, Metric, f64)> = Vec::new();
    for p in &c.presets {
        for &(m, _, _) in &QUANTITIES {
            let mut xs: Vec<f64> = pts
                .iter()
                .filter(|x| x.preset == *p && x.metric == m)
                .map(Point::x)
                .collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            rows.extend(xs.into_iter().map(|x| (p.name, m, x)));
        }
    }
    let group = |k: &(&str, Metric, f64)| -> Vec<&Point> {
        pts.iter()
            .filter(|p| p.preset.name == k.0 && p.metric == k.1 && p.x().total_cmp(&k.2).is_eq())
            .collect()
    };
    let share =
        |k: &(&str, Metric, f64), t: fn(&Point) -> Option<f64>| coverage(&group(k), |_| true, t);
    let mut df = super::training::frame(vec![
        column("preset", rows.iter().map(|k| k.0.to_string())),
        column("metric", rows.iter().map(|k| k.1.name().to_string())),
        column("l_over_d", rows.iter().map(|k| k.2)),
        column("cells", rows.iter().map(|k| group(k).len() as u64)),
        column("covered", rows.iter().map(|k| share(k, |p| Some(p.theory)))),
        column(
            "covered_corrected",
            rows.iter().map(|k| share(k, |p| p.corrected)),
        ),
    ])?;
    out.frame("coverage.csv", &mut df)
}

/// A quantity's short name in `law.tex` ([`QUANTITIES`]).
fn quantity_tex(m: Metric) -> &'static str {
    QUANTITIES
        .iter()
        .find(|q| q.0 == m)
        .map(|q| q.2)
        .expect("law.tex lists the QUANTITIES only")
}

fn figures(c: &Config, out: &mut Out, pts: &[Point], laws: &[Law]) -> Result<()> {
    for &(m, _, _) in &QUANTITIES {
        let name = m.name();
        let panels = c
            .presets
            .iter()
            .map(|p| Panel {
                title: p.label.to_string(),
                cells: pts
                    .iter()
                    .filter(|x| x.preset == *p && x.metric == m)
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
        // The deviation with the fitted boundary term a/d taken out, against L/d: where L/d
        // is the right variable for the rest, each preset's cells fall on |kappa L/d|, drawn
        // over the fitted range only.
        let mut plot = LinePlot::new(
            &format!(
                "{}: ln(MC / closed form) less the fitted a/d, against L/d",
                m.info().title
            ),
            "L/d",
            "|ln(MC / closed form) - a/d|",
        );
        plot.y_log = true;
        for (i, p) in c.presets.iter().enumerate() {
            let Some(l) = laws.iter().find(|l| l.preset == *p && l.metric == m) else {
                continue;
            };
            let a = l.fit.0;
            let dots: Vec<(f64, f64, f64, f64)> = pts
                .iter()
                .filter(|x| x.preset == *p && x.metric == m && x.mc / x.theory > 0.0)
                .filter_map(|x| {
                    let b = a / x.width as f64;
                    let y = log_ratio(x) - b;
                    let lo = (x.ci.0 / x.theory).ln() - b;
                    let hi = (x.ci.1 / x.theory).ln() - b;
                    let (s, t) = (lo.abs().min(hi.abs()), lo.abs().max(hi.abs()));
                    // An interval holding 0 is drawn from the point up (log axis).
                    let s = if lo <= 0.0 && hi >= 0.0 || !s.is_finite() {
                        y.abs()
                    } else {
                        s
                    };
                    (y != 0.0 && y.is_finite()).then_some((x.x(), y.abs(), s, t))
                })
                .collect();
            plot.series.push(Series::points(p.label, i, &dots));
            let (lo, hi) = (l.min_x.ln(), l.max_x.min(FIT_MAX_L_OVER_D).ln());
            let curve: Vec<(f64, f64)> = (0..=40)
                .map(|j| {
                    let x = (lo + (hi - lo) * j as f64 / 40.0).exp();
                    (x, (l.fit.1 * x).abs())
                })
                .filter(|q| q.1 > 0.0)
                .collect();
            plot.series.push(Series::line(
                format!("{} fit, kappa = {}", p.label, tick(l.fit.1)),
                i,
                curve,
            ));
        }
        out.figure(&format!("collapse_{name}"), &plot)?;
    }
    Ok(())
}

/// Where a Monte Carlo measurement of the ledger lies on the finite-width map, from the
/// `deviation.csv` and `skipped.csv` this analysis wrote under the same root. For each
/// `(preset, metric, L, d)`: outside the mapped grid (L or d beyond the depths or widths
/// measured), or the measured cells that bracket it (the grid's depths and widths at or
/// around L and d; one cell when both are grid points) with their deviation and 95%
/// interval, and whether the closed form describes them ([`describes`]). The fitted law is
/// never evaluated here: most ledger measurements lie beyond its fitted range. Metrics the map
/// does not cover are left out.
pub(crate) fn region_note(
    d: &crate::runner::data::Data,
    items: &[(&'static Preset, Metric, u64, u64)],
) -> Result<String> {
    let df = d.frame(&format!("{}/deviation.csv", ANALYSIS.id))?;
    let sk = d.frame(&format!("{}/skipped.csv", ANALYSIS.id))?;
    let (s, f) = (super::training::strs, super::training::f64s);
    let ints = |v: Vec<f64>| -> Vec<u64> { v.into_iter().map(|x| x as u64).collect() };
    let (p, m, l, w) = (
        s(&df, "preset")?,
        s(&df, "metric")?,
        ints(f(&df, "depth")?),
        ints(f(&df, "width")?),
    );
    let (dev, lo, hi) = (
        f(&df, "deviation")?,
        f(&df, "deviation_ci_low")?,
        f(&df, "deviation_ci_high")?,
    );
    let mut depths: Vec<u64> = l.iter().copied().chain(ints(f(&sk, "depth")?)).collect();
    let mut widths: Vec<u64> = w.iter().copied().chain(ints(f(&sk, "width")?)).collect();
    for v in [&mut depths, &mut widths] {
        v.sort_unstable();
        v.dedup();
    }
    // The grid values at or around v (one when v is a grid value), or None outside the grid.
    let bracket = |grid: &[u64], v: u64| -> Option<Vec<u64>> {
        let i = grid.iter().position(|&g| g >= v)?;
        if grid[i] == v {
            Some(vec![v])
        } else if i == 0 {
            None
        } else {
            Some(vec![grid[i - 1], grid[i]])
        }
    };
    let mut parts = Vec::new();
    for &(preset, metric, depth, width) in items {
        if !(0..df.height()).any(|i| p[i] == preset.name && m[i] == metric.name()) {
            continue;
        }
        let what = format!(
            "{} {} at L = {depth}, d = {width}",
            preset.label,
            metric.name()
        );
        let (Some(ls), Some(ws)) = (bracket(&depths, depth), bracket(&widths, width)) else {
            parts.push(format!(
                "{what}: outside the mapped grid (L = {}..{}, d = {}..{})",
                depths[0],
                depths[depths.len() - 1],
                widths[0],
                widths[widths.len() - 1]
            ));
            continue;
        };
        let mut cells = Vec::new();
        for &bl in &ls {
            for &bw in &ws {
                let i = (0..df.height()).find(|&i| {
                    p[i] == preset.name && m[i] == metric.name() && l[i] == bl && w[i] == bw
                });
                match i {
                    Some(i) => {
                        let v = describes(lo[i], hi[i]);
                        cells.push(format!(
                            "L = {bl}, d = {bw}: {} [{}, {}], {v}",
                            sig(dev[i]),
                            sig(lo[i]),
                            sig(hi[i])
                        ));
                    }
                    None => cells.push(format!("L = {bl}, d = {bw}: not measured (memory)")),
                }
            }
        }
        let which = if ls.len() * ws.len() == 1 {
            "the measured cell"
        } else {
            "the bracketing cells"
        };
        parts.push(format!("{what}: {which} {}", cells.join("; ")));
    }
    Ok(if parts.is_empty() {
        String::new()
    } else {
        format!(
            "finite-width map (deviation of MC from the closed form, 95% CI; {INSIDE} if the CI lies within ±{DEVIATION_LIMIT}, {OUTSIDE} if it lies beyond): {}",
            parts.join("; ")
        )
    })
}

/// [`describes`]: the deviation's 95% interval lies within `±DEVIATION_LIMIT`.
pub const INSIDE: &str = "inside the region";
/// [`describes`]: the interval lies wholly beyond `±DEVIATION_LIMIT`.
pub const OUTSIDE: &str = "outside the region";
/// [`describes`]: the interval straddles `±DEVIATION_LIMIT`.
pub const UNRESOLVED: &str = "not resolved";

/// Whether the closed form describes a measured cell whose deviation has the 95% interval
/// `[lo, hi]`: [`INSIDE`], [`OUTSIDE`] or [`UNRESOLVED`].
pub fn describes(lo: f64, hi: f64) -> &'static str {
    if -DEVIATION_LIMIT < lo && hi < DEVIATION_LIMIT {
        INSIDE
    } else if lo >= DEVIATION_LIMIT || hi <= -DEVIATION_LIMIT {
        OUTSIDE
    } else {
        UNRESOLVED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(l: usize, d: usize, mc: f64) -> Point {
        Point {
            preset: normscope_core::placement::POST,
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
    fn fit_recovers_a_boundary_term_and_an_accumulated_one() {
        // mc = exp(2/d + 0.75 L/d) exactly: the weighted fit returns a = 2, kappa = 0.75.
        let pts: Vec<Point> = [(8, 64), (64, 64), (16, 32), (32, 32), (256, 128), (8, 128)]
            .iter()
            .map(|&(l, d)| point(l, d, (2.0 / d as f64 + 0.75 * l as f64 / d as f64).exp()))
            .collect();
        let refs: Vec<&Point> = pts.iter().collect();
        let (a, k) = fit(&refs, &[0, 1, 2, 3, 4, 5], log_ratio);
        assert!(
            (a - 2.0).abs() < 1e-9 && (k - 0.75).abs() < 1e-12,
            "{a} {k}"
        );
        assert!(chi2_dof(&refs, (a, k)) < 1e-12);
        // A pure 1/d term (the same at every depth of a width) is not read as accumulation.
        let flat: Vec<Point> = [(8, 32), (32, 32), (8, 64), (64, 64)]
            .iter()
            .map(|&(l, d)| point(l, d, (1.5 / d as f64).exp()))
            .collect();
        let refs: Vec<&Point> = flat.iter().collect();
        let (a, k) = fit(&refs, &[0, 1, 2, 3], log_ratio);
        assert!((a - 1.5).abs() < 1e-9 && k.abs() < 1e-12, "{a} {k}");
        // One depth: L/d = L (1/d), so a and kappa are not separable.
        assert!(fit(&refs, &[0, 2], log_ratio).0.is_nan());
    }

    #[test]
    fn variables_follow_the_intervals() {
        assert_eq!(variables((0.5, 2.0), (-0.1, 0.1)), BOUNDARY_ONLY);
        assert_eq!(variables((0.5, 2.0), (0.6, 0.9)), BOTH);
        assert_eq!(variables((-0.5, 2.0), (0.6, 0.9)), L_OVER_D_ONLY);
        assert_eq!(variables((-0.5, 2.0), (-0.6, 0.9)), NEITHER);
    }

    #[test]
    fn a_cell_is_described_by_its_interval() {
        assert_eq!(describes(-0.017, 0.03), INSIDE);
        assert_eq!(describes(-0.017, 0.06), UNRESOLVED);
        assert_eq!(describes(0.06, 0.3), OUTSIDE);
        assert_eq!(describes(-0.3, -0.06), OUTSIDE);
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
        let c = coverage(&refs, fitted, |x| Some(x.theory));
        assert!((c - 0.5).abs() < 1e-15);
    }

    #[test]
    fn misses_start_above_a_tie_with_a_covered_cell() {
        // At L/d = 1 one cell covers and one misses; every cell at 2 and 4 misses. The region
        // of misses starts at 2 (the code before this test returned None: its reverse scan
        // entered the mixed group through the missed cell, then discarded the whole result).
        let pts = [
            point(32, 32, 1.0),
            point(64, 64, 1.5),
            point(64, 32, 1.5),
            point(128, 64, 1.5),
            point(128, 32, 2.0),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        assert_eq!(miss_from(&refs, |x| Some(x.theory)), Some(2.0));
        // Every group missed: the region starts at the smallest L/d.
        assert_eq!(miss_from(&refs[1..], |x| Some(x.theory)), Some(1.0));
        // The largest group holds a covered cell: no region.
        let top = [point(64, 32, 1.5), point(128, 64, 1.5), point(64, 32, 1.0)];
        let refs: Vec<&Point> = top.iter().collect();
        assert_eq!(miss_from(&refs, |x| Some(x.theory)), None);
    }
}
