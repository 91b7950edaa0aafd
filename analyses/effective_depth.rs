//! `effective-depth`: the mean Jacobian path length `eff_depth` (Veit et al. 2016; docs/theory.md
//! section 5) at the last layer against the depth L, closed form up to 10^6 and Monte Carlo up
//! to 1000, and the path-length distributions `path_len` at a few depths. This is the
//! quantitative form of the seeds' "Pre-Norm's depth has water in it" (seeds 000, 001).
//!
//! ReZero is left out of the defaults: its branches are multiplied by 0 at init, so its
//! effective depth is exactly 0.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::Result;
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::output::latex::{self, Cell};
use normscope_core::placement::Preset;
use normscope_figure::LinePlot;
use serde::{Deserialize, Serialize};

/// The path-length figures show lengths whose share reaches this fraction of the peak.
pub(crate) const PATH_LEN_SHOWN: f64 = 1e-3;

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "effective-depth",
    about: "effective depth (mean path length) against L, and path-length distributions",
    claims: &[1, 5],
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
/// use normscope_analyses::effective_depth::Config;
/// let c = Config::full();
/// assert_eq!(c.presets.len(), 7);
/// assert_eq!((c.max_depth, c.depth_count, c.mc_path_depth), (1_000_000, 25, 64));
/// assert_eq!(c.path_depths, vec![16, 64, 256]);
/// assert_eq!(Config::quick().mc_depths, vec![4, 16, 64]);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (closed form).
    pub presets: Vec<&'static Preset>,
    /// Closed form: log-spaced depths from 1 to this, and the Monte Carlo depths.
    pub max_depth: usize,
    /// Closed form: how many depths.
    pub depth_count: usize,
    /// Presets measured by Monte Carlo.
    pub mc_presets: Vec<&'static Preset>,
    /// Monte Carlo depths.
    pub mc_depths: Vec<usize>,
    /// Depths of the path-length distributions (closed form).
    pub path_depths: Vec<usize>,
    /// Depth of the Monte Carlo path-length distribution.
    pub mc_path_depth: usize,
    /// The network.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&[
                "pre", "post", "deepnorm", "sandwich", "admin", "mixln", "lns",
            ]),
            max_depth: 1_000_000,
            depth_count: 25,
            mc_presets: common::presets(&["pre", "post", "deepnorm"]),
            mc_depths: vec![4, 16, 64, 256, 1000],
            path_depths: vec![16, 64, 256],
            mc_path_depth: 64,
            model: Model::seeds(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_depths: vec![4, 16, 64],
            mc_path_depth: 16,
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("effective-depth.mc_depths", &self.mc_depths)?;
        common::check_depths("effective-depth.path_depths", &self.path_depths)?;
        common::check_depths(
            "effective-depth.max_depth/depth_count/mc_path_depth",
            &[self.max_depth, self.depth_count, self.mc_path_depth],
        )?;
        common::check(&self.presets, &self.model, &self.mc, 1)?;
        let deepest = common::deepest(&self.mc_depths).max(self.mc_path_depth);
        common::check(&self.mc_presets, &self.model, &self.mc, deepest)?;
        normscope_core::budget::check_closed_form(self.max_depth)?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let ed = [Metric::EffDepth];
    let sweep = common::DepthSweep {
        presets: &c.presets,
        mc_presets: &c.mc_presets,
        model: &c.model,
        mc: &c.mc,
        depths: common::depth_grid(c.max_depth, c.depth_count, &c.mc_depths),
        mc_depths: &c.mc_depths,
    };
    let setting = c.model.setting(&c.mc)?;
    let (theory, mc, plot) = sweep.run(
        Metric::EffDepth,
        &format!("Effective depth at init ({setting})"),
        "effective depth (mean path)",
    )?;
    let mc_th = common::vs_depth(
        normscope_core::profile::EngineKind::Theory,
        &c.mc_presets,
        &c.model,
        &c.mc,
        &c.mc_depths,
        &ed,
    )?;
    out.figure("eff_depth_vs_depth", &plot)?;

    // Headline table: closed form and Monte Carlo at the Monte Carlo depths.
    let mut table = latex::Table::new(
        format!(
            "Effective depth (mean path length) at init, closed form (CF) and Monte Carlo (MC; $d = {}$, $n = {}$, {} networks, 95\\% CI), {} branch with $g = {}$.",
            c.mc.width,
            c.mc.tokens,
            c.mc.samples,
            common::branch_label(&c.model.branch),
            common::short(c.model.gain(&c.mc)?)
        ),
        "tab:eff-depth",
        &["$L$", "CF", "MC", "CF$/L$"],
    );
    for p in &c.mc_presets {
        table.group(common::tex_label(p));
        for &d in &c.mc_depths {
            let th =
                common::value(&mc_th, p.name, Metric::EffDepth, d, d, None).unwrap_or(f64::NAN);
            let m = mc
                .iter()
                .find(|r| r.preset == p.name && r.depth == d as u64);
            table.row(vec![
                Cell::Int(d as i64),
                Cell::Num(th),
                m.map_or(Cell::Missing, Cell::pm_row),
                Cell::Num(th / d as f64),
            ]);
        }
    }
    out.latex(&table, "eff_depth")?;

    // Path-length distributions.
    let pl = [Metric::PathLen];
    let mut path_theory = Vec::new();
    for &d in &c.path_depths {
        path_theory.extend(common::theory(
            &c.mc_presets,
            &c.model.raw(d, &c.mc),
            &pl,
            &LayerSpec::Last,
        )?);
    }
    let path_mc = common::monte_carlo(
        &c.mc_presets,
        &c.model.raw(c.mc_path_depth, &c.mc),
        &c.mc,
        &pl,
        &LayerSpec::Last,
    )?;
    let mut shown = c.path_depths.clone();
    if !shown.contains(&c.mc_path_depth) {
        path_theory.extend(common::theory(
            &c.mc_presets,
            &c.model.raw(c.mc_path_depth, &c.mc),
            &pl,
            &LayerSpec::Last,
        )?);
        shown.push(c.mc_path_depth);
    }
    for &d in &shown {
        let mut plot = LinePlot::new(
            &format!("Path-length distribution at L = {d} ({setting})"),
            "path length k (branches)",
            "share of E||J||^2 (Jacobian)",
        );
        plot.x_log = false;
        // The shares kept span three decades (down to 1e-3 of the peak): a log axis.
        plot.y_log = true;
        let at = move |r: &normscope_core::profile::Row| r.depth == d as u64;
        common::add_both(
            &mut plot,
            &c.mc_presets,
            &path_theory,
            &path_mc,
            Metric::PathLen,
            |r| r.source.unwrap_or(0) as f64,
            at,
        );
        // Steps, cut to where the mass is (values of at least 1e-3 of the peak).
        plot.discrete(PATH_LEN_SHOWN);
        out.figure(&format!("path_len_L{d}"), &plot)?;
    }
    out.rows("theory.csv", theory)?;
    out.rows("mc.csv", mc)?;
    out.rows("path_len_theory.csv", path_theory)?;
    out.rows("path_len_mc.csv", path_mc)
}
