//! The linear branch `F(u) = W u`, one d x d matrix (docs/theory.md, "Branches").
//!
//! Mean field: fan-in gain `s` of W; the pair kernel is `(s m_same, s m_cross)`, the gain
//! is `s` at every input (positively homogeneous), and the Jacobian `W` acts on every token
//! alike. Sampled: `F(u) = W u`, `dF = W du + dW u`, `dL/du = W^T g`, `dL/dW = g u^T`.

use super::module::{Module, Param};
use super::{BranchModel, Init, KindInfo, MeanFieldBranch};
use nalgebra::DMatrix;
use normscope_numeric::gemm::{Real, nn, nt, tn};

/// Registry entry.
pub const INFO: KindInfo = KindInfo {
    name: "linear",
    aliases: &[],
    about: "F(u) = W u",
    closed_form: true,
};

/// The linear branch's mean-field summary.
///
/// # Examples
///
/// `F(u) = W u` under He at width 4: `W`'s fan-in gain is `2`, the forward gain `E||Wu||^2 /
/// ||u||^2` too, and the kernel scales with the input's moments.
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchModel, Init, MeanFieldBranch, linear};
/// assert_eq!(linear::Kernel.matrix_gains(Init::He, 4.0, 4.0), (1.0, 2.0));
/// let cfg = BranchConfig { init: Init::He, ..BranchConfig::default() };
/// let m = BranchModel::new(&cfg, None, 1.0, 0.0);
/// assert_eq!(linear::Kernel.unit_gain(&m), 2.0);
/// assert_eq!(linear::Kernel.pair(&m, 3.0, 3.0, 3.0, 1.0), (6.0, 2.0));
/// assert!(linear::Kernel.scale_free() && !linear::Kernel.beta_scales_first());
/// ```
pub struct Kernel;

impl MeanFieldBranch for Kernel {
    fn matrix_gains(&self, init: Init, d: f64, _r: f64) -> (f64, f64) {
        (1.0, init.fan_in_gain(d, d))
    }

    fn beta_scales_first(&self) -> bool {
        false
    }

    fn scale_free(&self) -> bool {
        true
    }

    fn constant_gain(&self) -> bool {
        true
    }

    fn mixes_tokens(&self) -> bool {
        false
    }

    fn unit_gain(&self, m: &BranchModel) -> f64 {
        m.last
    }

    fn pair(&self, m: &BranchModel, _qa: f64, _qb: f64, m_same: f64, m_cross: f64) -> (f64, f64) {
        (m.last * m_same, m.last * m_cross)
    }

    fn backward_gain(&self, m: &BranchModel, _q: f64) -> f64 {
        m.last
    }

    fn jacobian_split(&self, m: &BranchModel, q: f64) -> (f64, f64) {
        let g = self.backward_gain(m, q);
        (g, g)
    }

    fn last_input_sq(&self, _m: &BranchModel, q: f64, _c: f64) -> f64 {
        q
    }

    fn perturbation_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64 {
        m.forward(q, c).0
    }

    /// `J_t = W` for every token: the cross moment is carried as the energy is.
    fn deriv_corr(&self, _m: &BranchModel, _q: f64, _c: f64) -> Option<f64> {
        Some(1.0)
    }
}

/// A sampled linear branch.
///
/// # Examples
///
/// `F(u) = W u`, its JVP `W du + dW u` and its gradients `W^T g` and `g u^T`, on
/// `W = [[1, 2], [3, 4]]` and `u = (1, 1)`:
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Module, linear::Linear};
///
/// let lin = Linear { w: DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]) };
/// let u = DMatrix::from_column_slice(2, 1, &[1.0, 1.0]);
/// let (y, cache) = lin.forward(&u);
/// assert_eq!(y.as_slice(), [3.0, 7.0]);
/// assert_eq!(cache.u, u);
/// // du = (1, 0): W du = (1, 3); adding dW = I: + u = (2, 4).
/// let du = DMatrix::from_column_slice(2, 1, &[1.0, 0.0]);
/// assert_eq!(lin.jvp(&cache, Some(&du), None).as_slice(), [1.0, 3.0]);
/// let dw = [DMatrix::identity(2, 2)];
/// assert_eq!(lin.jvp(&cache, Some(&du), Some(&dw)).as_slice(), [2.0, 4.0]);
/// let (gu, gw) = lin.backward(&cache, &du);
/// assert_eq!(gu.as_slice(), [1.0, 2.0]);
/// assert_eq!(gw[0], DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 0.0, 0.0]));
/// assert_eq!(lin.params()[0].0, "w");
/// ```
#[derive(Clone, Debug)]
pub struct Linear<T: Real> {
    /// d x d.
    pub w: DMatrix<T>,
}

/// What the forward pass keeps.
///
/// # Examples
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Module, linear::Linear};
/// let lin = Linear { w: DMatrix::from_row_slice(1, 2, &[2.0, 0.5]) };
/// let u = DMatrix::from_column_slice(2, 1, &[1.0, 4.0]);
/// let (y, cache) = lin.forward(&u);
/// assert_eq!((y[0], cache.u), (4.0, u)); // the input, kept for dL/dW = g u^T
/// ```
#[derive(Clone, Debug)]
pub struct LinearCache<T: Real> {
    /// The input u.
    pub u: DMatrix<T>,
}

impl<T: Real> Module<T> for Linear<T> {
    type Cache = LinearCache<T>;

    fn params(&self) -> Vec<Param<'_, T>> {
        vec![("w", &self.w)]
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        vec![&mut self.w]
    }

    fn forward(&self, u: &DMatrix<T>) -> (DMatrix<T>, LinearCache<T>) {
        (nn(&self.w, u), LinearCache { u: u.clone() })
    }

    fn jvp(
        &self,
        c: &LinearCache<T>,
        du: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> DMatrix<T> {
        let mut out = du
            .map(|x| nn(&self.w, x))
            .unwrap_or_else(|| DMatrix::zeros(c.u.nrows(), c.u.ncols()));
        if let Some(dw) = dw {
            out += nn(&dw[0], &c.u);
        }
        out
    }

    fn backward(&self, c: &LinearCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        (tn(&self.w, g), vec![nt(g, &c.u)])
    }
}
