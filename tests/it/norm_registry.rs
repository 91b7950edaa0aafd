//! Every norm of `--norm` in every engine that has it: Monte Carlo runs each on every built-in
//! preset and from a placement file; the closed form takes GroupNorm (and agrees with Monte
//! Carlo at width 128), DyT, InstanceNorm and BatchNorm where their inputs are Gaussian (and
//! agrees there), and refuses the rest with the reason; bad combinations are refused with exit
//! status 2 and one line naming the field, writing nothing.

use crate::common::{disagreements, normscope};
use normscope::engine::{Engine, Plan};
use normscope::layers::LayerSpec;
use normscope::metrics::Metric;
use normscope::model::RawModel;
use normscope::monte_carlo::{McConfig, MonteCarlo, RawMc};
use normscope::placement;
use normscope::profile::Value;
use normscope::spec::NormKind;

/// The norms with statistics or maps of their own (the identity removes every norm).
fn norms() -> impl Iterator<Item = NormKind> {
    NormKind::ALL
        .into_iter()
        .filter(|&k| k != NormKind::Identity)
}

fn small(norm: NormKind) -> (RawModel, RawMc) {
    let raw = RawModel {
        depth: 4,
        width: 16,
        tokens: 4,
        groups: 4,
        norm,
        ..RawModel::default()
    };
    let mc = RawMc {
        samples: 3,
        heads: 2,
        ..RawMc::default()
    };
    (raw, mc)
}

#[test]
fn every_norm_runs_in_monte_carlo_on_every_built_in_preset() {
    for norm in norms() {
        let (raw, mc) = small(norm);
        let cfg = McConfig::new(&raw, &mc).unwrap();
        let engine = MonteCarlo {
            cfg: &cfg,
            progress: &(),
        };
        for preset in placement::all().iter().filter(|p| p.file().is_none()) {
            let spec = cfg.model.stack(preset).unwrap();
            let p = engine
                .profile(&spec, &Plan::new(Metric::ALL, LayerSpec::All))
                .unwrap();
            for ((m, l, s), v) in &p.values {
                match v {
                    Value::Estimate(e) => assert!(e.mean.is_finite(), "{norm} {m} {l} {s:?}"),
                    Value::Missing(why) if m.info().needs.decomposition => {
                        assert!(!norm.per_token(), "{norm} {m}: {why}");
                        assert!(why.contains("per-token decomposition"), "{why}");
                    }
                    // A ratio can be 0/0 for a preset (ReZero's branch at lambda = 0).
                    Value::Missing(why) => assert!(
                        why.contains("0/0") || why.contains("undefined"),
                        "{norm} {} {m} {l}: {why}",
                        preset.name
                    ),
                    Value::Exact(_) => panic!("{norm} {m}: Monte Carlo writes estimates"),
                }
            }
            // Every decomposition metric has rows, measured or missing with the reason.
            assert!(p.values.keys().any(|k| k.0 == Metric::Coef), "{norm}");
        }
    }
}

#[test]
fn group_norm_agrees_with_the_closed_form() {
    // At a fixed number of groups, GroupNorm's statistic concentrates as LayerNorm's does
    // (`NormKind::closed_form`), so the closed form is its limit too; the allowance uses its
    // rank deficiency 2 G / seq per token.
    for preset in ["pre", "post", "deepnorm"] {
        let raw = RawModel {
            depth: 8,
            width: 128,
            tokens: 16,
            groups: 4,
            norm: NormKind::Group,
            ..RawModel::default()
        };
        let mc = RawMc {
            samples: 16,
            eps: 0.0,
            ..RawMc::default()
        };
        let metrics = Metric::parse_list("stream_sq,corr,skip_gain,branch_gain,grad_sq").unwrap();
        let bad = disagreements(preset, &raw, mc, &metrics, &LayerSpec::All);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

#[test]
fn column_norms_agree_with_their_closed_form() {
    // InstanceNorm over 8 tokens and BatchNorm over a batch of 8 (or 6) one-token samples:
    // Pre-Norm with a ReLU MLP (the branch moves the gradient's energy between the columns'
    // mean and fluctuation: without that the closed form's grad_sq at layer 0 would be 5.32
    // against Monte Carlo's 4.36 +- 0.09 at width 512), and Yang et al.'s network (Post-Norm
    // with skip scale 0) with both branches. corr is compared for InstanceNorm only (one token
    // per BatchNorm sample: neither engine writes it).
    for (norm, preset, branch, columns) in [
        (NormKind::Instance, "pre", "relu-mlp", 8),
        (NormKind::Instance, "post", "relu-mlp", 8),
        (NormKind::Batch, "pre", "relu-mlp", 8),
        (NormKind::Batch, "post", "linear", 6),
    ] {
        let batch_norm = norm == NormKind::Batch;
        let raw = RawModel {
            depth: 8,
            width: 256,
            tokens: if batch_norm { 1 } else { columns },
            alpha: (preset == "post").then_some(0.0),
            branch: branch.to_string(),
            init: if branch == "linear" { "xavier" } else { "he" }.to_string(),
            norm,
            ..RawModel::default()
        };
        let mc = RawMc {
            samples: 32,
            eps: 0.0,
            batch: if batch_norm { columns } else { 1 },
            ..RawMc::default()
        };
        let names = if batch_norm {
            "stream_sq,grad_sq,cos_prev"
        } else {
            "stream_sq,corr,grad_sq,cos_prev"
        };
        let metrics = Metric::parse_list(names).unwrap();
        let bad = disagreements(preset, &raw, mc, &metrics, &LayerSpec::All);
        assert!(bad.is_empty(), "{norm} {preset}:\n{}", bad.join("\n"));
    }
}

#[test]
fn column_norms_closed_form_settings_are_refused_naming_the_field() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--norm", "batch", "--tokens", "4", "--batch", "8"],
            "invalid --tokens = 4",
        ),
        (
            &["--norm", "batch", "--tokens", "1", "--batch", "5"],
            "invalid --batch = 5",
        ),
        (
            &[
                "--norm", "batch", "--tokens", "1", "--batch", "8", "--c0", "0.5",
            ],
            "invalid --c0 = 0.5",
        ),
        (&["--norm", "layer", "--batch", "8"], "invalid --batch = 8"),
        (
            &["--norm", "instance", "--tokens", "5"],
            "invalid --tokens = 5",
        ),
        (
            &["--norm", "instance", "--tokens", "8", "--c0", "1"],
            "invalid --c0 = 1",
        ),
        (
            &[
                "--norm",
                "instance",
                "--tokens",
                "8",
                "--final-norm",
                "on",
                "--alpha",
                "0",
            ],
            "final norm",
        ),
    ];
    for (args, field) in cases {
        let preset = if args.contains(&"--alpha") {
            "post"
        } else {
            "pre"
        };
        let mut a = vec![
            "theory",
            "--preset",
            preset,
            "--depth",
            "3",
            "--metrics",
            "grad_sq",
        ];
        a.extend(args);
        let o = normscope(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert!(
            err.contains(field) && err.lines().count() == 1,
            "{a:?}: {err}"
        );
        assert!(o.stdout.is_empty());
    }
    // The metrics not derived are written as missing with the reason.
    let o = normscope(&[
        "theory",
        "--preset",
        "pre",
        "--depth",
        "3",
        "--norm",
        "instance",
        "--tokens",
        "8",
        "--metrics",
        "grad_sq,weight_grad_sq,eff_depth",
        "--layers",
        "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.matches("not derived in the closed form under InstanceNorm")
            .count(),
        2
    );
    assert!(out.contains(",instance,"), "{out}");
}

#[test]
fn dyt_agrees_with_its_closed_form_under_pre_norm() {
    // DyT's map (Gaussian integrals of tanh, `theory::norm_map`) against Monte Carlo where its
    // inputs are Gaussian: Pre-Norm and LayerNorm-Scaling, per-token branches, inputs from
    // small to saturating (q0 = 1e-2 puts tanh(0.5 z) in its linear range, q0 = 100 in its
    // saturated one). DyT removes no direction, so the allowance is sampling and 2/d alone.
    for (preset, branch, q0) in [
        ("pre", "relu-mlp", 1.0),
        ("pre", "gelu-mlp", 100.0),
        ("pre", "linear", 0.01),
        ("lns", "relu-mlp", 1.0),
    ] {
        let raw = RawModel {
            depth: 16,
            width: 256,
            tokens: 8,
            q0,
            c0: 0.3,
            branch: branch.into(),
            norm: NormKind::Dyt,
            ..RawModel::default()
        };
        let mc = RawMc {
            samples: 32,
            ..RawMc::default()
        };
        let metrics = Metric::parse_list(
            "stream_sq,corr,skip_gain,branch_gain,grad_sq,weight_grad_sq,eff_depth",
        )
        .unwrap();
        let bad = disagreements(preset, &raw, mc, &metrics, &LayerSpec::All);
        assert!(
            bad.is_empty(),
            "{preset} {branch} q0 = {q0}:\n{}",
            bad.join("\n")
        );
    }
}

#[test]
fn the_closed_form_refuses_the_norms_it_does_not_have() {
    // DyT's closed form holds where every DyT input is Gaussian, with per-token branches.
    for (norm, preset, branch, why) in [
        ("batch", "post", "relu-mlp", "not Gaussian"),
        ("instance", "sandwich", "linear", "not Gaussian"),
        ("instance", "pre", "gelu-mlp", "linear and relu-mlp"),
        ("instance", "mixln", "linear", "not Gaussian"),
        ("batch", "pre", "uniform-attention", "linear and relu-mlp"),
        ("dyt", "post", "relu-mlp", "not Gaussian"),
        ("dyt", "sandwich", "relu-mlp", "not Gaussian"),
        ("dyt", "pre", "uniform-attention", "per-token branches"),
    ] {
        for cmd in ["theory", "compare"] {
            let mut args = vec![
                cmd, "--preset", preset, "--norm", norm, "--depth", "4", "--width", "16",
                "--tokens", "4", "--branch", branch,
            ];
            if cmd == "compare" {
                args.extend(["--samples", "2"]);
            }
            let o = normscope(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd} {norm}: {err}");
            assert!(
                err.contains(why) && err.contains("normscope mc"),
                "{cmd} {norm}: {err}"
            );
            assert!(o.stdout.is_empty(), "{cmd} {norm} wrote a table");
        }
    }
    let o = normscope(&[
        "theory",
        "--preset",
        "pre",
        "--norm",
        "group",
        "--depth",
        "3",
        "--metrics",
        "stream_sq",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains(",group:G=32,"));
}

#[test]
fn bad_combinations_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let out_s = out.to_str().unwrap();
    let base = [
        "--preset",
        "pre",
        "--depth",
        "3",
        "--width",
        "16",
        "--samples",
        "2",
        "--out",
        out_s,
    ];
    let cases: [(&[&str], &str); 12] = [
        (
            &["mc", "--norm", "batch", "--tokens", "1"],
            "invalid --batch = 1",
        ),
        (
            &["mc", "--norm", "group", "--groups", "5"],
            "invalid --groups = 5: a divisor of --width = 16",
        ),
        (
            &["theory", "--norm", "group", "--groups", "0"],
            "invalid --groups = 0",
        ),
        (
            &["mc", "--norm", "instance", "--tokens", "1"],
            "invalid --tokens = 1",
        ),
        (
            &[
                "mc",
                "--norm",
                "batch",
                "--batch",
                "4",
                "--branch",
                "attention",
                "--heads",
                "2",
            ],
            "invalid --batch = 4",
        ),
        (&["mc", "--batch", "0"], "invalid --batch = 0"),
        (
            &["expand", "--norm", "dyt"],
            "--norm dyt has no such scalar",
        ),
        // Training checks the norm against its own batches.
        (
            &[
                "train",
                "--norm",
                "instance",
                "--task",
                "regression",
                "--branch",
                "relu-mlp",
                "--steps",
                "1",
            ],
            "invalid --norm = instance",
        ),
        (
            &[
                "train",
                "--norm",
                "batch",
                "--task",
                "regression",
                "--branch",
                "relu-mlp",
                "--batch",
                "1",
                "--steps",
                "1",
            ],
            "invalid --batch = 1",
        ),
        (
            &["train", "--norm", "group", "--groups", "5", "--steps", "1"],
            "invalid --groups = 5",
        ),
        // Identical tokens have zero variance in every InstanceNorm block.
        (
            &["mc", "--norm", "instance", "--tokens", "4", "--c0", "1"],
            "invalid --c0 = 1",
        ),
        // 16 groups of one channel over one token: blocks of one entry.
        (
            &["mc", "--norm", "group", "--groups", "16", "--tokens", "1"],
            "invalid --groups = 16",
        ),
    ];
    for (args, want) in cases {
        let mut all: Vec<&str> = args.to_vec();
        // `expand` and `train` take neither sampling flags nor these table flags.
        match args[0] {
            "expand" => all.extend(["--preset", "post", "--depth", "3"]),
            "train" => all.extend(["--preset", "pre", "--out", out_s]),
            "theory" => all.extend(&base[..6]),
            _ => all.extend(base),
        }
        let o = normscope(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} left {out_s}");
    }
}

#[test]
fn a_placement_file_can_name_every_norm() {
    let dir = tempfile::tempdir().unwrap();
    for norm in ["batch", "instance", "group", "dyt", "rms"] {
        let file = dir.path().join(format!("{norm}.toml"));
        let name = format!("my-post-{norm}");
        std::fs::write(
            &file,
            format!(
                "[[placement]]\nname = \"{name}\"\n[[placement.segment]]\nafter_sum = \"{norm}\"\n"
            ),
        )
        .unwrap();
        let o = normscope(&[
            "mc",
            "--placements",
            file.to_str().unwrap(),
            "--preset",
            &name,
            "--depth",
            "3",
            "--width",
            "16",
            "--tokens",
            "4",
            "--groups",
            "4",
            "--samples",
            "2",
            "--metrics",
            "stream_sq",
            "--layers",
            "last",
        ]);
        let out = crate::common::success_stdout(&o);
        let want = match norm {
            "group" => ",group:G=4,".to_string(),
            "batch" => ",batch:B=1,".to_string(),
            n => format!(",{n},"),
        };
        assert!(out.contains(&want), "{norm}: {out}");
    }
    // An unknown name lists every accepted one.
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[[placement]]\nname = \"bad-norm\"\n[[placement.segment]]\ninput = \"weight\"\n",
    )
    .unwrap();
    let o = normscope(&[
        "theory",
        "--placements",
        file.to_str().unwrap(),
        "--preset",
        "bad-norm",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("layer, rms, batch, instance, group, dyt, identity"),
        "{err}"
    );
}

#[test]
fn batches_are_independent_sequences_and_seed_their_own_networks() {
    // --batch 1 is the unbatched input (same seed, same networks); --batch 2 draws the first
    // sequence as before and a second one after it.
    let (raw, _) = small(NormKind::Layer);
    let one = McConfig::new(
        &raw,
        &RawMc {
            batch: 1,
            ..RawMc::default()
        },
    )
    .unwrap();
    let two = McConfig::new(
        &raw,
        &RawMc {
            batch: 2,
            ..RawMc::default()
        },
    )
    .unwrap();
    assert_eq!(
        one.canonical("pre"),
        McConfig::new(&raw, &RawMc::default())
            .unwrap()
            .canonical("pre")
    );
    assert!(two.canonical("pre").ends_with("|batch=2"));
    let mut r1 = normscope_numeric::rng::network_rng(0, 0, 0);
    let mut r2 = r1.clone();
    let (a, _) = normscope::monte_carlo::sampler::draw_inputs::<f64>(&one, &mut r1);
    let (b, _) = normscope::monte_carlo::sampler::draw_inputs::<f64>(&two, &mut r2);
    assert_eq!((a.ncols(), b.ncols()), (4, 8));
    assert_eq!(a, b.columns(0, 4).into_owned());
    assert_ne!(b.columns(0, 4), b.columns(4, 4));
    // GroupNorm's groups enter the seed; other norms' seeds do not see them.
    let g = |norm, groups| {
        let raw = RawModel {
            norm,
            groups,
            ..raw.clone()
        };
        McConfig::new(&raw, &RawMc::default())
            .unwrap()
            .canonical("pre")
    };
    assert_ne!(g(NormKind::Group, 4), g(NormKind::Group, 2));
    assert_eq!(g(NormKind::Layer, 4), g(NormKind::Layer, 2));
}

#[test]
fn undefined_metrics_are_missing_rows_with_their_sources_and_reason() {
    // coef has a row per source j = 0..=l, measured or missing; corr is undefined over a batch
    // of independent sequences.
    let (raw, mc) = small(NormKind::Batch);
    let cfg = McConfig::new(&raw, &RawMc { batch: 2, ..mc }).unwrap();
    let engine = MonteCarlo {
        cfg: &cfg,
        progress: &(),
    };
    let spec = cfg
        .model
        .stack(normscope::placement::find("post").unwrap())
        .unwrap();
    let metrics = [Metric::Coef, Metric::Corr, Metric::StreamSq];
    let p = engine
        .profile(&spec, &Plan::new(&metrics, LayerSpec::List(vec![3])))
        .unwrap();
    for j in 0..=3 {
        match &p.values[&(Metric::Coef, 3, Some(j))] {
            Value::Missing(why) => assert!(why.contains("BatchNorm"), "{why}"),
            other => panic!("coef j = {j}: {other:?}"),
        }
    }
    match &p.values[&(Metric::Corr, 3, None)] {
        Value::Missing(why) => assert!(why.contains("--batch 2"), "{why}"),
        other => panic!("corr: {other:?}"),
    }
    assert!(matches!(
        p.values[&(Metric::StreamSq, 3, None)],
        Value::Estimate(_)
    ));
}
