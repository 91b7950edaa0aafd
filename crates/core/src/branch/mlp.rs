//! The MLP branch `F(u) = W2 phi(W1 u)`, hidden width `r d`, with its activation phi (ReLU or
//! GELU; [`super::activation`], the one definition both engines use). docs/theory.md, "Branches".
//!
//! Mean field: with fan-in gains `s1`, `s2`, the pair kernel is `s2 E[phi(x) phi(y)]` for
//! `Var x = s1 qa`, `Var y = s1 qb`, `Cov = s1 m`; the backward gain is
//! `s1 s2 E[phi'(x)^2]`; ReLU is positively homogeneous (scale-free, constant gain), GELU is
//! not. Sampled: `h = W1 u`, `z = phi(h)`, `F = W2 z`; `dF = W2 (phi'(h) * (W1 du + dW1 u)) +
//! dW2 z`; backward `dL/dW2 = g z^T`, `dL/dh = phi'(h) * W2^T g`, `dL/dW1 = dL/dh u^T`.

use super::activation::Activation;
use super::module::{Module, Param};
use super::outer_energy;
use super::{BranchModel, Init, KindInfo, MeanFieldBranch};
use nalgebra::DMatrix;
use normscope_numeric::gemm::{Real, nn, nt, tn};

/// Registry entry of the ReLU MLP.
pub(crate) const RELU_INFO: KindInfo = KindInfo {
    name: "relu-mlp",
    aliases: &["mlp"],
    about: "F(u) = W2 relu(W1 u), hidden width ratio * d",
    closed_form: true,
};

/// Registry entry of the GELU MLP.
pub(crate) const GELU_INFO: KindInfo = KindInfo {
    name: "gelu-mlp",
    aliases: &[],
    about: "F(u) = W2 gelu(W1 u), hidden width ratio * d",
    closed_form: true,
};

/// The MLP's mean-field summary for one activation.
///
/// # Examples
///
/// A ReLU MLP under He with hidden ratio 2 at width 4: `W1` has fan-in gain `2` and `W2`
/// (fan-in 8) also `2`; with `E[relu(h)^2] = q/2`, the forward gain is `2 * 2 / 2 = 2`.
///
/// ```rust
/// use normscope_core::branch::{Activation, BranchConfig, BranchKind, BranchModel, Init};
/// use normscope_core::branch::{MeanFieldBranch, mlp};
/// let k = mlp::Kernel(Activation::Relu);
/// assert_eq!(k.matrix_gains(Init::He, 4.0, 2.0), (2.0, 2.0));
/// let cfg = BranchConfig {
///     kind: BranchKind::ReluMlp,
///     init: Init::He,
///     hidden_ratio: 2.0,
///     ..BranchConfig::default()
/// };
/// let m = BranchModel::new(&cfg, None, 1.0, 0.0);
/// assert_eq!(k.unit_gain(&m), 2.0);
/// assert!(k.scale_free() && k.beta_scales_first());
/// ```
pub struct Kernel(pub Activation);

impl Kernel {
    /// `s2 E[phi(x) phi(y)]` with `Var x = s1 qa`, `Var y = s1 qb`, `Cov = s1 m`.
    fn moment(&self, b: &BranchModel, qa: f64, qb: f64, m: f64) -> f64 {
        b.last * self.0.pair_moment(b.first * qa, b.first * qb, b.first * m)
    }
}

impl MeanFieldBranch for Kernel {
    fn matrix_gains(&self, init: Init, d: f64, r: f64) -> (f64, f64) {
        (init.fan_in_gain(d, r * d), init.fan_in_gain(r * d, d))
    }

    fn beta_scales_first(&self) -> bool {
        true
    }

    fn scale_free(&self) -> bool {
        match self.0 {
            Activation::Relu => true,
            Activation::Gelu => false,
        }
    }

    fn constant_gain(&self) -> bool {
        self.scale_free()
    }

    fn mixes_tokens(&self) -> bool {
        false
    }

    fn unit_gain(&self, m: &BranchModel) -> f64 {
        self.moment(m, 1.0, 1.0, 1.0)
    }

    fn pair(&self, m: &BranchModel, qa: f64, qb: f64, m_same: f64, m_cross: f64) -> (f64, f64) {
        (
            self.moment(m, qa, qb, m_same),
            self.moment(m, qa, qb, m_cross),
        )
    }

    fn backward_gain(&self, m: &BranchModel, q: f64) -> f64 {
        m.first * m.last * self.0.deriv_second_moment(m.first * q)
    }

    fn jacobian_split(&self, m: &BranchModel, q: f64) -> (f64, f64) {
        let g = self.backward_gain(m, q);
        (g, g)
    }

    fn last_input_sq(&self, m: &BranchModel, q: f64, _c: f64) -> f64 {
        m.ratio * self.0.second_moment(m.first * q)
    }

    fn perturbation_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64 {
        let (out, _) = m.forward(q, c);
        let v = m.first * q;
        out + m.last * self.0.deriv_second_moment(v) * v
    }

    /// ReLU: `P(X > 0, Y > 0) / P(X > 0) = (pi - arccos c)/pi` (Sheppard's orthant
    /// probability), at any variance; GELU is not derived.
    fn deriv_corr(&self, _m: &BranchModel, _q: f64, c: f64) -> Option<f64> {
        match self.0 {
            Activation::Relu => {
                let pi = std::f64::consts::PI;
                Some((pi - c.clamp(-1.0, 1.0).acos()) / pi)
            }
            Activation::Gelu => None,
        }
    }
}

/// A sampled MLP branch.
///
/// # Examples
///
/// `W2 relu(W1 u)` with `W1 = (1, -1)^T` and `W2 = (1, 1)` is `relu(u) + relu(-u) = |u|`, and
/// its input gradient for `g = 1` is `sign(u)`:
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Activation, Module, mlp::Mlp};
///
/// let m = Mlp {
///     w1: DMatrix::from_column_slice(2, 1, &[1.0, -1.0]),
///     w2: DMatrix::from_row_slice(1, 2, &[1.0, 1.0]),
///     act: Activation::Relu,
/// };
/// let u = DMatrix::from_row_slice(1, 2, &[-3.0, 2.0]);
/// let (y, cache) = m.forward(&u);
/// assert_eq!(y.as_slice(), [3.0, 2.0]);
/// let (gu, gw) = m.backward(&cache, &DMatrix::from_element(1, 2, 1.0));
/// assert_eq!(gu.as_slice(), [-1.0, 1.0]);
/// // dL/dW2 = g z^T with z = relu(W1 u) = [[0, 2], [3, 0]]: (2, 3).
/// assert_eq!(gw[1].as_slice(), [2.0, 3.0]);
/// assert_eq!(m.params().iter().map(|p| p.0).collect::<Vec<_>>(), ["w1", "w2"]);
/// ```
#[derive(Clone, Debug)]
pub struct Mlp<T: Real> {
    /// (r d) x d.
    pub w1: DMatrix<T>,
    /// d x (r d).
    pub w2: DMatrix<T>,
    /// phi.
    pub act: Activation,
}

/// What the forward pass keeps.
///
/// # Examples
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Activation, Module, mlp::Mlp};
/// let m = Mlp {
///     w1: DMatrix::from_column_slice(2, 1, &[1.0, -1.0]),
///     w2: DMatrix::from_row_slice(1, 2, &[1.0, 1.0]),
///     act: Activation::Relu,
/// };
/// let (_, c) = m.forward(&DMatrix::from_element(1, 1, 3.0));
/// // h = W1 u = (3, -3), z = relu(h) = (3, 0): what W2's and W1's gradients need.
/// assert_eq!((c.u[0], c.h.as_slice(), c.z.as_slice()), (3.0, &[3.0, -3.0][..], &[3.0, 0.0][..]));
/// ```
#[derive(Clone, Debug)]
pub struct MlpCache<T: Real> {
    /// The input u.
    pub u: DMatrix<T>,
    /// The pre-activation `W1 u`.
    pub h: DMatrix<T>,
    /// `phi(W1 u)`, the input of `W2`.
    pub z: DMatrix<T>,
}

impl<T: Real> Mlp<T> {
    /// The hidden layer `(h, z) = (W1 u, phi(W1 u))`: the first half of
    /// [`Module::forward`], for a caller that holds `W1` alone
    /// (`monte_carlo::lean_mlp`'s streamed MLP blocks).
    pub fn hidden(w1: &DMatrix<T>, act: Activation, u: &DMatrix<T>) -> (DMatrix<T>, DMatrix<T>) {
        let h = nn(w1, u);
        let z = activate(act, &h);
        (h, z)
    }

    /// The second half of [`Module::forward`]: `W2 z`, and the cache of `u`, `h`, `z`.
    pub fn output(
        w2: &DMatrix<T>,
        u: &DMatrix<T>,
        h: DMatrix<T>,
        z: DMatrix<T>,
    ) -> (DMatrix<T>, MlpCache<T>) {
        let out = nn(w2, &z);
        (out, MlpCache { u: u.clone(), h, z })
    }

    /// Back through `W2` and phi: `(dL/dh, ||dL/dW2||^2) = (phi'(h) ⊙ W2^T g, ||g z^T||^2)`,
    /// the first half of [`Module::backward_last_sq`] (then `dL/du = W1^T dL/dh`).
    pub(crate) fn back_to_hidden(
        w2: &DMatrix<T>,
        act: Activation,
        c: &MlpCache<T>,
        g: &DMatrix<T>,
    ) -> (DMatrix<T>, f64) {
        let gw2_sq = outer_energy::nt_sum_sq(g, &c.z);
        let mut gh = tn(w2, g);
        times_derivative(act, &mut gh, &c.h);
        (gh, gw2_sq)
    }
}

/// `phi'(x)` in `T` (evaluated in f64).
#[inline(always)]
fn derivative<T: Real>(act: Activation, x: T) -> T {
    T::of(act.derivative(x.as_f64()))
}

/// `phi(h)` entry by entry in `T` (each evaluated in f64): the activation chosen once per
/// matrix rather than per entry, over the column-major slice, so that ReLU's loop vectorizes.
fn activate<T: Real>(act: Activation, h: &DMatrix<T>) -> DMatrix<T> {
    fn apply<T: Real>(h: &DMatrix<T>, phi: impl Fn(f64) -> f64) -> DMatrix<T> {
        let z: Vec<T> = h
            .as_slice()
            .iter()
            .map(|x| T::of(phi(x.as_f64())))
            .collect();
        DMatrix::from_vec(h.nrows(), h.ncols(), z)
    }
    match act {
        Activation::Relu => apply(h, |x| Activation::Relu.value(x)),
        Activation::Gelu => apply(h, |x| Activation::Gelu.value(x)),
    }
}

/// `g *= phi'(h)` entry by entry ([`derivative`]), the activation chosen once per matrix.
fn times_derivative<T: Real>(act: Activation, g: &mut DMatrix<T>, h: &DMatrix<T>) {
    fn apply<T: Real>(g: &mut DMatrix<T>, h: &DMatrix<T>, d: impl Fn(T) -> T) {
        assert_eq!(
            g.shape(),
            h.shape(),
            "the gradient has the hidden layer's shape"
        );
        for (x, &hv) in g.as_mut_slice().iter_mut().zip(h.as_slice()) {
            *x *= d(hv);
        }
    }
    match act {
        Activation::Relu => apply(g, h, |x| derivative(Activation::Relu, x)),
        Activation::Gelu => apply(g, h, |x| derivative(Activation::Gelu, x)),
    }
}

impl<T: Real> Module<T> for Mlp<T> {
    type Cache = MlpCache<T>;

    fn params(&self) -> Vec<Param<'_, T>> {
        vec![("w1", &self.w1), ("w2", &self.w2)]
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        vec![&mut self.w1, &mut self.w2]
    }

    fn forward(&self, u: &DMatrix<T>) -> (DMatrix<T>, MlpCache<T>) {
        let (h, z) = Self::hidden(&self.w1, self.act, u);
        Self::output(&self.w2, u, h, z)
    }

    fn jvp(
        &self,
        c: &MlpCache<T>,
        du: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> DMatrix<T> {
        let mut dh = du.map(|x| nn(&self.w1, x));
        if let Some(dw) = dw {
            let t = nn(&dw[0], &c.u);
            dh = Some(match dh {
                Some(x) => x + t,
                None => t,
            });
        }
        let mut out = match dh {
            Some(mut dh) => {
                times_derivative(self.act, &mut dh, &c.h);
                nn(&self.w2, &dh)
            }
            None => DMatrix::zeros(c.u.nrows(), c.u.ncols()),
        };
        if let Some(dw) = dw {
            out += nn(&dw[1], &c.z);
        }
        out
    }

    fn backward(&self, c: &MlpCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let gw2 = nt(g, &c.z);
        let mut gh = tn(&self.w2, g);
        times_derivative(self.act, &mut gh, &c.h);
        let gw1 = nt(&gh, &c.u);
        (tn(&self.w1, &gh), vec![gw1, gw2])
    }

    /// [`Module::backward`] without `dL/dW1` (one product of four fewer), and with
    /// `||dL/dW2||^2 = ||g z^T||^2` from [`outer_energy::nt_sum_sq`] (column blocks of
    /// `g z^T` in f64, Gram matrices in f32) instead of forming the d x rd gradient.
    fn backward_last_sq(&self, c: &MlpCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, f64) {
        let (gh, gw2_sq) = Self::back_to_hidden(&self.w2, self.act, c, g);
        (tn(&self.w1, &gh), gw2_sq)
    }
}
