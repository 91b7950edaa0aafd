//! `stream-and-gradients`: per layer l, the stream's second moment `stream_sq` q_l, the
//! mean-square gradient `grad_sq` at x_l and the mean-square gradient `weight_grad_sq` of block
//! l's last weight matrix (THEORY.md section 5), at one depth; and the first- and last-block
//! weight gradients against the depth L (Xiong et al. 2020: Post-LN's last-layer gradient does
//! not shrink with L, Pre-LN's shrinks like 1/L). Tests seeds 002/003's "Post-Norm's gradients
//! vanish near the input" and seed 002's "x_t grows as O(t)".

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use crate::Result;
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::output::figure::LinePlot;
use crate::output::latex::{self, Cell};
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "stream-and-gradients",
    about: "stream second moment, gradients and weight gradients per layer; weight gradient against L",
    prepare: |id, s| super::prepare::<Config>(id, s, run),
};

/// Configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<String>,
    /// Depth of the per-layer profiles (closed form).
    pub depth: usize,
    /// Depth of the Monte Carlo per-layer profiles.
    pub mc_depth: usize,
    /// Closed form: log-spaced depths from 1 to this, and the Monte Carlo depths (first/last
    /// weight gradient against L).
    pub max_depth: usize,
    /// Closed form: how many depths.
    pub depth_count: usize,
    /// Monte Carlo depths for the gradients against L.
    pub mc_depths: Vec<usize>,
    /// The network.
    pub model: Model,
    /// Monte Carlo settings.
    pub mc: Mc,
}

const METRICS: [Metric; 3] = [Metric::StreamSq, Metric::GradSq, Metric::WeightGradSq];

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: ["pre", "post", "deepnorm", "sandwich", "admin"]
                .map(String::from)
                .to_vec(),
            depth: 256,
            mc_depth: 256,
            max_depth: 10_000,
            depth_count: 17,
            mc_depths: vec![4, 16, 64, 256],
            model: Model::seeds(),
            mc: Mc::full(),
        }
    }

    fn quick() -> Self {
        Config {
            mc_depth: 32,
            mc_depths: vec![4, 16],
            mc: Mc::quick(),
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        common::check_depths("stream-and-gradients.mc_depths", &self.mc_depths)?;
        common::check_depths(
            "stream-and-gradients.depth/mc_depth/max_depth/depth_count",
            &[self.depth, self.mc_depth, self.max_depth, self.depth_count],
        )?;
        let deepest = common::deepest(&self.mc_depths).max(self.mc_depth);
        common::check(&self.presets, &self.model, &self.mc, deepest)?;
        crate::budget::check_closed_form(self.max_depth.max(self.depth))?;
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.mc.seed]
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let setting = c.model.setting(&c.mc)?;
    let theory = common::theory(
        &c.presets,
        &c.model.raw(c.depth, &c.mc),
        &METRICS,
        &LayerSpec::All,
    )?;
    let mc = common::monte_carlo(
        &c.presets,
        &c.model.raw(c.mc_depth, &c.mc),
        &c.mc,
        &METRICS,
        &LayerSpec::Log(24),
    )?;
    let mc_th = if c.mc_depth == c.depth {
        Vec::new()
    } else {
        common::theory(
            &c.presets,
            &c.model.raw(c.mc_depth, &c.mc),
            &METRICS,
            &LayerSpec::All,
        )?
    };
    for (m, what) in [
        (Metric::StreamSq, "q_l = E||x_l||^2 / d"),
        (Metric::GradSq, "mean-square gradient at x_l"),
        (Metric::WeightGradSq, "E||dloss/dW_l||^2 / d^2"),
    ] {
        for (stem, depth, th) in [("", c.depth, &theory), ("_mc_depth", c.mc_depth, &mc_th)] {
            if th.is_empty() {
                continue;
            }
            let mut plot = LinePlot::new(
                &format!("{} per layer at L = {depth} ({setting})", common::title(m)),
                "layer l",
                what,
            );
            plot.y_log = true;
            let mc_here: &[crate::profile::Row] = if depth == c.mc_depth { &mc } else { &[] };
            common::add_both(
                &mut plot,
                &c.presets,
                th,
                mc_here,
                m,
                common::by_layer,
                |r| r.layer >= 1,
            );
            out.figure(&format!("{}_per_layer{stem}", m.name()), &plot)?;
        }
    }

    // First and last block's weight gradient, and the gradient at x_0 and x_L, against L.
    let grads = [Metric::WeightGradSq, Metric::GradSq];
    let depths = common::depth_grid(c.max_depth, c.depth_count, &c.mc_depths);
    let mut vs_theory = Vec::new();
    for &d in &depths {
        let layers = LayerSpec::List(vec![0, 1, d]);
        vs_theory.extend(common::theory(
            &c.presets,
            &c.model.raw(d, &c.mc),
            &grads,
            &layers,
        )?);
    }
    let mut vs_mc = Vec::new();
    for &d in &c.mc_depths {
        let layers = LayerSpec::List(vec![0, 1, d]);
        vs_mc.extend(common::monte_carlo(
            &c.presets,
            &c.model.raw(d, &c.mc),
            &c.mc,
            &grads,
            &layers,
        )?);
    }
    for (stem, which, first) in [
        ("weight_grad_last_vs_depth", "last block L", false),
        ("weight_grad_first_vs_depth", "first block", true),
    ] {
        let mut plot = LinePlot::new(
            &format!("Weight gradient of the {which} at init ({setting})"),
            "depth L (residual blocks)",
            "mean-square weight gradient",
        );
        plot.y_log = true;
        let keep = move |r: &crate::profile::Row| {
            if first {
                r.layer == 1
            } else {
                r.layer == r.depth
            }
        };
        common::add_both(
            &mut plot,
            &c.presets,
            &vs_theory,
            &vs_mc,
            Metric::WeightGradSq,
            common::by_depth,
            keep,
        );
        out.figure(stem, &plot)?;
    }

    // Headline table: first/last weight-gradient ratio at each Monte Carlo depth.
    let mut table = latex::Table::new(
        format!(
            "Mean-square weight gradient of the last block, and the ratio first block / last block (closed form and Monte Carlo point estimate), at init with $g = {}$.",
            common::short(c.model.gain(&c.mc)?)
        ),
        "tab:weight-grad",
        &["preset", "$L$", "last block", "closed form", "MC"],
    );
    table.spans = vec![("first/last".into(), 3, 2)];
    for p in &c.presets {
        for &d in &c.mc_depths {
            let th = common::theory(
                std::slice::from_ref(p),
                &c.model.raw(d, &c.mc),
                &grads,
                &LayerSpec::List(vec![1, d]),
            )?;
            table.row(vec![
                Cell::Text(common::tex_label(p)),
                Cell::Int(d as i64),
                Cell::opt(common::value(&th, p, Metric::WeightGradSq, d, d, None)),
                Cell::opt(common::weight_grad_ratio(&th, p, d)),
                Cell::opt(common::weight_grad_ratio(&vs_mc, p, d)),
            ]);
        }
    }
    table.write(out, "weight_grad")?;
    out.rows("theory.csv", theory)?;
    out.rows("mc.csv", mc)?;
    out.rows("vs_depth_theory.csv", vs_theory)?;
    out.rows("vs_depth_mc.csv", vs_mc)
}
