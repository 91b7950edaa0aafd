//! `stream-and-gradients`: per layer l, the stream's second moment `stream_sq` q_l, the
//! mean-square gradient `grad_sq` at x_l and the mean-square gradient `weight_grad_sq` of block
//! l's last weight matrix (docs/theory.md, "The metrics"), at one depth; and the first- and last-block
//! weight gradients against the depth L (Xiong et al. 2020: Post-LN's last-layer gradient does
//! not shrink with L, Pre-LN's shrinks like 1/L). Tests seeds 002/003's "Post-Norm's gradients
//! vanish near the input" and seed 002's "x_t grows as O(t)".
//!
//! Encoder-decoder stacks ([`BRANCHES_TABLE`], closed form only): the same first- and last-block
//! gradients against L with the branch replaced by self-attention in its uniform limit
//! (`uniform-attention`, `W_Q = W_K = 0`: the closed form has no softmax attention) and by
//! cross-attention (encoder-decoder attention to a
//! fixed memory, whose output does not depend on the stream; Liu et al. 2020, arXiv:2004.08249,
//! show Post-LN's gradient vanishing toward the input through it). In Post-LN a cross-attention
//! block's backward map is the norm's Jacobian alone (docs/theory.md, "Branches": `g_b = 0`), which
//! scales the mean-square gradient by `1/(1+g)` per block (section 4: the norm divides by the
//! root of `q = 1 + g`), so the first/last weight-gradient ratio is `(1+g)^-(L-1)`. The closed
//! form has no mixed stacks (one branch kind per stack), so a decoder's alternation of self-,
//! cross-attention and MLP blocks is not tabulated; the Monte Carlo agreement suite already
//! checks cross-attention on every metric, so this table has no Monte Carlo twin.

use super::common::{self, Mc, Model};
use super::{Analysis, Out};
use normscope_core::branch::BranchKind;
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::output::latex::{self, Cell};
use normscope_core::placement::Preset;
use normscope_core::profile::Row;
use normscope_core::{Error, Result};
use normscope_figure::LinePlot;
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "stream-and-gradients",
    about: "stream second moment, gradients and weight gradients per layer; weight gradient against L",
    claims: &[2, 4, 5, 6],
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
/// use normscope_analyses::stream_gradients::Config;
/// let c = Config::full();
/// assert_eq!((c.depth, c.mc_depth, c.max_depth, c.depth_count), (256, 256, 10_000, 17));
/// assert_eq!(c.branches, ["uniform-attention", "cross-attention"]);
/// assert_eq!(c.branch_tokens, 16);
/// assert_eq!(Config::quick().mc_depth, 32);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets.
    pub presets: Vec<&'static Preset>,
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
    /// Branches of the encoder-decoder table [`BRANCHES_TABLE`] (closed form, with the model's
    /// init and norm): self-attention `uniform-attention` and `cross-attention`.
    pub branches: Vec<String>,
    /// Tokens n of [`Config::branches`] (and of the cross-attention memory), the same in the
    /// quick and full runs so that the table (and the ledger's claim 4) is too. With
    /// independent memory tokens (`c0 = 0`) cross-attention's gain is `g = 1/n`.
    pub branch_tokens: usize,
}

/// The encoder-decoder table: `grad_sq` and `weight_grad_sq` at layers 0, 1 and L for every
/// preset, branch of [`Config::branches`] and closed-form depth (the `branch` column tells the
/// branches apart).
pub const BRANCHES_TABLE: &str = "branches_theory.csv";

const METRICS: [Metric; 3] = [Metric::StreamSq, Metric::GradSq, Metric::WeightGradSq];

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm", "sandwich", "admin"]),
            depth: 256,
            mc_depth: 256,
            max_depth: 10_000,
            depth_count: 17,
            mc_depths: vec![4, 16, 64, 256],
            model: Model::seeds(),
            mc: Mc::full(),
            branches: ["uniform-attention", "cross-attention"]
                .map(String::from)
                .to_vec(),
            branch_tokens: 16,
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
        normscope_core::budget::check_closed_form(self.max_depth.max(self.depth))?;
        for b in &self.branches {
            BranchKind::parse_closed_form(b).map_err(|_| {
                Error::invalid(
                    "stream-and-gradients.branches",
                    b,
                    format!("branches with a closed form: {}", BranchKind::names(true)),
                )
            })?;
        }
        if self.branch_tokens == 0 {
            return Err(Error::invalid(
                "stream-and-gradients.branch_tokens",
                0,
                "an integer >= 1",
            ));
        }
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
            let mc_here: &[Row] = if depth == c.mc_depth { &mc } else { &[] };
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
    let vs_theory = first_last_theory(&c.presets, &c.model, &c.mc, &depths)?;
    let branch_mc = Mc {
        tokens: c.branch_tokens,
        ..c.mc.clone()
    };
    let mut branches = Vec::new();
    for b in &c.branches {
        let model = Model::new(b, &c.model.init, c.model.norm);
        branches.extend(first_last_theory(&c.presets, &model, &branch_mc, &depths)?);
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
            "mean-sq. weight gradient",
        );
        plot.y_log = true;
        let keep = move |r: &Row| {
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
                Cell::opt(common::value(&th, p.name, Metric::WeightGradSq, d, d, None)),
                Cell::opt(common::weight_grad_ratio(&th, p.name, d)),
                Cell::opt(common::weight_grad_ratio(&vs_mc, p.name, d)),
            ]);
        }
    }
    out.latex(&table, "weight_grad")?;
    out.rows("theory.csv", theory)?;
    out.rows("mc.csv", mc)?;
    out.rows("vs_depth_theory.csv", vs_theory)?;
    out.rows(BRANCHES_TABLE, branches)?;
    out.rows("vs_depth_mc.csv", vs_mc)
}

/// Closed-form `weight_grad_sq` and `grad_sq` at layers 0, 1 and L of `presets` at each depth
/// L of `depths` (the first/last ratio is `weight_grad_sq` at 1 over at L).
fn first_last_theory(
    presets: &[&'static Preset],
    model: &Model,
    mc: &Mc,
    depths: &[usize],
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &d in depths {
        rows.extend(common::theory(
            presets,
            &model.raw(d, mc),
            &[Metric::WeightGradSq, Metric::GradSq],
            &LayerSpec::List(vec![0, 1, d]),
        )?);
    }
    Ok(rows)
}
