//! `adjacent-layers`: how much consecutive layers differ, against the layer t: `rel_update`
//! ||x_t - x_{t-1}|| / ||x_{t-1}||, `cos_prev`, `angular_dist` and `merge_error` (the error of
//! the seeds' approximation F_{t+1}(Norm(x_t)) ~ F_{t+1}(Norm(x_{t-1})); docs/theory.md, "The metrics").
//! Tests seeds 000/001/002's "for large t, x_t and x_{t+1} barely differ" (Pre-Norm).
//!
//! Default branch: ReLU MLP (He init), so that merge_error is not trivially linear.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::Result;
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::placement::Preset;
use normscope_figure::LinePlot;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "adjacent-layers",
    about: "relative update, cosine, angle and merge error between consecutive layers",
    claims: &[2],
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
/// use normscope_analyses::adjacent_layers::Config;
/// let c = Config::full();
/// assert_eq!(c.presets, ["pre", "post", "deepnorm", "sandwich"]);
/// assert_eq!((c.depth, c.mc_depth), (1000, 256));
/// assert_eq!((c.model.branch.as_str(), c.model.init.as_str()), ("relu-mlp", "he"));
/// assert_eq!(Config::quick().mc_depth, 64);
/// assert_eq!(c.seeds(), vec![0]);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
    /// Depth of the closed form.
    pub depth: usize,
    /// Depth of the Monte Carlo networks.
    pub mc_depth: usize,
    /// The network.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

/// The metrics, with their axis labels and whether the y axis is log-scale.
pub const METRICS: [(Metric, &str, bool); 4] = [
    (Metric::RelUpdate, "||x_t - x_{t-1}|| / ||x_{t-1}||", true),
    (Metric::CosPrev, "cos(x_t, x_{t-1})", false),
    (Metric::AngularDist, "angle(x_t, x_{t-1}) / pi", true),
    (Metric::MergeError, "merge error ||dF||^2 / ||F||^2", true),
];

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm", "sandwich"]),
            depth: 1000,
            mc_depth: 256,
            model: Model::relu_mlp(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_depth: 64,
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths(
            "adjacent-layers.depth/mc_depth",
            &[self.depth, self.mc_depth],
        )?;
        common::check(&self.presets, &self.model, &self.mc, self.mc_depth)?;
        normscope_core::budget::check_closed_form(self.depth)?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let metrics: Vec<Metric> = METRICS.iter().map(|m| m.0).collect();
    let theory = common::theory(
        &c.presets,
        &c.model.raw(c.depth, &c.mc),
        &metrics,
        &LayerSpec::All,
    )?;
    let mc = common::monte_carlo(
        &c.presets,
        &c.model.raw(c.mc_depth, &c.mc),
        &c.mc,
        &metrics,
        &LayerSpec::Log(16),
    )?;
    let mc_th = common::theory(
        &c.presets,
        &c.model.raw(c.mc_depth, &c.mc),
        &metrics,
        &LayerSpec::All,
    )?;
    for (m, what, y_log) in METRICS {
        for (stem, depth, th, mc_here) in [
            ("", c.depth, &theory, &[][..]),
            ("_mc", c.mc_depth, &mc_th, &mc[..]),
        ] {
            let mut plot = LinePlot::new(
                &format!("{} at L = {depth} (ReLU MLP, He init)", common::title(m)),
                "layer t",
                what,
            );
            plot.y_log = y_log;
            common::add_both(
                &mut plot,
                &c.presets,
                th,
                mc_here,
                m,
                common::by_layer,
                |r| r.layer >= 1,
            );
            out.figure(&format!("{}{stem}", m.name()), &plot)?;
        }
    }
    out.rows("theory.csv", theory)?;
    out.rows("theory_mc_depth.csv", mc_th)?;
    out.rows("mc.csv", mc)
}
