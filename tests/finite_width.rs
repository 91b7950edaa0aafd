//! The leading finite-width correction (`theory --finite-width d`,
//! `src/theory/finite_width.rs`) against the Monte Carlo engine at the same width.
//!
//! Tolerance, stated before the runs: the Monte Carlo mean's 99.7% interval (3 standard
//! errors; fixed seeds) plus the neglected second-order terms,
//! [`finite_width::allowance`] = `SECOND_ORDER (L + 2)/d^2` of the value (its docs say why).
//!
//! The test also asserts that the uncorrected closed form lies outside that band for the
//! deepest stacks, so that it checks the correction and not only the band's width.

use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::model::{RawModel, TheoryConfig};
use normscope::monte_carlo::{McConfig, RawMc};
use normscope::spec::NormKind;
use normscope::tables;
use normscope::theory::finite_width;

struct Case {
    preset: &'static str,
    norm: NormKind,
    width: usize,
    depth: usize,
}

/// (metric, layer) -> (mc, stderr, corrected, uncorrected).
fn run(c: &Case) -> Vec<(Metric, u64, f64, f64, f64, f64)> {
    let raw = RawModel {
        depth: c.depth,
        width: c.width,
        tokens: 8,
        norm: c.norm,
        ..RawModel::default()
    };
    let metrics = [Metric::GradSq, Metric::WeightGradSq];
    let layers = LayerSpec::parse("0,1").unwrap();
    let mc_cfg = McConfig::new(
        &raw,
        &RawMc {
            samples: 600,
            eps: 0.0,
            seed: 7,
            ..RawMc::default()
        },
    )
    .unwrap();
    let mc = tables::mc_rows(
        &[c.preset.into()],
        &mc_cfg,
        &metrics,
        &layers,
        &mut Vec::new(),
    )
    .unwrap();
    let theory = |fw: Option<usize>| {
        let cfg = TheoryConfig::new(c.preset, &raw, "grad_sq,weight_grad_sq", "0,1")
            .unwrap()
            .with_finite_width(fw)
            .unwrap();
        tables::theory_rows(&cfg, &mut Vec::new()).unwrap()
    };
    let (fw, plain) = (theory(Some(c.width)), theory(None));
    mc.iter()
        .map(|m| {
            let find = |rows: &[normscope::profile::Row]| {
                rows.iter()
                    .find(|r| r.metric == m.metric && r.layer == m.layer)
                    .expect("a closed-form row")
                    .value
            };
            (
                m.metric,
                m.layer,
                m.value,
                m.stderr.unwrap(),
                find(&fw),
                find(&plain),
            )
        })
        .collect()
}

fn band(c: &Case, mc: f64, se: f64) -> f64 {
    3.0 * se + finite_width::allowance(mc, c.depth, c.width)
}

fn check(c: Case, uncorrected_outside: bool) {
    for (metric, layer, mc, se, fw, plain) in run(&c) {
        let what = format!(
            "{} {:?} d={} L={} {} l={layer}: mc {mc} ± {se}, corrected {fw}, closed form {plain}",
            c.preset,
            c.norm,
            c.width,
            c.depth,
            metric.name()
        );
        let b = band(&c, mc, se);
        assert!((fw - mc).abs() <= b, "corrected outside the band: {what}");
        if uncorrected_outside {
            assert!(
                (plain - mc).abs() > b,
                "uncorrected inside the band: {what}"
            );
        }
    }
}

#[test]
fn post_layer_norm() {
    check(
        Case {
            preset: "post",
            norm: NormKind::Layer,
            width: 64,
            depth: 16,
        },
        false,
    );
    check(
        Case {
            preset: "post",
            norm: NormKind::Layer,
            width: 64,
            depth: 64,
        },
        true,
    );
}

#[test]
fn post_rms_norm() {
    check(
        Case {
            preset: "post",
            norm: NormKind::Rms,
            width: 64,
            depth: 64,
        },
        true,
    );
}

#[test]
fn deepnorm_and_admin() {
    // DeepNorm's effective gain g beta^2/alpha^2 and Admin's g/omega_l^2 shrink with depth,
    // so their corrections are small; the band must still hold.
    for preset in ["deepnorm", "admin"] {
        check(
            Case {
                preset,
                norm: NormKind::Layer,
                width: 64,
                depth: 64,
            },
            false,
        );
    }
}

#[test]
fn pre_norm_is_left_uncorrected_with_a_note() {
    let raw = RawModel {
        depth: 8,
        ..RawModel::default()
    };
    let cfg = TheoryConfig::new("pre,post", &raw, "grad_sq,eff_depth", "0")
        .unwrap()
        .with_finite_width(Some(64))
        .unwrap();
    let mut notes = Vec::new();
    let rows = tables::theory_rows(&cfg, &mut notes).unwrap();
    let engine = |p: &str, m: Metric| {
        rows.iter()
            .find(|r| r.preset == p && r.metric == m)
            .unwrap()
            .engine
            .name()
    };
    assert_eq!(engine("pre", Metric::GradSq), "theory");
    assert_eq!(engine("post", Metric::GradSq), "theory-fw");
    assert_eq!(engine("post", Metric::EffDepth), "theory");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("pre is written uncorrected"))
    );
    assert!(notes.iter().any(|n| n.contains("eff_depth")));
    assert!(
        TheoryConfig::new("post", &raw, "grad_sq", "0")
            .unwrap()
            .with_finite_width(Some(4))
            .is_err()
    );
}
