//! Next-token prediction on sequences from a random teacher Transformer (docs/training.md
//! section 2, tier 1: "its conditional entropy is the exact floor"). The teacher, of width `w`
//! (`--teacher-width`) and depth `L` (`--teacher-depth`), is a decoder-only Pre-LN
//! Transformer (Xiong et al. 2020) without positional embeddings:
//!
//! ```text
//! x_0[t]  = E[:, s_t]                                   (token embedding)
//! x'_l    = x_{l-1} + Attn_l(LN(x_{l-1}))               (causal softmax attention)
//! x_l     = x'_l + W2_l relu(W1_l LN(x'_l))             (ReLU MLP, hidden width w)
//! p(s_{t+1} | s_0..s_t) = softmax(H LN(x_L[t]) / temperature)
//! ```
//!
//! with E (`w x vocab`) standard normal, `Attn` the multi-head attention of
//! [`crate::branch::attention`] with [`TEACHER_HEADS`] heads and `W_Q, W_K, W_V, W_O`
//! Xavier-normal (`N(0, 1/w)`), `W1`, `W2` He-normal (`N(0, 2/w)`), H (`vocab x w`) of
//! entries `N(0, 1/w)`, LN the LayerNorm without affine (eps [`super::NORM_EPS`]). The logits
//! `H LN(x)` have standard deviation about 1 over the vocabulary, so `1/temperature` sets their
//! scale. Depth 0 is a first-order Markov chain (the teacher of the pilot in docs/training.md). Weights are
//! drawn from [`super::teacher_rng`] in the order E, then per layer `W_Q, W_K, W_V, W_O, W1,
//! W2`, then H.
//!
//! Sampling: `seq + 1` tokens per sequence, `s_0` uniform over the vocabulary, then `s_{t+1}`
//! from `p(. | s_0..s_t)` by inverting the CDF (in token order) at a uniform draw; the model
//! sees inputs `s_0..s_{seq-1}` and predicts targets `s_1..s_seq`, every position weighted 1.
//! The sampler runs the causal forward one position at a time with cached keys and values
//! (O(seq) layer passes per batch); [`TeacherLm::predictive`] runs the whole sequence at once
//! through [`crate::branch::attention::Attention`], and the tests check the two agree.
//!
//! **Rewiring** (`--teacher-rewire f`, for fine-tuning on a related language): after the
//! draws above, the embedding columns of `round(f vocab)` tokens are drawn anew from a stream
//! of `--teacher-rewire-seed` ([`rewired_count`]); every weight of the layers and the head is
//! kept, so the new language shares every rule except how the teacher reads those tokens.
//!
//! Floor of a batch: the mean over positions of the entropy of `p(. | prefix)`; its
//! expectation is the conditional entropy, the exact loss floor. Context-free loss: the entropy
//! of the targets' marginal `q = E_t E[p(. | prefix_t)]`, estimated from
//! [`super::CONTEXT_FREE_SAMPLE`] sequences drawn from [`super::estimate_rng`] by averaging
//! their predictive distributions (not counting tokens, which is noisier); computed on first
//! use, the same value whenever it is asked for, in parallel: chunks of sequences take their
//! draws from the stream in order and run on rayon, each in parts small enough for a core's
//! cache, and their sums are formed in the sequential order, so the bits do not depend on the
//! thread count ([`TeacherLm::context_free_loss`]).
//!
//! Measured at the defaults (vocab 16, seq 16, width 32, depth 2, temperature 0.45; floor on
//! 1024 sampled sequences): teacher seed 0 has floor 1.61 nats (58% of ln 16 = 2.77) and
//! context-free loss 2.40 (87%); over teacher seeds 0-15 the floor spans 29-63% of ln 16
//! (median 52%) and the context-free loss 43-92%. The spread is the teachers': a few
//! (seeds 9, 14) concentrate on a handful of tokens, which lowers both losses.
use super::{Batch, Io, NORM_EPS, Task, TaskConfig, TaskKind, TokenBatch};
use crate::Result;
use crate::branch::attention::Attention;
use crate::branch::{Activation, Init, Module, mlp::Mlp};
use crate::monte_carlo::norm;
use crate::monte_carlo::sample::{gaussian, matrix};
use crate::spec::NormKind;
use nalgebra::{DMatrix, DVector};
use normscope_numeric::rng::Rng;
use rand::RngExt;
use rayon::prelude::*;
use std::sync::OnceLock;

/// Attention heads of the teacher (the width must be a multiple).
pub const TEACHER_HEADS: usize = 2;

/// Sequences per chunk of the context-free estimate: the chunks take their draws from the
/// estimate's stream one after the other, so this size fixes the estimate's value.
pub const ESTIMATE_CHUNK: usize = 512;

/// Sequences the estimate's sampler runs together (a part of a chunk), so that its key and
/// value caches stay in a core's cache. A sequence's distributions do not depend on the others
/// it runs with (every product of the sampler has more than nalgebra's `SMALL_DIM` = 5
/// columns either way, and each column's arithmetic is its own), so the parts change no bit.
const ESTIMATE_PART: usize = 32;

// A part of a chunk has at least `ESTIMATE_PART / 2` sequences (or the whole chunk).
const _: () = assert!(ESTIMATE_PART / 2 > normscope_numeric::gemm::NALGEBRA_SMALL_DIM);

/// One Pre-LN layer: attention, then the MLP.
#[derive(Debug)]
struct Layer {
    attention: Attention<f64>,
    /// `[W_Q; W_K; W_V]` stacked (`3w x w`): the sampler's one product for the three. Each
    /// entry of a product is the same sum as in the product of its own block: matrixmultiply
    /// and nalgebra's small-matrix path order an entry's terms by the inner dimension alone.
    wqkv: DMatrix<f64>,
    mlp: Mlp<f64>,
}

/// The randomness of `size` sequences, drawn from the stream in the sampler's order: the
/// `size` first tokens, then one uniform per sequence and position, position by position.
/// Drawing it apart from the distributions it inverts lets chunks of the context-free estimate
/// take their draws from one stream in order and run in parallel.
#[derive(Debug)]
struct Draws {
    /// `s_0` of each sequence.
    first: Vec<u32>,
    /// The uniform of sequence b at position t, index `t * size + b`.
    uniforms: Vec<f64>,
}

impl Draws {
    fn new(rng: &mut Rng, size: usize, len: usize, vocab: u32) -> Draws {
        let first = (0..size).map(|_| rng.random_range(0..vocab)).collect();
        let uniforms = (0..size * len).map(|_| rng.random::<f64>()).collect();
        Draws { first, uniforms }
    }

    fn size(&self) -> usize {
        self.first.len()
    }

    /// The draws of sequences `range` alone.
    fn part(&self, range: std::ops::Range<usize>) -> Draws {
        let size = self.size();
        let uniforms = (0..self.uniforms.len() / size)
            .flat_map(|t| &self.uniforms[t * size..][range.clone()])
            .copied()
            .collect();
        Draws {
            first: self.first[range].to_vec(),
            uniforms,
        }
    }

    /// Sequences `0..size()` cut into `ceil(size / part)` ranges of near-equal sizes, each
    /// at least `min(size, part / 2)`.
    fn parts(&self, part: usize) -> Vec<std::ops::Range<usize>> {
        let size = self.size();
        let n = size.div_ceil(part).max(1);
        (0..n).map(|i| i * size / n..(i + 1) * size / n).collect()
    }
}

/// One layer's keys and values for `size` sequences of `len` positions, as the sampler fills
/// them position by position.
#[derive(Clone, Debug)]
struct KvCache {
    /// Keys transposed per sequence and head, index `((b * heads + h) * dh + i) * stride + j`
    /// (row i of head h's key at position j, `stride` = [`key_stride`]`(len)`): a query's
    /// scores over the positions j are computed side by side.
    keys: Vec<f64>,
    /// Values, column `b * len + j`.
    values: DMatrix<f64>,
}

/// The teacher-lm task and its teacher.
///
/// # Examples
///
/// A one-layer teacher of width 8 over a vocabulary of 4: its next-token distributions are
/// columns that sum to 1, and each target is the next input.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::teacher_lm::TeacherLm;
/// use normscope_core::train::task::{Batch, Task, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig {
///     kind: TaskKind::TeacherLm,
///     vocab: 4,
///     seq: 3,
///     teacher_depth: 1,
///     teacher_width: 8,
///     ..TaskConfig::default()
/// };
/// let teacher = TeacherLm::new(&cfg)?;
/// let p = teacher.predictive(&[0, 1, 2]);
/// assert_eq!(p.shape(), (4, 3));
/// for c in p.column_iter() {
///     assert!((c.sum() - 1.0).abs() < 1e-12);
/// }
/// let batch = teacher.batch(&mut data_rng(0), 2);
/// let Batch::Tokens(b) = &batch else { panic!("tokens") };
/// assert_eq!(b.targets[0..2], b.inputs[1..3]);
/// let floor = teacher.floor(&batch);
/// assert!(floor > 0.0 && floor <= 4f64.ln());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TeacherLm {
    /// Tokens per sequence the model sees.
    seq: usize,
    /// Softmax temperature.
    temperature: f64,
    /// E, `w x vocab`.
    embed: DMatrix<f64>,
    /// The layers.
    layers: Vec<Layer>,
    /// H, `vocab x w`.
    head: DMatrix<f64>,
    /// The teacher's seed (the context-free estimate's stream derives from it).
    teacher_seed: u64,
    /// The context-free loss, once estimated.
    context_free: OnceLock<f64>,
}

/// LayerNorm of every column.
fn ln(x: &DMatrix<f64>) -> DMatrix<f64> {
    norm::forward(NormKind::Layer, NORM_EPS, x).y
}

/// Softmax of every column: `p_i = exp(z_i - max z) / sum_j exp(z_j - max z)`.
fn softmax_columns(mut z: DMatrix<f64>) -> DMatrix<f64> {
    for mut c in z.column_iter_mut() {
        let m = c.max();
        c.apply(|x| *x = (*x - m).exp());
        let s = c.sum();
        c /= s;
    }
    z
}

/// Sums the sampler keeps side by side in registers.
const LANES: usize = 8;

/// Row stride of the transposed keys for `len` positions: `len` rounded up to [`LANES`], so
/// a block of lanes never leaves its row (the padding stays 0 and its sums are not read).
fn key_stride(len: usize) -> usize {
    len.next_multiple_of(LANES)
}

/// `s_j = k_{0,j} q_0 + k_{1,j} q_1 + ... + k_{dh-1,j} q_{dh-1}` for `j < s.len()`, each sum
/// in that order and unfused, from keys transposed with row stride `stride` (`dh` rows).
fn scores(keys: &[f64], stride: usize, q: &[f64], s: &mut [f64]) {
    for j0 in (0..s.len()).step_by(LANES) {
        let row = |i: usize| -> &[f64; LANES] {
            keys[i * stride + j0..][..LANES]
                .try_into()
                .expect("LANES keys")
        };
        let mut acc = row(0).map(|k| k * q[0]);
        for (i, &qi) in q.iter().enumerate().skip(1) {
            for (a, &k) in acc.iter_mut().zip(row(i)) {
                *a += k * qi;
            }
        }
        let n = LANES.min(s.len() - j0);
        s[j0..j0 + n].copy_from_slice(&acc[..n]);
    }
}

/// `out = v_0 p_0 + v_1 p_1 + ... + v_t p_t` (t + 1 = `p.len()`), each entry's sum in that
/// order and unfused, with `v_j` the `out.len()` values at `values[j * w..]`.
fn weighted_values(values: &[f64], w: usize, p: &[f64], out: &mut [f64]) {
    fn block<const N: usize>(values: &[f64], w: usize, p: &[f64], r0: usize, out: &mut [f64]) {
        let v = |j: usize| -> &[f64; N] { values[j * w + r0..][..N].try_into().expect("N values") };
        let mut acc = v(0).map(|x| x * p[0]);
        for (j, &pj) in p.iter().enumerate().skip(1) {
            for (a, &x) in acc.iter_mut().zip(v(j)) {
                *a += x * pj;
            }
        }
        out[r0..r0 + N].copy_from_slice(&acc);
    }
    let full = out.len() / LANES * LANES;
    for r0 in (0..full).step_by(LANES) {
        block::<LANES>(values, w, p, r0, out);
    }
    for r0 in full..out.len() {
        block::<1>(values, w, p, r0, out);
    }
}

/// The first index i with `u < p_0 + ... + p_i` (the inverse CDF at `u` in `[0, 1)`), or the
/// last index of positive probability if rounding leaves the total below u.
pub(crate) fn categorical<'a>(p: impl IntoIterator<Item = &'a f64>, u: f64) -> usize {
    let mut cum = 0.0;
    let mut last = 0;
    for (i, &x) in p.into_iter().enumerate() {
        cum += x;
        if x > 0.0 {
            last = i;
            if u < cum {
                return i;
            }
        }
    }
    last
}

/// The number of tokens `rewire` redraws: `round(fraction x vocab)`.
pub fn rewired_count(fraction: f64, vocab: usize) -> usize {
    ((fraction * vocab as f64).round() as usize).min(vocab)
}

/// Draws anew the embedding columns of `rewired_count(fraction, vocab)` tokens (a related
/// language: the teacher reacts differently to those tokens, and keeps every other rule). The
/// tokens are the first of a Fisher-Yates shuffle of `0..vocab`, then their new columns are
/// drawn in that order, all from `Xoshiro256++` seeded with `splitmix64(seed) ^ "rewire.."`.
fn rewire(embed: &mut DMatrix<f64>, fraction: f64, seed: u64) {
    let vocab = embed.ncols();
    let k = rewired_count(fraction, vocab);
    if k == 0 {
        return;
    }
    let mut rng = <Rng as rand::SeedableRng>::seed_from_u64(
        normscope_numeric::rng::splitmix64(seed) ^ 0x7265_7769_7265_0000,
    );
    let mut order: Vec<usize> = (0..vocab).collect();
    for i in 0..k {
        let j = rng.random_range(i..vocab);
        order.swap(i, j);
    }
    for &t in &order[..k] {
        let col = gaussian(&mut rng, embed.nrows(), 1);
        embed.column_mut(t).copy_from(&col.column(0));
    }
}

impl TeacherLm {
    /// Checks `cfg` as a teacher-lm config ([`TaskConfig::check_as`]) and draws the teacher.
    pub fn new(cfg: &TaskConfig) -> Result<Self> {
        cfg.check_as(TaskKind::TeacherLm)?;
        let mut rng = super::teacher_rng(cfg.teacher_seed);
        let w = cfg.teacher_width;
        let mut embed = gaussian(&mut rng, w, cfg.vocab);
        let layers = (0..cfg.teacher_depth)
            .map(|_| {
                let mut draw = |init| matrix(&mut rng, init, w, w, 1.0);
                let attention = Attention {
                    wq: draw(Init::Xavier),
                    wk: draw(Init::Xavier),
                    wv: draw(Init::Xavier),
                    wo: draw(Init::Xavier),
                    heads: TEACHER_HEADS,
                    uniform: false,
                    causal: true,
                    seq: cfg.seq,
                };
                let mut wqkv = DMatrix::zeros(3 * w, w);
                for (i, m) in [&attention.wq, &attention.wk, &attention.wv]
                    .iter()
                    .enumerate()
                {
                    wqkv.rows_mut(i * w, w).copy_from(*m);
                }
                Layer {
                    attention,
                    wqkv,
                    mlp: Mlp {
                        w1: draw(Init::He),
                        w2: draw(Init::He),
                        act: Activation::Relu,
                    },
                }
            })
            .collect();
        let head = gaussian(&mut rng, cfg.vocab, w) / (w as f64).sqrt();
        rewire(&mut embed, cfg.rewire, cfg.rewire_seed);
        Ok(TeacherLm {
            seq: cfg.seq,
            temperature: cfg.temperature,
            embed,
            layers,
            head,
            teacher_seed: cfg.teacher_seed,
            context_free: OnceLock::new(),
        })
    }

    fn vocab(&self) -> usize {
        self.embed.ncols()
    }

    fn width(&self) -> usize {
        self.embed.nrows()
    }

    /// `softmax(H LN(x) / temperature)` per column.
    fn readout(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        softmax_columns(&self.head * ln(x) / self.temperature)
    }

    /// The teacher's next-token distribution at every position of `inputs` (sequence-major,
    /// `seq` tokens per sequence, as in a [`TokenBatch`]): column `b * seq + t` is
    /// `p(. | s_0..s_t)` of sequence b (`vocab x inputs.len()`), one causal forward pass.
    ///
    /// # Panics
    /// If `inputs.len()` is not a multiple of `seq` or a token is outside the vocabulary.
    pub fn predictive(&self, inputs: &[u32]) -> DMatrix<f64> {
        assert_eq!(
            inputs.len() % self.seq,
            0,
            "whole sequences of {}",
            self.seq
        );
        let mut x = DMatrix::from_fn(self.width(), inputs.len(), |i, j| {
            self.embed[(i, inputs[j] as usize)]
        });
        for layer in &self.layers {
            x += layer.attention.forward(&ln(&x)).0;
            x += layer.mlp.forward(&ln(&x)).0;
        }
        self.readout(&x)
    }

    /// The randomness of `size` of this teacher's sequences, taken from `rng`.
    fn draws(&self, rng: &mut Rng, size: usize) -> Draws {
        Draws::new(rng, size, self.seq, self.vocab() as u32)
    }

    /// Samples `draws.size()` sequences of `seq + 1` tokens (sequence-major, `seq + 1` per
    /// sequence) from their randomness, calling `visit(t, p)` with the next-token
    /// distributions at position t (`vocab x size`) before drawing token `t + 1`.
    fn generate(&self, draws: &Draws, mut visit: impl FnMut(usize, &DMatrix<f64>)) -> Vec<u32> {
        let (w, len, span, size) = (self.width(), self.seq, self.seq + 1, draws.size());
        let mut tokens = vec![0u32; size * span];
        for (b, &s) in draws.first.iter().enumerate() {
            tokens[b * span] = s;
        }
        let cache = KvCache {
            keys: vec![0.0; w * size * key_stride(len)],
            values: DMatrix::zeros(w, size * len),
        };
        let mut caches = vec![cache; self.layers.len()];
        for t in 0..len {
            let mut x = DMatrix::from_fn(w, size, |i, b| {
                self.embed[(i, tokens[b * span + t] as usize)]
            });
            for (layer, cache) in self.layers.iter().zip(&mut caches) {
                x += self.attend_last(layer, &ln(&x), cache, t);
                x += layer.mlp.forward(&ln(&x)).0;
            }
            let p = self.readout(&x);
            visit(t, &p);
            for (b, &u) in draws.uniforms[t * size..][..size].iter().enumerate() {
                tokens[b * span + t + 1] = categorical(p.column(b).iter(), u) as u32;
            }
        }
        tokens
    }

    /// Causal attention output at position t of every sequence (`w x size`) for LayerNormed
    /// inputs `u` at t, after storing t's key and value: per head h,
    /// `o_h = sum_{j <= t} softmax_j(q_h . k_{h,j} / sqrt(d_h)) v_{h,j}`, then `W_O o`, as in
    /// [`Attention`]'s forward.
    fn attend_last(
        &self,
        layer: &Layer,
        u: &DMatrix<f64>,
        cache: &mut KvCache,
        t: usize,
    ) -> DMatrix<f64> {
        let a = &layer.attention;
        let (w, size, len) = (u.nrows(), u.ncols(), self.seq);
        let (dh, stride) = (w / a.heads, key_stride(len));
        let scale = 1.0 / (dh as f64).sqrt();
        let qkv = &layer.wqkv * u;
        let mut o = DMatrix::zeros(w, size);
        let mut score = DVector::zeros(t + 1);
        for b in 0..size {
            let c0 = b * len;
            let (q, kv) = qkv.as_slice()[b * 3 * w..][..3 * w].split_at(w);
            let (k, v) = kv.split_at(w);
            cache.values.as_mut_slice()[(c0 + t) * w..][..w].copy_from_slice(v);
            for h in 0..a.heads {
                let r = h * dh;
                let keys = &mut cache.keys[(b * a.heads + h) * dh * stride..][..dh * stride];
                for (i, &k) in k[r..r + dh].iter().enumerate() {
                    keys[i * stride + t] = k;
                }
                // `kh^T qh * scale` and `vh score / z` with kh, vh the head's keys and values
                // (dh x (t + 1)) with no temporaries: the arithmetic of nalgebra's
                // matrix-vector product (`gemv`), one sum per output entry in column order,
                // `x0 c0`, then `y + x_j c_j`, no fused multiply-add. Sums advance side by
                // side in registers, [`LANES`] at a time: the scores over positions (contiguous
                // in the transposed keys), the outputs over rows (contiguous in the values).
                scores(keys, stride, &q[r..r + dh], score.as_mut_slice());
                score *= scale;
                let m = score.max();
                score.apply(|s| *s = (*s - m).exp());
                let z = score.sum();
                let values = &cache.values.as_slice()[c0 * w + r..];
                let out = &mut o.as_mut_slice()[b * w + r..][..dh];
                weighted_values(values, w, score.as_slice(), out);
                out.iter_mut().for_each(|y| *y /= z);
            }
        }
        &a.wo * o
    }

    /// The entropy of the targets' marginal, estimated from [`super::CONTEXT_FREE_SAMPLE`]
    /// sequences: `H(mean of p(. | prefix) over sequences and positions)`, with the marginal
    /// summed chunk by chunk ([`ESTIMATE_CHUNK`] sequences, their draws taken in order from the
    /// one stream), position by position, each position's distributions summed over the
    /// chunk's sequences in order from zero (`DMatrix::column_sum`'s fold). The chunks run in
    /// parallel, each in parts of [`ESTIMATE_PART`] sequences one after the other, the part's
    /// columns added to the chunk's running sums as they come, and the chunks' sums are added
    /// to the marginal in the sequential order: the value's bits depend on neither the parts
    /// nor the thread count, and a thread holds one part's caches and one chunk's sums
    /// (`seq x vocab`) at a time.
    fn unigram_entropy(&self) -> f64 {
        let mut rng = super::estimate_rng(self.teacher_seed);
        let (len, vocab) = (self.seq, self.vocab());
        let chunks: Vec<Draws> = (0..super::CONTEXT_FREE_SAMPLE)
            .step_by(ESTIMATE_CHUNK)
            .map(|start| {
                let n = ESTIMATE_CHUNK.min(super::CONTEXT_FREE_SAMPLE - start);
                self.draws(&mut rng, n)
            })
            .collect();
        let sums: Vec<Vec<DVector<f64>>> = chunks
            .par_iter()
            .map(|d| {
                let mut sums = vec![DVector::<f64>::zeros(vocab); len];
                for r in d.parts(ESTIMATE_PART) {
                    self.generate(&d.part(r), |t, p| {
                        for col in p.column_iter() {
                            sums[t] += col;
                        }
                    });
                }
                sums
            })
            .collect();
        let mut marginal = DVector::<f64>::zeros(vocab);
        for s in sums.iter().flatten() {
            marginal += s;
        }
        marginal /= marginal.sum();
        super::entropy(marginal.iter())
    }
}

impl Task for TeacherLm {
    fn kind(&self) -> TaskKind {
        TaskKind::TeacherLm
    }

    fn io(&self) -> Io {
        Io::Tokens {
            vocab: self.vocab(),
            seq: self.seq,
        }
    }

    fn batch(&self, rng: &mut Rng, size: usize) -> Batch {
        let draws = self.draws(rng, size);
        let tokens = self.generate(&draws, |_, _| {});
        let span = self.seq + 1;
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        for s in tokens.chunks_exact(span) {
            inputs.extend_from_slice(&s[..self.seq]);
            targets.extend_from_slice(&s[1..]);
        }
        Batch::Tokens(TokenBatch {
            seq: self.seq,
            size,
            weights: vec![1.0; inputs.len()],
            inputs,
            targets,
        })
    }

    /// `sum_i w_i H(p(. | prefix_i)) / sum_i w_i` over the batch's positions (NaN if no weight
    /// is positive).
    ///
    /// # Panics
    /// On a vector batch.
    fn floor(&self, batch: &Batch) -> f64 {
        let Batch::Tokens(b) = batch else {
            panic!("teacher-lm's floor needs a token batch")
        };
        let p = self.predictive(&b.inputs);
        let total: f64 = b.weights.iter().sum();
        let sum: f64 = p
            .column_iter()
            .zip(&b.weights)
            .map(|(c, w)| w * super::entropy(c.iter()))
            .sum();
        sum / total
    }

    /// Estimated on first use (in parallel, as the module docs describe). Not under
    /// `get_or_init`: a thread waiting for the estimate's chunks may take up another run that
    /// shares this task and asks for the value, and that run computes it too (the same bits)
    /// instead of waiting on its own thread.
    fn context_free_loss(&self) -> f64 {
        if let Some(&v) = self.context_free.get() {
            return v;
        }
        let v = self.unigram_entropy();
        *self.context_free.get_or_init(|| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::tolerance;
    use rand::SeedableRng;

    fn config(seed: u64) -> TaskConfig {
        TaskConfig {
            kind: TaskKind::TeacherLm,
            teacher_seed: seed,
            ..TaskConfig::default()
        }
    }

    fn tokens(b: Batch) -> TokenBatch {
        match b {
            Batch::Tokens(t) => t,
            _ => panic!("teacher-lm gives tokens"),
        }
    }

    #[test]
    fn categorical_inverts_the_cdf() {
        let p = [0.25, 0.0, 0.5, 0.25];
        assert_eq!(categorical(&p, 0.0), 0);
        assert_eq!(categorical(&p, 0.2499), 0);
        assert_eq!(categorical(&p, 0.25), 2);
        assert_eq!(categorical(&p, 0.7499), 2);
        assert_eq!(categorical(&p, 0.75), 3);
        // A total rounded below u falls to the last token of positive probability.
        assert_eq!(categorical(&[0.5, 0.4999, 0.0], 0.99995), 1);
    }

    #[test]
    fn teacher_depends_only_on_its_seed() {
        let a = TeacherLm::new(&config(3)).unwrap();
        let b = TeacherLm::new(&TaskConfig {
            seq: 5,
            temperature: 2.0,
            ..config(3)
        })
        .unwrap();
        assert_eq!(a.embed, b.embed);
        assert_eq!(a.head, b.head);
        assert_eq!(a.layers[1].mlp.w2, b.layers[1].mlp.w2);
        assert_eq!(a.layers[0].attention.wq, b.layers[0].attention.wq);
        let c = TeacherLm::new(&config(4)).unwrap();
        assert!((a.head.clone() - c.head).amax() > tolerance::CLEARLY_DIFFERENT);
    }

    #[test]
    fn targets_are_the_next_inputs() {
        let t = TeacherLm::new(&config(0)).unwrap();
        let b = tokens(t.batch(&mut Rng::seed_from_u64(1), 6));
        for s in 0..b.size {
            for i in 0..b.seq - 1 {
                assert_eq!(b.targets[s * b.seq + i], b.inputs[s * b.seq + i + 1]);
            }
        }
        assert!(b.weights.iter().all(|&w| (w - 1.0).abs() < tolerance::ZERO));
    }

    #[test]
    fn sampler_distributions_match_the_full_forward() {
        // Two routes to the same distributions: position by position with cached keys and
        // values, and Attention's forward over whole sequences; they differ by rounding carried
        // through two layers of norms and sums. The default teacher, and one with heads of
        // width 10 over 13 positions (padded keys, a partial block of rows).
        let odd = TaskConfig {
            teacher_width: 20,
            seq: 13,
            ..config(2)
        };
        for cfg in [config(2), odd] {
            let t = TeacherLm::new(&cfg).unwrap();
            let size = 5;
            let mut seen = DMatrix::zeros(t.vocab(), size * t.seq);
            let draws = t.draws(&mut Rng::seed_from_u64(9), size);
            let toks = t.generate(&draws, |i, p| {
                for b in 0..size {
                    seen.set_column(b * t.seq + i, &p.column(b));
                }
            });
            let inputs: Vec<u32> = toks
                .chunks_exact(t.seq + 1)
                .flat_map(|s| s[..t.seq].to_vec())
                .collect();
            let full = t.predictive(&inputs);
            let gap = (full - seen).amax();
            assert!(gap < tolerance::TWO_ROUTES_DEEP, "{gap}");
        }
    }

    /// `attend_last` as it was written with nalgebra's products and temporaries.
    fn attend_last_with_temporaries(
        t: &TeacherLm,
        layer: &Layer,
        u: &DMatrix<f64>,
        keys: &mut DMatrix<f64>,
        values: &mut DMatrix<f64>,
        pos: usize,
    ) -> DMatrix<f64> {
        let a = &layer.attention;
        let (w, size, len) = (u.nrows(), u.ncols(), t.seq);
        let dh = w / a.heads;
        let scale = 1.0 / (dh as f64).sqrt();
        let (q, k, v) = (&a.wq * u, &a.wk * u, &a.wv * u);
        let mut o = DMatrix::zeros(w, size);
        let mut score = DVector::zeros(pos + 1);
        for b in 0..size {
            let c0 = b * len;
            keys.set_column(c0 + pos, &k.column(b));
            values.set_column(c0 + pos, &v.column(b));
            for h in 0..a.heads {
                let r = h * dh;
                let qh = q.view((r, b), (dh, 1));
                let kh = keys.view((r, c0), (dh, pos + 1));
                score.copy_from(&(kh.transpose() * qh * scale));
                let m = score.max();
                score.apply(|s| *s = (*s - m).exp());
                let z = score.sum();
                let vh = values.view((r, c0), (dh, pos + 1));
                o.view_mut((r, b), (dh, 1)).copy_from(&(vh * &score / z));
            }
        }
        &a.wo * o
    }

    #[test]
    fn attention_at_the_last_position_keeps_the_bits_of_nalgebras_products() {
        // Every position of a sequence, each layer's inputs LayerNormed as in `generate`, and
        // keys and values filled up to the position; the default teacher and a width-12 one
        // (heads of width 3); 3 sequences (nalgebra's own products, at most SMALL_DIM = 5
        // columns) and 8 (matrixmultiply's).
        let narrow = TaskConfig {
            teacher_width: 12,
            ..config(4)
        };
        // Heads of width 10 (a block of 8 rows and 2 more) and 13 positions (padded keys).
        let odd = TaskConfig {
            teacher_width: 20,
            seq: 13,
            ..config(6)
        };
        for (cfg, size) in [config(3), narrow, odd]
            .into_iter()
            .flat_map(|c| [(c, 3), (c, 8)])
        {
            let t = TeacherLm::new(&cfg).unwrap();
            let w = t.width();
            for layer in &t.layers {
                let mut c1 = KvCache {
                    keys: vec![0.0; w * size * key_stride(t.seq)],
                    values: DMatrix::zeros(w, size * t.seq),
                };
                let (mut k2, mut v2) = (c1.values.clone(), c1.values.clone());
                for pos in 0..t.seq {
                    let x = DMatrix::from_fn(w, size, |i, b| {
                        ((i * 7 + b * 3 + pos * 11) as f64 * 0.41).sin() * 2.0
                    });
                    let u = ln(&x);
                    let new = t.attend_last(layer, &u, &mut c1, pos);
                    let old = attend_last_with_temporaries(&t, layer, &u, &mut k2, &mut v2, pos);
                    assert!(
                        new.iter()
                            .zip(old.iter())
                            .all(|(a, b)| a.to_bits() == b.to_bits())
                    );
                }
            }
        }
    }

    #[test]
    fn cross_entropy_of_the_teacher_equals_the_floor() {
        // Per position, -ln p(target) - H(p) has mean 0 given the prefix (a martingale
        // difference); its per-sequence sums are independent across the 256 sequences, and
        // the mean is within 4 standard errors of 0.
        let t = TeacherLm::new(&config(0)).unwrap();
        let batch = t.batch(&mut Rng::seed_from_u64(21), 256);
        let floor = t.floor(&batch);
        let b = tokens(batch);
        let p = t.predictive(&b.inputs);
        let diffs: Vec<f64> = (0..b.size)
            .map(|s| {
                (0..b.seq)
                    .map(|i| {
                        let c = p.column(s * b.seq + i);
                        -c[b.targets[s * b.seq + i] as usize].ln() - super::super::entropy(c.iter())
                    })
                    .sum::<f64>()
            })
            .collect();
        let n = diffs.len() as f64;
        let mean = diffs.iter().sum::<f64>() / n;
        let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let se = (var / n).sqrt();
        assert!(mean.abs() < 4.0 * se, "{mean} (se {se})");
        let ce = floor + mean / b.seq as f64;
        let log_v = (t.vocab() as f64).ln();
        assert!(floor > 0.0 && floor < log_v, "{floor}");
        assert!(ce > 0.0 && ce < log_v, "{ce}");
    }

    #[test]
    fn floor_sits_inside_the_vocabulary_entropy_at_defaults() {
        // The documented design target (40-70% of ln vocab at the defaults) for a few teachers,
        // and the context-free loss between the floor and ln vocab.
        let log_v = 16f64.ln();
        for seed in 0..3 {
            let t = TeacherLm::new(&config(seed)).unwrap();
            let floor = t.floor(&t.batch(&mut Rng::seed_from_u64(5), 256));
            assert!(
                (0.4..0.7).contains(&(floor / log_v)),
                "seed {seed}: {floor}"
            );
            let cf = t.context_free_loss();
            assert!(cf > floor && cf <= log_v + tolerance::ROUNDING, "{cf}");
        }
    }

    #[test]
    fn parts_cover_a_chunk_in_order_and_are_never_small() {
        let mut rng = Rng::seed_from_u64(3);
        for size in [1, 5, 31, 32, 33, 100, 512] {
            let d = Draws::new(&mut rng, size, 4, 16);
            let parts = d.parts(ESTIMATE_PART);
            assert_eq!(parts.first().unwrap().start, 0);
            assert_eq!(parts.last().unwrap().end, size);
            for p in parts.windows(2) {
                assert_eq!(p[0].end, p[1].start);
            }
            assert!(parts.iter().all(|r| r.len() >= size.min(ESTIMATE_PART / 2)));
            // A part's draws are its sequences' own.
            let r = parts.last().unwrap().clone();
            let part = d.part(r.clone());
            assert_eq!(part.first, d.first[r.clone()]);
            for t in 0..4 {
                for (i, b) in r.clone().enumerate() {
                    let (x, y) = (part.uniforms[t * r.len() + i], d.uniforms[t * size + b]);
                    assert_eq!(x.to_bits(), y.to_bits());
                }
            }
        }
    }

    #[test]
    fn parallel_estimate_keeps_the_bits_of_the_sequential_one() {
        // The estimate as it was computed before its chunks ran in parallel: chunk after
        // chunk from the one stream, each position's column sums added as they come; then the
        // parallel estimate on one thread and on three.
        let t = TeacherLm::new(&TaskConfig {
            seq: 6,
            ..config(5)
        })
        .unwrap();
        let mut rng = super::super::estimate_rng(t.teacher_seed);
        let mut marginal = DVector::<f64>::zeros(t.vocab());
        let mut left = super::super::CONTEXT_FREE_SAMPLE;
        while left > 0 {
            let n = left.min(ESTIMATE_CHUNK);
            let draws = t.draws(&mut rng, n);
            t.generate(&draws, |_, p| marginal += p.column_sum());
            left -= n;
        }
        marginal /= marginal.sum();
        let sequential = super::super::entropy(marginal.iter());
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let parallel = pool.install(|| t.unigram_entropy());
            assert_eq!(
                parallel.to_bits(),
                sequential.to_bits(),
                "{threads} threads"
            );
        }
    }

    #[test]
    fn context_free_loss_is_fixed_per_teacher() {
        let a = TeacherLm::new(&config(1)).unwrap();
        let b = TeacherLm::new(&config(1)).unwrap();
        let (x, y) = (a.context_free_loss(), b.context_free_loss());
        assert!((x - y).abs() < tolerance::ZERO, "{x} vs {y}");
        assert!((x - a.context_free_loss()).abs() < tolerance::ZERO);
    }

    #[test]
    fn depth_zero_is_a_markov_chain() {
        // With no layers, p(. | prefix) depends on the last token alone.
        let t = TeacherLm::new(&TaskConfig {
            teacher_depth: 0,
            ..config(0)
        })
        .unwrap();
        let p = t.predictive(&[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]);
        let gap = (p.column(1) - p.column(3)).amax();
        assert!(gap < tolerance::ZERO, "{gap}");
    }
}
