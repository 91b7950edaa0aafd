//! Ordinary least squares of `y` on `x` with an intercept (the line of a log-log scaling law):
//!
//! ```text
//! slope = sum (x - mean x)(y - mean y) / sum (x - mean x)^2,   intercept = mean y - slope mean x
//! ```

/// `(slope, intercept)` of the least-squares line through `(x_i, y_i)`; NaN when the `x` do
/// not vary or fewer than two points are given.
///
/// # Examples
///
/// Through `(0, 1), (1, 3), (2, 2), (3, 4)`: `Sxy = 4`, `Sxx = 5`, so slope `0.8` and
/// intercept `2.5 - 0.8 * 1.5 = 1.3` (by hand); Anscombe's (1973) set I gives `3.0001 +
/// 0.5001 x`.
///
/// ```rust
/// use normscope_core::stats::ols::line;
///
/// let (s, c) = line(&[0.0, 1.0, 2.0, 3.0], &[1.0, 3.0, 2.0, 4.0]);
/// assert!((s - 0.8).abs() < 1e-15 && (c - 1.3).abs() < 1e-15);
///
/// let ax = [10.0, 8.0, 13.0, 9.0, 11.0, 14.0, 6.0, 4.0, 12.0, 7.0, 5.0];
/// let ay = [8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68];
/// let (s, c) = line(&ax, &ay);
/// assert!((s - 0.5001).abs() < 1e-4 && (c - 3.0001).abs() < 1e-4);
/// assert!(line(&[1.0, 1.0], &[0.0, 1.0]).0.is_nan());
/// ```
pub fn line(x: &[f64], y: &[f64]) -> (f64, f64) {
    assert_eq!(x.len(), y.len(), "one y per x");
    let n = x.len() as f64;
    if x.len() < 2 {
        return (f64::NAN, f64::NAN);
    }
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    if sxx == 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let slope = sxy / sxx;
    (slope, my - slope * mx)
}

#[cfg(test)]
// Exact values: these cases are exactly representable (medians of integers, p = 1, k = 0).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn recovers_a_line_and_refuses_a_flat_x() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let y: Vec<f64> = x.iter().map(|v| -1.0 * v + 2.5).collect();
        let (s, c) = line(&x, &y);
        assert!((s + 1.0).abs() < 1e-15 && (c - 2.5).abs() < 1e-15);
        // Anscombe's quartet, set I (Anscombe 1973): slope 0.5001, intercept 3.0001.
        let ax = [10.0, 8.0, 13.0, 9.0, 11.0, 14.0, 6.0, 4.0, 12.0, 7.0, 5.0];
        let ay = [
            8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68,
        ];
        let (s, c) = line(&ax, &ay);
        assert!((s - 0.5001).abs() < 1e-4 && (c - 3.0001).abs() < 1e-4);
        assert!(line(&[1.0, 1.0], &[0.0, 1.0]).0.is_nan());
    }
}
