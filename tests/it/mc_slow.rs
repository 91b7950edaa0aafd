//! Large cases, opt-in: `cargo test --release -- --include-ignored` (what `.ci/run` runs).

use crate::common::disagreements;
use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::model::RawModel;
use normscope::monte_carlo::{McConfig, RawMc};

/// The slow cases run one at a time ([`crate::common::exclusive`]): the depth-1000 case alone
/// holds about 17 GB (two 1000-block networks with every weight and its gradient), and the
/// memory check (`normscope::budget`) refuses a run that the memory then available cannot
/// hold. Running them side by side would make that check, or the machine, fail by timing.
fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    crate::common::exclusive()
}

#[test]
#[ignore = "slow: 1000-block networks at d = 256, every metric (about 30 s in release)"]
fn depth_one_thousand_every_metric_is_finite() {
    let _serial = exclusive();
    // DeepNet scale. path_len/eff_depth use the factorized estimator beyond --path-max 256.
    let raw = RawModel {
        depth: 1000,
        width: 256,
        tokens: 8,
        branch: "relu-mlp".into(),
        ..RawModel::default()
    };
    let cfg = McConfig::new(
        &raw,
        &RawMc {
            samples: 2,
            ..RawMc::default()
        },
    )
    .unwrap();
    let presets = normscope::model::parse_presets("pre,post,deepnorm").unwrap();
    let rows = normscope::tables::mc_rows(
        &presets,
        &cfg,
        Metric::ALL,
        &LayerSpec::Log(8),
        &mut Vec::new(),
    )
    .unwrap();
    for &m in Metric::ALL {
        assert!(rows.iter().any(|r| r.metric == m), "no {}", m.name());
    }
    for r in &rows {
        assert!(
            r.value.is_finite() && r.stderr.unwrap().is_finite(),
            "{} {} layer {}",
            r.preset,
            r.metric,
            r.layer
        );
    }
}

#[test]
#[ignore = "slow: factorized path estimator against the closed form (about 10 s)"]
fn factorized_path_estimator_agrees_with_the_closed_form() {
    let _serial = exclusive();
    // --path-max 4 on a 24-block stack forces the factorized estimator (per-network
    // Poisson-binomial of measured p_l); it must still agree with the closed form.
    let raw = RawModel {
        depth: 24,
        width: 256,
        tokens: 16,
        branch: "relu-mlp".into(),
        ..RawModel::default()
    };
    let mc = RawMc {
        samples: 16,
        eps: 0.0,
        path_max: 4,
        ..RawMc::default()
    };
    let metrics = Metric::parse_list("eff_depth,path_len").unwrap();
    for p in ["pre", "post", "deepnorm"] {
        let bad = disagreements(p, &raw, mc.clone(), &metrics, &LayerSpec::Log(5));
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

#[test]
#[ignore = "slow: agreement at d = 512, 32 blocks, 32 networks, every metric (about 2 min)"]
fn wide_deep_agreement() {
    let _serial = exclusive();
    let raw = RawModel {
        depth: 32,
        width: 512,
        tokens: 16,
        branch: "relu-mlp".into(),
        ..RawModel::default()
    };
    let mc = RawMc {
        samples: 32,
        eps: 0.0,
        ..RawMc::default()
    };
    for p in ["pre", "post", "deepnorm", "admin"] {
        let bad = disagreements(p, &raw, mc.clone(), Metric::ALL, &LayerSpec::Log(6));
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}
