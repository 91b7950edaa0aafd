//! Forward and backward passes of the encoder-decoder model ([`super`]), built from the
//! decoder-only model's per-block passes ([`crate::train::pass`]: the same norm slots, skip
//! and branch multiplier, in the same order of operations) and [`Attention`]'s self- and
//! cross-attention. Backward runs the decoder from the loss down to its embeddings, summing
//! the gradient every cross-attention block sends to the memory `m`, then the encoder from
//! `dL/dm`; gradients come back in [`EncDec::params`] order.
//!
//! Generic over the float type like the decoder-only passes: products and activations in `T`,
//! sums of squares and the loss accumulated in f64.

use super::{EncDec, Stack};
use crate::branch::attention::Attention;
use crate::branch::{Branch, Cache, Module};
use crate::monte_carlo::norm::NormCache;
use crate::norms::running::Running;
use crate::train::diagnostics::{self, AttentionStats};
use crate::train::layer_norm::Mode;
use crate::train::pass::{
    self, BlockCache, Target, backward_blocks, embed_tokens, embedding_grads, forward_blocks,
    head_backward, running_after, set_running, slot, slot_back, stack_caches, stack_norm_slots,
    stack_norm_slots_mut,
};
use crate::train::task::{Batch, PairBatch};
use crate::train::trainable::{Gradients, LayerValue, Probe, Trainable, stream_values};
use nalgebra::DMatrix;
use normscope_numeric::gemm::{Real, nn};
use std::borrow::Cow;

/// One stack's forward pass.
///
/// # Examples
///
/// The encoder's pass over 2 pairs of 3 tokens: 6 token columns, `x_0..=x_2`, and its top is
/// the final norm's output, the decoder's memory.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # use normscope_core::model::RawModel;
/// # use normscope_core::monte_carlo::RawMc;
/// # use normscope_core::train::config::RawTrain;
/// # use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
/// # use normscope_core::train::run;
/// // N = 1 layer per stack (2 encoder and 3 decoder blocks) of width 8, vocabulary 5,
/// // sequences of 3 tokens, batches of 2 pairs.
/// # let raw = RawTrain {
/// #     presets: "pre".into(),
/// #     arch: "encoder-decoder".into(),
/// #     layers: Some(1),
/// #     model: RawModel { branch: "transformer".into(), width: 8, ..RawModel::default() },
/// #     mc: RawMc { heads: 2, ..RawMc::default() },
/// #     task: TaskConfig { kind: TaskKind::ReversePairs, vocab: 5, seq: 3, ..TaskConfig::default() },
/// #     batch: 2,
/// #     ..RawTrain::default()
/// # };
/// # let cfg = raw.check()?;
/// # let task = task::build(&cfg.task)?;
/// let (m, _, first) = run::start_encdec::<f64>(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let Batch::Pairs(b) = &first else { panic!("pairs") };
/// let p = m.forward(b);
/// let enc = &p.encoder;
/// assert_eq!((enc.xs.len(), enc.blocks.len(), enc.xs[2].shape()), (3, 2, (8, 6)));
/// assert_eq!(&enc.top, &enc.final_norm.as_ref().unwrap().y); // gain 1, bias 0 at init
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct StackPass<T: Real = f64> {
    /// The streams `x_0..=x_L`.
    pub xs: Vec<DMatrix<T>>,
    /// Block l at index l - 1.
    pub blocks: Vec<BlockCache<T>>,
    /// The output norm's cache.
    pub final_norm: Option<NormCache<T>>,
    /// `N_final(x_L)` (or `x_L`): the memory `m` of the encoder, the head's input of the
    /// decoder.
    pub top: DMatrix<T>,
}

/// A forward pass of the whole model.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # use normscope_core::model::RawModel;
/// # use normscope_core::monte_carlo::RawMc;
/// # use normscope_core::train::config::RawTrain;
/// # use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
/// # use normscope_core::train::run;
/// // N = 1 layer per stack (2 encoder and 3 decoder blocks) of width 8, vocabulary 5,
/// // sequences of 3 tokens, batches of 2 pairs.
/// # let raw = RawTrain {
/// #     presets: "pre".into(),
/// #     arch: "encoder-decoder".into(),
/// #     layers: Some(1),
/// #     model: RawModel { branch: "transformer".into(), width: 8, ..RawModel::default() },
/// #     mc: RawMc { heads: 2, ..RawMc::default() },
/// #     task: TaskConfig { kind: TaskKind::ReversePairs, vocab: 5, seq: 3, ..TaskConfig::default() },
/// #     batch: 2,
/// #     ..RawTrain::default()
/// # };
/// # let cfg = raw.check()?;
/// # let task = task::build(&cfg.task)?;
/// let (m, _, first) = run::start_encdec::<f64>(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let Batch::Pairs(b) = &first else { panic!("pairs") };
/// let p = m.forward(b);
/// assert_eq!((p.encoder.blocks.len(), p.decoder.blocks.len()), (2, 3));
/// assert_eq!(p.output.shape(), (5, 6)); // vocab x target tokens
/// assert!((&p.output - &m.head * &p.decoder.top).amax() < 1e-12); // the head on the decoder's top
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct EncDecPass<T: Real = f64> {
    /// The encoder's.
    pub encoder: StackPass<T>,
    /// The decoder's.
    pub decoder: StackPass<T>,
    /// The logits, vocab x target tokens.
    pub output: DMatrix<T>,
}

/// The attention module of a block that has one.
fn attention<T: Real>(b: &Branch<T>) -> &Attention<T> {
    match b {
        Branch::Attention(a) => a,
        _ => panic!("a cross-attention block holds softmax attention"),
    }
}

/// The attention cache of a block that has one.
fn attention_cache<T: Real>(c: &Cache<T>) -> &crate::branch::attention::AttentionCache<T> {
    match c {
        Cache::Attention(a) => a,
        _ => panic!("a cross-attention block's cache"),
    }
}

/// Block i's branch of `stack` on `u`: cross-attention to `memory` (`mem_len` tokens per
/// sequence) for a cross-attention block, the branch's own forward pass otherwise.
pub(super) fn branch_forward<T: Real>(
    stack: &Stack<T>,
    (i, b): (usize, &Branch<T>),
    u: &DMatrix<T>,
    memory: Option<(&DMatrix<T>, usize)>,
) -> (DMatrix<T>, Cache<T>) {
    match memory {
        Some((m, len)) if stack.is_cross(i) => {
            let (y, c) = attention(b).forward_cross(u, m, len);
            (y, Cache::Attention(c))
        }
        _ => b.forward(u),
    }
}

impl<T: Real> Stack<T> {
    /// The stack's forward pass on `ids` (`seq` tokens per sequence), cross-attention blocks
    /// reading `memory` (`mem_len` tokens per sequence).
    pub(crate) fn forward(
        &self,
        mode: Mode,
        (ids, seq): (&[u32], usize),
        memory: Option<(&DMatrix<T>, usize)>,
    ) -> StackPass<T> {
        let mode = Mode { seq, ..mode };
        let x0 = embed_tokens(&self.tokens, &self.positions, ids, seq);
        let (xs, blocks) = forward_blocks(&self.blocks, mode, x0, |i, b, u| {
            branch_forward(self, (i, &b.branch), u, memory)
        });
        let (final_norm, top) = slot(
            &self.final_norm,
            mode,
            Cow::Borrowed(xs.last().expect("x_L")),
        );
        let top = top.into_owned();
        StackPass {
            xs,
            blocks,
            final_norm,
            top,
        }
    }
}

/// What the backward pass returns besides the gradients.
///
/// # Examples
///
/// The backward pass of the loss: stream gradients at the encoder's 3 boundaries and the
/// decoder's 4, and the one cross-attention block (decoder block 2) sending its part to the
/// memory.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::RawMc;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
/// use normscope_core::train::pass::{Target, loss};
/// use normscope_core::train::run;
///
/// // N = 1 layer per stack (2 encoder and 3 decoder blocks) of width 8, 2 heads, reverse-pairs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     arch: "encoder-decoder".into(),
///     layers: Some(1),
///     model: RawModel { branch: "transformer".into(), width: 8, ..RawModel::default() },
///     mc: RawMc { heads: 2, ..RawMc::default() },
///     task: TaskConfig {
///         kind: TaskKind::ReversePairs,
///         vocab: 5,
///         seq: 3,
///         ..TaskConfig::default()
///     },
///     batch: 2,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let (m, _, first) = run::start_encdec::<f64>(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let Batch::Pairs(b) = &first else { panic!("pairs") };
///
/// let p = m.forward(b);
/// let (_, g) = loss(&p.output, Target::Classes { ids: &b.targets, weights: &b.weights });
/// let (grads, s) = m.backward(b, &p, &g);
/// assert_eq!(grads.len(), m.params().len());
/// assert_eq!((s.encoder.len(), s.decoder.len()), (3, 4));
/// assert_eq!(s.cross.len(), 1);
/// assert_eq!(s.cross[0].0, 2);
/// assert_eq!(s.memory, s.cross[0].1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Streams {
    /// `||dL/dx_l||_F^2` of the encoder, l = 0..=2N.
    pub encoder: Vec<f64>,
    /// `||dL/dm||_F^2`.
    pub memory: f64,
    /// `||dL/dy_j||_F^2` of the decoder, j = 0..=3N.
    pub decoder: Vec<f64>,
    /// `(decoder block index j, ||the part of dL/dm block j sends||_F^2)` per cross-attention
    /// block.
    pub cross: Vec<(usize, f64)>,
}

impl<T: Real> EncDec<T> {
    /// How its norm slots run: its epsilon, training or evaluation ([`Self::training`]); each
    /// stack sets the tokens per sequence of its own columns.
    pub fn mode(&self) -> Mode {
        Mode {
            eps: self.eps,
            seq: 1,
            training: self.training,
        }
    }

    /// BatchNorm's running statistics after the training pass `p`, one per BatchNorm slot,
    /// the encoder's before the decoder's (empty without one, or in evaluation mode).
    pub fn running_after(&self, p: &EncDecPass<T>) -> Vec<Running> {
        let (enc, dec) = (&self.encoder, &self.decoder);
        running_after(
            stack_norm_slots(&enc.blocks, &enc.final_norm)
                .chain(stack_norm_slots(&dec.blocks, &dec.final_norm)),
            stack_caches(&p.encoder.blocks, &p.encoder.final_norm)
                .chain(stack_caches(&p.decoder.blocks, &p.decoder.final_norm)),
        )
    }

    /// The forward pass of a batch of pairs.
    pub fn forward(&self, b: &PairBatch) -> EncDecPass<T> {
        let encoder = self
            .encoder
            .forward(self.mode(), (&b.source, b.src_len), None);
        let decoder = self.decoder.forward(
            self.mode(),
            (&b.inputs, b.tgt_len),
            Some((&encoder.top, b.src_len)),
        );
        let output = nn(&self.head, &decoder.top);
        EncDecPass {
            encoder,
            decoder,
            output,
        }
    }

    /// Gradients of every parameter, in [`Self::params`] order, for the output gradient
    /// `g = dL/df` of the pass `p` of `b`, and the stream gradients' squared norms.
    pub fn backward(
        &self,
        b: &PairBatch,
        p: &EncDecPass<T>,
        g: &DMatrix<T>,
    ) -> (Vec<DMatrix<T>>, Streams) {
        let (dec, enc) = (&self.decoder, &self.encoder);
        let m = &p.encoder.top;
        let (gy, top_grads) = head_backward(
            &self.head,
            (&dec.final_norm, &p.decoder.final_norm),
            &p.decoder.top,
            g,
        );
        let mut gm: DMatrix<T> = DMatrix::zeros(m.nrows(), m.ncols());
        let mut cross = Vec::new();
        let d_body = backward_blocks(
            &dec.blocks,
            (&p.decoder.xs, &p.decoder.blocks),
            gy,
            |i, blk, c, g_o| {
                if !dec.is_cross(i) {
                    return blk.branch.backward(c, g_o);
                }
                let a = attention(&blk.branch);
                let (gu, gm_i, w) = a.backward_cross(attention_cache(c), g_o, m, b.src_len);
                cross.push((i + 1, T::sum_sq(&gm_i)));
                gm += gm_i;
                (gu, w)
            },
        );
        cross.reverse();
        let memory = T::sum_sq(&gm);
        let mut enc_top = Vec::new();
        let gx = slot_back(&enc.final_norm, &p.encoder.final_norm, gm, &mut enc_top);
        let e_body = backward_blocks(
            &enc.blocks,
            (&p.encoder.xs, &p.encoder.blocks),
            gx,
            |_, blk, c, g_o| blk.branch.backward(c, g_o),
        );
        let vocab = self.head.nrows();
        let mut out = embedding_grads(&e_body.g0, (vocab, b.src_len), &b.source);
        out.extend(e_body.grads.into_iter().flatten());
        out.extend(enc_top);
        out.extend(embedding_grads(&d_body.g0, (vocab, b.tgt_len), &b.inputs));
        out.extend(d_body.grads.into_iter().flatten());
        out.extend(top_grads);
        let streams = Streams {
            encoder: e_body.stream_sq,
            memory,
            decoder: d_body.stream_sq,
            cross,
        };
        (out, streams)
    }

    /// The per-layer values of [`Streams`] for `b` (the module docs' layers): `stream_grad` of
    /// both stacks and of the memory, `memory_grad` per cross-attention block, each
    /// `||.||_F / sqrt(columns)`.
    pub(crate) fn stream_values(&self, b: &PairBatch, s: &Streams) -> Vec<LayerValue> {
        let (src, tgt) = (b.source.len(), b.inputs.len());
        let first = self.decoder_first();
        let mut out = stream_values(0, &s.encoder, src);
        out.extend(stream_values(first - 1, &[s.memory], src));
        out.extend(stream_values(first, &s.decoder, tgt));
        out.extend(s.cross.iter().map(|&(j, sq)| LayerValue {
            layer: first + j,
            metric: "memory_grad",
            value: sq.sqrt() / (src as f64).sqrt(),
        }));
        out
    }
}

/// The loss's target of a pair batch.
fn target<T: Real>(b: &PairBatch) -> Target<'_, T> {
    Target::Classes {
        ids: &b.targets,
        weights: &b.weights,
    }
}

/// The pairs of a batch; panics on another kind (the configuration check pairs the
/// encoder-decoder model with the reverse-pairs task).
fn pairs(b: &Batch) -> &PairBatch {
    match b {
        Batch::Pairs(p) => p,
        _ => panic!("the encoder-decoder model reads batches of pairs"),
    }
}

impl<T: Real> Trainable for EncDec<T> {
    type Real = T;

    fn params(&self) -> Vec<(crate::train::model::ParamInfo, &DMatrix<T>)> {
        EncDec::params(self)
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        EncDec::params_mut(self)
    }

    /// `5N + 4` (the module docs' layers).
    fn layers(&self) -> usize {
        self.layer_count()
    }

    fn gradients(&self, batch: &Batch) -> Gradients<T> {
        let b = pairs(batch);
        let p = self.forward(b);
        let (loss, g) = pass::loss(&p.output, target(b));
        let (grads, streams) = self.backward(b, &p, &g);
        Gradients {
            loss,
            grads,
            streams: self.stream_values(b, &streams),
            running: self.running_after(&p),
        }
    }

    fn set_training(&mut self, on: bool) {
        self.training = on;
    }

    fn has_running_statistics(&self) -> bool {
        let (enc, dec) = (&self.encoder, &self.decoder);
        stack_norm_slots(&enc.blocks, &enc.final_norm)
            .chain(stack_norm_slots(&dec.blocks, &dec.final_norm))
            .any(|n| n.running.is_some())
    }

    fn set_running(&mut self, running: Vec<Running>) {
        let (enc, dec) = (&mut self.encoder, &mut self.decoder);
        set_running(
            stack_norm_slots_mut(&mut enc.blocks, &mut enc.final_norm)
                .chain(stack_norm_slots_mut(&mut dec.blocks, &mut dec.final_norm)),
            running,
        );
    }

    fn batch_loss(&self, batch: &Batch) -> f64 {
        let b = pairs(batch);
        pass::loss(&self.forward(b).output, target(b)).0
    }

    fn output(&self, batch: &Batch) -> DMatrix<T> {
        self.forward(pairs(batch)).output
    }

    /// Norm-input RMS and attention statistics of both stacks (cross-attention's over the
    /// pair's source tokens), at the module docs' layers.
    fn probe(&self, batch: &Batch) -> Probe<T> {
        let b = pairs(batch);
        let p = self.forward(b);
        let first = self.decoder_first() + 1;
        let (enc, dec) = (&p.encoder, &p.decoder);
        let mut norm_inputs =
            diagnostics::blocks_norm_inputs(&self.encoder.blocks, (&enc.xs, &enc.blocks), 1);
        norm_inputs.extend(diagnostics::blocks_norm_inputs(
            &self.decoder.blocks,
            (&dec.xs, &dec.blocks),
            first,
        ));
        let mut attention: Vec<(usize, AttentionStats)> =
            diagnostics::blocks_attention(&self.encoder.blocks, &enc.blocks, 1, |_, a, ac| {
                a.span(ac.u.ncols())
            });
        let src = (enc.top.ncols(), b.src_len);
        attention.extend(diagnostics::blocks_attention(
            &self.decoder.blocks,
            &dec.blocks,
            first,
            |i, a, ac| match self.decoder.is_cross(i) {
                true => a.cross_span(ac.u.ncols(), src.0, src.1),
                false => a.span(ac.u.ncols()),
            },
        ));
        Probe {
            output: p.output,
            norm_inputs,
            attention,
        }
    }
}
