//! Draws a network: input tokens, a cross-attention memory, and every block's weights, with
//! the `--gain` rescaling of the output matrix (so the expected forward gain is g, as in the
//! closed form) and DeepNet's beta on the scaled matrices.

use super::network::Network;
use super::sample::{self, into_real};
use super::sampling::McConfig;
use crate::branch::attention::Attention;
use crate::branch::cross_attention::CrossAttention;
use crate::branch::init::truncation_factor;
use crate::branch::linear::Linear;
use crate::branch::mlp::Mlp;
use crate::branch::{Block, Branch, Init};
use crate::spec::StackSpec;
use nalgebra::{DMatrix, DVector};
use normscope_numeric::gemm::Real;
use normscope_numeric::rng::Rng;

/// Standard deviation of one entry of a `rows x cols` matrix drawn by [`sample::matrix`].
fn entry_std(init: Init, rows: usize, cols: usize, scale: f64) -> f64 {
    let (fan_in, fan_out) = (cols as f64, rows as f64);
    let v = match init {
        // BERT's variance is of the truncated law (its nominal 0.02 is before truncation).
        Init::Bert => crate::branch::init::BERT_STD.powi(2) * truncation_factor(2.0),
        Init::Xavier | Init::He | Init::TorchDefault => init.variance(fan_in, fan_out),
    };
    v.sqrt() * scale
}

/// The network's input `x_0` (d x n) and, for cross-attention stacks, the memory's token mean,
/// drawn first from the network's stream (before any block's weights).
pub fn draw_inputs<T: Real>(cfg: &McConfig, rng: &mut Rng) -> (DMatrix<T>, Option<DVector<T>>) {
    let m = &cfg.model;
    let (d, n) = (m.branch.width, m.branch.tokens);
    let (q0, c0) = (m.inputs.q0, m.inputs.c0);
    // `--batch` sequences drawn one after the other, side by side (one sequence: the draws of
    // an unbatched input).
    let mut input = DMatrix::<T>::zeros(d, n * cfg.batch);
    for b in 0..cfg.batch {
        let seq = into_real::<T>(sample::tokens(rng, d, n, q0, c0));
        input.columns_mut(b * n, n).copy_from(&seq);
    }
    let memory_mean = (cfg.block(1) == Block::CrossAttention).then(|| {
        let mem = sample::tokens(rng, d, n, q0, c0);
        mem.column_mean().map(T::of)
    });
    (input, memory_mean)
}

/// One weight matrix as the sampler draws it: `rows x cols` from the run's init, times `scale`
/// ([`sample::matrix_in`]).
///
/// # Examples
///
/// ```rust
/// use normscope_core::branch::init::Init;
/// use normscope_core::monte_carlo::sampler::MatrixDraw;
/// use normscope_numeric::rng::Rng;
/// use rand::SeedableRng;
/// // He init of a 3 x 8 matrix: std sqrt(2 / 8) = 0.5, times the scale 2.
/// let m = MatrixDraw { rows: 3, cols: 8, scale: 2.0 };
/// assert_eq!(m.std(Init::He), 1.0);
/// let w = m.draw::<f64>(Init::He, &mut Rng::seed_from_u64(0));
/// assert_eq!(w.shape(), (3, 8));
/// // The same stream gives the same matrix, and f32 is the f64 draw rounded.
/// let w32 = m.draw::<f32>(Init::He, &mut Rng::seed_from_u64(0));
/// assert_eq!(w32, w.map(|x| x as f32));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatrixDraw {
    /// Rows (fan-out).
    pub rows: usize,
    /// Columns (fan-in).
    pub cols: usize,
    /// Factor on the init's entries (DeepNet's beta, the `--gain` rescaling).
    pub scale: f64,
}

impl MatrixDraw {
    /// The matrix, drawn from `rng` in `T` (drawn in f64 and rounded).
    pub fn draw<T: Real>(self, init: Init, rng: &mut Rng) -> DMatrix<T> {
        sample::matrix_in::<T>(rng, init, self.rows, self.cols, self.scale)
    }

    /// Standard deviation of one entry.
    pub fn std(self, init: Init) -> f64 {
        entry_std(init, self.rows, self.cols, self.scale)
    }
}

/// The `--gain` rescaling of the output matrix of a block computing `block`: `sqrt(g /
/// g_unit)` with `g_unit` the branch's nominal gain at unit scale (1 without `--gain`).
fn gain_scale(cfg: &McConfig, block: Block) -> f64 {
    match cfg.model.branch.gain {
        Some(g) => {
            let unit = cfg.proxy_for(block).nominal_gain;
            if unit > 0.0 { (g / unit).sqrt() } else { 1.0 }
        }
        None => 1.0,
    }
}

/// An MLP block's two matrices in drawing order: `W1` (rd x d, times DeepNet's beta) and `W2`
/// (d x rd, times beta and the `--gain` rescaling). [`draw_block`] draws them one after the
/// other from the same stream, so drawing `W1` then `W2` from a generator saved before the
/// block gives the same matrices.
pub fn mlp_draws(spec: &StackSpec, cfg: &McConfig, l: usize) -> [MatrixDraw; 2] {
    mlp_draws_scaled(spec, cfg, gain_scale(cfg, cfg.block(l)))
}

/// [`mlp_draws`] with the `--gain` rescaling of `W2` given.
fn mlp_draws_scaled(spec: &StackSpec, cfg: &McConfig, gain_scale: f64) -> [MatrixDraw; 2] {
    let d = cfg.model.branch.width;
    let (h, beta) = (hidden(cfg), spec.beta.unwrap_or(1.0));
    [
        MatrixDraw {
            rows: h,
            cols: d,
            scale: beta,
        },
        MatrixDraw {
            rows: d,
            cols: h,
            scale: gain_scale * beta,
        },
    ]
}

/// Block l's branch and the init standard deviation of each of its matrices, drawn from `rng`
/// (the draws of [`network`] for this block, in the same order, so a generator saved just
/// before them regenerates the same weights bit for bit).
pub fn draw_block<T: Real>(
    spec: &StackSpec,
    cfg: &McConfig,
    l: usize,
    memory_mean: Option<&DVector<T>>,
    rng: &mut Rng,
) -> (Branch<T>, Vec<f64>) {
    draw_branch(spec, cfg, cfg.block(l), memory_mean, rng)
}

/// A branch computing `block` and the init standard deviation of each of its matrices, drawn
/// from `rng` as [`draw_block`] draws a block of that kind in `spec` (DeepNet's `spec.beta` on
/// the MLP's matrices and attention's V and O, the `--gain` rescaling of the last matrix):
/// what a stack whose blocks do not follow `cfg`'s branch kind (the encoder-decoder model's
/// decoder, [`crate::train::seq2seq`]) draws per block. Softmax attention (4 matrices) is
/// drawn for cross-attention to an encoder as well.
pub fn draw_branch<T: Real>(
    spec: &StackSpec,
    cfg: &McConfig,
    block: Block,
    memory_mean: Option<&DVector<T>>,
    rng: &mut Rng,
) -> (Branch<T>, Vec<f64>) {
    let d = cfg.model.branch.width;
    let beta = spec.beta.unwrap_or(1.0);
    let init = cfg.init();
    let gain_scale = gain_scale(cfg, block);
    let square = |scale: f64| MatrixDraw {
        rows: d,
        cols: d,
        scale,
    };
    let mut mat = |m: MatrixDraw, out: &mut Vec<f64>| {
        out.push(m.std(init));
        m.draw::<T>(init, rng)
    };
    let mut s = Vec::new();
    let b = match block {
        Block::Linear => Branch::Linear(Linear {
            w: mat(square(gain_scale * beta), &mut s),
        }),
        Block::Mlp(act) => {
            let [first, last] = mlp_draws_scaled(spec, cfg, gain_scale);
            let w1 = mat(first, &mut s);
            let w2 = mat(last, &mut s);
            Branch::Mlp(Mlp { w1, w2, act })
        }
        Block::Attention { uniform } => {
            let (wq, wk) = if uniform {
                (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0))
            } else {
                (mat(square(1.0), &mut s), mat(square(1.0), &mut s))
            };
            let wv = mat(square(beta), &mut s);
            let wo = mat(square(gain_scale * beta), &mut s);
            Branch::Attention(Attention {
                wq,
                wk,
                wv,
                wo,
                heads: cfg.heads,
                uniform,
                causal: false,
                seq: 0,
            })
        }
        Block::CrossAttention => {
            let wv = mat(square(beta), &mut s);
            let wo = mat(square(gain_scale * beta), &mut s);
            Branch::Cross(CrossAttention {
                wv,
                wo,
                memory_mean: memory_mean.expect("memory drawn").clone(),
            })
        }
    };
    (b, s)
}

/// Hidden width of an MLP branch: `round(hidden_ratio d)`, at least 1.
pub fn hidden(cfg: &McConfig) -> usize {
    let b = &cfg.model.branch;
    (b.hidden_ratio * b.width as f64).round().max(1.0) as usize
}

/// Samples network `spec` under `cfg` from `rng`, in float type `T` (weights are drawn in
/// f64 and rounded, so an f32 network is the f64 one rounded): [`draw_inputs`], then
/// [`draw_block`] for l = 1..=L.
pub fn network<T: Real>(spec: &StackSpec, cfg: &McConfig, rng: &mut Rng) -> Network<T> {
    let (input, memory_mean) = draw_inputs::<T>(cfg, rng);
    let mut branches = Vec::with_capacity(spec.depth);
    let mut stds = Vec::with_capacity(spec.depth);
    for l in 1..=spec.depth {
        let (b, s) = draw_block(spec, cfg, l, memory_mean.as_ref(), rng);
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
