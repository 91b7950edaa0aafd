//! Seeded percentile-bootstrap intervals (Efron and Tibshirani 1993, An Introduction to the
//! Bootstrap, section 13.3): resample the `n` observations with replacement [`RESAMPLES`]
//! times from a stream fixed by the seed, compute the statistic on each resample, and take the
//! `(1 - LEVEL)/2` and `(1 + LEVEL)/2` empirical quantiles (type 7, R's default) of those values.

use normscope_numeric::rng::{Rng, config_hash, splitmix64};
use rand::{RngExt, SeedableRng};

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2000;

/// The sample median (mean of the two middle values when `n` is even); NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

/// The type-7 empirical quantile `q` of `v` (linear between order statistics; R's default).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = (s.len() - 1) as f64 * q;
    let (i, f) = (h.floor() as usize, h - h.floor());
    if i + 1 < s.len() {
        s[i] + f * (s[i + 1] - s[i])
    } else {
        s[i]
    }
}

/// The percentile interval of `stat` over [`RESAMPLES`] resamples of the indices `0..n`, drawn
/// from a stream fixed by `seed` (and a label, so two statistics with one seed differ).
pub fn interval(n: usize, seed: u64, stat: impl Fn(&[usize]) -> f64) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = Rng::seed_from_u64(splitmix64(
        splitmix64(seed) ^ config_hash("normscope-bootstrap-v1"),
    ));
    let mut idx = vec![0usize; n];
    let mut values = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for i in idx.iter_mut() {
            *i = rng.random_range(0..n);
        }
        let v = stat(&idx);
        if v.is_finite() {
            values.push(v);
        }
    }
    let a = (1.0 - super::LEVEL) / 2.0;
    (quantile(&values, a), quantile(&values, 1.0 - a))
}

/// The median of `v` and its bootstrap interval.
///
/// # Examples
///
/// The sample median is exact; the interval is fixed by the seed and lies within the data's
/// range (every resample's median does). Type-7 quantiles as R's `quantile`:
/// `quantile(c(1, 2, 3, 4, 10), 0.1) = 1.4`.
///
/// ```rust
/// use normscope_core::stats::bootstrap::{median, median_interval, quantile};
///
/// let v = [3.0, 1.0, 4.0, 1.5, 2.0];
/// let (m, lo, hi) = median_interval(&v, 7);
/// assert_eq!(m, 2.0);
/// assert!(1.0 <= lo && lo <= m && m <= hi && hi <= 4.0);
/// assert_eq!(median_interval(&v, 7), (m, lo, hi));
/// assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
/// assert!((quantile(&[10.0, 1.0, 2.0, 3.0, 4.0], 0.1) - 1.4).abs() < 1e-15);
/// ```
pub fn median_interval(v: &[f64], seed: u64) -> (f64, f64, f64) {
    let (lo, hi) = interval(v.len(), seed, |idx| {
        median(&idx.iter().map(|&i| v[i]).collect::<Vec<_>>())
    });
    (median(v), lo, hi)
}

#[cfg(test)]
// Exact values: these cases are exactly representable (medians of integers, p = 1, k = 0).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    #[test]
    fn quantiles_and_medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        // R: quantile(c(1, 2, 3, 4, 10), 0.1) = 1.4 (type 7).
        assert!((quantile(&[10.0, 1.0, 2.0, 3.0, 4.0], 0.1) - 1.4).abs() < 1e-15);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn median_interval_is_seeded_and_covers() {
        let mut rng = Rng::seed_from_u64(7);
        let n = Normal::new(5.0, 1.0).unwrap();
        let v: Vec<f64> = (0..200).map(|_| n.sample(&mut rng)).collect();
        let (m, lo, hi) = median_interval(&v, 1);
        assert_eq!(median_interval(&v, 1), (m, lo, hi));
        assert_ne!(median_interval(&v, 2), (m, lo, hi));
        assert!(lo < m && m < hi);
        // The median's asymptotic standard error is sqrt(pi/2)/sqrt(n) = 0.0886 for sigma = 1,
        // so a 95% interval is about 0.35 wide; allow a factor of two either way (resampling and
        // the sample's own spread).
        let w = hi - lo;
        assert!(w > 0.17 && w < 0.7, "width {w}");
        // The population median 5 lies within the interval (fixed seed; a 95% event).
        assert!(lo < 5.0 && 5.0 < hi, "[{lo}, {hi}]");
    }
}
