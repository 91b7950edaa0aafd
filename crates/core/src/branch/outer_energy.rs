//! The squared Frobenius norm of a weight gradient `g z^T` without holding it whole.
//!
//! An MLP's last weight gradient `dL/dW2 = g z^T` (docs/theory.md, "Branches"; `g` is d x n, `z` is
//! rd x n) is a d x rd matrix, as large as the weight itself. The Monte Carlo engine only reads
//! its squared norm (`weight_grad_sq`), so [`nt_sum_sq`] forms it [`CHUNK_COLUMNS`] columns at
//! a time and adds each column's squares in order: peak memory d x [`CHUNK_COLUMNS`] instead
//! of d x rd (8 MB at d = 512, r = 4 in f64), which is what lets a streamed network stay near
//! `8 (d^2 r + L d n)` bytes at small L (docs/performance.md).
//!
//! Same bits: every entry of a column block of `g z^T` is the entry matrixmultiply computes
//! for the whole product (each entry is one accumulation over the inner dimension, split at
//! the same kc boundaries whatever the column range), and the squares are added column by
//! column in column order, which is exactly nalgebra's `norm_squared` for f64
//! (`res += col.dotc(&col)` per column). Tested against the whole product below.
//!
//! In f32, which has no published bits to keep, the same number is computed as
//! `<g^T g, z^T z>_F` from two n x n Gram matrices ([`gram_sum_sq`]) when that is cheaper and
//! no larger ([`gram_pays`]; 3.2x fewer flops than forming `g z^T` at the reference
//! workload's shape) and no column's squared norm underflows ([`GRAM_FLOOR`]).

use nalgebra::DMatrix;
use normscope_numeric::gemm::{self, Real, tn};

/// Columns of `g z^T` formed at once by [`nt_sum_sq`] (d x 256 values: 1 MB at d = 512 in
/// f64; large enough that packing `g` again for each block costs under 1% of the product).
pub const CHUNK_COLUMNS: usize = 256;

/// `acc + sum_j ||m_{:,j}||^2`, the columns' squared norms ([`Real::sum_sq`], f64
/// accumulation) added to `acc` in column order. With `acc = 0` this is, for f64, the bits of
/// nalgebra's `m.norm_squared()`.
pub fn column_sum_sq<T: Real>(acc: f64, m: &DMatrix<T>) -> f64 {
    m.column_iter().fold(acc, |acc, c| acc + T::sum_sq(&c))
}

/// `||a b^T||_F^2` for `a` m x k and `b` p x k.
///
/// - f64: [`column_sum_sq`] of `nt(a, b)`, formed [`CHUNK_COLUMNS`] columns at a time (rows of
///   `b`) through the engine's counted product [`gemm::mul`]: the bits every published table
///   has.
/// - f32 (no f64 bits to keep): [`gram_sum_sq`], `<a^T a, b^T b>_F`, when [`gram_pays`]
///   (`2 k^2 (m + p)` instead of `2 m p k` flops: 3.2x fewer for an MLP's `dL/dW2` at
///   d = 512, r = 4, n = 128) and no Gram diagonal underflows; else the f64 path's blocks.
pub fn nt_sum_sq<T: Real>(a: &DMatrix<T>, b: &DMatrix<T>) -> f64 {
    if !gemm::is_f64::<T>()
        && gram_pays(a.nrows(), a.ncols(), b.nrows())
        && let Some(s) = gram_sum_sq(a, b)
    {
        return s;
    }
    let rows = b.nrows();
    let mut acc = 0.0;
    let mut start = 0;
    while start < rows {
        let take = CHUNK_COLUMNS.min(rows - start);
        acc = column_sum_sq(acc, &gemm::mul(a, false, &row_block(b, start, take), true));
        start += take;
    }
    acc
}

/// Rows `start..start + take` of `b` as a new matrix, copied a column slice at a time (the
/// same values as nalgebra's `b.rows(start, take).into_owned()`, which gathers them one at a
/// time; read in place instead, with `b`'s column stride, the product ran 15% slower).
fn row_block<T: Real>(b: &DMatrix<T>, start: usize, take: usize) -> DMatrix<T> {
    let mut v = Vec::with_capacity(take * b.ncols());
    for column in b.as_slice().chunks_exact(b.nrows()) {
        v.extend_from_slice(&column[start..start + take]);
    }
    DMatrix::from_vec(take, b.ncols(), v)
}

/// Whether the Gram form pays for `a` m x k and `b` p x k: fewer flops (`k (m + p) < m p`)
/// and Gram matrices no larger than one column block of the direct form
/// (`2 k^2 <= m` [`CHUNK_COLUMNS`]), so it never raises the peak memory.
pub fn gram_pays(m: usize, k: usize, p: usize) -> bool {
    k * (m + p) < m * p && 2 * k * k <= m * CHUNK_COLUMNS
}

/// Smallest nonzero Gram diagonal entry `|a_t|^2` [`gram_sum_sq`] accepts: f32's smallest
/// normal number over its epsilon (about 1e-31), so every entry down to `u` of the diagonal
/// is still a normal f32 and loses no digits to underflow.
pub const GRAM_FLOOR: f64 = (f32::MIN_POSITIVE / f32::EPSILON) as f64;

/// `||a b^T||_F^2 = tr(b a^T a b^T) = <a^T a, b^T b>_F` from the k x k Gram matrices (the
/// counted product [`tn`]; their dot accumulated in f64 by [`Real::dot`]), or `None` when a
/// nonzero Gram diagonal entry is below [`GRAM_FLOOR`].
///
/// Accuracy (u the type's unit roundoff): the Gram entries `a_s . a_t` are within `m u |a_s|
/// |a_t|` (resp. `p u |b_s| |b_t|`), so the result is within `(m + p) u S^2`,
/// `S = sum_t |a_t| |b_t|` (an absolute bound: `||a b^T||^2` itself may be far below `S^2`
/// when columns cancel).
pub fn gram_sum_sq<T: Real>(a: &DMatrix<T>, b: &DMatrix<T>) -> Option<f64> {
    let (ga, gb) = (tn(a, a), tn(b, b));
    let normal = |g: &DMatrix<T>| {
        g.diagonal().iter().all(|&x| {
            let x = x.as_f64();
            x == 0.0 || x >= GRAM_FLOOR
        })
    };
    (normal(&ga) && normal(&gb)).then(|| T::dot(&ga, &gb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::gemm::nt;

    fn filled<T: Real>(r: usize, c: usize, seed: f64) -> DMatrix<T> {
        DMatrix::from_fn(r, c, |i, j| {
            T::of(((i * 31 + j * 17) as f64 * seed).sin() * (1.0 + (i % 7) as f64))
        })
    }

    /// Shapes below, at and across the block width and matrixmultiply's kc (256), with
    /// remainders that leave partial kernel tiles at every block edge.
    const SHAPES: [(usize, usize, usize); 6] = [
        (1, 1, 1),
        (7, 5, 3),
        (64, 128, 256),
        (33, 300, 257),
        (512, 128, 600),
        (40, 513, 1029),
    ];

    #[test]
    fn f64_blocks_give_the_bits_of_the_whole_products_norm() {
        for (m, k, p) in SHAPES {
            let a = filled::<f64>(m, k, 0.37);
            let b = filled::<f64>(p, k, 0.11);
            let whole = nt(&a, &b).norm_squared();
            let blocked = nt_sum_sq(&a, &b);
            assert_eq!(whole.to_bits(), blocked.to_bits(), "{m}x{k} by {p}x{k}");
        }
    }

    #[test]
    fn f32_gram_form_is_within_its_stated_bound_of_the_f64_outer_products_norm() {
        let u = f64::from(f32::EPSILON) / 2.0;
        for (m, k, p) in SHAPES.into_iter().chain([(512, 128, 2048)]) {
            let a = filled::<f64>(m, k, 0.37);
            let b = filled::<f64>(p, k, 0.11);
            let exact = nt(&a, &b).norm_squared();
            let (a32, b32) = (a.map(|x| x as f32), b.map(|x| x as f32));
            let single = nt_sum_sq(&a32, &b32);
            // gram_sum_sq's (m + p) u S^2, plus 4 u S^2 for rounding the inputs to f32.
            let s: f64 = (0..k)
                .map(|t| a.column(t).norm() * b.column(t).norm())
                .sum();
            let bound = ((m + p) as f64 + 4.0) * u * s * s;
            let err = (single - exact).abs();
            assert!(err <= bound, "{m}x{k} by {p}x{k}: {err:e} > {bound:e}");
            if (m, k, p) == (512, 128, 2048) {
                // The reference workload's dL/dW2 takes the Gram form.
                assert!(gram_pays(m, k, p) && gram_sum_sq(&a32, &b32).is_some());
            }
        }
        // It does not pay when k is not small against m and p.
        assert!(!gram_pays(1, 1, 1) && !gram_pays(7, 5, 3) && !gram_pays(33, 300, 257));
        // Below the floor the Gram form refuses, and nt_sum_sq forms the blocks instead.
        let tiny = DMatrix::from_element(512, 128, 1e-20f32);
        assert!(gram_sum_sq(&tiny, &tiny).is_none());
        let blocked = column_sum_sq(0.0, &nt(&tiny, &tiny));
        assert_eq!(nt_sum_sq(&tiny, &tiny).to_bits(), blocked.to_bits());
    }

    #[test]
    fn column_sums_are_nalgebras_norm_for_f64_and_close_for_f32() {
        let m = filled::<f64>(50, 70, 0.23);
        assert_eq!(column_sum_sq(0.0, &m).to_bits(), m.norm_squared().to_bits());
        let s = m.map(|x| x as f32);
        let flat = <f32 as Real>::sum_sq(&s);
        // Two f64 sums of the same 3500 exact, positive squares (an f32 square is exact in
        // f64) in different orders: each within n u = 3500 x 1.1e-16 = 3.9e-13 relative.
        assert!((column_sum_sq(0.0, &s) - flat).abs() <= 1e-12 * flat);
    }
}
