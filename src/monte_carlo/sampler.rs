//! Draws a network: input tokens, a cross-attention memory, and every block's weights, with
//! the `--gain` rescaling of the output matrix (so the expected forward gain is g, as in the
//! closed form) and DeepNet's beta on the scaled matrices.

use super::branch::Branch;
use super::config::{McConfig, McKind};
use super::network::Network;
use super::rng::Rng;
use super::sample;
use crate::branch::init::truncation_factor;
use crate::branch::{Activation, Init};
use crate::spec::StackSpec;

/// Standard deviation of one entry of a `rows x cols` matrix drawn by [`sample::matrix`].
fn entry_std(init: Init, rows: usize, cols: usize, scale: f64) -> f64 {
    let (fan_in, fan_out) = (cols as f64, rows as f64);
    let v = match init {
        Init::Bert => crate::branch::init::BERT_STD.powi(2) * truncation_factor(2.0),
        _ => init.variance(fan_in, fan_out),
    };
    v.sqrt() * scale
}

/// Samples network `spec` under `cfg` from `rng`.
pub fn network(spec: &StackSpec, cfg: &McConfig, rng: &mut Rng) -> Network {
    let m = &cfg.model;
    let (d, n) = (m.branch.width, m.branch.tokens);
    let (q0, c0) = (m.inputs.q0, m.inputs.c0);
    let input = sample::tokens(rng, d, n, q0, c0);
    let beta = spec.beta.unwrap_or(1.0);
    let init = cfg.init();
    let mut branches = Vec::with_capacity(spec.depth);
    let mut stds = Vec::with_capacity(spec.depth);
    let memory_mean = (cfg.kind == McKind::CrossAttention).then(|| {
        let mem = sample::tokens(rng, d, n, q0, c0);
        mem.column_mean()
    });
    for l in 1..=spec.depth {
        let kind = cfg.kind.at(l);
        let gain_scale = match m.branch.gain {
            Some(g) => {
                let unit = cfg.proxy_model(l).nominal_gain;
                if unit > 0.0 { (g / unit).sqrt() } else { 1.0 }
            }
            None => 1.0,
        };
        let mut mat = |rows: usize, cols: usize, scale: f64, out: &mut Vec<f64>| {
            out.push(entry_std(init, rows, cols, scale));
            sample::matrix(rng, init, rows, cols, scale)
        };
        let mut s = Vec::new();
        let b = match kind {
            McKind::Linear => Branch::Linear {
                w: mat(d, d, gain_scale * beta, &mut s),
            },
            McKind::ReluMlp | McKind::GeluMlp => {
                let h = (m.branch.hidden_ratio * d as f64).round().max(1.0) as usize;
                let w1 = mat(h, d, beta, &mut s);
                let w2 = mat(d, h, gain_scale * beta, &mut s);
                let act = if kind == McKind::ReluMlp {
                    Activation::Relu
                } else {
                    Activation::Gelu
                };
                Branch::Mlp { w1, w2, act }
            }
            McKind::Attention => {
                let (wq, wk) = if cfg.uniform {
                    (
                        nalgebra::DMatrix::zeros(0, 0),
                        nalgebra::DMatrix::zeros(0, 0),
                    )
                } else {
                    (mat(d, d, 1.0, &mut s), mat(d, d, 1.0, &mut s))
                };
                let wv = mat(d, d, beta, &mut s);
                let wo = mat(d, d, gain_scale * beta, &mut s);
                Branch::Attention {
                    wq,
                    wk,
                    wv,
                    wo,
                    heads: cfg.heads,
                    uniform: cfg.uniform,
                }
            }
            McKind::CrossAttention => {
                let wv = mat(d, d, beta, &mut s);
                let wo = mat(d, d, gain_scale * beta, &mut s);
                Branch::Cross {
                    wv,
                    wo,
                    memory_mean: memory_mean.clone().expect("memory drawn"),
                }
            }
            McKind::Transformer => unreachable!("resolved per block"),
        };
        branches.push(b);
        stds.push(s);
    }
    Network {
        spec: spec.clone(),
        branches,
        weight_stds: stds,
        input,
        eps: cfg.eps,
    }
}
