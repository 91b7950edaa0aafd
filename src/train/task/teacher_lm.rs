//! Next-token prediction on sequences from a random teacher Transformer (TRAINING.md
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
//! scale. Depth 0 is a first-order Markov chain (the teacher of TRAINING.md's pilot). Weights are
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
//! Floor of a batch: the mean over positions of the entropy of `p(. | prefix)`; its
//! expectation is the conditional entropy, the exact loss floor. Context-free loss: the entropy
//! of the targets' marginal `q = E_t E[p(. | prefix_t)]`, estimated from
//! [`super::CONTEXT_FREE_SAMPLE`] sequences drawn from [`super::estimate_rng`] by averaging
//! their predictive distributions (not counting tokens, which is noisier); computed on first
//! use, the same value whenever it is asked for.
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
use crate::monte_carlo::rng::Rng;
use crate::monte_carlo::sample::{gaussian, matrix};
use crate::spec::NormKind;
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use std::sync::OnceLock;

/// Attention heads of the teacher (the width must be a multiple).
pub const TEACHER_HEADS: usize = 2;

/// Sequences per chunk of the context-free estimate (bounds its key/value caches).
const ESTIMATE_CHUNK: usize = 512;

/// One Pre-LN layer: attention, then the MLP.
#[derive(Debug)]
struct Layer {
    attention: Attention<f64>,
    mlp: Mlp<f64>,
}

/// The teacher-lm task and its teacher.
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

/// The first index i with `u < p_0 + ... + p_i` (the inverse CDF at `u` in `[0, 1)`), or the
/// last index of positive probability if rounding leaves the total below u.
pub fn categorical<'a>(p: impl IntoIterator<Item = &'a f64>, u: f64) -> usize {
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

impl TeacherLm {
    /// Checks `cfg` as a teacher-lm config ([`TaskConfig::check_as`]) and draws the teacher.
    pub fn new(cfg: &TaskConfig) -> Result<Self> {
        cfg.check_as(TaskKind::TeacherLm)?;
        let mut rng = super::teacher_rng(cfg.teacher_seed);
        let w = cfg.teacher_width;
        let embed = gaussian(&mut rng, w, cfg.vocab);
        let layers = (0..cfg.teacher_depth)
            .map(|_| {
                let mut draw = |init| matrix(&mut rng, init, w, w, 1.0);
                Layer {
                    attention: Attention {
                        wq: draw(Init::Xavier),
                        wk: draw(Init::Xavier),
                        wv: draw(Init::Xavier),
                        wo: draw(Init::Xavier),
                        heads: TEACHER_HEADS,
                        uniform: false,
                        causal: true,
                        seq: cfg.seq,
                    },
                    mlp: Mlp {
                        w1: draw(Init::He),
                        w2: draw(Init::He),
                        act: Activation::Relu,
                    },
                }
            })
            .collect();
        let head = gaussian(&mut rng, cfg.vocab, w) / (w as f64).sqrt();
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

    /// Samples `size` sequences of `seq + 1` tokens (sequence-major, `seq + 1` per sequence),
    /// calling `visit(t, p)` with the next-token distributions at position t (`vocab x size`)
    /// before drawing token `t + 1`. Draw order: the `size` first tokens, then one uniform per
    /// sequence and position, position by position.
    fn generate(
        &self,
        rng: &mut Rng,
        size: usize,
        mut visit: impl FnMut(usize, &DMatrix<f64>),
    ) -> Vec<u32> {
        let (w, len, span) = (self.width(), self.seq, self.seq + 1);
        let vocab = self.vocab() as u32;
        let mut tokens = vec![0u32; size * span];
        for b in 0..size {
            tokens[b * span] = rng.random_range(0..vocab);
        }
        // Keys and values of every layer, column b * len + t.
        let mut keys = vec![DMatrix::<f64>::zeros(w, size * len); self.layers.len()];
        let mut values = keys.clone();
        for t in 0..len {
            let mut x = DMatrix::from_fn(w, size, |i, b| {
                self.embed[(i, tokens[b * span + t] as usize)]
            });
            for (l, layer) in self.layers.iter().enumerate() {
                x += self.attend_last(layer, &ln(&x), &mut keys[l], &mut values[l], t);
                x += layer.mlp.forward(&ln(&x)).0;
            }
            let p = self.readout(&x);
            visit(t, &p);
            for b in 0..size {
                let u: f64 = rng.random();
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
        keys: &mut DMatrix<f64>,
        values: &mut DMatrix<f64>,
        t: usize,
    ) -> DMatrix<f64> {
        let a = &layer.attention;
        let (w, size, len) = (u.nrows(), u.ncols(), self.seq);
        let dh = w / a.heads;
        let scale = 1.0 / (dh as f64).sqrt();
        let (q, k, v) = (&a.wq * u, &a.wk * u, &a.wv * u);
        let mut o = DMatrix::zeros(w, size);
        let mut score = DVector::zeros(t + 1);
        for b in 0..size {
            let c0 = b * len;
            keys.set_column(c0 + t, &k.column(b));
            values.set_column(c0 + t, &v.column(b));
            for h in 0..a.heads {
                let r = h * dh;
                // `kh^T qh * scale` and `vh score / z` with kh, vh the head's keys and values
                // (dh x (t + 1)), written out with no temporaries: the arithmetic of
                // nalgebra's matrix-vector product (`gemv`), one sum per output entry in
                // column order, `x0 c0`, then `y + x_j c_j`, no fused multiply-add.
                let qh = &q.as_slice()[b * w + r..][..dh];
                for j in 0..=t {
                    let kh = &keys.as_slice()[(c0 + j) * w + r..][..dh];
                    score[j] = (1..dh).fold(kh[0] * qh[0], |y, i| kh[i] * qh[i] + y);
                }
                score *= scale;
                let m = score.max();
                score.apply(|s| *s = (*s - m).exp());
                let z = score.sum();
                // The output's dh sums advance side by side (contiguous rows of the values).
                let value = |j: usize| &values.as_slice()[(c0 + j) * w + r..][..dh];
                let out = &mut o.as_mut_slice()[b * w + r..][..dh];
                for (y, &v) in out.iter_mut().zip(value(0)) {
                    *y = v * score[0];
                }
                for j in 1..=t {
                    for (y, &v) in out.iter_mut().zip(value(j)) {
                        *y += v * score[j];
                    }
                }
                out.iter_mut().for_each(|y| *y /= z);
            }
        }
        &a.wo * o
    }

    /// The entropy of the targets' marginal, estimated from [`super::CONTEXT_FREE_SAMPLE`]
    /// sequences: `H(mean of p(. | prefix) over sequences and positions)`.
    fn unigram_entropy(&self) -> f64 {
        let mut rng = super::estimate_rng(self.teacher_seed);
        let mut marginal = DVector::<f64>::zeros(self.vocab());
        let mut left = super::CONTEXT_FREE_SAMPLE;
        while left > 0 {
            let n = left.min(ESTIMATE_CHUNK);
            self.generate(&mut rng, n, |_, p| marginal += p.column_sum());
            left -= n;
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
        let tokens = self.generate(rng, size, |_, _| {});
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

    fn context_free_loss(&self) -> f64 {
        *self.context_free.get_or_init(|| self.unigram_entropy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tolerance;
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
            Batch::Vectors(_) => panic!("teacher-lm gives tokens"),
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
        // through two layers of norms and sums.
        let t = TeacherLm::new(&config(2)).unwrap();
        let size = 5;
        let mut seen = DMatrix::zeros(t.vocab(), size * t.seq);
        let toks = t.generate(&mut Rng::seed_from_u64(9), size, |i, p| {
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
        // (heads of width 3).
        let narrow = TaskConfig {
            teacher_width: 12,
            ..config(4)
        };
        for cfg in [config(3), narrow] {
            let t = TeacherLm::new(&cfg).unwrap();
            let size = 3;
            let w = t.width();
            for layer in &t.layers {
                let (mut k1, mut v1) = (
                    DMatrix::zeros(w, size * t.seq),
                    DMatrix::zeros(w, size * t.seq),
                );
                let (mut k2, mut v2) = (k1.clone(), v1.clone());
                for pos in 0..t.seq {
                    let x = DMatrix::from_fn(w, size, |i, b| {
                        ((i * 7 + b * 3 + pos * 11) as f64 * 0.41).sin() * 2.0
                    });
                    let u = ln(&x);
                    let new = t.attend_last(layer, &u, &mut k1, &mut v1, pos);
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
