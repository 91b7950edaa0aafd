//! Sampled branches: the [`Module`] trait every branch file implements (named parameters,
//! forward keeping what backward uses, JVP, backward returning every parameter's gradient in
//! parameter order), generic over the float type ([`Real`]: f64, or f32 for speed). The
//! [`super::Branch`] a sampled block holds, which dispatches to its file's module, is in
//! [`super::drawn`].
//!
//! Activations are d x n matrices, one column per token.

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// A named parameter tensor.
pub(crate) type Param<'a, T> = (&'static str, &'a DMatrix<T>);

/// A sampled branch: what a training loop or the Monte Carlo engine needs of it.
///
/// # Examples
///
/// Code written against the trait runs on any implementor, here the linear branch
/// ([`super::linear::Linear`]) in f64 and in f32: with `W = 2 I`, `||F(u)||^2 = 4 ||u||^2`, and
/// the adjoint identity `<v, J du> = <J^T v, du>` holds exactly on small integers.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::branch::{Module, linear::Linear};
///
/// fn gain<M: Module<f64>>(m: &M, u: &DMatrix<f64>) -> f64 {
///     m.forward(u).0.norm_squared() / u.norm_squared()
/// }
/// let lin = Linear { w: DMatrix::<f64>::identity(3, 3) * 2.0 };
/// let u = DMatrix::from_column_slice(3, 2, &[1.0, -2.0, 0.5, 3.0, 0.0, 1.0]);
/// assert_eq!(gain(&lin, &u), 4.0);
///
/// let (_, c) = lin.forward(&u);
/// let du = DMatrix::from_column_slice(3, 2, &[1.0, 0.0, 2.0, -1.0, 1.0, 0.0]);
/// let v = DMatrix::from_column_slice(3, 2, &[0.0, 1.0, 1.0, 2.0, -1.0, 3.0]);
/// let (gu, _) = lin.backward(&c, &v);
/// assert_eq!(v.dot(&lin.jvp(&c, Some(&du), None)), gu.dot(&du));
///
/// let lin32 = Linear { w: DMatrix::<f32>::identity(2, 2) * 3.0 };
/// let (y, _) = lin32.forward(&DMatrix::from_element(2, 1, 1.0f32));
/// assert_eq!(y.as_slice(), [3.0f32, 3.0]);
/// assert_eq!(lin32.params().len(), 1);
/// ```
pub trait Module<T: Real> {
    /// What [`Module::forward`] keeps for [`Module::jvp`] and [`Module::backward`].
    type Cache;

    /// The parameters, named, in the order [`Module::backward`] returns their gradients.
    fn params(&self) -> Vec<Param<'_, T>>;

    /// The parameters, mutable, in the same order.
    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>>;

    /// `F(u)` and the cache.
    fn forward(&self, u: &DMatrix<T>) -> (DMatrix<T>, Self::Cache);

    /// `J_F(u) du + sum_W dF/dW dW`: the output tangent for an input tangent `du` (`None`:
    /// zero) and parameter tangents `dw` (`None`: zero; else in [`Module::params`] order).
    fn jvp(
        &self,
        c: &Self::Cache,
        du: Option<&DMatrix<T>>,
        dw: Option<&[DMatrix<T>]>,
    ) -> DMatrix<T>;

    /// Backprop of an output gradient `g`: `(dL/du, [dL/dW in params() order])`.
    fn backward(&self, c: &Self::Cache, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>);

    /// `(dL/du, ||dL/dW_last||_F^2)`: [`Module::backward`] with only the squared norm of the
    /// last parameter's gradient (the Monte Carlo engine's `weight_grad_sq`), accumulated in
    /// f64 column by column ([`super::outer_energy::column_sum_sq`]; for f64 the bits of
    /// nalgebra's `norm_squared` of the whole gradient). A module whose other weight gradients
    /// cost products, or whose last gradient is a large outer product, overrides this to skip
    /// them or to never hold the gradient whole.
    fn backward_last_sq(&self, c: &Self::Cache, g: &DMatrix<T>) -> (DMatrix<T>, f64) {
        let (gu, mut gw) = self.backward(c, g);
        let last = gw.pop().expect("a module has parameters");
        (gu, super::outer_energy::column_sum_sq(0.0, &last))
    }
}

/// `v` repeated in every one of `n` columns.
pub(crate) fn broadcast<T: Real>(v: &nalgebra::DVector<T>, n: usize) -> DMatrix<T> {
    DMatrix::from_fn(v.len(), n, |i, _| v[i])
}
