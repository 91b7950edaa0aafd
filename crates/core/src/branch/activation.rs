//! The MLP branch's activation, defined once for both engines: the pointwise `phi` and
//! `phi'` the sampled networks apply ([`Activation::value`], [`Activation::derivative`]), and
//! the Gaussian kernels the closed form needs, `E[phi(x) phi(y)]` for a centered Gaussian pair
//! and `E[phi'(x)^2]`.
//!
//! ReLU uses the arc-cosine kernel of degree 1 (Cho and Saul 2009):
//! `E[relu(x) relu(y)] = sqrt(va vb) (sqrt(1 - rho^2) + (pi - arccos rho) rho) / (2 pi)`.
//!
//! GELU (`x Phi(x)`, exact erf form) has exact kernels too (Tsuchida et al. 2021, "Avoiding
//! kernel fixed points: computing with ELU and GELU infinite networks", derived here by
//! Gaussian integration by parts). For `Var x = a`, `Var y = b`, `Cov = c`, with
//! `P = (1 + a)(1 + b)` and `D = sqrt(P - c^2)`:
//!
//! - `E[Phi(x) Phi(y)] = 1/4 + arcsin(c / sqrt(P)) / (2 pi)` (an orthant probability);
//! - `E[gelu(x) gelu(y)] = c (1/4 + arcsin(c / sqrt P) / (2 pi)) + (a b D^2 + c^2) / (2 pi P D)`;
//! - `E[gelu'(x)^2] = 1/4 + arcsin(v/(1+v)) / (2 pi) + v / (pi (1+v) sqrt(1+2v))
//!   + v / (2 pi (1+2v)^(3/2))` for `x ~ N(0, v)`.
//!
//! They replace a fixed 96-node Gauss-Hermite rule whose error grew with the variance (2e-3
//! relative at v = 16, 6e-2 at v = 100: GELU's bend near 0 falls between the nodes). Near
//! `c = -sqrt(a b)` at large variance the pair kernel is a small difference of O(sqrt v)
//! terms; [`gelu_pair`] rearranges it so that no digits are lost (see its doc). Checked
//! against 40-digit mpmath quadrature over v in [1e-3, 1e4] and every correlation
//! (`tests/reference/gelu_moments.csv`).

use std::f64::consts::PI;

/// A pointwise nonlinearity of an MLP branch.
///
/// # Examples
///
/// ReLU's Gaussian moments by hand: `E[relu(x)^2] = v/2`, `E[relu'(x)^2] = 1/2`, and at
/// correlation 1 the arc-cosine kernel is `sqrt(va vb) pi / (2 pi) = 1/2` for unit variances.
/// GELU is `x Phi(x)`, so `gelu(0) = 0` and `gelu'(0) = Phi(0) = 1/2`.
///
/// ```rust
/// use normscope_core::branch::Activation;
///
/// let r = Activation::Relu;
/// assert_eq!((r.value(-2.0), r.value(3.0)), (0.0, 3.0));
/// assert_eq!((r.derivative(-2.0), r.derivative(3.0)), (0.0, 1.0));
/// assert_eq!(r.second_moment(2.0), 1.0);
/// assert_eq!(r.deriv_second_moment(2.0), 0.5);
/// assert_eq!(r.pair_moment(1.0, 1.0, 1.0), 0.5);
/// // Independent inputs: E[relu(x)] E[relu(y)] = (1/sqrt(2 pi))^2 = 1/(2 pi).
/// let indep = r.pair_moment(1.0, 1.0, 0.0);
/// assert!((indep - 1.0 / (2.0 * std::f64::consts::PI)).abs() < 1e-15);
///
/// let g = Activation::Gelu;
/// assert_eq!((g.value(0.0), g.derivative(0.0)), (0.0, 0.5));
/// // The pair kernel at a = b = c = v is the second moment.
/// assert!((g.pair_moment(1.7, 1.7, 1.7) - g.second_moment(1.7)).abs() < 1e-14);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `max(0, x)`.
    Relu,
    /// `x Phi(x)` (Hendrycks and Gimpel 2016), exact (erf) form.
    Gelu,
}

fn std_cdf(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

fn std_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * PI).sqrt()
}

/// GELU, exact form.
pub fn gelu(x: f64) -> f64 {
    x * std_cdf(x)
}

/// Derivative of GELU: `Phi(x) + x phi(x)`.
pub fn gelu_prime(x: f64) -> f64 {
    std_cdf(x) + x * std_pdf(x)
}

/// `atan(v / sqrt(1 + 2v)) = arcsin(v / (1 + v))`, the angle in GELU's moments, in the form that
/// stays accurate as `v / (1 + v)` approaches 1.
fn gelu_angle(v: f64) -> f64 {
    (v / root_1_2v(v)).atan()
}

/// `sqrt(1 + 2v)`, as `sqrt(2) sqrt(v) sqrt(1 + 1/(2v))` above [`SCALED_ABOVE`] so that it stays
/// finite up to `v = f64::MAX` (`1 + 2v` overflows above 9e307).
fn root_1_2v(v: f64) -> f64 {
    if v > SCALED_ABOVE {
        std::f64::consts::SQRT_2 * v.sqrt() * (1.0 + 0.5 / v).sqrt()
    } else {
        (1.0 + 2.0 * v).sqrt()
    }
}

/// `E[gelu(x)^2]` for `x ~ N(0, v)`: `v/4 + v arcsin(v/(1+v)) / (2 pi)
/// + v^2 / (pi (1+v) sqrt(1+2v))`, the pair kernel at `a = b = c = v` (every term positive).
pub(crate) fn gelu_second_moment(v: f64) -> f64 {
    let r = root_1_2v(v);
    let last = if v > SCALED_ABOVE {
        // `v^2` would overflow past 1e154; `v / (1 + v)` first keeps every factor finite.
        v * (v / (1.0 + v)) / (PI * r)
    } else {
        v * v / (PI * (1.0 + v) * r)
    };
    v / 4.0 + v * gelu_angle(v) / (2.0 * PI) + last
}

/// Above this variance or covariance (2^200, about 1.6e60) the GELU kernels are evaluated in
/// rescaled variables, because products such as `a b D^2` (of order `v^4`) would overflow f64
/// from about 1e77. Below it the direct form is used, so results there are unchanged.
pub const SCALED_ABOVE: f64 = 1.606_938_044_258_990_3e60;

/// `E[gelu'(x)^2]` for `x ~ N(0, v)`: expanding `(Phi + x phi)^2`, `E[Phi(x)^2] = 1/4 +
/// arcsin(v/(1+v))/(2 pi)`, `E[x Phi(x) phi(x)] = v / (2 pi (1+v) sqrt(1+2v))` and
/// `E[x^2 phi(x)^2] = v / (2 pi (1+2v)^(3/2))` (each a Gaussian integral in closed form).
pub(crate) fn gelu_deriv_second_moment(v: f64) -> f64 {
    let r = root_1_2v(v);
    0.25 + gelu_angle(v) / (2.0 * PI) + v / (PI * (1.0 + v) * r) + v / (2.0 * PI * r * r * r)
}

/// `t - atan(t)` without cancellation: its Taylor series `t^3/3 - t^5/5 + ...` below 0.1
/// (terms shrink by `t^2 <= 0.01`, so 9 terms reach 1e-18 relative), the difference above.
fn t_minus_atan(t: f64) -> f64 {
    if t >= 0.1 {
        return t - t.atan();
    }
    let t2 = t * t;
    let mut term = t * t2;
    let mut sum = 0.0;
    for k in 0..9 {
        let n = (2 * k + 3) as f64;
        sum += if k % 2 == 0 { term / n } else { -term / n };
        term *= t2;
    }
    sum
}

/// `E[gelu(x) gelu(y)]` for a centered Gaussian pair with `Var x = a`, `Var y = b`,
/// `Cov = c` (Tsuchida et al. 2021; module doc):
/// `2 pi E = c atan2(D, -c) + (a b D^2 + c^2) / (P D)`, `P = (1+a)(1+b)`, `D^2 = P - c^2`.
///
/// `D^2 = s + w` with `s = 1 + a + b` and `w = a b - c^2 >= 0`, the latter by an exact
/// two-product so that it keeps its digits when `c^2` is close to `a b`. For `c < 0` with
/// `u = -c > D` (strong anticorrelation) the two terms nearly cancel; writing
/// `u atan(D/u) = D - u (T - atan T)` with `T = D/u` turns the difference into
/// `2 pi E = u (T - atan T) - (s^2 - a b + w (1 + s)) / (P D)`, two terms of at most
/// comparable size.
pub fn gelu_pair(a: f64, b: f64, c: f64) -> f64 {
    if a.max(b).max(c.abs()) > SCALED_ABOVE {
        return gelu_pair_scaled(a, b, c);
    }
    let s = 1.0 + a + b;
    let ab = a * b;
    let c2 = c * c;
    let c2_err = c.mul_add(c, -c2);
    let w = (a.mul_add(b, -c2) - c2_err).max(0.0);
    let p = s + ab;
    let d = (s + w).sqrt();
    let u = -c;
    let two_pi_e = if u > d {
        u * t_minus_atan(d / u) - (s * s - ab + w * (1.0 + s)) / (p * d)
    } else {
        c * d.atan2(-c) + (ab * d * d + c2) / (p * d)
    };
    two_pi_e / (2.0 * PI)
}

/// [`gelu_pair`] for variances beyond [`SCALED_ABOVE`]: the same two forms in the variables
/// `A = a m`, `B = b m`, `C = c m` with `m = 2^-k` (an exact scaling, `2^k >= max(a, b, |c|)`),
/// so every intermediate stays within f64 up to `a, b = f64::MAX`. With `Dm = D m`,
/// `Pm2 = P m^2 = (m + A)(m + B)` and `Sm2 = s m^2 = m (m + A + B)`:
///
/// - `(a b D^2 + c^2) / (P D) = (A B / Pm2) (Dm / m) + (C^2 / Pm2) (m / Dm)`;
/// - `(s^2 - a b + w (1 + s)) / (P D) = (s D^2 - c^2) / (P D)
///   = (Sm2 / Pm2) (Dm / m) - (C^2 / Pm2) (m / Dm)`.
pub fn gelu_pair_scaled(a: f64, b: f64, c: f64) -> f64 {
    let top = a.max(b).max(c.abs());
    // 2^-1022 at most: 2^-1024 would be subnormal-rounded to 0 by powi. A, B <= 2 then.
    let k = (top.log2().ceil() as i32).min(1022);
    let m = 2f64.powi(-k);
    let (sa, sb, sc) = (a * m, b * m, c * m);
    let c2 = sc * sc;
    let c2_err = sc.mul_add(sc, -c2);
    let w = (sa.mul_add(sb, -c2) - c2_err).max(0.0);
    let sm2 = m * (m + sa + sb);
    let pm2 = (m + sa) * (m + sb);
    let dm = (sm2 + w).sqrt();
    let d_true = dm / m;
    let inv_d = m / dm;
    let u = -sc;
    let two_pi_e = if u > dm {
        let t = dm / u;
        -c * t_minus_atan(t) - ((sm2 / pm2) * d_true - (c2 / pm2) * inv_d)
    } else {
        c * dm.atan2(-sc) + (sa * sb / pm2) * d_true + (c2 / pm2) * inv_d
    };
    two_pi_e / (2.0 * PI)
}

impl Activation {
    /// `E[phi(x) phi(y)]` for centered Gaussians with `Var x = va`, `Var y = vb`, `Cov = cab`.
    pub fn pair_moment(self, va: f64, vb: f64, cab: f64) -> f64 {
        if va <= 0.0 || vb <= 0.0 {
            return 0.0;
        }
        match self {
            Activation::Relu => {
                // sqrt(va vb), taken factor by factor only when the product would overflow.
                let product = va * vb;
                let root = if product.is_finite() {
                    product.sqrt()
                } else {
                    va.sqrt() * vb.sqrt()
                };
                let rho = (cab / root).clamp(-1.0, 1.0);
                root * ((1.0 - rho * rho).sqrt() + (PI - rho.acos()) * rho) / (2.0 * PI)
            }
            Activation::Gelu => gelu_pair(va, vb, cab),
        }
    }

    /// `E[phi(x)^2]`, `x ~ N(0, v)`.
    pub fn second_moment(self, v: f64) -> f64 {
        match self {
            Activation::Relu => v.max(0.0) / 2.0,
            Activation::Gelu => gelu_second_moment(v.max(0.0)),
        }
    }

    /// `E[phi'(x)^2]`, `x ~ N(0, v)`.
    pub fn deriv_second_moment(self, v: f64) -> f64 {
        match self {
            Activation::Relu => 0.5,
            Activation::Gelu => gelu_deriv_second_moment(v.max(0.0)),
        }
    }

    /// `phi(x)`.
    pub fn value(self, x: f64) -> f64 {
        match self {
            Activation::Relu => x.max(0.0),
            Activation::Gelu => gelu(x),
        }
    }

    /// `phi'(x)` (ReLU: 1 for x > 0, else 0).
    pub fn derivative(self, x: f64) -> f64 {
        match self {
            Activation::Relu => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Activation::Gelu => gelu_prime(x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `E[relu(x) relu(y)]` by Simpson's rule over x > 0 of `x E[relu(y) | x] p(x)`, with the
    /// closed form `E[relu(Y)] = mu Phi(mu/s) + s phi(mu/s)` for `Y ~ N(mu, s^2)`.
    fn relu_pair_by_simpson(va: f64, vb: f64, cab: f64, n: usize) -> f64 {
        let sa = va.sqrt();
        let s = (vb - cab * cab / va).max(0.0).sqrt();
        let f = |x: f64| {
            let mu = cab / va * x;
            let ey = mu * std_cdf(mu / s) + s * std_pdf(mu / s);
            x * ey * std_pdf(x / sa) / sa
        };
        let top = 14.0 * sa;
        let h = top / n as f64;
        let mut acc = f(0.0) + f(top);
        for i in 1..n {
            acc += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        acc * h / 3.0
    }

    #[test]
    fn relu_kernel_matches_simpson_route() {
        // Simpson's own error is estimated from 10000 vs 20000 panels (it shrinks 16-fold per
        // halving); the closed form must agree within ten times that plus 1e-11 relative: the
        // route's integrand goes through statrs' erfc and the cancellation in
        // mu Phi + s phi, which measured ~6e-12 relative against mpmath at 30 digits.
        // Negative correlations make mu Phi(mu/s) + s phi(mu/s) cancel catastrophically in the
        // route itself; that case is checked against mpmath below instead.
        for &(va, vb, c) in &[(1.0, 2.0, 0.5), (3.0, 0.5, 0.9), (1.0, 1.0, 0.0)] {
            let cab = c * f64::sqrt(va * vb);
            let a = Activation::Relu.pair_moment(va, vb, cab);
            let b1 = relu_pair_by_simpson(va, vb, cab, 10_000);
            let b2 = relu_pair_by_simpson(va, vb, cab, 20_000);
            let tol =
                10.0 * (b1 - b2).abs() + normscope_numeric::tolerance::ERFC_CANCELLATION * b2.abs();
            assert!(
                (a - b2).abs() <= tol,
                "{va} {vb} {c}: {a} vs {b2} (tol {tol})"
            );
        }
    }

    #[test]
    fn relu_kernel_matches_mpmath_reference() {
        // mpmath 1.3 at 30 digits, quad of the conditional integral on [0, inf) and the
        // arc-cosine formula both give 0.0306739859194251498 for va = 3, vb = 0.5, rho = -0.7.
        let cab = -0.7 * f64::sqrt(1.5);
        let a = Activation::Relu.pair_moment(3.0, 0.5, cab);
        assert!(
            (a - 0.030_673_985_919_425_15).abs() < normscope_numeric::tolerance::MPMATH_REFERENCE,
            "{a}"
        );
    }

    #[test]
    fn gelu_second_moment_is_consistent() {
        let v = 1.7;
        let a = Activation::Gelu.second_moment(v);
        let b = Activation::Gelu.pair_moment(v, v, v);
        assert!((a - b).abs() < normscope_numeric::tolerance::ACCUMULATED * a);
    }
}
