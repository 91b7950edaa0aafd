//! BatchNorm's gradient explosion at init, reproduced with normscope's BatchNorm kernel
//! ([`normscope::norms::grouped`] with [`Grouping::batch`]): Yang, Pennington, Rao,
//! Sohl-Dickstein and Schoenholz 2019, "A Mean Field Theory of Batch Normalization" (ICLR 2019,
//! arXiv:1902.08129; OpenReview SyMDXnCcF7).
//!
//! Their network has no skip connections: `h_l = W_l phi(BN(h_{l-1}))`, `W_l` with entries
//! `N(0, 1/N)`, BatchNorm per neuron over the batch of B samples with the biased variance,
//! `eps = 0`, `gamma = 1`, `beta = 0`. The squared norm of the gradient with respect to the
//! pre-activations grows by a factor `lambda_G` per layer towards the input:
//!
//! - linear phi: `lambda_G = (B - 2)/(B - 3)` (Theorem 3.9 of the camera-ready version: the
//!   smallest rate of any activation);
//! - ReLU: `lambda_G = (J'(c0) + B - 1)/((B - 3)(1 - J(c0))) - 1/(B - 3)` with `c0 = -1/(B - 1)`,
//!   the arccosine kernel `J(c) = (sqrt(1 - c^2) + (pi - arccos c) c)/pi` and
//!   `J'(c) = (pi - arccos c)/pi` (Theorem 3.10; eq. 25 of the OpenReview submission at
//!   alpha = 1), which "decreases to pi/(pi - 1) ≈ 1.467 as B → ∞".
//!
//! The networks here share their weights between the forward and backward passes (no
//! gradient-independence assumption), at a finite width N: the rate is measured as the
//! geometric mean of the per-layer ratios over the middle layers, per network, and its mean
//! over networks must meet the theorem within [`Z`] standard errors plus a finite-width
//! allowance of [`WIDTH_ALLOWANCE`]`/N` relative, both fixed before the runs. The wrong linear
//! rate `(B - 1)/(B - 3)` that one might guess must fall outside the same band.

use nalgebra::DMatrix;
use normscope::norms::grouped::{Grouping, forward, jacobian};
use normscope_numeric::rng::Rng;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use std::f64::consts::PI;

/// Width N.
const WIDTH: usize = 512;
/// Depth: layers `h_1..=h_L`.
const DEPTH: usize = 40;
/// Layers skipped at each end before the ratios are averaged (transients at the input and at
/// the output gradient).
const SKIP: usize = 8;
/// Networks per setting.
const NETWORKS: u64 = 12;
/// Standard errors of the mean rate allowed (a two-sided 99.99% normal band).
const Z: f64 = 3.9;
/// Relative finite-width allowance, times 1/N: the per-layer ratios carry O(1/N) biases.
const WIDTH_ALLOWANCE: f64 = 8.0;

/// `(B - 2)/(B - 3)`: Theorem 3.9, linear activation.
fn linear_rate(b: usize) -> f64 {
    (b as f64 - 2.0) / (b as f64 - 3.0)
}

/// Theorem 3.10 (submission eq. 25 at alpha = 1), ReLU.
fn relu_rate(b: usize) -> f64 {
    let b = b as f64;
    let c0 = -1.0 / (b - 1.0);
    let j = ((1.0 - c0 * c0).sqrt() + (PI - c0.acos()) * c0) / PI;
    let jp = (PI - c0.acos()) / PI;
    (jp + b - 1.0) / ((b - 3.0) * (1.0 - j)) - 1.0 / (b - 3.0)
}

fn gaussian(rows: usize, cols: usize, sd: f64, rng: &mut Rng) -> DMatrix<f64> {
    DMatrix::from_fn(rows, cols, |_, _| {
        sd * <StandardNormal as Distribution<f64>>::sample(&StandardNormal, rng)
    })
}

/// One network's rate: the geometric mean of `|g_{l-1}|^2 / |g_l|^2` over the middle layers.
fn measured_rate(batch: usize, relu: bool, seed: u64) -> f64 {
    let mut rng = Rng::seed_from_u64(seed);
    let sd = 1.0 / (WIDTH as f64).sqrt();
    let ws: Vec<DMatrix<f64>> = (0..DEPTH)
        .map(|_| gaussian(WIDTH, WIDTH, sd, &mut rng))
        .collect();
    let phi = |x: f64| if relu { x.max(0.0) } else { x };
    let dphi = |x: f64| {
        if relu {
            f64::from(u8::from(x > 0.0))
        } else {
            1.0
        }
    };
    // Forward: h_1 = W_1 x_0, h_l = W_l phi(BN(h_{l-1})).
    let mut h = &ws[0] * gaussian(WIDTH, batch, 1.0, &mut rng);
    let mut caches = Vec::new();
    for w in &ws[1..] {
        let c = forward(Grouping::batch(batch), 0.0, &h);
        h = w * c.y.map(phi);
        caches.push(c);
    }
    // Backward from a Gaussian dL/dh_L.
    let mut g = gaussian(WIDTH, batch, 1.0, &mut rng);
    let mut norms = vec![g.norm_squared()];
    for (w, c) in ws[1..].iter().zip(&caches).rev() {
        let gu = w.tr_mul(&g).zip_map(&c.y, |a, u| a * dphi(u));
        g = jacobian(c, &gu);
        norms.push(g.norm_squared());
    }
    let logs: Vec<f64> = norms.windows(2).map(|p| (p[1] / p[0]).ln()).collect();
    let mid = &logs[SKIP..logs.len() - SKIP];
    (mid.iter().sum::<f64>() / mid.len() as f64).exp()
}

/// Mean and standard error of the rate over [`NETWORKS`] networks.
fn rate(batch: usize, relu: bool) -> (f64, f64) {
    let r: Vec<f64> = (0..NETWORKS)
        .map(|s| measured_rate(batch, relu, s))
        .collect();
    let n = r.len() as f64;
    let mean = r.iter().sum::<f64>() / n;
    let var = r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

fn within(mean: f64, se: f64, theory: f64) -> bool {
    (mean - theory).abs() <= Z * se + WIDTH_ALLOWANCE / WIDTH as f64 * theory
}

#[test]
fn the_reference_formulas_have_the_papers_limits() {
    // Theorem 3.10's limit pi/(pi - 1), and the linear rate's limit 1, as B grows.
    assert!((relu_rate(1 << 20) - PI / (PI - 1.0)).abs() < 1e-5);
    assert!((linear_rate(1 << 20) - 1.0).abs() < 1e-5);
    // The ReLU rate exceeds the linear one at every B (linear is the minimum, Theorem 3.9).
    assert!((4..200).all(|b| relu_rate(b) > linear_rate(b)));
}

#[test]
fn batchnorm_gradients_explode_at_yang_et_als_rates() {
    for batch in [8, 16] {
        for relu in [false, true] {
            let (mean, se) = rate(batch, relu);
            let theory = if relu {
                relu_rate(batch)
            } else {
                linear_rate(batch)
            };
            eprintln!(
                "B = {batch}, {}: measured {mean:.4} +- {se:.4}, theorem {theory:.4}",
                if relu { "ReLU" } else { "linear" }
            );
            assert!(
                within(mean, se, theory),
                "B = {batch} relu {relu}: {mean} +- {se} vs {theory}"
            );
            if !relu {
                let wrong = (batch as f64 - 1.0) / (batch as f64 - 3.0);
                assert!(!within(mean, se, wrong), "the band also holds {wrong}");
            }
        }
    }
}

/// Layers whose gradients give the Monte Carlo engine's rate: the rate over the middle
/// layers, as the kernel test above takes it.
const MC_FROM: usize = SKIP;
const MC_TO: usize = DEPTH - SKIP;

/// The same result through the engine users run (`normscope mc --preset post --alpha 0
/// --branch linear --norm batch --tokens 1 --batch B --width 512`): Post-Norm with skip scale
/// 0 is `x_l = BN(W_l x_{l-1})`, Yang et al.'s linear network (Xavier's `2/(N + N) = 1/N`).
/// The rate is `(G_a / G_b)^(1/(b - a))` of the mean squared gradients `G_l` at layers
/// `a < b`; its standard error comes from theirs by the delta method, ignoring their positive
/// covariance across networks (which widens the band, never narrows it).
#[test]
fn the_monte_carlo_engine_reproduces_the_linear_rate() {
    use normscope::engine::{Engine, Plan};
    use normscope::layers::LayerSpec;
    use normscope::metrics::Metric;
    use normscope::model::RawModel;
    use normscope::monte_carlo::{McConfig, MonteCarlo, RawMc};
    use normscope::profile::Value;
    use normscope::spec::NormKind;
    for batch in [8, 16] {
        let raw = RawModel {
            depth: DEPTH,
            alpha: Some(0.0),
            width: WIDTH,
            tokens: 1,
            norm: NormKind::Batch,
            ..RawModel::default()
        };
        let mc = RawMc {
            samples: NETWORKS as usize,
            eps: 0.0,
            batch,
            ..RawMc::default()
        };
        let cfg = McConfig::new(&raw, &mc).unwrap();
        let spec = cfg
            .model
            .stack(normscope::placement::find("post").unwrap())
            .unwrap();
        let layers = LayerSpec::parse(&format!("{MC_FROM},{MC_TO}")).unwrap();
        let engine = MonteCarlo {
            cfg: &cfg,
            progress: &(),
        };
        let p = engine
            .profile(&spec, &Plan::new(&[Metric::GradSq], layers))
            .unwrap();
        assert_eq!(
            p.setup.norm.as_deref(),
            Some(format!("batch:B={batch}").as_str())
        );
        let at = |l: usize| match &p.values[&(Metric::GradSq, l, None)] {
            Value::Estimate(e) => (e.mean, e.stderr),
            other => panic!("{other:?}"),
        };
        let ((ga, sa), (gb, sb)) = (at(MC_FROM), at(MC_TO));
        let span = (MC_TO - MC_FROM) as f64;
        let mean = (ga / gb).powf(1.0 / span);
        let se = mean * ((sa / ga).powi(2) + (sb / gb).powi(2)).sqrt() / span;
        let theory = linear_rate(batch);
        eprintln!("mc, B = {batch}: measured {mean:.4} +- {se:.4}, theorem {theory:.4}");
        assert!(
            within(mean, se, theory),
            "B = {batch}: {mean} +- {se} vs {theory}"
        );
        let wrong = (batch as f64 - 1.0) / (batch as f64 - 3.0);
        assert!(!within(mean, se, wrong), "the band also holds {wrong}");
    }
}

/// The closed form (`normscope theory --preset post --alpha 0 --norm batch --tokens 1 --batch B
/// --metrics grad_sq`): BatchNorm's map over the batch's Gram matrix
/// (`theory::norm_map`) gives Theorem 3.9's `(B - 2)/(B - 3)` exactly between every two
/// middle layers, `B (B - 2)/((B - 1)(B - 3))` at block 1 (its input samples are independent,
/// `q (1 - c) = 1` rather than `B/(B - 1)`), and `1 - 1/B` at the top (the output gradient's
/// batch mean, which BatchNorm's Jacobian removes).
#[test]
fn the_closed_form_gives_theorem_3_9_exactly() {
    use normscope::closed_form::ClosedForm;
    use normscope::engine::{Engine, Plan};
    use normscope::layers::LayerSpec;
    use normscope::metrics::Metric;
    use normscope::model::RawModel;
    use normscope::profile::Value;
    use normscope::spec::NormKind;
    let depth = 12;
    for batch in [6usize, 7, 8, 16, 100] {
        let model = RawModel {
            depth,
            alpha: Some(0.0),
            tokens: 1,
            norm: NormKind::Batch,
            ..RawModel::default()
        }
        .check()
        .unwrap();
        let cf = ClosedForm::new(&model).with_batch(batch);
        let p = cf
            .profile(
                &model
                    .stack(normscope::placement::find("post").unwrap())
                    .unwrap(),
                &Plan::new(&[Metric::GradSq], LayerSpec::All),
            )
            .unwrap();
        assert_eq!(
            p.setup.norm.as_deref(),
            Some(format!("batch:B={batch}").as_str())
        );
        let g = |l: usize| match p.values[&(Metric::GradSq, l, None)] {
            Value::Exact(v) => v,
            ref other => panic!("{other:?}"),
        };
        let b = batch as f64;
        let close = |x: f64, y: f64| (x / y - 1.0).abs() < 1e-13;
        for l in 2..depth {
            assert!(
                close(g(l - 1) / g(l), linear_rate(batch)),
                "B = {batch} l = {l}"
            );
        }
        assert!(close(g(0) / g(1), b * (b - 2.0) / ((b - 1.0) * (b - 3.0))));
        assert!(close(
            g(depth - 1) / g(depth),
            (1.0 - 1.0 / b) * linear_rate(batch)
        ));
    }
}
