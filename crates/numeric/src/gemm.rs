//! The float type [`Real`] and matrix products through strided, single-threaded blocked
//! kernels, so that transposed operands cost no copy: a transpose is the same buffer with
//! swapped strides (nalgebra's own `tr_mul` computes column dot products: 8 against 35 GFLOP/s
//! at 2048 x 512 x 128 on one core).
//!
//! - f64: matrixmultiply's `dgemm` arithmetic, whose order of additions every table in
//!   `data/` was made with (a different kernel would move their last bits), computed without
//!   packing on AVX-512 machines ([`super::exact_dgemm`]: the same bits, faster).
//! - f32: faer's `matmul` (`Par::Seq`), faster than matrixmultiply's `sgemm` at the workloads'
//!   shapes (the measurements: docs/performance.md, "f32 products through faer").

use nalgebra::{DMatrix, DMatrixViewMut, Dim, Dyn, Matrix, RealField, Storage};
#[cfg(feature = "timing")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(feature = "timing")]
use std::time::Instant;

/// The float type of the sampled networks: f64 (the default, for exact comparisons) or f32.
/// Pointwise nonlinearities and statistics go through f64 ([`Real::as_f64`]); matrix
/// products use the type's blocked kernel (matrixmultiply's `dgemm` arithmetic for f64,
/// [`super::exact_dgemm`]; faer's `matmul` for f32).
///
/// # Examples
///
/// The two implementors, f64 and f32:
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_numeric::Real;
/// assert_eq!(<f64 as Real>::KERNEL, "matrixmultiply");
/// assert_eq!(<f32 as Real>::KERNEL, "faer");
/// assert_eq!(<f32 as Real>::of(0.1).as_f64(), 0.10000000149011612); // nearest f32 to 0.1
/// let m = DMatrix::from_row_slice(2, 2, &[1.0f64, 2.0, 3.0, 4.0]);
/// assert_eq!(f64::sum_sq(&m), 30.0);
/// assert_eq!(f64::sum(&m), 10.0);
/// assert_eq!(f64::row_sums(&m), vec![3.0, 7.0]);
/// assert_eq!(f64::column_sums(&m), vec![4.0, 6.0]);
/// assert_eq!(f64::dot(&m, &m), 30.0);
/// ```
pub trait Real: RealField + Copy + Send + Sync + 'static {
    /// The library whose GEMM arithmetic computes this type's products ([`Real::gemm`]; f64:
    /// matrixmultiply's `dgemm` bits, see [`super::exact_dgemm`]).
    const KERNEL: &'static str;

    /// `x` rounded to this type (exact for f64).
    fn of(x: f64) -> Self;

    /// This value as f64 (exact).
    fn as_f64(self) -> f64;

    /// `sum_i m_i^2`, accumulated in f64. For f64 this is nalgebra's `norm_squared` (the
    /// rounding every published table was made with); for f32 each entry is widened first.
    fn sum_sq<R: Dim, C: Dim, S: Storage<Self, R, C>>(m: &Matrix<Self, R, C, S>) -> f64;

    /// `sum_i m_i`, accumulated in f64 (nalgebra's `sum` for f64).
    fn sum<R: Dim, C: Dim, S: Storage<Self, R, C>>(m: &Matrix<Self, R, C, S>) -> f64;

    /// `sum_j m[r, j]` for every row r, accumulated in f64: the same additions as
    /// [`Real::sum`] of each row, computed column by column (contiguous reads).
    fn row_sums(m: &DMatrix<Self>) -> Vec<f64>;

    /// [`Real::sum`] of every column: the same additions per column, in the same order.
    fn column_sums(m: &DMatrix<Self>) -> Vec<f64> {
        m.column_iter().map(|c| Self::sum(&c)).collect()
    }

    /// `sum_i a_i b_i`, accumulated in f64 (nalgebra's `dot` for f64).
    fn dot(a: &DMatrix<Self>, b: &DMatrix<Self>) -> f64;

    /// `sum_i a_i b_i` of two equally shaped matrices or views (columns of a larger matrix),
    /// accumulated in f64 (nalgebra's `dot` for f64).
    fn dot_view<R: Dim, C: Dim, S1: Storage<Self, R, C>, S2: Storage<Self, R, C>>(
        a: &Matrix<Self, R, C, S1>,
        b: &Matrix<Self, R, C, S2>,
    ) -> f64;

    /// Every value replaced by `e^x`: f64 with `f64::exp` (glibc's `exp`), f32 with
    /// [`crate::expf::exp_in_place`] (glibc's `expf` bits, eight values at a time).
    fn exp_in_place(xs: &mut [Self]);

    /// `C = A B` for column-major buffers with the given strides (matrixmultiply's contract),
    /// one thread: f64 with matrixmultiply's `dgemm` arithmetic ([`super::exact_dgemm`]), f32
    /// through faer's `matmul`.
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
    const KERNEL: &'static str = "matrixmultiply";

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

    fn row_sums(m: &DMatrix<f64>) -> Vec<f64> {
        // nalgebra's `sum` is one chain from zero: one accumulator per row.
        row_sums_in_chains::<f64, 1>(m)
    }

    fn column_sums(m: &DMatrix<f64>) -> Vec<f64> {
        // nalgebra's `sum` is one chain from zero per column, `fold(0, |a, x| a + x)`, whose
        // additions wait on each other: [`COLUMN_LANES`] columns' chains advance side by side.
        let rows = m.nrows();
        let mut out = vec![0.0; m.ncols()];
        if rows == 0 {
            return out;
        }
        let values = m.as_slice();
        let mut blocks = out.chunks_exact_mut(COLUMN_LANES);
        for (b, sums) in (&mut blocks).enumerate() {
            let block = &values[b * COLUMN_LANES * rows..][..COLUMN_LANES * rows];
            let mut acc = [0.0f64; COLUMN_LANES];
            for r in 0..rows {
                for (l, a) in acc.iter_mut().enumerate() {
                    *a += block[l * rows + r];
                }
            }
            sums.copy_from_slice(&acc);
        }
        let done = m.ncols() / COLUMN_LANES * COLUMN_LANES;
        for (j, s) in blocks.into_remainder().iter_mut().enumerate() {
            *s = m.column(done + j).sum();
        }
        out
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

    fn exp_in_place(xs: &mut [f64]) {
        for x in xs {
            *x = x.exp();
        }
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
        let p = super::exact_dgemm::Product {
            m,
            k,
            n,
            a: (a, rsa, csa),
            b: (b, rsb, csb),
            c: (c, rsc, csc),
        };
        // SAFETY: forwarded from the caller's contract.
        unsafe { super::exact_dgemm::gemm(&p) }
    }
}

impl Real for f32 {
    const KERNEL: &'static str = "faer";

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

    fn row_sums(m: &DMatrix<f32>) -> Vec<f64> {
        // [`sum4`]'s four chains: entry j of a row goes to chain j mod 4.
        row_sums_in_chains::<f32, 4>(m)
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

    fn exp_in_place(xs: &mut [f32]) {
        crate::expf::exp_in_place(xs);
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
        // SAFETY: the caller's contract: the pointers address m x k, k x n and m x n matrices
        // with these strides, and c aliases neither a nor b.
        unsafe {
            let a = faer::MatRef::from_raw_parts(a, m, k, rsa, csa);
            let b = faer::MatRef::from_raw_parts(b, k, n, rsb, csb);
            let c = faer::MatMut::from_raw_parts_mut(c, m, n, rsc, csc);
            faer::linalg::matmul::matmul(c, faer::Accum::Replace, a, b, 1.0, faer::Par::Seq);
            clear_upper_vector_state();
        }
    }
}

/// Columns whose sums [`Real::column_sums`] advances side by side in f64.
const COLUMN_LANES: usize = 8;

/// `vzeroupper` after a faer product, on x86-64 machines with AVX.
///
/// faer's x86 microkernels return with the upper halves of the vector registers in use. Code
/// compiled for baseline x86-64 (SSE encodings: this crate's scalar f64 arithmetic, `sqrt`,
/// division) then pays a state-transition penalty on every instruction until the next
/// `vzeroupper`: measured, the f32 training bench's Adam update took 15.5% of its time
/// instead of 6.5%, and the f32 Monte Carlo workload ran slower with faer than with
/// matrixmultiply (9.0 s against 8.5 s) until this was added (7.0-7.6 s).
fn clear_upper_vector_state() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked above), which `vzeroupper` requires.
            unsafe { zero_upper() }
        }
    }
}

/// `vzeroupper` (AVX).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn zero_upper() {
    std::arch::x86_64::_mm256_zeroupper();
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
            // By index rather than nalgebra's strided iterator (slower still than indexing):
            // the same entries in the same column-major order.
            let (rows, cols) = m.shape();
            for j in 0..cols {
                for r in 0..rows {
                    let i = j * rows + r;
                    // SAFETY: r < rows and j < cols.
                    let x = unsafe { *m.get_unchecked((r, j)) };
                    acc[i % 4] += term(i, x);
                }
            }
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// Row sums in f64 with `C` chains per row (1 or 4): entry `(r, j)` is added to row r's chain
/// `j mod C` in increasing j, and four chains are combined as `(a0 + a1) + (a2 + a3)`: for
/// `C = 1` nalgebra's `sum` of the row, for `C = 4` [`sum4`] of the row (a 1 x n view, whose
/// entry j is term j). Reads the matrix column by column, so the inner loop runs over
/// contiguous entries.
fn row_sums_in_chains<T: Real, const C: usize>(m: &DMatrix<T>) -> Vec<f64> {
    let rows = m.nrows();
    let mut acc = vec![0.0f64; rows * C];
    if rows > 0 {
        for (j, col) in m.as_slice().chunks_exact(rows).enumerate() {
            let chain = &mut acc[(j % C) * rows..][..rows];
            for (a, &x) in chain.iter_mut().zip(col) {
                *a += x.as_f64();
            }
        }
    }
    (0..rows)
        .map(|r| match C {
            1 => acc[r],
            4 => (acc[r] + acc[rows + r]) + (acc[2 * rows + r] + acc[3 * rows + r]),
            _ => unreachable!("one or four chains"),
        })
        .collect()
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

#[cfg(feature = "timing")]
static COUNTING: AtomicBool = AtomicBool::new(false);
#[cfg(feature = "timing")]
static FLOPS: AtomicU64 = AtomicU64::new(0);
#[cfg(feature = "timing")]
static NANOS: AtomicU64 = AtomicU64::new(0);
#[cfg(feature = "timing")]
static PASS_NANOS: AtomicU64 = AtomicU64::new(0);
#[cfg(feature = "timing")]
static DRAW_NANOS: AtomicU64 = AtomicU64::new(0);

/// What the Monte Carlo engine times while `count_products` counts (feature `timing`).
///
/// # Examples
///
/// ```rust
/// use normscope_numeric::gemm::{timed, Timed};
/// // `timed` returns its closure's value whether or not counting is on.
/// assert_eq!(timed(Timed::Draw, || 2 + 2), 4);
/// assert_ne!(Timed::Pass, Timed::Draw);
/// assert_eq!(format!("{:?}", Timed::Pass), "Pass");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// A forward or backward pass of a network, weight drawing included.
    Pass,
    /// Drawing one block's weights.
    Draw,
}

/// Runs `f`, adding its duration to `what`'s total while counting is on (feature `timing`;
/// without it, just runs `f`).
#[cfg(not(feature = "timing"))]
#[inline(always)]
pub fn timed<R>(_what: Timed, f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f`, adding its duration to `what`'s total while counting is on.
#[cfg(feature = "timing")]
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
#[cfg(feature = "timing")]
pub fn pass_seconds() -> f64 {
    let pass = PASS_NANOS.load(Ordering::Relaxed) as f64;
    let draw = DRAW_NANOS.load(Ordering::Relaxed) as f64;
    (pass - draw).max(0.0) * 1e-9
}

/// Seconds, summed over threads, of drawing the blocks' weights ([`Timed::Draw`]), inside or
/// outside the passes.
#[cfg(feature = "timing")]
pub fn draw_seconds() -> f64 {
    DRAW_NANOS.load(Ordering::Relaxed) as f64 * 1e-9
}

/// FLOPs (`2 m k n` per product) and seconds spent inside the kernels of [`mul`] and
/// [`mul_into`] (not `mul_into`'s f64 products with a dimension of 5 or less, which nalgebra
/// computes), summed over every thread since [`count_products`] started counting
/// (`normscope-bench`: the engine's rate in its products, against the machine's GEMM rate).
#[cfg(feature = "timing")]
pub fn product_totals() -> (f64, f64) {
    (
        FLOPS.load(Ordering::Relaxed) as f64,
        NANOS.load(Ordering::Relaxed) as f64 * 1e-9,
    )
}

/// Starts (and zeroes) or stops counting the products of [`mul`] and [`mul_into`]. Off by
/// default: a product then costs one relaxed atomic load more.
#[cfg(feature = "timing")]
pub fn count_products(on: bool) {
    if on {
        for total in [&FLOPS, &NANOS, &PASS_NANOS, &DRAW_NANOS] {
            total.store(0, Ordering::Relaxed);
        }
    }
    COUNTING.store(on, Ordering::Relaxed);
}

/// `op(m)`'s shape and strides: `(rows, cols, row stride, column stride)`, where `op`
/// transposes when `t` is set (a transpose swaps the shape and the two strides).
fn layout<T: Real, S: Storage<T, Dyn, Dyn>>(
    m: &Matrix<T, Dyn, Dyn, S>,
    t: bool,
) -> (usize, usize, isize, isize) {
    let (r, c) = m.shape();
    let (rs, cs) = m.strides();
    let (rs, cs) = (rs as isize, cs as isize);
    if t { (c, r, cs, rs) } else { (r, c, rs, cs) }
}

/// `C = op(a) op(b)` into the `m x n` buffer at `c` with strides `(rsc, csc)`, timed and
/// counted while [`count_products`] counts.
///
/// # Safety
/// `c` must address `op(a).nrows() x op(b).ncols()` entries with these strides, aliasing
/// neither `a` nor `b`.
unsafe fn product_into<T: Real, S1: Storage<T, Dyn, Dyn>, S2: Storage<T, Dyn, Dyn>>(
    a: &Matrix<T, Dyn, Dyn, S1>,
    ta: bool,
    b: &Matrix<T, Dyn, Dyn, S2>,
    tb: bool,
    c: *mut T,
    rsc: isize,
    csc: isize,
) {
    let (m, k, rsa, csa) = layout(a, ta);
    let (br, n, rsb, csb) = layout(b, tb);
    assert_eq!(k, br, "inner dimensions");
    #[cfg(feature = "timing")]
    let start = COUNTING.load(Ordering::Relaxed).then(Instant::now);
    // SAFETY: a and b's own shapes and strides address their entries; c is the caller's.
    unsafe {
        T::gemm(
            m,
            k,
            n,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            c,
            rsc,
            csc,
        )
    };
    #[cfg(feature = "timing")]
    if let Some(t) = start {
        FLOPS.fetch_add(2 * (m * k * n) as u64, Ordering::Relaxed);
        NANOS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// `op(a) * op(b)` where `op` transposes when the flag is set; `a` and `b` are matrices or
/// views (any strides).
pub fn mul<T: Real, S1: Storage<T, Dyn, Dyn>, S2: Storage<T, Dyn, Dyn>>(
    a: &Matrix<T, Dyn, Dyn, S1>,
    ta: bool,
    b: &Matrix<T, Dyn, Dyn, S2>,
    tb: bool,
) -> DMatrix<T> {
    let (ar, ac, _, _) = layout(a, ta);
    let (br, bc, _, _) = layout(b, tb);
    assert_eq!(ac, br, "inner dimensions");
    if ar == 0 || bc == 0 || ac == 0 {
        return DMatrix::zeros(ar, bc);
    }
    if !is_f64::<T>() {
        // faer's `MatMut::from_raw_parts_mut` asks for initialized values, so f32 starts from
        // zeros (faer with `Accum::Replace` overwrites them without reading).
        let mut c = DMatrix::zeros(ar, bc);
        // SAFETY: c is a new ar x bc column-major matrix (strides 1 and ar).
        unsafe { product_into(a, ta, b, tb, c.as_mut_ptr(), 1, ar as isize) };
        return c;
    }
    // f64, not zeroed first: matrixmultiply with beta = 0 overwrites C without reading it
    // ("If beta is zero, then C does not need to be initialized", its `dgemm` docs), and so
    // does `exact_dgemm` (its first k-block writes every entry before a later one reads it).
    let mut c: Vec<T> = Vec::with_capacity(ar * bc);
    // SAFETY: c's capacity holds the ar x bc column-major result (strides 1 and ar) and is
    // a new buffer.
    unsafe { product_into(a, ta, b, tb, c.as_mut_ptr(), 1, ar as isize) };
    // SAFETY: the product wrote all `ar * bc` entries of c's capacity (m, n and k are all
    // positive).
    unsafe { c.set_len(ar * bc) };
    DMatrix::from_vec(ar, bc, c)
}

/// nalgebra's `SMALL_DIM` (`base/blas_uninit.rs`): nalgebra multiplies through matrixmultiply
/// only when every dimension of the product exceeds it, and with its own loops otherwise.
pub const NALGEBRA_SMALL_DIM: usize = 5;

/// `c = op(a) * op(b)` written into the view `c` (a block of a larger matrix) with no
/// temporary; the values of nalgebra's `c.copy_from(&(op(a) * op(b)))`, bit for bit in f64:
/// where nalgebra would use matrixmultiply (every dimension above
/// [`NALGEBRA_SMALL_DIM`]), the same `dgemm` on the same values (packing makes the operands'
/// strides irrelevant to the arithmetic); below it, nalgebra's own product. f32 takes
/// [`Real::gemm`] whenever the inner dimension k is positive (k = 0 writes zeros).
pub fn mul_into<T: Real, S1: Storage<T, Dyn, Dyn>, S2: Storage<T, Dyn, Dyn>>(
    c: &mut DMatrixViewMut<T>,
    a: &Matrix<T, Dyn, Dyn, S1>,
    ta: bool,
    b: &Matrix<T, Dyn, Dyn, S2>,
    tb: bool,
) {
    let (m, k, _, _) = layout(a, ta);
    let (br, n, _, _) = layout(b, tb);
    assert_eq!(k, br, "inner dimensions");
    assert_eq!(c.shape(), (m, n), "output shape");
    if m == 0 || n == 0 {
        return;
    }
    let small = m.min(n).min(k) <= NALGEBRA_SMALL_DIM;
    if k == 0 || (small && is_f64::<T>()) {
        let at = if ta { a.transpose() } else { a.clone_owned() };
        let bt = if tb { b.transpose() } else { b.clone_owned() };
        c.copy_from(&(at * bt));
        return;
    }
    let (rsc, csc) = c.strides();
    // SAFETY: c is a view of m x n entries with its own strides, borrowed mutably, so it
    // aliases neither a nor b.
    unsafe { product_into(a, ta, b, tb, c.as_mut_ptr(), rsc as isize, csc as isize) };
}

/// `op(a) * op(b)` as a new matrix with [`mul_into`]'s values (nalgebra's product's bits in
/// f64, also at a dimension of 5 or less, where [`mul`] would still call `dgemm`).
pub fn mul_new<T: Real, S1: Storage<T, Dyn, Dyn>, S2: Storage<T, Dyn, Dyn>>(
    a: &Matrix<T, Dyn, Dyn, S1>,
    ta: bool,
    b: &Matrix<T, Dyn, Dyn, S2>,
    tb: bool,
) -> DMatrix<T> {
    let (rows, _, _, _) = layout(a, ta);
    let (_, cols, _, _) = layout(b, tb);
    let mut out = DMatrix::zeros(rows, cols);
    mul_into(&mut out.as_view_mut(), a, ta, b, tb);
    out
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

    #[test]
    fn column_sums_keep_the_bits_of_each_columns_sum() {
        // Blocks of COLUMN_LANES columns and a remainder; rows of 0, 1, 7 and 64; against
        // nalgebra's `sum` of each column.
        for (r, c) in [(0, 4), (1, 3), (7, 19), (64, 16), (64, 9)] {
            let m = DMatrix::from_fn(r, c, |i, j| ((i * 31 + j * 7) as f64 * 0.73).sin() * 1e3);
            let sums = f64::column_sums(&m);
            assert_eq!(sums.len(), c);
            for (j, s) in sums.iter().enumerate() {
                assert_eq!(
                    s.to_bits(),
                    m.column(j).sum().to_bits(),
                    "{r}x{c} column {j}"
                );
            }
        }
    }

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
        // Strided views (a row, a block of rows) take the indexed path; contiguous ones (the
        // matrix, a column) the slice path; both follow the stated order bit for bit.
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

    /// Entries spread over 16 decades with both signs: sums of them depend on the order.
    fn order_sensitive(rows: usize, cols: usize, seed: f64) -> DMatrix<f64> {
        DMatrix::from_fn(rows, cols, |i, j| {
            ((i * cols + j) as f64 * 0.61 + seed).sin()
                * 10f64.powi(((3 * i + 7 * j) % 17) as i32 - 8)
        })
    }

    #[test]
    fn row_sums_are_each_rows_own_sum_bit_for_bit() {
        // Every remainder of the four f32 chains (0..=9 columns), no rows, and one row.
        for rows in [0, 1, 3, 7] {
            for cols in 0..=9 {
                let m = order_sensitive(rows, cols, 0.3);
                let single = m.map(|x| x as f32);
                let (got64, got32) = (
                    <f64 as Real>::row_sums(&m),
                    <f32 as Real>::row_sums(&single),
                );
                assert_eq!((got64.len(), got32.len()), (rows, rows));
                for r in 0..rows {
                    assert_eq!(got64[r].to_bits(), <f64 as Real>::sum(&m.row(r)).to_bits());
                    assert_eq!(
                        got32[r].to_bits(),
                        <f32 as Real>::sum(&single.row(r)).to_bits()
                    );
                }
            }
        }
        // The orders are really different: f64's one chain and f32's four chains disagree
        // here, so a test comparing them would notice a swapped implementation.
        let m = DMatrix::from_row_slice(1, 4, &[1e20, 1.0, -1e20, 1.0]);
        assert_eq!(<f64 as Real>::row_sums(&m)[0].to_bits(), 1.0f64.to_bits());
        let single = <f32 as Real>::row_sums(&m.map(|x| x as f32));
        assert_eq!(single[0].to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn mul_into_views_gives_nalgebras_product_bit_for_bit_in_f64() {
        // Heads' blocks of larger matrices (views with a column stride), every transpose
        // combination, above nalgebra's SMALL_DIM (its matrixmultiply path) and below it (its
        // own loops): the values of `c.copy_from(&(op(a) * op(b)))`.
        let big = order_sensitive(40, 50, 0.1);
        let other = order_sensitive(40, 50, 0.9);
        // Exactly 5 (nalgebra's own loops) and 6 (its dgemm) in every position.
        for (m, k, n) in [
            (16, 32, 32),
            (32, 16, 32),
            (7, 6, 9),
            (6, 6, 6),
            (5, 8, 8),
            (8, 5, 8),
            (8, 8, 5),
            (2, 8, 8),
            (8, 3, 8),
            (8, 8, 1),
        ] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = if ta {
                    big.view((3, 2), (k, m))
                } else {
                    big.view((3, 2), (m, k))
                };
                let b = if tb {
                    other.view((5, 7), (n, k))
                } else {
                    other.view((5, 7), (k, n))
                };
                let mut out = DMatrix::from_element(m + 4, n + 3, f64::NAN);
                mul_into(&mut out.view_mut((2, 1), (m, n)), &a, ta, &b, tb);
                let opa = if ta { a.transpose() } else { a.clone_owned() };
                let opb = if tb { b.transpose() } else { b.clone_owned() };
                let want = opa * opb;
                for i in 0..m {
                    for j in 0..n {
                        assert_eq!(out[(2 + i, 1 + j)].to_bits(), want[(i, j)].to_bits());
                    }
                }
                // Nothing outside the block was written.
                let written = out.iter().filter(|x| !x.is_nan()).count();
                assert_eq!(written, m * n, "({m}, {k}, {n}), {ta} {tb}");
            }
        }
    }

    #[test]
    fn f32_products_within_the_rounding_bound_of_an_inner_product() {
        // faer's f32 products (mul, and mul_into into a block of a larger matrix) against the
        // f64 product of the same f32 values: |C32 - C| <= gamma_k (|A| |B|) entrywise,
        // gamma_k = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability of Numerical
        // Algorithms, 2nd ed., eq. 3.13). The f64 reference's own error is at most gamma_k in
        // f64 of the same |A| |B|, 2^-29 of the f32 bound, inside the 1e-8 allowance. Shapes
        // cross faer's blocking (k = 300) and include its matrix-vector and rank-1 cases (a
        // dimension of 1); every transpose combination.
        let u = 2f64.powi(-24);
        let shapes = [
            (70, 300, 90),
            (16, 32, 32),
            (5, 3, 4),
            (1, 40, 9),
            (9, 40, 1),
            (9, 1, 7),
        ];
        for (m, k, n) in shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = order_sensitive(if ta { k } else { m }, if ta { m } else { k }, 0.2)
                    .map(|x| x as f32);
                let b = order_sensitive(if tb { n } else { k }, if tb { k } else { n }, 0.4)
                    .map(|x| x as f32);
                let (a64, b64) = (a.map(f64::from), b.map(f64::from));
                let exact = mul(&a64, ta, &b64, tb);
                let gamma = k as f64 * u / (1.0 - k as f64 * u);
                let bound = mul(&a64.abs(), ta, &b64.abs(), tb) * gamma;
                let mut big = DMatrix::from_element(m + 3, n + 2, f32::NAN);
                mul_into(&mut big.view_mut((1, 2), (m, n)), &a, ta, &b, tb);
                let into = big.view((1, 2), (m, n)).clone_owned();
                let written = big.iter().filter(|x| !x.is_nan()).count();
                assert_eq!(
                    written,
                    m * n,
                    "({m}, {k}, {n}) {ta} {tb}: outside the block"
                );
                for got in [mul(&a, ta, &b, tb), into] {
                    for ((g, e), bnd) in got.iter().zip(exact.iter()).zip(bound.iter()) {
                        assert!(
                            (f64::from(*g) - e).abs() <= bnd * (1.0 + 1e-8),
                            "({m}, {k}, {n}) {ta} {tb}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn f32_products_are_faers() {
        // The f32 kernel is faer's (`Real::KERNEL`): the same bits as calling it directly, at a
        // shape where its order of additions differs from matrixmultiply's sgemm (checked
        // below, so that this test tells the two kernels apart).
        assert_eq!(<f32 as Real>::KERNEL, "faer");
        let (m, k, n) = (37, 300, 29);
        let a = order_sensitive(m, k, 0.3).map(|x| x as f32);
        let b = order_sensitive(k, n, 0.7).map(|x| x as f32);
        let mut direct = faer::Mat::<f32>::zeros(m, n);
        faer::linalg::matmul::matmul(
            direct.as_mut(),
            faer::Accum::Replace,
            faer::MatRef::from_column_major_slice(a.as_slice(), m, k),
            faer::MatRef::from_column_major_slice(b.as_slice(), k, n),
            1.0,
            faer::Par::Seq,
        );
        let ours = nn(&a, &b);
        let mut sgemm = DMatrix::<f32>::zeros(m, n);
        // SAFETY: column-major m x k, k x n and m x n buffers of these sizes and strides; the
        // output is a new matrix.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                1,
                m as isize,
                b.as_ptr(),
                1,
                k as isize,
                0.0,
                sgemm.as_mut_ptr(),
                1,
                m as isize,
            );
        }
        let mut differs = false;
        for i in 0..m {
            for j in 0..n {
                assert_eq!(ours[(i, j)].to_bits(), direct[(i, j)].to_bits());
                differs |= ours[(i, j)].to_bits() != sgemm[(i, j)].to_bits();
            }
        }
        assert!(
            differs,
            "faer and sgemm agree bit for bit here: the test cannot tell them apart"
        );
        assert_eq!(<f64 as Real>::KERNEL, "matrixmultiply");
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

/// matrixmultiply's own `dgemm`/`sgemm` (the function `$gemm`), called directly on column-major
/// matrices into a new one: `$name(a, b) = a b`. The bench's reference GEMM rate.
macro_rules! matrixmultiply_product {
    ($name:ident, $t:ty, $gemm:ident) => {
        #[doc = concat!("`a b` by matrixmultiply's `", stringify!($gemm), "` (the bench's reference rate).")]
        ///
        /// ```
        /// use nalgebra::DMatrix;
        #[doc = concat!("let a = DMatrix::<", stringify!($t), ">::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);")]
        #[doc = concat!("let c = normscope_numeric::gemm::", stringify!($name), "(&a, &a);")]
        /// assert_eq!(c.as_slice(), &[7.0, 15.0, 10.0, 22.0]); // column-major [[7, 10], [15, 22]]
        /// ```
        ///
        /// # Panics
        /// If the inner dimensions differ.
        pub fn $name(a: &DMatrix<$t>, b: &DMatrix<$t>) -> DMatrix<$t> {
            let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
            assert_eq!(b.nrows(), k, "inner dimensions");
            let mut c = DMatrix::<$t>::zeros(m, n);
            // SAFETY: column-major m x k, k x n and m x n buffers of exactly these sizes with
            // these strides; c is a new matrix, aliasing neither operand.
            unsafe {
                matrixmultiply::$gemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    1,
                    m as isize,
                    b.as_ptr(),
                    1,
                    k as isize,
                    0.0,
                    c.as_mut_ptr(),
                    1,
                    m as isize,
                );
            }
            c
        }
    };
}
matrixmultiply_product!(matrixmultiply_f64, f64, dgemm);
matrixmultiply_product!(matrixmultiply_f32, f32, sgemm);
