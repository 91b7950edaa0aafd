//! The float type [`Real`] and matrix products through matrixmultiply's strided `dgemm` or
//! `sgemm` (single-threaded), so that
//! transposed operands cost no copy: a transpose is the same buffer with swapped strides.
//! nalgebra's own `tr_mul` computes column dot products and measured 8 GFLOP/s against 35
//! for the blocked kernel at the workload's shape (2048 x 512 x 128, one core).

use nalgebra::{DMatrix, Dim, Matrix, RealField, Storage};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The float type of the sampled networks: f64 (the default, for exact comparisons) or f32.
/// Pointwise nonlinearities and statistics go through f64 ([`Real::as_f64`]); matrix
/// products use the type's own blocked kernel (matrixmultiply's `dgemm` or `sgemm`).
pub trait Real: RealField + Copy + Send + Sync + 'static {
    /// `x` rounded to this type (exact for f64).
    fn of(x: f64) -> Self;

    /// This value as f64 (exact).
    fn as_f64(self) -> f64;

    /// `sum_i m_i^2`, accumulated in f64. For f64 this is nalgebra's `norm_squared` (the
    /// rounding every published table was made with); for f32 each entry is widened first.
    fn sum_sq<R: Dim, C: Dim, S: Storage<Self, R, C>>(m: &Matrix<Self, R, C, S>) -> f64;

    /// `sum_i m_i`, accumulated in f64 (nalgebra's `sum` for f64).
    fn sum<R: Dim, C: Dim, S: Storage<Self, R, C>>(m: &Matrix<Self, R, C, S>) -> f64;

    /// `sum_i a_i b_i`, accumulated in f64 (nalgebra's `dot` for f64).
    fn dot(a: &DMatrix<Self>, b: &DMatrix<Self>) -> f64;

    /// `sum_i a_i b_i` of two equally shaped matrices or views (columns of a larger matrix),
    /// accumulated in f64 (nalgebra's `dot` for f64).
    fn dot_view<R: Dim, C: Dim, S1: Storage<Self, R, C>, S2: Storage<Self, R, C>>(
        a: &Matrix<Self, R, C, S1>,
        b: &Matrix<Self, R, C, S2>,
    ) -> f64;

    /// `C = A B` for column-major buffers with the given strides (matrixmultiply's contract).
    ///
    /// # Safety
    /// The pointers must address `m x k`, `k x n` and `m x n` matrices with these strides,
    /// and `c` must not alias `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
        csc: isize,
    );
}

impl Real for f64 {
    fn of(x: f64) -> Self {
        x
    }

    fn as_f64(self) -> f64 {
        self
    }

    fn sum_sq<R: Dim, C: Dim, S: Storage<f64, R, C>>(m: &Matrix<f64, R, C, S>) -> f64 {
        m.norm_squared()
    }

    fn sum<R: Dim, C: Dim, S: Storage<f64, R, C>>(m: &Matrix<f64, R, C, S>) -> f64 {
        m.sum()
    }

    fn dot(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
        a.dot(b)
    }

    fn dot_view<R: Dim, C: Dim, S1: Storage<f64, R, C>, S2: Storage<f64, R, C>>(
        a: &Matrix<f64, R, C, S1>,
        b: &Matrix<f64, R, C, S2>,
    ) -> f64 {
        a.dot(b)
    }

    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const f64,
        rsa: isize,
        csa: isize,
        b: *const f64,
        rsb: isize,
        csb: isize,
        c: *mut f64,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { matrixmultiply::dgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, csc) }
    }
}

impl Real for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }

    fn as_f64(self) -> f64 {
        f64::from(self)
    }

    fn sum_sq<R: Dim, C: Dim, S: Storage<f32, R, C>>(m: &Matrix<f32, R, C, S>) -> f64 {
        sum4(m, |_, x| f64::from(x) * f64::from(x))
    }

    fn sum<R: Dim, C: Dim, S: Storage<f32, R, C>>(m: &Matrix<f32, R, C, S>) -> f64 {
        sum4(m, |_, x| f64::from(x))
    }

    fn dot(a: &DMatrix<f32>, b: &DMatrix<f32>) -> f64 {
        Self::dot_view(a, b)
    }

    fn dot_view<R: Dim, C: Dim, S1: Storage<f32, R, C>, S2: Storage<f32, R, C>>(
        a: &Matrix<f32, R, C, S1>,
        b: &Matrix<f32, R, C, S2>,
    ) -> f64 {
        assert_eq!(a.shape(), b.shape(), "dot of equal shapes");
        match contiguous(b) {
            Some(b) => sum4(a, |i, x| f64::from(x) * f64::from(b[i])),
            None => {
                let b: Vec<f32> = b.iter().copied().collect();
                sum4(a, |i, x| f64::from(x) * f64::from(b[i]))
            }
        }
    }

    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const f32,
        rsa: isize,
        csa: isize,
        b: *const f32,
        rsb: isize,
        csb: isize,
        c: *mut f32,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { matrixmultiply::sgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, csc) }
    }
}

/// Whether `T` is f64: the precision whose bits the published tables have, so a path that may
/// compute differently in f32 (fewer flops, no f64 copy) keeps f64's own arithmetic.
pub fn is_f64<T: Real>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>()
}

/// The f32 reductions' f64 sum of `terms(x_i)` over a matrix's entries in column-major order:
/// term i goes to accumulator `i mod 4`, and the four are combined as `(a0 + a1) + (a2 + a3)`.
/// Four independent addition chains in a fixed order (the same bits for every call, whatever
/// the thread count). A contiguous matrix or column is read as a slice: nalgebra's strided
/// entry iterator measured 5x slower than the slice on a d = 512 column, 1 ns an entry.
fn sum4<R: Dim, C: Dim, S: Storage<f32, R, C>>(
    m: &Matrix<f32, R, C, S>,
    term: impl Fn(usize, f32) -> f64,
) -> f64 {
    let mut acc = [0.0f64; 4];
    match contiguous(m) {
        Some(values) => {
            let mut chunks = values.chunks_exact(4);
            let mut i = 0;
            for c in &mut chunks {
                for k in 0..4 {
                    acc[k] += term(i + k, c[k]);
                }
                i += 4;
            }
            for (k, &x) in chunks.remainder().iter().enumerate() {
                acc[k] += term(i + k, x);
            }
        }
        None => {
            for (i, &x) in m.iter().enumerate() {
                acc[i % 4] += term(i, x);
            }
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// The entries of `m` as one slice in column-major order, if they are stored that way.
fn contiguous<T: nalgebra::Scalar, R: Dim, C: Dim, S: Storage<T, R, C>>(
    m: &Matrix<T, R, C, S>,
) -> Option<&[T]> {
    let (rows, cols) = m.shape();
    let (rs, cs) = m.strides();
    if rows * cols > 0 && rs == 1 && (cs == rows || cols == 1) {
        // SAFETY: unit row stride and a column stride of `rows` (or one column) put the
        // entries at `ptr .. ptr + rows * cols`, the span `as_slice_unchecked` returns.
        Some(unsafe { m.data.as_slice_unchecked() })
    } else {
        None
    }
}

static COUNTING: AtomicBool = AtomicBool::new(false);
static FLOPS: AtomicU64 = AtomicU64::new(0);
static NANOS: AtomicU64 = AtomicU64::new(0);
static PASS_NANOS: AtomicU64 = AtomicU64::new(0);
static DRAW_NANOS: AtomicU64 = AtomicU64::new(0);

/// What the Monte Carlo engine times while [`count_products`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// A forward or backward pass of a network, weight drawing included.
    Pass,
    /// Drawing one block's weights.
    Draw,
}

/// Runs `f`, adding its duration to `what`'s total while counting is on.
pub fn timed<R>(what: Timed, f: impl FnOnce() -> R) -> R {
    if !COUNTING.load(Ordering::Relaxed) {
        return f();
    }
    let start = Instant::now();
    let r = f();
    let total = match what {
        Timed::Pass => &PASS_NANOS,
        Timed::Draw => &DRAW_NANOS,
    };
    total.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    r
}

/// Seconds, summed over threads, of the forward and backward passes less the weight drawing
/// inside them: the engine's GEMM-dominated phases ([`timed`]).
pub fn pass_seconds() -> f64 {
    let pass = PASS_NANOS.load(Ordering::Relaxed) as f64;
    let draw = DRAW_NANOS.load(Ordering::Relaxed) as f64;
    (pass - draw).max(0.0) * 1e-9
}

/// FLOPs (`2 m k n` per product) and seconds spent inside [`mul`], summed over every thread
/// since [`count_products`] started counting (`normscope bench`: the engine's rate in its
/// products, against the machine's GEMM rate).
pub fn product_totals() -> (f64, f64) {
    (
        FLOPS.load(Ordering::Relaxed) as f64,
        NANOS.load(Ordering::Relaxed) as f64 * 1e-9,
    )
}

/// Starts (and zeroes) or stops counting the products of [`mul`]. Off by default: a product
/// then costs one relaxed atomic load more.
pub fn count_products(on: bool) {
    if on {
        for total in [&FLOPS, &NANOS, &PASS_NANOS, &DRAW_NANOS] {
            total.store(0, Ordering::Relaxed);
        }
    }
    COUNTING.store(on, Ordering::Relaxed);
}

/// `op(a) * op(b)` where `op` transposes when the flag is set.
pub fn mul<T: Real>(a: &DMatrix<T>, ta: bool, b: &DMatrix<T>, tb: bool) -> DMatrix<T> {
    let (ar, ac) = if ta {
        (a.ncols(), a.nrows())
    } else {
        (a.nrows(), a.ncols())
    };
    let (br, bc) = if tb {
        (b.ncols(), b.nrows())
    } else {
        (b.nrows(), b.ncols())
    };
    assert_eq!(ac, br, "inner dimensions");
    let mut c = DMatrix::<T>::zeros(ar, bc);
    if ar == 0 || bc == 0 || ac == 0 {
        return c;
    }
    // Column-major: element (i, j) at i + j * nrows. A transpose swaps the two strides.
    let (rsa, csa) = if ta {
        (a.nrows() as isize, 1)
    } else {
        (1, a.nrows() as isize)
    };
    let (rsb, csb) = if tb {
        (b.nrows() as isize, 1)
    } else {
        (1, b.nrows() as isize)
    };
    let start = COUNTING.load(Ordering::Relaxed).then(Instant::now);
    // SAFETY: the pointers address a.len(), b.len() and c.len() values; the shapes and
    // strides above keep every index inside them, and c does not alias a or b.
    unsafe {
        T::gemm(
            ar,
            ac,
            bc,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            c.as_mut_ptr(),
            1,
            ar as isize,
        );
    }
    if let Some(t) = start {
        FLOPS.fetch_add(2 * (ar * ac * bc) as u64, Ordering::Relaxed);
        NANOS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
    c
}

/// `a * b`.
pub fn nn<T: Real>(a: &DMatrix<T>, b: &DMatrix<T>) -> DMatrix<T> {
    mul(a, false, b, false)
}

/// `a^T * b`.
pub fn tn<T: Real>(a: &DMatrix<T>, b: &DMatrix<T>) -> DMatrix<T> {
    mul(a, true, b, false)
}

/// `a * b^T`.
pub fn nt<T: Real>(a: &DMatrix<T>, b: &DMatrix<T>) -> DMatrix<T> {
    mul(a, false, b, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stated order written out: entry i (column-major) to chain `i mod 4`, then
    /// `(a0 + a1) + (a2 + a3)`.
    fn four_chains(terms: &[f64]) -> f64 {
        let mut a = [0.0; 4];
        for (i, t) in terms.iter().enumerate() {
            a[i % 4] += t;
        }
        (a[0] + a[1]) + (a[2] + a[3])
    }

    #[test]
    fn f32_sums_follow_their_stated_order_on_slices_and_strided_views() {
        // Integers (exact): lengths 0..=9 cover every remainder of the four chains.
        for n in 0..=9usize {
            let m = DMatrix::from_fn(n, 1, |i, _| (i + 1) as f32);
            let exact = (n * (n + 1) / 2) as f64;
            assert_eq!(<f32 as Real>::sum(&m).to_bits(), exact.to_bits());
        }
        // Order-sensitive: four chains give (1e20 + 1) + (-1e20 + 1) = 0, left to right 1.
        let col = DMatrix::from_column_slice(4, 1, &[1e20f32, 1.0, -1e20, 1.0]);
        assert_eq!(<f32 as Real>::sum(&col).to_bits(), 0.0f64.to_bits());
        // Strided views (a row, a block of rows) take the iterator path; contiguous ones
        // (the matrix, a column) the slice path; both follow the stated order bit for bit.
        let m = DMatrix::from_fn(7, 5, |i, j| {
            ((i * 5 + j) as f32 * 0.37).sin() * 10f32.powi((i + 2 * j) as i32 % 9 - 4)
        });
        let wide = |v: Vec<f32>| -> Vec<f64> { v.into_iter().map(f64::from).collect() };
        let row = m.row(2);
        let rows = m.rows(1, 3);
        let column = m.column(3);
        assert!(contiguous(&row).is_none() && contiguous(&rows).is_none());
        assert!(contiguous(&m).is_some() && contiguous(&column).is_some());
        let sq = |v: Vec<f64>| -> Vec<f64> { v.iter().map(|x| x * x).collect() };
        for (got, entries) in [
            (
                <f32 as Real>::sum(&row),
                wide(row.iter().copied().collect()),
            ),
            (
                <f32 as Real>::sum(&rows),
                wide(rows.iter().copied().collect()),
            ),
            (
                <f32 as Real>::sum(&column),
                wide(column.iter().copied().collect()),
            ),
            (<f32 as Real>::sum(&m), wide(m.iter().copied().collect())),
        ] {
            assert_eq!(got.to_bits(), four_chains(&entries).to_bits());
        }
        let all = wide(m.iter().copied().collect());
        assert_eq!(
            <f32 as Real>::sum_sq(&rows).to_bits(),
            four_chains(&sq(wide(rows.iter().copied().collect()))).to_bits()
        );
        assert_eq!(
            <f32 as Real>::dot(&m, &m).to_bits(),
            four_chains(&sq(all.clone())).to_bits()
        );
        assert_eq!(
            <f32 as Real>::dot_view(&m.rows(1, 3), &m.rows(1, 3)).to_bits(),
            <f32 as Real>::sum_sq(&rows).to_bits()
        );
    }

    #[test]
    fn f32_products_match_f64() {
        let a = DMatrix::from_fn(6, 4, |i, j| ((i * 4 + j) as f64 * 0.37).sin());
        let b = DMatrix::from_fn(6, 5, |i, j| ((i + 3 * j) as f64 * 0.71).cos());
        let exact = tn(&a, &b);
        let single = tn(&a.map(|x| x as f32), &b.map(|x| x as f32)).map(f64::from);
        assert!((exact - single).norm() < crate::tolerance::F32_REL);
    }

    #[test]
    fn all_transpose_combinations_match_nalgebra() {
        let a = DMatrix::from_fn(5, 3, |i, j| (i * 3 + j) as f64 - 4.0);
        let b = DMatrix::from_fn(5, 4, |i, j| (i + 2 * j) as f64 * 0.5);
        let c = DMatrix::from_fn(3, 4, |i, j| (i * j) as f64 + 1.0);
        assert!((tn(&a, &b) - a.transpose() * &b).norm() < crate::tolerance::ACCUMULATED);
        assert!((nn(&a, &c) - &a * &c).norm() < crate::tolerance::ACCUMULATED);
        assert!((nt(&c, &b) - &c * b.transpose()).norm() < crate::tolerance::ACCUMULATED);
        assert!(
            (mul(&b, true, &a, false) - b.transpose() * &a).norm() < crate::tolerance::ACCUMULATED
        );
        assert!(
            (mul(&c, true, &a, true) - c.transpose() * a.transpose()).norm()
                < crate::tolerance::ACCUMULATED
        );
    }
}
