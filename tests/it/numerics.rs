//! Numerics at scale: depth 10^6 in the closed form stays finite for every preset (products
//! over depth go through log space), and values that would leave f64 are reported, not
//! written.

use crate::common::*;
use normscope::model::{RawModel, TheoryConfig};
use normscope::placement::REGISTRY;
use normscope::tables;

#[test]
fn depth_one_million_is_finite_for_every_preset() {
    let raw = seeds_model(1_000_000);
    for p in REGISTRY {
        let cfg = TheoryConfig::new(p.name, &raw, "all", "log:6").unwrap();
        let mut notes = Vec::new();
        let rows = tables::theory_rows(&cfg, &mut notes).unwrap();
        assert!(!rows.is_empty());
        for r in &rows {
            // merge_error is NaN only where the next branch output is zero (ReZero); a
            // coefficient or branch weight below f64's smallest number is a missing cell
            // whose reason carries its exact log.
            let ok = r.value.is_finite()
                || (r.metric == normscope::metrics::Metric::MergeError && p.name == "rezero")
                || underflow_with_exact_log(r);
            assert!(
                ok,
                "{} {} layer {}: {} ({:?})",
                p.name, r.metric, r.layer, r.value, r.missing
            );
        }
        // The newest source of the last layer is always in range.
        let last = rows
            .iter()
            .filter(|r| r.metric == normscope::metrics::Metric::Coef)
            .max_by_key(|r| (r.layer, r.source));
        if let Some(r) = last {
            assert!(r.value.is_finite(), "{} {r:?}", p.name);
        }
        // path_len beyond its exact-law limit is skipped with a note, never silently.
        assert!(notes.iter().any(|n| n.contains("path_len")), "{notes:?}");
    }
}

#[test]
fn deep_closed_forms_match_hand_values() {
    // Post (g = 1): eff_depth = L/2; Pre (g = 1, q0 = 1): q_L = 1 + L, grad at x_L = 1/(1+L)
    // through the final Norm; DeepNorm with a linear branch: p_l = 1/(2L + 1), so
    // eff_depth = L/(2L+1).
    let l = 1_000_000u64;
    let t = |p: &str| {
        let cfg = TheoryConfig::new(
            p,
            &seeds_model(l as usize),
            "stream_sq,grad_sq,eff_depth",
            "last",
        )
        .unwrap();
        tables::theory_rows(&cfg, &mut Vec::new())
            .unwrap()
            .into_iter()
            .map(|r| (r.metric.name(), r.value))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let lf = l as f64;
    assert_close(
        t("post")["eff_depth"],
        lf / 2.0,
        normscope::tolerance::DEPTH_MILLION,
        "post eff",
    );
    assert_close(
        t("pre")["stream_sq"],
        1.0 + lf,
        normscope::tolerance::DEPTH_MILLION,
        "pre q_L",
    );
    assert_close(
        t("pre")["grad_sq"],
        1.0 / (1.0 + lf),
        normscope::tolerance::DEPTH_MILLION,
        "pre r_L",
    );
    assert_close(
        t("deepnorm")["eff_depth"],
        lf / (2.0 * lf + 1.0),
        normscope::tolerance::DEPTH_MILLION,
        "deepnorm eff",
    );
}

#[test]
fn overflow_is_written_as_missing_with_its_reason_not_as_a_number() {
    // ReZero with lambda = 1 and no norm doubles q every block: q_2000 = 2^2000 is beyond f64;
    // its log is exact, so the reason gives the power of ten: 2000 log10(2) = 602.06.
    let raw = RawModel {
        lambda: Some(1.0),
        ..seeds_model(2000)
    };
    let cfg = TheoryConfig::new("rezero", &raw, "stream_sq", "last").unwrap();
    let mut notes = Vec::new();
    let rows = tables::theory_rows(&cfg, &mut notes).unwrap();
    assert_eq!(rows.len(), 1);
    let reason = rows[0].missing.as_deref().expect("q_2000 is missing");
    assert!(
        reason.starts_with("overflow: e^") && reason.contains("10^602.1"),
        "{reason}"
    );
    assert!(rows[0].finite().is_none());
    assert!(
        notes
            .iter()
            .any(|n| n.contains("rezero: 1 value(s) written as missing")),
        "{notes:?}"
    );
    // The ratios stay finite: branch weights are still computed in log space, so the newest
    // ones are numbers; the oldest, 2^-2000 relative to the newest, fall below f64 and are
    // missing with their exact log, never written as 0.
    let cfg = TheoryConfig::new("rezero", &raw, "branch_weight,eff_depth", "last").unwrap();
    let rows = tables::theory_rows(&cfg, &mut Vec::new()).unwrap();
    assert!(
        rows.iter()
            .all(|r| r.value.is_finite() || underflow_with_exact_log(r))
    );
    let eff = rows
        .iter()
        .find(|r| r.metric == normscope::metrics::Metric::EffDepth)
        .unwrap();
    assert!(eff.value.is_finite(), "{eff:?}");
    let newest = rows.iter().find(|r| r.source == Some(2000)).unwrap();
    assert!(newest.value.is_finite() && newest.value > 0.0, "{newest:?}");
    assert!(rows.iter().any(underflow_with_exact_log));
    // A coefficient beyond f64 is missing with its exact log too: Pre-LN with alpha = 2 has
    // C_{L,0} = 2^L (then C_{L,j} = 2^(L-j)), 10^602.1 at L = 2000; the last sources fit.
    let raw = RawModel {
        alpha: Some(2.0),
        ..seeds_model(2000)
    };
    let cfg = TheoryConfig::new("pre", &raw, "coef", "last").unwrap();
    let rows = tables::theory_rows(&cfg, &mut Vec::new()).unwrap();
    let first = rows.iter().find(|r| r.source == Some(0)).unwrap();
    let reason = first.missing.as_deref().expect("C_{2000,0} is missing");
    assert!(
        reason.starts_with("overflow: e^") && reason.contains("10^602.1"),
        "{reason}"
    );
    let last = rows.iter().find(|r| r.source == Some(2000)).unwrap();
    assert_eq!(last.finite(), Some(1.0));
}

#[test]
fn gelu_deep_stack_is_finite() {
    let raw = RawModel {
        branch: "gelu-mlp".into(),
        ..seeds_model(20_000)
    };
    let cfg = TheoryConfig::new(
        "pre,post",
        &raw,
        "stream_sq,corr,grad_sq,eff_depth",
        "log:4",
    )
    .unwrap();
    let rows = tables::theory_rows(&cfg, &mut Vec::new()).unwrap();
    assert!(rows.iter().all(|r| r.value.is_finite()));
}

/// The precision the README states: a value built from a product over L blocks (carried in
/// log space) is within `L * f64::EPSILON` relative of the exact value. Pre-LN's `grad_sq` at
/// x_0 with a linear branch at g = 1 is exactly `prod_{l<=L} (1 + 1/l) / (L + 1) = 1`; Post-LN's
/// is exactly 1 block by block and must print exactly. DeepNorm's and Admin's are exactly 1
/// too (each block's gain is `(alpha^2 + beta^2 g)/s` with `s` that same sum), but the skip and
/// branch gains are two rounded quotients added per block, so they drift within the bound
/// (DeepNorm at L = 200: 0.9999999999999785, 2.2e-14 against the bound 4.4e-14).
#[test]
fn products_over_depth_stay_within_l_epsilon() {
    for depth in [4usize, 64, 200, 1000, 4096, 100_000, 1_000_000] {
        let raw = normscope::model::RawModel {
            depth,
            ..normscope::model::RawModel::default()
        };
        let cfg =
            normscope::model::TheoryConfig::new("pre,post,deepnorm,admin", &raw, "grad_sq", "0")
                .expect("config");
        let rows = normscope::tables::theory_rows(&cfg, &mut Vec::new()).expect("closed form");
        for r in rows {
            let err = (r.value - 1.0).abs();
            let bound = if r.preset == "post" {
                0.0
            } else {
                depth as f64 * f64::EPSILON
            };
            assert!(
                err <= bound,
                "{} L = {depth}: {} (bound {bound})",
                r.preset,
                r.value
            );
        }
    }
}

/// A coefficient or branch weight written as missing because it is below f64's smallest
/// normal number: its reason `underflow: e^X = ...` states an exponent X that is indeed below
/// `ln(f64::MIN_POSITIVE)` (about -708.4), and no value is written.
fn underflow_with_exact_log(r: &normscope::profile::Row) -> bool {
    use normscope::metrics::Metric;
    let Some(reason) = r.missing.as_deref() else {
        return false;
    };
    let Some(x) = reason
        .strip_prefix("underflow: e^")
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse::<f64>().ok())
    else {
        return false;
    };
    matches!(r.metric, Metric::Coef | Metric::BranchWeight)
        && x < f64::MIN_POSITIVE.ln()
        && r.finite().is_none()
}
