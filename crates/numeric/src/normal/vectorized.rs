//! Two vectorized alternatives to the engine's sampler, measured by [`super::bench_samplers`]
//! and not used: on the machine they were tried on (AMD EPYC with AVX-512) neither is fast
//! enough to matter (`docs/performance.md`, "Halving the f32 time outside the products").
//!
//! - [`fill_block`]: the same values as [`super::fill`] from the same draws, a block of draws
//!   at a time. A block of `n` 64-bit draws is taken first (the generator's state stays in
//!   registers in a loop that does nothing else); every draw's candidate `x = u X[i]` and its
//!   rectangle test `|x| < X[i+1]` are computed eight at a time (AVX-512, the table entries
//!   gathered; a scalar loop elsewhere, the same arithmetic); then the block is read in order:
//!   accepted candidates are copied in runs, and a rejected one finishes on the scalar slow
//!   path (the wedge and tail tests of [`super::standard_normal`]), which reads its further
//!   draws from the rest of the block and then from the generator. A candidate depends on its
//!   draw alone, the slow path reads exactly the draws the sequential sampler would give it,
//!   and the draws it consumes are skipped as candidates; a block never takes more draws than
//!   the normals still wanted (each consumes at least one), so the generator ends where
//!   [`super::fill`] leaves it.
//! - [`eight_streams_floor`]: a lower bound for a stream change, not a sampler: eight
//!   xoshiro256++ generators side by side in AVX-512 registers, each draw's candidate and
//!   rectangle test computed, the rejected candidates kept as they are (no slow path), so
//!   its output is not normal. It times what eight streams would cost before the rare paths.

use super::{ZIG_NORM_X, candidate, slow};
use rand::{Rng, TryRng};
use std::convert::Infallible;

/// Draws per block of [`fill_block`]: 256 (2 KiB of draws and 2 KiB of candidates).
const BLOCK: usize = 256;

/// The slow path's source of draws: the rest of the block first, then the generator.
struct Replay<'a, R> {
    draws: &'a [u64],
    used: usize,
    rng: &'a mut R,
}

impl<R: Rng> TryRng for Replay<'_, R> {
    type Error = Infallible;

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(match self.draws.get(self.used) {
            Some(&d) => {
                self.used += 1;
                d
            }
            None => self.rng.next_u64(),
        })
    }

    /// The high half of a 64-bit draw, as xoshiro256++ gives it (the slow path takes none).
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.try_next_u64()? >> 32) as u32)
    }

    /// Little-endian 64-bit draws, as xoshiro256++ fills bytes (the slow path takes none).
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// Fills `out` with the values, and consumes the draws, of [`super::fill`], a block of draws
/// at a time (module documentation).
pub fn fill_block<R: Rng + Clone>(rng: &mut R, out: &mut [f64]) {
    let mut r = rng.clone();
    let mut draws = [0u64; BLOCK];
    let mut xs = [0.0f64; BLOCK];
    let mut rejected = [0u64; BLOCK / 64];
    let mut o = 0;
    while o < out.len() {
        let n = (out.len() - o).min(BLOCK);
        for d in &mut draws[..n] {
            *d = r.next_u64();
        }
        candidates(&draws[..n], &mut xs[..n], &mut rejected);
        let mut k = 0;
        while k < n {
            let j = next_set(&rejected, k, n);
            out[o..o + (j - k)].copy_from_slice(&xs[k..j]);
            o += j - k;
            if j == n {
                break;
            }
            // The slow path runs on a copy of the generator, so that `r`'s address never
            // escapes and its state stays in registers in the drawing loop.
            let (i, u, x) = candidate(draws[j]);
            let mut tmp = r.clone();
            let mut replay = Replay {
                draws: &draws[j + 1..n],
                used: 0,
                rng: &mut tmp,
            };
            out[o] = slow(&mut replay, i, u, x);
            o += 1;
            k = j + 1 + replay.used;
            r = tmp;
        }
    }
    *rng = r;
}

/// The first index in `from..n` whose bit is set in `bits`, or `n`.
fn next_set(bits: &[u64; BLOCK / 64], from: usize, n: usize) -> usize {
    let mut w = from / 64;
    let mut word = bits[w] & (!0u64 << (from % 64));
    loop {
        if word != 0 {
            return (w * 64 + word.trailing_zeros() as usize).min(n);
        }
        w += 1;
        if w * 64 >= n {
            return n;
        }
        word = bits[w];
    }
}

/// Each draw's candidate `x = u X[i]` into `xs`, and a set bit in `rejected` where the
/// rectangle test `|x| < X[i+1]` fails (the other bits cleared).
fn candidates(draws: &[u64], xs: &mut [f64], rejected: &mut [u64; BLOCK / 64]) {
    *rejected = [0; BLOCK / 64];
    let xs = &mut xs[..draws.len()];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F is present (checked above); the slices have equal lengths.
        unsafe { candidates_avx512(draws, xs, rejected) };
        return;
    }
    candidates_scalar(draws, xs, rejected, 0);
}

/// [`candidates`] one draw at a time from index `from` (each 64-bit word of flags kept in a
/// register, not read back from memory for every draw).
fn candidates_scalar(draws: &[u64], xs: &mut [f64], rejected: &mut [u64; BLOCK / 64], from: usize) {
    for (w, word) in rejected.iter_mut().enumerate().skip(from / 64) {
        let mut bits = 0u64;
        for k in (w * 64).max(from)..((w + 1) * 64).min(draws.len()) {
            let (i, _, x) = candidate(draws[k]);
            xs[k] = x;
            bits |= u64::from(x.abs() >= ZIG_NORM_X[i + 1]) << (k % 64);
        }
        *word |= bits;
    }
}

/// [`candidates`] eight draws at a time: per lane the same operations as [`candidate`] and
/// the rectangle test (a mask, a shift, an or, a subtraction, a gathered table entry, one
/// multiplication, a compare), so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn candidates_avx512(draws: &[u64], xs: &mut [f64], rejected: &mut [u64; BLOCK / 64]) {
    use std::arch::x86_64::*;
    let n = draws.len();
    let low = _mm512_set1_epi64(0xff);
    let exponent = _mm512_set1_epi64(1024 << 52);
    let three = _mm512_set1_pd(3.0);
    let table = ZIG_NORM_X.as_ptr();
    let mut k = 0;
    while k + 64 <= n {
        let mut word = 0u64;
        for lane in 0..8 {
            let at = k + 8 * lane;
            // SAFETY: at + 8 <= n bounds the loads and stores; the gathered indices are at
            // most 255 and 256 of a 257-entry table.
            unsafe {
                let v = _mm512_loadu_si512(draws.as_ptr().add(at).cast());
                let i = _mm512_and_si512(v, low);
                let bits = _mm512_or_si512(_mm512_srli_epi64::<12>(v), exponent);
                let u = _mm512_sub_pd(_mm512_castsi512_pd(bits), three);
                let xi = _mm512_i64gather_pd::<8>(i, table);
                let xnext = _mm512_i64gather_pd::<8>(i, table.add(1));
                let x = _mm512_mul_pd(u, xi);
                let inside = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(_mm512_abs_pd(x), xnext);
                _mm512_storeu_pd(xs.as_mut_ptr().add(at), x);
                word |= u64::from(!inside) << (8 * lane);
            }
        }
        rejected[k / 64] = word;
        k += 64;
    }
    candidates_scalar(draws, xs, rejected, k);
}

/// The lower bound of module documentation's second item: eight xoshiro256++ generators
/// seeded with `splitmix64(k)` for k = 0..32 (their 4 x 8 state words), `out.len() / 8 * 8`
/// candidates written, the rectangle test computed and counted but nothing redrawn. Returns how
/// many groups of eight had a rejected candidate, or `None` without AVX-512 (the bound is
/// about that instruction set).
pub fn eight_streams_floor(out: &mut [f64]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        let mut seeds = [0u64; 32];
        for (k, s) in seeds.iter_mut().enumerate() {
            *s = crate::rng::splitmix64(k as u64);
        }
        // SAFETY: AVX-512F is present (checked above).
        return Some(unsafe { eight_streams_avx512(seeds, out) });
    }
    let _ = out;
    None
}

/// [`eight_streams_floor`]'s loop: xoshiro256++'s step and output (Blackman and Vigna 2021)
/// on eight lanes, then [`candidate`] and the rectangle test per lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn eight_streams_avx512(seeds: [u64; 32], out: &mut [f64]) -> usize {
    use std::arch::x86_64::*;
    // SAFETY: each load reads 8 of the 32 seed words.
    let load = |k: usize| unsafe { _mm512_loadu_si512(seeds.as_ptr().add(8 * k).cast()) };
    let mut s = [load(0), load(1), load(2), load(3)];
    let low = _mm512_set1_epi64(0xff);
    let exponent = _mm512_set1_epi64(1024 << 52);
    let three = _mm512_set1_pd(3.0);
    let table = ZIG_NORM_X.as_ptr();
    let mut missed = 0;
    for group in out.chunks_exact_mut(8) {
        let r = xoshiro8(&mut s);
        let i = _mm512_and_si512(r, low);
        let bits = _mm512_or_si512(_mm512_srli_epi64::<12>(r), exponent);
        let u = _mm512_sub_pd(_mm512_castsi512_pd(bits), three);
        // SAFETY: the indices are at most 255 and 256 of a 257-entry table; the store writes
        // the 8 values of `group`.
        unsafe {
            let xi = _mm512_i64gather_pd::<8>(i, table);
            let xnext = _mm512_i64gather_pd::<8>(i, table.add(1));
            let x = _mm512_mul_pd(u, xi);
            let inside = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(_mm512_abs_pd(x), xnext);
            _mm512_storeu_pd(group.as_mut_ptr(), x);
            missed += usize::from(inside != 0xff);
        }
    }
    missed
}

/// xoshiro256++'s output, then its step (Blackman and Vigna 2021, "Scrambled Linear
/// Pseudorandom Number Generators", ACM TOMS 47(4)), on eight 64-bit lanes: state words
/// `s[0..4]`, lane `l` of each one generator's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn xoshiro8(s: &mut [std::arch::x86_64::__m512i; 4]) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let [s0, s1, s2, s3] = s;
    let r = _mm512_add_epi64(_mm512_rol_epi64::<23>(_mm512_add_epi64(*s0, *s3)), *s0);
    let t = _mm512_slli_epi64::<17>(*s1);
    *s2 = _mm512_xor_si512(*s2, *s0);
    *s3 = _mm512_xor_si512(*s3, *s1);
    *s1 = _mm512_xor_si512(*s1, *s2);
    *s0 = _mm512_xor_si512(*s0, *s3);
    *s2 = _mm512_xor_si512(*s2, t);
    *s3 = _mm512_rol_epi64::<45>(*s3);
    r
}

/// The floors' eight generators as scalar ones: lane `l` from state words `splitmix64(k)` for
/// k = l, 8 + l, 16 + l, 24 + l.
#[cfg(test)]
pub(super) fn floor_generators() -> Vec<crate::rng::Rng> {
    use rand::SeedableRng;
    (0..8)
        .map(|l| {
            let words = [l, 8 + l, 16 + l, 24 + l].map(|k| crate::rng::splitmix64(k as u64));
            let mut bytes = [0u8; 32];
            for (chunk, w) in bytes.chunks_mut(8).zip(words) {
                chunk.copy_from_slice(&w.to_le_bytes());
            }
            crate::rng::Rng::from_seed(bytes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng as Xoshiro;
    use rand::SeedableRng;

    #[test]
    fn the_block_sampler_gives_the_sequential_values_and_leaves_the_same_state() {
        // Lengths around the block size, and one of 2^20 + 3 values: about 12,000 rejected
        // candidates, dozens of them near a block's end, whose slow path reads past the block.
        for (seed, len) in [(1, 1), (2, 7), (3, 255), (4, 256), (5, 257), (6, 1000)]
            .into_iter()
            .chain([(7, (1 << 20) + 3)])
        {
            let (mut a, mut b) = (Xoshiro::seed_from_u64(seed), Xoshiro::seed_from_u64(seed));
            let (mut x, mut y) = (vec![0.0; len], vec![0.0; len]);
            super::super::fill(&mut a, &mut x);
            fill_block(&mut b, &mut y);
            let same = x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "seed {seed}, {len} values");
            assert_eq!(a, b, "seed {seed}, {len} values: the generator's state");
        }
    }

    /// Whether draw `d` fails the rectangle test.
    fn fails(d: u64) -> bool {
        let (i, _, x) = candidate(d);
        x.abs() >= ZIG_NORM_X[i + 1]
    }

    /// The first seed whose first block (256 draws) has its first rejected candidate at draw
    /// `at` and satisfies `then` on that draw and the next (if any).
    fn seed_with_rejection_at(at: usize, then: impl Fn(u64, Option<u64>) -> bool) -> u64 {
        (0u64..2_000_000)
            .find(|&s| {
                let mut r = Xoshiro::seed_from_u64(s);
                let draws: Vec<u64> = (0..BLOCK).map(|_| r.next_u64()).collect();
                draws[..at].iter().all(|&d| !fails(d))
                    && fails(draws[at])
                    && then(draws[at], draws.get(at + 1).copied())
            })
            .expect("such a seed")
    }

    /// Whether the wedge test accepts rejected candidate `d` with the uniform of draw `next`
    /// (layer 0, the tail, reads two more draws and counts as not accepted).
    fn wedge_accepts(d: u64, next: u64) -> bool {
        let (i, _, x) = candidate(d);
        let u = (next >> 11) as f64 / (1u64 << 53) as f64;
        i != 0
            && super::super::ZIG_NORM_F[i + 1]
                + (super::super::ZIG_NORM_F[i] - super::super::ZIG_NORM_F[i + 1]) * u
                < super::super::pdf(x)
    }

    fn same_as_sequential(seed: u64, what: &str) {
        let (mut a, mut b) = (Xoshiro::seed_from_u64(seed), Xoshiro::seed_from_u64(seed));
        let (mut x, mut y) = (vec![0.0; 600], vec![0.0; 600]);
        super::super::fill(&mut a, &mut x);
        fill_block(&mut b, &mut y);
        assert_eq!(x, y, "{what}: seed {seed}");
        assert_eq!(a, b, "{what}: seed {seed}");
    }

    #[test]
    fn the_block_sampler_handles_slow_paths_at_a_blocks_end() {
        // The last draw rejected: its slow path finds the block empty and reads the generator.
        let last = seed_with_rejection_at(BLOCK - 1, |_, _| true);
        same_as_sequential(last, "a rejection at the last draw");
        // The last but one rejected and accepted by the wedge test: its slow path takes
        // exactly the block's last draw, which must not also be read as a candidate.
        let exact = seed_with_rejection_at(BLOCK - 2, |d, n| wedge_accepts(d, n.unwrap()));
        same_as_sequential(exact, "a slow path ending at the block's end");
        // The last but one rejected and not accepted by the wedge: its slow path takes the
        // block's last draw, then new draws from the generator.
        let past = seed_with_rejection_at(BLOCK - 2, |d, n| !wedge_accepts(d, n.unwrap()));
        same_as_sequential(past, "a slow path reading past the block");
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn avx512_and_scalar_candidates_agree() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        let mut r = Xoshiro::seed_from_u64(9);
        for n in [BLOCK, 200, 64, 63, 1] {
            let draws: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
            let (mut xa, mut xs) = (vec![0.0; n], vec![0.0; n]);
            // Cleared flags, as `candidates` leaves them before either path.
            let (mut ra, mut rs) = ([0u64; BLOCK / 64], [0u64; BLOCK / 64]);
            // SAFETY: AVX-512F is present (checked above); equal lengths.
            unsafe { candidates_avx512(&draws, &mut xa, &mut ra) };
            candidates_scalar(&draws, &mut xs, &mut rs, 0);
            let same = xa.iter().zip(&xs).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same && ra == rs, "{n} draws");
        }
    }

    #[test]
    fn the_floor_is_eight_xoshiro_streams_of_candidates() {
        let mut out = vec![0.0; 1 << 12];
        let Some(missed) = eight_streams_floor(&mut out) else {
            eprintln!("skipped: no AVX-512 here");
            return;
        };
        // Lane l is xoshiro256++ from state words (seed l, 8 + l, 16 + l, 24 + l), each group's
        // entry l the candidate of its next draw.
        let mut lanes = floor_generators();
        let mut expected_missed = 0;
        for group in out.chunks_exact(8) {
            let mut any = false;
            for (l, &x) in group.iter().enumerate() {
                let d = lanes[l].next_u64();
                assert_eq!(x.to_bits(), candidate(d).2.to_bits());
                any |= fails(d);
            }
            expected_missed += usize::from(any);
        }
        assert_eq!(missed, expected_missed);
    }
}
