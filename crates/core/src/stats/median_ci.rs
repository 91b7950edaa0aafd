//! The distribution-free confidence interval for a median from order statistics (Conover 1999,
//! Practical Nonparametric Statistics, section 3.3: the inversion of the sign test). For `n`
//! observations with
//! order statistics `x_(1) <= ... <= x_(n)` and `K ~ Binomial(n, 1/2)`, the interval
//!
//! ```text
//! [x_(k), x_(n-k+1)],   coverage P(k <= K <= n - k) = 1 - 2 P(K <= k - 1)
//! ```
//!
//! contains the population median with at least that probability for any continuous
//! distribution; `k` is the largest rank whose coverage is at least [`super::LEVEL`]. When no
//! rank reaches it (`n <= 5` at 95%: `[x_(1), x_(5)]` covers 93.75%), `k = 0` and the interval
//! is the whole line, with coverage 1: the data cannot bound the median at that level, just as
//! the sign test cannot reject (its smallest two-sided p at `n = 5` is 1/16).
//!
//! For interval observations ([`Obs`]) the lower end is the `k`-th smallest of the `lo` ends
//! and the upper end the `k`-th largest of the `hi` ends: each is a bound of the order
//! statistic the exact values would have had, so the interval contains the exact-data interval
//! (conservative). An end is infinite when that order statistic is censored on its side.
//!
//! Whether an observation's ends are open ([`Obs::lo_open`]; a search's bracket `[stable,
//! unstable)` is half-open) changes neither the estimate (midpoints and finite ends,
//! [`Obs::representative`]) nor the numbers `lo` and `hi`: an open end bounds the order
//! statistic as a closed one does, only without reaching it. The interval is open at its lower
//! end exactly when the `k`-th smallest `lo`, counting closed ends before open ones at a tie, is
//! open, and likewise at its upper end counting down from the largest `hi`; [`MedianCi`]
//! reports the numbers, not the closure.
//!
//! The interval excludes `delta` exactly when the two-sided sign test of [`super::sign`] gives
//! `p < 1 - LEVEL`, also for interval data with its counting of ambiguous observations, an end
//! equal to `delta` excluding it when the interval is open there (ten touching bracket pairs,
//! each difference `(0, 2)`, give the interval `(0, 2)`, reported as `lo = 0`, and `p =
//! 2/1024`): the lower end exceeds `delta` (or equals it, open) iff at least `n - k + 1`
//! observations are certainly above it, iff `p_greater <= P(K <= k - 1) <= (1 - LEVEL)/2`,
//! and one rank fewer would give
//! `p_greater >= P(K <= k) > (1 - LEVEL)/2` by the choice of `k` (equality is impossible at 95%:
//! `2^n` is no multiple of 40).

use super::bootstrap::median;
use super::obs::Obs;
use super::sign::upper_tail;

/// A median, its distribution-free interval and the interval's exact coverage.
///
/// # Examples
///
/// Ten exact values, 1 to 10 shuffled: the 95% interval is `[x_(2), x_(9)] = [2, 9]`, with
/// coverage `1 - 2 P(K <= 1) = 1 - 2 (1 + 10)/1024 = 0.978515625` for `K ~ Binomial(10, 1/2)`
/// (by hand; Conover 1999, Table A.7 prints 97.9% for n = 10). Five values cannot bound the
/// median at 95% (`[x_(1), x_(5)]` covers only `1 - 2/32 = 93.75%`), so the interval is the
/// whole line.
///
/// ```rust
/// use normscope_core::stats::median_ci::{MedianCi, coverage, median_ci};
/// use normscope_core::stats::obs::Obs;
///
/// let exact = |v: &[f64]| v.iter().map(|&x| Obs::exact(x).unwrap()).collect::<Vec<_>>();
/// let ci: MedianCi =
///     median_ci(&exact(&[7.0, 2.0, 9.0, 1.0, 10.0, 4.0, 3.0, 8.0, 6.0, 5.0])).unwrap();
/// assert_eq!((ci.n, ci.rank, ci.lo, ci.hi, ci.estimate), (10, 2, 2.0, 9.0, 5.5));
/// // statrs' incomplete beta function: exact to ~1e-15 here.
/// assert!((ci.coverage - 1002.0 / 1024.0).abs() < 1e-12);
///
/// let few = median_ci(&exact(&[1.0, 2.0, 3.0, 4.0, 5.0])).unwrap();
/// assert_eq!(
///     (few.rank, few.lo, few.hi, few.coverage),
///     (0, f64::NEG_INFINITY, f64::INFINITY, 1.0)
/// );
/// assert!((coverage(1, 5) - 0.9375).abs() < 1e-12);
///
/// // A right-censored largest value moves only the estimate, not the rank-2 ends.
/// let mut d = exact(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
/// d.push(Obs::at_least(10.0).unwrap());
/// let c = median_ci(&d).unwrap();
/// assert_eq!((c.lo, c.hi), (2.0, 9.0));
/// assert!(median_ci(&[]).is_none());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MedianCi {
    /// Number of observations.
    pub n: usize,
    /// The sample median of the observations' representative values
    /// ([`Obs::representative`]: the midpoint when both ends are finite, the finite end
    /// otherwise; observations with neither end finite are left out); NaN when none has one.
    pub estimate: f64,
    /// Lower end `x_(k)` (the `k`-th smallest `lo`); `-inf` when `k = 0` or that end is
    /// left-censored.
    pub lo: f64,
    /// Upper end `x_(n-k+1)` (the `k`-th largest `hi`); `+inf` when `k = 0` or that end is
    /// right-censored.
    pub hi: f64,
    /// The rank `k` (0 when no rank reaches the level).
    pub rank: usize,
    /// The exact coverage `1 - 2 P(K <= k - 1)` under `Binomial(n, 1/2)` (1 when `k = 0`).
    pub coverage: f64,
}

/// The coverage `P(k <= K <= n - k) = 1 - 2 P(K <= k - 1)` of `[x_(k), x_(n-k+1)]`, `K ~
/// Binomial(n, 1/2)`; 1 at `k = 0`. Requires `2k <= n + 1` (the two ends in order).
pub fn coverage(k: u64, n: u64) -> f64 {
    assert!(2 * k <= n + 1, "rank {k} past the middle of {n}");
    if k == 0 {
        return 1.0;
    }
    // P(K <= k - 1) = P(K >= n - k + 1) by the symmetry of Binomial(n, 1/2).
    1.0 - 2.0 * upper_tail(n - k + 1, n)
}

/// The largest rank `k` (with `2k <= n + 1`) whose coverage is at least `level`, and that
/// coverage; `(0, 1.0)` when no rank reaches it.
pub fn rank(n: u64, level: f64) -> (u64, f64) {
    let (mut k, mut c) = (0, 1.0);
    while 2 * (k + 1) <= n + 1 {
        let next = coverage(k + 1, n);
        if next < level {
            break;
        }
        (k, c) = (k + 1, next);
    }
    (k, c)
}

/// The [`super::LEVEL`] interval for the median of `d` (module docs); `None` when `d` is
/// empty.
pub fn median_ci(d: &[Obs]) -> Option<MedianCi> {
    if d.is_empty() {
        return None;
    }
    let n = d.len();
    let (k, coverage) = rank(n as u64, super::LEVEL);
    let k = k as usize;
    let (lo, hi) = if k == 0 {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let mut los: Vec<f64> = d.iter().map(Obs::lo).collect();
        let mut his: Vec<f64> = d.iter().map(Obs::hi).collect();
        los.sort_by(f64::total_cmp);
        his.sort_by(f64::total_cmp);
        (los[k - 1], his[n - k])
    };
    let reps: Vec<f64> = d.iter().filter_map(Obs::representative).collect();
    Some(MedianCi {
        n,
        estimate: median(&reps),
        lo,
        hi,
        rank: k,
        coverage,
    })
}

#[cfg(test)]
// Exact values: interval ends are the data's own values, copied, and k = 0 gives exact
// infinities and a coverage of exactly 1.
#[allow(clippy::float_cmp)]
mod tests {
    use super::super::sign::p_two_sided;
    use super::*;
    use normscope_numeric::rng::Rng;
    use rand::{RngExt, SeedableRng};

    /// A table's coverage printed as a percentage to one decimal: half of 0.1%.
    const PRINTED_PERCENT: f64 = 0.0005;

    /// A binomial tail through statrs' incomplete beta function against the exact rational,
    /// relative to the tail: its continued fraction's ~1e-14 (measured 1.8e-13 on 0.0414 at
    /// n = 20, k = 6), with room.
    const BETA_TAIL: f64 = 1e-12;

    fn ex(v: &[f64]) -> Vec<Obs> {
        v.iter().map(|&x| Obs::exact(x).unwrap()).collect()
    }

    #[test]
    fn ranks_match_the_published_table() {
        // Table A.7, "Confidence Intervals for the Population Median" (a textbook's table, n = 2
        // to 20, stored at coursehero.com/file/5646626/A7): for each n the narrowest listed
        // interval whose level is at least 95%, and that printed level. n = 10: [x_(2), x_(9)],
        // 97.9% (by hand: 1 - 2 * 11/1024 = 0.978516); n = 20: [x_(6), x_(15)], 95.9% (1 - 2 *
        // 21700/2^20 = 0.958611).
        let table = [
            (6, 1, 0.969),
            (7, 1, 0.984),
            (8, 1, 0.992),
            (9, 2, 0.961),
            (10, 2, 0.979),
            (11, 2, 0.988),
            (12, 3, 0.961),
            (13, 3, 0.978),
            (14, 3, 0.987),
            (15, 4, 0.965),
            (16, 4, 0.979),
            (17, 5, 0.951),
            (18, 5, 0.969),
            (19, 5, 0.981),
            (20, 6, 0.959),
        ];
        for (n, k, c) in table {
            let (rk, rc) = rank(n, 0.95);
            assert_eq!(rk, k, "n = {n}");
            assert!(
                (rc - c).abs() < PRINTED_PERCENT,
                "n = {n}: {rc} against {c}"
            );
        }
        // The same table: n = 5 reaches only 93.8% with [x_(1), x_(5)], so no 95% interval.
        assert!((coverage(1, 5) - 0.938).abs() < PRINTED_PERCENT);
        assert_eq!(rank(5, 0.95), (0, 1.0));
        // Exact rationals: n = 10, k = 2 and n = 20, k = 6.
        for (n, tails) in [(10, 22.0 / 1024.0), (20, 43400.0 / 1048576.0)] {
            let c = rank(n, 0.95).1;
            assert!(
                ((1.0 - c) - tails).abs() < BETA_TAIL * tails,
                "n = {n}: {c}"
            );
        }
    }

    #[test]
    fn ends_are_order_statistics() {
        // n = 10: [x_(2), x_(9)] of 1..=10 shuffled.
        let v = [7.0, 2.0, 9.0, 1.0, 10.0, 4.0, 3.0, 8.0, 6.0, 5.0];
        let ci = median_ci(&ex(&v)).unwrap();
        assert_eq!((ci.lo, ci.hi, ci.rank, ci.n), (2.0, 9.0, 2, 10));
        assert_eq!(ci.estimate, 5.5);
        // Too few observations: the whole line, coverage 1, the median still estimated.
        let ci = median_ci(&ex(&[1.0, 2.0, 3.0])).unwrap();
        assert_eq!(
            (ci.lo, ci.hi, ci.coverage, ci.estimate),
            (-f64::INFINITY, f64::INFINITY, 1.0, 2.0)
        );
        assert!(median_ci(&[]).is_none());
    }

    #[test]
    fn censored_ends_are_honest() {
        // Ten observations, the three largest right-censored at 8: the upper end x_(9) is
        // censored, so it is +inf; the lower end x_(2) uses the lo ends. Representatives: the
        // finite end (8) for the censored ones and midpoints for the brackets.
        let o = |lo, hi| Obs::between(lo, hi).unwrap();
        let mut d = vec![
            o(0.0, 1.0),
            o(1.0, 2.0),
            o(2.0, 3.0),
            o(3.0, 4.0),
            o(4.0, 5.0),
            o(5.0, 6.0),
            o(6.0, 7.0),
        ];
        d.extend([Obs::at_least(8.0).unwrap(); 3]);
        let ci = median_ci(&d).unwrap();
        assert_eq!((ci.lo, ci.hi), (1.0, f64::INFINITY));
        // Representatives 0.5, 1.5, ..., 6.5, 8, 8, 8: the median of the middle two, 4.5 and 5.5.
        assert_eq!(ci.estimate, 5.0);
        // The interval contains the exact-data interval of any values inside the brackets.
        let exact = ex(&[0.9, 1.2, 2.5, 3.1, 4.0, 5.9, 6.5, 9.0, 12.0, 8.5]);
        let e = median_ci(&exact).unwrap();
        assert!(ci.lo <= e.lo && e.hi <= ci.hi);
        // Nothing known about any: NaN estimate, infinite ends.
        let none = vec![Obs::between(f64::NEG_INFINITY, f64::INFINITY).unwrap(); 10];
        let ci = median_ci(&none).unwrap();
        assert!(ci.estimate.is_nan() && ci.lo == f64::NEG_INFINITY && ci.hi == f64::INFINITY);
    }

    #[test]
    fn open_ends_change_no_number() {
        // Ten touching bracket pairs, [0, 1) - [-1, 0) = (0, 2) in log2: the same numbers as
        // the closed [0, 2], and the interval's lower end 0 is open (every lo is), matching the
        // sign test's p = 2/1024 < 0.05.
        let t = Obs::half_open(0.0, 1.0).unwrap() - Obs::half_open(-1.0, 0.0).unwrap();
        let open = median_ci(&[t; 10]).unwrap();
        let closed = median_ci(&[Obs::between(0.0, 2.0).unwrap(); 10]).unwrap();
        assert_eq!(open, closed);
        assert_eq!(
            (open.lo, open.hi, open.estimate, open.rank),
            (0.0, 2.0, 1.0, 2)
        );
        assert!(t.lo_open() && p_two_sided(&[t; 10], 0.0) < 1.0 - super::super::LEVEL);
    }

    #[test]
    fn interval_and_sign_test_agree() {
        // The interval excludes delta iff the two-sided sign test rejects at 5%, on random exact
        // samples (n = 1..60, shifted so that both outcomes occur often) and on random interval
        // samples with censoring of every kind.
        let mut rng = Rng::seed_from_u64(21);
        let (mut inside, mut outside) = (0, 0);
        for trial in 0..4000 {
            let n = rng.random_range(1..=60usize);
            let shift = rng.random_range(-1.0..1.0);
            let d: Vec<Obs> = (0..n)
                .map(|_| {
                    let x = rng.random_range(-1.0..1.0) + shift;
                    if trial % 2 == 0 {
                        return Obs::exact(x).unwrap();
                    }
                    match rng.random_range(0..5) {
                        0 => Obs::exact(x).unwrap(),
                        1 => Obs::between(x - rng.random_range(0.0..0.5), x + 0.25).unwrap(),
                        2 => Obs::at_least(x).unwrap(),
                        3 => Obs::half_open(x - rng.random_range(0.0..0.5), x + 0.25).unwrap(),
                        _ => Obs::at_most(x).unwrap(),
                    }
                })
                .collect();
            let ci = median_ci(&d).unwrap();
            let delta = rng.random_range(-0.5..0.5);
            let excludes = delta < ci.lo || ci.hi < delta;
            let p = p_two_sided(&d, delta);
            assert_eq!(
                excludes,
                p < 1.0 - super::super::LEVEL,
                "{trial}: {ci:?} {delta} p = {p}"
            );
            if excludes { outside += 1 } else { inside += 1 }
        }
        // Both cases were exercised many times.
        assert!(inside > 500 && outside > 500, "{inside} {outside}");
    }
}
