//! Cross-attention to a fixed memory (docs/theory.md, "Branches"): every token gets
//! `W_O W_V mean_k(m_k)` of a memory of n tokens distributed like the input (second moment q0,
//! correlation c0), uniform attention to the memory, so the output does not depend on the
//! stream.
//!
//! Mean field: with fan-in gains `sV`, `sO`, every output moment is
//! `sV sO q0 (c0 + (1 - c0)/n)`; the input Jacobian is zero. Sampled:
//! `dF = dW_O W_V m + W_O dW_V m` per token; backward `dL/dW_O = (sum_t g_t) (W_V m)^T`,
//! `dL/dW_V = W_O^T (sum_t g_t) m^T`, `dL/du = 0`.

use super::module::{Module, Param, broadcast};
use super::{BranchModel, Init, KindInfo, MeanFieldBranch};
use nalgebra::{DMatrix, DVector};
use normscope_numeric::gemm::Real;

/// Registry entry.
pub const INFO: KindInfo = KindInfo {
    name: "cross-attention",
    aliases: &[],
    about: "uniform attention to a fixed memory (independent of the stream)",
    closed_form: true,
};

/// Cross-attention's mean-field summary.
///
/// # Examples
///
/// Cross-attention reads the memory, not its input: its output does not scale with the input
/// (not scale-free) and carries no input gradient.
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchModel, Init, MeanFieldBranch};
/// use normscope_core::branch::cross_attention::Kernel;
/// assert_eq!(Kernel.matrix_gains(Init::He, 4.0, 4.0), (2.0, 2.0));
/// assert!(!Kernel.scale_free() && Kernel.beta_scales_first() && Kernel.mixes_tokens());
/// let m = BranchModel::new(&BranchConfig::default(), None, 1.0, 0.0);
/// assert_eq!(Kernel.backward_gain(&m, 1.0), 0.0);
/// ```
pub struct Kernel;

impl MeanFieldBranch for Kernel {
    fn matrix_gains(&self, init: Init, d: f64, _r: f64) -> (f64, f64) {
        (init.fan_in_gain(d, d), init.fan_in_gain(d, d))
    }

    fn beta_scales_first(&self) -> bool {
        true
    }

    fn scale_free(&self) -> bool {
        false
    }

    fn constant_gain(&self) -> bool {
        false
    }

    fn mixes_tokens(&self) -> bool {
        true
    }

    fn unit_gain(&self, m: &BranchModel) -> f64 {
        m.first * m.last
    }

    fn pair(&self, m: &BranchModel, _qa: f64, _qb: f64, _ms: f64, _mc: f64) -> (f64, f64) {
        let v = m.first * m.last * m.memory_mean_sq;
        (v, v)
    }

    fn backward_gain(&self, _m: &BranchModel, _q: f64) -> f64 {
        0.0
    }

    fn jacobian_split(&self, _m: &BranchModel, _q: f64) -> (f64, f64) {
        (0.0, 0.0)
    }

    fn last_input_sq(&self, m: &BranchModel, _q: f64, _c: f64) -> f64 {
        m.first * m.memory_mean_sq
    }

    fn perturbation_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64 {
        2.0 * m.forward(q, c).0
    }
}

/// A sampled cross-attention branch.
///
/// # Examples
///
/// Every token gets `W_O W_V m` for the memory's token mean `m`, whatever the input; the
/// gradient reaches the weights, not the input.
///
/// ```rust
/// use nalgebra::{DMatrix, DVector};
/// use normscope_core::branch::{Module, cross_attention::CrossAttention};
/// let c = CrossAttention {
///     wv: DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, 2.0]),
///     wo: DMatrix::identity(2, 2),
///     memory_mean: DVector::from_column_slice(&[1.0, 1.0]),
/// };
/// let u = DMatrix::from_element(2, 3, 7.0);
/// let (y, cache) = c.forward(&u);
/// assert_eq!(y, DMatrix::from_fn(2, 3, |i, _| [1.0, 2.0][i]));
/// assert_eq!(cache.shape, (2, 3));
/// let (gu, _) = c.backward(&cache, &DMatrix::from_element(2, 3, 1.0));
/// assert_eq!(gu, DMatrix::zeros(2, 3));
/// ```
#[derive(Clone, Debug)]
pub struct CrossAttention<T: Real> {
    /// Value projection.
    pub wv: DMatrix<T>,
    /// Output projection.
    pub wo: DMatrix<T>,
    /// Mean of the memory tokens.
    pub memory_mean: DVector<T>,
}

/// What the forward pass keeps.
///
/// # Examples
///
/// ```rust
/// use nalgebra::{DMatrix, DVector};
/// use normscope_core::branch::{Module, cross_attention::CrossAttention};
/// let c = CrossAttention {
///     wv: DMatrix::from_element(1, 2, 1.0),
///     wo: DMatrix::from_element(2, 1, 1.0),
///     memory_mean: DVector::from_column_slice(&[2.0, 3.0]),
/// };
/// let (_, cache) = c.forward(&DMatrix::zeros(2, 4));
/// assert_eq!((cache.vm[0], cache.shape), (5.0, (2, 4))); // W_V m = 2 + 3
/// ```
#[derive(Clone, Debug)]
pub struct CrossCache<T: Real> {
    /// `W_V m`, the input of `W_O` (the same for every token).
    pub vm: DVector<T>,
    /// Width d and tokens n of the input.
    pub shape: (usize, usize),
}

impl<T: Real> Module<T> for CrossAttention<T> {
    type Cache = CrossCache<T>;

    fn params(&self) -> Vec<Param<'_, T>> {
        vec![("wv", &self.wv), ("wo", &self.wo)]
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        vec![&mut self.wv, &mut self.wo]
    }

    fn forward(&self, u: &DMatrix<T>) -> (DMatrix<T>, CrossCache<T>) {
        let vm = &self.wv * &self.memory_mean;
        let out = broadcast(&(&self.wo * &vm), u.ncols());
        (
            out,
            CrossCache {
                vm,
                shape: u.shape(),
            },
        )
    }

    fn jvp(
        &self,
        c: &CrossCache<T>,
        _du: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> DMatrix<T> {
        let (d, n) = c.shape;
        match dw {
            None => DMatrix::zeros(d, n),
            Some(w) => broadcast(
                &(&w[1] * (&self.wv * &self.memory_mean) + &self.wo * (&w[0] * &self.memory_mean)),
                n,
            ),
        }
    }

    fn backward(&self, c: &CrossCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let (d, n) = c.shape;
        // Summed over tokens in f64 (for f64 the additions of nalgebra's `column_sum`).
        let gsum: DVector<T> = DVector::from_iterator(d, T::row_sums(g).into_iter().map(T::of));
        let gwo = &gsum * c.vm.transpose();
        let gwv = self.wo.tr_mul(&gsum) * self.memory_mean.transpose();
        (DMatrix::zeros(d, n), vec![gwv, gwo])
    }
}
