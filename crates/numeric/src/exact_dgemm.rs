//! f64 products with matrixmultiply's `dgemm` arithmetic in the engine's own kernel, on
//! x86-64 machines with AVX-512: operands read in place where their layout allows, a
//! transposed `A` packed block by block.
//!
//! matrixmultiply 0.3.11's `dgemm` (pinned in `Cargo.toml`), with `alpha = 1`, `beta = 0`, on
//! an AVX-512 machine (its `kernel_target_avx512`), computes every entry as
//!
//! ```text
//! ab_b = fma(a[i, p_last], b[p_last, j], ... fma(a[i, p_first], b[p_first, j], 0.0) ...)
//!        over the p of k-block b = [256 b, 256 (b + 1)) in increasing p   (KC = 256)
//! c[i, j] = 1 * ab_0,  then  c[i, j] = fma(1, ab_b, 1 * c[i, j]) = c[i, j] + ab_b  for b >= 1
//! ```
//!
//! (`dgemm_kernel.rs`: `_mm512_fmadd_pd` over the k-block from zeros, then `alpha ab` when
//! `beta = 0` and `fma(alpha, ab, beta c)` after the first block; `gemm.rs`: the k-blocks of
//! `range_chunk(k, KC)` in order, and edge tiles through the same kernel then
//! `c = c beta + ab`). The entries' values do not depend on the packing, the tile shapes or
//! the order in which tiles are visited, so any kernel that forms the same chains gives the
//! same bits, signed zeros included. (Its FMA kernel, used on machines without AVX-512, ends
//! with `fma(alpha, ab, 0)`, which turns -0 into +0: this kernel runs only where
//! matrixmultiply uses its AVX-512 one.) NaN payloads are not promised (the engines write no
//! non-finite result).
//!
//! `gemm` forms the chains in 32 x 6 register tiles (four 8-lane vectors of rows times six
//! broadcast columns) with `C` of unit row stride (or, through `C^T = B^T A^T`, `B` and `C` of
//! unit column stride) and at least 32 rows: straight from `A` when it has unit row stride
//! (`W x`, `g z^T`), and from blocks of `A` packed into column-major panels when it has unit
//! column stride (a transposed matrix: `W^T g`, per-head `q^T k`); packing copies values and
//! leaves the chains as they are. Every other product goes to `dgemm` (fewer than 32 rows,
//! e.g. per-head `v a^T` while a head has fewer than 32 rows; other layouts).
//!
//! Its rates against `dgemm`, shape by shape, are in `docs/performance.md` ("f64 products with
//! matrixmultiply's bits").
//!
//! Blocks of `A` are visited row block by row block (each one's k-blocks in increasing order,
//! so a row block's part of `C` stays in the level-2 cache between k-blocks while it fits),
//! and while one block's tiles run, the lines of `A` the next block reads are prefetched into
//! the level-2 cache (`Ahead`): a held network's weights come from memory, and the first
//! column of tiles of each block used to wait for them.
//!
//! `gemm` checks once per process that it gives `dgemm`'s bits on probe products (k-blocks,
//! ragged tiles, every path and layout, zeros of both signs, underflowing products and
//! infinities) and calls `dgemm` itself when it does not, or when the machine has no AVX-512
//! (tests: this module's, bit for bit against `dgemm`).

use std::cell::RefCell;
use std::sync::OnceLock;

/// matrixmultiply's `D_KC` for x86-64 (`archparam_defaults.rs`): the length of the k-blocks
/// whose FMA chains start from zero.
pub const KC: usize = 256;

/// Rows of a register tile: four 8-lane vectors.
const MR: usize = 32;
/// Columns of a register tile (broadcast values).
const NR: usize = 6;
/// Rows of `A` per row block where the level-2 cache's size is unknown: the value tuned on
/// the project's machine (AMD EPYC, 1 MiB of level 2 per core), which the rule of
/// [`rows_for_l2`] gives there.
pub const MC_DEFAULT: usize = 128;
/// The most rows of `A` per row block.
const MC_MAX: usize = 512;

/// Rows of `A` visited together for one k-block, kept in the level-2 cache across the column
/// tiles: the most whole register tiles (multiples of 32 rows) whose `MC x KC` block of `A`
/// takes at most a quarter of the level-2 cache `l2` (bytes), leaving the rest to the row
/// block's part of `C`, `B`'s k-block and the next block's prefetched lines; between 32 and
/// 512 rows, [`MC_DEFAULT`] when `l2` is unknown. The bits do not depend on it (only `KC`
/// enters the chains). Measured only where it gives 128 (the tuning machine); elsewhere it is
/// the rule, not a measurement.
///
/// # Examples
///
/// ```rust
/// use normscope_numeric::exact_dgemm::rows_for_l2;
/// assert_eq!(rows_for_l2(Some(1 << 20)), 128); // 1 MiB (AMD EPYC)
/// assert_eq!(rows_for_l2(Some(2 << 20)), 256); // 2 MiB
/// assert_eq!(rows_for_l2(Some(1280 << 10)), 160); // 1.25 MiB
/// assert_eq!(rows_for_l2(Some(256 << 10)), 32); // never below one tile
/// assert_eq!(rows_for_l2(None), 128);
/// ```
pub fn rows_for_l2(l2: Option<u64>) -> usize {
    let Some(l2) = l2 else { return MC_DEFAULT };
    let block_row = (KC * std::mem::size_of::<f64>()) as u64;
    let rows = (l2 / 4 / block_row) as usize;
    (rows / MR * MR).clamp(MR, MC_MAX)
}

/// This machine's rows per row block ([`rows_for_l2`] of its level-2 cache), read once: every
/// product of the process uses the same.
pub fn rows_per_block() -> usize {
    static MC: OnceLock<usize> = OnceLock::new();
    *MC.get_or_init(|| rows_for_l2(crate::cpu::Processor::here().l2))
}

/// Whether `gemm` uses the engine's kernel here: AVX-512 present and the probe product
/// equal to `dgemm`'s bit for bit (checked once).
pub fn active() -> bool {
    static ACTIVE: OnceLock<bool> = OnceLock::new();
    *ACTIVE.get_or_init(|| avx512() && probe_matches())
}

/// The products' kernel as printed by `normscope-bench`.
pub fn kernel_name() -> &'static str {
    if active() {
        "normscope's AVX-512 kernel with matrixmultiply's dgemm arithmetic"
    } else {
        "matrixmultiply"
    }
}

fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A product `C = A B` in matrixmultiply's terms: `m x k` times `k x n`, each matrix a pointer
/// with its row and column strides.
///
/// # Examples
///
/// A 2 x 2 times 2 x 1 product over column-major buffers (row stride 1, column stride = rows):
///
/// ```rust
/// use normscope_numeric::exact_dgemm::Product;
/// let a = [1.0, 3.0, 2.0, 4.0]; // [[1, 2], [3, 4]] column-major
/// let b = [5.0, 6.0];
/// let mut c = [0.0; 2];
/// let p = Product {
///     m: 2,
///     k: 2,
///     n: 1,
///     a: (a.as_ptr(), 1, 2),
///     b: (b.as_ptr(), 1, 2),
///     c: (c.as_mut_ptr(), 1, 2),
/// };
/// assert_eq!((p.m, p.k, p.n), (2, 2, 1));
/// assert_eq!((p.a.1, p.a.2), (1, 2));
/// // The same product through the public entry point: [1*5 + 2*6, 3*5 + 4*6].
/// let am = nalgebra::DMatrix::from_column_slice(2, 2, &a);
/// let bm = nalgebra::DMatrix::from_column_slice(2, 1, &b);
/// assert_eq!(normscope_numeric::gemm::nn(&am, &bm).as_slice(), &[17.0, 39.0]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Product {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Columns of B and C.
    pub n: usize,
    /// A: pointer, row stride, column stride.
    pub a: (*const f64, isize, isize),
    /// B: pointer, row stride, column stride.
    pub b: (*const f64, isize, isize),
    /// C: pointer, row stride, column stride.
    pub c: (*mut f64, isize, isize),
}

impl Product {
    /// matrixmultiply's `dgemm` of this product, with `alpha = 1`, `beta = 0`.
    ///
    /// # Safety
    /// As [`gemm`].
    pub(crate) unsafe fn dgemm(&self) {
        let ((a, rsa, csa), (b, rsb, csb), (c, rsc, csc)) = (self.a, self.b, self.c);
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            matrixmultiply::dgemm(
                self.m, self.k, self.n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, csc,
            )
        }
    }

    /// This product on the engine's kernel where its layout allows, else `dgemm`, whatever
    /// [`active`] says (the probe and the tests call it).
    ///
    /// # Safety
    /// As [`gemm`], with m, k, n positive, no negative stride, on a machine with AVX-512.
    unsafe fn own_kernel(&self) {
        let (m, k, n) = (self.m, self.k, self.n);
        let ((a, rsa, csa), (b, rsb, csb), (c, rsc, csc)) = (self.a, self.b, self.c);
        // SAFETY: the caller's contract.
        unsafe {
            if rsa == 1 && rsc == 1 && m >= MR {
                let rows = Rows::InPlace(a, csa as usize);
                return columns(m, k, n, rows, b, rsb, csb, c, csc as usize);
            }
            if csb == 1 && csc == 1 && n >= MR {
                // C^T = B^T A^T: B^T has unit row stride, C^T too.
                let rows = Rows::InPlace(b, rsb as usize);
                return columns(n, k, m, rows, a, csa, rsa, c, rsc as usize);
            }
            if csa == 1 && rsc == 1 && m >= MR {
                // A transposed (`W^T g`): packed block by block into this thread's buffer
                // (`dgemm` if the thread's storage is gone, as in a thread-local destructor).
                let packed = PACK.try_with(|pack| {
                    let mut pack = pack.borrow_mut();
                    let values = rows_per_block() * KC;
                    if pack.len() < values {
                        pack.resize(values, 0.0);
                    }
                    let rows = Rows::Packed(a, rsa as usize, pack.as_mut_ptr());
                    columns(m, k, n, rows, b, rsb, csb, c, csc as usize)
                });
                if packed.is_ok() {
                    return;
                }
            }
            self.dgemm()
        }
    }
}

/// `C = A B` (`m x k` times `k x n`, any strides) with `dgemm`'s bits ([module docs](self)).
///
/// # Safety
/// The pointers must address `m x k`, `k x n` and `m x n` matrices with these strides, `c`
/// must not alias `a` or `b`, and no two entries of `c` may share an address.
pub(crate) unsafe fn gemm(p: &Product) {
    let strides = [p.a.1, p.a.2, p.b.1, p.b.2, p.c.1, p.c.2];
    // SAFETY (both branches): the caller's contract.
    unsafe {
        if p.m == 0 || p.n == 0 || p.k == 0 || strides.iter().any(|&s| s < 0) || !active() {
            p.dgemm()
        } else {
            p.own_kernel()
        }
    }
}

/// Where a product's `A` is read from: its rows are the vectorized dimension.
#[derive(Clone, Copy)]
enum Rows {
    /// `A` with unit row stride and this column stride, read in place.
    InPlace(*const f64, usize),
    /// `A` with unit column stride and this row stride (a transposed matrix, `W^T g`): each
    /// block of [`rows_per_block`] rows and one k-block is first packed into column-major
    /// panels of [`MR`] rows ([`pack_rows`]) in the buffer (at least `rows_per_block() x KC`
    /// values; [`PACK`], kept per thread).
    Packed(*const f64, usize, *mut f64),
}

thread_local! {
    /// The packed block of [`Rows::Packed`]: `rows_per_block() x KC` values (256 KiB at 128
    /// rows), one per thread.
    static PACK: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// `C = A B` for `A` as `rows` says and `C` with unit row stride (column stride `ldc`); `B`
/// any strides.
///
/// # Safety
/// As [`gemm`] for these layouts, with m, k, n positive, on a machine with AVX-512.
#[allow(clippy::too_many_arguments)]
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn columns(
    m: usize,
    k: usize,
    n: usize,
    rows: Rows,
    b: *const f64,
    rsb: isize,
    csb: isize,
    c: *mut f64,
    ldc: usize,
) {
    // Blocks of MC rows by one k-block, each row block's k-blocks in order. Its part of C
    // (MC n values, 128 KiB at MC = n = 128) stays in the level-2 cache from one k-block to
    // the next while it fits; B's k-blocks are read again for each row block. Every entry's
    // k-blocks are added in increasing order, which is all the bits depend on.
    let blocks = Blocks {
        m,
        k,
        mc: rows_per_block(),
    };
    for at in 0..blocks.count() {
        let (i1, k0) = blocks.at(at);
        let (mc, kc) = (blocks.mc.min(m - i1), KC.min(k - k0));
        // The block's first row at term k0, the distance from one row to the next, and
        // from one term to the next: row i0's terms start at base + (i0 - i1) step.
        let (base, step, lda) = match rows {
            // SAFETY: row i1 < m and term k0 < k lie inside A.
            Rows::InPlace(a, lda) => (unsafe { a.add(i1 + k0 * lda) }, 1, lda),
            Rows::Packed(a, lda, buf) => {
                // SAFETY: rows i1..i1 + mc and terms k0..k0 + kc lie inside A; the
                // buffer holds rows_per_block() KC >= mc.div_ceil(MR) MR kc values
                // (rows_per_block() is a multiple of MR and the same for the whole
                // process, mc <= it, kc <= KC).
                unsafe { pack_rows(a.add(i1 * lda + k0), lda, mc, kc, buf) };
                (buf.cast_const(), kc, MR)
            }
        };
        let tiles = n.div_ceil(NR) * mc.div_ceil(MR);
        let mut ahead = Ahead::of(&blocks, at + 1, rows, tiles);
        let mut j0 = 0;
        while j0 < n {
            let nr = NR.min(n - j0);
            let mut i0 = i1;
            while i0 < i1 + mc {
                let mr = MR.min(i1 + mc - i0);
                ahead.step();
                // SAFETY: the tile's rows i0..i0 + mr < m, columns j0..j0 + nr < n and
                // k-block k0..k0 + kc < k lie inside A (or, packed, inside its panel of
                // the buffer), B and C.
                unsafe {
                    tile(
                        Tile { kc, mr, nr },
                        base.add((i0 - i1) * step),
                        lda,
                        b.offset(k0 as isize * rsb + j0 as isize * csb),
                        (rsb, csb),
                        c.add(i0 + j0 * ldc),
                        ldc,
                        k0 == 0,
                    )
                };
                i0 += MR;
            }
            j0 += NR;
        }
    }
}

/// The blocks [`columns`] visits, in order: row block by row block, and within one the
/// k-blocks in increasing order.
#[cfg(any(target_arch = "x86_64", test))]
struct Blocks {
    /// Rows of `A` (and `C`).
    m: usize,
    /// Terms of the products (columns of `A`).
    k: usize,
    /// Rows per row block ([`rows_per_block`]; a multiple of [`MR`]).
    mc: usize,
}

#[cfg(any(target_arch = "x86_64", test))]
impl Blocks {
    /// How many blocks there are: row blocks of `mc` rows times k-blocks of [`KC`].
    fn count(&self) -> usize {
        self.m.div_ceil(self.mc) * self.k.div_ceil(KC)
    }

    /// Block `at`'s first row and first term.
    fn at(&self, at: usize) -> (usize, usize) {
        let per_rows = self.k.div_ceil(KC);
        ((at / per_rows) * self.mc, (at % per_rows) * KC)
    }
}

/// Prefetches the cache lines of `A` that the next block reads, a share of them before each
/// of this block's tiles, into the level-2 cache. A held network's weights are cold when a
/// pass reaches them, and without this the first column of tiles of every block waited on
/// memory (measured in the [module docs](self)). Prefetching reads nothing the product uses
/// and changes no value.
#[cfg(target_arch = "x86_64")]
struct Ahead {
    /// The next block's first value (not necessarily at the start of a line).
    base: *const f64,
    /// Values from one run of the next block to the next: its columns in place, its rows
    /// when packed (the row stride of `A`).
    stride: usize,
    /// Values in one run.
    len: usize,
    /// Runs in the next block (0 after the last block).
    runs: usize,
    /// Lines issued before each tile: an upper bound of the next block's lines (one more per
    /// run than its values fill) over this block's tiles, at most [`AHEAD_PER_TILE_MAX`]; so
    /// the lines may all be issued before the last tile.
    per_tile: usize,
    /// The run being issued.
    run: usize,
    /// The start of the line holding the run's first value.
    start: *const f64,
    /// Lines the run spans.
    lines: usize,
    /// The next line of the run to issue.
    line: usize,
}

/// At most this many prefetches before one tile: a thin product (a few tiles per block)
/// would otherwise issue a whole block's lines at once, more than the core has misses in
/// flight. The Monte Carlo workload's blocks issue about 50 per tile.
#[cfg(target_arch = "x86_64")]
const AHEAD_PER_TILE_MAX: usize = 64;

#[cfg(target_arch = "x86_64")]
impl Ahead {
    /// The lines of block `next` of `blocks` (none past the last) spread over `tiles > 0`
    /// tiles.
    fn of(blocks: &Blocks, next: usize, rows: Rows, tiles: usize) -> Ahead {
        debug_assert!(tiles > 0);
        let mut ahead = Ahead {
            base: std::ptr::null(),
            stride: 0,
            len: 0,
            runs: 0,
            per_tile: 0,
            run: 0,
            start: std::ptr::null(),
            lines: 0,
            line: 0,
        };
        if next < blocks.count() {
            let (i1, k0) = blocks.at(next);
            let (mc, kc) = (blocks.mc.min(blocks.m - i1), KC.min(blocks.k - k0));
            // Addresses only (wrapping: never dereferenced, and a prefetch cannot fault).
            (ahead.base, ahead.stride, ahead.runs, ahead.len) = match rows {
                Rows::InPlace(a, lda) => (a.wrapping_add(i1 + k0 * lda), lda, kc, mc),
                Rows::Packed(a, lda, _) => (a.wrapping_add(i1 * lda + k0), lda, mc, kc),
            };
            // A run not starting at a line's start spans one line more.
            let most = ahead.runs * (ahead.len.div_ceil(LINE_VALUES) + 1);
            ahead.per_tile = most.div_ceil(tiles).min(AHEAD_PER_TILE_MAX);
            ahead.enter(0);
        }
        ahead
    }

    /// Starts run `run`: the line holding its first value, and how many lines it spans.
    #[inline(always)]
    fn enter(&mut self, run: usize) {
        let first = self.base.wrapping_add(run * self.stride);
        let offset = first.addr() % LINE;
        self.start = first.wrapping_byte_sub(offset);
        self.lines = (offset + self.len * size_of::<f64>()).div_ceil(LINE);
        (self.run, self.line) = (run, 0);
    }

    /// Prefetches the next [`Ahead::per_tile`] lines.
    #[inline(always)]
    fn step(&mut self) {
        self.issue(&mut prefetch);
    }

    /// Hands the next [`Ahead::per_tile`] lines' starts to `line`.
    #[inline(always)]
    fn issue(&mut self, line: &mut impl FnMut(*const f64)) {
        for _ in 0..self.per_tile {
            if self.run == self.runs {
                return;
            }
            line(self.start.wrapping_add(self.line * LINE_VALUES));
            self.line += 1;
            if self.line == self.lines {
                self.enter(self.run + 1);
            }
        }
    }
}

/// Bytes of a cache line on x86-64.
#[cfg(target_arch = "x86_64")]
const LINE: usize = 64;

/// f64 values in a cache line.
#[cfg(target_arch = "x86_64")]
const LINE_VALUES: usize = LINE / size_of::<f64>();

/// A hint to load the line holding `p` into the level-2 cache.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch(p: *const f64) {
    // SAFETY: a prefetch reads nothing the program sees and cannot fault, whatever `p` is.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T1>(p.cast());
    }
}

/// Packs `mc` rows and `kc` terms of an `A` with unit column stride and row stride `lda`
/// (starting at `a`) into column-major panels of [`MR`] rows: row `r` of panel `q`, term `p`
/// at `buf[q MR kc + p MR + r]` (rows of a last, short panel beyond `mc` are left as they
/// were; the tiles mask them off). Copies only: the products' arithmetic is unchanged.
/// Eight rows by eight terms at a time are transposed in registers (three rounds of
/// two-source permutes), the rest one value at a time.
///
/// # Safety
/// `a` must address `mc` rows of `kc` terms with these strides, `buf` at least
/// `mc.div_ceil(MR) MR kc` values; on a machine with AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn pack_rows(a: *const f64, lda: usize, mc: usize, kc: usize, buf: *mut f64) {
    use std::arch::x86_64::*;
    // SAFETY: every read is of a row q0 + r8 + i < mc and a term p < kc; every write of a
    // panel row < MR and a term p < kc of a panel q0 / MR < mc.div_ceil(MR).
    unsafe {
        // Lanes of the permutes: pairs (0, 4) and (2, 6), then halves (0..4, 4..8).
        let pairs_lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
        let pairs_hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
        let halves_lo = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
        let halves_hi = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
        let mut q0 = 0;
        while q0 < mc {
            let rows = MR.min(mc - q0);
            let panel = buf.add(q0 * kc);
            let mut r8 = 0;
            while r8 + 8 <= rows {
                let src = a.add((q0 + r8) * lda);
                let mut p8 = 0;
                while p8 + 8 <= kc {
                    // r[i] = row i, terms p8..p8 + 8.
                    let r: [__m512d; 8] =
                        std::array::from_fn(|i| _mm512_loadu_pd(src.add(i * lda + p8)));
                    // Interleaved pairs of rows: even[h] = (r[2h][0], r[2h+1][0], r[2h][2], ...).
                    let even: [__m512d; 4] =
                        std::array::from_fn(|h| _mm512_unpacklo_pd(r[2 * h], r[2 * h + 1]));
                    let odd: [__m512d; 4] =
                        std::array::from_fn(|h| _mm512_unpackhi_pd(r[2 * h], r[2 * h + 1]));
                    // Four rows' terms (0, 4), (2, 6) from even, (1, 5), (3, 7) from odd.
                    let quad = |x: &[__m512d; 4], idx, h: usize| {
                        _mm512_permutex2var_pd(x[2 * h], idx, x[2 * h + 1])
                    };
                    let (t04, t26) = (
                        [quad(&even, pairs_lo, 0), quad(&even, pairs_lo, 1)],
                        [quad(&even, pairs_hi, 0), quad(&even, pairs_hi, 1)],
                    );
                    let (t15, t37) = (
                        [quad(&odd, pairs_lo, 0), quad(&odd, pairs_lo, 1)],
                        [quad(&odd, pairs_hi, 0), quad(&odd, pairs_hi, 1)],
                    );
                    // Term t's eight rows: low halves give terms 0..4, high halves 4..8.
                    let out = panel.add(p8 * MR + r8);
                    for (t, (x, idx)) in [
                        (&t04, halves_lo),
                        (&t15, halves_lo),
                        (&t26, halves_lo),
                        (&t37, halves_lo),
                        (&t04, halves_hi),
                        (&t15, halves_hi),
                        (&t26, halves_hi),
                        (&t37, halves_hi),
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        _mm512_storeu_pd(out.add(t * MR), _mm512_permutex2var_pd(x[0], idx, x[1]));
                    }
                    p8 += 8;
                }
                for p in p8..kc {
                    for i in 0..8 {
                        *panel.add(p * MR + r8 + i) = *src.add(i * lda + p);
                    }
                }
                r8 += 8;
            }
            for i in r8..rows {
                for p in 0..kc {
                    *panel.add(p * MR + i) = *a.add((q0 + i) * lda + p);
                }
            }
            q0 += MR;
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn columns(
    _m: usize,
    _k: usize,
    _n: usize,
    _rows: Rows,
    _b: *const f64,
    _rsb: isize,
    _csb: isize,
    _c: *mut f64,
    _ldc: usize,
) {
    unreachable!("the engine's kernel runs only where AVX-512 was detected")
}

/// A register tile's extent: `kc` terms, `mr <= MR` rows, `nr <= NR` columns.
#[derive(Clone, Copy)]
struct Tile {
    kc: usize,
    mr: usize,
    nr: usize,
}

/// One register tile: `acc[v][j] = fma(a[8v.., p], b[p, j], acc[v][j])` over the k-block from
/// zeros, then `c = acc` (the first k-block) or `c = c + acc`.
#[cfg(target_arch = "x86_64")]
// Never inlined: a tile's 24 accumulators, four row vectors and a broadcast take 29 of the 32
// vector registers, and inlined into `columns` the loop spilled accumulators to the stack once
// `columns` held more values of its own (measured: 44-101 against 114-123 GFLOP/s at the
// Monte Carlo shapes). A call per tile costs nothing next to its 256 steps.
#[inline(never)]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
// `acc[v][j]` is a register tile: indices name registers, as in matrixmultiply's kernels.
#[allow(clippy::needless_range_loop)]
unsafe fn tile(
    t: Tile,
    a: *const f64,
    lda: usize,
    b: *const f64,
    (rsb, csb): (isize, isize),
    c: *mut f64,
    ldc: usize,
    first: bool,
) {
    use std::arch::x86_64::*;
    let mask = |v: usize| -> __mmask8 {
        let lo = 8 * v;
        if t.mr >= lo + 8 {
            0xff
        } else if t.mr <= lo {
            0
        } else {
            ((1u32 << (t.mr - lo)) - 1) as __mmask8
        }
    };
    let masks = [mask(0), mask(1), mask(2), mask(3)];
    let mut acc = [[_mm512_setzero_pd(); NR]; 4];
    // SAFETY: a vector with rows of the tile starts at one of them (row 8v < mr) and its rows
    // beyond mr are masked off (not read, not written); vectors without rows are not touched
    // and no pointer to them is formed; columns beyond nr are neither read nor written;
    // p < kc.
    unsafe {
        if t.mr == MR && t.nr == NR {
            for p in 0..t.kc {
                let ap = a.add(p * lda);
                let av = [
                    _mm512_loadu_pd(ap),
                    _mm512_loadu_pd(ap.add(8)),
                    _mm512_loadu_pd(ap.add(16)),
                    _mm512_loadu_pd(ap.add(24)),
                ];
                let bp = b.offset(p as isize * rsb);
                for j in 0..NR {
                    let bv = _mm512_set1_pd(*bp.offset(j as isize * csb));
                    for v in 0..4 {
                        acc[v][j] = _mm512_fmadd_pd(av[v], bv, acc[v][j]);
                    }
                }
            }
        } else {
            // Only the vectors that hold rows of the tile: no pointer past them is formed.
            let vectors = t.mr.div_ceil(8);
            for p in 0..t.kc {
                let ap = a.add(p * lda);
                let mut av = [_mm512_setzero_pd(); 4];
                for v in 0..vectors {
                    av[v] = _mm512_maskz_loadu_pd(masks[v], ap.add(8 * v));
                }
                let bp = b.offset(p as isize * rsb);
                for j in 0..t.nr {
                    let bv = _mm512_set1_pd(*bp.offset(j as isize * csb));
                    for v in 0..vectors {
                        acc[v][j] = _mm512_fmadd_pd(av[v], bv, acc[v][j]);
                    }
                }
            }
        }
        for j in 0..t.nr {
            for (v, rows) in acc.iter().enumerate() {
                if masks[v] == 0 {
                    continue;
                }
                let sum = rows[j];
                let cp = c.add(j * ldc + 8 * v);
                let r = if first {
                    sum
                } else {
                    _mm512_add_pd(_mm512_maskz_loadu_pd(masks[v], cp), sum)
                };
                _mm512_mask_storeu_pd(cp, masks[v], r);
            }
        }
    }
}

/// Values of the probe's and the tests' operands: no structure a kernel could exploit, with
/// zeros of both signs, values whose products underflow (to subnormals and to signed zeros)
/// and, unless `finite`, infinities (whose products give infinities and NaNs).
fn probe_value(i: usize, salt: usize, finite: bool) -> f64 {
    let x = ((i * 7919 + salt * 104_729) as f64 * 0.618_033_988_749_895).sin() * 1.5 + 0.25;
    match (i * 31 + salt) % 97 {
        0 => 0.0,
        1 => -0.0,
        2 => x * 1e-160,
        3 if !finite => f64::INFINITY,
        _ => x,
    }
}

/// `(m, k, n)` of the probe products: k over two k-blocks, ragged row and column tiles, and
/// each of [`gemm`]'s paths (direct, through `C^T`, packing a transposed `A`) in some layout.
const PROBE: [(usize, usize, usize); 2] = [(37, 2 * KC + 13, 35), (33, 19, 7)];

/// Whether the engine's kernel gives `dgemm`'s bits on the probe products in every layout.
fn probe_matches() -> bool {
    PROBE.iter().all(|&(m, k, n)| {
        [true, false]
            .into_iter()
            .flat_map(|f| layouts(m, k, n, f))
            .all(|l| {
                let (x, y) = l.both();
                x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits())
            })
    })
}

/// One product's operands in one layout: A as `m x k` (column-major or transposed storage),
/// B as `k x n`, C column-major or row-major.
struct Layout {
    /// m, k, n.
    dims: (usize, usize, usize),
    /// A's values and strides.
    a: (Vec<f64>, isize, isize),
    /// B's values and strides.
    b: (Vec<f64>, isize, isize),
    /// C's strides (C has m n entries).
    c: (isize, isize),
}

impl Layout {
    /// `(dgemm's C, the engine's kernel's C)`, each as stored.
    ///
    /// # Panics
    /// On a machine without AVX-512 (the engine's kernel cannot run).
    fn both(&self) -> (Vec<f64>, Vec<f64>) {
        assert!(avx512(), "the engine's kernel needs AVX-512");
        let (m, k, n) = self.dims;
        let (mut x, mut y) = (vec![f64::NAN; m * n], vec![f64::NAN; m * n]);
        let product = |c: &mut Vec<f64>| Product {
            m,
            k,
            n,
            a: (self.a.0.as_ptr(), self.a.1, self.a.2),
            b: (self.b.0.as_ptr(), self.b.1, self.b.2),
            c: (c.as_mut_ptr(), self.c.0, self.c.1),
        };
        // SAFETY: the layouts' buffers hold exactly m k, k n and m n entries with these
        // strides, and x, y are new buffers.
        unsafe {
            product(&mut x).dgemm();
            product(&mut y).own_kernel();
        }
        (x, y)
    }
}

/// Every layout [`gemm`] treats differently, for an `m x k` times `k x n` product: A column-
/// major or transposed, B column-major or row-major, C column-major or row-major; operands
/// from [`probe_value`].
fn layouts(m: usize, k: usize, n: usize, finite: bool) -> Vec<Layout> {
    let (mi, ki, ni) = (m as isize, k as isize, n as isize);
    let a: Vec<f64> = (0..m * k).map(|i| probe_value(i, 1, finite)).collect();
    let b: Vec<f64> = (0..k * n).map(|i| probe_value(i, 2, finite)).collect();
    let mut out = Vec::new();
    for a_cols in [true, false] {
        for b_cols in [true, false] {
            for c_cols in [true, false] {
                out.push(Layout {
                    dims: (m, k, n),
                    a: (
                        a.clone(),
                        if a_cols { 1 } else { ki },
                        if a_cols { mi } else { 1 },
                    ),
                    b: (
                        b.clone(),
                        if b_cols { 1 } else { ni },
                        if b_cols { ki } else { 1 },
                    ),
                    c: if c_cols { (1, mi) } else { (ni, 1) },
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_kernel_gives_dgemms_bits_in_every_layout() {
        if !avx512() {
            eprintln!("skipped: no AVX-512 on this machine (the engine's kernel is not used)");
            return;
        }
        // k of 1, below, at and across the k-block; rows and columns below, at and across the
        // register tile (32 x 6) and the row block (128); finite operands, then with
        // infinities.
        for (m, k, n) in [
            (1, 1, 1),
            (3, 5, 2),
            (32, 16, 6),
            (33, KC, 7),
            (64, KC + 1, 13),
            (129, 2 * KC + 7, 5),
            (200, 64, 40),
            (7, 3 * KC, 31),
            (40, 70, 1),
            (64, KC + 1, 261),
            (45, 29, 3),
        ] {
            for l in [true, false].into_iter().flat_map(|f| layouts(m, k, n, f)) {
                let (x, y) = l.both();
                let same = x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(
                    same,
                    "{m}x{k}x{n} strides {:?} {:?} {:?}",
                    (l.a.1, l.a.2),
                    (l.b.1, l.b.2),
                    l.c
                );
            }
        }
        assert!(active(), "the probe passes where the tests do");
    }

    #[test]
    fn blocks_cover_each_block_once_with_each_rows_k_blocks_in_order() {
        for mc in [MR, MC_DEFAULT, 160, MC_MAX] {
            for (m, k) in [(1, 1), (mc, KC), (mc + 1, 3 * KC - 1), (5 * mc - 3, KC + 1)] {
                let blocks = Blocks { m, k, mc };
                let order: Vec<(usize, usize)> =
                    (0..blocks.count()).map(|at| blocks.at(at)).collect();
                let mut expected = Vec::new();
                for i1 in (0..m).step_by(mc) {
                    for k0 in (0..k).step_by(KC) {
                        expected.push((i1, k0));
                    }
                }
                assert_eq!(order, expected, "{m} x {k}, {mc} rows per block");
            }
        }
    }

    /// The starts of the lines `Ahead` issues over `tiles` tiles for block `next`.
    #[cfg(target_arch = "x86_64")]
    fn issued(blocks: &Blocks, next: usize, rows: Rows, tiles: usize) -> Vec<usize> {
        let mut ahead = Ahead::of(blocks, next, rows, tiles);
        let mut lines = Vec::new();
        for _ in 0..tiles {
            ahead.issue(&mut |p| lines.push(p.addr()));
        }
        lines
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn ahead_issues_each_line_of_the_next_block_once() {
        // A buffer whose columns (in place) or rows (packed) start at every offset within a
        // line: a stride of 8 k + 3 values, more than a line, so no two runs share a line (runs
        // closer than that would issue a shared line twice: harmless, a prefetch changes no
        // value). The last case has runs shorter than a line, 14 or 16 values apart.
        let a = vec![0.0f64; 700 * 600];
        let line = |v: &f64| (v as *const f64).addr() / LINE * LINE;
        const MC: usize = MC_DEFAULT;
        for (m, k, lda) in [(300, 600, 603), (MC, KC + 5, 299), (5, KC + 3, 19)] {
            let blocks = Blocks { m, k, mc: MC };
            for at in 1..blocks.count() {
                let (i1, k0) = blocks.at(at);
                let (mc, kc) = (MC.min(m - i1), KC.min(k - k0));
                for packed in [false, true] {
                    let (rows, value): (Rows, Box<dyn Fn(usize, usize) -> usize>) = if packed {
                        (
                            Rows::Packed(a.as_ptr(), lda, std::ptr::null_mut()),
                            Box::new(|i, p| i * lda + p),
                        )
                    } else {
                        (Rows::InPlace(a.as_ptr(), lda), Box::new(|i, p| i + p * lda))
                    };
                    let mut want: Vec<usize> = (i1..i1 + mc)
                        .flat_map(|i| (k0..k0 + kc).map(move |p| (i, p)))
                        .map(|(i, p)| line(&a[value(i, p)]))
                        .collect();
                    want.sort_unstable();
                    want.dedup();
                    // Enough tiles that the cap does not bind: every line, each once.
                    let mut got = issued(&blocks, at, rows, want.len());
                    got.sort_unstable();
                    assert_eq!(
                        got, want,
                        "{m} x {k}, lda {lda}, block {at}, packed {packed}"
                    );
                    // One tile: the cap binds, and what is issued is the next block's.
                    let one = issued(&blocks, at, rows, 1);
                    assert_eq!(one.len(), want.len().min(AHEAD_PER_TILE_MAX));
                    assert!(one.iter().all(|l| want.binary_search(l).is_ok()));
                    // A few tiles sharing the lines (below the cap when the block is small):
                    // never more than the lines, each a line of the next block, none twice.
                    let mut few = issued(&blocks, at, rows, 4);
                    few.sort_unstable();
                    let cap = 4 * AHEAD_PER_TILE_MAX;
                    assert_eq!(few.len(), want.len().min(cap), "4 tiles, block {at}");
                    assert!(few.windows(2).all(|w| w[0] < w[1]));
                    assert!(few.iter().all(|l| want.binary_search(l).is_ok()));
                }
            }
            // Nothing after the last block.
            assert!(issued(&blocks, blocks.count(), Rows::InPlace(a.as_ptr(), lda), 4).is_empty());
        }
    }

    #[test]
    fn a_k_block_sum_is_not_one_chain() {
        // The bits depend on KC: a chain over all of k (no restart) differs somewhere, so the
        // test above would catch a wrong block length.
        if !avx512() {
            eprintln!("skipped: no AVX-512 on this machine");
            return;
        }
        let (m, k, n) = (16, 3 * KC, 4);
        let l = &layouts(m, k, n, true)[0];
        let (x, _) = l.both();
        let one_chain: Vec<f64> = (0..m * n)
            .map(|e| {
                let (i, j) = (e % m, e / m);
                (0..k).fold(0.0, |acc, p| {
                    l.a.0[i + p * m].mul_add(l.b.0[p + j * k], acc)
                })
            })
            .collect();
        assert!(
            x.iter()
                .zip(&one_chain)
                .any(|(p, q)| p.to_bits() != q.to_bits())
        );
        // and the blocked chains, written out, are dgemm's.
        let blocked: Vec<f64> = (0..m * n)
            .map(|e| {
                let (i, j) = (e % m, e / m);
                let mut c = 0.0;
                for (bi, start) in (0..k).step_by(KC).enumerate() {
                    let ab = (start..(start + KC).min(k)).fold(0.0, |acc, p| {
                        l.a.0[i + p * m].mul_add(l.b.0[p + j * k], acc)
                    });
                    c = if bi == 0 { ab } else { c + ab };
                }
                c
            })
            .collect();
        assert!(
            x.iter()
                .zip(&blocked)
                .all(|(p, q)| p.to_bits() == q.to_bits())
        );
    }
}
