//! Logarithms of standard normal probabilities that stay accurate far in the tails, for the
//! likelihood of censored observations ([`super::censored`]): `ln phi(x)`, `ln Phi(x)` and
//! `ln(Phi(b) - Phi(a))`, with `phi` the standard normal density and `Phi` its distribution
//! function (Abramowitz and Stegun 1964, Handbook of Mathematical Functions, 26.2.1 and
//! 26.2.2).
//!
//! - `Phi(x) = 1/2 + phi(x) sum_k x^(2k+1) / (1 3 5 ... (2k+1))` (A&S 26.2.11) for `|x| <=`
//!   [`CF_BELOW`]; below, Laplace's continued fraction for the Mills ratio (A&S 26.2.14),
//!   `Phi(x) = phi(x) / (z + 1/(z + 2/(z + 3/(z + ...))))` with `z = -x`, evaluated in
//!   logarithms where `Phi` heads for underflow (`Phi(-38.5)` is subnormal): `ln Phi(-40) =
//!   -804.608442013754`, not `-inf`; above, `ln Phi(x) = ln(1 - Phi(-x))` through `ln_1p`.
//!   Prototyped in Python (float64) against mpmath at 40 digits: `Phi` within 2.5e-15 relative
//!   on a grid of step 0.005 over `[-8, 8]` (the worst at -1.49, where the series' `1/2 - ...`
//!   cancels), `ln Phi` within 1e-15. statrs' `erfc` is not used: its relative error was
//!   measured at 4e-11 for `Phi(-3)` and 9e-12 for `Phi(-30)`, too coarse for `ln Phi(3) =
//!   -0.00135...` or for the far tail.
//! - `Phi(b) - Phi(a)` is mirrored (`Phi(b) - Phi(a) = Phi(-a) - Phi(-b)`) so that `a + b <=
//!   0`, keeping both ends away from the upper tail where `Phi` rounds to 1. A narrow interval
//!   (`(b - a)(1 + |m|) < `[`NARROW`], `m` its midpoint) uses the Taylor series of the
//!   integral about `m` in Hermite polynomials,
//!
//!   ```text
//!   Phi(b) - Phi(a) = 2h phi(m) sum_j He_2j(m) h^2j / (2j + 1)!,   h = (b - a)/2
//!   ```
//!
//!   (`He_{k+1} = m He_k - k He_{k-1}`), free of the cancellation a difference of two close
//!   values of `Phi` suffers. A wider interval in the lower tail (`b <= 0`) is `ln Phi(b) +
//!   ln(1 - exp(d))` with `d = ln Phi(a) - ln Phi(b) = (b^2 - a^2)/2 + ln R(a) - ln R(b)`, `R =
//!   Phi/phi` the Mills ratio, which keeps `d` accurate when both ends are far out; one around
//!   zero (`a < 0 < b`) is `ln(1 - Phi(a) - Phi(-b))`.

use std::f64::consts::PI;

/// Below `-CF_BELOW` the lower tail comes from the continued fraction, between `-CF_BELOW`
/// and `CF_BELOW` from the series (module docs).
pub const CF_BELOW: f64 = 1.5;

/// Terms of Laplace's continued fraction, evaluated from the back: converged to 2e-17
/// relative at `z = 1.5` (prototype against mpmath), faster further out.
pub(crate) const CF_TERMS: u32 = 200;

/// Intervals with `(b - a)(1 + |m|)` below this go through the Hermite series, whose terms
/// then fall at least like `0.25^2j / (2j + 1)!`.
pub const NARROW: f64 = 0.5;

/// `ln phi(x) = -x^2/2 - ln sqrt(2 pi)`.
pub(crate) fn ln_pdf(x: f64) -> f64 {
    -0.5 * x * x - 0.5 * (2.0 * PI).ln()
}

/// `phi(x)`, with `x^2` split as `x_h^2 + (x - x_h)(x + x_h)`, `x_h` a multiple of 1/16 (whose
/// square is exact), so the exponential's argument carries no rounding of `x^2` (Cody 1969,
/// Math. Comp. 23:631, who splits `x^2` so for `erfc`): relative accuracy of a few ulps far
/// out.
pub fn pdf(x: f64) -> f64 {
    if x.is_infinite() {
        return 0.0;
    }
    let xh = (x * 16.0).trunc() / 16.0;
    (-0.5 * xh * xh).exp() * (-0.5 * (x - xh) * (x + xh)).exp() / (2.0 * PI).sqrt()
}

/// Laplace's continued fraction `z + 1/(z + 2/(z + 3/(z + ...)))`, `R(-z) = 1/cf(z)`.
fn mills_cf(z: f64) -> f64 {
    let mut t = z;
    for k in (1..=CF_TERMS).rev() {
        t = z + f64::from(k) / t;
    }
    t
}

/// `Phi(x)` (no logarithm; underflows to 0 below about -38.5): the series between
/// `-CF_BELOW` and `CF_BELOW`, the continued fraction below, `1 - Phi(-x)` above.
pub fn cdf(x: f64) -> f64 {
    if x.is_nan() {
        f64::NAN
    } else if x < -CF_BELOW {
        if x == f64::NEG_INFINITY {
            return 0.0;
        }
        pdf(x) / mills_cf(-x)
    } else if x > CF_BELOW {
        1.0 - cdf(-x)
    } else {
        // sum_k x^(2k+1) / (2k+1)!!: terms of one sign, ratio x^2/(2k+3) <= 0.75 from k = 1.
        let (mut term, mut sum) = (x, x);
        for k in 1..100u32 {
            term *= x * x / f64::from(2 * k + 1);
            sum += term;
            if term.abs() <= 1e-17 * sum.abs() {
                break;
            }
        }
        0.5 + pdf(x) * sum
    }
}

/// `ln R(x)`, `R(x) = Phi(x)/phi(x)` the lower-tail Mills ratio, for `x <= 0` (module docs).
fn ln_mills_lower(x: f64) -> f64 {
    if x < -CF_BELOW {
        -mills_cf(-x).ln()
    } else {
        cdf(x).ln() - ln_pdf(x)
    }
}

/// `ln Phi(x)`, accurate to a few ulps of the result for every finite `x` (module docs);
/// `-inf` at `-inf`, 0 at `+inf`.
pub(crate) fn ln_cdf(x: f64) -> f64 {
    if x.is_nan() {
        f64::NAN
    } else if x > 0.0 {
        (-cdf(-x)).ln_1p()
    } else if x < -CF_BELOW {
        if x == f64::NEG_INFINITY {
            return f64::NEG_INFINITY;
        }
        ln_pdf(x) - mills_cf(-x).ln()
    } else {
        cdf(x).ln()
    }
}

/// `ln(Phi(b) - Phi(a))` for `a <= b`, either end possibly infinite (module docs); `-inf` when
/// `a == b`, NaN when `a > b` or either is NaN.
pub(crate) fn ln_interval(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() || a > b {
        return f64::NAN;
    }
    if a.total_cmp(&b).is_eq() {
        return f64::NEG_INFINITY;
    }
    match (a == f64::NEG_INFINITY, b == f64::INFINITY) {
        (true, true) => return 0.0,
        (true, false) => return ln_cdf(b),
        (false, true) => return ln_cdf(-a),
        (false, false) => {}
    }
    let (a, b) = if a + b > 0.0 { (-b, -a) } else { (a, b) };
    let h = (b - a) / 2.0;
    let m = a + h;
    if 2.0 * h * (1.0 + m.abs()) < NARROW {
        ln_pdf(m) + (2.0 * h).ln() + hermite_series(m, h).ln()
    } else if b <= 0.0 {
        let d = (b - a) * (b + a) / 2.0 + (ln_mills_lower(a) - ln_mills_lower(b));
        ln_cdf(b) + (-d.exp_m1()).ln()
    } else {
        (-(cdf(a) + cdf(-b))).ln_1p()
    }
}

/// `sum_j He_2j(m) h^2j / (2j + 1)!` until the terms stop mattering (module docs).
fn hermite_series(m: f64, h: f64) -> f64 {
    let (mut he_prev, mut he) = (1.0, m); // He_0, He_1
    let mut sum = 1.0;
    let mut power = h / 2.0; // h^k / (k + 1)! at k = 1
    for k in 1..60u32 {
        // Advance He_k -> He_{k+1} and the power to h^{k+1}/(k + 2)!.
        let next = m * he - f64::from(k) * he_prev;
        (he_prev, he) = (he, next);
        power *= h / f64::from(k + 2);
        if k % 2 == 1 {
            let term = he * power;
            sum += term;
            if term.abs() < 1e-18 * sum.abs() {
                break;
            }
        }
    }
    sum
}

#[cfg(test)]
// Exact values: infinities and zeros, the results of definite branches (ln_cdf(-inf) = -inf,
// ln_interval(a, a) = -inf, ln_interval over the whole line = 0).
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    /// mpmath at 60 digits (`mp.log(mp.ncdf(b) - mp.ncdf(a))`, Python 3, mpmath 1.4.1) against
    /// values of size up to ~800 computed through a few logs: ~10 ulps of the value, relative.
    const MPMATH_LOG: f64 = 4e-15;

    fn close(got: f64, want: f64, rel: f64) {
        assert!(
            (got - want).abs() <= rel * want.abs(),
            "{got} against {want}"
        );
    }

    #[test]
    fn far_tails_match_mpmath() {
        close(ln_cdf(-40.0), -804.6084420137538, MPMATH_LOG);
        close(ln_cdf(-30.0), -454.3212439563432, MPMATH_LOG);
        close(ln_cdf(-5.0), -15.064998393988725, MPMATH_LOG);
        close(ln_cdf(3.0), -0.0013508099647481938, MPMATH_LOG);
        close(ln_cdf(-1000.0), -500007.82669481216, MPMATH_LOG);
        assert!(ln_cdf(40.0) <= 0.0 && ln_cdf(40.0) > -1e-300);
        assert_eq!(ln_cdf(f64::NEG_INFINITY), f64::NEG_INFINITY);
        // The two routes agree where they meet, at -CF_BELOW: the series (used there) against
        // the continued fraction (used just below).
        let series = cdf(-CF_BELOW).ln();
        let fraction = ln_pdf(-CF_BELOW) - mills_cf(CF_BELOW).ln();
        close(series, fraction, MPMATH_LOG);
        close(series, -2.705944400823889, MPMATH_LOG); // mpmath: log(ncdf(-1.5))
    }

    #[test]
    fn intervals_match_mpmath() {
        // mpmath of the ends' exact binary values (`mp.mpf(float)`), so the decimal literals'
        // rounding is no error here.
        let cases = [
            (-31.0, -30.0, -454.32124395634327),
            (-31.0, -30.9, -481.80191862338916),
            (-30.01, -30.0, -455.67037695858596),
            (-40.0, -39.0, -765.0831565643775),
            (-38.0, -37.5, -707.6689893237726),
            (-2.0, -1.999, -9.825693812270254),
            (-1.0, 2.0, -0.2001662943244626),
            (1.0, 1.001, -8.327193937145244),
            (3.0, 4.0, -6.631467786538225),
            (-0.3, 0.2, -1.62368323886832),
            (8.0, 9.0, -35.01361859343715),
            (-1e-9, 1e-9, -20.949057189591137),
            (-20.0000002, -20.0000001, -217.03703720800388),
            // Just inside the Hermite series' range ((b - a)(1 + |m|) = 0.43, 0.46, 0.45).
            (-0.4, -0.05, -1.9989095818552414),
            (2.0, 2.15, -4.965777916476908),
            (-8.0, -7.95, -35.7084717101801),
        ];
        for (a, b, want) in cases {
            close(ln_interval(a, b), want, MPMATH_LOG);
            // Mirror symmetry: the upper tail gives the same value (mpmath itself loses it
            // there at 60 digits: Phi(31) - Phi(30) is 1 - 6e-211 minus 1 - 5e-198).
            close(ln_interval(-b, -a), want, MPMATH_LOG);
        }
        assert_eq!(ln_interval(f64::NEG_INFINITY, f64::INFINITY), 0.0);
        close(
            ln_interval(f64::NEG_INFINITY, -40.0),
            -804.6084420137538,
            MPMATH_LOG,
        );
        close(
            ln_interval(40.0, f64::INFINITY),
            -804.6084420137538,
            MPMATH_LOG,
        );
        assert_eq!(ln_interval(1.0, 1.0), f64::NEG_INFINITY);
        assert!(ln_interval(2.0, 1.0).is_nan());
    }

    #[test]
    fn branches_agree_where_they_meet() {
        // Just below and just above the narrow threshold, the Hermite series and the tail (or
        // central) formula give values that differ only by the change of the interval.
        for m in [-35.0, -20.0, -3.0, -0.4, 0.0] {
            let w = NARROW / (1.0 + f64::abs(m));
            let (w1, w2) = (w * (1.0 - 1e-9), w * (1.0 + 1e-9));
            let f = |w: f64| ln_interval(m - w / 2.0, m + w / 2.0);
            // d/dw ln P is about 1/w here: a relative change of 2e-9 in w moves it by ~2e-9.
            assert!((f(w1) - f(w2)).abs() < 1e-8, "m = {m}: {} {}", f(w1), f(w2));
        }
    }
}
