//! `output-change`: `output_change`, E||f(x; W + delta) - f(x; W)||^2 under an independent small
//! perturbation of every branch's weights (Liu et al. 2020's amplification effect; docs/theory.md
//! section 5), at the last layer against the depth L.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::Result;
use normscope_core::metrics::Metric;
use normscope_core::placement::Preset;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "output-change",
    about: "output change under a small weight perturbation against L",
    claims: &[],
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
/// use normscope_analyses::output_change::Config;
/// let c = Config::full();
/// assert_eq!(c.presets, ["pre", "post", "deepnorm", "sandwich", "admin"]);
/// assert_eq!((c.max_depth, c.depth_count), (10_000, 17));
/// assert_eq!(c.mc_depths, vec![4, 16, 64, 256]);
/// assert_eq!(Config::quick().mc_depths, vec![4, 16]);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
    /// Closed form: log-spaced depths from 1 to this, and the Monte Carlo depths.
    pub max_depth: usize,
    /// Closed form: how many depths.
    pub depth_count: usize,
    /// Monte Carlo depths.
    pub mc_depths: Vec<usize>,
    /// The network.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm", "sandwich", "admin"]),
            max_depth: 10_000,
            depth_count: 17,
            mc_depths: vec![4, 16, 64, 256],
            model: Model::seeds(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_depths: vec![4, 16],
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("output-change.mc_depths", &self.mc_depths)?;
        common::check_depths(
            "output-change.max_depth/depth_count",
            &[self.max_depth, self.depth_count],
        )?;
        let deepest = common::deepest(&self.mc_depths);
        common::check(&self.presets, &self.model, &self.mc, deepest)?;
        normscope_core::budget::check_closed_form(self.max_depth)?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let sweep = common::DepthSweep {
        presets: &c.presets,
        mc_presets: &c.presets,
        model: &c.model,
        mc: &c.mc,
        depths: common::depth_grid(c.max_depth, c.depth_count, &c.mc_depths),
        mc_depths: &c.mc_depths,
    };
    let (theory, mc, plot) = sweep.run(
        Metric::OutputChange,
        &format!(
            "Output change under a weight perturbation ({})",
            c.model.setting(&c.mc)?
        ),
        "E||Δf||^2 / (d ε^2)",
    )?;
    out.figure("output_change_vs_depth", &plot)?;
    out.rows("theory.csv", theory)?;
    out.rows("mc.csv", mc)
}
