//! A norm slot of a trainable model: one of the norms of [`crate::spec::NormKind`], run by the
//! Monte Carlo engine's kernels ([`crate::monte_carlo::norm::forward_with`]), followed by an
//! optional learnable affine map,
//!
//! ```text
//! y = gamma ⊙ N(z) + b        (gamma = 1, b = 0 at init)
//! ```
//!
//! as PyTorch's modules with their affine parameters on:
//!
//! | norm | module | parameters |
//! |---|---|---|
//! | LayerNorm (Ba et al. 2016) | `nn.LayerNorm(d)` | gain, bias |
//! | RMSNorm (Zhang and Sennrich 2019) | `nn.RMSNorm(d)` | gain |
//! | BatchNorm (Ioffe and Szegedy 2015) | `nn.BatchNorm1d(d)` | gain, bias; running statistics |
//! | InstanceNorm (Ulyanov et al. 2016) | `nn.InstanceNorm1d(d, affine=True)` | gain, bias |
//! | GroupNorm (Wu and He 2018) | `nn.GroupNorm(G, d)` | gain, bias (per channel) |
//! | DyT (Zhu et al. 2025) | `DynamicTanh` of its reference code | alpha (always), gain, bias |
//!
//! A forward pass runs in a [`Mode`]: its norms' epsilon, the tokens per sequence of its
//! columns (InstanceNorm and GroupNorm normalize within a sequence, BatchNorm over every
//! column) and whether it trains. In training BatchNorm divides by the batch's statistics and
//! keeps its input, from which [`NormLayer::running_after`] moves the running statistics
//! ([`crate::norms::running`], PyTorch's momentum 0.1 and unbiased variance); in evaluation it
//! divides by the running statistics, with the Jacobian `diag(1/sigma_c)`. DyT's `alpha`
//! (0.5 at init, [`crate::norms::dyt::ALPHA0`]) is learnable: `dL/dalpha = sum g ⊙ gamma ⊙ z ⊙
//! (1 - tanh^2(alpha z))`.
//!
//! At init `1 * y + 0 = y` exactly in floating point, so a trainable model made from a Monte
//! Carlo network gives that network's streams bit for bit. Backward: `dL/dgamma = sum_t g_t ⊙
//! N(z)_t`, `dL/db = sum_t g_t`, `dL/dN = gamma ⊙ g`, then the norm's symmetric Jacobian.
//! Generic over the float type ([`Real`]: f64 by default, or f32); the norm's statistics and
//! the parameters' gradients' sums are accumulated in f64.

use crate::monte_carlo::norm::{self, NormCache, Statistic};
use crate::norms::dyt;
use crate::norms::running::{MOMENTUM, Running};
use crate::spec::{DEFAULT_GROUPS, NormKind, NormLayout};
use nalgebra::DMatrix;
use normscope_numeric::gemm::{Real, is_f64};
use std::borrow::Cow;

/// How a forward pass runs its norm slots.
///
/// # Examples
///
/// A batch of 4 sequences of 8 tokens in training, and the same batch read as 32 examples of
/// one column each:
///
/// ```rust
/// use normscope_core::train::layer_norm::Mode;
/// let m = Mode { eps: 1e-5, seq: 8, training: true };
/// assert_eq!(m.layout(32).seq, Some(8));
/// assert_eq!(Mode { seq: 1, ..m }.layout(32).seq, Some(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mode {
    /// The norms' epsilon.
    pub eps: f64,
    /// Tokens per sequence of the columns (1 when every column is an example of its own).
    pub seq: usize,
    /// Training (BatchNorm divides by the batch's statistics) or evaluation (by its running
    /// statistics).
    pub training: bool,
}

impl Mode {
    /// The norms' grouping with GroupNorm's `groups`.
    pub fn layout(&self, groups: usize) -> NormLayout {
        NormLayout {
            groups,
            seq: Some(self.seq),
        }
    }
}

/// One norm slot with its parameters: `alpha` (1 x 1, DyT only), then the optional affine
/// `gamma` and `b` (d x 1 each).
///
/// # Examples
///
/// LayerNorm of the token `(1, 3)` is `(-1, 1)`; with `gamma = (2, 3)` and `b = (0.5, 0.5)` the
/// slot gives `(-1.5, 3.5)`, and for `g = (1, 1)`, `dL/dgamma = N(z) = (-1, 1)`, `dL/db = g`.
/// RMSNorm has a gain and no bias; DyT an `alpha` of 0.5 before its gain and bias, and
/// BatchNorm running statistics (0 and 1 before the first step).
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::spec::NormKind;
/// use normscope_core::train::layer_norm::{Mode, NormLayer};
///
/// let mode = Mode { eps: 0.0, seq: 1, training: true };
/// let mut n = NormLayer::new(NormKind::Layer, 2, true);
/// n.gain = Some(DMatrix::from_column_slice(2, 1, &[2.0, 3.0]));
/// n.bias = Some(DMatrix::from_element(2, 1, 0.5));
/// let (cache, y) = n.forward(mode, &DMatrix::from_column_slice(2, 1, &[1.0, 3.0]));
/// assert_eq!(y.as_slice(), [-1.5, 3.5]);
/// let (_, grads) = n.backward(&cache, &DMatrix::from_element(2, 1, 1.0));
/// assert_eq!((grads[0].as_slice(), grads[1].as_slice()), (&[-1.0, 1.0][..], &[1.0, 1.0][..]));
/// let rms = NormLayer::<f64>::new(NormKind::Rms, 3, true);
/// assert_eq!(rms.params().iter().map(|p| p.0).collect::<Vec<_>>(), ["gain"]);
/// let dyt = NormLayer::<f64>::new(NormKind::Dyt, 3, true);
/// assert_eq!(dyt.params().iter().map(|p| p.0).collect::<Vec<_>>(), ["alpha", "gain", "bias"]);
/// assert_eq!(dyt.params()[0].1[0], 0.5);
/// let bn = NormLayer::<f64>::new(NormKind::Batch, 3, false);
/// assert_eq!(bn.running.unwrap().var, [1.0; 3]);
/// ```
#[derive(Clone, Debug)]
pub struct NormLayer<T: Real = f64> {
    /// Which norm.
    pub kind: NormKind,
    /// GroupNorm's groups G (unused by the other norms).
    pub groups: usize,
    /// DyT's learnable `alpha` (1 x 1); `None` for the other norms.
    pub alpha: Option<DMatrix<T>>,
    /// `gamma`, if learnable.
    pub gain: Option<DMatrix<T>>,
    /// `b`, if learnable (every norm but RMSNorm).
    pub bias: Option<DMatrix<T>>,
    /// BatchNorm's running statistics; `None` for the other norms.
    pub running: Option<Running>,
}

impl<T: Real> NormLayer<T> {
    /// A norm of width d, with `gamma = 1` (and `b = 0` for every norm but RMSNorm) when
    /// `affine`, GroupNorm's groups [`DEFAULT_GROUPS`] ([`Self::with_groups`]).
    pub fn new(kind: NormKind, d: usize, affine: bool) -> Self {
        NormLayer {
            kind,
            groups: DEFAULT_GROUPS,
            alpha: kind
                .is_tanh()
                .then(|| DMatrix::from_element(1, 1, T::of(dyt::ALPHA0))),
            gain: affine.then(|| DMatrix::from_element(d, 1, T::one())),
            bias: (affine && kind.has_bias()).then(|| DMatrix::zeros(d, 1)),
            running: kind.spans_batch().then(|| Running::new(d)),
        }
    }

    /// The same norm with GroupNorm's `groups`.
    pub fn with_groups(self, groups: usize) -> Self {
        NormLayer { groups, ..self }
    }

    /// Parameters in order (alpha, gain, bias), with their names.
    pub fn params(&self) -> Vec<(&'static str, &DMatrix<T>)> {
        [
            ("alpha", &self.alpha),
            ("gain", &self.gain),
            ("bias", &self.bias),
        ]
        .into_iter()
        .filter_map(|(name, m)| m.as_ref().map(|m| (name, m)))
        .collect()
    }

    /// The same parameters, mutable.
    pub fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        [&mut self.alpha, &mut self.gain, &mut self.bias]
            .into_iter()
            .flatten()
            .collect()
    }

    /// DyT's `alpha` as a number.
    fn alpha_value(&self) -> f64 {
        self.alpha
            .as_ref()
            .map_or(dyt::ALPHA0, |a| a[(0, 0)].as_f64())
    }

    /// `N(z)` with what the Jacobian and the parameters' gradients need. Panics if `z` does
    /// not divide into the norm's blocks: training checks its shapes first
    /// ([`super::config`]).
    fn normalize(&self, mode: Mode, z: Cow<'_, DMatrix<T>>) -> NormCache<T> {
        let kind = self.kind;
        if kind.is_tanh() {
            let alpha = self.alpha_value();
            return NormCache {
                y: dyt::forward(alpha, &z).y,
                inv_sigma: Vec::new(),
                kind,
                statistic: Statistic::Tanh { alpha },
                input: Some(z.into_owned()),
            };
        }
        // In evaluation, a norm over the batch divides by its running statistics.
        if let Some(r) = self.running.as_ref().filter(|_| !mode.training) {
            return NormCache {
                y: r.eval(&z, mode.eps),
                inv_sigma: r.inv_sigma(mode.eps).into_iter().map(T::of).collect(),
                kind,
                statistic: Statistic::Channel,
                input: None,
            };
        }
        if kind.spans_batch() {
            let mut c = norm::forward_with(kind, mode.layout(self.groups), mode.eps, &z);
            c.input = Some(z.into_owned());
            return c;
        }
        norm::forward_with_cow(kind, mode.layout(self.groups), mode.eps, z)
    }

    /// `(cache of N, gamma ⊙ N(z) + b)`.
    pub fn forward(&self, mode: Mode, z: &DMatrix<T>) -> (NormCache<T>, DMatrix<T>) {
        self.forward_cow(mode, Cow::Borrowed(z))
    }

    /// [`Self::forward`] of a `z` that may be owned: the norm then keeps an owned `z` (as its
    /// input, or normalized in place) instead of a copy. The same values.
    pub fn forward_cow(&self, mode: Mode, z: Cow<'_, DMatrix<T>>) -> (NormCache<T>, DMatrix<T>) {
        let c = self.normalize(mode, z);
        // `y * gamma`, then `+ b`, entry by entry: one pass over the cache's `y`.
        let y = match (&self.gain, &self.bias) {
            (Some(g), Some(b)) => c.y.map_with_location(|r, _, v| v * g[r] + b[r]),
            (Some(g), None) => c.y.map_with_location(|r, _, v| v * g[r]),
            (None, Some(b)) => c.y.map_with_location(|r, _, v| v + b[r]),
            (None, None) => c.y.clone(),
        };
        (c, y)
    }

    /// `(dL/dz, [dL/dalpha, dL/dgamma, dL/db] as present)` for the output gradient `g`.
    pub fn backward(&self, c: &NormCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        self.backward_cow(c, Cow::Borrowed(g))
    }

    /// [`Self::backward`] of a `g` that may be owned: without a gain, `dL/dN = g` is then
    /// `g`'s own buffer, and the norm's Jacobian is applied in place. The same values.
    pub fn backward_cow(
        &self,
        c: &NormCache<T>,
        g: Cow<'_, DMatrix<T>>,
    ) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        // The gain's and bias's gradients read `g`; then `dL/dN = gamma ⊙ g` (or `g` itself).
        let (gain_grad, bias_grad) = match (self.gain.is_some(), self.bias.is_some()) {
            (true, true) => {
                let (gain, bias) = gain_bias_sums(&g, &c.y);
                (Some(gain), Some(bias))
            }
            (gain, bias) => (
                gain.then(|| row_sums(&g.component_mul(&c.y))),
                bias.then(|| row_sums(&g)),
            ),
        };
        let gy = match &self.gain {
            Some(gain) => Cow::Owned(match g {
                Cow::Owned(mut gy) => {
                    for mut col in gy.column_iter_mut() {
                        col.component_mul_assign(&gain.column(0));
                    }
                    gy
                }
                Cow::Borrowed(g) => g.map_with_location(|r, _, v| v * gain[r]),
            }),
            None => g,
        };
        let mut grads = Vec::new();
        if self.alpha.is_some() {
            let z = c.input.as_ref().expect("DyT keeps its input");
            let ga = dyt::alpha_grad_of(&c.y, z, &gy);
            grads.push(DMatrix::from_element(1, 1, T::of(ga)));
        }
        grads.extend(gain_grad);
        grads.extend(bias_grad);
        (norm::jacobian_cow(c, gy), grads)
    }

    /// `d/dt [gamma ⊙ N(z) + b]` for the input tangent `dz` and the parameters' tangents
    /// (`dalpha`, `dgamma`, `db` as present, taken from `tangents` in [`Self::params`] order).
    pub fn jvp<'a>(
        &self,
        c: &NormCache<T>,
        dz: &DMatrix<T>,
        tangents: &mut impl Iterator<Item = &'a DMatrix<T>>,
    ) -> DMatrix<T>
    where
        T: 'a,
    {
        let mut dy = norm::jacobian(c, dz);
        if self.alpha.is_some() {
            let da = tangents.next().expect("an alpha tangent")[(0, 0)].as_f64();
            let z = c.input.as_ref().expect("DyT keeps its input");
            dy += dyt::alpha_tangent(&c.y, z, da);
        }
        if let Some(g) = &self.gain {
            let dg = tangents.next().expect("a gain tangent");
            for (mut col, ycol) in dy.column_iter_mut().zip(c.y.column_iter()) {
                col.component_mul_assign(&g.column(0));
                col += ycol.component_mul(&dg.column(0));
            }
        }
        if self.bias.is_some() {
            let db = tangents.next().expect("a bias tangent");
            for mut col in dy.column_iter_mut() {
                col += db.column(0);
            }
        }
        dy
    }

    /// The running statistics after the training pass whose cache is `c` (PyTorch's update,
    /// [`Running::update`] with momentum [`MOMENTUM`]), or `None`: not a BatchNorm, or a pass
    /// in evaluation mode.
    pub fn running_after(&self, c: &NormCache<T>) -> Option<Running> {
        let (Some(r), Some(z)) = (&self.running, &c.input) else {
            return None;
        };
        let mut r = r.clone();
        r.update(z, MOMENTUM);
        Some(r)
    }
}

/// `sum_t m[:, t]` as a d x 1 matrix, each sum accumulated in f64 ([`Real::sum`]) and rounded
/// once.
pub fn row_sums<T: Real>(m: &DMatrix<T>) -> DMatrix<T> {
    DMatrix::from_iterator(m.nrows(), 1, T::row_sums(m).into_iter().map(T::of))
}

/// `(row_sums(g ⊙ y), row_sums(g))` ([`row_sums`]) in one pass over `g` and without the
/// product matrix: each product `g_i y_i` rounded to `T` and widened as
/// [`nalgebra::Matrix::component_mul`] then [`Real::row_sums`] would, and the same additions in
/// the same chains ([`Real::row_sums`]: one chain per row in f64, nalgebra's `sum`; four in f32,
/// entry j to chain `j mod 4`, combined as `(a0 + a1) + (a2 + a3)`).
fn gain_bias_sums<T: Real>(g: &DMatrix<T>, y: &DMatrix<T>) -> (DMatrix<T>, DMatrix<T>) {
    assert_eq!(g.shape(), y.shape(), "the gradient has the norm's shape");
    if is_f64::<T>() {
        chained_gain_bias_sums::<T, 1>(g, y)
    } else {
        chained_gain_bias_sums::<T, 4>(g, y)
    }
}

/// [`gain_bias_sums`] with `C` chains per row.
fn chained_gain_bias_sums<T: Real, const C: usize>(
    g: &DMatrix<T>,
    y: &DMatrix<T>,
) -> (DMatrix<T>, DMatrix<T>) {
    let rows = g.nrows();
    let mut prod = vec![0.0f64; rows * C];
    let mut plain = vec![0.0f64; rows * C];
    if rows > 0 {
        let columns = g
            .as_slice()
            .chunks_exact(rows)
            .zip(y.as_slice().chunks_exact(rows));
        for (j, (gc, yc)) in columns.enumerate() {
            let p = &mut prod[(j % C) * rows..][..rows];
            let q = &mut plain[(j % C) * rows..][..rows];
            for (((p, q), &gv), &yv) in p.iter_mut().zip(q.iter_mut()).zip(gc).zip(yc) {
                *p += (gv * yv).as_f64();
                *q += gv.as_f64();
            }
        }
    }
    let combine = |acc: &[f64]| {
        DMatrix::from_fn(rows, 1, |r, _| {
            T::of(match C {
                1 => acc[r],
                4 => (acc[r] + acc[rows + r]) + (acc[2 * rows + r] + acc[3 * rows + r]),
                _ => unreachable!("one or four chains"),
            })
        })
    };
    (combine(&prod), combine(&plain))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries over 16 decades with both signs, so that sums depend on their order.
    fn values(rows: usize, cols: usize, seed: f64) -> DMatrix<f64> {
        DMatrix::from_fn(rows, cols, |i, j| {
            ((i * cols + j) as f64 * 0.61 + seed).sin()
                * 10f64.powi(((3 * i + 7 * j) % 17) as i32 - 8)
        })
    }

    fn bits<T: Real>(m: &DMatrix<T>) -> Vec<u64> {
        m.iter().map(|v| v.as_f64().to_bits()).collect()
    }

    fn fused_sums_are_the_row_sums<T: Real>(round: impl Fn(f64) -> T) {
        // Every remainder of the four f32 chains (0..=9 columns), no rows, one row.
        for rows in [0, 1, 3, 7] {
            for cols in 0..=9 {
                let g = values(rows, cols, 0.3).map(&round);
                let y = values(rows, cols, 1.7).map(&round);
                let (gain, bias) = gain_bias_sums(&g, &y);
                assert_eq!(bits(&gain), bits(&row_sums(&g.component_mul(&y))));
                assert_eq!(bits(&bias), bits(&row_sums(&g)));
            }
        }
    }

    #[test]
    fn gain_and_bias_sums_keep_the_bits_of_row_sums() {
        fused_sums_are_the_row_sums::<f64>(|x| x);
        fused_sums_are_the_row_sums::<f32>(|x| x as f32);
    }
}
