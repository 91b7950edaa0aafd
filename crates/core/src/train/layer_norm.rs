//! A norm slot of a trainable model: the Monte Carlo engine's LayerNorm or RMSNorm
//! ([`crate::monte_carlo::norm`]) followed by an optional learnable affine map,
//!
//! ```text
//! y = gamma ⊙ N(z) + b        (gamma = 1, b = 0 at init)
//! ```
//!
//! as `torch.nn.LayerNorm(d, elementwise_affine=True)` (Ba et al. 2016) and `torch.nn.RMSNorm`
//! (Zhang and Sennrich 2019, no bias). At init `1 * y + 0 = y` exactly in floating point, so
//! a trainable model made from a Monte Carlo network gives that network's streams bit for bit.
//! Backward: `dL/dgamma = sum_t g_t ⊙ N(z)_t`, `dL/db = sum_t g_t`, `dL/dN = gamma ⊙ g`, then
//! the norm's symmetric Jacobian. Generic over the float type ([`Real`]: f64 by default, or
//! f32); the norm's statistics and the gain and bias gradients' sums are accumulated in f64.

use crate::monte_carlo::norm::{self, NormCache};
use crate::spec::NormKind;
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// One norm slot with its optional affine parameters (d x 1 each).
///
/// # Examples
///
/// LayerNorm of the token `(1, 3)` is `(-1, 1)`; with `gamma = (2, 3)` and `b = (0.5, 0.5)` the
/// slot gives `(-1.5, 3.5)`, and for `g = (1, 1)`, `dL/dgamma = N(z) = (-1, 1)`, `dL/db = g`.
/// RMSNorm has a gain and no bias.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::spec::NormKind;
/// use normscope_core::train::layer_norm::NormLayer;
///
/// let mut n = NormLayer::new(NormKind::Layer, 2, true);
/// n.gain = Some(DMatrix::from_column_slice(2, 1, &[2.0, 3.0]));
/// n.bias = Some(DMatrix::from_element(2, 1, 0.5));
/// let (cache, y) = n.forward(0.0, &DMatrix::from_column_slice(2, 1, &[1.0, 3.0]));
/// assert_eq!(y.as_slice(), [-1.5, 3.5]);
/// let (_, grads) = n.backward(&cache, &DMatrix::from_element(2, 1, 1.0));
/// assert_eq!((grads[0].as_slice(), grads[1].as_slice()), (&[-1.0, 1.0][..], &[1.0, 1.0][..]));
/// let rms = NormLayer::<f64>::new(NormKind::Rms, 3, true);
/// assert_eq!(rms.params().iter().map(|p| p.0).collect::<Vec<_>>(), ["gain"]);
/// ```
#[derive(Clone, Debug)]
pub struct NormLayer<T: Real = f64> {
    /// LayerNorm or RMSNorm.
    pub kind: NormKind,
    /// `gamma`, if learnable.
    pub gain: Option<DMatrix<T>>,
    /// `b`, if learnable (LayerNorm only: RMSNorm has no bias).
    pub bias: Option<DMatrix<T>>,
}

impl<T: Real> NormLayer<T> {
    /// A norm of width d, with `gamma = 1` (and `b = 0` for LayerNorm) when `affine`.
    pub fn new(kind: NormKind, d: usize, affine: bool) -> Self {
        NormLayer {
            kind,
            gain: affine.then(|| DMatrix::from_element(d, 1, T::one())),
            bias: (affine && kind == NormKind::Layer).then(|| DMatrix::zeros(d, 1)),
        }
    }

    /// Parameters in order (gain, bias), with their names.
    pub fn params(&self) -> Vec<(&'static str, &DMatrix<T>)> {
        let mut out = Vec::new();
        if let Some(g) = &self.gain {
            out.push(("gain", g));
        }
        if let Some(b) = &self.bias {
            out.push(("bias", b));
        }
        out
    }

    /// The same parameters, mutable.
    pub fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        let mut out = Vec::new();
        if let Some(g) = &mut self.gain {
            out.push(g);
        }
        if let Some(b) = &mut self.bias {
            out.push(b);
        }
        out
    }

    /// `(cache of N, gamma ⊙ N(z) + b)`.
    pub fn forward(&self, eps: f64, z: &DMatrix<T>) -> (NormCache<T>, DMatrix<T>) {
        let c = norm::forward(self.kind, eps, z);
        let mut y = c.y.clone();
        if let Some(g) = &self.gain {
            for mut col in y.column_iter_mut() {
                col.component_mul_assign(&g.column(0));
            }
        }
        if let Some(b) = &self.bias {
            for mut col in y.column_iter_mut() {
                col += b.column(0);
            }
        }
        (c, y)
    }

    /// `(dL/dz, [dL/dgamma, dL/db] as present)` for the output gradient `g`.
    pub fn backward(&self, c: &NormCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let mut grads = Vec::new();
        let gy = match &self.gain {
            Some(gain) => {
                grads.push(row_sums(&g.component_mul(&c.y)));
                let mut gy = g.clone();
                for mut col in gy.column_iter_mut() {
                    col.component_mul_assign(&gain.column(0));
                }
                gy
            }
            None => g.clone(),
        };
        if self.bias.is_some() {
            grads.push(row_sums(g));
        }
        (norm::jacobian(c, &gy), grads)
    }
}

/// `sum_t m[:, t]` as a d x 1 matrix, each sum accumulated in f64 ([`Real::sum`]) and rounded
/// once.
pub fn row_sums<T: Real>(m: &DMatrix<T>) -> DMatrix<T> {
    DMatrix::from_iterator(m.nrows(), 1, T::row_sums(m).into_iter().map(T::of))
}
