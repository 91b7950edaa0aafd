//! The exact expansion reproduces the seeds' formulas in their special cases and corrects
//! seed 002's DeepNorm normalizer.

use normscope::branch::BranchModel;
use normscope::model::RawModel;
use normscope::symbolic::{self, Expansion, Expr, Poly, Subs};
use num_rational::{BigRational, Ratio};

fn expand(preset: &str, raw: &RawModel, subs: &str) -> Expansion {
    let model = raw.check().unwrap();
    let spec = model
        .stack(normscope::placement::find(preset).unwrap())
        .unwrap();
    let b = BranchModel::new(&model.branch, spec.beta, model.inputs.q0, model.inputs.c0);
    symbolic::expand(&spec, &b, model.inputs.q0, &Subs::parse(subs).unwrap()).unwrap()
}

fn two_pow(num: i64, den: i64) -> Expr {
    Expr::pow_poly(
        &Poly::constant(BigRational::from_integer(2.into())),
        Ratio::new(num, den),
    )
}

fn model(depth: usize, branch: &str) -> RawModel {
    RawModel {
        depth,
        branch: branch.into(),
        ..RawModel::default()
    }
}

#[test]
fn post_with_unit_gain_is_the_seeds_sqrt_two() {
    // Seed 002: X_{t+1} = X_0/sqrt2^{t+1} + F_0/sqrt2^{t+1} + ... + F_t/sqrt2. In our indexing
    // (blocks 1..=L, B_0 = x_0): C_{L,0} = C_{L,1} = 2^(-L/2), C_{L,j} = 2^(-(L-j+1)/2).
    for depth in [1usize, 2, 5, 12] {
        let ex = expand("post", &model(depth, "linear"), "g=1,q0=1");
        let l = depth as i64;
        assert_eq!(ex.coefs[0], two_pow(-l, 2));
        for j in 1..=l {
            let k = if j == 1 { l } else { l - j + 1 };
            assert_eq!(ex.coefs[j as usize], two_pow(-k, 2), "C[{depth},{j}]");
        }
    }
}

#[test]
fn post_with_general_gain_follows_theory() {
    // docs/theory.md: x_l = x_0/(1+g)^(l/2) + sum_j F_j/(1+g)^((l-j+1)/2) (q0 = 1).
    let ex = expand("post", &model(4, "relu-mlp"), "q0=1");
    assert_eq!(ex.coefs[0].text(), "(1 + g)^(-2)");
    assert_eq!(ex.coefs[3].text(), "(1 + g)^(-1)");
    assert_eq!(ex.coefs[4].text(), "(1 + g)^(-1/2)");
}

#[test]
fn pre_norm_coefficients_are_all_one() {
    // Seeds 000-002: x_{t+1} = x_0 + F_0 + ... + F_t.
    for b in ["linear", "relu-mlp"] {
        let ex = expand("pre", &model(9, b), "");
        assert!(ex.coefs.iter().all(|c| *c == Expr::one()));
    }
}

#[test]
fn deepnorm_normalizer_is_not_sqrt_two() {
    // Seed 002 writes X_{t+1} = alpha^{t+1} X_0/sqrt2^{t+1} + ... + F_t/sqrt2. The true
    // normalizer of Norm(alpha x + F) with a two-matrix branch of gain g scaled by beta is
    // sqrt(alpha^2 + g beta^4) (DeepNet: Wang et al. 2022), not sqrt 2.
    let ex = expand("deepnorm", &model(6, "relu-mlp"), "q0=1");
    assert_eq!(ex.coefs[6].text(), "(alpha^2 + beta^4*g)^(-1/2)");
    assert_eq!(ex.coefs[5].text(), "alpha * (alpha^2 + beta^4*g)^(-1)");
    assert_eq!(ex.coefs[0].text(), "alpha^6 * (alpha^2 + beta^4*g)^(-3)");
    // Its value from DeepNet's constants for L = 6 blocks (N = 3 layers): alpha^2 = sqrt 6,
    // beta^4 = 1/24, g = 8/25 (Xavier ReLU MLP, ratio 4), against the seed's 2^(-1/2).
    let want = 1.0 / (6f64.sqrt() + 0.32 / 24.0).sqrt();
    assert!(
        (ex.value(6) - want).abs() < normscope::tolerance::ROUNDING,
        "{} vs {want}",
        ex.value(6)
    );
    assert!((ex.value(6) - 2f64.powf(-0.5)).abs() > normscope::tolerance::CLEARLY_DIFFERENT);
}

#[test]
fn deepnorm_with_seed_values_recovers_the_seed_formula() {
    // alpha = 1, g beta^4 = 1 reduce DeepNorm to Post with g = 1, the seed's special case.
    let ex = expand("deepnorm", &model(3, "relu-mlp"), "alpha=1,beta=1,g=1,q0=1");
    assert_eq!(ex.coefs[3], two_pow(-1, 2));
    assert_eq!(ex.coefs[0], two_pow(-3, 2));
}

#[test]
fn rezero_branches_carry_lambda() {
    let ex = expand("rezero", &model(3, "linear"), "");
    assert_eq!(ex.coefs[2].text(), "lambda");
    assert!(ex.value(2).abs() < f64::MIN_POSITIVE);
}

#[test]
fn non_homogeneous_branches_are_refused() {
    let raw = model(3, "gelu-mlp");
    let m = raw.check().unwrap();
    let spec = m
        .stack(normscope::placement::find("post").unwrap())
        .unwrap();
    let b = BranchModel::new(&m.branch, None, 1.0, 0.0);
    let err = symbolic::expand(&spec, &b, 1.0, &Subs::default()).unwrap_err();
    assert!(err.to_string().contains("gelu-mlp"), "{err}");
}
