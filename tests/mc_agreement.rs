//! Closed form against Monte Carlo for every preset, linear and ReLU-MLP branches, at width
//! d = 256: stream_sq, corr, branch_weight, skip_gain, branch_gain, grad_sq and eff_depth at
//! every layer of an 8-block stack must agree within the 95% CI of 16 networks plus the
//! finite-width allowance stated in `normscope::monte_carlo::allowance` (twice the norms'
//! leading-order rank deficiency plus 2/d). Seed 0, not tuned.

use normscope::config::RawModel;
use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::monte_carlo::{McConfig, RawMc};
use normscope::run;

fn agree(preset: &str, branch: &str) {
    let raw = RawModel {
        depth: 8,
        branch: branch.into(),
        width: 256,
        tokens: 16,
        lambda: (preset == "rezero").then_some(0.5),
        ..RawModel::default()
    };
    let cfg = McConfig::new(
        &raw,
        &RawMc {
            samples: 16,
            eps: 0.0,
            ..RawMc::default()
        },
    )
    .unwrap();
    let metrics =
        Metric::parse_list("stream_sq,corr,branch_weight,skip_gain,branch_gain,grad_sq,eff_depth")
            .unwrap();
    let rows = run::compare(&[preset.to_string()], &cfg, &metrics, &LayerSpec::All).unwrap();
    // Every metric has rows at every layer where it is defined.
    for m in &metrics {
        assert!(
            rows.iter().any(|r| r.metric == m.name()),
            "{preset} {branch}: no {}",
            m.name()
        );
    }
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !r.agree)
        .map(|r| {
            format!(
                "{} l={} s={:?}: theory {} mc {} [{}, {}] allowance {}",
                r.metric,
                r.layer,
                r.source,
                r.theory,
                r.mc.value,
                r.mc.ci_low.unwrap(),
                r.mc.ci_high.unwrap(),
                r.allowance
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{preset} {branch}: {} of {} disagree:\n{}",
        bad.len(),
        rows.len(),
        bad.join("\n")
    );
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
