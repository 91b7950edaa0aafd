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
use normscope_numeric::gemm::Real;

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
    fn normalize(&self, mode: Mode, z: &DMatrix<T>) -> NormCache<T> {
        let kind = self.kind;
        if kind.is_tanh() {
            let alpha = self.alpha_value();
            return NormCache {
                y: dyt::forward(alpha, z).y,
                inv_sigma: Vec::new(),
                kind,
                statistic: Statistic::Tanh { alpha },
                input: Some(z.clone()),
            };
        }
        // In evaluation, a norm over the batch divides by its running statistics.
        if let Some(r) = self.running.as_ref().filter(|_| !mode.training) {
            return NormCache {
                y: r.eval(z, mode.eps),
                inv_sigma: r.inv_sigma(mode.eps).into_iter().map(T::of).collect(),
                kind,
                statistic: Statistic::Channel,
                input: None,
            };
        }
        let mut c = norm::forward_with(kind, mode.layout(self.groups), mode.eps, z);
        if kind.spans_batch() {
            c.input = Some(z.clone());
        }
        c
    }

    /// `(cache of N, gamma ⊙ N(z) + b)`.
    pub fn forward(&self, mode: Mode, z: &DMatrix<T>) -> (NormCache<T>, DMatrix<T>) {
        let c = self.normalize(mode, z);
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

    /// `(dL/dz, [dL/dalpha, dL/dgamma, dL/db] as present)` for the output gradient `g`.
    pub fn backward(&self, c: &NormCache<T>, g: &DMatrix<T>) -> (DMatrix<T>, Vec<DMatrix<T>>) {
        let mut grads = Vec::new();
        let gy = match &self.gain {
            Some(gain) => {
                let mut gy = g.clone();
                for mut col in gy.column_iter_mut() {
                    col.component_mul_assign(&gain.column(0));
                }
                gy
            }
            None => g.clone(),
        };
        if self.alpha.is_some() {
            let z = c.input.as_ref().expect("DyT keeps its input");
            let ga = dyt::alpha_grad_of(&c.y, z, &gy);
            grads.push(DMatrix::from_element(1, 1, T::of(ga)));
        }
        if self.gain.is_some() {
            grads.push(row_sums(&g.component_mul(&c.y)));
        }
        if self.bias.is_some() {
            grads.push(row_sums(g));
        }
        (norm::jacobian(c, &gy), grads)
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
