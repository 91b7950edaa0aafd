//! DeepNorm: `x_l = Norm(alpha x_{l-1} + F_l(x_{l-1}))` with the branch weights (both FFN
//! matrices; attention's V and O projections; a linear branch's matrix) scaled by beta after
//! Xavier init. Source: Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers"
//! (arXiv:2203.00555), Figure 2 / Table 1.
//!
//! DeepNet counts Transformer *layers*; a layer is two blocks here (attention, FFN) and a
//! decoder layer of an encoder-decoder model is three (self-attention, cross-attention, FFN).
//! With L blocks:
//! - encoder-only or decoder-only, N = L/2 layers: `alpha = (2N)^(1/4) = L^(1/4)`,
//!   `beta = (8N)^(-1/4) = (4L)^(-1/4)`;
//! - encoder of an encoder-decoder with N = M = L/2 (equal encoder and decoder depth):
//!   `alpha = 0.81 (N^4 M)^(1/16)`, `beta = 0.87 (N^4 M)^(-1/16)`;
//! - decoder of an encoder-decoder, M = L/3 layers: `alpha = (3M)^(1/4) = L^(1/4)`,
//!   `beta = (12M)^(-1/4) = (4L)^(-1/4)`.
//!
//! Seed 002 writes the normalizer as sqrt 2; the true normalizer is `sqrt(alpha^2 + g beta^4)`
//! for a two-matrix branch of gain g (see `normscope expand --preset deepnorm`).

use super::Preset;
use crate::spec::{BlockSpec, SkipScale, Slot, StackSpec};

pub(super) const PRESET: Preset = Preset {
    name: "deepnorm",
    aliases: &[],
    label: "DeepNorm",
    equation: "x_l = Norm(alpha x_{l-1} + F_l(x_{l-1})), alpha = (2N)^(1/4), branch weights * beta = (8N)^(-1/4), N = L/2",
    source: "Wang et al. 2022, DeepNet (arXiv:2203.00555), encoder-only/decoder-only constants",
    build: super::Builder::BuiltIn(build),
    halves: Some((&ENCDEC_ENCODER, &ENCDEC_DECODER)),
};

pub(super) const ENCDEC_ENCODER: Preset = Preset {
    name: "deepnorm-ed-enc",
    aliases: &[],
    label: "DeepNorm (enc-dec, encoder)",
    equation: "DeepNorm with alpha = 0.81 (N^4 M)^(1/16), beta = 0.87 (N^4 M)^(-1/16), N = M = L/2",
    source: "Wang et al. 2022, DeepNet (arXiv:2203.00555), encoder-decoder constants (encoder)",
    build: super::Builder::BuiltIn(build_encdec_encoder),
    halves: None,
};

pub(super) const ENCDEC_DECODER: Preset = Preset {
    name: "deepnorm-ed-dec",
    aliases: &[],
    label: "DeepNorm (enc-dec, decoder)",
    equation: "DeepNorm with alpha = (3M)^(1/4), beta = (12M)^(-1/4), M = L/3",
    source: "Wang et al. 2022, DeepNet (arXiv:2203.00555), encoder-decoder constants (decoder)",
    build: super::Builder::BuiltIn(build_encdec_decoder),
    halves: None,
};

fn with_constants(name: &str, depth: usize, alpha: f64, beta: f64) -> StackSpec {
    let block = BlockSpec {
        skip: SkipScale::Alpha(alpha),
        ..BlockSpec::POST
    };
    let mut s = StackSpec::uniform(name, depth, block, Slot::Identity);
    s.beta = Some(beta);
    s
}

fn build(depth: usize) -> StackSpec {
    let n = depth as f64 / 2.0;
    with_constants(
        "deepnorm",
        depth,
        (2.0 * n).powf(0.25),
        (8.0 * n).powf(-0.25),
    )
}

fn build_encdec_encoder(depth: usize) -> StackSpec {
    let n = depth as f64 / 2.0;
    let m = n;
    let base = n.powi(4) * m;
    with_constants(
        "deepnorm-ed-enc",
        depth,
        0.81 * base.powf(1.0 / 16.0),
        0.87 * base.powf(-1.0 / 16.0),
    )
}

fn build_encdec_decoder(depth: usize) -> StackSpec {
    let m = depth as f64 / 3.0;
    with_constants(
        "deepnorm-ed-dec",
        depth,
        (3.0 * m).powf(0.25),
        (12.0 * m).powf(-0.25),
    )
}
