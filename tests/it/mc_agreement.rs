//! Closed form against Monte Carlo at width d = 256 (seed 0, not tuned). Agreement means the
//! closed form lies in the 95% CI over 16 networks widened by the finite-width allowance
//! stated in `normscope::monte_carlo::allowance` (twice the norms' leading-order rank
//! deficiency plus 2/d; on the squared scale for rel_update and angular_dist).

use crate::common::disagreements;
use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::model::RawModel;
use normscope::monte_carlo::RawMc;

fn sampling() -> RawMc {
    RawMc {
        samples: 16,
        eps: 0.0,
        ..RawMc::default()
    }
}

/// Every preset, linear and ReLU-MLP branches: stream_sq, corr, branch_weight, skip_gain,
/// branch_gain, grad_sq and eff_depth at every layer of an 8-block stack.
fn agree(preset: &str, branch: &str) {
    let raw = RawModel {
        depth: 8,
        branch: branch.into(),
        width: 256,
        tokens: 16,
        lambda: (preset == "rezero").then_some(0.5),
        ..RawModel::default()
    };
    let metrics =
        Metric::parse_list("stream_sq,corr,branch_weight,skip_gain,branch_gain,grad_sq,eff_depth")
            .unwrap();
    let bad = disagreements(preset, &raw, sampling(), &metrics, &LayerSpec::All);
    assert!(bad.is_empty(), "{branch}:\n{}", bad.join("\n"));
}

macro_rules! agreement {
    ($($name:ident: $preset:expr,)*) => {
        mod linear {
            $(#[test] fn $name() { super::agree($preset, "linear"); })*
        }
        mod relu_mlp {
            $(#[test] fn $name() { super::agree($preset, "relu-mlp"); })*
        }
    };
}

agreement! {
    pre: "pre",
    post: "post",
    deepnorm: "deepnorm",
    deepnorm_ed_enc: "deepnorm-ed-enc",
    deepnorm_ed_dec: "deepnorm-ed-dec",
    sandwich: "sandwich",
    lns: "lns",
    admin: "admin",
    mixln: "mixln",
    rezero: "rezero",
}

/// Every metric the closed form has, for the branches beyond the required two (GELU MLP,
/// uniform attention, cross-attention), correlated tokens (c0 = 0.2) and three placements.
fn agree_all_metrics(preset: &str, branch: &str) {
    let raw = RawModel {
        depth: 6,
        branch: branch.into(),
        width: 256,
        tokens: 16,
        c0: 0.2,
        ..RawModel::default()
    };
    let bad = disagreements(preset, &raw, sampling(), Metric::ALL, &LayerSpec::All);
    assert!(bad.is_empty(), "{branch}:\n{}", bad.join("\n"));
}

macro_rules! all_metrics {
    ($($name:ident: $preset:expr, $branch:expr;)*) => {
        mod all_metrics {
            $(#[test] fn $name() { super::agree_all_metrics($preset, $branch); })*
        }
    };
}

all_metrics! {
    pre_gelu: "pre", "gelu-mlp";
    post_gelu: "post", "gelu-mlp";
    pre_uniform_attention: "pre", "uniform-attention";
    post_uniform_attention: "post", "uniform-attention";
    sandwich_uniform_attention: "sandwich", "uniform-attention";
    pre_cross_attention: "pre", "cross-attention";
    post_cross_attention: "post", "cross-attention";
}
