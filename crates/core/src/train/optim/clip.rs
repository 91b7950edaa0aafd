//! **Clipping** ([`clip_global_norm`], `torch.nn.utils.clip_grad_norm_` with `norm_type=2`,
//! `torch/nn/utils/clip_grad.py`): `total = ||(||g_1||, ..., ||g_k||)||_2` (the norm of the
//! per-matrix norms), `coef = max_norm / (total + 1e-6)`, every gradient multiplied by
//! `min(coef, 1)`. The norm is accumulated in f64 whatever the gradients' float type.

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// The constant [`clip_global_norm`] adds to the total norm before dividing (PyTorch's
/// `clip_coef = max_norm / (total_norm + 1e-6)` in `torch/nn/utils/clip_grad.py`): it keeps the
/// coefficient finite for zero gradients and leaves the clipped norm just below `max_norm`.
pub const CLIP_NORM_EPS: f64 = 1e-6;

/// Clips gradients by their global norm, as `torch.nn.utils.clip_grad_norm_(max_norm,
/// norm_type=2)` does (`torch/nn/utils/clip_grad.py`): the total norm is the 2-norm of the
/// per-matrix 2-norms, `total = sqrt(sum_i ||g_i||^2)`; with `coef = max_norm / (total +`
/// [`CLIP_NORM_EPS`]`)`, every gradient is multiplied by `coef` when `coef < 1` (PyTorch
/// multiplies by `min(coef, 1)`; a factor 1 changes nothing), so the clipped norm is
/// `max_norm total / (total + 1e-6)`, just below `max_norm`. Returns the total norm before
/// clipping. A non-finite total gives NaN gradients, as in PyTorch (`error_if_nonfinite=False`):
/// the caller detects the divergence. In f64; [`clip_global_norm_as`] for another float type.
pub fn clip_global_norm(grads: &mut [DMatrix<f64>], max_norm: f64) -> f64 {
    clip_global_norm_as(grads, max_norm)
}

/// [`clip_global_norm`] of gradients of float type `T`: the norms are accumulated in f64 (each
/// entry widened first), and the coefficient is rounded to `T` where it multiplies.
pub fn clip_global_norm_as<T: Real>(grads: &mut [DMatrix<T>], max_norm: f64) -> f64 {
    // `torch.linalg.vector_norm(torch.stack([vector_norm(g) for g in grads]))`.
    let sum_of_norms_squared: f64 = grads
        .iter()
        .map(|g| {
            let norm = g
                .iter()
                .map(|x| {
                    let x = x.as_f64();
                    x * x
                })
                .sum::<f64>()
                .sqrt();
            norm * norm
        })
        .sum();
    let total = sum_of_norms_squared.sqrt();
    let coef = max_norm / (total + CLIP_NORM_EPS);
    // `clamp(coef, max=1.0)` keeps a NaN coefficient, so NaN is applied too.
    if coef < 1.0 || coef.is_nan() {
        let coef = T::of(coef);
        for g in grads.iter_mut() {
            g.as_mut_slice().iter_mut().for_each(|x| *x *= coef);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::tolerance::ROUNDING;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn clipping_scales_to_max_norm_above_and_keeps_grads_below() {
        // Norms 3 and 4: total 5.
        let grads = vec![
            DMatrix::from_row_slice(2, 2, &[3.0, 0.0, 0.0, 0.0]),
            DMatrix::from_row_slice(1, 1, &[-4.0]),
        ];
        let mut clipped = grads.clone();
        let total = clip_global_norm(&mut clipped, 1.0);
        assert!(close(total, 5.0, ROUNDING), "{total}");
        let coef = 1.0 / (5.0 + CLIP_NORM_EPS);
        assert!(close(clipped[0][0], 3.0 * coef, ROUNDING));
        assert!(close(clipped[1][0], -4.0 * coef, ROUNDING));
        // The clipped norm is max_norm total / (total + 1e-6), just below max_norm.
        let after = clip_global_norm(&mut clipped.clone(), f64::MAX);
        assert!(
            close(after, 5.0 / (5.0 + CLIP_NORM_EPS), ROUNDING),
            "{after}"
        );
        assert!(after < 1.0);

        // Below max_norm: returned norm, gradients unchanged bit for bit.
        let mut kept = grads.clone();
        let total = clip_global_norm(&mut kept, 10.0);
        assert!(close(total, 5.0, ROUNDING));
        for (a, b) in kept.iter().zip(&grads) {
            for (x, y) in a.iter().zip(b.iter()) {
                assert_eq!(x.to_bits(), y.to_bits());
            }
        }
        // Zero gradients stay zero (coef = max_norm / 1e-6, clamped to 1).
        let mut zero = vec![DMatrix::zeros(2, 3)];
        let total = clip_global_norm(&mut zero, 1.0);
        assert!(total.abs() < f64::MIN_POSITIVE);
        assert!(zero[0].iter().all(|x| x.abs() < f64::MIN_POSITIVE));
    }
}
