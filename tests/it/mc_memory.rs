//! Streaming a network block by block (its weights regenerated from the generator saved before
//! their draws, each block's forward step recomputed from its stored input) gives the same
//! bits as holding it whole, in both precisions, for every preset, branch and metric; and
//! an f32 run moves every metric by far less than the finite-width allowance the comparisons
//! already grant (printed per metric).

use normscope::engine::Plan;
use normscope::layers::LayerSpec;
use normscope::metrics::{Metric, allowance::allowance};
use normscope::model::{FinalNorm, RawModel};
use normscope::monte_carlo::measure::{Memory, NetworkPlan};
use normscope::monte_carlo::{McConfig, Precision, RawMc, measure_network_with};
use normscope::spec::NormKind;

fn config(branch: &str, norm: NormKind, precision: Precision, depth: usize) -> McConfig {
    let raw = RawModel {
        depth,
        branch: branch.into(),
        width: 16,
        tokens: 4,
        c0: 0.3,
        norm,
        final_norm: FinalNorm::On,
        gain: Some(1.5),
        ..RawModel::default()
    };
    let mc = RawMc {
        heads: 2,
        precision,
        path_max: 8,
        ..RawMc::default()
    };
    McConfig::new(&raw, &mc).unwrap()
}

fn plan(depth: usize) -> NetworkPlan {
    let plan = Plan::new(Metric::ALL, LayerSpec::All);
    let mut selected = vec![false; depth + 1];
    for l in plan.resolve(depth).unwrap() {
        selected[l] = true;
    }
    NetworkPlan {
        metrics: Metric::ALL.to_vec(),
        selected,
        path_max: 8,
    }
}

#[test]
fn streamed_networks_match_held_ones_bit_for_bit() {
    let mut checked = 0;
    for p in normscope::placement::REGISTRY {
        for b in normscope::branch::BranchKind::ALL {
            for precision in Precision::ALL {
                // Depth 6 runs the exact path polynomial, depth 10 the factorized law.
                for depth in [6, 10] {
                    let cfg = config(b.name(), NormKind::Layer, precision, depth);
                    let spec = cfg.model.stack(p).unwrap();
                    let plan = plan(depth);
                    for index in 0..2 {
                        let held = measure_network_with(&spec, &cfg, &plan, index, Memory::Held);
                        let streamed =
                            measure_network_with(&spec, &cfg, &plan, index, Memory::Streamed);
                        assert_eq!(held.len(), streamed.len(), "{} {}", p.name, b.name());
                        for (k, v) in &held {
                            assert_eq!(
                                v.to_bits(),
                                streamed[k].to_bits(),
                                "{} {} {} L={depth} {k:?}: held {v} streamed {}",
                                p.name,
                                b.name(),
                                precision.name(),
                                streamed[k]
                            );
                        }
                        checked += held.len();
                    }
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

/// The f32 run's distance from the f64 one, as a share of the finite-width allowance
/// (`normscope::metrics::allowance`), must stay below this: f32 rounding is not allowed to
/// use up more than 1% of what the comparisons with the closed form already grant.
const F32_SHARE_OF_ALLOWANCE: f64 = 0.01;

/// Relative distance allowed between an f32 and an f64 value above [`F32_RELATIVE_FLOOR`]:
/// f32's unit roundoff 6e-8, accumulated over up to 32 blocks of a few products each, with a
/// factor 10 of margin for cancellation in differences of nearby values.
const F32_RELATIVE: f64 = 1e-4;

/// Values below this (absolute) are compared on the allowance alone: shares of tiny path
/// classes and near-zero correlations have no meaningful relative error.
const F32_RELATIVE_FLOOR: f64 = 1e-6;

#[test]
fn f32_moves_every_metric_far_less_than_the_finite_width_allowance() {
    // Same networks in both precisions (the f32 weights are the f64 ones rounded), so the
    // difference is rounding alone; width 64 and depth 32 on three norm placements.
    let mut worst: std::collections::BTreeMap<Metric, (f64, f64)> = Default::default();
    for (p, b) in [
        ("pre", "relu-mlp"),
        ("post", "relu-mlp"),
        ("deepnorm", "linear"),
    ] {
        let (depth, width) = (32, 64);
        let mk = |precision| {
            let raw = RawModel {
                depth,
                branch: b.into(),
                width,
                tokens: 8,
                ..RawModel::default()
            };
            let mc = RawMc {
                precision,
                ..RawMc::default()
            };
            McConfig::new(&raw, &mc).unwrap()
        };
        let (c64, c32) = (mk(Precision::F64), mk(Precision::F32));
        let spec = c64
            .model
            .stack(normscope::placement::find(p).unwrap())
            .unwrap();
        let plan = plan(depth);
        for index in 0..2 {
            let a = measure_network_with(&spec, &c64, &plan, index, Memory::Auto);
            let s = measure_network_with(&spec, &c32, &plan, index, Memory::Auto);
            let keys =
                |t: &normscope::monte_carlo::measure::Values| t.keys().copied().collect::<Vec<_>>();
            assert_eq!(keys(&a), keys(&s), "{p} {b}: the same values measured");
            for (k @ (m, l, _), v) in &a {
                let w = s[k];
                assert!(v.is_finite() && w.is_finite(), "{p} {b} {k:?}: {v} {w}");
                let allowed = allowance(&spec, *m, *l, *v, width);
                let share = (v - w).abs() / allowed;
                let rel = if v.abs() > F32_RELATIVE_FLOOR {
                    (v - w).abs() / v.abs()
                } else {
                    0.0
                };
                let e = worst.entry(*m).or_default();
                *e = (e.0.max(share), e.1.max(rel));
            }
        }
    }
    eprintln!("metric: max |f32 - f64| / allowance, max relative |f32 - f64| (values > 1e-6)");
    for (m, (share, rel)) in &worst {
        eprintln!("{:>16}: {share:.2e}  {rel:.2e}", m.name());
    }
    for (m, (share, rel)) in &worst {
        assert!(
            *share < F32_SHARE_OF_ALLOWANCE,
            "{}: f32 moved it by {share} of the allowance",
            m.name()
        );
        assert!(
            *rel < F32_RELATIVE,
            "{}: f32 moved it by {rel} relative",
            m.name()
        );
    }
    assert_eq!(worst.len(), Metric::ALL.len(), "every metric compared");
}
