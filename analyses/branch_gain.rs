//! `branch-gain`: how the conclusions move with the branch gain g (the seeds' sqrt 2 argument is
//! g = 1 only; docs/theory.md, "Branches"), with the init scheme and branch (which set g), and with the
//! norm (LayerNorm against RMSNorm, Monte Carlo; identical in the closed form).
//!
//! For each g: effective depth, x_0's weight in x_L, the gradient at x_0, and the first- and
//! last-block weight gradients, at one depth.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::output::latex::{self, Cell, Table};
use normscope_core::output::table::{col, column, setup_columns, tagged_frame};
use normscope_core::placement::Preset;
use normscope_core::profile::EngineKind;
use normscope_core::profile::Row;
use normscope_core::{Error, Result};
use normscope_figure::LinePlot;
use polars::prelude::*;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "branch-gain",
    about: "conclusions against the branch gain g, the init scheme and branch, and the norm",
    claims: &[1, 3, 4],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: None,
};

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::branch_gain::Config;
/// let c = Config::full();
/// assert_eq!((c.depth, c.gain_min, c.gain_max, c.gain_count), (64, 0.1, 10.0, 21));
/// assert_eq!(c.mc_gains, vec![0.25, 1.0, 4.0]);
/// assert_eq!(c.inits, ["xavier", "he", "torch-default", "bert"]);
/// assert_eq!(Config::quick().mc_gains, vec![0.25, 4.0]);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
    /// Depth L.
    pub depth: usize,
    /// Closed form: g log-spaced from `gain_min` to `gain_max`, and the Monte Carlo gains.
    pub gain_min: f64,
    /// Closed form: largest g.
    pub gain_max: f64,
    /// Closed form: how many gains.
    pub gain_count: usize,
    /// Monte Carlo gains (linear branch).
    pub mc_gains: Vec<f64>,
    /// Branches of the init table (closed form).
    pub branches: Vec<String>,
    /// Init schemes of the init table.
    pub inits: Vec<String>,
    /// Norms compared by Monte Carlo.
    pub norms: Vec<normscope_core::spec::NormKind>,
    /// Branch and init of the norm comparison.
    pub norm_model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

/// The tag column of the gain sweep: the `--gain` each row was run with (the `g` column is the
/// gain the closed form derives from it, equal up to rounding).
pub(crate) const GAIN_TAG: &str = "gain";

/// The metrics at layers 0, 1 and L.
pub const METRICS: [Metric; 4] = [
    Metric::EffDepth,
    Metric::BranchWeight,
    Metric::GradSq,
    Metric::WeightGradSq,
];

/// Keeps eff_depth at L, x_0's weight at L, grad_sq at 0 and L, weight_grad_sq at 1 and L.
pub fn keep(r: &Row) -> bool {
    let last = r.layer == r.depth;
    let m = r.metric;
    (m == Metric::EffDepth && last)
        || (m == Metric::BranchWeight && last && r.source == Some(0))
        || (m == Metric::GradSq && (last || r.layer == 0))
        || (m == Metric::WeightGradSq && (last || r.layer == 1))
}

fn rows_at(c: &Config, model: &Model, gain: Option<f64>, engine: EngineKind) -> Result<Vec<Row>> {
    let mut raw = model.raw(c.depth, &c.mc);
    raw.gain = gain;
    let layers = LayerSpec::List(vec![0, 1, c.depth]);
    let mut rows = common::rows(engine, &c.presets, &raw, &c.mc, &METRICS, &layers)?;
    rows.retain(keep);
    Ok(rows)
}

/// The first/last weight-gradient ratio, or None when a row is missing (written empty, and
/// `--` in LaTeX).
fn grad_ratio(rows: &[Row], preset: &str, depth: usize) -> Option<f64> {
    common::weight_grad_ratio(rows, preset, depth)
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Config {
            presets: common::presets(&["pre", "post", "deepnorm"]),
            depth: 64,
            gain_min: 0.1,
            gain_max: 10.0,
            gain_count: 21,
            mc_gains: vec![0.25, 1.0, 4.0],
            branches: s(&["linear", "relu-mlp", "gelu-mlp"]),
            inits: s(&["xavier", "he", "torch-default", "bert"]),
            norms: vec![
                normscope_core::spec::NormKind::Layer,
                normscope_core::spec::NormKind::Rms,
            ],
            norm_model: Model::relu_mlp(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_gains: vec![0.25, 4.0],
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths(
            "branch-gain.depth/gain_count",
            &[self.depth, self.gain_count],
        )?;
        let ok = |g: f64| g.is_finite() && g > 0.0;
        if !(ok(self.gain_min) && ok(self.gain_max) && self.gain_min <= self.gain_max) {
            return Err(Error::invalid(
                "branch-gain.gain_min/gain_max",
                format!("{}..{}", self.gain_min, self.gain_max),
                "finite numbers 0 < gain_min <= gain_max",
            ));
        }
        if let Some(bad) = self.mc_gains.iter().find(|g| !ok(**g)) {
            return Err(Error::invalid(
                "branch-gain.mc_gains",
                bad,
                "finite numbers > 0",
            ));
        }
        for b in &self.branches {
            for i in &self.inits {
                let m = Model::new(b, i, normscope_core::spec::NormKind::Layer);
                common::check(&self.presets, &m, &self.mc, self.depth)?;
            }
        }
        for n in &self.norms {
            let m = Model {
                norm: *n,
                ..self.norm_model.clone()
            };
            common::check(&self.presets, &m, &self.mc, self.depth)?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let linear = Model::seeds();
    // The closed form also runs at the Monte Carlo gains, so the tables compare them at equal g.
    let mut gains: Vec<f64> = (0..c.gain_count)
        .map(|i| {
            let t = if c.gain_count > 1 {
                i as f64 / (c.gain_count - 1) as f64
            } else {
                0.0
            };
            c.gain_min * (c.gain_max / c.gain_min).powf(t)
        })
        .chain(c.mc_gains.iter().copied())
        .collect();
    gains.sort_by(f64::total_cmp);
    gains.dedup_by(|a, b| a.total_cmp(b).is_eq());
    let (theory, mc) = common::sweep(&gains, &c.mc_gains, |g, engine| {
        let rows = rows_at(c, &linear, Some(g), engine)?;
        Ok(rows.into_iter().map(|r| (vec![g], r)).collect())
    })?;
    let d = c.depth as u64;
    for (stem, m, y_label, layer) in [
        (
            "eff_depth_vs_gain",
            Metric::EffDepth,
            "effective depth (mean path)",
            d,
        ),
        (
            "x0_weight_vs_gain",
            Metric::BranchWeight,
            "x_0's share of ||x||^2 at layer L",
            d,
        ),
        (
            "grad_x0_vs_gain",
            Metric::GradSq,
            "mean-square gradient at x_0",
            0,
        ),
    ] {
        let mut plot = LinePlot::new(
            &format!("Against the branch gain g (linear branch, L = {})", c.depth),
            "branch gain g = E||F(u)||^2 / ||u||^2",
            y_label,
        );
        plot.y_log = true;
        common::add_both(
            &mut plot,
            &c.presets,
            &theory,
            &mc,
            m,
            common::by_tag,
            move |r| r.layer == layer,
        );
        out.figure(stem, &plot)?;
    }
    out.frame("gain_theory.csv", &mut tagged_frame(&[GAIN_TAG], theory)?)?;
    out.frame("gain_mc.csv", &mut tagged_frame(&[GAIN_TAG], mc)?)?;

    // Init table (closed form): which g each branch and init gives, and what follows.
    let mut reps: Vec<Row> = Vec::new();
    let (mut ted, mut tx0, mut tratio) = (vec![], vec![], vec![]);
    // One table per branch (so each fits a column), a group of presets per init.
    let mut tex: Vec<(String, Table)> = Vec::new();
    for b in &c.branches {
        let mut t = Table::new(
            format!(
                "Closed form at $L = {}$, {} branch, by init (the gain $g$ it gives): effective depth$/L$, the weight of $x_0$ in $x_L$, and the first/last block weight-gradient ratio.",
                c.depth,
                common::branch_label(b)
            ),
            format!("tab:inits-{}", b.replace('_', "-")),
            &[
                "preset",
                "eff.\\ depth\n$/L$",
                "weight\nof $x_0$",
                "grad\nfirst/last",
            ],
        );
        for i in &c.inits {
            let m = Model::new(b, i, normscope_core::spec::NormKind::Layer);
            let g = m.gain(&c.mc)?;
            t.group(format!(
                "{}, $g = \\num{{{}}}$",
                common::init_label(i),
                latex::plain(g)
            ));
            let rows = rows_at(c, &m, None, EngineKind::Theory)?;
            for p in &c.presets {
                let ed = common::value(&rows, p.name, Metric::EffDepth, c.depth, c.depth, None);
                let x0 = common::value(
                    &rows,
                    p.name,
                    Metric::BranchWeight,
                    c.depth,
                    c.depth,
                    Some(0),
                );
                let ratio = grad_ratio(&rows, p.name, c.depth);
                // The settings of this cell: any of the preset's rows carries them.
                let rep = rows.iter().find(|r| r.preset == p.name).ok_or_else(|| {
                    normscope_core::Error::Undefined(format!(
                        "branch-gain: no closed-form row for {p}"
                    ))
                })?;
                reps.push(rep.clone());
                ted.push(ed);
                tx0.push(x0);
                tratio.push(ratio);
                t.row(vec![
                    Cell::Text(common::tex_label(p)),
                    Cell::opt(ed.map(|e| e / c.depth as f64)),
                    Cell::opt(x0),
                    Cell::opt(ratio),
                ]);
            }
        }
        tex.push((format!("inits_{}", b.replace('-', "_")), t));
    }
    let refs: Vec<&Row> = reps.iter().collect();
    let mut cols = vec![column(col::PRESET, reps.iter().map(|r| r.preset.as_str()))];
    cols.extend(setup_columns(&refs));
    cols.insert(2, column(col::ENGINE, reps.iter().map(|r| r.engine.name())));
    cols.extend([
        column(col::DEPTH, reps.iter().map(|r| r.depth)),
        column("eff_depth", ted),
        column("x0_weight", tx0),
        column("weight_grad_first_over_last", tratio),
    ]);
    let mut df = DataFrame::new_infer_height(cols)?;
    out.frame("inits.csv", &mut df)?;
    for (name, t) in &tex {
        out.latex(t, name)?;
    }

    // Norms by Monte Carlo (identical in the closed form).
    let th_norm = rows_at(c, &c.norm_model, None, EngineKind::Theory)?;
    let mut t = Table::new(
        format!(
            "LayerNorm against RMSNorm ({} branch, {} init, $L = {}$, Monte Carlo $d = {}$, {} networks, 95\\% CI): effective depth and first/last block weight-gradient ratio, closed form (CF) and Monte Carlo (MC).",
            common::branch_label(&c.norm_model.branch),
            common::init_label(&c.norm_model.init),
            c.depth,
            c.mc.width,
            c.mc.samples
        ),
        "tab:norms",
        &["preset", "CF", "MC", "CF", "MC"],
    );
    t.spans = vec![
        ("eff.\\ depth".into(), 1, 2),
        ("grad first/last".into(), 3, 2),
    ];
    for n in &c.norms {
        t.group(n.label());
        let m = Model {
            norm: *n,
            ..c.norm_model.clone()
        };
        let rows = rows_at(c, &m, None, EngineKind::Mc)?;
        for p in &c.presets {
            let ed = rows
                .iter()
                .find(|r| r.preset == p.name && r.metric == Metric::EffDepth);
            let th = common::value(&th_norm, p.name, Metric::EffDepth, c.depth, c.depth, None);
            t.row(vec![
                Cell::Text(common::tex_label(p)),
                Cell::opt(th),
                ed.filter(|r| r.missing.is_none())
                    .map_or(Cell::Missing, Cell::pm_row),
                Cell::opt(grad_ratio(&th_norm, p.name, c.depth)),
                Cell::opt(grad_ratio(&rows, p.name, c.depth)),
            ]);
        }
        out.rows(&format!("norm_{n}_mc.csv"), rows)?;
    }
    out.rows("norm_theory.csv", th_norm)?;
    out.latex(&t, "norms")
}
