//! The standard-normal samplers of `monte_carlo::normal`.
//!
//! 1. Bit identity: the default ziggurat, and `sample::matrix` / `sample::gaussian` built on it,
//!    return the very `f64` values of the former path (`DMatrix::from_fn` over
//!    `rand_distr::StandardNormal` and `random_range`) and leave the generator in the same
//!    state, for every init, on several seeds and >= 1e6 draws each, including the ziggurat's
//!    tail path.
//! 2. Law: the sampler's first four moments and a Kolmogorov-Smirnov test against N(0, 1);
//!    KS tests for BERT's truncated normal and PyTorch's uniform default.

use nalgebra::DMatrix;
use normscope::branch::Init;
use normscope::branch::init::BERT_STD;
use normscope::monte_carlo::sample;
use normscope::numeric::normal;
use normscope::numeric::rng::Rng;
use rand::{Rng as _, RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use statrs::distribution::{ContinuousCDF, Normal};

const SEEDS: [u64; 4] = [0, 1, 0x5EED, 0xDEAD_BEEF_0BAD_F00D];

/// The former `sample::matrix`, kept here as the reference the new path must reproduce.
fn reference_matrix(
    rng: &mut Rng,
    init: Init,
    rows: usize,
    cols: usize,
    scale: f64,
) -> DMatrix<f64> {
    let (fan_in, fan_out) = (cols as f64, rows as f64);
    match init {
        Init::Xavier | Init::He => {
            let s = init.variance(fan_in, fan_out).sqrt() * scale;
            DMatrix::from_fn(rows, cols, |_, _| {
                let z: f64 = StandardNormal.sample(rng);
                s * z
            })
        }
        Init::TorchDefault => {
            let b = 1.0 / fan_in.sqrt();
            DMatrix::from_fn(rows, cols, |_, _| scale * rng.random_range(-b..b))
        }
        Init::Bert => DMatrix::from_fn(rows, cols, |_, _| {
            loop {
                let z: f64 = StandardNormal.sample(rng);
                if z.abs() <= 2.0 {
                    break scale * BERT_STD * z;
                }
            }
        }),
    }
}

fn assert_same_bits(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.to_bits(), y.to_bits(), "{what}: entry {k}: {x} vs {y}");
    }
}

/// Both generators must have consumed the same number of draws.
fn assert_same_state(a: &mut Rng, b: &mut Rng, what: &str) {
    for _ in 0..4 {
        assert_eq!(
            a.next_u64(),
            b.next_u64(),
            "{what}: generator states differ"
        );
    }
}

#[test]
fn ziggurat_is_bit_identical_to_rand_distr_including_the_tail() {
    // Values with |z| >= R come only from the tail (zero-case) path: layer 0 accepts below
    // x_1 = R and every other layer below x_i <= R. P(|Z| > R) = 2.58e-4, so 4e6 draws give
    // ~1030 of them; requiring 500 makes sure the path ran.
    const R: f64 = 3.654_152_885_361_009; // rand_distr's ZIG_NORM_R
    let n = 1_000_000;
    let mut tails = 0;
    for seed in SEEDS {
        let mut a = Rng::seed_from_u64(seed);
        let mut b = a.clone();
        let mut got = vec![0.0; n];
        normal::fill(&mut a, &mut got);
        let want: Vec<f64> = (0..n).map(|_| StandardNormal.sample(&mut b)).collect();
        assert_same_bits(&got, &want, &format!("fill, seed {seed}"));
        assert_same_state(&mut a, &mut b, &format!("fill, seed {seed}"));
        tails += got.iter().filter(|z| z.abs() >= R).count();
        // One at a time, too.
        for k in 0..1000 {
            let (x, y): (f64, f64) = (
                normal::standard_normal(&mut a),
                StandardNormal.sample(&mut b),
            );
            assert_eq!(
                x.to_bits(),
                y.to_bits(),
                "standard_normal, seed {seed}, draw {k}"
            );
        }
        assert_same_state(&mut a, &mut b, &format!("standard_normal, seed {seed}"));
    }
    assert!(tails >= 500, "only {tails} tail draws");
}

#[test]
fn matrices_are_bit_identical_to_the_former_path_for_every_init() {
    // 1000 x 1000 per seed and init (BERT's rejection draws ~4.8% more), then a ragged shape
    // to pin the column-major order.
    let inits = [Init::Xavier, Init::He, Init::TorchDefault, Init::Bert];
    for seed in SEEDS {
        for init in inits {
            for (rows, cols, scale) in [(1000, 1000, 1.0), (37, 501, 0.7)] {
                let what = format!("{init:?} {rows}x{cols}, seed {seed}");
                let mut a = Rng::seed_from_u64(seed);
                let mut b = a.clone();
                let got = sample::matrix(&mut a, init, rows, cols, scale);
                let want = reference_matrix(&mut b, init, rows, cols, scale);
                assert_eq!(got.shape(), want.shape());
                assert_same_bits(got.as_slice(), want.as_slice(), &what);
                assert_same_state(&mut a, &mut b, &what);
            }
        }
        let mut a = Rng::seed_from_u64(seed);
        let mut b = a.clone();
        let got = sample::gaussian(&mut a, 123, 45);
        let want = DMatrix::<f64>::from_fn(123, 45, |_, _| StandardNormal.sample(&mut b));
        assert_same_bits(
            got.as_slice(),
            want.as_slice(),
            &format!("gaussian, seed {seed}"),
        );
        assert_same_state(&mut a, &mut b, &format!("gaussian, seed {seed}"));
    }
}

/// Draws per distribution test.
const N: usize = 1 << 20;

/// The asymptotic Kolmogorov distribution's upper 1e-3 point: P(sqrt(n) D_n > 1.949) ~= 1e-3
/// from `P(K > x) = 2 sum_k (-1)^(k-1) exp(-2 k^2 x^2)` (Kolmogorov 1933; see Marsaglia, Tsang
/// and Wang 2003, "Evaluating Kolmogorov's Distribution", J. Stat. Softw. 8(18)); at n = 2^20
/// the finite-n correction is negligible.
fn ks_critical(n: usize) -> f64 {
    1.949 / (n as f64).sqrt()
}

/// The two-sided KS statistic `D_n = sup |F_n - F|` of `xs` against `cdf`.
fn ks_statistic(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            ((i as f64 + 1.0) / n - f).max(f - i as f64 / n)
        })
        .fold(0.0, f64::max)
}

fn check_standard_normal(name: &str, xs: Vec<f64>) {
    let n = xs.len() as f64;
    // Raw moments about the known mean 0 and their exact standard errors under N(0, 1):
    // E z = 0, Var z = 1; E z^2 = 1, Var z^2 = E z^4 - 1 = 2; E z^3 = 0, Var z^3 = E z^6 = 15;
    // E z^4 = 3, Var z^4 = E z^8 - 9 = 105 - 9 = 96. Each sample mean must lie within 5
    // standard errors (a two-sided normal tail of 5.7e-7 per check, so the 16 moment checks
    // of this file fail by chance with probability < 1e-5).
    let moments = [(1, 0.0, 1.0), (2, 1.0, 2.0), (3, 0.0, 15.0), (4, 3.0, 96.0)];
    for (k, mean, var) in moments {
        let m = xs.iter().map(|z| z.powi(k)).sum::<f64>() / n;
        let se = (var / n).sqrt();
        assert!(
            (m - mean).abs() <= 5.0 * se,
            "{name}: E z^{k} = {m}, want {mean} +- 5 x {se}"
        );
    }
    let phi = Normal::new(0.0, 1.0).unwrap();
    let d = ks_statistic(xs, |x| phi.cdf(x));
    let crit = ks_critical(n as usize);
    assert!(d < crit, "{name}: KS D = {d} >= {crit} (alpha = 1e-3)");
}

#[test]
fn the_sampler_is_standard_normal() {
    let mut rng = Rng::seed_from_u64(1000);
    let mut xs = vec![0.0; N];
    normal::fill(&mut rng, &mut xs);
    check_standard_normal("ziggurat", xs);
}

#[test]
fn bert_draws_follow_the_truncated_normal() {
    // sample::matrix(Bert) = BERT_STD z with z ~ N(0, 1) conditioned on |z| <= 2, whose CDF on
    // [-2, 2] is (Phi(z) - Phi(-2)) / (Phi(2) - Phi(-2)).
    let mut rng = Rng::seed_from_u64(15);
    let m = sample::matrix(&mut rng, Init::Bert, 1024, 1024, 1.0);
    let zs: Vec<f64> = m.iter().map(|x| x / BERT_STD).collect();
    assert!(m.iter().all(|x| x.abs() <= 2.0 * BERT_STD));
    let phi = Normal::new(0.0, 1.0).unwrap();
    let (lo, hi) = (phi.cdf(-2.0), phi.cdf(2.0));
    let n = zs.len();
    let d = ks_statistic(zs, |z| ((phi.cdf(z) - lo) / (hi - lo)).clamp(0.0, 1.0));
    assert!(
        d < ks_critical(n),
        "BERT: KS D = {d} >= {} (alpha = 1e-3)",
        ks_critical(n)
    );
}

#[test]
fn torch_default_draws_are_uniform() {
    // sample::matrix(TorchDefault) with fan_in = cols: U(-b, b), b = 1/sqrt(fan_in).
    let mut rng = Rng::seed_from_u64(16);
    let m = sample::matrix(&mut rng, Init::TorchDefault, 1024, 1024, 1.0);
    let b = 1.0 / 1024f64.sqrt();
    let xs: Vec<f64> = m.iter().copied().collect();
    assert!(xs.iter().all(|x| (-b..b).contains(x)));
    let n = xs.len();
    let d = ks_statistic(xs, |x| ((x + b) / (2.0 * b)).clamp(0.0, 1.0));
    assert!(
        d < ks_critical(n),
        "uniform: KS D = {d} >= {} (alpha = 1e-3)",
        ks_critical(n)
    );
}
