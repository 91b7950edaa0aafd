//! LayerNorm and RMSNorm on the columns (tokens) of a d x n matrix, with their Jacobians.
//!
//! `LN(z) = P z / sigma`, `sigma^2 = |P z|^2/d + eps`, `P = I - 1 1^T/d` (centering);
//! `RMS(z) = z / sigma`, `sigma^2 = |z|^2/d + eps`. Both Jacobians are symmetric,
//! `J = (1/sigma) (P - y y^T/d)` (P = I for RMS), so one function serves JVP and VJP.
//! A norm is a linear map (P) followed by a per-token scalar `1/sigma`, which makes the
//! decomposition `x_l = sum_j C_{l,j} B_j` exact per token (THEORY.md section 5).
//! Column means, `sigma^2` and the Jacobian's `<y, P dz>` are accumulated in f64
//! ([`Real::sum`], [`Real::sum_sq`], [`Real::dot_view`]) and rounded once in both precisions
//! (for f64, nalgebra's own sums and dot: the published bits).

use super::gemm::Real;
use crate::spec::NormKind;
use nalgebra::DMatrix;

/// What a forward pass keeps for the Jacobian.
#[derive(Clone, Debug)]
pub struct NormCache<T: Real = f64> {
    /// The output y.
    pub y: DMatrix<T>,
    /// `1/sigma` per token.
    pub inv_sigma: Vec<T>,
    /// Which norm.
    pub kind: NormKind,
}

/// Subtracts each column's mean (P z), in place.
pub fn center<T: Real>(z: &mut DMatrix<T>) {
    let dn = z.nrows() as f64;
    for mut c in z.column_iter_mut() {
        let m = T::of(T::sum(&c) / dn);
        c.add_scalar_mut(-m);
    }
}

/// The norm of every column.
pub fn forward<T: Real>(kind: NormKind, eps: f64, z: &DMatrix<T>) -> NormCache<T> {
    let dn = z.nrows() as f64;
    let mut y = z.clone();
    if kind == NormKind::Layer {
        center(&mut y);
    }
    let mut inv_sigma = Vec::with_capacity(y.ncols());
    for mut c in y.column_iter_mut() {
        let s = T::one() / T::of(T::sum_sq(&c) / dn + eps).sqrt();
        c *= s;
        inv_sigma.push(s);
    }
    NormCache { y, inv_sigma, kind }
}

/// `J dz` (equal to `J^T dz`): `(1/sigma) [P dz - y <y, P dz>/d]` per column.
pub fn jacobian<T: Real>(cache: &NormCache<T>, dz: &DMatrix<T>) -> DMatrix<T> {
    let dn = dz.nrows() as f64;
    let mut out = dz.clone();
    if cache.kind == NormKind::Layer {
        center(&mut out);
    }
    for (t, mut c) in out.column_iter_mut().enumerate() {
        let y = cache.y.column(t);
        let k = T::of(T::dot_view(&y, &c) / dn);
        c.axpy(-k, &y, T::one());
        c *= cache.inv_sigma[t];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobian_matches_finite_differences() {
        let z = DMatrix::from_fn(7, 3, |i, j| {
            ((i * 3 + j) as f64 * 0.7).sin() + 0.1 * j as f64
        });
        let dz = DMatrix::from_fn(7, 3, |i, j| ((i + 5 * j) as f64 * 1.3).cos());
        for kind in [NormKind::Layer, NormKind::Rms] {
            for eps in [0.0, 1e-3] {
                let c = forward(kind, eps, &z);
                let h = 1e-6;
                let fd = (forward(kind, eps, &(&z + &dz * h)).y
                    - forward(kind, eps, &(&z - &dz * h)).y)
                    / (2.0 * h);
                let j = jacobian(&c, &dz);
                assert!(
                    (fd - &j).norm() < crate::tolerance::FINITE_DIFFERENCE_NORM * j.norm(),
                    "{kind:?} {eps}"
                );
            }
        }
    }

    #[test]
    fn zero_eps_gives_squared_norm_d() {
        let z = DMatrix::from_fn(9, 2, |i, j| (i as f64 + 1.0) * (j as f64 + 0.5));
        let c = forward(NormKind::Layer, 0.0, &z);
        for col in c.y.column_iter() {
            assert!((col.norm_squared() - 9.0).abs() < crate::tolerance::ACCUMULATED);
        }
    }
}
