//! The MLP branch's activation, defined once for both engines: the pointwise `phi` and
//! `phi'` the sampled networks apply ([`Activation::value`], [`Activation::derivative`]), and
//! the Gaussian kernels the closed form needs, `E[phi(x) phi(y)]` for a centered Gaussian pair
//! and `E[phi'(x)^2]`.
//!
//! ReLU uses the arc-cosine kernel of degree 1 (Cho and Saul 2009):
//! `E[relu(x) relu(y)] = sqrt(va vb) (sqrt(1 - rho^2) + (pi - arccos rho) rho) / (2 pi)`.
//! GELU (`x Phi(x)`, exact erf form) conditions on x: with `y | x ~ N(mu, s^2)`,
//! `E[Y Phi(Y)] = mu Phi(mu/t) + s^2 phi(mu/t)/t`, `t = sqrt(1 + s^2)` (Stein's lemma), and the
//! outer expectation over x is a 96-point Gauss-Hermite rule.

use super::quadrature;
use std::f64::consts::PI;

/// A pointwise nonlinearity of an MLP branch.
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

impl Activation {
    /// `E[phi(x) phi(y)]` for centered Gaussians with `Var x = va`, `Var y = vb`, `Cov = cab`.
    pub fn pair_moment(self, va: f64, vb: f64, cab: f64) -> f64 {
        if va <= 0.0 || vb <= 0.0 {
            return 0.0;
        }
        match self {
            Activation::Relu => {
                let rho = (cab / (va * vb).sqrt()).clamp(-1.0, 1.0);
                (va * vb).sqrt() * ((1.0 - rho * rho).sqrt() + (PI - rho.acos()) * rho) / (2.0 * PI)
            }
            Activation::Gelu => {
                let sa = va.sqrt();
                let slope = cab / va;
                let s2 = (vb - cab * cab / va).max(0.0);
                let t = (1.0 + s2).sqrt();
                quadrature::standard().expect(|z| {
                    let x = sa * z;
                    let mu = slope * x;
                    let ey = mu * std_cdf(mu / t) + s2 * std_pdf(mu / t) / t;
                    gelu(x) * ey
                })
            }
        }
    }

    /// `E[phi(x)^2]`, `x ~ N(0, v)`.
    pub fn second_moment(self, v: f64) -> f64 {
        match self {
            Activation::Relu => v.max(0.0) / 2.0,
            Activation::Gelu => {
                let s = v.max(0.0).sqrt();
                quadrature::standard().expect(|z| gelu(s * z).powi(2))
            }
        }
    }

    /// `E[phi'(x)^2]`, `x ~ N(0, v)`.
    pub fn deriv_second_moment(self, v: f64) -> f64 {
        match self {
            Activation::Relu => 0.5,
            Activation::Gelu => {
                let s = v.max(0.0).sqrt();
                quadrature::standard().expect(|z| gelu_prime(s * z).powi(2))
            }
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

    /// Brute-force 2-D Gauss-Hermite value of [`Self::pair_moment`], an independent route used
    /// by the tests.
    pub fn pair_moment_2d(self, va: f64, vb: f64, cab: f64, n: usize) -> f64 {
        let r = quadrature::Rule::new(n);
        let rho = (cab / (va * vb).sqrt()).clamp(-1.0, 1.0);
        let w = (1.0 - rho * rho).sqrt();
        let mut acc = 0.0;
        for (&z1, &w1) in r.nodes.iter().zip(&r.weights) {
            for (&z2, &w2) in r.nodes.iter().zip(&r.weights) {
                let x = va.sqrt() * z1;
                let y = vb.sqrt() * (rho * z1 + w * z2);
                acc += w1 * w2 * self.value(x) * self.value(y);
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_kernel_matches_2d_quadrature() {
        // Independent route: a 2-D product Gauss-Hermite rule. Its own error is estimated by
        // comparing 64 and 96 nodes; the kernel must agree within ten times that, plus 1e-15.
        for &(va, vb, c) in &[
            (1.0, 1.0, 0.3),
            (2.0, 0.5, -0.4),
            (1.0, 1.0, 1.0),
            (0.7, 1.3, 0.9),
        ] {
            let cab = c * f64::sqrt(va * vb);
            let a = Activation::Gelu.pair_moment(va, vb, cab);
            let b64 = Activation::Gelu.pair_moment_2d(va, vb, cab, 64);
            let b96 = Activation::Gelu.pair_moment_2d(va, vb, cab, 96);
            let tol = 10.0 * (b64 - b96).abs() + crate::tolerance::ROUNDING;
            assert!(
                (a - b96).abs() <= tol,
                "{va} {vb} {c}: {a} vs {b96} (tol {tol})"
            );
        }
    }

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
            let tol = 10.0 * (b1 - b2).abs() + crate::tolerance::ERFC_CANCELLATION * b2.abs();
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
            (a - 0.030_673_985_919_425_15).abs() < crate::tolerance::MPMATH_REFERENCE,
            "{a}"
        );
    }

    #[test]
    fn gelu_second_moment_is_consistent() {
        let v = 1.7;
        let a = Activation::Gelu.second_moment(v);
        let b = Activation::Gelu.pair_moment(v, v, v);
        assert!((a - b).abs() < crate::tolerance::ACCUMULATED * a);
    }
}
