//! The Wilson score interval for a binomial rate (Wilson 1927, JASA 22:209; Brown, Cai and
//! DasGupta 2001, Statist. Sci. 16:101, eq. 4):
//!
//! ```text
//! p = k/n,  c = (p + z^2/(2n)) / (1 + z^2/n),
//! h = z / (1 + z^2/n) * sqrt(p (1 - p)/n + z^2/(4 n^2)),   interval [c - h, c + h]
//! ```
//!
//! with `z` = [`super::z`]. Unlike the Wald interval it stays inside [0, 1] and is not empty at
//! k = 0: 0 of 20 gives [0, 0.161].

/// The Wilson [`super::LEVEL`] interval of `k` successes in `n` trials; `(0, 1)` when `n = 0`.
///
/// # Examples
///
/// 8 of 10 at 95%: by the formula with `z = 1.959964`, `c = (0.8 + 0.192073)/1.384146 =
/// 0.716740` and `h = 0.226577`, so `[0.4902, 0.9433]` (R: `prop.test(8, 10, correct =
/// FALSE)$conf.int` = 0.4901625 0.9433178). 0 of 20 still allows 16.1%.
///
/// ```rust
/// use normscope_core::stats::wilson::interval;
///
/// let (lo, hi) = interval(8, 10);
/// assert!((lo - 0.4901625).abs() < 1e-7 && (hi - 0.9433178).abs() < 1e-7);
/// // The same from the module's formula, written out.
/// let (z, n, p) = (1.959963984540054_f64, 10.0, 0.8);
/// let c = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
/// let h = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
/// assert!((lo - (c - h)).abs() < 1e-14 && (hi - (c + h)).abs() < 1e-14);
///
/// // k = 0: [0, z^2/(n + z^2)] = [0, 0.1611].
/// let (lo, hi) = interval(0, 20);
/// assert_eq!(lo, 0.0);
/// assert!((hi - z * z / (20.0 + z * z)).abs() < 1e-15);
/// assert_eq!(interval(0, 0), (0.0, 1.0));
/// ```
pub fn interval(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let z = super::z();
    let p = k / n;
    let z2n = z * z / n;
    let c = (p + z2n / 2.0) / (1.0 + z2n);
    let h = z / (1.0 + z2n) * (p * (1.0 - p) / n + z2n / (4.0 * n)).sqrt();
    ((c - h).max(0.0), (c + h).min(1.0))
}

#[cfg(test)]
// Exact values: these cases are exactly representable (medians of integers, p = 1, k = 0).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_values() {
        // docs/training.md, "Statistics, fixed before the data": 0 of 20 still allows about 16%. Closed form at k = 0:
        // [0, z^2/(n + z^2)].
        let z2 = super::super::z().powi(2);
        let (lo, hi) = interval(0, 20);
        assert_eq!(lo, 0.0);
        assert!((hi - z2 / (20.0 + z2)).abs() < 1e-15);
        assert!((hi - 0.1611).abs() < 1e-4);
        // Brown, Cai and DasGupta 2001 (Table 1 setting) / R's prop.test(correct = FALSE):
        // 15 of 20 gives [0.5313, 0.8881].
        let (lo, hi) = interval(15, 20);
        assert!(
            (lo - 0.5313).abs() < 1e-4 && (hi - 0.8881).abs() < 1e-4,
            "{lo} {hi}"
        );
        // Symmetry: k of n and n - k of n mirror each other.
        let (a, b) = interval(3, 17);
        let (c, d) = interval(14, 17);
        assert!((a - (1.0 - d)).abs() < 1e-15 && (b - (1.0 - c)).abs() < 1e-15);
        assert_eq!(interval(0, 0), (0.0, 1.0));
    }
}
