//! The one engine interface: both engines write exactly the metrics asked for, at the layers
//! each metric has rows at; metrics that need only the forward pass draw nothing, so their
//! values do not depend on which others were asked for.

use normscope::closed_form::ClosedForm;
use normscope::engine::{Engine, Plan};
use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::model::RawModel;
use normscope::monte_carlo::{McConfig, MonteCarlo, RawMc};
use normscope::profile::Value;
use std::process::Command;

fn small() -> (RawModel, RawMc) {
    let raw = RawModel {
        depth: 4,
        width: 8,
        tokens: 3,
        branch: "relu-mlp".into(),
        ..RawModel::default()
    };
    let mc = RawMc {
        samples: 3,
        ..RawMc::default()
    };
    (raw, mc)
}

#[test]
fn each_engine_writes_exactly_the_metric_asked_for() {
    let (raw, mc) = small();
    let cfg = McConfig::new(&raw, &mc).unwrap();
    let spec = cfg
        .model
        .stack(normscope::placement::find("post").unwrap())
        .unwrap();
    let engines: [&dyn Engine; 2] = [
        &ClosedForm::new(&cfg.model),
        &MonteCarlo {
            cfg: &cfg,
            progress: &(),
        },
    ];
    for engine in engines {
        for &m in Metric::ALL {
            let p = engine
                .profile(&spec, &Plan::new(&[m], LayerSpec::All))
                .unwrap();
            assert!(!p.values.is_empty(), "{:?} wrote no {m}", engine.kind());
            for &(metric, l, s) in p.values.keys() {
                assert_eq!(metric, m, "{:?} asked for {m}", engine.kind());
                assert!(m.info().layers.contains(l, spec.depth), "{m} at layer {l}");
                assert_eq!(s.is_some(), m.has_source(), "{m} source column");
            }
        }
    }
}

#[test]
fn forward_metrics_do_not_depend_on_the_others_asked_for() {
    let (raw, mc) = small();
    let cfg = McConfig::new(&raw, &mc).unwrap();
    let spec = cfg
        .model
        .stack(normscope::placement::find("pre").unwrap())
        .unwrap();
    let engine = MonteCarlo {
        cfg: &cfg,
        progress: &(),
    };
    let all = engine
        .profile(&spec, &Plan::new(Metric::ALL, LayerSpec::All))
        .unwrap();
    let forward_only = Metric::ALL
        .iter()
        .filter(|m| m.info().needs == normscope::metrics::Needs::FORWARD);
    for &m in forward_only {
        let one = engine
            .profile(&spec, &Plan::new(&[m], LayerSpec::All))
            .unwrap();
        for (k, v) in &one.values {
            let (Value::Estimate(a), Some(Value::Estimate(b))) = (v, all.values.get(k)) else {
                panic!("{k:?} missing or exact");
            };
            // Same draws, same arithmetic: bit-equal.
            assert_eq!(a.mean.to_bits(), b.mean.to_bits(), "{k:?}");
        }
    }
}

#[test]
fn mc_command_writes_only_the_metric_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args([
            "mc",
            "--depth",
            "3",
            "--width",
            "8",
            "--tokens",
            "2",
            "--samples",
            "2",
            "--metrics",
            "grad_sq",
            "--out",
            "g.csv",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = normscope::output::table::read_rows(&dir.path().join("g.csv")).unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r.metric == Metric::GradSq));
}
