//! Normalization over blocks of entries: the channels (rows) in groups of
//! [`Grouping::channels`], the columns in blocks of [`Grouping::columns`], and every
//! (group, column block) normalized on its own:
//!
//! ```text
//! y = P z / sigma,   sigma^2 = |P z|^2 / m + eps,   P = I - 1 1^T / m  (I without centering)
//! J = (1/sigma) (P - y y^T / m)                      (symmetric: one function for JVP and VJP)
//! ```
//!
//! with `m = channels * columns` entries per block. Each normalizer is one grouping of a
//! `d x n` matrix whose `n` columns are sequences of `seq` tokens (PyTorch's `(N, C, L)` with
//! the channels as rows):
//!
//! | norm | channels | columns | centred | PyTorch |
//! |---|---|---|---|---|
//! | LayerNorm (per token) | d | 1 | yes | `nn.LayerNorm(d)` |
//! | RMSNorm | d | 1 | no | `nn.RMSNorm(d)` |
//! | InstanceNorm | 1 | seq | yes | `nn.InstanceNorm1d(d)` |
//! | GroupNorm, G groups | d / G | seq | yes | `nn.GroupNorm(G, d)` |
//! | BatchNorm (training) | 1 | n | yes | `nn.BatchNorm1d(d)` in train mode |
//!
//! The variance is the biased one (divided by m), as PyTorch normalizes in every case
//! (`torch.nn.BatchNorm1d`, `InstanceNorm1d` and `GroupNorm` documentation: "the standard
//! deviation is calculated via the biased estimator"). GroupNorm with one group normalizes a
//! sequence over all its channels and tokens, with d groups it is InstanceNorm. Sums are
//! accumulated in f64 ([`Real::sum`], [`Real::sum_sq`], [`Real::dot_view`]) and rounded once,
//! in the order of [`crate::monte_carlo::norm`]'s columns.

use nalgebra::{DMatrix, DVectorView};
use normscope_numeric::gemm::Real;

/// How the entries of a `d x n` matrix are grouped into blocks normalized on their own.
///
/// # Examples
///
/// ```rust
/// use normscope_core::norms::grouped::Grouping;
/// // GroupNorm with 2 groups of a width-8 model on sequences of 4 tokens.
/// let g = Grouping::group(2, 8, 4)?;
/// assert_eq!((g.channels, g.columns, g.center), (4, 4, true));
/// assert_eq!(g.blocks(8, 12), Ok((2, 3))); // 2 groups x 3 sequences
/// assert!(g.blocks(8, 10).unwrap_err().contains("10 columns"));
/// assert_eq!(Grouping::batch(16), Grouping { channels: 1, columns: 16, center: true });
/// // 4 groups do not divide 6 channels (nn.GroupNorm refuses them too).
/// assert_eq!(Grouping::group(4, 6, 4).unwrap_err(), "4 groups do not divide 6 channels");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grouping {
    /// Channels (rows) per group.
    pub channels: usize,
    /// Columns per block.
    pub columns: usize,
    /// Whether the block's mean is subtracted (all but RMSNorm).
    pub center: bool,
}

impl Grouping {
    /// LayerNorm of every column over its `d` channels.
    pub fn layer(d: usize) -> Self {
        Grouping {
            channels: d,
            columns: 1,
            center: true,
        }
    }

    /// RMSNorm of every column over its `d` channels.
    pub fn rms(d: usize) -> Self {
        Grouping {
            channels: d,
            columns: 1,
            center: false,
        }
    }

    /// InstanceNorm: every channel of every sequence of `seq` tokens.
    pub fn instance(seq: usize) -> Self {
        Grouping {
            channels: 1,
            columns: seq,
            center: true,
        }
    }

    /// GroupNorm with `groups` groups of a width-`d` model on sequences of `seq` tokens.
    /// Refused unless `groups` divides `d` (as `nn.GroupNorm` requires).
    pub fn group(groups: usize, d: usize, seq: usize) -> Result<Self, String> {
        if groups == 0 || !d.is_multiple_of(groups) {
            return Err(format!("{groups} groups do not divide {d} channels"));
        }
        Ok(Grouping {
            channels: d / groups,
            columns: seq,
            center: true,
        })
    }

    /// BatchNorm in training: every channel over all `n` columns (samples times tokens).
    pub fn batch(n: usize) -> Self {
        Grouping {
            channels: 1,
            columns: n,
            center: true,
        }
    }

    /// `(groups, column blocks)` of a `d x n` matrix, or why it does not divide into them.
    pub fn blocks(&self, d: usize, n: usize) -> Result<(usize, usize), String> {
        if self.channels == 0 || !d.is_multiple_of(self.channels) {
            return Err(format!(
                "{d} channels do not divide into groups of {}",
                self.channels
            ));
        }
        if self.columns == 0 || !n.is_multiple_of(self.columns) {
            return Err(format!(
                "{n} columns do not divide into blocks of {}",
                self.columns
            ));
        }
        Ok((d / self.channels, n / self.columns))
    }

    /// Entries per block, `m`.
    pub fn size(&self) -> usize {
        self.channels * self.columns
    }

    /// The (row, column) ranges of block `(g, b)`.
    fn ranges(&self, g: usize, b: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        (
            g * self.channels..(g + 1) * self.channels,
            b * self.columns..(b + 1) * self.columns,
        )
    }
}

/// What a forward pass keeps for the Jacobian.
///
/// # Examples
///
/// BatchNorm of one channel over a batch of 4: mean 2.5, biased variance 1.25.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::norms::grouped::{Grouping, forward};
/// let z = DMatrix::from_row_slice(1, 4, &[1.0, 2.0, 3.0, 4.0]);
/// let c = forward(Grouping::batch(4), 0.0, &z);
/// let s = 1.0 / 1.25f64.sqrt();
/// assert_eq!(c.inv_sigma, [s]);
/// assert_eq!(c.y.as_slice(), [-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s]);
/// ```
#[derive(Clone, Debug)]
pub struct GroupedCache<T: Real = f64> {
    /// The output y.
    pub y: DMatrix<T>,
    /// `1/sigma` per block, block `(g, b)` at index `g * column_blocks + b`.
    pub inv_sigma: Vec<T>,
    /// The grouping.
    pub grouping: Grouping,
}

/// A block's entries, column by column (a column's rows contiguous).
fn gather<T: Real>(
    m: &DMatrix<T>,
    rows: &std::ops::Range<usize>,
    cols: &std::ops::Range<usize>,
) -> Vec<T> {
    let mut out = Vec::with_capacity(rows.len() * cols.len());
    for j in cols.clone() {
        out.extend_from_slice(&m.column(j).as_slice()[rows.clone()]);
    }
    out
}

/// Writes a block's entries back in [`gather`]'s order.
fn scatter<T: Real>(
    m: &mut DMatrix<T>,
    rows: &std::ops::Range<usize>,
    cols: &std::ops::Range<usize>,
    v: &[T],
) {
    let h = rows.len();
    for (k, j) in cols.clone().enumerate() {
        m.column_mut(j).as_mut_slice()[rows.clone()].copy_from_slice(&v[k * h..(k + 1) * h]);
    }
}

fn view<T: Real>(v: &[T]) -> DVectorView<'_, T> {
    DVectorView::from_slice(v, v.len())
}

/// Subtracts the entries' mean in place: the mean from [`Real::sum`], then `x + (-mean)`.
fn center<T: Real>(v: &mut [T]) {
    let m = -T::of(T::sum(&view(v)) / v.len() as f64);
    v.iter_mut().for_each(|x| *x += m);
}

/// Normalizes every block of `z` (module docs). Panics if `z` does not divide into blocks
/// ([`Grouping::blocks`]; callers check it with the user's settings first).
pub fn forward<T: Real>(g: Grouping, eps: f64, z: &DMatrix<T>) -> GroupedCache<T> {
    let (groups, blocks) = g
        .blocks(z.nrows(), z.ncols())
        .unwrap_or_else(|e| panic!("{e}"));
    let m = g.size() as f64;
    let mut y = z.clone();
    let mut inv_sigma = Vec::with_capacity(groups * blocks);
    for gi in 0..groups {
        for b in 0..blocks {
            let (rows, cols) = g.ranges(gi, b);
            let mut v = gather(&y, &rows, &cols);
            if g.center {
                center(&mut v);
            }
            let s = T::one() / T::of(T::sum_sq(&view(&v)) / m + eps).sqrt();
            v.iter_mut().for_each(|x| *x *= s);
            scatter(&mut y, &rows, &cols, &v);
            inv_sigma.push(s);
        }
    }
    GroupedCache {
        y,
        inv_sigma,
        grouping: g,
    }
}

/// `J dz` (equal to `J^T dz`): `(1/sigma) [P dz - y <y, P dz>/m]` per block.
pub fn jacobian<T: Real>(cache: &GroupedCache<T>, dz: &DMatrix<T>) -> DMatrix<T> {
    jacobian_of(&cache.y, &cache.inv_sigma, cache.grouping, dz)
}

/// [`jacobian`] from a cache's parts: the output `y`, `1/sigma` per block and the grouping.
pub fn jacobian_of<T: Real>(
    y: &DMatrix<T>,
    inv_sigma: &[T],
    g: Grouping,
    dz: &DMatrix<T>,
) -> DMatrix<T> {
    assert_eq!(y.shape(), dz.shape(), "the tangent has the norm's shape");
    let (_, blocks) = g
        .blocks(dz.nrows(), dz.ncols())
        .unwrap_or_else(|e| panic!("{e}"));
    let m = g.size() as f64;
    let mut out = dz.clone();
    for (i, &s) in inv_sigma.iter().enumerate() {
        let (rows, cols) = g.ranges(i / blocks, i % blocks);
        let yb = gather(y, &rows, &cols);
        let mut v = gather(&out, &rows, &cols);
        if g.center {
            center(&mut v);
        }
        let k = T::of(T::dot_view(&view(&yb), &view(&v)) / m);
        for (x, &yv) in v.iter_mut().zip(&yb) {
            *x = -k * yv + *x;
            *x *= s;
        }
        scatter(&mut out, &rows, &cols, &v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monte_carlo::norm;
    use crate::spec::NormKind;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    fn gaussian(rows: usize, cols: usize, seed: u64) -> DMatrix<f64> {
        let mut rng = normscope_numeric::rng::Rng::seed_from_u64(seed);
        DMatrix::from_fn(rows, cols, |_, _| StandardNormal.sample(&mut rng))
    }

    #[test]
    fn per_token_groupings_are_the_engines_layer_and_rms_norms_bit_for_bit() {
        let z = gaussian(16, 6, 1);
        let dz = gaussian(16, 6, 2);
        for (g, kind) in [
            (Grouping::layer(16), NormKind::Layer),
            (Grouping::rms(16), NormKind::Rms),
        ] {
            let a = forward(g, 1e-5, &z);
            let b = norm::forward(kind, 1e-5, &z);
            assert_eq!((&a.y, &a.inv_sigma), (&b.y, &b.inv_sigma), "{kind:?}");
            assert_eq!(jacobian(&a, &dz), norm::jacobian(&b, &dz), "{kind:?}");
            let z32 = z.map(|x| x as f32);
            let (a, b) = (forward(g, 1e-5, &z32), norm::forward(kind, 1e-5, &z32));
            assert_eq!(a.y, b.y, "{kind:?} f32");
        }
    }

    #[test]
    fn every_block_has_mean_zero_and_unit_mean_square() {
        // d = 6 channels, 3 sequences of 4 tokens.
        let z = gaussian(6, 12, 3).map(|x| 3.0 * x + 1.0);
        for g in [
            Grouping::instance(4),
            Grouping::group(2, 6, 4).unwrap(),
            Grouping::group(1, 6, 4).unwrap(),
            Grouping::batch(12),
        ] {
            let c = forward(g, 0.0, &z);
            let (groups, blocks) = g.blocks(6, 12).unwrap();
            for gi in 0..groups {
                for b in 0..blocks {
                    let (rows, cols) = g.ranges(gi, b);
                    let v = gather(&c.y, &rows, &cols);
                    let m = v.len() as f64;
                    let mean: f64 = v.iter().sum::<f64>() / m;
                    let sq: f64 = v.iter().map(|x| x * x).sum::<f64>() / m;
                    assert!(
                        mean.abs() < 1e-14 && (sq - 1.0).abs() < 1e-13,
                        "{g:?} {gi} {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_jacobian_is_the_derivative_of_the_forward_pass() {
        let z = gaussian(6, 8, 4);
        let dz = gaussian(6, 8, 5);
        let h = 1e-6;
        for g in [
            Grouping::layer(6),
            Grouping::rms(6),
            Grouping::instance(4),
            Grouping::group(3, 6, 4).unwrap(),
            Grouping::batch(8),
        ] {
            let c = forward(g, 1e-5, &z);
            let plus = forward(g, 1e-5, &(&z + &dz * h)).y;
            let minus = forward(g, 1e-5, &(&z - &dz * h)).y;
            let fd = (plus - minus) / (2.0 * h);
            let j = jacobian(&c, &dz);
            assert!((&fd - &j).amax() < 1e-7 * j.amax().max(1.0), "{g:?}");
            // Symmetric: <w, J dz> = <J w, dz>.
            let w = gaussian(6, 8, 6);
            let (a, b) = (w.dot(&j), jacobian(&c, &w).dot(&dz));
            assert!((a - b).abs() < 1e-12 * a.abs().max(1.0), "{g:?}");
        }
    }

    #[test]
    fn groupnorm_ends_are_layer_over_the_sequence_and_instance_norm() {
        let z = gaussian(6, 8, 7);
        let whole = Grouping {
            channels: 6,
            columns: 4,
            center: true,
        };
        assert_eq!(
            forward(Grouping::group(1, 6, 4).unwrap(), 0.0, &z).y,
            forward(whole, 0.0, &z).y
        );
        assert_eq!(
            forward(Grouping::group(6, 6, 4).unwrap(), 0.0, &z).y,
            forward(Grouping::instance(4), 0.0, &z).y
        );
    }
}
