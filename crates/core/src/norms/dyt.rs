//! DyT, Dynamic Tanh (Zhu, Chen, He, LeCun and Liu 2025, "Transformers without
//! Normalization", arXiv:2503.10622), an element-wise replacement of a norm:
//!
//! ```text
//! DyT(z) = gamma ⊙ tanh(alpha z) + beta      alpha: one learnable scalar per layer
//! J      = diag(alpha (1 - tanh^2(alpha z)))  (gamma = 1, beta = 0 at init)
//! dL/dalpha = sum g ⊙ z ⊙ (1 - tanh^2(alpha z))
//! ```
//!
//! The reference code (github.com/jiachenzhu/DyT, `dynamic_tanh.py`) initialises
//! `alpha = 0.5` (`alpha_init_value=0.5`), `weight = 1`, `bias = 0`, and replaces every
//! LayerNorm, the final one included; the paper's default for every model but its LLaMA runs
//! is `alpha_0 = 0.5` (sections 4 and 7.1; LLaMA uses width-dependent values per block kind).
//! Unlike a norm it does not divide by a statistic: its output scale follows its input's.
//! Elementwise in `T`, with `tanh` evaluated in f64 and rounded.

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// DyT's initial `alpha` (`alpha_init_value=0.5` in `dynamic_tanh.py`; paper section 7.1).
pub const ALPHA0: f64 = 0.5;

/// What a forward pass keeps: the output `tanh(alpha z)`.
///
/// # Examples
///
/// At `alpha = 0.5`, `z = 2` gives `tanh(1)`; the Jacobian there is `0.5 (1 - tanh^2(1))`.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::norms::dyt::{ALPHA0, alpha_grad, forward, jacobian};
/// let z = DMatrix::from_element(1, 1, 2.0);
/// let c = forward(ALPHA0, &z);
/// assert_eq!(c.y[0], 1f64.tanh());
/// let one = DMatrix::from_element(1, 1, 1.0);
/// let sech2 = 1.0 - 1f64.tanh() * 1f64.tanh();
/// assert_eq!(jacobian(&c, &one)[0], 0.5 * sech2);
/// assert_eq!(alpha_grad(&c, &z, &one), 2.0 * sech2);
/// ```
#[derive(Clone, Debug)]
pub struct DytCache<T: Real = f64> {
    /// `tanh(alpha z)`.
    pub y: DMatrix<T>,
    /// The `alpha` used.
    pub alpha: f64,
}

/// `tanh(alpha z)` entry by entry (gamma = 1, beta = 0).
pub fn forward<T: Real>(alpha: f64, z: &DMatrix<T>) -> DytCache<T> {
    DytCache {
        y: z.map(|x| T::of((alpha * x.as_f64()).tanh())),
        alpha,
    }
}

/// `J dz = alpha (1 - y^2) ⊙ dz` (diagonal, so also `J^T dz`).
pub fn jacobian<T: Real>(c: &DytCache<T>, dz: &DMatrix<T>) -> DMatrix<T> {
    jacobian_of(&c.y, c.alpha, dz)
}

/// [`jacobian`] from a cache's parts: the output `y = tanh(alpha z)` and `alpha`.
pub fn jacobian_of<T: Real>(y: &DMatrix<T>, alpha: f64, dz: &DMatrix<T>) -> DMatrix<T> {
    assert_eq!(y.shape(), dz.shape(), "the tangent has DyT's shape");
    y.zip_map(dz, |y, d| {
        let y = y.as_f64();
        T::of(alpha * (1.0 - y * y) * d.as_f64())
    })
}

/// `dL/dalpha = sum g ⊙ z ⊙ (1 - y^2)` for the output gradient `g`, accumulated in f64.
pub fn alpha_grad<T: Real>(c: &DytCache<T>, z: &DMatrix<T>, g: &DMatrix<T>) -> f64 {
    alpha_grad_of(&c.y, z, g)
}

/// [`alpha_grad`] from the output `y = tanh(alpha z)`, the input `z` and the output gradient
/// `g`. Also the forward-mode part of a tangent `dalpha`: `d y = dalpha z ⊙ (1 - y^2)`
/// ([`alpha_tangent`]).
pub fn alpha_grad_of<T: Real>(y: &DMatrix<T>, z: &DMatrix<T>, g: &DMatrix<T>) -> f64 {
    assert_eq!(y.shape(), z.shape(), "the input has DyT's shape");
    y.iter()
        .zip(z.iter())
        .zip(g.iter())
        .map(|((y, z), g)| {
            let y = y.as_f64();
            g.as_f64() * z.as_f64() * (1.0 - y * y)
        })
        .sum()
}

/// `d tanh(alpha z) / d alpha * dalpha = dalpha z ⊙ (1 - y^2)` for `y = tanh(alpha z)`.
pub fn alpha_tangent<T: Real>(y: &DMatrix<T>, z: &DMatrix<T>, dalpha: f64) -> DMatrix<T> {
    y.zip_map(z, |y, z| {
        let y = y.as_f64();
        T::of(dalpha * z.as_f64() * (1.0 - y * y))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobian_and_alpha_gradient_are_derivatives() {
        let z = DMatrix::from_fn(3, 4, |i, j| (i as f64 - 1.0) * 1.3 + j as f64 * 0.7 - 1.0);
        let dz = DMatrix::from_fn(3, 4, |i, j| ((i * 4 + j) as f64 * 0.37).sin());
        let h = 1e-6;
        let c = forward(ALPHA0, &z);
        let fd =
            (forward(ALPHA0, &(&z + &dz * h)).y - forward(ALPHA0, &(&z - &dz * h)).y) / (2.0 * h);
        assert!((fd - jacobian(&c, &dz)).amax() < 1e-9);
        // d/dalpha of <g, tanh(alpha z)>.
        let g = dz.clone();
        let loss = |a: f64| g.dot(&forward(a, &z).y);
        let fd = (loss(ALPHA0 + h) - loss(ALPHA0 - h)) / (2.0 * h);
        assert!((fd - alpha_grad(&c, &z, &g)).abs() < 1e-8);
    }
}
