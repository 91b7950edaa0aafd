//! The encoder-decoder Transformer (Vaswani et al. 2017, arXiv:1706.03762), the architecture
//! on which Xiong et al. 2020 (arXiv:2002.04745) and Liu et al. 2020 (arXiv:2004.08249) made
//! their claims about Post-LN. With N layers per stack, every block following its stack's
//! preset [`BlockSpec`](crate::spec::BlockSpec) exactly as [`TrainModel`](super::model::TrainModel)'s do:
//!
//! ```text
//! encoder  x_0 = E_s[:, a_t] + P_s[:, t]
//!          x_l = N_out( alpha_l x_{l-1} + lambda_l N_br( F_l( s_l N_in(x_{l-1}) ) ) ),  l = 1..2N
//!          F_l = self-attention within each source sequence (l odd), ReLU MLP (l even)
//!          m   = N_final(x_2N)                                  (the memory)
//! decoder  y_0 = E_t[:, b_t] + P_t[:, t]
//!          y_j = the same block equation,  j = 1..3N
//!          F_j = causal self-attention (j = 1 mod 3),
//!                cross-attention  W_O [softmax((W_Q u)_h^T (W_K m)_h / sqrt(d_h)) ...] with
//!                keys and values W_K m, W_V m of the same pair's source tokens (j = 2 mod 3),
//!                ReLU MLP (j = 0 mod 3)
//!          f   = H N_final(y_3N)                                (logits over the vocabulary)
//! ```
//!
//! Gradients reach the encoder only through `m`: `dL/dm = sum over cross-attention blocks of
//! W_K^T dL/dK + W_V^T dL/dV`. Liu et al. 2020 (Sec. 3) trace Post-LN's trouble to exactly
//! this block: its output does not depend on the decoder stream, so each Post-LN norm after
//! it shrinks the gradient toward the decoder's input by about `1/sqrt(2)`; the training log's
//! `stream_grad` rows measure that profile ([`super::trainable`]).
//!
//! Presets: each stack is the preset's stack at its own depth (2N and 3N blocks), with one
//! exception: `deepnorm` takes DeepNet's encoder-decoder constants (Wang et al. 2022,
//! arXiv:2203.00555, Table 1), the `deepnorm-ed-enc` preset for the encoder (`alpha = 0.81
//! (N^4 M)^(1/16)`, `beta = 0.87 (N^4 M)^(-1/16)`) and `deepnorm-ed-dec` for the decoder
//! (`alpha = (3M)^(1/4)`, `beta = (12M)^(-1/4)`), M = N; beta scales the MLP matrices and the
//! value and output projections of every attention, cross-attention's included, as
//! `microsoft/torchscale` does (`architecture/decoder.py` scales every `v_proj`, `out_proj`,
//! `fc1`, `fc2` of the decoder, `encoder_attn` included). torchscale writes the encoder's beta
//! as `1 / 1.15 = 0.8696`; the paper's table, and this model, 0.87. Admin's `omega` is
//! profiled on the first batch per stack ([`init`]).
//!
//! **Layers** ([`ParamInfo::layer`](super::model::ParamInfo), and the log's `layer`): the two
//! stacks one after the other, each numbered as a decoder-only model (input map, blocks, top):
//!
//! | layer | encoder | | layer | decoder |
//! |---|---|---|---|---|
//! | 0 | source embeddings | | 2N + 2 | target embeddings |
//! | 1..=2N | encoder blocks | | 2N + 3..=5N + 2 | decoder blocks (decoder block j at 2N + 2 + j) |
//! | 2N + 1 | the encoder's output norm (if any) | | 5N + 3 | the decoder's output norm, the head |
//!
//! [`part`] maps a layer to its stack (the log's `part` column). Per-layer values:
//! `stream_grad` at layer l is `||dL/dx||_F / sqrt(n)` of the stream leaving that layer (the
//! embeddings' output at 0 and 2N + 2, block outputs, and at 2N + 1 the memory `m`, the
//! gradient arriving at the encoder's output through every cross-attention block); at each
//! cross-attention block's layer, `memory_grad` is the part of `dL/dm` that block sends. In
//! the parameter names cross-attention's matrices are `cross.wq`, `cross.wk`, `cross.wv`,
//! `cross.wo`.

pub mod init;
pub mod pass;

use super::layer_norm::NormLayer;
use super::model::{ParamInfo, TrainBlock};
use crate::spec::StackSpec;
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// Which stack a layer belongs to.
///
/// # Examples
///
/// With N = 2 layers per stack the encoder holds layers 0..=5 and the decoder 6..=13.
///
/// ```rust
/// use normscope_core::train::seq2seq::{Part, part};
/// assert_eq!((part(2, 5), part(2, 6)), (Part::Encoder, Part::Decoder));
/// assert_eq!(Part::Decoder.name(), "decoder");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Layers `0..=2N + 1`.
    Encoder,
    /// Layers `2N + 2..=5N + 3`.
    Decoder,
}

impl Part {
    /// `encoder` or `decoder`.
    pub fn name(self) -> &'static str {
        match self {
            Part::Encoder => "encoder",
            Part::Decoder => "decoder",
        }
    }
}

/// The stack of `layer` in a model of `layers` layers per stack (the numbering of the module
/// docs).
pub fn part(layers: usize, layer: usize) -> Part {
    if layer <= 2 * layers + 1 {
        Part::Encoder
    } else {
        Part::Decoder
    }
}

/// What a decoder block computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecoderBlock {
    /// Causal self-attention.
    SelfAttention,
    /// Cross-attention to the encoder's output.
    CrossAttention,
    /// ReLU MLP.
    Mlp,
}

impl DecoderBlock {
    /// Decoder block j (1-based): self-attention, cross-attention, MLP, repeating.
    pub fn of(j: usize) -> Self {
        match j % 3 {
            1 => DecoderBlock::SelfAttention,
            2 => DecoderBlock::CrossAttention,
            _ => DecoderBlock::Mlp,
        }
    }
}

/// One stack: token and learned position embeddings (as [`InputMap::Embedding`]), the blocks
/// and the output norm.
///
/// [`InputMap::Embedding`]: super::model::InputMap::Embedding
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
/// use normscope_core::train::seq2seq::Part;
/// let (enc, dec) = (&m.encoder, &m.decoder);
/// assert_eq!((enc.part, enc.spec.depth, dec.spec.depth), (Part::Encoder, 2, 3));
/// assert_eq!((enc.tokens.shape(), enc.positions.shape()), ((8, 5), (8, 3)));
/// assert!(enc.final_norm.is_some() && dec.is_cross(1) && !enc.is_cross(1));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Stack<T: Real = f64> {
    /// Encoder or decoder.
    pub part: Part,
    /// The preset's stack at this depth (2N or 3N blocks).
    pub spec: StackSpec,
    /// `E`, d x vocab.
    pub tokens: DMatrix<T>,
    /// `P`, d x tokens per sequence.
    pub positions: DMatrix<T>,
    /// Block l at index l - 1.
    pub blocks: Vec<TrainBlock<T>>,
    /// The output norm, if the preset has one.
    pub final_norm: Option<NormLayer<T>>,
}

/// An encoder-decoder Transformer in float type `T`.
///
/// # Examples
///
/// Layers: the encoder 0..=3 (embeddings, 2 blocks, output norm), the decoder 4..=8
/// (embeddings, 3 blocks, output norm and head); the decoder's second block is
/// cross-attention.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::RawMc;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
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
/// assert_eq!((m.layers, m.width()), (1, 8));
/// assert_eq!((m.decoder_first(), m.layer_count()), (4, 9));
/// assert_eq!((m.encoder.blocks.len(), m.decoder.blocks.len()), (2, 3));
/// assert!(m.decoder.is_cross(1) && !m.decoder.is_cross(0));
/// assert_eq!(m.params().last().unwrap().0.layer, 8);
/// assert_eq!(m.forward(b).output.shape(), (5, 6));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct EncDec<T: Real = f64> {
    /// Layers N per stack.
    pub layers: usize,
    /// Norm epsilon.
    pub eps: f64,
    /// Whether forward passes train or evaluate ([`crate::train::model::TrainModel::training`]).
    pub training: bool,
    /// The encoder (2N blocks).
    pub encoder: Stack<T>,
    /// The decoder (3N blocks).
    pub decoder: Stack<T>,
    /// The head `H`, vocab x d.
    pub head: DMatrix<T>,
}

impl<T: Real> Stack<T> {
    /// Whether block i (0-based) is a cross-attention block (the decoder's blocks 2, 5, ...).
    pub fn is_cross(&self, i: usize) -> bool {
        self.part == Part::Decoder && DecoderBlock::of(i + 1) == DecoderBlock::CrossAttention
    }

    /// Its parameters from layer `first` (its embeddings) on: embeddings, blocks, output norm,
    /// each with its layer, in the order its gradients come.
    fn params(&self, first: usize) -> Vec<(ParamInfo, &DMatrix<T>)> {
        let info = |layer, name: String, decay| ParamInfo { layer, name, decay };
        let mut out = vec![
            (info(first, "embedding".into(), true), &self.tokens),
            (info(first, "positions".into(), true), &self.positions),
        ];
        for (i, b) in self.blocks.iter().enumerate() {
            let prefix = if self.is_cross(i) { "cross." } else { "" };
            for (name, m, decay) in b.named_params(prefix) {
                out.push((info(first + i + 1, name, decay), m));
            }
        }
        let top = first + self.blocks.len() + 1;
        for (name, m) in self.final_norm.iter().flat_map(|n| n.params()) {
            out.push((info(top, format!("final.{name}"), false), m));
        }
        out
    }

    /// The same parameters, mutable.
    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        let mut out = vec![&mut self.tokens, &mut self.positions];
        for b in &mut self.blocks {
            out.extend(b.params_mut());
        }
        if let Some(n) = &mut self.final_norm {
            out.extend(n.params_mut());
        }
        out
    }
}

impl<T: Real> EncDec<T> {
    /// Width d.
    pub fn width(&self) -> usize {
        self.head.ncols()
    }

    /// The first layer of the decoder, `2N + 2` (its embeddings).
    pub fn decoder_first(&self) -> usize {
        2 * self.layers + 2
    }

    /// Layers in all, `5N + 4`.
    pub fn layer_count(&self) -> usize {
        5 * self.layers + 4
    }

    /// Every parameter with where it sits (the module docs' layers), in the order of
    /// [`Self::params_mut`] and of the gradients [`Self::backward`] returns: the encoder's
    /// embeddings, blocks and output norm, then the decoder's, then the head.
    pub fn params(&self) -> Vec<(ParamInfo, &DMatrix<T>)> {
        let mut out = self.encoder.params(0);
        out.extend(self.decoder.params(self.decoder_first()));
        out.push((
            ParamInfo {
                layer: self.layer_count() - 1,
                name: "head".into(),
                decay: true,
            },
            &self.head,
        ));
        out
    }

    /// The parameters, mutable, in [`Self::params`] order.
    pub fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        let mut out = self.encoder.params_mut();
        out.extend(self.decoder.params_mut());
        out.push(&mut self.head);
        out
    }

    /// Number of scalar parameters.
    pub fn size(&self) -> usize {
        self.params().iter().map(|(_, m)| m.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_number_the_encoder_then_the_decoder() {
        // N = 2: encoder 0..=5 (embeddings, 4 blocks, output norm), decoder 6..=13.
        assert_eq!(part(2, 0), Part::Encoder);
        assert_eq!(part(2, 5), Part::Encoder);
        assert_eq!(part(2, 6), Part::Decoder);
        assert_eq!(part(2, 13), Part::Decoder);
        let kinds: Vec<DecoderBlock> = (1..=6).map(DecoderBlock::of).collect();
        use DecoderBlock::*;
        assert_eq!(
            kinds,
            [
                SelfAttention,
                CrossAttention,
                Mlp,
                SelfAttention,
                CrossAttention,
                Mlp
            ]
        );
    }
}
