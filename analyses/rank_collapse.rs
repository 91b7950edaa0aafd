//! `rank-collapse`: the correlation `corr` between two tokens against the layer, with attention
//! branches (docs/theory.md, "The metrics": rank collapse). Closed form with uniform attention; Monte
//! Carlo with softmax attention (random W_Q, W_K) and with uniform attention (W_Q = W_K = 0).

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
    id: "rank-collapse",
    about: "token correlation against depth with attention branches (rank collapse)",
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
/// use normscope_analyses::rank_collapse::Config;
/// let c = Config::full();
/// assert_eq!((c.depth, c.init.as_str()), (64, "xavier"));
/// assert_eq!(c.norm, normscope_core::spec::NormKind::Layer);
/// assert_eq!(Config::quick().depth, 16);
/// assert_eq!((c.mc.width, c.mc.tokens, c.mc.samples), (128, 16, 32));
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
    /// Depth (both engines).
    pub depth: usize,
    /// Init scheme.
    pub init: String,
    /// Norm.
    pub norm: normscope_core::spec::NormKind,
    /// Monte Carlo settings.
    pub mc: Mc,
}

impl Config {
    fn model(&self, branch: &str) -> Model {
        Model::new(branch, &self.init, self.norm)
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm", "sandwich"]),
            depth: 64,
            init: "xavier".into(),
            norm: normscope_core::spec::NormKind::Layer,
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
        common::check_depths("rank-collapse.depth", &[self.depth])?;
        common::check(
            &self.presets,
            &self.model("attention"),
            &self.mc,
            self.depth,
        )?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let m = [Metric::Corr];
    let uniform = c.model("uniform-attention");
    let theory = common::theory(
        &c.presets,
        &uniform.raw(c.depth, &c.mc),
        &m,
        &LayerSpec::All,
    )?;
    let softmax = c.model("attention");
    let mc_soft = common::monte_carlo(
        &c.presets,
        &softmax.raw(c.depth, &c.mc),
        &c.mc,
        &m,
        &LayerSpec::Log(16),
    )?;
    let mc_unif = common::monte_carlo(
        &c.presets,
        &uniform.raw(c.depth, &c.mc),
        &c.mc,
        &m,
        &LayerSpec::Log(16),
    )?;
    for (stem, mc, what) in [
        ("corr_softmax", &mc_soft, "softmax attention"),
        ("corr_uniform", &mc_unif, "uniform attention"),
    ] {
        let mut plot = LinePlot::new(
            &format!("Token correlation, {what} (MC) vs uniform closed form"),
            "layer l",
            "correlation of two tokens c_l",
        );
        plot.x_log = false;
        common::add_both(
            &mut plot,
            &c.presets,
            &theory,
            mc,
            Metric::Corr,
            common::by_layer,
            |_| true,
        );
        out.figure(stem, &plot)?;
    }
    out.rows("theory.csv", theory)?;
    out.rows("mc_softmax.csv", mc_soft)?;
    out.rows("mc_uniform.csv", mc_unif)
}
