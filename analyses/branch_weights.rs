//! `branch-weights`: the share `branch_weight` of `||x_l||^2` carried by each source j
//! (docs/theory.md, "The metrics") as heatmaps (layer x source, one panel per preset, closed form), and
//! the weight of x_0 and of the first branch at the last layer against the depth L (closed form
//! as lines, Monte Carlo as points with 95% CIs).
//!
//! Seed 002's Post-LN expansion predicts x_0's weight `2^{-L}` at g = 1; Pre-LN's is `1/(L+1)`.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::Result;
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::placement::Preset;
use normscope_core::profile::Row;
use normscope_figure::LinePlot;
use normscope_figure::heatmap::{Heatmap, Panel};
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "branch-weights",
    about: "residual-branch weights: heatmaps per preset, x_0 and first-branch weight against L",
    claims: &[3],
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
/// use normscope_analyses::branch_weights::Config;
/// let c = Config::full();
/// assert_eq!(c.heatmap_presets, ["pre", "post", "deepnorm"]);
/// assert_eq!((c.heatmap_depth, c.max_depth, c.depth_count), (32, 1000, 25));
/// assert_eq!(c.mc_depths, vec![2, 4, 8, 16, 32, 64]);
/// assert_eq!(Config::quick().mc_depths, vec![2, 8, 32]);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets of the line plots (closed form).
    pub presets: Vec<&'static Preset>,
    /// Presets drawn as heatmap panels.
    pub heatmap_presets: Vec<&'static Preset>,
    /// Depth of the heatmaps.
    pub heatmap_depth: usize,
    /// Closed form: log-spaced depths from 1 to this, and the Monte Carlo depths.
    pub max_depth: usize,
    /// Closed form: how many depths.
    pub depth_count: usize,
    /// Presets measured by Monte Carlo.
    pub mc_presets: Vec<&'static Preset>,
    /// Monte Carlo depths.
    pub mc_depths: Vec<usize>,
    /// The network.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

/// Keeps the rows of sources 0 (x_0) and 1 (the first branch).
fn first_two(r: &Row) -> bool {
    r.source.is_some_and(|s| s <= 1)
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm", "sandwich", "admin", "mixln"]),
            heatmap_presets: common::presets(&["pre", "post", "deepnorm"]),
            heatmap_depth: 32,
            max_depth: 1000,
            depth_count: 25,
            mc_presets: common::presets(&["pre", "post", "deepnorm"]),
            mc_depths: vec![2, 4, 8, 16, 32, 64],
            model: Model::seeds(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_depths: vec![2, 8, 32],
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("branch-weights.mc_depths", &self.mc_depths)?;
        common::check_depths(
            "branch-weights.heatmap_depth/max_depth",
            &[self.heatmap_depth, self.max_depth, self.depth_count],
        )?;
        common::check(&self.presets, &self.model, &self.mc, 1)?;
        common::check(&self.heatmap_presets, &self.model, &self.mc, 1)?;
        let deepest = common::deepest(&self.mc_depths);
        common::check(&self.mc_presets, &self.model, &self.mc, deepest)?;
        normscope_core::budget::check_closed_form(self.max_depth.max(self.heatmap_depth))?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let setting = c.model.setting(&c.mc)?;
    let bw = [Metric::BranchWeight];
    let heat = common::theory(
        &c.heatmap_presets,
        &c.model.raw(c.heatmap_depth, &c.mc),
        &bw,
        &LayerSpec::All,
    )?;
    let depths = common::depth_grid(c.max_depth, c.depth_count, &c.mc_depths);
    let mut theory = common::vs_depth(
        normscope_core::profile::EngineKind::Theory,
        &c.presets,
        &c.model,
        &c.mc,
        &depths,
        &bw,
    )?;
    theory.retain(first_two);
    let mut mc = common::vs_depth(
        normscope_core::profile::EngineKind::Mc,
        &c.mc_presets,
        &c.model,
        &c.mc,
        &c.mc_depths,
        &bw,
    )?;
    mc.retain(first_two);

    let panels = c
        .heatmap_presets
        .iter()
        .map(|p| Panel {
            title: p.label.to_string(),
            cells: heat
                .iter()
                .filter(|r| r.preset == p.name && r.layer >= 1 && r.missing.is_none())
                .map(|r| (r.source.unwrap_or(0), r.layer, r.value))
                .collect(),
        })
        .collect();
    out.rows("theory_heatmap.csv", heat)?;
    out.figure(
        "heatmap",
        &Heatmap {
            x_label: "source j (0: x_0; j: F_j)".into(),
            y_label: "layer l".into(),
            value_label: "share of ||x_l||^2".into(),
            log10_range: (-6.0, 0.0),
            panels,
            x_ticks: Vec::new(),
            y_ticks: Vec::new(),
            linear: None,
        },
    )?;
    for (source, stem, what, symbol) in [
        (0, "x0_weight_vs_depth", "x_0", "x_0"),
        (1, "first_branch_weight_vs_depth", "first branch F_1", "F_1"),
    ] {
        let mut plot = LinePlot::new(
            &format!("Weight of {what} at layer L at init ({setting})"),
            "depth L (residual blocks)",
            &format!("{symbol}'s share of ||x||^2 at layer L"),
        );
        plot.y_log = true;
        common::add_both(
            &mut plot,
            &c.presets,
            &theory,
            &mc,
            Metric::BranchWeight,
            common::by_depth,
            move |r| r.source == Some(source),
        );
        out.figure(stem, &plot)?;
    }
    out.rows("theory.csv", theory)?;
    out.rows("mc.csv", mc)
}
