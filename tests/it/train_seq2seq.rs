//! The encoder-decoder model (`normscope train --arch encoder-decoder`,
//! `normscope::train::seq2seq`): every parameter tensor's gradient against central finite
//! differences of the loss (pre, post, deepnorm, admin), cross-attention's isolation between
//! pairs and the decoder's causal mask, the stream gradients against the embeddings' gradients,
//! and the command line: its refusals, f32 runs, and logs byte-identical for 1 and 2 threads.
//! The PyTorch comparison is in `tests/it/train_torch.rs`.

use nalgebra::DMatrix;
use normscope::monte_carlo::sample;
use normscope::numeric::rng::Rng;
use normscope::tolerance;
use normscope::train::config::{RawTrain, TrainConfig};
use normscope::train::pass::{self, Target};
use normscope::train::seq2seq::{self, EncDec};
use normscope::train::task::{self, Batch, PairBatch, TaskConfig, TaskKind};
use normscope::train::trainable::Trainable;
use rand::SeedableRng;
use std::process::Command;

const PRESETS: [&str; 4] = ["pre", "post", "deepnorm", "admin"];

/// A small request: N = 2 layers per stack (4 encoder, 6 decoder blocks), d = 8, 2 heads,
/// vocabulary 5, 3 tokens per sequence, batches of 2 pairs.
fn config(preset: &str) -> TrainConfig {
    let d = RawTrain::default();
    RawTrain {
        presets: preset.into(),
        arch: "encoder-decoder".into(),
        layers: Some(2),
        model: normscope::model::RawModel {
            width: 8,
            ..d.model.clone()
        },
        mc: normscope::monte_carlo::RawMc {
            heads: 2,
            ..d.mc.clone()
        },
        task: TaskConfig {
            kind: TaskKind::ReversePairs,
            vocab: 5,
            seq: 3,
            ..TaskConfig::default()
        },
        batch: 2,
        ..d
    }
    .check()
    .expect("a valid request")
}

/// A batch of `cfg`'s task (seeded), as pairs.
fn batch(cfg: &TrainConfig) -> PairBatch {
    let t = task::build(&cfg.task).unwrap();
    match t.batch(&mut Rng::seed_from_u64(5), cfg.batch) {
        Batch::Pairs(p) => p,
        _ => panic!("reverse-pairs gives pairs"),
    }
}

/// The initial model of `preset` at seed 1 with every parameter moved off its init (gains off
/// 1, biases off 0, omega off its profile), and a batch.
fn model(preset: &str) -> (EncDec, PairBatch) {
    let cfg = config(preset);
    let b = batch(&cfg);
    let mut m =
        seq2seq::init::model::<f64>(&cfg, normscope::placement::find(preset).unwrap(), 1, &b)
            .unwrap();
    let mut r = Rng::seed_from_u64(7);
    for w in m.params_mut() {
        *w += sample::gaussian(&mut r, w.nrows(), w.ncols()) * 0.1;
    }
    (m, b)
}

fn loss_of(m: &EncDec, b: &PairBatch) -> f64 {
    let target = Target::Classes {
        ids: &b.targets,
        weights: &b.weights,
    };
    pass::loss(&m.forward(b).output, target).0
}

#[test]
fn every_parameter_tensors_gradient_matches_central_finite_differences() {
    let mut worst = 0.0f64;
    for preset in PRESETS {
        let (m, b) = model(preset);
        let grads = m.gradients(&Batch::Pairs(b.clone())).grads;
        let infos = m.params();
        assert_eq!(grads.len(), infos.len(), "{preset}");
        let mut r = Rng::seed_from_u64(11);
        let dirs: Vec<DMatrix<f64>> = infos
            .iter()
            .map(|(_, w)| sample::gaussian(&mut r, w.nrows(), w.ncols()))
            .collect();
        // One direction per parameter tensor, so that a wrong gradient is named.
        for (i, (info, _)) in infos.iter().enumerate() {
            let h = 1e-5;
            let moved = |s: f64| {
                let mut x = m.clone();
                *x.params_mut()[i] += &dirs[i] * (s * h);
                loss_of(&x, &b)
            };
            let fd = (moved(1.0) - moved(-1.0)) / (2.0 * h);
            let an = grads[i].dot(&dirs[i]);
            let err = (fd - an).abs() / (1.0 + an.abs());
            worst = worst.max(err);
            assert!(
                err <= tolerance::FINITE_DIFFERENCE,
                "{preset}: layer {} {}: finite difference {fd} vs backward {an}",
                info.layer,
                info.name
            );
        }
        // Every tensor of the model is checked: 4 encoder and 6 decoder blocks' worth.
        let cross = infos.iter().filter(|(p, _)| p.name == "cross.wk").count();
        assert_eq!(cross, 2, "{preset}: two cross-attention blocks");
    }
    println!("largest finite-difference error (relative to 1 + |gradient|): {worst:.1e}");
}

#[test]
fn a_pairs_output_ignores_the_other_pairs_source_and_later_targets() {
    for preset in PRESETS {
        let (m, b) = model(preset);
        let k = b.tgt_len;
        let f = m.forward(&b).output;
        // Another source for pair 1: pair 0's logits are the same bits, pair 1's change.
        let mut other = b.clone();
        for t in 0..b.src_len {
            other.source[b.src_len + t] = (other.source[b.src_len + t] + 1) % 4;
        }
        let g = m.forward(&other).output;
        assert_eq!(f.columns(0, k), g.columns(0, k), "{preset}: pair 0");
        let moved = (f.columns(k, k) - g.columns(k, k)).norm() / f.columns(k, k).norm();
        assert!(moved > tolerance::VISIBLY_DIFFERENT, "{preset}: pair 1");
        // Another last decoder input of pair 0: its earlier positions keep their logits.
        let mut later = b.clone();
        later.inputs[k - 1] = (later.inputs[k - 1] + 1) % 4;
        let g = m.forward(&later).output;
        assert_eq!(f.columns(0, k - 1), g.columns(0, k - 1), "{preset}: causal");
        let moved = (f.column(k - 1) - g.column(k - 1)).norm() / f.column(k - 1).norm();
        assert!(
            moved > tolerance::VISIBLY_DIFFERENT,
            "{preset}: last position"
        );
    }
}

#[test]
fn stream_gradients_at_the_embeddings_are_the_position_embeddings_gradients() {
    // With one pair per batch, dL/dP[:, t] is dL/dx_0[:, t] itself, so ||dL/dP||_F =
    // stream_grad(0) sqrt(n) in each stack; in Post-LN the encoder has no output norm, so the
    // memory's gradient is the last encoder block's.
    for preset in PRESETS {
        let (m, b) = model(preset);
        let one = PairBatch {
            size: 1,
            source: b.source[..b.src_len].to_vec(),
            inputs: b.inputs[..b.tgt_len].to_vec(),
            targets: b.targets[..b.tgt_len].to_vec(),
            weights: b.weights[..b.tgt_len].to_vec(),
            ..b
        };
        let g = m.gradients(&Batch::Pairs(one.clone()));
        let infos = m.params();
        let stream = |layer: usize| {
            g.streams
                .iter()
                .find(|v| v.layer == layer && v.metric == "stream_grad")
                .expect("a stream gradient")
                .value
        };
        let first = m.decoder_first();
        for (layer, n) in [(0, one.src_len), (first, one.tgt_len)] {
            let i = infos
                .iter()
                .position(|(p, _)| p.layer == layer && p.name == "positions")
                .unwrap();
            let want = g.grads[i].norm();
            let got = stream(layer) * (n as f64).sqrt();
            assert!(
                (got - want).abs() <= tolerance::ROUNDING_CHAIN * want,
                "{preset}: layer {layer}: {got} vs {want}"
            );
        }
        let memory = stream(first - 1);
        if m.encoder.final_norm.is_none() {
            assert!((memory - stream(first - 2)).abs() <= tolerance::ROUNDING * memory);
        }
        // Encoder x_0..=x_4, the memory, decoder y_0..=y_6, two cross-attention blocks' parts.
        assert_eq!(g.streams.len(), 5 + 1 + 7 + 2, "{preset}");
    }
}

#[test]
fn deepnorm_uses_deepnets_encoder_decoder_constants_on_paired_draws() {
    // N = M = 2 layers: encoder alpha = 0.81 (N^4 M)^(1/16), beta = 0.87 (N^4 M)^(-1/16);
    // decoder alpha = (3M)^(1/4), beta = (12M)^(-1/4) (Wang et al. 2022, Table 1). Presets draw
    // the same numbers, so deepnorm's V, O and MLP matrices are Post-LN's times beta and its
    // Q and K are Post-LN's.
    let cfg = config("deepnorm");
    let b = batch(&cfg);
    let deep =
        seq2seq::init::model::<f64>(&cfg, normscope::placement::find("deepnorm").unwrap(), 1, &b)
            .unwrap();
    let post = seq2seq::init::model::<f64>(
        &config("post"),
        normscope::placement::find("post").unwrap(),
        1,
        &b,
    )
    .unwrap();
    let (n, m) = (2f64, 2f64);
    let enc = (
        0.81 * (n.powi(4) * m).powf(1.0 / 16.0),
        0.87 * (n.powi(4) * m).powf(-1.0 / 16.0),
    );
    let dec = ((3.0 * m).powf(0.25), (12.0 * m).powf(-0.25));
    for (stack, base, (alpha, beta)) in [
        (&deep.encoder, &post.encoder, enc),
        (&deep.decoder, &post.decoder, dec),
    ] {
        for (b, p) in stack.blocks.iter().zip(&base.blocks) {
            let normscope::train::model::Skip::Fixed(a) = b.skip else {
                panic!("a fixed skip")
            };
            assert!((a - alpha).abs() <= tolerance::ROUNDING, "{a} vs {alpha}");
            for ((name, w, _), (_, w0, _)) in b.named_params("").iter().zip(p.named_params("")) {
                let scale = if name.ends_with("wq") || name.ends_with("wk") {
                    1.0
                } else if name.starts_with('w') {
                    beta
                } else {
                    continue;
                };
                let err = (*w - w0 * scale).norm() / w.norm();
                assert!(err <= tolerance::ROUNDING, "{name}: {err}");
            }
        }
    }
}

/// `np.var` of every entry (centred, population), as Admin's profiling code takes it.
fn np_var(m: &DMatrix<f64>) -> f64 {
    let mean = m.mean();
    m.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / m.len() as f64
}

#[test]
fn admins_omega_is_profiled_per_stack_on_the_first_batch() {
    // Transformer-Clinic's encoder-decoder profiling: one running ratio per stack from 1,
    // omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var(F_l), cross-attention a sublayer like any
    // other; checked on a forward pass of the profiled model over the first batch.
    let cfg = config("admin");
    let b = batch(&cfg);
    let m = seq2seq::init::model::<f64>(&cfg, normscope::placement::find("admin").unwrap(), 1, &b)
        .unwrap();
    let p = m.forward(&b);
    for (stack, pass) in [(&m.encoder, &p.encoder), (&m.decoder, &p.decoder)] {
        let omega = |l: usize| match &stack.blocks[l].skip {
            normscope::train::model::Skip::Learnable(w) => {
                assert!(
                    w.iter().all(|v| v.to_bits() == w[0].to_bits()),
                    "one omega per block"
                );
                w[0]
            }
            _ => panic!("a learnable omega"),
        };
        let mut want = 1.0;
        for l in 0..stack.blocks.len() {
            let got = omega(l);
            assert!(
                (got - want).abs() <= tolerance::ROUNDING_CHAIN * want,
                "block {l}: {got} vs {want}"
            );
            let (x, c) = (&pass.xs[l], &pass.blocks[l]);
            want = (np_var(&(x * got)) + np_var(c.br())).sqrt();
        }
        let omegas: Vec<f64> = (0..stack.blocks.len()).map(omega).collect();
        assert!(omegas[omegas.len() - 1] > 1.0, "omega grows with depth");
    }
}

fn normscope(args: &[&str], threads: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .arg("train")
        .args(args)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("normscope runs")
}

/// A short encoder-decoder run (without its presets; the task is the architecture's default,
/// reverse-pairs).
const RUN: &str = "--arch encoder-decoder --layers 2 --width 16 --heads 2 \
    --vocab 8 --seq 5 --batch 4 --steps 12 --eval-every 6 --log-every 3";

/// [`RUN`]'s flags.
fn run_args() -> Vec<&'static str> {
    RUN.split_whitespace().collect()
}

#[test]
fn logs_are_byte_identical_for_one_and_two_threads_in_f64_and_f32() {
    let mut first_losses = Vec::new();
    for precision in ["f64", "f32"] {
        let args = [
            &run_args()[..],
            &["--preset", "pre,post,admin", "--precision", precision],
        ]
        .concat();
        let one = normscope(&args, "1");
        let two = normscope(&args, "2");
        for o in [&one, &two] {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        assert_eq!(one.stdout, two.stdout, "{precision}: 1 vs 2 threads");
        let text = String::from_utf8(one.stdout).unwrap();
        let header = text.lines().next().unwrap();
        assert!(header.contains(",layer,part,param,"), "{header}");
        for want in ["stream_grad", "memory_grad", ",encoder,", ",decoder,"] {
            assert!(text.contains(want), "{precision}: no {want}");
        }
        assert!(text.contains(",diverged,0"), "{precision}: a run diverged");
        let loss = text
            .lines()
            .find(|l| l.contains(",train_loss,") && l.starts_with("pre,"))
            .and_then(|l| l.rsplit(',').next())
            .and_then(|v| v.parse::<f64>().ok())
            .expect("pre's first training loss");
        first_losses.push(loss);
    }
    // The first update's loss, before training amplifies rounding: f32 rounds the same draws.
    let (f64_loss, f32_loss) = (first_losses[0], first_losses[1]);
    assert!(
        (f64_loss - f32_loss).abs() <= tolerance::F32_REL * f64_loss,
        "{f64_loss} vs {f32_loss}"
    );
}

#[test]
fn bad_requests_name_their_flag_and_exit_2() {
    let ed = ["--arch", "encoder-decoder", "--layers", "2"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&ed[..], &["--task", "regression"]].concat(), "--task"),
        ([&ed[..], &["--task", "copy"]].concat(), "--task"),
        (vec!["--task", "reverse-pairs"], "--task"),
        (vec!["--layers", "3"], "--layers"),
        (
            vec!["--arch", "encoder-decoder", "--task", "reverse-pairs"],
            "--layers",
        ),
        (
            [&ed[..], &["--task", "reverse-pairs", "--depth", "4"]].concat(),
            "--depth",
        ),
        (
            [
                &ed[..],
                &["--task", "reverse-pairs", "--branch", "relu-mlp"],
            ]
            .concat(),
            "--branch",
        ),
        (
            [
                &ed[..],
                &["--task", "reverse-pairs", "--preset", "deepnorm-ed-enc"],
            ]
            .concat(),
            "--preset",
        ),
        (vec!["--arch", "encoder-only"], "--arch"),
        (
            [&ed[..], &["--task", "reverse-pairs", "--vocab", "2"]].concat(),
            "--vocab",
        ),
    ];
    for (args, flag) in cases {
        let out = normscope(&[&args[..], &["--steps", "1"]].concat(), "1");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} should name {flag}: {err}");
    }
}

#[test]
fn the_dump_lists_every_parameter_of_both_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ed.json");
    let out = normscope(
        &[
            &run_args()[..],
            &["--preset", "admin", "--dump-init", path.to_str().unwrap()],
        ]
        .concat(),
        "1",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(v["format"], "normscope-train-encdec-v1");
    assert_eq!(v["model"]["layers"], 2);
    assert_eq!(v["model"]["encoder"]["blocks"].as_array().unwrap().len(), 4);
    let dec = v["model"]["decoder"]["blocks"].as_array().unwrap();
    assert_eq!(dec.len(), 6);
    assert_eq!(dec[1]["branch"]["kind"], "cross-attention");
    assert_eq!(dec[0]["branch"]["causal"], true);
    assert_eq!(dec[0]["skip"], "learnable");
    let params = v["params"].as_array().unwrap();
    let last = params.last().unwrap();
    assert_eq!(
        (last["layer"].as_u64(), last["name"].as_str()),
        (Some(13), Some("head"))
    );
    assert_eq!(v["batches"].as_array().unwrap().len(), 12);
    assert_eq!(v["batches"][0]["source"].as_array().unwrap().len(), 4 * 5);
}

#[test]
fn parameters_sit_in_the_documented_layers() {
    // N = 2: 0 source embeddings, 1..=4 encoder blocks, 5 the encoder's output norm (Pre-LN
    // only), 6 target embeddings, 7..=12 decoder blocks (cross-attention at 8 and 11), 13 the
    // decoder's output norm and the head.
    for (preset, encoder_norm) in [("pre", true), ("post", false)] {
        let (m, _) = model(preset);
        let at = |layer: usize| -> Vec<String> {
            m.params()
                .iter()
                .filter(|(p, _)| p.layer == layer)
                .map(|(p, _)| p.name.clone())
                .collect()
        };
        assert_eq!(at(0), ["embedding", "positions"]);
        assert_eq!(at(6), ["embedding", "positions"]);
        assert_eq!(!at(5).is_empty(), encoder_norm, "{preset}");
        for l in [8, 11] {
            assert!(at(l).contains(&"cross.wk".to_string()), "{preset} {l}");
        }
        assert_eq!(at(13).last().map(String::as_str), Some("head"));
        assert!(m.params().iter().all(|(p, _)| p.layer < m.layers()));
        for (p, _) in m.params() {
            let want = if p.layer <= 5 { "encoder" } else { "decoder" };
            assert_eq!(seq2seq::part(2, p.layer).name(), want);
        }
    }
}
