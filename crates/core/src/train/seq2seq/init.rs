//! Initial weights of the encoder-decoder model, following the decoder-only recipe
//! ([`crate::train::init`]): every weight drawn in f64 from the training seed's stream
//! ([`weight_rng`], independent of the preset, so presets start from the same draws, each
//! scaled by its recipe) and rounded once to `T`, in this order:
//!
//! 1. the encoder's blocks 1..=2N, each as the Monte Carlo sampler draws a block of the
//!    transformer branch ([`sampler::draw_branch`]): attention's `W_Q`, `W_K`, `W_V`, `W_O`
//!    (the init scheme, Xavier by default; DeepNet's beta on V and O), the MLP's `W1`, `W2`
//!    (beta on both);
//! 2. the decoder's blocks 1..=3N the same way, cross-attention's four matrices drawn as
//!    self-attention's;
//! 3. the source token and position embeddings, the target token and position embeddings
//!    (`N(0, 1/2)` each, so every stream starts at second moment 1), and the head (the init
//!    scheme, fan-in d).
//!
//! Admin (Liu et al. 2020): `omega` is profiled on the first training batch per stack as
//! Transformer-Clinic's `adaptive-profiling` does for its encoder-decoder models
//! (`fairseq/fairseq/modules/transformer_layer.py` in its repository: one running ratio per
//! stack, `encoder_ratio` and `decoder_ratio`, both starting at 1; each sublayer,
//! cross-attention included, takes the current ratio as its omega and sets it to
//! `sqrt(Var(omega x) + Var F)`, centred over all entries): the encoder first, then the
//! decoder, whose cross-attention reads the memory of the profiled encoder. Then omega is
//! learnable.

use super::pass::branch_forward;
use super::{EncDec, Part, Stack};
use crate::branch::{Activation, Block, Branch};
use crate::monte_carlo::network::next_admin_omega_of;
use crate::monte_carlo::sampler;
use crate::placement::Preset;
use crate::spec::{SkipScale, StackSpec};
use crate::train::config::{Arch, TrainConfig};
use crate::train::init::{embedding, head, weight_rng};
use crate::train::layer_norm::Mode;
use crate::train::model::{Skip, train_blocks};
use crate::train::pass::{block_forward, embed_tokens};
use crate::train::task::{Io, PairBatch};
use crate::{Error, Result};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use normscope_numeric::rng::Rng;

/// The encoder's and the decoder's stacks of `preset` for N = `layers` (2N and 3N blocks):
/// the preset's own, or its [`Preset::halves`] (DeepNet's encoder-decoder constants).
pub fn stacks(
    cfg: &TrainConfig,
    preset: &'static Preset,
    layers: usize,
) -> Result<(StackSpec, StackSpec)> {
    let (enc, dec) = preset.encoder_decoder();
    let (src, tgt) = match cfg.io {
        crate::train::task::Io::Pairs { src, tgt, .. } => (src, tgt),
        _ => (1, 1),
    };
    let at = |depth: usize, half: &Preset, seq: usize| -> Result<StackSpec> {
        let model = crate::model::ModelConfig {
            depth,
            ..cfg.mc.model.clone()
        };
        let spec = model.stack(half)?;
        let d = cfg.mc.model.branch.width;
        crate::train::config::check_trainable(&spec, d, seq, seq * cfg.batch)?;
        Ok(spec)
    };
    Ok((at(2 * layers, enc, src)?, at(3 * layers, dec, tgt)?))
}

/// What decoder block j (1-based) computes, as the sampler's [`Block`].
fn decoder_block(j: usize) -> Block {
    match super::DecoderBlock::of(j) {
        super::DecoderBlock::Mlp => Block::Mlp(Activation::Relu),
        _ => Block::Attention { uniform: false },
    }
}

/// Draws `spec`'s branches, block l computing `kind(l)`, its attention causal or not within
/// sequences of `seq` tokens.
fn branches<T: Real>(
    spec: &StackSpec,
    cfg: &TrainConfig,
    kind: impl Fn(usize) -> (Block, bool),
    seq: usize,
    rng: &mut Rng,
) -> Vec<Branch<T>> {
    (1..=spec.depth)
        .map(|l| {
            let (block, causal) = kind(l);
            let (mut b, _) = sampler::draw_branch(spec, &cfg.mc, block, None, rng);
            if let Branch::Attention(a) = &mut b {
                a.causal = causal;
                a.seq = seq;
            }
            b
        })
        .collect()
}

/// The initial encoder-decoder model of `preset` for training seed `seed` in float type `T`,
/// Admin's omega profiled on `first` (the first training batch).
pub fn model<T: Real>(
    cfg: &TrainConfig,
    preset: &'static Preset,
    seed: u64,
    first: &PairBatch,
) -> Result<EncDec<T>> {
    let (Arch::EncoderDecoder { layers }, Io::Pairs { vocab, src, tgt }) = (cfg.arch, cfg.io)
    else {
        return Err(Error::invalid(
            "--arch",
            cfg.arch.name(),
            "encoder-decoder with --task reverse-pairs for the encoder-decoder model",
        ));
    };
    let (enc_spec, dec_spec) = stacks(cfg, preset, layers)?;
    let d = cfg.mc.model.branch.width;
    let mut rng = weight_rng(seed);
    let enc_kind = |l| (cfg.mc.block(l), false);
    let dec_kind = |j| {
        let causal = super::DecoderBlock::of(j) == super::DecoderBlock::SelfAttention;
        (decoder_block(j), causal)
    };
    let enc_branches = branches::<T>(&enc_spec, cfg, enc_kind, src, &mut rng);
    let dec_branches = branches::<T>(&dec_spec, cfg, dec_kind, tgt, &mut rng);
    let mut stack = |part, spec: StackSpec, branches: Vec<Branch<T>>, len| {
        let ones = vec![1.0; spec.depth];
        let (blocks, final_norm) = train_blocks(&spec, branches, d, cfg.affine, &ones);
        Stack {
            part,
            tokens: embedding(&mut rng, d, vocab),
            positions: embedding(&mut rng, d, len),
            spec,
            blocks,
            final_norm,
        }
    };
    let encoder = stack(Part::Encoder, enc_spec, enc_branches, src);
    let decoder = stack(Part::Decoder, dec_spec, dec_branches, tgt);
    let mut m = EncDec {
        layers,
        eps: cfg.mc.eps,
        training: true,
        encoder,
        decoder,
        head: head(&cfg.mc, vocab, &mut rng),
    };
    profile_admin(&mut m, first);
    Ok(m)
}

/// Sets every Admin omega of `m` by profiling on `b` (the module docs), stack by stack; a model
/// without Admin's skip is left as it is.
pub(crate) fn profile_admin<T: Real>(m: &mut EncDec<T>, b: &PairBatch) {
    let admin =
        |s: &Stack<T>| (1..=s.spec.depth).any(|l| s.spec.block(l).skip == SkipScale::AdminOmega);
    if !admin(&m.encoder) && !admin(&m.decoder) {
        return;
    }
    let mode = m.mode();
    profile_stack(&mut m.encoder, mode, (&b.source, b.src_len), None);
    let memory = m.encoder.forward(mode, (&b.source, b.src_len), None).top;
    profile_stack(
        &mut m.decoder,
        mode,
        (&b.inputs, b.tgt_len),
        Some((&memory, b.src_len)),
    );
}

/// Profiles one stack: block by block from its embeddings' stream, omega set to the running
/// ratio (1 at the first block) before the block runs, the ratio then
/// `sqrt(omega^2 Var(x) + lambda^2 Var(b))` ([`next_admin_omega_of`]).
fn profile_stack<T: Real>(
    s: &mut Stack<T>,
    mode: Mode,
    (ids, seq): (&[u32], usize),
    memory: Option<(&DMatrix<T>, usize)>,
) {
    let mut x = embed_tokens(&s.tokens, &s.positions, ids, seq);
    let mut ratio = 1.0;
    for i in 0..s.blocks.len() {
        let admin = match &mut s.blocks[i].skip {
            Skip::Learnable(w) => {
                w.fill(T::of(ratio));
                true
            }
            Skip::Fixed(_) => false,
        };
        let b = &s.blocks[i];
        let mode = Mode { seq, ..mode };
        let (c, y) = block_forward(b, mode, &x, |u| {
            branch_forward(s, (i, &b.branch), u, memory)
        });
        if admin {
            ratio = next_admin_omega_of(&x, c.br(), ratio, b.lambda.value());
        }
        x = y;
    }
}
