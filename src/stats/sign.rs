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

#[cfg(test)]
mod tests {
    use super::*;

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
}
