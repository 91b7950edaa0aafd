//! Estimates over independent networks: mean, standard error and a 95% Student-t confidence
//! interval (statrs), with n the number of networks. Each network contributes one value
//! (its own average over tokens: a batch mean), so the networks are the independent samples.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of every interval.
pub const LEVEL: f64 = 0.95;

/// One estimate: the sample mean with its standard error and Student-t 95% interval.
///
/// ```
/// use normscope_numeric::estimate::estimate;
/// let e = estimate(&[1.0, 2.0, 3.0, 4.0]);
/// assert_eq!((e.mean, e.n), (2.5, 4));
/// // s^2 = 5/3, stderr = sqrt(5/12); t(0.975, 3) = 3.182446305284263 (statrs, scipy).
/// assert!((e.stderr - (5.0f64 / 12.0).sqrt()).abs() < 1e-15);
/// assert!((e.ci_high - (2.5 + 3.182446305284263 * e.stderr)).abs() < 1e-12);
/// assert_eq!(e.ci_high - e.mean, e.mean - e.ci_low);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Sample mean.
    pub mean: f64,
    /// Standard error `s / sqrt(n)`.
    pub stderr: f64,
    /// Lower end of the 95% interval.
    pub ci_low: f64,
    /// Upper end of the 95% interval.
    pub ci_high: f64,
    /// Samples.
    pub n: usize,
}

/// The estimate of a sample of at least two values, summed in index order.
pub fn estimate(values: &[f64]) -> Estimate {
    let n = values.len();
    assert!(n >= 2, "an interval needs at least two samples");
    let nf = n as f64;
    // The values are scaled by a power of two near the largest |value| before summing and
    // squaring, so the mean of values near 1e308 does not overflow and the spread of values
    // near 1e-300 (or 1e300) does not underflow to 0 (or overflow). Scaling by a power of two
    // is exact, so in range the sums round exactly as unscaled ones would.
    let top = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let scale = if top > 0.0 && top.is_finite() {
        2f64.powi((top.log2().ceil() as i32).clamp(-1022, 1023))
    } else {
        1.0
    };
    let mean = values.iter().map(|v| v / scale).sum::<f64>() / nf * scale;
    let var = values
        .iter()
        .map(|v| (v / scale - mean / scale).powi(2))
        .sum::<f64>()
        / (nf - 1.0);
    let stderr = (var / nf).sqrt() * scale;
    let t = StudentsT::new(0.0, 1.0, nf - 1.0)
        .expect("n - 1 >= 1 degrees of freedom")
        .inverse_cdf(0.5 + LEVEL / 2.0);
    Estimate {
        mean,
        stderr,
        ci_low: mean - t * stderr,
        ci_high: mean + t * stderr,
        n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_interval() {
        // n = 4 values 1, 2, 3, 4: mean 2.5, s = sqrt(5/3), se = s/2; t_{0.975, 3} = 3.182446
        // (Student's t table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
        let e = estimate(&[1.0, 2.0, 3.0, 4.0]);
        let se = (5.0f64 / 3.0).sqrt() / 2.0;
        assert!((e.mean - 2.5).abs() < crate::tolerance::ROUNDING);
        assert!((e.stderr - se).abs() < crate::tolerance::ROUNDING);
        assert!((e.ci_high - (2.5 + 3.182_446 * se)).abs() < crate::tolerance::T_TABLE);
    }

    #[test]
    fn values_near_f64s_limits_keep_their_mean_and_spread() {
        // 1e308 + 1.5e308 overflows f64; the scaled sum does not. Mean 1.25e308, s = 0.5e308 /
        // sqrt(2), se = s / sqrt(2) = 0.25e308.
        let e = estimate(&[1e308, 1.5e308]);
        assert!((e.mean / 1.25e308 - 1.0).abs() < crate::tolerance::ROUNDING);
        assert!((e.stderr / 0.25e308 - 1.0).abs() < crate::tolerance::ROUNDING);
        // And near the bottom: 1e-300 and 3e-300, mean 2e-300, se 1e-300.
        let e = estimate(&[1e-300, 3e-300]);
        assert!((e.mean / 2e-300 - 1.0).abs() < crate::tolerance::ROUNDING);
        assert!((e.stderr / 1e-300 - 1.0).abs() < crate::tolerance::ROUNDING);
    }
}
