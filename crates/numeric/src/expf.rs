//! `e^x` in f32 with the bits of glibc's `expf` on x86-64 machines with FMA (`__expf_fma`,
//! glibc 2.27 and later: the algorithm of Arm's optimized-routines, Szabolcs Nagy 2017), eight
//! values at a time with AVX-512 where the processor has it.
//!
//! The training engine's f32 softmax called `f32::exp`, glibc's `expf`, one value at a time:
//! 3.8% of the f32 training cell's profile (docs/performance.md). glibc computes it in f64:
//!
//! ```text
//! z = x * N / ln 2            (N = 32)
//! k = round(z)                (z + 1.5 * 2^52, read as an integer, minus 1.5 * 2^52)
//! r = fma(N / ln 2, x, -k)    (GCC fuses z - k: x * N / ln 2 - k rounded once)
//! s = 2^(k / N) = T[k mod N] + k << 47, read as an f64   (T[i] = bits of 2^(i/N) - i << 47)
//! y = fma(fma(C0, r, C1), r^2, fma(C2, r, 1))            (C_j = Arm's coefficients / N^(3-j))
//! e^x ~ (f32) (y s)
//! ```
//!
//! and hands `|x| >= 88`, infinities and NaN to its slow path, which [`exp`] and
//! [`exp_in_place`] leave to glibc. With the fused steps written as [`f64::mul_add`] the
//! result is glibc's for **every one of the 2^32 f32 inputs** (checked exhaustively on glibc
//! 2.36: `tests::matches_glibc_expf_on_every_f32`, a slow test). Without AVX-512 the values go
//! one by one through the same arithmetic compiled for FMA (or, without FMA, through the exact
//! software `fma`: the same bits, slower). On machines without FMA glibc takes its unfused
//! variant, whose bits can differ in the last place; this module gives the fused variant's
//! bits there too. The table is written out, so only the slow path (`|x| >= 88`) depends on
//! the platform's `expf` (glibc's gives these bits; another libm's may not).

/// N: the table's entries per doubling.
const N: u64 = 32;

/// `N / ln 2` (glibc's `InvLn2N`: `0x1.71547652b82fep+0 * N`).
const INV_LN2_N: f64 = f64::from_bits(0x3ff7_1547_652b_82fe) * N as f64;

/// `1.5 * 2^52`: adding it rounds to an integer in the low bits (glibc's `SHIFT`).
const SHIFT: f64 = f64::from_bits(0x4338_0000_0000_0000);

/// Arm's cubic's coefficients (glibc's `poly`), scaled by `N^-3, N^-2, N^-1`
/// (glibc's `poly_scaled`).
const C: [f64; 3] = [
    f64::from_bits(0x3fac_6af8_4b91_2394) / (N * N * N) as f64,
    f64::from_bits(0x3fce_bfce_50fa_c4f3) / (N * N) as f64,
    f64::from_bits(0x3fe6_2e42_ff0c_52d6) / N as f64,
];

/// The top 12 bits of `|x|` from which glibc takes its slow path (`top12(88.0f)`).
const SLOW_TOP12: u32 = 0x42b;

/// `T[i]`: the bits of `2^(i/N)` rounded to nearest, minus `i << 47`, so that adding `k << 47`
/// for `k = i mod N` gives the bits of `2^(k/N)`: glibc's `__exp2f_data.tab`
/// (`sysdeps/ieee754/flt-32/math_config.h`, `e_exp2f_data.c`), written out here so that no
/// platform's `exp2` is needed (`tests::table_is_two_to_the_i_over_n`).
static TABLE: [u64; N as usize] = [
    0x3ff0_0000_0000_0000,
    0x3fef_d9b0_d315_8574,
    0x3fef_b558_6cf9_890f,
    0x3fef_9301_d012_5b51,
    0x3fef_72b8_3c7d_517b,
    0x3fef_5487_3168_b9aa,
    0x3fef_387a_6e75_6238,
    0x3fef_1e9d_f51f_dee1,
    0x3fef_06fe_0a31_b715,
    0x3fee_f1a7_373a_a9cb,
    0x3fee_dea6_4c12_3422,
    0x3fee_ce08_6061_892d,
    0x3fee_bfda_d536_2a27,
    0x3fee_b42b_569d_4f82,
    0x3fee_ab07_dd48_5429,
    0x3fee_a47e_b03a_5585,
    0x3fee_a09e_667f_3bcd,
    0x3fee_9f75_e8ec_5f74,
    0x3fee_a114_73eb_0187,
    0x3fee_a589_994c_ce13,
    0x3fee_ace5_422a_a0db,
    0x3fee_b737_b0cd_c5e5,
    0x3fee_c491_82a3_f090,
    0x3fee_d503_b23e_255d,
    0x3fee_e89f_995a_d3ad,
    0x3fee_ff76_f2fb_5e47,
    0x3fef_199b_dd85_529c,
    0x3fef_3720_dcef_9069,
    0x3fef_5818_dcfb_a487,
    0x3fef_7c97_337b_9b5f,
    0x3fef_a4af_a2a4_90da,
    0x3fef_d076_5b6e_4540,
];

/// Whether glibc takes its slow path for `x` (`|x| >= 88`, infinite or NaN).
fn slow(x: f32) -> bool {
    (x.to_bits() >> 20) & 0x7ff >= SLOW_TOP12
}

/// `e^x` rounded to f32 with the bits of glibc's `__expf_fma` (module docs).
///
/// # Examples
///
/// ```rust
/// use normscope_numeric::expf::exp;
///
/// assert_eq!(exp(0.0), 1.0);
/// assert_eq!(exp(1.0), std::f32::consts::E);
/// assert_eq!(exp(-1.0).to_bits(), 0x3ebc_5ab2); // 0.36787945
/// assert_eq!(exp(f32::NEG_INFINITY), 0.0);
/// ```
pub fn exp(x: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if fma_available() {
        // SAFETY: the processor has FMA (checked just above).
        return unsafe { exp_fma(x) };
    }
    exp_core(x)
}

/// [`exp`]'s arithmetic, inlined where it is called so that [`f64::mul_add`] becomes one
/// instruction inside functions compiled for FMA (elsewhere, a call to the exact software
/// `fma`: the same bits, slower).
#[inline(always)]
fn exp_core(x: f32) -> f32 {
    if slow(x) {
        return x.exp();
    }
    let xd = f64::from(x);
    let z = INV_LN2_N * xd;
    let kd = z + SHIFT;
    let ki = kd.to_bits();
    let kd = kd - SHIFT;
    let r = INV_LN2_N.mul_add(xd, -kd);
    let s = f64::from_bits(TABLE[(ki % N) as usize].wrapping_add(ki << 47));
    let p = C[0].mul_add(r, C[1]);
    let y = C[2].mul_add(r, 1.0);
    let y = p.mul_add(r * r, y);
    (y * s) as f32
}

/// Whether the processor has FMA (detected once).
#[cfg(target_arch = "x86_64")]
fn fma_available() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| std::arch::is_x86_feature_detected!("fma"))
}

/// [`exp_core`] compiled for FMA.
///
/// # Safety
///
/// The processor must have FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn exp_fma(x: f32) -> f32 {
    exp_core(x)
}

/// [`exp_core`] of every value, compiled for FMA.
///
/// # Safety
///
/// The processor must have FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn exp_slice_fma(xs: &mut [f32]) {
    for x in xs {
        *x = exp_core(*x);
    }
}

/// Whether [`exp_in_place`] runs eight values at a time (AVX-512F and AVX2, detected once).
pub fn vectorized() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx2")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Every value of `xs` replaced by [`exp`] of it: eight at a time with AVX-512 where the
/// processor has it (the same operations on f64 lanes, so the same bits), else one by one.
///
/// # Examples
///
/// ```rust
/// use normscope_numeric::expf::{exp, exp_in_place};
///
/// let mut xs: Vec<f32> = (0..19).map(|i| i as f32 * 0.37 - 3.0).collect();
/// let want: Vec<u32> = xs.iter().map(|x| exp(*x).to_bits()).collect();
/// exp_in_place(&mut xs);
/// assert_eq!(xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want);
/// ```
pub fn exp_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if vectorized() {
            // SAFETY: the processor has AVX-512F and AVX2 (`vectorized`).
            unsafe { avx512::exp_in_place(xs) };
            return;
        }
        if fma_available() {
            // SAFETY: the processor has FMA.
            unsafe { exp_slice_fma(xs) };
            return;
        }
    }
    for x in xs {
        *x = exp_core(*x);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{C, INV_LN2_N, N, SHIFT, TABLE, exp_core};
    use std::arch::x86_64::*;

    /// [`super::exp_in_place`] on AVX-512F: whole groups of eight in f64 lanes, any group
    /// with a value glibc sends to its slow path, and the tail, through [`exp_core`].
    ///
    /// # Safety
    ///
    /// The processor must have AVX-512F and AVX2.
    #[target_feature(enable = "avx512f,avx2")]
    pub(super) unsafe fn exp_in_place(xs: &mut [f32]) {
        let inv = _mm512_set1_pd(INV_LN2_N);
        let shift = _mm512_set1_pd(SHIFT);
        let (c0, c1, c2) = (
            _mm512_set1_pd(C[0]),
            _mm512_set1_pd(C[1]),
            _mm512_set1_pd(C[2]),
        );
        let one = _mm512_set1_pd(1.0);
        let mask = _mm512_set1_epi64((N - 1) as i64);
        let abs_top = _mm256_set1_epi32(0x7ff);
        let slow_top = _mm256_set1_epi32(super::SLOW_TOP12 as i32 - 1);
        let mut chunks = xs.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds 8 f32 (32 bytes); unaligned loads and stores.
            let x = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            let top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), abs_top);
            if _mm256_movemask_epi8(_mm256_cmpgt_epi32(top, slow_top)) != 0 {
                for v in c.iter_mut() {
                    *v = exp_core(*v);
                }
                continue;
            }
            let xd = _mm512_cvtps_pd(x);
            let z = _mm512_mul_pd(inv, xd);
            let kd = _mm512_add_pd(z, shift);
            let ki = _mm512_castpd_si512(kd);
            let kd = _mm512_sub_pd(kd, shift);
            let r = _mm512_fmsub_pd(inv, xd, kd);
            let idx = _mm512_and_si512(ki, mask);
            // SAFETY: every index is below N, the table's length.
            let tab = unsafe { _mm512_i64gather_epi64::<8>(idx, TABLE.as_ptr().cast()) };
            let s = _mm512_castsi512_pd(_mm512_add_epi64(tab, _mm512_slli_epi64::<47>(ki)));
            let p = _mm512_fmadd_pd(c0, r, c1);
            let y = _mm512_fmadd_pd(c2, r, one);
            let y = _mm512_fmadd_pd(p, _mm512_mul_pd(r, r), y);
            let out = _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
            // SAFETY: as for the load.
            unsafe { _mm256_storeu_ps(c.as_mut_ptr(), out) };
        }
        for v in chunks.into_remainder() {
            *v = exp_core(*v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs of every kind: the slow path's edges, tiny and subnormal values, both signs.
    fn edges() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            88.0,
            -88.0,
            87.999_99,
            -87.999_99,
            88.72284,
            88.72284_f32.next_up(),
            -103.97208,
            -103.27893,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        let mut x = 1e-30f32;
        while x < 200.0 {
            v.extend([x, -x, x.next_up(), -x.next_down()]);
            x *= 1.37;
        }
        v
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn matches_glibc_expf_on_edges_and_a_stride_of_all_inputs() {
        for x in edges() {
            assert!(same(exp(x), x.exp()), "x = {x:e}");
        }
        // Every 4099th bit pattern (about a million inputs of every exponent and sign).
        let mut i = 0u64;
        while i <= u64::from(u32::MAX) {
            let x = f32::from_bits(i as u32);
            assert!(same(exp(x), x.exp()), "bits {i:#010x}");
            i += 4099;
        }
    }

    #[test]
    fn table_is_two_to_the_i_over_n() {
        // 2^(i/32) is exact for i = 0 and 16 (sqrt 2 rounded: 0x3ff6a09e667f3bcd); the others
        // against this platform's exp2 (glibc's is correctly rounded at these points).
        assert_eq!(TABLE[0], 1f64.to_bits());
        assert_eq!(
            TABLE[16].wrapping_add(16 << 47),
            std::f64::consts::SQRT_2.to_bits()
        );
        for (i, t) in TABLE.iter().enumerate() {
            let want = (i as f64 / N as f64).exp2().to_bits();
            assert_eq!(t.wrapping_add((i as u64) << 47), want, "entry {i}");
        }
    }

    #[test]
    #[ignore = "slow: all 2^32 inputs one by one and eight at a time, about a minute in release"]
    fn matches_glibc_expf_on_every_f32() {
        if !vectorized() {
            eprintln!("note: no AVX-512 here, so the eight-at-a-time path was not compared");
        }
        let mut bad = Vec::new();
        let mut chunk = vec![0f32; 1 << 16];
        for hi in 0..=u32::from(u16::MAX) {
            for (lo, x) in chunk.iter_mut().enumerate() {
                *x = f32::from_bits(hi << 16 | lo as u32);
            }
            let mut eight = chunk.clone();
            exp_in_place(&mut eight);
            for (x, e) in chunk.iter().zip(&eight) {
                let want = x.exp();
                if !(same(exp(*x), want) && same(*e, want)) && bad.len() < 10 {
                    bad.push(x.to_bits());
                }
            }
        }
        assert!(bad.is_empty(), "first mismatches (bits): {bad:x?}");
    }

    #[test]
    fn in_place_is_exp_of_each_value_whatever_the_alignment_and_groups() {
        let base = edges();
        for start in 0..8 {
            for len in [0, 1, 7, 8, 9, 16, 23, base.len() - start] {
                let mut xs: Vec<f32> = base[start..start + len].to_vec();
                let want: Vec<f32> = xs.iter().map(|x| exp(*x)).collect();
                exp_in_place(&mut xs);
                assert!(
                    xs.iter().zip(&want).all(|(a, b)| same(*a, *b)),
                    "start {start}, len {len}"
                );
            }
        }
        // Softmax's inputs: x - max, in (-80, 0], in groups of eight without a slow value.
        let mut xs: Vec<f32> = (0..4096).map(|i| -(i as f32) * 0.0193).collect();
        let want: Vec<f32> = xs.iter().map(|x| x.exp()).collect();
        exp_in_place(&mut xs);
        assert!(xs.iter().zip(&want).all(|(a, b)| same(*a, *b)));
    }
}
