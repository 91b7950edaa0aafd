//! `placement-file`: a placement defined in a file rather than in Rust
//! (`examples/placements/depth-mup.toml`, shipped with the crate and embedded at build time):
//! Pre-Norm with every branch multiplied by `1/sqrt(L)` (Depth-muP's depth scaling). Its
//! effective depth relative to L, `eff_depth / L`, against L next to Pre-Norm and Post-Norm:
//! closed form up to 10^6 and Monte Carlo at a few depths. docs/placements.md
//! shows the figure; the manifest records the file's sha256 among the inputs.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::Result;
use normscope_core::metrics::Metric;
use normscope_core::placement::Preset;
use normscope_core::profile::EngineKind;
use normscope_figure::{LinePlot, MC_COLOR, Series};
use serde::{Deserialize, Serialize};

/// The placement file, relative to the crate root.
pub const FILE: &str = "examples/placements/depth-mup.toml";

/// Its text, embedded at build time.
pub(crate) const TEXT: &str = include_str!("../examples/placements/depth-mup.toml");

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "placement-file",
    about: "a placement from a file (examples/placements/depth-mup.toml): eff_depth/L against L next to pre and post",
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
/// use normscope_analyses::placement_file::Config;
/// Config::setup()?; // loads depth-mup from the embedded file
/// let c = Config::full();
/// assert_eq!(c.presets.iter().map(|p| p.name).collect::<Vec<_>>(), ["pre", "post", "depth-mup"]);
/// assert_eq!((c.max_depth, c.depth_count), (1_000_000, 25));
/// assert_eq!(Config::quick().mc_depths, vec![4, 16]);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (closed form and Monte Carlo); `depth-mup` comes from [`FILE`].
    pub presets: Vec<&'static Preset>,
    /// Closed form: log-spaced depths from 1 to this.
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
    fn setup() -> Result<()> {
        normscope_core::placement::load_text(TEXT, FILE).map(drop)
    }

    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "depth-mup"]),
            max_depth: 1_000_000,
            depth_count: 25,
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
        common::check_depths("placement-file.mc_depths", &self.mc_depths)?;
        common::check_depths(
            "placement-file.max_depth/depth_count",
            &[self.max_depth, self.depth_count],
        )?;
        common::check(
            &self.presets,
            &self.model,
            &self.mc,
            common::deepest(&self.mc_depths),
        )?;
        normscope_core::budget::check_closed_form(self.max_depth)
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    out.input_bytes(FILE, TEXT.as_bytes());
    let m = [Metric::EffDepth];
    let depths = common::depth_grid(c.max_depth, c.depth_count, &c.mc_depths);
    let theory = common::vs_depth(EngineKind::Theory, &c.presets, &c.model, &c.mc, &depths, &m)?;
    let mc = common::vs_depth(
        EngineKind::Mc,
        &c.presets,
        &c.model,
        &c.mc,
        &c.mc_depths,
        &m,
    )?;
    let mut plot = LinePlot::new(
        &format!("Effective depth per block ({})", c.model.setting(&c.mc)?),
        "depth L (residual blocks)",
        "effective depth / L",
    );
    plot.y_log = true;
    // (L, eff_depth / L, CI / L) per preset: closed form as lines, Monte Carlo as points.
    let per_block = |rows: &[normscope_core::profile::Row], p: &str| {
        common::points(rows, p, Metric::EffDepth, common::by_depth, |_| true)
            .into_iter()
            .map(|(l, v, lo, hi)| (l, v / l, lo / l, hi / l))
            .collect::<Vec<_>>()
    };
    for (i, p) in c.presets.iter().enumerate() {
        let th = per_block(&theory, p.name);
        plot.series.push(Series::line(
            p.label,
            i,
            th.iter().map(|q| (q.0, q.1)).collect(),
        ));
        plot.series
            .push(Series::points("", i, &per_block(&mc, p.name)));
    }
    if !mc.is_empty() {
        plot.series
            .push(Series::points("Monte Carlo, 95% CI", MC_COLOR, &[]));
    }
    out.figure("eff_depth_per_block", &plot)?;
    out.rows("theory.csv", theory)?;
    out.rows("mc.csv", mc)
}
