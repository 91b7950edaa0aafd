//! The exact sign test for paired differences (Conover 1999, Practical Nonparametric
//! Statistics, section 3.4): of `n` nonzero differences (ties, differences exactly zero, are
//! dropped), `k` are positive; under the null of a zero median difference `k ~ Binomial(n,
//! 1/2)`, and the two-sided p-value is
//!
//! ```text
//! p = min(1, 2 min(P(K <= k), P(K >= k)))
//! ```
//!
//! (R's `binom.test(k, n)$p.value`, which is the same for p = 1/2, a symmetric null).
//!
//! # Interval data
//!
//! For interval observations `d_i` ([`Obs`]) and a shift `delta`, each observation is `above`
//! (certainly `> delta`), `below` (certainly `< delta`) or `ambiguous` (its interval contains
//! `delta`, an exact value equal to `delta` included), respecting which ends are open:
//!
//! ```text
//! above      iff  lo > delta  or  (lo == delta and the lower end is open)
//! below      iff  hi < delta  or  (hi == delta and the upper end is open)
//! ambiguous  otherwise
//! ```
//!
//! So the paired difference of two touching half-open brackets, `[0, 1) - [-1, 0) = (0, 2)`
//! (one arm stable at the rate where the other failed), is above 0, a strict win; a closed
//! `[0, 2]` would be ambiguous. With `n` observations in all and `K ~ Binomial(n, 1/2)`, the
//! one-sided p-values are
//!
//! ```text
//! p_greater = P(K >= above)   (alternative: median > delta)
//! p_less    = P(K >= below)   (alternative: median < delta)
//! p_two     = min(1, 2 min(p_greater, p_less))
//! ```
//!
//! Every ambiguous observation counts against the alternative tested (as below `delta` in
//! `p_greater`, as above it in `p_less`); ties are kept, not dropped. Each one-sided p is the
//! largest classical exact p-value over every way of resolving the ambiguous observations
//! (each above, below, or exactly at `delta` and dropped as a tie), since `P(K >= k)` over
//! `Binomial(n, 1/2)` falls with `k` and grows with `n`; so censoring and ties can only lose
//! power, never create significance, and a test at level `alpha` keeps its level whatever the
//! censored values were. `p_two` is therefore at least the classical two-sided p-value of every
//! resolution. With exact data and no ties at `delta` all three equal the classical exact sign
//! test (R: `binom.test(above, n, alternative = "greater" / "less" / "two.sided")`); with exact
//! ties they are larger than R's, which drops ties (Conover's convention in [`two_sided`]).

use super::obs::Obs;
use statrs::distribution::{Binomial, DiscreteCDF};

/// Two-sided p-value of the sign test on paired differences `d` (zeros dropped; 1 when none
/// is left).
pub fn two_sided(d: &[f64]) -> f64 {
    let n = d.iter().filter(|x| **x != 0.0).count() as u64;
    let k = d.iter().filter(|x| **x > 0.0).count() as u64;
    if n == 0 {
        return 1.0;
    }
    let b = Binomial::new(0.5, n).expect("p = 1/2 is a probability");
    let lower = b.cdf(k);
    let upper = if k == 0 { 1.0 } else { 1.0 - b.cdf(k - 1) };
    (2.0 * lower.min(upper)).min(1.0)
}

/// How interval observations fall relative to a shift `delta` (module docs): `above` have
/// `lo > delta` (or `lo == delta`, open), `below` have `hi < delta` (or `hi == delta`, open),
/// `ambiguous` contain `delta`.
///
/// # Examples
///
/// Nine of twelve paired differences positive, three negative: at `delta = 0` the one-sided
/// p-value is `P(K >= 9) = 299/4096 = 0.07299805` for `K ~ Binomial(12, 1/2)`, and the
/// two-sided one twice that, `0.1459961` (R: `binom.test(9, 12, alternative =
/// "greater")$p.value` and `binom.test(9, 12)$p.value`). A tie and a censored value are
/// ambiguous, and count against each alternative.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::sign::{Counts, counts, p_greater, p_two_sided, two_sided};
///
/// let mut v = vec![1.0; 9];
/// v.extend([-2.0; 3]);
/// let d: Vec<Obs> = v.iter().map(|&x| Obs::exact(x).unwrap()).collect();
/// let c = counts(&d, 0.0);
/// assert_eq!(c, Counts { above: 9, below: 3, ambiguous: 0 });
/// assert_eq!(c.n(), 12);
/// // statrs' incomplete beta function, exact to ~1e-15 relative.
/// assert!((p_greater(&d, 0.0) - 299.0 / 4096.0).abs() < 1e-12);
/// assert!((p_two_sided(&d, 0.0) - 598.0 / 4096.0).abs() < 1e-12);
/// assert!((two_sided(&v) - 0.1459961).abs() < 1e-7);
///
/// // An exact tie at delta and a value censored across it: ambiguous.
/// let mut e = d.clone();
/// e.push(Obs::exact(0.0).unwrap());
/// e.push(Obs::at_most(3.0).unwrap());
/// assert_eq!(counts(&e, 0.0), Counts { above: 9, below: 3, ambiguous: 2 });
/// // P(K >= 9) for K ~ Binomial(14, 1/2) = 3473/16384: larger, never smaller.
/// assert!((p_greater(&e, 0.0) - 3473.0 / 16384.0).abs() < 1e-12);
///
/// // Ten touching bracket pairs in log2, [0, 1) - [-1, 0) = (0, 2): all above 0, so
/// // p_two_sided = 2/1024 (R: binom.test(10, 10)$p.value = 0.001953125). Closed, [0, 2],
/// // they would all be ambiguous, and p = 1.
/// let t = Obs::half_open(0.0, 1.0).unwrap() - Obs::half_open(-1.0, 0.0).unwrap();
/// assert_eq!(counts(&[t; 10], 0.0), Counts { above: 10, below: 0, ambiguous: 0 });
/// assert!((p_two_sided(&[t; 10], 0.0) - 2.0 / 1024.0).abs() < 1e-15);
/// let closed = Obs::between(0.0, 2.0).unwrap();
/// assert_eq!(counts(&[closed; 10], 0.0).ambiguous, 10);
/// assert_eq!(p_two_sided(&[closed; 10], 0.0), 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Observations certainly greater than `delta`.
    pub above: u64,
    /// Observations certainly less than `delta`.
    pub below: u64,
    /// Observations whose interval contains `delta` (exact ties included).
    pub ambiguous: u64,
}

impl Counts {
    /// Every observation: `above + below + ambiguous`.
    pub fn n(&self) -> u64 {
        self.above + self.below + self.ambiguous
    }
}

/// Counts of `d` above, below and around `delta` (module docs). A NaN `delta` makes every
/// observation ambiguous.
pub fn counts(d: &[Obs], delta: f64) -> Counts {
    // lo > delta, or lo == delta with the end open: lo >= delta when open.
    let above = d
        .iter()
        .filter(|o| {
            if o.lo_open() {
                o.lo() >= delta
            } else {
                o.lo() > delta
            }
        })
        .count() as u64;
    let below = d
        .iter()
        .filter(|o| {
            if o.hi_open() {
                o.hi() <= delta
            } else {
                o.hi() < delta
            }
        })
        .count() as u64;
    Counts {
        above,
        below,
        ambiguous: d.len() as u64 - above - below,
    }
}

/// `P(K >= k)` for `K ~ Binomial(n, 1/2)` (1 at `k = 0`, 0 for `k > n`), through statrs'
/// regularised incomplete beta function, accurate in the far tail (no `1 - cdf`).
pub(crate) fn upper_tail(k: u64, n: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    Binomial::new(0.5, n)
        .expect("p = 1/2 is a probability")
        .sf(k - 1)
}

/// One-sided p-value for the alternative "median of `d` > `delta`": `P(K >= above)`,
/// ambiguous observations counted as below (module docs); 1 when `d` is empty.
pub fn p_greater(d: &[Obs], delta: f64) -> f64 {
    let c = counts(d, delta);
    upper_tail(c.above, c.n())
}

/// One-sided p-value for the alternative "median of `d` < `delta`": `P(K >= below)`,
/// ambiguous observations counted as above (module docs); 1 when `d` is empty.
pub fn p_less(d: &[Obs], delta: f64) -> f64 {
    let c = counts(d, delta);
    upper_tail(c.below, c.n())
}

/// Two-sided p-value for "median of `d` != `delta`": `min(1, 2 min(p_greater, p_less))`, each
/// side counting the ambiguous observations against itself (module docs), so it is at least
/// the classical two-sided p-value of every resolution of the censored values and ties; 1 when
/// `d` is empty.
pub fn p_two_sided(d: &[Obs], delta: f64) -> f64 {
    (2.0 * p_greater(d, delta).min(p_less(d, delta))).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::rng::Rng;
    use rand::{RngExt, SeedableRng};

    /// Two routes through statrs' incomplete beta function (`cdf` against `sf`) or against
    /// exact integer sums: each carries the continued fraction's ~1e-15 relative rounding;
    /// 1e-12 relative leaves a margin of a thousand.
    const TWO_BETA_ROUTES: f64 = 1e-12;

    /// `P(K >= k)` for `K ~ Binomial(n, 1/2)` from exact integer binomial coefficients (`n <=
    /// 100`, so `C(n, i) < 2^100` fits a `u128`): a route independent of statrs.
    fn exact_upper(k: u64, n: u64) -> f64 {
        let mut c: u128 = 1; // C(n, 0)
        let mut sum: u128 = 0;
        for i in 0..=n {
            if i >= k {
                sum += c;
            }
            c = c * (n - i) as u128 / (i + 1) as u128;
        }
        sum as f64 / 2f64.powi(n as i32)
    }

    fn ex(v: &[f64]) -> Vec<Obs> {
        v.iter().map(|&x| Obs::exact(x).unwrap()).collect()
    }

    #[test]
    fn matches_the_binomial_test() {
        // 20 of 20 positive: 2 / 2^20 (R: binom.test(20, 20)$p.value = 1.907349e-06).
        let all: Vec<f64> = vec![1.0; 20];
        assert!((two_sided(&all) * 2f64.powi(20) / 2.0 - 1.0).abs() < 1e-9);
        // 15 of 20: R binom.test(15, 20)$p.value = 0.04138947.
        let mut d = vec![1.0; 15];
        d.extend([-1.0; 5]);
        assert!((two_sided(&d) - 0.04138947).abs() < 1e-7);
        // Symmetric in the sign; zeros are dropped; an even split gives 1.
        let neg: Vec<f64> = d.iter().map(|x| -x).collect();
        assert!((two_sided(&neg) - two_sided(&d)).abs() < 1e-15);
        d.extend([0.0; 7]);
        assert!((two_sided(&d) - 0.04138947).abs() < 1e-7);
        assert!((two_sided(&[1.0, -1.0]) - 1.0).abs() < 1e-15);
        assert!((two_sided(&[0.0, 0.0]) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn one_sided_tests_match_r() {
        // R: binom.test(9, 12, alternative = "greater")$p.value = 0.07299805 (= 299/4096), and
        // binom.test(3, 12, alternative = "less") is the same by symmetry.
        let mut d = vec![1.0; 9];
        d.extend([-2.0; 3]);
        let d = ex(&d);
        let exact = 299.0 / 4096.0;
        assert!((p_greater(&d, 0.0) - exact).abs() < TWO_BETA_ROUTES * exact);
        assert!((p_greater(&d, 0.0) - 0.07299805).abs() < 1e-8);
        // "less": 3 below of 12 is P(K >= 3) = 1 - 79/4096 (R: binom.test(3, 12, alternative =
        // "greater")$p.value = 0.9807129).
        assert!((p_less(&d, 0.0) - 0.9807129).abs() < 1e-7);
        // Shifted: at delta = 1.5 the nine 1.0s are below, the three -2.0s below too.
        assert_eq!(
            counts(&d, 1.5),
            Counts {
                above: 0,
                below: 12,
                ambiguous: 0
            }
        );
        assert!((p_less(&d, 1.5) * 4096.0 - 1.0).abs() < TWO_BETA_ROUTES);
        // The far tail keeps its relative accuracy: 60 of 60 is 2^-60 = 8.673617e-19 (R:
        // binom.test(60, 60, alternative = "greater")$p.value).
        let all = ex(&[0.5; 60]);
        assert!((p_greater(&all, 0.0) * 2f64.powi(60) - 1.0).abs() < TWO_BETA_ROUTES);
        assert!((upper_tail(0, 5) - 1.0).abs() < 1e-15 && upper_tail(6, 5) < 1e-300);
        // Nothing to test: p = 1.
        assert!((p_two_sided(&[], 0.0) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn classification_of_ties_and_intervals() {
        let o = |lo, hi| Obs::between(lo, hi).unwrap();
        let d = [
            o(0.0, 0.0),               // an exact tie: ambiguous
            o(0.0, 1.0),               // closed at delta: ambiguous
            o(-1.0, 0.0),              // likewise
            o(1e-300, 1.0),            // certainly above
            o(-1.0, -1e-300),          // certainly below
            o(f64::NEG_INFINITY, 2.0), // left-censored above delta: ambiguous
            o(3.0, f64::INFINITY),     // right-censored above delta: above
        ];
        assert_eq!(
            counts(&d, 0.0),
            Counts {
                above: 2,
                below: 1,
                ambiguous: 4
            }
        );
        assert_eq!(counts(&d, f64::NAN).ambiguous, 7);
    }

    #[test]
    fn touching_brackets_are_strict_wins() {
        // Per seed, warmup's bracket [1, 2) and no-warmup's [0.5, 1), in log2 [0, 1) and
        // [-1, 0): no-warmup failed at the rate where warmup was stable, so the difference
        // (0, 2) is certainly above 0.
        let h = |lo: f64, hi: f64| Obs::half_open(lo.log2(), hi.log2()).unwrap();
        let d: Vec<Obs> = (0..10).map(|_| h(1.0, 2.0) - h(0.5, 1.0)).collect();
        assert_eq!((d[0].lo(), d[0].hi()), (0.0, 2.0));
        assert_eq!(
            counts(&d, 0.0),
            Counts {
                above: 10,
                below: 0,
                ambiguous: 0
            }
        );
        // R: binom.test(10, 10)$p.value = 0.001953125 = 2/1024.
        let p = p_two_sided(&d, 0.0);
        assert!((p - 2.0 / 1024.0).abs() <= TWO_BETA_ROUTES * p, "{p}");
        assert!((p_greater(&d, 0.0) - 1.0 / 1024.0).abs() <= TWO_BETA_ROUTES);
        // The mirror image, no-warmup above warmup, is below 0: (-2, 0).
        let m: Vec<Obs> = (0..10).map(|_| h(0.5, 1.0) - h(1.0, 2.0)).collect();
        assert_eq!(counts(&m, 0.0).below, 10);
        // Against delta = 2 (the upper end, open) the same differences are below.
        assert_eq!(counts(&d, 2.0).below, 10);
    }

    #[test]
    fn overlapping_brackets_stay_ambiguous() {
        // [1, 2) against [0.75, 1.5): the runs overlap on [1, 1.5), so the difference, in
        // log2 (log2 1 - log2 1.5, log2 2 - log2 0.75), holds 0.
        let h = |lo: f64, hi: f64| Obs::half_open(lo.log2(), hi.log2()).unwrap();
        let d: Vec<Obs> = (0..10).map(|_| h(1.0, 2.0) - h(0.75, 1.5)).collect();
        assert!(d[0].lo() < 0.0 && d[0].hi() > 0.0 && d[0].contains(0.0));
        assert_eq!(counts(&d, 0.0).ambiguous, 10);
        assert!((p_two_sided(&d, 0.0) - 1.0).abs() < 1e-15);
        // Closed at the touching end, [0, 1] - [-1, 0): (0, 2], still above 0; closed at both
        // touching ends, [0, 1] - [-1, 0], it is [0, 2], ambiguous as before.
        let half = Obs::between(0.0, 1.0).unwrap() - Obs::half_open(-1.0, 0.0).unwrap();
        assert_eq!(counts(&[half], 0.0).above, 1);
        let closed = Obs::between(0.0, 1.0).unwrap() - Obs::between(-1.0, 0.0).unwrap();
        assert_eq!(counts(&[closed], 0.0).ambiguous, 1);
    }

    #[test]
    fn ambiguous_means_the_interval_holds_delta() {
        // Random ends on a coarse grid (so ends often equal delta) with random closure: an
        // observation is ambiguous exactly when it contains delta, above exactly when every
        // member exceeds it.
        let mut rng = Rng::seed_from_u64(14);
        for _ in 0..2000 {
            let a = rng.random_range(-4..=4) as f64 * 0.5;
            let w = rng.random_range(0..=4) as f64 * 0.5;
            let (lo_open, hi_open) = (rng.random_bool(0.5), rng.random_bool(0.5));
            let Some(o) = Obs::with_ends(a, lo_open, a + w, hi_open) else {
                assert!(w == 0.0 && (lo_open || hi_open));
                continue;
            };
            for delta in [-1.0, -0.5, 0.0, 0.5, 1.0] {
                let c = counts(&[o], delta);
                assert_eq!(c.ambiguous == 1, o.contains(delta), "{o:?} {delta}");
                assert_eq!(c.above == 1, !o.contains(delta) && o.lo() >= delta);
                assert_eq!(c.below == 1, !o.contains(delta) && o.hi() <= delta);
            }
        }
    }

    #[test]
    fn exact_data_without_ties_is_the_classical_test() {
        let mut rng = Rng::seed_from_u64(11);
        for trial in 0..500 {
            let n = rng.random_range(1..=40usize);
            let shift = rng.random_range(-1.0..1.0);
            let v: Vec<f64> = (0..n)
                .map(|_| rng.random_range(-1.0..1.0) + shift)
                .collect();
            let d = ex(&v);
            let k = v.iter().filter(|x| **x > 0.0).count() as u64;
            let (pg, pl) = (p_greater(&d, 0.0), p_less(&d, 0.0));
            let (eg, el) = (
                exact_upper(k, n as u64),
                exact_upper(n as u64 - k, n as u64),
            );
            assert!(
                (pg - eg).abs() <= TWO_BETA_ROUTES * eg,
                "{trial}: {pg} {eg}"
            );
            assert!(
                (pl - el).abs() <= TWO_BETA_ROUTES * el,
                "{trial}: {pl} {el}"
            );
            let (a, b) = (p_two_sided(&d, 0.0), two_sided(&v));
            assert!((a - b).abs() <= TWO_BETA_ROUTES * b, "{trial}: {a} {b}");
        }
    }

    #[test]
    fn ambiguous_observations_take_the_worst_resolution() {
        // For each random interval sample, the one-sided p is the largest classical p over every
        // resolution of the ambiguous observations (above, below, or a tie dropped), and the
        // two-sided p bounds every resolution's classical two-sided p. Resolutions are
        // enumerated by the number resolved above (a) and dropped (t): the classical p depends on
        // the counts only.
        let mut rng = Rng::seed_from_u64(12);
        for _ in 0..300 {
            let n = rng.random_range(1..=25usize);
            let d: Vec<Obs> = (0..n)
                .map(|_| {
                    let c = rng.random_range(-1.0..1.5);
                    let w = if rng.random_bool(0.4) {
                        rng.random_range(0.0..1.5)
                    } else {
                        0.0
                    };
                    Obs::between(c - w, c + w).unwrap()
                })
                .collect();
            let c = counts(&d, 0.0);
            let (pg, pl, p2) = (p_greater(&d, 0.0), p_less(&d, 0.0), p_two_sided(&d, 0.0));
            let mut worst_g: f64 = 0.0;
            let mut worst_l: f64 = 0.0;
            for a in 0..=c.ambiguous {
                for t in 0..=c.ambiguous - a {
                    let up = c.above + a;
                    let down = c.below + (c.ambiguous - a - t);
                    let m = up + down;
                    let (g, l) = (exact_upper(up, m), exact_upper(down, m));
                    worst_g = worst_g.max(g);
                    worst_l = worst_l.max(l);
                    let classical = (2.0 * g.min(l)).min(1.0);
                    assert!(
                        p2 >= classical * (1.0 - TWO_BETA_ROUTES),
                        "{p2} < {classical}"
                    );
                }
            }
            assert!(
                (pg - worst_g).abs() <= TWO_BETA_ROUTES * worst_g,
                "{pg} {worst_g}"
            );
            assert!(
                (pl - worst_l).abs() <= TWO_BETA_ROUTES * worst_l,
                "{pl} {worst_l}"
            );
        }
    }

    #[test]
    fn widening_an_observation_never_lowers_a_p_value() {
        // Replacing exact values by intervals containing them (coarsening) can only raise each p.
        let mut rng = Rng::seed_from_u64(13);
        for _ in 0..300 {
            let n = rng.random_range(1..=30usize);
            let v: Vec<f64> = (0..n).map(|_| rng.random_range(-0.5..1.5)).collect();
            let exact = ex(&v);
            let wide: Vec<Obs> = v
                .iter()
                .map(|&x| {
                    let (l, h) = (rng.random_range(0.0..1.0), rng.random_range(0.0..1.0));
                    Obs::between(x - l, x + h).unwrap()
                })
                .collect();
            for delta in [-0.5, 0.0, 0.3] {
                assert!(p_greater(&wide, delta) >= p_greater(&exact, delta));
                assert!(p_less(&wide, delta) >= p_less(&exact, delta));
                assert!(p_two_sided(&wide, delta) >= p_two_sided(&exact, delta));
            }
        }
    }
}
