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
