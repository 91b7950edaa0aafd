//! `normscope train --dump-init FILE`: one run's initial weights, architecture, optimizer,
//! learning rates and every batch, as JSON, so that another implementation (the PyTorch
//! reference, `benches/torch_train_reference.py`) can train the same network on the same data
//! and compare loss curves.
//!
//! Format `normscope-train-init-v1` (every number a JSON number printed by serde_json's
//! shortest round-trip representation, so f64 values are exact):
//!
//! ```text
//! { "format": "normscope-train-init-v1", "preset", "seed",
//!   "model": { "width", "heads", "eps", "norm": "layer"|"rms"|"batch"|"instance"|"group"|"dyt"|"identity",
//!              "groups" (GroupNorm's G), "affine",
//!              "io": {"kind": "tokens", "vocab", "seq"} | {"kind": "vectors", "d_in", "d_out"},
//!              "blocks": [ { "branch": {"kind": "linear"} | {"kind": "mlp", "activation": "relu"|"gelu"}
//!                                     | {"kind": "attention", "uniform", "causal", "seq"},
//!                            "n_in", "n_br", "n_out": bool (a norm in that slot),
//!                            "in_scale": number|null, "skip": number|"learnable",
//!                            "lambda": number|"learnable" } ],
//!              "final_norm": bool },
//!   "params": [ { "layer", "name", "shape": [rows, cols], "decay", "data": [row-major] } ],
//!   "optimizer": { "name", ...its settings }, "clip": number|null,
//!   "lrs": [lr of update 1, 2, ...],
//!   "batches": [ {"inputs", "targets", "weights"}
//!              | {"x" (row-major, d_in x size), "y" (row-major, d_out x size), "size"} ],
//!   "eval": { "every" (updates between evaluations), "batches": [...as above] } }
//! ```
//!
//! The evaluation set is the one `normscope train` logs `eval_loss` on (drawn from the teacher
//! seed's evaluation stream), evaluated in evaluation mode (`model.eval()`: BatchNorm on its
//! running statistics) at update 0, every `every` updates and after the last; the loss over
//! the set is the mean of the batches' losses weighted by their loss weights (vectors: their
//! entries). A norm slot's parameters are named `alpha` (DyT), `gain` and `bias`.
//!
//! Parameters are listed in the model's order ([`super::model::TrainModel::params`]) with
//! normscope's shapes: a matrix maps columns (inputs) to rows (outputs), as `torch.nn.Linear`'s
//! weight; the token embedding is d x vocab (the transpose of `torch.nn.Embedding`'s), the
//! position embedding d x seq. Batch `k` is the one update `k + 1` trains on.
//!
//! An encoder-decoder request (`--arch encoder-decoder`, [`super::seq2seq`]) writes format
//! `normscope-train-encdec-v1`: the same document with the model and batches of that
//! architecture,
//!
//! ```text
//!   "model": { "width", "heads", "eps", "norm", "affine", "layers": N,
//!              "io": {"kind": "pairs", "vocab", "src", "tgt"},
//!              "encoder": {"blocks": [...], "final_norm": bool},
//!              "decoder": {"blocks": [...], "final_norm": bool} },
//!   "batches": [ {"source", "inputs", "targets", "weights"} ]
//! ```
//!
//! with blocks as above (the encoder's attention not causal, the decoder's causal) and a
//! cross-attention block's branch `{"kind": "cross-attention", "seq" (target tokens per
//! sequence), "memory_seq" (source tokens)}`; parameters in [`super::seq2seq::EncDec::params`]
//! order, their `layer` as [`super::seq2seq`] numbers them (cross-attention's matrices named
//! `cross.wq`, `cross.wk`, `cross.wv`, `cross.wo`). A decoder-only dump is v1 as before.

use super::config::{Arch, TrainConfig};
use super::model::{Multiplier, Skip, TrainBlock, TrainModel};
use super::seq2seq::{EncDec, Stack};
use super::task::{Batch, Io, Task};
use super::trainable::Trainable;
use crate::branch::{Activation, Branch};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use normscope_numeric::rng::Rng;
use serde_json::{Value, json};

fn row_major(m: &DMatrix<f64>) -> Vec<f64> {
    m.transpose().iter().copied().collect()
}

/// One block: its branch (`branch`, already in JSON), norm slots, scales.
fn block_json<T: Real>(b: &TrainBlock<T>, branch: Value) -> Value {
    json!({
        "branch": branch,
        "n_in": b.n_in.is_some(),
        "n_br": b.n_br.is_some(),
        "n_out": b.n_out.is_some(),
        "in_scale": b.in_scale,
        "skip": match &b.skip {
            Skip::Fixed(a) => json!(a),
            Skip::Learnable(_) => json!("learnable"),
        },
        "lambda": match &b.lambda {
            Multiplier::Fixed(v) => json!(v),
            Multiplier::Learnable(_) => json!("learnable"),
        },
    })
}

/// A branch's kind and settings.
fn branch_json<T: Real>(b: &Branch<T>) -> Value {
    match b {
        Branch::Linear(_) => json!({"kind": "linear"}),
        Branch::Mlp(x) => json!({"kind": "mlp", "activation": match x.act {
            Activation::Relu => "relu",
            Activation::Gelu => "gelu",
        }}),
        Branch::Attention(a) => json!({"kind": "attention", "uniform": a.uniform,
            "causal": a.causal, "seq": a.seq}),
        Branch::Cross(_) => json!({"kind": "cross-attention"}),
    }
}

fn model_json(cfg: &TrainConfig, m: &TrainModel) -> Value {
    let blocks: Vec<Value> = m
        .blocks
        .iter()
        .map(|b| block_json(b, branch_json(&b.branch)))
        .collect();
    let mut v = settings_json(cfg, m.width(), m.eps);
    v.insert("blocks".into(), json!(blocks));
    v.insert("final_norm".into(), json!(m.final_norm.is_some()));
    Value::Object(v)
}

/// What every architecture's `model` holds: width, heads, eps, norm, affine, io.
fn settings_json(cfg: &TrainConfig, width: usize, eps: f64) -> serde_json::Map<String, Value> {
    let io = match cfg.io {
        Io::Tokens { vocab, seq } => json!({"kind": "tokens", "vocab": vocab, "seq": seq}),
        Io::Vectors { d_in, d_out } => json!({"kind": "vectors", "d_in": d_in, "d_out": d_out}),
        Io::Pairs { vocab, src, tgt } => {
            json!({"kind": "pairs", "vocab": vocab, "src": src, "tgt": tgt})
        }
    };
    let v = json!({
        "width": width,
        "heads": cfg.mc.heads,
        "eps": eps,
        "norm": cfg.mc.model.norm.name(),
        "groups": cfg.mc.model.groups,
        "affine": cfg.affine,
        "io": io,
    });
    match v {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object"),
    }
}

fn batch_json(b: &Batch) -> Value {
    match b {
        Batch::Tokens(t) => json!({"inputs": t.inputs, "targets": t.targets, "weights": t.weights}),
        Batch::Vectors(v) => json!({"x": row_major(&v.x), "y": row_major(&v.y),
            "size": v.x.ncols()}),
        Batch::Pairs(p) => json!({"source": p.source, "inputs": p.inputs,
            "targets": p.targets, "weights": p.weights}),
    }
}

/// The encoder-decoder model's architecture: both stacks' blocks (a cross-attention block's
/// branch `{"kind": "cross-attention", "seq", "memory_seq"}`), their output norms.
fn encdec_json(cfg: &TrainConfig, m: &EncDec) -> Value {
    let stack = |s: &Stack| {
        let blocks: Vec<Value> = s
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let branch = match &b.branch {
                    Branch::Attention(a) if s.is_cross(i) => {
                        json!({"kind": "cross-attention", "seq": a.seq,
                            "memory_seq": m.encoder.positions.ncols()})
                    }
                    other => branch_json(other),
                };
                block_json(b, branch)
            })
            .collect();
        json!({"blocks": blocks, "final_norm": s.final_norm.is_some()})
    };
    let mut v = settings_json(cfg, m.width(), m.eps);
    v.insert("layers".into(), json!(m.layers));
    v.insert("encoder".into(), stack(&m.encoder));
    v.insert("decoder".into(), stack(&m.decoder));
    Value::Object(v)
}

/// The dump of `preset`'s run from `seed` as JSON text (format v1 for a decoder-only
/// request, `normscope-train-encdec-v1` for an encoder-decoder one).
pub fn dump(
    cfg: &TrainConfig,
    task: &dyn Task,
    preset: &'static crate::placement::Preset,
    seed: u64,
) -> crate::Result<String> {
    Ok(match cfg.arch {
        Arch::Decoder => {
            let begin = super::run::start(cfg, task, preset, seed)?;
            let model = model_json(cfg, &begin.0);
            document(cfg, task, (preset.name, seed), begin, model)
        }
        Arch::EncoderDecoder { .. } => {
            super::run::check_f64(cfg)?;
            let begin = super::run::start_encdec::<f64>(cfg, task, preset, seed)?;
            let model = encdec_json(cfg, &begin.0);
            document(cfg, task, (preset.name, seed), begin, model)
        }
    })
}

/// The JSON text of a dump: the model's parameters, its architecture (`model`), and the run.
fn document<M: Trainable<Real = f64>>(
    cfg: &TrainConfig,
    task: &dyn Task,
    (preset, seed): (&str, u64),
    (m, mut data, first): (M, Rng, Batch),
    model: Value,
) -> String {
    let params: Vec<Value> = m
        .params()
        .iter()
        .map(|(i, w)| {
            json!({"layer": i.layer, "name": i.name, "shape": [w.nrows(), w.ncols()],
                "decay": i.decay, "data": row_major(w)})
        })
        .collect();
    let mut batches = vec![batch_json(&first)];
    for _ in 1..cfg.schedule.steps {
        batches.push(batch_json(&task.batch(&mut data, cfg.batch)));
    }
    let mut er = super::run::eval_rng(cfg.task.teacher_seed);
    let eval: Vec<Value> = (0..cfg.eval_batches)
        .map(|_| batch_json(&task.batch(&mut er, cfg.batch)))
        .collect();
    let lrs: Vec<f64> = (1..=cfg.schedule.steps)
        .map(|s| cfg.schedule.lr(s))
        .collect();
    let format = match cfg.arch {
        Arch::Decoder => "normscope-train-init-v1",
        Arch::EncoderDecoder { .. } => "normscope-train-encdec-v1",
    };
    let v = json!({
        "format": format,
        "preset": preset,
        "seed": seed,
        "model": model,
        "params": params,
        "optimizer": cfg.optimizer.json(),
        "clip": cfg.clip,
        "lrs": lrs,
        "batches": batches,
        "eval": {"every": cfg.eval_every, "batches": eval},
    });
    v.to_string()
}
