//! Holm's step-down correction for `m` comparisons (Holm 1979, Scand. J. Statist. 6:65): with
//! the p-values sorted, `p_(1) <= ... <= p_(m)`, the adjusted values are
//!
//! ```text
//! q_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))
//! ```
//!
//! (R's `p.adjust(method = "holm")`); rejecting where `q < alpha` controls the family-wise
//! error rate at `alpha`.

/// Holm-adjusted p-values, in the order given.
///
/// # Examples
///
/// R: `p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm")` gives `0.03 0.06 0.06 0.02`: sorted,
/// `4 * 0.005 = 0.02`, `3 * 0.01 = 0.03`, `2 * 0.03 = 0.06`, then `max(0.06, 1 * 0.04)`.
///
/// ```rust
/// use normscope_core::stats::holm::adjust;
///
/// let q = adjust(&[0.01, 0.04, 0.03, 0.005]);
/// for (a, b) in q.iter().zip([0.03, 0.06, 0.06, 0.02]) {
///     assert!((a - b).abs() < 1e-15, "{q:?}");
/// }
/// // Capped at 1.
/// assert_eq!(adjust(&[0.6, 0.9]), vec![1.0, 1.0]);
/// ```
pub fn adjust(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (j, &i) in order.iter().enumerate() {
        running = running.max(((m - j) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

#[cfg(test)]
// Exact values: these cases are exactly representable (medians of integers, p = 1, k = 0).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn matches_r_p_adjust() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02.
        let q = adjust(&[0.01, 0.04, 0.03, 0.005]);
        for (a, b) in q.iter().zip([0.03, 0.06, 0.06, 0.02]) {
            assert!((a - b).abs() < 1e-15, "{q:?}");
        }
        assert_eq!(adjust(&[0.5]), vec![0.5]);
        assert_eq!(adjust(&[0.6, 0.9]), vec![1.0, 1.0]);
        assert!(adjust(&[]).is_empty());
    }
}
