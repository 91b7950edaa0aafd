//! What a training step measures besides the loss, from one forward pass on the probe batch:
//! per-block norm-input RMS (DeepNet, Wang et al. 2022, Sec. 3: Post-LN's failure inflates the
//! LayerNorm inputs) and attention's largest logit and mean entropy (Wortsman et al. 2023,
//! arXiv:2309.14322: attention-logit growth and entropy collapse at small scale). Every
//! statistic is accumulated in f64, whatever the model's float type.

use super::model::TrainModel;
use super::pass::Pass;
use crate::branch::{Branch, Cache};
use crate::monte_carlo::gemm::Real;
use nalgebra::DMatrix;

/// `sqrt(mean z^2)` of a matrix, accumulated in f64.
pub fn rms<T: Real>(z: &DMatrix<T>) -> f64 {
    (T::sum_sq(z) / z.len() as f64).sqrt()
}

/// Per-block norm-input RMS: `(block, slot, value)` for every norm slot present (`n_in`'s
/// input is `x_{l-1}`, `n_br`'s the branch output, `n_out`'s `z = alpha x + lambda b`).
pub fn norm_inputs<T: Real>(m: &TrainModel<T>, p: &Pass<T>) -> Vec<(usize, &'static str, f64)> {
    let mut out = Vec::new();
    for (i, (b, c)) in m.blocks.iter().zip(&p.blocks).enumerate() {
        let l = i + 1;
        if b.n_in.is_some() {
            out.push((l, "n_in", rms(&p.xs[i])));
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionStats {
    /// Largest logit.
    pub max_logit: f64,
    /// Mean entropy.
    pub entropy: f64,
}

/// [`AttentionStats`] of every softmax-attention block: `(block, stats)`.
pub fn attention<T: Real>(m: &TrainModel<T>, p: &Pass<T>) -> Vec<(usize, AttentionStats)> {
    let mut out = Vec::new();
    for (i, (b, c)) in m.blocks.iter().zip(&p.blocks).enumerate() {
        let (Branch::Attention(a), Cache::Attention(ac)) = (&b.branch, &c.branch) else {
            continue;
        };
        if a.uniform {
            continue;
        }
        let (d, n) = (ac.u.nrows(), ac.u.ncols());
        let dh = d / a.heads;
        let len = if a.seq == 0 || a.seq >= n { n } else { a.seq };
        let seqs = n / len;
        let scale = 1.0 / (dh as f64).sqrt();
        let mut max_logit = f64::NEG_INFINITY;
        for h in 0..a.heads {
            for s in 0..seqs {
                let q = ac.q.view((h * dh, s * len), (dh, len));
                let k = ac.k.view((h * dh, s * len), (dh, len));
                for qi in 0..len {
                    let last = if a.causal { qi + 1 } else { len };
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
        out.push((
            i + 1,
            AttentionStats {
                max_logit,
                entropy: sum / rows as f64,
            },
        ));
    }
    out
}
