//! Fisher's exact test for two rates (Fisher 1935; Agresti 2002, Categorical Data Analysis,
//! section 3.5.1): the 2x2 table
//!
//! ```text
//!            event   no event
//! group 1      a        b
//! group 2      c        d
//! ```
//!
//! with its margins fixed makes `a` hypergeometric (population `a+b+c+d`, `a+c` events, `a+b`
//! drawn). The two-sided p-value is the probability of every table no more likely than the one
//! observed, `sum_{x : P(x) <= P(a)} P(x)` (R's `fisher.test` rule, with the same relative
//! tolerance 1e-7 for ties).

use statrs::distribution::{Discrete, Hypergeometric};

/// Relative tolerance under which a table counts as exactly as likely as the observed one.
pub(crate) const TIE: f64 = 1e-7;

/// Two-sided p-value of Fisher's exact test for `k1` events of `n1` against `k2` of `n2`.
///
/// # Examples
///
/// Fisher's tea-tasting table `[[3, 1], [1, 3]]`: `p = 34/70 = 0.4857143` (Agresti 2002,
/// Table 3.8; R: `fisher.test(matrix(c(3, 1, 1, 3), 2))$p.value`). The table `[[1, 11], [9,
/// 3]]` (1 of 12 against 9 of 12): the tables at least as unlikely are `a = 0, 1, 9, 10`, so
/// `p = 2 (C(14,12) + C(10,1) C(14,11)) / C(24,12) = 7462/2704156 = 0.002759` (R:
/// `fisher.test(matrix(c(1, 9, 11, 3), 2))$p.value = 0.002759456`).
///
/// ```rust
/// use normscope_core::stats::fisher::two_sided;
///
/// assert!((two_sided(3, 4, 1, 4) - 34.0 / 70.0).abs() < 1e-9);
/// assert!((two_sided(1, 12, 9, 12) - 7462.0 / 2704156.0).abs() < 1e-12);
/// assert!((two_sided(1, 12, 9, 12) - 0.002759456).abs() < 1e-9);
/// // Equal rates, and no events at all: p = 1.
/// assert!((two_sided(5, 10, 5, 10) - 1.0).abs() < 1e-12);
/// assert_eq!(two_sided(0, 20, 0, 20), 1.0);
/// ```
pub fn two_sided(k1: u64, n1: u64, k2: u64, n2: u64) -> f64 {
    assert!(k1 <= n1 && k2 <= n2, "events cannot exceed trials");
    let (total, events) = (n1 + n2, k1 + k2);
    if n1 == 0 || n2 == 0 || events == 0 || events == total {
        return 1.0;
    }
    let h = Hypergeometric::new(total, events, n1).expect("margins are consistent");
    let lo = events.saturating_sub(n2);
    let hi = events.min(n1);
    let p_obs = h.pmf(k1);
    let p: f64 = (lo..=hi)
        .map(|x| h.pmf(x))
        .filter(|&q| q <= p_obs * (1.0 + TIE))
        .sum();
    p.min(1.0)
}

#[cfg(test)]
// Exact values: these cases are exactly representable (medians of integers, p = 1, k = 0).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_values() {
        // Fisher's tea-tasting table [[3, 1], [1, 3]]: two-sided p = 0.4857 (Agresti 2002,
        // Table 3.8; R: fisher.test(matrix(c(3, 1, 1, 3), 2))$p.value = 0.4857143).
        assert!((two_sided(3, 4, 1, 4) - 0.4857142857).abs() < 1e-9);
        // Complete separation 10/10 against 0/10: 2 / C(20, 10) = 1.0825e-5.
        // statrs evaluates the pmf through log-factorials: relative error near 1e-12.
        assert!((two_sided(10, 10, 0, 10) * 184_756.0 / 2.0 - 1.0).abs() < 1e-9);
        // Equal rates: p = 1; a table and its transpose of groups give the same p.
        assert!((two_sided(5, 10, 5, 10) - 1.0).abs() < 1e-12);
        assert!((two_sided(2, 9, 7, 12) - two_sided(7, 12, 2, 9)).abs() < 1e-12);
        assert_eq!(two_sided(0, 20, 0, 20), 1.0);
    }
}
