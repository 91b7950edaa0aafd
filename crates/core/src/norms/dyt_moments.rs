//! DyT's Gaussian moments, what a mean-field recursion needs of `tanh(alpha z)` at a centred
//! Gaussian input (Zhu et al. 2025's DyT, [`super::dyt`]):
//!
//! ```text
//! second_moment(s)       = E[tanh^2(s Z)]                       Z ~ N(0, 1), s = alpha sqrt(q)
//! deriv_second_moment(s) = E[sech^4(s Z)]                       (J's mean square: alpha^2 times it)
//! pair_moment(a, b, rho) = E[tanh(a X) tanh(b Y)]               X, Y ~ N(0, 1), Cov = rho
//! ```
//!
//! None has a closed form. Each is `2 int_0^inf f(z) phi(z) dz` evaluated with the
//! double-exponential rule of the `quadrature` crate (John D. Cook's, to an absolute target
//! of [`REL_TARGET`] times the integral's size) on panels split at `2^k / s` and at `2^k`, so
//! that both of the integrand's scales, the tanh's `1/s` and the Gaussian's 1, start and end
//! panels: the accuracy does not depend on `s` (the GELU lesson, [`crate::branch::activation`]:
//! a fixed rule's error grew with the variance). Checked against 30-digit mpmath quadrature
//! for `s` from 1e-3 to 1e4 (agreement to 1e-13 relative) and against the series and
//! asymptotes in the tests.
//! The pair moment integrates over `X` the inner mean `E_W[tanh(b (rho x + sqrt(1 - rho^2) W))]`,
//! itself such an integral, whose step at `W = rho x / sqrt(1 - rho^2)` gets panels of its own
//! (without them the arcsine limit was missed by 3e-5 at large `b`): about 45 microseconds per
//! second moment, but about 0.15 s per pair moment, which the closed form pays once per DyT
//! slot and block (`theory::norm_map` keeps each map it computed, and uses the series of the
//! correlation where `s` is small).

/// The integrals are evaluated to this many times their size (absolute error target per
/// panel).
pub const REL_TARGET: f64 = 1e-15;

/// Beyond this many standard deviations the Gaussian density is below `1e-300` relative.
const Z_MAX: f64 = 38.0;

/// The standard normal density.
fn phi(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Panel ends on `[0, Z_MAX]`: `2^k / s` and `2^k` for k >= -4, sorted.
fn breaks(s: f64) -> Vec<f64> {
    let mut b: Vec<f64> = (-4..8)
        .flat_map(|k| {
            let p = 2f64.powi(k);
            [p / s, p]
        })
        .filter(|x| x.is_finite() && *x > 0.0 && *x < Z_MAX)
        .collect();
    b.push(0.0);
    b.push(Z_MAX);
    b.sort_by(f64::total_cmp);
    b.dedup();
    b
}

/// `int_0^Z_MAX f(z) phi(z) dz` over the panels of [`breaks`]`(s)`, each to `target`.
fn half_line(s: f64, target: f64, f: impl Fn(f64) -> f64) -> f64 {
    integrate_over(&breaks(s), target, f)
}

/// [`half_line`] for an integrand whose step of width `1/s` sits at `center >= 0` as well as
/// at 0: the panels of [`breaks`] plus `center` and `center +- 2^k / s`.
fn half_line_at(s: f64, center: f64, target: f64, f: impl Fn(f64) -> f64) -> f64 {
    let mut b = breaks(s);
    if center > 0.0 && center < Z_MAX {
        b.push(center);
        for k in -4..8 {
            let p = 2f64.powi(k) / s;
            b.extend([center - p, center + p]);
        }
        b.retain(|x| x.is_finite() && *x >= 0.0 && *x <= Z_MAX);
        b.sort_by(f64::total_cmp);
        b.dedup();
    }
    integrate_over(&b, target, f)
}

/// `int f(z) phi(z) dz` over the panels between consecutive `breaks`, each to `target`.
fn integrate_over(breaks: &[f64], target: f64, f: impl Fn(f64) -> f64) -> f64 {
    breaks
        .windows(2)
        .map(|w| quadrature::integrate(|z| f(z) * phi(z), w[0], w[1], target).integral)
        .sum()
}

/// `E[tanh^2(s Z)]`, `s >= 0`: about `s^2 - 2 s^4` for small s, `1 - 2/(s sqrt(2 pi))` for
/// large s.
///
/// # Examples
///
/// ```rust
/// use normscope_core::norms::dyt_moments::second_moment;
/// assert_eq!(second_moment(0.0), 0.0);
/// let s = 1e-3;
/// assert!((second_moment(s) / (s * s - 2.0 * s.powi(4)) - 1.0).abs() < 1e-11);
/// // 30-digit mpmath quadrature: 0.39429449039784117.
/// assert!((second_moment(1.0) / 0.394_294_490_397_841_17 - 1.0).abs() < 1e-13);
/// ```
pub fn second_moment(s: f64) -> f64 {
    if s == 0.0 {
        return 0.0;
    }
    let size = (s * s).min(1.0);
    2.0 * half_line(s, REL_TARGET * size, |z| (s * z).tanh().powi(2))
}

/// `E[sech^4(s Z)]`, `s >= 0`: 1 at `s = 0`, about `4/(3 s sqrt(2 pi))` for large s.
pub fn deriv_second_moment(s: f64) -> f64 {
    if s == 0.0 {
        return 1.0;
    }
    let size = (1.0 / s).min(1.0);
    2.0 * half_line(s, REL_TARGET * size, |z| {
        let c = (s * z).cosh();
        if c.is_finite() { c.powi(-4) } else { 0.0 }
    })
}

/// `E[tanh(a X) tanh(b Y)]` for standard normals with correlation `rho` in `[-1, 1]`, `a, b
/// >= 0`.
pub fn pair_moment(a: f64, b: f64, rho: f64) -> f64 {
    // Odd in each variable: uncorrelated tokens give exactly 0.
    if a == 0.0 || b == 0.0 || rho == 0.0 {
        return 0.0;
    }
    let rho = rho.clamp(-1.0, 1.0);
    let w = (1.0 - rho * rho).max(0.0).sqrt();
    // E_W[tanh(b (rho x + w W))], odd in x.
    let inner = |x: f64| {
        if w == 0.0 {
            return (b * rho * x).tanh();
        }
        let m = b * rho * x;
        let t = b * w;
        // E[tanh(m + t W)] = int_0^inf (tanh(m + t w) + tanh(m - t w)) phi(w) dw, whose
        // second term steps at w = |m| / t as well as the first's at 0.
        half_line_at(t, m.abs() / t, REL_TARGET * 1e-2, |v| {
            (m + t * v).tanh() + (m - t * v).tanh()
        })
    };
    let size = (a * b * rho.abs()).clamp(1e-300, 1.0);
    2.0 * half_line(a.max(b), REL_TARGET * size, |x| (a * x).tanh() * inner(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(s, E[tanh^2(sZ)], E[sech^4(sZ)])` by 30-digit mpmath quadrature (`2 * mpmath.quad` of
    /// `tanh(s z)^2 * npdf(z)` and `sech(s z)^4 * npdf(z)` over `[0, 40]` split at `1/s`, `4/s`,
    /// `16/s`, 1 and 4; mp.dps = 30), printed to 17 significant digits.
    #[allow(clippy::excessive_precision)] // mpmath's digits as printed
    const MPMATH: &[(f64, f64, f64)] = &[
        (0.001, 9.9999800000566665e-7, 0.99999800000699997),
        (0.1, 0.0098054687555324056, 0.98067024346498152),
        (0.5, 0.17351614343237185, 0.71737986160310995),
        (1.0, 0.39429449039784117, 0.46440290244826824),
        (3.0, 0.74516670799342298, 0.17422932541018908),
        (30.0, 0.97341598880602228, 0.017727592602056053),
        (1000.0, 0.99920211576731373, 0.00053192295477144597),
        (10000.0, 0.99992021154424783, 5.3192303967760535e-5),
    ];

    /// `(a, b, rho, E[tanh(aX) tanh(bY)])` by nested mpmath quadrature (mp.dps = 20).
    #[allow(clippy::excessive_precision)] // mpmath's digits as printed
    const MPMATH_PAIR: &[(f64, f64, f64, f64)] = &[
        (0.5, 0.5, 0.3, 0.051301085532197535),
        (2.0, 1.0, -0.6, -0.27393666617685795),
        (1.0, 1.0, 0.9, 0.34920335058192519),
        // Nested mpmath.quad split at the inner step |rho x| / sqrt(1 - rho^2) too.
        (3.0, 3.0, 0.3, 0.17764321754244416),
        (100.0, 100.0, 0.3, 0.19395690346234582),
        (1e4, 1e4, -0.6, -0.40966552547127612),
    ];

    #[test]
    fn moments_match_mpmath_at_every_scale() {
        for &(s, second, deriv) in MPMATH {
            assert!(
                (second_moment(s) / second - 1.0).abs() < 1e-13,
                "{s}: {}",
                second_moment(s)
            );
            assert!(
                (deriv_second_moment(s) / deriv - 1.0).abs() < 1e-13,
                "{s}: {}",
                deriv_second_moment(s)
            );
        }
        for &(a, b, rho, v) in MPMATH_PAIR {
            assert!(
                (pair_moment(a, b, rho) / v - 1.0).abs() < 1e-12,
                "{a} {b} {rho}: {}",
                pair_moment(a, b, rho)
            );
        }
    }

    #[test]
    fn small_and_large_scales_follow_their_series() {
        let sech4 = |s: f64| 1.0 - 2.0 * s * s + 7.0 * s.powi(4) - 94.0 / 3.0 * s.powi(6);
        for s in [1e-4f64, 1e-3, 1e-2] {
            // tanh^2 x = x^2 - 2/3 x^4 + 17/45 x^6 - 62/315 x^8 + ..., E[Z^2k] = (2k - 1)!!.
            let series = s * s - 2.0 * s.powi(4) + 17.0 / 3.0 * s.powi(6) - 62.0 / 3.0 * s.powi(8);
            assert!(
                (second_moment(s) / series - 1.0).abs() < 1e-12,
                "{s}: {:e}",
                second_moment(s) / series - 1.0
            );
            // sech^4 = 1 - 2 x^2 + 7/3 x^4 - 94/45 x^6 + ...: E = 1 - 2 s^2 + 7 s^4 - 94/3 s^6,
            // to the module's 1e-13.
            assert!(
                (deriv_second_moment(s) - sech4(s)).abs() < 1e-13,
                "{s}: {:e}",
                deriv_second_moment(s) - sech4(s)
            );
        }
        let root = (2.0 * std::f64::consts::PI).sqrt();
        for s in [1e4f64, 1e6, 1e9] {
            // 1 - E[tanh^2(sZ)] = E[sech^2(sZ)] = (2/(s sqrt(2 pi))) (1 - O(1/s^2)), to the
            // module's 1e-13 relative to E[tanh^2] (about 1).
            let tail = 2.0 / (s * root);
            assert!(
                (second_moment(s) - (1.0 - tail)).abs() < 1e-13 + tail / (s * s),
                "{s}: {:e}",
                second_moment(s) - (1.0 - tail)
            );
            // int sech^4 = 4/3.
            assert!(
                (deriv_second_moment(s) * s * root * 3.0 / 4.0 - 1.0).abs() < 1e-6,
                "{s}: {:e}",
                deriv_second_moment(s) * s * root * 3.0 / 4.0 - 1.0
            );
        }
    }

    #[test]
    fn the_pair_moment_approaches_the_arcsine_law() {
        // E[tanh(sX) tanh(sY)] -> E[sign X sign Y] = (2/pi) asin(rho) as s -> infinity, with
        // a correction O(1/s); at s = 1e8 it is below 1e-7.
        for rho in [-0.6, 0.3, 0.9] {
            let arcsine = std::f64::consts::FRAC_2_PI * f64::asin(rho);
            for s in [1e8, 1e50] {
                let p = pair_moment(s, s, rho);
                assert!((p - arcsine).abs() < 1e-7, "{s} {rho}: {p} vs {arcsine}");
            }
        }
    }

    #[test]
    fn the_pair_moment_meets_its_ends() {
        for s in [0.05, 0.5, 3.0, 40.0] {
            let second = second_moment(s);
            assert!((pair_moment(s, s, 1.0) / second - 1.0).abs() < 1e-12, "{s}");
            assert!(
                (pair_moment(s, s, -1.0) / second + 1.0).abs() < 1e-12,
                "{s}"
            );
            assert!(pair_moment(s, s, 0.0).abs() < 1e-300, "odd in x: exactly 0");
        }
    }
}
