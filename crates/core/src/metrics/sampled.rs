//! What the sampled metrics read from one network ([`Quantities`]): per-layer scalars the
//! Monte Carlo engine ([`crate::monte_carlo::measure`]) accumulates in f64 while a pass has the
//! network's matrices, and the guards ([`ratio`], [`resolved`]) that turn an underflowed sum
//! into a missing value rather than a number.

use std::collections::BTreeMap;

/// The coefficients and energy shares of every source at one layer.
///
/// # Examples
///
/// Layer 1 of a network where `x_1 = 0.5 x_0 + B_1`, with half its energy from each source;
/// the `coef` metric writes the coefficients by source j.
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::metrics::sampled::{Decomposed, Quantities};
/// let mut q = Quantities::default();
/// let d = Decomposed { coef: vec![0.5, 1.0], weight: vec![0.5, 0.5] };
/// q.decomposition.insert(1, d);
/// let mut v = Vec::new();
/// Metric::Coef.sampled(&q, 1, &mut |j, x| v.push((j, x)));
/// assert_eq!(v, [(Some(0), 0.5), (Some(1), 1.0)]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Decomposed {
    /// Token mean of `C_{l,j,t}`, j = 0..=l.
    pub coef: Vec<f64>,
    /// `sum_t |C_{l,j,t} B~_{j,t}|^2 / ||x_l||^2`, j = 0..=l.
    pub weight: Vec<f64>,
}

/// A network's path-length law at one layer.
///
/// # Examples
///
/// A law with 3/4 of the energy on paths of length 0 and 1/4 on length 2 (mean 0.5); the
/// `path_len` metric writes the positive shares by length k.
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::metrics::sampled::{PathLaw, Quantities};
/// let mut q = Quantities::default();
/// q.path_laws.insert(2, PathLaw { shares: vec![(0, 0.75), (2, 0.25)], mean: 0.5 });
/// let mut v = Vec::new();
/// Metric::PathLen.sampled(&q, 2, &mut |k, x| v.push((k, x)));
/// assert_eq!(v, [(Some(0), 0.75), (Some(2), 0.25)]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PathLaw {
    /// `(k, share)` for the lengths whose share is positive.
    pub shares: Vec<(usize, f64)>,
    /// The mean length.
    pub mean: f64,
}

/// What the metrics read from one sampled network: per-layer scalars, each accumulated in f64
/// from the network's matrices (whatever its precision) while a pass had them, indexed by
/// layer l = 0..=L (`None` where not measured).
///
/// # Examples
///
/// A network of 2 tokens at width 2 with `||x_0||_F^2 = 4`, `||x_1||_F^2 = 9` and `<x_1, x_0>_F
/// = 3`: `cos_prev = 3/sqrt(4 * 9) = 0.5`, `stream_sq = 9/(2 * 2) = 2.25`. A stream whose energy
/// underflowed is missing (NaN), not 0.
///
/// ```rust
/// use normscope_core::metrics::{Metric, sampled::{Quantities, ratio}};
///
/// let q = Quantities {
///     tokens: 2.0,
///     width: 2.0,
///     energy: vec![4.0, 9.0, 0.0],
///     dot_prev: vec![None, Some(3.0), Some(0.0)],
///     ..Quantities::default()
/// };
/// assert_eq!(q.energy(1), 9.0);
/// assert_eq!(q.cos_prev(1), 0.5);
/// let mut v = Vec::new();
/// Metric::StreamSq.sampled(&q, 1, &mut |_, x| v.push(x));
/// Metric::StreamSq.sampled(&q, 2, &mut |_, x| v.push(x));
/// assert_eq!(v[0], 2.25);
/// assert!(v[1].is_nan() && q.cos_prev(2).is_nan());
/// assert!(ratio(1.0, 0.0).is_nan());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Quantities {
    /// Tokens n.
    pub tokens: f64,
    /// Width d.
    pub width: f64,
    /// `||x_l||_F^2` at every layer.
    pub energy: Vec<f64>,
    /// `<x_l, x_{l-1}>_F` (index l >= 1).
    pub dot_prev: Vec<Option<f64>>,
    /// `||sum_t x_{l,t}||^2` at the selected layers.
    pub column_sum_sq: Vec<Option<f64>>,
    /// `||x_l - x_{l-1}||_F^2` at the selected blocks.
    pub step_sq: Vec<Option<f64>>,
    /// `(||F_{l+1}(u_l) - F_{l+1}(u'_{l})||^2, ||F_{l+1}(u_l)||^2)`: block l+1's branch on its
    /// own input and on the input `x_{l-1}` would give it (`merge_error`).
    pub merge: Vec<Option<(f64, f64)>>,
    /// The decomposition at the selected layers (if needed).
    pub decomposition: BTreeMap<usize, Decomposed>,
    /// `(a_l^2, b_l^2)` at the selected blocks (if needed).
    pub gains: Vec<Option<(f64, f64)>>,
    /// The path-length law at the selected layers (if needed).
    pub path_laws: BTreeMap<usize, PathLaw>,
    /// `||t_l||^2 / (n d)` of the output change at the selected layers (if needed).
    pub output_change: Vec<Option<f64>>,
    /// `||dL/dx_l||_F^2` (if the backward pass ran).
    pub grad_sq: Vec<Option<f64>>,
    /// `||dL/dW_l||_F^2` of block l's last weight matrix (if the backward pass ran).
    pub last_weight_grad_sq: Vec<Option<f64>>,
}

/// The smallest denominator a sampled ratio divides by: below it the squared entries that
/// make it up are subnormal (or it is zero), so the ratio has lost its digits or is 0/0, and
/// [`ratio`] returns NaN, which the profile writes as missing ([`crate::profile::MC_UNDEFINED`]).
/// 1e-280 leaves 28 decades above f64's smallest normal number for the up to ~1e9 terms of a sum.
pub const RATIO_FLOOR: f64 = 1e-280;

/// `num / den`, or NaN when `den` is below [`RATIO_FLOOR`] (underflow or 0/0).
pub fn ratio(num: f64, den: f64) -> f64 {
    if den >= RATIO_FLOOR {
        num / den
    } else {
        f64::NAN
    }
}

/// A sum of squares `energy`, or NaN when it is below [`RATIO_FLOOR`]: its terms have
/// underflowed, so a small value (or 0) would be written as if it were a result.
pub fn resolved(energy: f64) -> f64 {
    if energy >= RATIO_FLOOR {
        energy
    } else {
        f64::NAN
    }
}

impl Quantities {
    /// `||x_l||_F^2`.
    pub fn energy(&self, l: usize) -> f64 {
        self.energy[l]
    }

    /// `cos(x_l, x_{l-1})` over all tokens, clamped to [-1, 1].
    pub fn cos_prev(&self, l: usize) -> f64 {
        let (a, b) = (self.energy(l), self.energy(l - 1));
        // sqrt(a b) while the product is a normal number (the historical rounding), else the
        // product of the roots, which cannot overflow or underflow.
        let den = if (a * b).is_normal() {
            (a * b).sqrt()
        } else {
            a.sqrt() * b.sqrt()
        };
        let dot = self.dot_prev[l].expect("measured at every block");
        ratio(dot, den).clamp(-1.0, 1.0)
    }
}
