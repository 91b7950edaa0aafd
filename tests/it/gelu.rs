//! GELU's Gaussian moments: the exact kernels against 40-digit mpmath
//! references over v in [1e-3, 1e4] and every correlation, and a property sweep against an
//! independent route whose accuracy does not depend on v.

use normscope::branch::Activation;
use normscope::branch::activation::{SCALED_ABOVE, gelu, gelu_pair_scaled, gelu_prime};
use normscope::tolerance;
use proptest::prelude::*;

/// The references of `tests/reference/gelu_moments.csv`, written by
/// `tests/reference/gelu_moments.py` (mpmath 1.3, 40 digits, tanh-sinh quadrature of the
/// defining integrals): `(kind, a, b, rho, value)`.
fn references() -> Vec<(String, f64, f64, f64, f64)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/reference/gelu_moments.csv"
    );
    let text = std::fs::read_to_string(path).expect("reference table");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let num = |i: usize| f[i].parse::<f64>().expect(l);
            (f[0].to_string(), num(1), num(2), num(3), num(4))
        })
        .collect()
}

/// The relative error the exact value's own conditioning allows at `(a, b, c)`: the kernel
/// moves by `|c dE/dc| / |E|` relative per unit relative change of c, and c itself carries
/// one rounding. Estimated by a central difference; it is below 1e-3 except near the
/// correlation where E changes sign, where no f64 evaluation can be relatively accurate.
fn conditioning(a: f64, b: f64, c: f64, e: f64) -> f64 {
    if c == 0.0 {
        return 0.0;
    }
    let h = c.abs() * 1e-7;
    let hi = Activation::Gelu.pair_moment(a, b, (c + h).clamp(-(a * b).sqrt(), (a * b).sqrt()));
    let lo = Activation::Gelu.pair_moment(a, b, (c - h).clamp(-(a * b).sqrt(), (a * b).sqrt()));
    let slope = (hi - lo) / (2.0 * h);
    (c * slope / e).abs() * f64::EPSILON
}

#[test]
fn exact_kernels_match_mpmath_to_1e_12() {
    let refs = references();
    assert!(refs.len() > 150, "{} references", refs.len());
    let mut worst = (0.0, String::new());
    for (kind, a, b, rho, want) in refs {
        let (got, allowed) = match kind.as_str() {
            "second" => (Activation::Gelu.second_moment(a), 0.0),
            "deriv" => (Activation::Gelu.deriv_second_moment(a), 0.0),
            "pair" => {
                let c = rho * (a * b).sqrt();
                let got = Activation::Gelu.pair_moment(a, b, c);
                (got, conditioning(a, b, c, want))
            }
            other => panic!("unknown kind {other}"),
        };
        let rel = ((got - want) / want).abs();
        // 1e-12 relative (the bound), or the conditioning of E at that point if it
        // is worse (only within ~1e-3 of a sign change of E, where E itself is ~0).
        let tol = tolerance::ACCUMULATED.max(10.0 * allowed);
        assert!(
            rel <= tol,
            "{kind} a={a} b={b} rho={rho}: {got} vs {want} (rel {rel:.2e}, tol {tol:.1e})"
        );
        if rel > worst.0 {
            worst = (rel, format!("{kind} a={a} b={b} rho={rho}"));
        }
    }
    eprintln!("worst relative error {:.2e} at {}", worst.0, worst.1);
}

/// `E[g(X)]`, `X ~ N(0, v)`, by composite Simpson in the unscaled variable x over
/// `[-12, 12]` (where GELU bends; 24 000 panels, so the node spacing is 1e-3 whatever v is)
/// plus the tails in closed form: for `x > 12`, `gelu(x) = x` and `gelu'(x) = 1` to within
/// 1e-32, and for `x < -12` both are below 1e-31. `tail` is `E[g(X); X > 12]`.
fn unscaled(v: f64, g: impl Fn(f64) -> f64, tail: impl Fn(f64) -> f64) -> f64 {
    let sd = v.sqrt();
    let density = |x: f64| (-0.5 * x * x / v).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt());
    let (lo, hi, n) = (-12.0f64, 12.0f64, 24_000usize);
    let h = (hi - lo) / n as f64;
    let f = |x: f64| g(x) * density(x);
    let mut acc = f(lo) + f(hi);
    for i in 1..n {
        acc += f(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    acc * h / 3.0 + tail(12.0 / sd)
}

fn upper_normal(t: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(t / std::f64::consts::SQRT_2)
}

fn normal_pdf(t: f64) -> f64 {
    (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64, 20261123))]

    /// Over v log-uniform in [1e-3, 1e4], the exact moments agree with the unscaled-variable
    /// route to 1e-10 relative (Simpson's error at spacing 1e-3 on a function whose fourth
    /// derivative is O(1) is ~1e-14 absolute; statrs' erfc carries ~1e-15 relative), and
    /// the pair kernel at c = v equals the second moment.
    #[test]
    fn moments_agree_with_an_unscaled_route_for_every_variance(log_v in -3.0f64..4.0) {
        let v = 10f64.powf(log_v);
        let second = unscaled(v, |x| gelu(x).powi(2), |t| {
            // E[X^2; X > 12] = v (t phi(t) + Q(t)), t = 12 / sqrt(v).
            v * (t * normal_pdf(t) + upper_normal(t))
        });
        let deriv = unscaled(v, |x| gelu_prime(x).powi(2), upper_normal);
        let a = Activation::Gelu.second_moment(v);
        let d = Activation::Gelu.deriv_second_moment(v);
        prop_assert!(((a - second) / second).abs() < tolerance::TWO_ROUTES_DEEP, "{v}: {a} vs {second}");
        prop_assert!(((d - deriv) / deriv).abs() < tolerance::TWO_ROUTES_DEEP, "{v}: {d} vs {deriv}");
        let p = Activation::Gelu.pair_moment(v, v, v);
        prop_assert!(((p - a) / a).abs() < tolerance::ACCUMULATED, "{v}: {p} vs {a}");
    }

    /// The pair kernel is a covariance-like quantity: `|E[gelu x gelu y]| <=
    /// sqrt(E gelu(x)^2 E gelu(y)^2)` (Cauchy-Schwarz) and it increases with c (its
    /// derivative in c is `E[gelu'(x) gelu'(y)] > 0`, Price's theorem).
    #[test]
    fn pair_kernel_is_bounded_and_increasing(log_a in -3.0f64..4.0, log_b in -3.0f64..4.0, rho in -1.0f64..0.99) {
        let (a, b) = (10f64.powf(log_a), 10f64.powf(log_b));
        let c = rho * (a * b).sqrt();
        let e = Activation::Gelu.pair_moment(a, b, c);
        let bound = (Activation::Gelu.second_moment(a) * Activation::Gelu.second_moment(b)).sqrt();
        prop_assert!(e.is_finite() && e.abs() <= bound * (1.0 + tolerance::ACCUMULATED));
        let up = Activation::Gelu.pair_moment(a, b, (rho + 0.01) * (a * b).sqrt());
        prop_assert!(up > e, "a={a} b={b} rho={rho}: {up} <= {e}");
    }

    /// Where the direct form still works (variances 1e-3 to 1e60), the rescaled form used above
    /// [`SCALED_ABOVE`] agrees with it to 1e-12 relative, or the pair's own conditioning near a
    /// sign change (as in the mpmath test).
    #[test]
    fn rescaled_pair_agrees_with_the_direct_form(log_a in -3.0f64..60.0, log_b in -3.0f64..60.0, rho in -1.0f64..1.0) {
        let (a, b) = (10f64.powf(log_a), 10f64.powf(log_b));
        let c = rho * a.sqrt() * b.sqrt();
        let direct = Activation::Gelu.pair_moment(a, b, c);
        let scaled = gelu_pair_scaled(a, b, c);
        let tol = tolerance::ACCUMULATED.max(10.0 * conditioning(a, b, c, direct));
        prop_assert!(((scaled - direct) / direct).abs() <= tol, "a={a} b={b} rho={rho}: {scaled} vs {direct}");
    }

    /// Up to f64's limit (variances 1e60 to 1.6e308) every kernel is finite and, since GELU is
    /// ReLU up to O(1) where |x| >> 1, the pair kernel equals the arc-cosine kernel of ReLU
    /// (Cho and Saul 2009, written out here independently) to 1e-12 of `sqrt(a b)`; the
    /// normalized correlation stays in [-1, 1].
    #[test]
    fn kernels_stay_finite_up_to_f64_max(log_a in 60.0f64..308.2, log_b in 60.0f64..308.2, rho in -1.0f64..1.0) {
        let (a, b) = (10f64.powf(log_a), 10f64.powf(log_b));
        prop_assert!(a.max(b) > SCALED_ABOVE);
        let root = a.sqrt() * b.sqrt();
        let c = rho * root;
        let e = Activation::Gelu.pair_moment(a, b, c);
        let (qa, qb) = (Activation::Gelu.second_moment(a), Activation::Gelu.second_moment(b));
        let d = Activation::Gelu.deriv_second_moment(a);
        prop_assert!(e.is_finite() && qa.is_finite() && qb.is_finite() && d.is_finite());
        let theta = rho.clamp(-1.0, 1.0).acos();
        let relu = root * ((1.0 - rho * rho).max(0.0).sqrt() + (std::f64::consts::PI - theta) * rho)
            / (2.0 * std::f64::consts::PI);
        prop_assert!((e - relu).abs() <= tolerance::ACCUMULATED * root, "a={a} b={b} rho={rho}: {e} vs {relu}");
        let kappa = e / (qa.sqrt() * qb.sqrt());
        prop_assert!(kappa.abs() <= 1.0 + tolerance::ACCUMULATED, "kappa {kappa}");
        prop_assert!((qa / (a / 2.0) - 1.0).abs() < tolerance::ACCUMULATED, "second moment {qa} at {a}");
        prop_assert!((d - 0.5).abs() < tolerance::ACCUMULATED, "derivative moment {d} at {a}");
    }
}
