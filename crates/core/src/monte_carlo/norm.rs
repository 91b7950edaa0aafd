//! LayerNorm and RMSNorm on the columns (tokens) of a d x n matrix, with their Jacobians, and
//! the dispatch to the other norms of [`crate::norms`] ([`forward_with`]): every norm slot of
//! both engines runs through [`forward_with`] and [`jacobian`].
//!
//! `LN(z) = P z / sigma`, `sigma^2 = |P z|^2/d + eps`, `P = I - 1 1^T/d` (centering);
//! `RMS(z) = z / sigma`, `sigma^2 = |z|^2/d + eps`. Both Jacobians are symmetric,
//! `J = (1/sigma) (P - y y^T/d)` (P = I for RMS), so one function serves JVP and VJP.
//! A norm is a linear map (P) followed by a per-token scalar `1/sigma`, which makes the
//! decomposition `x_l = sum_j C_{l,j} B_j` exact per token (docs/theory.md, "The metrics").
//! Column means, `sigma^2` and the Jacobian's `<y, P dz>` are accumulated in f64
//! ([`Real::sum`], [`Real::sum_sq`], [`Real::dot_view`]) and rounded once in both precisions
//! (for f64, nalgebra's own sums and dot: the published bits).

use crate::engine::refusal::{NormUse, refused};
use crate::norms::{dyt, grouped};
use crate::spec::{NormKind, NormLayout, NormStatistic};
use crate::{Error, Result};
use nalgebra::{DMatrix, DVectorView};
use normscope_numeric::gemm::Real;
use std::borrow::Cow;

/// A column's entries as a vector view, for nalgebra's sums and dot products.
fn vector<T: Real>(c: &[T]) -> DVectorView<'_, T> {
    DVectorView::from_slice(c, c.len())
}

/// What a forward pass keeps for the Jacobian.
///
/// # Examples
///
/// LayerNorm of the token `(1, 3)`: `P z = (-1, 1)`, `sigma = 1`. RMSNorm of `(2, 2, 2)`:
/// `sigma = 2`; its Jacobian halves a direction orthogonal to `y` and removes `y` itself.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::monte_carlo::norm::{forward, jacobian};
/// use normscope_core::spec::NormKind;
/// let c = forward(NormKind::Layer, 0.0, &DMatrix::from_column_slice(2, 1, &[1.0, 3.0]));
/// assert_eq!((c.y.as_slice(), c.inv_sigma[0]), (&[-1.0, 1.0][..], 1.0));
/// let c = forward(NormKind::Rms, 0.0, &DMatrix::from_element(3, 1, 2.0));
/// assert_eq!((c.inv_sigma[0], c.kind), (0.5, NormKind::Rms));
/// let dz = DMatrix::from_column_slice(3, 1, &[1.0, -1.0, 0.0]);
/// assert_eq!(jacobian(&c, &dz).as_slice(), [0.5, -0.5, 0.0]);
/// assert_eq!(jacobian(&c, &c.y).as_slice(), [0.0, 0.0, 0.0]);
/// ```
#[derive(Clone, Debug)]
pub struct NormCache<T: Real = f64> {
    /// The output y.
    pub y: DMatrix<T>,
    /// `1/sigma` per token (LayerNorm, RMSNorm), per block ([`Statistic::Grouped`]), per
    /// channel ([`Statistic::Channel`]), or empty (DyT).
    pub inv_sigma: Vec<T>,
    /// Which norm.
    pub kind: NormKind,
    /// What `inv_sigma` is a statistic of.
    pub statistic: Statistic,
    /// The norm's input `z`, kept where a later step needs it (a trainable DyT's `alpha`
    /// gradient, a BatchNorm's running statistics in training:
    /// [`crate::train::layer_norm::NormLayer`]); `None` in Monte Carlo.
    pub input: Option<DMatrix<T>>,
}

/// What a norm divides by: a statistic per token, per block of entries, or nothing (DyT's
/// `tanh(alpha z)`).
///
/// # Examples
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::monte_carlo::norm::{Statistic, forward_with};
/// use normscope_core::norms::grouped::Grouping;
/// use normscope_core::spec::{NormKind, NormLayout};
/// let z = DMatrix::from_column_slice(1, 4, &[1.0, 2.0, 3.0, 4.0]);
/// let c = forward_with(NormKind::Batch, NormLayout::default(), 0.0, &z);
/// assert_eq!(c.statistic, Statistic::Grouped(Grouping::batch(4)));
/// let c = forward_with(NormKind::Dyt, NormLayout::default(), 0.0, &z);
/// assert_eq!((c.statistic, c.y[0]), (Statistic::Tanh { alpha: 0.5 }, 0.5f64.tanh()));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Statistic {
    /// One `1/sigma` per token (LayerNorm, RMSNorm).
    Token,
    /// One `1/sigma` per block of the grouping ([`crate::norms::grouped`]).
    Grouped(grouped::Grouping),
    /// None: DyT at this `alpha` ([`crate::norms::dyt`]).
    Tanh {
        /// DyT's `alpha`.
        alpha: f64,
    },
    /// One fixed `1/sigma` per channel (row): BatchNorm in evaluation mode, dividing by its
    /// running statistics ([`crate::norms::running`]), whose Jacobian is `diag(1/sigma_c)`.
    Channel,
}

/// The grouping norm `kind` of `layout` applies to a `d x n` stream, `None` for a norm with
/// a per-token statistic or none, or why the stream does not divide into its blocks (an
/// [`Error::InvalidParam`] naming the setting to change; [`NormUse::Sampled`] first).
///
/// # Examples
///
/// ```rust
/// use normscope_core::monte_carlo::norm::grouping;
/// use normscope_core::spec::{NormKind, NormLayout};
/// let layout = NormLayout { groups: 4, seq: Some(8) };
/// assert_eq!(grouping(NormKind::Layer, layout, 16, 8)?, None);
/// assert_eq!(grouping(NormKind::Group, layout, 16, 8)?.unwrap().channels, 4);
/// let err = grouping(NormKind::Group, layout, 6, 8).unwrap_err().to_string();
/// assert_eq!(err, "invalid --groups = 4: a divisor of --width = 6");
/// // One sequence of one token: one value per channel.
/// let one = NormLayout { groups: 4, seq: Some(1) };
/// let err = grouping(NormKind::Batch, one, 16, 1).unwrap_err().to_string();
/// assert!(err.starts_with("invalid --batch = 1: batch x tokens >= 2"), "{err}");
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn grouping(
    kind: NormKind,
    layout: NormLayout,
    d: usize,
    n: usize,
) -> Result<Option<grouped::Grouping>> {
    refused(NormUse::Sampled {
        norm: kind,
        layout,
        d,
        columns: n,
    })?;
    let seq = layout.seq.unwrap_or(n);
    let g = match kind.statistic() {
        NormStatistic::Token | NormStatistic::Tanh | NormStatistic::Identity => return Ok(None),
        NormStatistic::Batch => grouped::Grouping::batch(n),
        NormStatistic::Sequence => grouped::Grouping::instance(seq),
        NormStatistic::Groups => grouped::Grouping::group(layout.groups, d, seq)
            .expect("refused() checked that the groups divide the width"),
    };
    g.blocks(d, n)
        .map_err(|e| Error::invalid("--tokens", seq, format!("whole sequences: {e}")))?;
    Ok(Some(g))
}

/// Norm `kind` of the columns of `z`, its statistics grouped as `layout` says ([`grouping`]).
/// Panics if `z` does not divide into the grouping's blocks: callers check the user's
/// settings with [`grouping`] first.
pub fn forward_with<T: Real>(
    kind: NormKind,
    layout: NormLayout,
    eps: f64,
    z: &DMatrix<T>,
) -> NormCache<T> {
    forward_with_cow(kind, layout, eps, Cow::Borrowed(z))
}

/// [`forward_with`] of a `z` that may be owned: a per-token norm (LayerNorm, RMSNorm) then
/// normalizes an owned `z` in its own buffer instead of a copy (the same values).
pub fn forward_with_cow<T: Real>(
    kind: NormKind,
    layout: NormLayout,
    eps: f64,
    z: Cow<'_, DMatrix<T>>,
) -> NormCache<T> {
    if kind.is_tanh() {
        let c = dyt::forward(dyt::ALPHA0, &z);
        return NormCache {
            y: c.y,
            inv_sigma: Vec::new(),
            kind,
            statistic: Statistic::Tanh { alpha: c.alpha },
            input: None,
        };
    }
    match grouping(kind, layout, z.nrows(), z.ncols()).unwrap_or_else(|e| panic!("{e}")) {
        None => forward_owned(kind, eps, z.into_owned()),
        Some(g) => {
            let c = grouped::forward(g, eps, &z);
            NormCache {
                y: c.y,
                inv_sigma: c.inv_sigma,
                kind,
                statistic: Statistic::Grouped(g),
                input: None,
            }
        }
    }
}

/// Subtracts each column's mean (P z), in place: the mean from [`Real::column_sums`] (the
/// additions of [`Real::sum`]), then `z_i + (-m)` entry by entry, as nalgebra's
/// `add_scalar_mut(-m)`.
pub(crate) fn center<T: Real>(z: &mut DMatrix<T>) {
    let rows = z.nrows();
    if rows == 0 {
        return;
    }
    let dn = rows as f64;
    let sums = T::column_sums(z);
    for (c, s) in z.as_mut_slice().chunks_exact_mut(rows).zip(sums) {
        let m = -T::of(s / dn);
        c.iter_mut().for_each(|x| *x += m);
    }
}

/// The LayerNorm or RMSNorm of every column (`kind` of another norm panics: use
/// [`forward_with`]).
pub fn forward<T: Real>(kind: NormKind, eps: f64, z: &DMatrix<T>) -> NormCache<T> {
    forward_owned(kind, eps, z.clone())
}

/// [`forward`] of an owned `z`, normalized in its own buffer (the cache's `y`).
pub fn forward_owned<T: Real>(kind: NormKind, eps: f64, z: DMatrix<T>) -> NormCache<T> {
    assert!(
        kind.statistic() == NormStatistic::Token,
        "{kind}: not a per-token norm"
    );
    let dn = z.nrows() as f64;
    let mut y = z;
    if kind.centers() {
        center(&mut y);
    }
    let (rows, cols) = y.shape();
    let mut inv_sigma = Vec::with_capacity(cols);
    for j in 0..cols {
        let c = &mut y.as_mut_slice()[j * rows..(j + 1) * rows];
        let s = T::one() / T::of(T::sum_sq(&vector(c)) / dn + eps).sqrt();
        c.iter_mut().for_each(|x| *x *= s);
        inv_sigma.push(s);
    }
    NormCache {
        y,
        inv_sigma,
        kind,
        statistic: Statistic::Token,
        input: None,
    }
}

/// `J dz` (equal to `J^T dz`): `(1/sigma) [P dz - y <y, P dz>/d]` per column.
pub fn jacobian<T: Real>(cache: &NormCache<T>, dz: &DMatrix<T>) -> DMatrix<T> {
    jacobian_cow(cache, Cow::Borrowed(dz))
}

/// [`jacobian`] of a `dz` that may be owned: a per-token norm's (LayerNorm, RMSNorm) is then
/// computed in `dz`'s own buffer instead of a copy (the same values); the other norms read it.
pub fn jacobian_cow<T: Real>(cache: &NormCache<T>, dz: Cow<'_, DMatrix<T>>) -> DMatrix<T> {
    assert_eq!(
        cache.y.shape(),
        dz.shape(),
        "the tangent has the norm's shape"
    );
    match cache.statistic {
        Statistic::Token => {}
        Statistic::Grouped(g) => return grouped::jacobian_of(&cache.y, &cache.inv_sigma, g, &dz),
        Statistic::Tanh { alpha } => return dyt::jacobian_of(&cache.y, alpha, &dz),
        Statistic::Channel => {
            assert_eq!(cache.inv_sigma.len(), dz.nrows(), "one 1/sigma per channel");
            return DMatrix::from_fn(dz.nrows(), dz.ncols(), |c, j| {
                dz[(c, j)] * cache.inv_sigma[c]
            });
        }
    }
    assert_eq!(cache.inv_sigma.len(), dz.ncols(), "one 1/sigma per column");
    let dn = dz.nrows() as f64;
    let mut out = dz.into_owned();
    if cache.kind.centers() {
        center(&mut out);
    }
    let rows = out.nrows();
    for (j, &s) in cache.inv_sigma.iter().enumerate() {
        let y = &cache.y.as_slice()[j * rows..(j + 1) * rows];
        let c = &mut out.as_mut_slice()[j * rows..(j + 1) * rows];
        let k = T::of(T::dot_view(&vector(y), &vector(c)) / dn);
        // nalgebra's `c.axpy(-k, y, 1)`, `c_i = (-k) y_i + c_i`, then `c *= 1/sigma`.
        for (x, &yv) in c.iter_mut().zip(y) {
            *x = -k * yv + *x;
            *x *= s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `forward` and `jacobian` as they were written on nalgebra's column views (sums, scalar
    /// additions, `axpy` and scaling), before they read the columns as slices.
    fn by_views<T: Real>(
        kind: NormKind,
        eps: f64,
        z: &DMatrix<T>,
        dz: &DMatrix<T>,
    ) -> [DMatrix<T>; 2] {
        let center = |m: &mut DMatrix<T>| {
            let dn = m.nrows() as f64;
            for mut c in m.column_iter_mut() {
                let mean = T::of(T::sum(&c) / dn);
                c.add_scalar_mut(-mean);
            }
        };
        let dn = z.nrows() as f64;
        let mut y = z.clone();
        if kind == NormKind::Layer {
            center(&mut y);
        }
        let mut inv = Vec::new();
        for mut c in y.column_iter_mut() {
            let s = T::one() / T::of(T::sum_sq(&c) / dn + eps).sqrt();
            c *= s;
            inv.push(s);
        }
        let mut out = dz.clone();
        if kind == NormKind::Layer {
            center(&mut out);
        }
        for (t, mut c) in out.column_iter_mut().enumerate() {
            let yc = y.column(t);
            let k = T::of(T::dot_view(&yc, &c) / dn);
            c.axpy(-k, &yc, T::one());
            c *= inv[t];
        }
        [y, out]
    }

    /// Whether `forward` and `jacobian` give [`by_views`]'s bits on `z` and `dz`.
    fn same_as_views<T: Real>(kind: NormKind, z: &DMatrix<T>, dz: &DMatrix<T>) -> bool {
        let c = forward(kind, 1e-5, z);
        let new = [c.y.clone(), jacobian(&c, dz)];
        let old = by_views(kind, 1e-5, z, dz);
        new.iter().zip(&old).all(|(a, b)| {
            a.iter()
                .zip(b.iter())
                .all(|(x, y)| x.as_f64().to_bits() == y.as_f64().to_bits())
        })
    }

    #[test]
    fn slices_keep_the_bits_of_the_column_views() {
        for (d, n) in [(1, 3), (7, 9), (64, 19)] {
            let z = DMatrix::from_fn(d, n, |i, j| {
                ((i * 5 + j * 11) as f64 * 0.61).sin() * 3.0 + 0.2
            });
            let dz = DMatrix::from_fn(d, n, |i, j| ((i * 3 + j * 7) as f64 * 0.43).cos());
            let (z32, dz32) = (z.map(|x| x as f32), dz.map(|x| x as f32));
            for kind in [NormKind::Layer, NormKind::Rms] {
                assert!(same_as_views(kind, &z, &dz), "f64 {kind:?} {d}x{n}");
                assert!(same_as_views(kind, &z32, &dz32), "f32 {kind:?} {d}x{n}");
            }
        }
    }

    #[test]
    fn jacobian_matches_finite_differences() {
        let z = DMatrix::from_fn(7, 3, |i, j| {
            ((i * 3 + j) as f64 * 0.7).sin() + 0.1 * j as f64
        });
        let dz = DMatrix::from_fn(7, 3, |i, j| ((i + 5 * j) as f64 * 1.3).cos());
        for kind in [NormKind::Layer, NormKind::Rms] {
            for eps in [0.0, 1e-3] {
                let c = forward(kind, eps, &z);
                let h = 1e-6;
                let fd = (forward(kind, eps, &(&z + &dz * h)).y
                    - forward(kind, eps, &(&z - &dz * h)).y)
                    / (2.0 * h);
                let j = jacobian(&c, &dz);
                assert!(
                    (fd - &j).norm()
                        < normscope_numeric::tolerance::FINITE_DIFFERENCE_NORM * j.norm(),
                    "{kind:?} {eps}"
                );
            }
        }
    }

    #[test]
    fn zero_eps_gives_squared_norm_d() {
        let z = DMatrix::from_fn(9, 2, |i, j| (i as f64 + 1.0) * (j as f64 + 0.5));
        let c = forward(NormKind::Layer, 0.0, &z);
        for col in c.y.column_iter() {
            assert!((col.norm_squared() - 9.0).abs() < normscope_numeric::tolerance::ACCUMULATED);
        }
    }
}
