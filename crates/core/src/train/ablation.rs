//! Curse-of-Depth diagnostics of a trained model (Sun et al. 2025, arXiv:2502.05795; Gromov et
//! al. 2024, arXiv:2403.17887): how much each block's branch matters, and how much each block
//! turns the stream.
//!
//! **Ablation cost** of block l: the evaluation loss of the model with block l's branch
//! removed, minus the model's own,
//!
//! ```text
//! cost_l = E(theta with lambda_l := 0) - E(theta),   z_l = alpha_l ⊙ x_{l-1} + 0 · b_l,  x_l = N_out(z_l)
//! ```
//!
//! so the block becomes its skip path only (Post-LN keeps its `N_out`, as the skip path goes
//! through it). The branch is removed by fixing its multiplier `lambda_l` to 0 in a clone
//! ([`without_branch`]), which multiplies the branch's *final* output `b = A_br(N_br(F(u)))`:
//! this removes the contribution exactly for every preset. Zeroing the branch's last weight
//! matrix would not: a branch norm `N_br` (sandwich, Peri-LN) with a learned bias maps 0 to
//! that bias, and an MLP's output bias would survive too. With `lambda_l = 0` the sum is
//! `alpha x + 0 · b`, bit-equal to `alpha x` for any finite `b`.
//!
//! **Angular distance** between consecutive blocks' outputs, per token t and averaged over
//! the evaluation tokens (Gromov et al. 2024, eq. 7; Sun et al. 2025, Fig. 1):
//!
//! ```text
//! d_l = mean_t arccos( <x_l[:, t], x_{l-1}[:, t]> / (||x_l[:, t]|| ||x_{l-1}[:, t]||) ) / pi,   l = 1..=L.
//! ```
//!
//! Tokens where either stream is zero have no angle and are left out.

use super::model::{Multiplier, TrainModel};
use super::pass::Typed;
use super::run::eval_loss;
use super::task::Batch;
use normscope_numeric::gemm::Real;

/// A copy of `m` with block `l`'s branch removed (`lambda_l` fixed to 0; l in 1..=L).
pub fn without_branch<T: Real>(m: &TrainModel<T>, l: usize) -> TrainModel<T> {
    let mut a = m.clone();
    a.blocks[l - 1].lambda = Multiplier::Fixed(0.0);
    a
}

/// `cost_l` for l = 1..=L (index l - 1) on `set`.
pub fn costs<T: Real>(m: &TrainModel<T>, set: &[Batch]) -> Vec<f64> {
    let base = eval_loss(m, set);
    (1..=m.depth())
        .map(|l| eval_loss(&without_branch(m, l), set) - base)
        .collect()
}

/// `d_l` for l = 1..=L (index l - 1) on the inputs of `set`; NaN for a block where no token
/// has an angle. Norms and dot products are accumulated in f64 (for f64, nalgebra's).
pub fn angular_distances<T: Real>(m: &TrainModel<T>, set: &[Batch]) -> Vec<f64> {
    let mut sum = vec![0.0; m.depth()];
    let mut count = vec![0usize; m.depth()];
    for b in set {
        let p = m.forward(Typed::<T>::new(b).views().0);
        for l in 1..=m.depth() {
            let (x, xp) = (
                &p.xs[l].map(|v| v.as_f64()),
                &p.xs[l - 1].map(|v| v.as_f64()),
            );
            for (c, cp) in x.column_iter().zip(xp.column_iter()) {
                let den = c.norm() * cp.norm();
                if den > 0.0 && den.is_finite() {
                    sum[l - 1] += crate::metrics::angular_dist::from_cos(c.dot(&cp) / den);
                    count[l - 1] += 1;
                }
            }
        }
    }
    sum.iter()
        .zip(&count)
        .map(|(s, &n)| if n > 0 { s / n as f64 } else { f64::NAN })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::train::config::RawTrain;
    use crate::train::task::TaskKind;

    /// A small regression model of `preset` at init (d = 8, L = 4, seed 3) and two batches.
    pub(crate) fn tiny(preset: &str, affine: bool) -> (TrainModel, Vec<Batch>) {
        let mut raw = RawTrain::default();
        raw.model.branch = "relu-mlp".into();
        raw.model.width = 8;
        raw.model.depth = 4;
        raw.task.kind = TaskKind::Regression;
        raw.presets = preset.into();
        raw.affine = affine;
        let cfg = raw.check().unwrap();
        let task = crate::train::task::build(&cfg.task).unwrap();
        let (m, mut rng, first) =
            crate::train::run::start(&cfg, task.as_ref(), cfg.presets[0], 3).unwrap();
        let second = task.batch(&mut rng, cfg.batch);
        (m, vec![first, second])
    }

    fn setup(preset: &str) -> (TrainModel, Vec<Batch>) {
        tiny(preset, true)
    }

    #[test]
    fn removing_a_branch_that_contributes_nothing_costs_exactly_zero() {
        // ReZero at init: every lambda_l is a learnable 0.
        let (m, set) = setup("rezero");
        for c in costs(&m, &set) {
            assert!(c == 0.0, "cost {c}");
        }
        // Pre-LN's branches do contribute.
        let (m, set) = setup("pre");
        assert!(costs(&m, &set).iter().all(|c| *c != 0.0));
    }

    #[test]
    fn removed_branch_leaves_the_skip_path() {
        let (m, set) = setup("pre");
        let a = without_branch(&m, 2);
        let (p, q) = (
            m.forward(crate::train::pass::views(&set[0]).0),
            a.forward(crate::train::pass::views(&set[0]).0),
        );
        // Block 2 of the ablated model is the identity (Pre-LN's skip), so x_2 = x_1.
        assert_eq!(q.xs[2], q.xs[1]);
        assert_eq!(p.xs[1], q.xs[1]);
        // A block that is the identity turns the stream by 0.
        let d = angular_distances(&a, &set);
        assert!(d[1].abs() < 1e-7, "{}", d[1]);
        assert!(d[0] > 0.0);
    }
}
