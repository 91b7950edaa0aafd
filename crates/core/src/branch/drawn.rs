//! The [`Branch`] a sampled block holds, one of the branch files' modules, and its forward
//! [`Cache`]: each [`Module`] call dispatches to the file of its kind.
//!
//! Activations are d x n matrices, one column per token.

use super::attention::{Attention, AttentionCache};
use super::cross_attention::{CrossAttention, CrossCache};
use super::linear::{Linear, LinearCache};
use super::mlp::{Mlp, MlpCache};
use super::module::{Module, Param};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// The sampled branch of one block.
///
/// # Examples
///
/// A linear branch `W u` with `W = [[1, 2], [3, 4]]` on the token `u = (1, 1)`: `F(u) = (3,
/// 7)`; for the output gradient `g = (1, 0)`, `dL/du = W^T g = (1, 2)` and `dL/dW = g u^T`,
/// whose squared norm is 2.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Branch, Module, linear::Linear};
///
/// let b = Branch::Linear(Linear { w: DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]) });
/// let u = DMatrix::from_column_slice(2, 1, &[1.0, 1.0]);
/// let (y, cache) = b.forward(&u);
/// assert_eq!(y.as_slice(), [3.0, 7.0]);
/// let g = DMatrix::from_column_slice(2, 1, &[1.0, 0.0]);
/// let (gu, gw) = b.backward(&cache, &g);
/// assert_eq!(gu.as_slice(), [1.0, 2.0]);
/// assert_eq!(gw[0], DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 0.0, 0.0]));
/// assert_eq!(b.backward_last_sq(&cache, &g).1, 2.0);
/// assert_eq!((b.weights().len(), b.last_index()), (1, 0));
/// ```
#[derive(Clone, Debug)]
pub enum Branch<T: Real = f64> {
    /// `W u` ([`super::linear`]).
    Linear(Linear<T>),
    /// `W2 phi(W1 u)` ([`super::mlp`]).
    Mlp(Mlp<T>),
    /// Multi-head self-attention ([`super::attention`]).
    Attention(Attention<T>),
    /// Uniform attention to a fixed memory ([`super::cross_attention`]).
    Cross(CrossAttention<T>),
}

/// The cache of a [`Branch`]'s forward pass.
///
/// # Examples
///
/// A ReLU MLP `W2 relu(W1 u)` with `W1 = (1, -1)^T` and `W2 = (1, 1)` computes `|u|`; its cache
/// keeps the input, the pre-activation `W1 u` and the hidden `relu(W1 u)`.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Activation, Branch, Cache, Module, mlp::Mlp};
///
/// let b = Branch::Mlp(Mlp {
///     w1: DMatrix::from_column_slice(2, 1, &[1.0, -1.0]),
///     w2: DMatrix::from_row_slice(1, 2, &[1.0, 1.0]),
///     act: Activation::Relu,
/// });
/// let u = DMatrix::from_row_slice(1, 2, &[-3.0, 2.0]);
/// let (y, cache) = b.forward(&u);
/// assert_eq!(y.as_slice(), [3.0, 2.0]);
/// let Cache::Mlp(c) = &cache else { panic!("an MLP's cache") };
/// assert_eq!(c.u, u);
/// assert_eq!(c.h.as_slice(), [-3.0, 3.0, 2.0, -2.0]);
/// assert_eq!(c.z.as_slice(), [0.0, 3.0, 2.0, 0.0]);
/// ```
#[derive(Clone, Debug)]
pub enum Cache<T: Real = f64> {
    /// Of a linear branch.
    Linear(LinearCache<T>),
    /// Of an MLP.
    Mlp(MlpCache<T>),
    /// Of attention.
    Attention(AttentionCache<T>),
    /// Of cross-attention.
    Cross(CrossCache<T>),
}

/// Forwards one call to the module of `self`, with the cache of the same variant.
macro_rules! with_cache {
    ($self:ident, $cache:ident, |$m:ident, $c:ident| $body:expr) => {
        match $self {
            Branch::Linear($m) => {
                let Cache::Linear($c) = $cache else {
                    panic!("a linear branch's cache")
                };
                $body
            }
            Branch::Mlp($m) => {
                let Cache::Mlp($c) = $cache else {
                    panic!("an MLP branch's cache")
                };
                $body
            }
            Branch::Attention($m) => {
                let Cache::Attention($c) = $cache else {
                    panic!("an attention branch's cache")
                };
                $body
            }
            Branch::Cross($m) => {
                let Cache::Cross($c) = $cache else {
                    panic!("a cross-attention branch's cache")
                };
                $body
            }
        }
    };
}

impl<T: Real> Module<T> for Branch<T> {
    type Cache = Cache<T>;

    fn params(&self) -> Vec<Param<'_, T>> {
        match self {
            Branch::Linear(m) => m.params(),
            Branch::Mlp(m) => m.params(),
            Branch::Attention(m) => m.params(),
            Branch::Cross(m) => m.params(),
        }
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        match self {
            Branch::Linear(m) => m.params_mut(),
            Branch::Mlp(m) => m.params_mut(),
            Branch::Attention(m) => m.params_mut(),
            Branch::Cross(m) => m.params_mut(),
        }
    }

    fn forward(&self, u: &DMatrix<T>) -> (DMatrix<T>, Cache<T>) {
        match self {
            Branch::Linear(m) => {
                let (y, c) = m.forward(u);
                (y, Cache::Linear(c))
            }
            Branch::Mlp(m) => {
                let (y, c) = m.forward(u);
                (y, Cache::Mlp(c))
            }
            Branch::Attention(m) => {
                let (y, c) = m.forward(u);
                (y, Cache::Attention(c))
            }
            Branch::Cross(m) => {
                let (y, c) = m.forward(u);
                (y, Cache::Cross(c))
            }
        }
    }

    fn jvp(
        &self,
        cache: &Cache<T>,
        du: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> DMatrix<T> {
        with_cache!(self, cache, |m, c| m.jvp(c, du, dw))
    }

    fn backward(&self, cache: &Cache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        with_cache!(self, cache, |m, c| m.backward(c, g))
    }

    fn backward_last_sq(&self, cache: &Cache<T>, g: &DMatrix<T>) -> (DMatrix<T>, f64) {
        with_cache!(self, cache, |m, c| m.backward_last_sq(c, g))
    }
}

impl<T: Real> Branch<T> {
    /// The weight matrices, in the order [`Module::backward`] returns their gradients.
    pub fn weights(&self) -> Vec<&DMatrix<T>> {
        self.params().into_iter().map(|p| p.1).collect()
    }

    /// Index of the last matrix in [`Branch::weights`] (whose gradient `weight_grad_sq`
    /// reports).
    pub fn last_index(&self) -> usize {
        self.params().len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::branch::Activation;

    fn mat(r: usize, c: usize, seed: f64) -> DMatrix<f64> {
        DMatrix::from_fn(r, c, |i, j| {
            ((i * c + j) as f64 * 0.61 + seed).sin() / (c as f64).sqrt()
        })
    }

    /// One module of every sampled block: both activations, softmax and uniform attention.
    fn branches() -> Vec<Branch<f64>> {
        let d = 8;
        let mlp = |act| {
            Branch::Mlp(Mlp {
                w1: mat(2 * d, d, 0.2),
                w2: mat(d, 2 * d, 0.3),
                act,
            })
        };
        let attention = |uniform, causal| {
            Branch::Attention(Attention {
                wq: mat(d, d, 0.4),
                wk: mat(d, d, 0.5),
                wv: mat(d, d, 0.6),
                wo: mat(d, d, 0.7),
                heads: 2,
                uniform,
                causal,
                seq: 0,
            })
        };
        vec![
            Branch::Linear(Linear { w: mat(d, d, 0.1) }),
            mlp(Activation::Relu),
            mlp(Activation::Gelu),
            attention(false, false),
            attention(true, false),
            attention(false, true),
            attention(true, true),
            Branch::Cross(CrossAttention {
                wv: mat(d, d, 0.8),
                wo: mat(d, d, 0.9),
                memory_mean: nalgebra::DVector::from_fn(d, |i, _| (i as f64).cos()),
            }),
        ]
    }

    fn to_f32(b: &Branch<f64>) -> Branch<f32> {
        let c = |m: &DMatrix<f64>| m.map(|x| x as f32);
        match b {
            Branch::Linear(m) => Branch::Linear(Linear { w: c(&m.w) }),
            Branch::Mlp(m) => Branch::Mlp(Mlp {
                w1: c(&m.w1),
                w2: c(&m.w2),
                act: m.act,
            }),
            Branch::Attention(m) => Branch::Attention(Attention {
                wq: c(&m.wq),
                wk: c(&m.wk),
                wv: c(&m.wv),
                wo: c(&m.wo),
                heads: m.heads,
                uniform: m.uniform,
                causal: m.causal,
                seq: m.seq,
            }),
            Branch::Cross(m) => Branch::Cross(CrossAttention {
                wv: c(&m.wv),
                wo: c(&m.wo),
                memory_mean: m.memory_mean.map(|x| x as f32),
            }),
        }
    }

    /// Relative Frobenius distance of an f32 result from the f64 one.
    fn rel(a: &DMatrix<f64>, b: &DMatrix<f32>) -> f64 {
        (a - b.map(f64::from)).norm() / a.norm().max(1e-300)
    }

    #[test]
    fn f32_modules_agree_with_f64() {
        use normscope_numeric::tolerance::F32_REL;
        let u = mat(8, 3, 1.1) * 3.0;
        let du = mat(8, 3, 1.7);
        let g = mat(8, 3, 2.3);
        for b in branches() {
            let s = to_f32(&b);
            let (u32, du32, g32) = (
                u.map(|x| x as f32),
                du.map(|x| x as f32),
                g.map(|x| x as f32),
            );
            let (y, c) = b.forward(&u);
            let (y32, c32) = s.forward(&u32);
            assert!(rel(&y, &y32) < F32_REL, "{b:?} forward");
            let dw: Vec<DMatrix<f64>> = b.weights().iter().map(|w| w.map(|x| 0.5 * x)).collect();
            let dw32: Vec<DMatrix<f32>> = dw.iter().map(|w| w.map(|x| x as f32)).collect();
            let t = b.jvp(&c, Some(&du), Some(&dw));
            let t32 = s.jvp(&c32, Some(&du32), Some(&dw32));
            assert!(rel(&t, &t32) < F32_REL, "{b:?} jvp");
            let (gu, gw) = b.backward(&c, &g);
            let (gu32, gw32) = s.backward(&c32, &g32);
            if gu.norm() > 0.0 {
                assert!(rel(&gu, &gu32) < F32_REL, "{b:?} input gradient");
            }
            for (a, b32) in gw.iter().zip(&gw32) {
                assert!(rel(a, b32) < F32_REL, "{b:?} weight gradient");
            }
        }
    }

    #[test]
    fn backward_last_sq_is_backwards_last_gradient_norm_bit_for_bit() {
        // Every branch at d = 8, and an MLP with rd = 2 * 300 = 600 hidden units, whose last
        // gradient is summed over three column blocks of outer_energy::CHUNK_COLUMNS.
        let wide = Branch::Mlp(Mlp {
            w1: mat(600, 300, 0.2),
            w2: mat(300, 600, 0.3),
            act: Activation::Gelu,
        });
        for (b, n) in branches().into_iter().map(|b| (b, 3)).chain([(wide, 5)]) {
            let d = b.weights()[0].ncols();
            let (u, g) = (mat(d, n, 0.4), mat(d, n, 1.3));
            let (_, c) = b.forward(&u);
            let (gu, gw) = b.backward(&c, &g);
            let (gu_last, sq) = b.backward_last_sq(&c, &g);
            assert_eq!(gu, gu_last, "{b:?}: input gradient");
            let whole = gw.last().expect("a weight").norm_squared();
            assert_eq!(sq.to_bits(), whole.to_bits(), "{b:?}: last weight gradient");
        }
    }

    #[test]
    fn adjoint_identity_holds_for_every_branch() {
        // <v, J u> = <J^T v, u>: forward-mode and reverse-mode agree (input and weights).
        let u = mat(8, 3, 0.4);
        let du = mat(8, 3, 0.9);
        let v = mat(8, 3, 1.3);
        for b in branches() {
            let (_, c) = b.forward(&u);
            let dw: Vec<DMatrix<f64>> = b.weights().iter().map(|w| w.map(|x| x.cos())).collect();
            let jvp = b.jvp(&c, Some(&du), Some(&dw));
            let (gu, gw) = b.backward(&c, &v);
            let lhs = v.dot(&jvp);
            let rhs = gu.dot(&du) + gw.iter().zip(&dw).map(|(g, d)| g.dot(d)).sum::<f64>();
            // Sums of O(100) unit-size products in f64.
            assert!(
                (lhs - rhs).abs() < normscope_numeric::tolerance::ACCUMULATED * (1.0 + lhs.abs()),
                "{b:?}: {lhs} vs {rhs}"
            );
        }
    }
}
