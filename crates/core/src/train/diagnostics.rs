//! What a training step measures besides the loss, from one forward pass on the probe batch:
//! per-block norm-input RMS (DeepNet, Wang et al. 2022, Sec. 3: Post-LN's failure inflates the
//! LayerNorm inputs) and attention's largest logit and mean entropy (Wortsman et al. 2023,
//! arXiv:2309.14322: attention-logit growth and entropy collapse at small scale). Every
//! statistic is accumulated in f64, whatever the model's float type.

use super::model::{TrainBlock, TrainModel};
use super::pass::{BlockCache, Pass};
use crate::branch::attention::{Attention, AttentionCache, Span};
use crate::branch::{Branch, Cache};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// `sqrt(mean z^2)` of a matrix, accumulated in f64.
pub fn rms<T: Real>(z: &DMatrix<T>) -> f64 {
    (T::sum_sq(z) / z.len() as f64).sqrt()
}

/// Per-block norm-input RMS: `(block, slot, value)` for every norm slot present (`n_in`'s
/// input is `x_{l-1}`, `n_br`'s the branch output, `n_out`'s `z = alpha x + lambda b`).
pub fn norm_inputs<T: Real>(m: &TrainModel<T>, p: &Pass<T>) -> Vec<(usize, &'static str, f64)> {
    blocks_norm_inputs(&m.blocks, (&p.xs, &p.blocks), 1)
}

/// [`norm_inputs`] of a run of blocks whose first is layer `first`, from its streams and
/// caches.
pub(crate) fn blocks_norm_inputs<T: Real>(
    blocks: &[TrainBlock<T>],
    (xs, caches): (&[DMatrix<T>], &[BlockCache<T>]),
    first: usize,
) -> Vec<(usize, &'static str, f64)> {
    let mut out = Vec::new();
    for (i, (b, c)) in blocks.iter().zip(caches).enumerate() {
        let l = first + i;
        if b.n_in.is_some() {
            out.push((l, "n_in", rms(&xs[i])));
        }
        if b.n_br.is_some() {
            out.push((l, "n_br", rms(&c.out)));
        }
        if b.n_out.is_some() {
            out.push((l, "n_out", c.z_sq.sqrt()));
        }
    }
    out
}

/// Attention statistics of one block: the largest scaled logit `q_i . k_j / sqrt(d_h)` over
/// heads, sequences and allowed pairs (`j <= i` when causal), and the mean over queries of the
/// attention distribution's entropy `-sum_j a_ij ln a_ij` (nats).
///
/// # Examples
///
/// The attention statistics of a decoder-only Transformer (2 blocks: attention, MLP) on a copy
/// batch: one entry, at block 1; the mean entropy of causal attention over 4 positions lies
/// between 0 and `(ln 1 + ln 2 + ln 3 + ln 4) / 4`.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::RawMc;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::diagnostics::{AttentionStats, attention};
/// use normscope_core::train::task::{self, TaskConfig, TaskKind};
/// use normscope_core::train::{pass, run};
///
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "transformer".into(), width: 8, ..RawModel::default() },
///     mc: RawMc { heads: 2, ..RawMc::default() },
///     task: TaskConfig { kind: TaskKind::Copy, vocab: 5, seq: 4, ..TaskConfig::default() },
///     batch: 2,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let (m, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let stats: Vec<(usize, AttentionStats)> = attention(&m, &m.forward(pass::views(&first).0));
/// assert_eq!(stats.len(), 1);
/// assert_eq!(stats[0].0, 1);
/// let max_entropy = (2f64.ln() + 3f64.ln() + 4f64.ln()) / 4.0;
/// assert!(stats[0].1.entropy >= 0.0 && stats[0].1.entropy <= max_entropy + 1e-12);
/// assert!(stats[0].1.max_logit.is_finite());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionStats {
    /// Largest logit.
    pub max_logit: f64,
    /// Mean entropy.
    pub entropy: f64,
}

/// [`AttentionStats`] of every softmax-attention block: `(block, stats)`.
pub fn attention<T: Real>(m: &TrainModel<T>, p: &Pass<T>) -> Vec<(usize, AttentionStats)> {
    blocks_attention(&m.blocks, &p.blocks, 1, |_, a, ac| a.span(ac.u.ncols()))
}

/// [`attention`] of a run of blocks whose first is layer `first`; `span(i, attention, cache)`
/// is block i's (0-based) [`Span`] (self-attention's own, or cross-attention's).
pub(crate) fn blocks_attention<T: Real>(
    blocks: &[TrainBlock<T>],
    caches: &[BlockCache<T>],
    first: usize,
    span: impl Fn(usize, &Attention<T>, &AttentionCache<T>) -> Span,
) -> Vec<(usize, AttentionStats)> {
    let mut out = Vec::new();
    for (i, (b, c)) in blocks.iter().zip(caches).enumerate() {
        let (Branch::Attention(a), Cache::Attention(ac)) = (&b.branch, &c.branch) else {
            continue;
        };
        if a.uniform {
            continue;
        }
        out.push((first + i, stats(a, ac, span(i, a, ac))));
    }
    out
}

/// [`AttentionStats`] of one softmax-attention pass over `span`.
fn stats<T: Real>(a: &Attention<T>, ac: &AttentionCache<T>, span: Span) -> AttentionStats {
    let dh = ac.u.nrows() / a.heads;
    let Span { seqs, q_len, k_len } = span;
    let scale = 1.0 / (dh as f64).sqrt();
    let mut max_logit = f64::NEG_INFINITY;
    for h in 0..a.heads {
        for s in 0..seqs {
            let q = ac.q.view((h * dh, s * q_len), (dh, q_len));
            let k = ac.k.view((h * dh, s * k_len), (dh, k_len));
            for qi in 0..q_len {
                let last = if a.causal { qi + 1 } else { k_len };
                for kj in 0..last {
                    let qk = T::dot_view(&q.column(qi), &k.column(kj));
                    max_logit = max_logit.max(qk * scale);
                }
            }
        }
    }
    let (mut sum, mut rows) = (0.0, 0usize);
    for w in &ac.attn {
        for r in w.row_iter() {
            sum -= r
                .iter()
                .map(|p| p.as_f64())
                .filter(|&p| p > 0.0)
                .map(|p| p * p.ln())
                .sum::<f64>();
            rows += 1;
        }
    }
    AttentionStats {
        max_logit,
        entropy: sum / rows as f64,
    }
}
