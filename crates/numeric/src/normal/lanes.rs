//! A stream change measured, not used: sixteen f32 normals at a time from eight xoshiro256++
//! generators side by side, by a 128-layer ziggurat whose table lives in AVX-512 registers
//! (looked up by permutes, not gathered). Timed by [`super::bench_samplers`]; see
//! `docs/performance.md`, "Halving the f32 time outside the products". Needs AVX-512 F and
//! VL; elsewhere the functions return `None` and draw nothing.
//!
//! - Each of the eight generators' 64-bit draws gives two 32-bit words, the low half first:
//!   the sixteen lanes. A word's low 7 bits pick the layer `i`, its high 23 bits a uniform `u`
//!   in [-1, 1) (an f32 in [2, 4) minus 3, so on a grid of step 2^-22), and the candidate is
//!   `x = u X[i]` in f32, accepted when `|x| < X[i+1]` ([`LAYERS`] layers of equal area,
//!   Marsaglia & Tsang 2000, "The Ziggurat Method for Generating Random Variables", J. Stat.
//!   Softw. 5(8), section 2). The law is exact up to the layer abscissae's rounding to f32 and
//!   the uniform's 23 bits (outputs on a grid of step `X[i] 2^-22` per layer, 0 with
//!   probability 2^-23).
//! - [`fill`] finishes each rejected lane on the scalar rare path: the wedge test
//!   `F[i+1] + (F[i] - F[i+1]) U < f(x)` in f64 and new candidates, or the tail beyond `r`
//!   for layer 0 (Marsaglia 1964), reading the caller's generator, a block's lanes after the
//!   block's vector loop, in group and lane order.
//! - [`fill_vector_rare`] finishes them eight at a time instead (another stream).
//! - [`floor`] keeps every candidate, rejected or not: a lower bound for the stream (its output
//!   is not normal), the cost of the common case alone.
//!
//! With 128 layers about 2.76% of candidates are rejected (256 layers: 1.49%), so 36% of
//! groups of sixteen have a rejected lane; the rare path is what makes [`fill`] and
//! [`fill_vector_rare`] slower than [`floor`].

use super::{tail_beyond, uniform53};
use rand::Rng;
use std::sync::OnceLock;

/// Groups of sixteen lanes per block: a block's rejected lanes are finished after its vector
/// loop, so the rare path's calls do not interrupt it (4 KiB of words kept per block).
const BLOCK_GROUPS: usize = 64;
// A block's groups with a rejection are marked in one u64.
const _: () = assert!(BLOCK_GROUPS <= 64);

/// Layers of the ziggurat: 128, so a table of 128 f32 entries fits in 8 AVX-512 registers
/// (16 for the two lookups, `X[i]` and `X[i+1]`).
pub const LAYERS: usize = 128;

/// The 128-layer ziggurat for the standard normal's unnormalised density `f(x) = exp(-x^2/2)`
/// (Marsaglia & Tsang 2000, section 2): the base strip's edge `r`, the common area `v` of the
/// layers, the abscissae `x[0] = v / f(r)`, `x[1] = r`, `x[i+1] = f^-1(f(x[i]) + v / x[i])` down
/// to `x[128] = 0`, and `f` at each of them.
///
/// # Examples
///
/// ```rust
/// use normscope_numeric::normal::lanes::{tables, LAYERS};
/// let t = tables();
/// // The base strip's edge is the first layer's abscissa; the top layer ends at the peak.
/// assert_eq!(t.x[1], t.r);
/// assert_eq!((t.x[LAYERS], t.f[LAYERS]), (0.0, 1.0));
/// // Marsaglia and Tsang's r for 128 layers, to their 13 digits.
/// assert!((t.r - 3.442619855899).abs() < 1e-11);
/// assert_eq!(t.x32[1], t.r as f32);
/// ```
#[derive(Debug)]
pub struct Tables {
    /// The base strip's edge `r`.
    pub r: f64,
    /// Each layer's area `v = r f(r) + integral of f beyond r`.
    pub v: f64,
    /// The abscissae `x[0..=128]`.
    pub x: [f64; LAYERS + 1],
    /// `f(x[i])`.
    pub f: [f64; LAYERS + 1],
    /// The abscissae rounded to f32, as the lanes read them.
    pub x32: [f32; LAYERS + 1],
}

/// The unnormalised density `exp(-x^2/2)`.
fn density(x: f64) -> f64 {
    (-x * x / 2.0).exp()
}

/// The abscissae for edge `r` and, as the second value, how far the top layer overshoots the
/// density's peak (`f(x[127]) + v / x[127] - 1`; positive also when a layer passes the peak
/// earlier): zero at the ziggurat's `r`, positive for smaller `r`.
fn layers_for(r: f64) -> ([f64; LAYERS + 1], f64, f64) {
    let tail = (std::f64::consts::PI / 2.0).sqrt() * statrs::function::erf::erfc(r / 2f64.sqrt());
    let v = r * density(r) + tail;
    let mut x = [0.0; LAYERS + 1];
    (x[0], x[1]) = (v / density(r), r);
    for i in 2..LAYERS {
        let y = density(x[i - 1]) + v / x[i - 1];
        if y >= 1.0 {
            return (x, v, 1.0);
        }
        x[i] = (-2.0 * y.ln()).sqrt();
    }
    let top = density(x[LAYERS - 1]) + v / x[LAYERS - 1] - 1.0;
    (x, v, top)
}

/// The tables, built once by bisection on `r` (200 halvings of [3, 4]).
pub fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let (mut lo, mut hi) = (3.0, 4.0);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if layers_for(mid).2 > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let r = 0.5 * (lo + hi);
        let (x, v, _) = layers_for(r);
        Tables {
            r,
            v,
            x,
            f: x.map(density),
            x32: x.map(|a| a as f32),
        }
    })
}

/// A lane's layer, uniform and candidate from its 32-bit word (module documentation).
#[inline(always)]
fn candidate(word: u32, t: &Tables) -> (usize, f32, f32) {
    let i = (word & (LAYERS as u32 - 1)) as usize;
    let u = f32::from_bits((word >> 9) | (128 << 23)) - 3.0;
    (i, u, u * t.x32[i])
}

/// The rare path of a lane whose candidate `(i, u, x)` failed the rectangle test: the tail for
/// layer 0, else the wedge test and new candidates from `rng` (one 64-bit draw each, its low
/// half used) until one is accepted.
#[inline(never)]
#[cold]
fn rare<R: Rng>(rng: &mut R, t: &Tables, mut i: usize, mut u: f32, mut x: f32) -> f32 {
    loop {
        if i == 0 {
            return tail_beyond(rng, f64::from(u), t.r) as f32;
        }
        if t.f[i + 1] + (t.f[i] - t.f[i + 1]) * uniform53(rng) < density(f64::from(x)) {
            return x;
        }
        (i, u, x) = candidate(rng.next_u64() as u32, t);
        if x.abs() < t.x32[i + 1] {
            return x;
        }
    }
}

/// Fills `out` with standard normals in f32 by the sixteen lanes (module documentation): the
/// eight generators' states are `rng`'s next 32 draws, the rare paths then read `rng`. The
/// last group, if `out.len()` is not a multiple of 16, is computed whole and its first values
/// kept. Returns `None`, writing nothing, without AVX-512 (F and VL).
pub fn fill<R: Rng>(rng: &mut R, out: &mut [f32]) -> Option<()> {
    draw::<R, false>(rng, out)
}

/// [`fill`] with the rejected lanes finished eight at a time: a block's rejected lanes are
/// queued in group and lane order; each eight's wedge tests (uniforms from the lanes'
/// generators, a vector exponential accurate to 2 ulps) and, for those that fail, new
/// candidates are computed together; accepted values are written, new rejected candidates go
/// back at the queue's end, and layer 0's lanes take the tail from `rng` after the queue is
/// empty. Another stream than [`fill`]'s, and in the last block a value can depend on the
/// length of `out` (a shorter block queues fewer lanes, so later rounds and tails read other
/// draws). Returns `None`, writing nothing, without AVX-512 (F and VL).
pub fn fill_vector_rare<R: Rng>(rng: &mut R, out: &mut [f32]) -> Option<()> {
    draw::<R, true>(rng, out)
}

/// [`fill`] (`VECTOR` false) or [`fill_vector_rare`] (true).
fn draw<R: Rng, const VECTOR: bool>(rng: &mut R, out: &mut [f32]) -> Option<()> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        let seeds: [u64; 32] = std::array::from_fn(|_| rng.next_u64());
        // SAFETY: AVX-512F and VL are present (checked above).
        unsafe { run::<R, true, VECTOR>(seeds, Some(rng), out) };
        return Some(());
    }
    let _ = (rng, out);
    None
}

/// `exp(a)` on eight f64 lanes for `a <= 0` of moderate size: `a = k ln 2 + r` with `k` the
/// nearest integer to `a / ln 2` (Cody and Waite's reduction, `ln 2` in two parts, with FMA),
/// `e^r` by its Taylor polynomial of degree 13 (`|r| <= ln 2 / 2`, truncation below 2e-17
/// relative), scaled by `2^k`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn exp_pd(a: std::arch::x86_64::__m512d) -> std::arch::x86_64::__m512d {
    use std::arch::x86_64::*;
    #[allow(clippy::excessive_precision)]
    const LN2_LO: f64 = 2.319046813846299558e-17;
    let k = _mm512_roundscale_pd::<0>(_mm512_mul_pd(a, _mm512_set1_pd(std::f64::consts::LOG2_E)));
    let r = _mm512_fnmadd_pd(k, _mm512_set1_pd(std::f64::consts::LN_2), a);
    let r = _mm512_fnmadd_pd(k, _mm512_set1_pd(LN2_LO), r);
    let mut p = _mm512_set1_pd(1.0 / 6_227_020_800.0);
    for c in INV_FACT.iter().rev() {
        p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(*c));
    }
    _mm512_scalef_pd(p, k)
}

/// `1 / n!` for n = 0..=12, the Taylor coefficients of [`exp_pd`] below its leading `1 / 13!`.
#[cfg(target_arch = "x86_64")]
const INV_FACT: [f64; 13] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
];

/// [`fill_vector_rare`]'s queue: the rejected candidates `(position in block, word)`, eight at a
/// time (module documentation of [`fill_vector_rare`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn finish_vector<R: Rng>(
    s: &mut [std::arch::x86_64::__m512i; 4],
    rng: &mut R,
    t: &Tables,
    qpos: &[u32],
    qword: &[u32],
    block: &mut [f32],
) {
    use std::arch::x86_64::*;
    let mut tails: Vec<(u32, u32)> = Vec::new();
    let low7 = _mm256_set1_epi32(LAYERS as i32 - 1);
    let exponent = _mm256_set1_epi32(128 << 23);
    let three = _mm256_set1_ps(3.0);
    let one32 = _mm256_set1_epi32(1);
    let sign = _mm256_set1_ps(-0.0);
    let one_bits = _mm512_set1_epi64(1023 << 52);
    let one = _mm512_set1_pd(1.0);
    let minus_half = _mm512_set1_pd(-0.5);
    let (mut qpos, mut qword) = (qpos.to_vec(), qword.to_vec());
    let (mut again_pos, mut again_word) = (Vec::new(), Vec::new());
    let mut head = 0;
    loop {
        if head == qpos.len() {
            if again_pos.is_empty() {
                break;
            }
            // The queue's next round: the new rejected candidates, in the order they came.
            qpos.clear();
            qword.clear();
            qpos.append(&mut again_pos);
            qword.append(&mut again_word);
            head = 0;
        }
        let cnt = (qpos.len() - head).min(8);
        let valid = ((1u16 << cnt) - 1) as __mmask8;
        // SAFETY: the masked loads read the `cnt` entries from `head`.
        let (w, p) = unsafe {
            (
                _mm256_maskz_loadu_epi32(valid, qword.as_ptr().add(head).cast()),
                _mm256_maskz_loadu_epi32(valid, qpos.as_ptr().add(head).cast()),
            )
        };
        head += cnt;
        let i = _mm256_and_si256(w, low7);
        let layer0 = _mm256_mask_cmpeq_epi32_mask(valid, i, _mm256_setzero_si256());
        let live = valid & !layer0;
        let u = _mm256_sub_ps(
            _mm256_castsi256_ps(_mm256_or_si256(_mm256_srli_epi32::<9>(w), exponent)),
            three,
        );
        // SAFETY: the layers are at most 127, the tables have 129 entries.
        let (x, f0, f1) = unsafe {
            (
                _mm256_mul_ps(u, _mm256_i32gather_ps::<4>(t.x32.as_ptr(), i)),
                _mm512_i32gather_pd::<8>(i, t.f.as_ptr().cast()),
                _mm512_i32gather_pd::<8>(_mm256_add_epi32(i, one32), t.f.as_ptr().cast()),
            )
        };
        let r = super::vectorized::xoshiro8(s);
        let uniform = _mm512_sub_pd(
            _mm512_castsi512_pd(_mm512_or_si512(_mm512_srli_epi64::<12>(r), one_bits)),
            one,
        );
        let y = _mm512_add_pd(f1, _mm512_mul_pd(_mm512_sub_pd(f0, f1), uniform));
        let xd = _mm512_cvtps_pd(x);
        let density = exp_pd(_mm512_mul_pd(_mm512_mul_pd(xd, xd), minus_half));
        let wedge = _mm512_mask_cmp_pd_mask::<_CMP_LT_OQ>(live, y, density);
        let again = live & !wedge;
        let w2 = _mm512_cvtepi64_epi32(super::vectorized::xoshiro8(s));
        let i2 = _mm256_and_si256(w2, low7);
        let u2 = _mm256_sub_ps(
            _mm256_castsi256_ps(_mm256_or_si256(_mm256_srli_epi32::<9>(w2), exponent)),
            three,
        );
        // SAFETY: as above.
        let (x2, edge2) = unsafe {
            (
                _mm256_mul_ps(u2, _mm256_i32gather_ps::<4>(t.x32.as_ptr(), i2)),
                _mm256_i32gather_ps::<4>(t.x32.as_ptr(), _mm256_add_epi32(i2, one32)),
            )
        };
        let rect = _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(again, _mm256_andnot_ps(sign, x2), edge2);
        let requeue = again & !rect;
        let value = _mm256_mask_blend_ps(rect, x, x2);
        let (mut vals, mut poss, mut words2, mut words1) =
            ([0f32; 8], [0u32; 8], [0u32; 8], [0u32; 8]);
        // SAFETY: each store writes 8 lanes into an 8-entry array.
        unsafe {
            _mm256_storeu_ps(vals.as_mut_ptr(), value);
            _mm256_storeu_si256(poss.as_mut_ptr().cast(), p);
            _mm256_storeu_si256(words2.as_mut_ptr().cast(), w2);
            _mm256_storeu_si256(words1.as_mut_ptr().cast(), w);
        }
        let mut done = wedge | rect;
        while done != 0 {
            let k = done.trailing_zeros() as usize;
            done &= done - 1;
            if let Some(v) = block.get_mut(poss[k] as usize) {
                *v = vals[k];
            }
        }
        let mut back = requeue;
        while back != 0 {
            let k = back.trailing_zeros() as usize;
            back &= back - 1;
            again_pos.push(poss[k]);
            again_word.push(words2[k]);
        }
        let mut zero = layer0;
        while zero != 0 {
            let k = zero.trailing_zeros() as usize;
            zero &= zero - 1;
            tails.push((poss[k], words1[k]));
        }
    }
    for (pos, word) in tails {
        let (_, u, _) = candidate(word, t);
        let z = tail_beyond(rng, f64::from(u), t.r) as f32;
        if let Some(v) = block.get_mut(pos as usize) {
            *v = z;
        }
    }
}

/// The lower bound of module documentation's third item: the eight generators seeded with
/// `splitmix64(k)` for k = 0..32 (their 4 x 8 state words, lane `l`'s from k = l, 8 + l, 16 + l,
/// 24 + l), `out.len() / 16 * 16` candidates written and nothing redrawn. Returns how many
/// candidates failed the rectangle test, or `None` without AVX-512.
pub fn floor(out: &mut [f32]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        let seeds = std::array::from_fn(|k| crate::rng::splitmix64(k as u64));
        let whole = out.len() / 16 * 16;
        // SAFETY: AVX-512F and VL are present (checked above).
        return Some(unsafe {
            run::<crate::rng::Rng, false, false>(seeds, None, &mut out[..whole])
        });
    }
    let _ = out;
    None
}

/// The lanes' loop: xoshiro256++ on eight 64-bit lanes ([`super::vectorized::xoshiro8`]), the
/// table entries `X[i]` and `X[i+1]` each by four two-register permutes (32 entries apiece,
/// the word's low 5 bits) and three blends (bits 5 and 6; 16 registers hold both tables), the
/// candidates and their rectangle test on sixteen 32-bit lanes. With `RARE`, a block's
/// rejected lanes are finished after its loop, in group and lane order: by [`rare`] on `rng`,
/// or with `VECTOR` by [`finish_vector`]; without `RARE`, they are only counted (the count is
/// returned).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn run<R: Rng, const RARE: bool, const VECTOR: bool>(
    seeds: [u64; 32],
    mut rng: Option<&mut R>,
    out: &mut [f32],
) -> usize {
    use std::arch::x86_64::*;
    let t = tables();
    // SAFETY: each load reads the 8 seed words or 16 table entries of a checked slice.
    let load = |k: usize| unsafe { _mm512_loadu_si512(seeds[8 * k..8 * k + 8].as_ptr().cast()) };
    let entries = |k: usize| unsafe { _mm512_loadu_ps(t.x32[k..k + 16].as_ptr()) };
    let here: [__m512; 8] = std::array::from_fn(|k| entries(16 * k));
    let next: [__m512; 8] = std::array::from_fn(|k| entries(16 * k + 1));
    let mut s = [load(0), load(1), load(2), load(3)];
    let exponent = _mm512_set1_epi32(128 << 23);
    let three = _mm512_set1_ps(3.0);
    let (bit5, bit6) = (_mm512_set1_epi32(32), _mm512_set1_epi32(64));
    let mut missed = 0;
    let mut words = [[0u32; 16]; BLOCK_GROUPS];
    let mut misses = [0u16; BLOCK_GROUPS];
    let mut last = [0.0f32; 16];
    let (mut qpos, mut qword) = ([0u32; 16 * BLOCK_GROUPS], [0u32; 16 * BLOCK_GROUPS]);
    for block in out.chunks_mut(16 * BLOCK_GROUPS) {
        let mut has = 0u64;
        for (g, chunk) in block.chunks_mut(16).enumerate() {
            let r = super::vectorized::xoshiro8(&mut s);
            let m5 = _mm512_test_epi32_mask(r, bit5);
            let m6 = _mm512_test_epi32_mask(r, bit6);
            let pick = |a: usize| _mm512_permutex2var_ps(here[a], r, here[a + 1]);
            let xi = _mm512_mask_blend_ps(
                m6,
                _mm512_mask_blend_ps(m5, pick(0), pick(2)),
                _mm512_mask_blend_ps(m5, pick(4), pick(6)),
            );
            let pick = |a: usize| _mm512_permutex2var_ps(next[a], r, next[a + 1]);
            let xn = _mm512_mask_blend_ps(
                m6,
                _mm512_mask_blend_ps(m5, pick(0), pick(2)),
                _mm512_mask_blend_ps(m5, pick(4), pick(6)),
            );
            let bits = _mm512_or_si512(_mm512_srli_epi32::<9>(r), exponent);
            let x = _mm512_mul_ps(_mm512_sub_ps(_mm512_castsi512_ps(bits), three), xi);
            let inside = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(_mm512_abs_ps(x), xn);
            let n = chunk.len();
            // SAFETY: the stores write the 16 values of a whole `chunk` or of `last`, and the
            // 16 words of `words[g]` (a block has at most BLOCK_GROUPS groups).
            unsafe {
                if n == 16 {
                    _mm512_storeu_ps(chunk.as_mut_ptr(), x);
                } else {
                    _mm512_storeu_ps(last.as_mut_ptr(), x);
                    chunk.copy_from_slice(&last[..n]);
                }
                _mm512_storeu_si512(words[g].as_mut_ptr().cast(), r);
            }
            misses[g] = !inside;
            has |= u64::from(inside != u16::MAX) << g;
        }
        let groups = block.len().div_ceil(16);
        if !RARE {
            missed += misses[..groups]
                .iter()
                .map(|m| m.count_ones() as usize)
                .sum::<usize>();
            continue;
        }
        // The block's rejected lanes, in group and lane order (a short last group's lanes
        // past the end too, their values dropped). For `fill`, so a value does not depend on
        // how many follow it in the block; `finish_vector`'s batches and rounds do depend on
        // the queue's length, so `fill_vector_rare`'s last block does.
        let rng = rng.as_deref_mut().expect("the rare path's generator");
        if VECTOR {
            let mut queued = 0;
            let mut any = has;
            while any != 0 {
                let g = any.trailing_zeros() as usize;
                any &= any - 1;
                let mut miss = misses[g];
                while miss != 0 {
                    let k = miss.trailing_zeros() as usize;
                    miss &= miss - 1;
                    (qpos[queued], qword[queued]) = ((16 * g + k) as u32, words[g][k]);
                    queued += 1;
                }
            }
            // SAFETY: AVX-512F and VL are present (the caller's check).
            unsafe { finish_vector(&mut s, rng, t, &qpos[..queued], &qword[..queued], block) };
            continue;
        }
        for g in 0..groups {
            let mut miss = misses[g];
            while miss != 0 {
                let k = miss.trailing_zeros() as usize;
                miss &= miss - 1;
                let (i, u, x) = candidate(words[g][k], t);
                let z = rare(rng, t, i, u, x);
                if let Some(v) = block.get_mut(16 * g + k) {
                    *v = z;
                }
            }
        }
    }
    missed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng as Xoshiro;
    use rand::SeedableRng;

    #[test]
    fn the_tables_are_marsaglia_and_tsangs() {
        let t = tables();
        // Marsaglia & Tsang 2000's RNOR for 128 layers: dn = 3.442619855899,
        // vn = 9.91256303526217e-3, both printed to 13 digits: agreement to 1e-11 relative.
        assert!((t.r - 3.442619855899).abs() < 1e-11 * t.r, "r = {}", t.r);
        assert!(
            (t.v - 9.91256303526217e-3).abs() < 1e-11 * t.v,
            "v = {}",
            t.v
        );
        // Every layer has area v: the base strip x[0] f(x[1]) and the rectangles
        // x[i] (f(x[i+1]) - f(x[i])); the top one ends at the peak.
        assert!((t.x[0] * t.f[1] - t.v).abs() < 1e-15);
        for i in 1..LAYERS {
            let area = t.x[i] * (t.f[i + 1] - t.f[i]);
            assert!((area - t.v).abs() < 1e-12 * t.v, "layer {i}: {area}");
        }
        assert_eq!((t.x[LAYERS], t.f[LAYERS]), (0.0, 1.0));
        assert!(t.x.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn the_floor_is_sixteen_lanes_of_candidates() {
        let mut out = vec![0.0f32; (1 << 12) + 5];
        let Some(missed) = floor(&mut out) else {
            eprintln!("skipped: no AVX-512 here");
            return;
        };
        let t = tables();
        let mut lanes = super::super::vectorized::floor_generators();
        let mut expected = 0;
        for group in out.chunks_exact(16) {
            for (l, pair) in group.chunks_exact(2).enumerate() {
                let d = lanes[l].next_u64();
                for (&x, word) in pair.iter().zip([d as u32, (d >> 32) as u32]) {
                    let (i, _, c) = candidate(word, t);
                    assert_eq!(x.to_bits(), c.to_bits());
                    expected += usize::from(c.abs() >= t.x32[i + 1]);
                }
            }
        }
        assert_eq!(missed, expected);
        // The rejection rate is the ziggurat's: 1 - mean of x[i+1] / x[i], 2.76% here.
        let rate = missed as f64 / (out.len() / 16 * 16) as f64;
        assert!((0.02..0.035).contains(&rate), "{rate}");
        // The trailing five values are not written.
        assert!(out[out.len() - 5..].iter().all(|&x| x == 0.0));
    }

    /// Kolmogorov's statistic `sqrt(n) D` of `values` against the distribution function `cdf`.
    fn kolmogorov(values: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
        let n = values.len() as f64;
        values.sort_by(f64::total_cmp);
        let d = values.iter().enumerate().fold(0.0f64, |d, (j, &x)| {
            let c = cdf(x);
            d.max(c - j as f64 / n).max((j + 1) as f64 / n - c)
        });
        n.sqrt() * d
    }

    /// Sample mean, variance, and `sqrt(n) D` against N(0, 1).
    fn fit(values: &[f32]) -> (f64, f64, f64) {
        use statrs::distribution::{ContinuousCDF, Normal};
        let n = values.len() as f64;
        let mut v: Vec<f64> = values.iter().map(|&x| f64::from(x)).collect();
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let normal = Normal::standard();
        (mean, var, kolmogorov(&mut v, |x| normal.cdf(x)))
    }

    /// 2^24 values, so the rare path's bugs show, not only a wrong table: at 2^20 a reversed
    /// wedge test moves `sqrt(n) D` to about 1.67 on average and a one-signed tail moves the
    /// mean by about 2.2 standard errors, at 2^24 to about 6.7 and 8.6.
    const N: usize = 1 << 24;

    /// Mean within 4 standard errors (1/sqrt(n)), variance within 4 (sqrt(2/n)), Kolmogorov's
    /// sqrt(n) D under 1.63 (its 1% point), and the tail: only it gives |z| >= r, so the count
    /// beyond r within 4 binomial standard deviations of n P(|Z| >= r), half of it positive (4
    /// sd), and its values distributed as |Z| given |Z| >= r (sqrt(m) D under 1.63). Fixed
    /// seeds, so a sampler passes or fails for good.
    fn assert_standard_normal(out: &[f32], what: &str) {
        use statrs::distribution::{ContinuousCDF, Normal};
        let (mean, var, ks) = fit(out);
        let n = out.len() as f64;
        assert!(mean.abs() < 4.0 / n.sqrt(), "{what}: mean {mean}");
        assert!(
            (var - 1.0).abs() < 4.0 * (2.0 / n).sqrt(),
            "{what}: variance {var}"
        );
        assert!(ks < 1.63, "{what}: sqrt(n) D = {ks}");
        let normal = Normal::standard();
        let r = tables().r;
        let p = 2.0 * normal.sf(r);
        let mut tail: Vec<f64> = out
            .iter()
            .map(|&x| f64::from(x))
            .filter(|x| x.abs() >= r)
            .collect();
        let m = tail.len() as f64;
        assert!(
            (m - n * p).abs() < 4.0 * (n * p * (1.0 - p)).sqrt(),
            "{what}: {m} beyond r"
        );
        let positive = tail.iter().filter(|&&x| x > 0.0).count() as f64;
        assert!(
            (positive - m / 2.0).abs() < 4.0 * (m / 4.0).sqrt(),
            "{what}: {positive} of {m}"
        );
        tail.iter_mut().for_each(|x| *x = x.abs());
        let ks = kolmogorov(&mut tail, |x| 1.0 - normal.sf(x) / normal.sf(r));
        assert!(ks < 1.63, "{what}: tail's sqrt(m) D = {ks}");
    }

    #[test]
    fn the_lanes_draw_standard_normals() {
        let mut out = vec![0.0f32; N];
        if fill(&mut Xoshiro::seed_from_u64(11), &mut out).is_none() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        assert_standard_normal(&out, "fill");
        // The same checks see the floor's kept rejections (variance 1.011, sqrt(n) D about
        // 3.5 at this n): the tests can fail.
        let mut kept = vec![0.0f32; N];
        floor(&mut kept).expect("AVX-512");
        let (_, var, ks) = fit(&kept);
        let n = N as f64;
        assert!(
            (var - 1.0).abs() > 4.0 * (2.0 / n).sqrt(),
            "floor's variance {var}"
        );
        assert!(ks > 1.63, "floor's sqrt(n) D = {ks}");
    }

    #[test]
    fn the_vector_rare_path_draws_standard_normals() {
        let mut out = vec![0.0f32; N];
        if fill_vector_rare(&mut Xoshiro::seed_from_u64(12), &mut out).is_none() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        assert_standard_normal(&out, "fill_vector_rare");
    }

    #[test]
    fn the_vector_rare_path_is_a_function_of_the_seed_at_any_length() {
        // Short groups and blocks (1, 17, 1024 + 5 values) and a long run: the same seed
        // gives the same values and leaves the caller's generator in the same state, and
        // every value is finite and a normal of the right size.
        for len in [1, 17, 1029, 1 << 16] {
            let (mut a, mut b) = (Xoshiro::seed_from_u64(5), Xoshiro::seed_from_u64(5));
            let (mut x, mut y) = (vec![0.0f32; len], vec![f32::NAN; len]);
            if fill_vector_rare(&mut a, &mut x).is_none() {
                eprintln!("skipped: no AVX-512 here");
                return;
            }
            fill_vector_rare(&mut b, &mut y).expect("AVX-512");
            assert_eq!(x, y, "{len} values");
            assert_eq!(a, b, "{len} values: the generator's state");
            assert!(
                x.iter().all(|v| v.is_finite() && v.abs() < 10.0),
                "{len} values"
            );
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_vector_exponential_is_within_two_ulps() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        use std::arch::x86_64::*;
        // The wedge test's arguments: -x^2 / 2 for x in [0, x[0]], about [-6.9, 0].
        for k in 0..10_000 {
            let a: [f64; 8] = std::array::from_fn(|l| -7.0 * (8 * k + l) as f64 / 80_000.0);
            let mut e = [0.0; 8];
            // SAFETY: AVX-512F is present (checked above); 8-lane loads and stores.
            unsafe { _mm512_storeu_pd(e.as_mut_ptr(), exp_pd(_mm512_loadu_pd(a.as_ptr()))) };
            for (x, y) in a.iter().zip(e) {
                let want = x.exp();
                assert!(
                    (y - want).abs() <= 2.0 * f64::EPSILON * want,
                    "exp({x}): {y} vs {want}"
                );
            }
        }
    }

    #[test]
    fn the_lanes_are_a_function_of_the_stream() {
        let mut long = vec![0.0f32; 32];
        let mut rng = Xoshiro::seed_from_u64(3);
        if fill(&mut rng, &mut long).is_none() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        // A short last group keeps the first values of the whole group, and the same stream
        // gives the same values; the next call draws other lanes.
        for len in [1, 15, 17, 31] {
            let mut short = vec![0.0f32; len];
            fill(&mut Xoshiro::seed_from_u64(3), &mut short).expect("AVX-512");
            assert_eq!(short[..], long[..len], "{len} values");
        }
        let mut again = vec![0.0f32; 32];
        fill(&mut rng, &mut again).expect("AVX-512");
        assert_ne!(again, long);
        // The generators' states are the caller's next 32 draws: lane 0's first word is the
        // low half of xoshiro256++'s output from state (d0, d8, d16, d24).
        let mut r = Xoshiro::seed_from_u64(3);
        let d: Vec<u64> = (0..32).map(|_| rand::Rng::next_u64(&mut r)).collect();
        let mut bytes = [0u8; 32];
        for (chunk, w) in bytes.chunks_mut(8).zip([d[0], d[8], d[16], d[24]]) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        let first = rand::Rng::next_u64(&mut Xoshiro::from_seed(bytes));
        let (i, _, x) = candidate(first as u32, tables());
        assert!(
            x.abs() < tables().x32[i + 1],
            "seed 3's first candidate is accepted"
        );
        assert_eq!(long[0].to_bits(), x.to_bits());
    }
}
