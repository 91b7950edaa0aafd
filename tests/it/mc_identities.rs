//! Exact identities on single sampled networks (no statistics): the identities of docs/theory.md, "The metrics"
//! decomposition, the norms' fixed squared norm, the path polynomial, and JVPs/VJPs against
//! central finite differences.

use nalgebra::DMatrix;
use normscope::branch::{Branch, Module};
use normscope::model::RawModel;
use normscope::monte_carlo::network::Network;
use normscope::monte_carlo::{McConfig, RawMc, sample, sampler};
use normscope::numeric::rng;
use normscope::spec::NormKind;
use rand::SeedableRng;

fn net(preset: &str, branch: &str, depth: usize, eps: f64, raw: RawModel) -> Network {
    let raw = RawModel {
        depth,
        branch: branch.into(),
        width: 24,
        tokens: 5,
        c0: 0.3,
        ..raw
    };
    let cfg = McConfig::new(
        &raw,
        &RawMc {
            eps,
            heads: 3,
            ..RawMc::default()
        },
    )
    .unwrap();
    let spec = cfg
        .model
        .stack(normscope::placement::find(preset).unwrap())
        .unwrap();
    sampler::network(&spec, &cfg, &mut rng::Rng::seed_from_u64(11))
}

/// Every branch of the registry (a transformer stack's block 1 is attention, block 2 an MLP).
fn branches() -> impl Iterator<Item = &'static str> {
    normscope::branch::BranchKind::ALL
        .into_iter()
        .map(|k| k.name())
}

#[test]
fn post_ln_stream_has_squared_norm_d_per_token() {
    // With eps = 0, LN(z) has |LN(z)|^2 = d exactly, so every Post-LN x_l (l >= 1) does.
    let n = net("post", "relu-mlp", 6, 0.0, RawModel::default());
    let fw = n.forward(|_, _, _| {});
    for x in &fw.xs[1..] {
        for c in x.column_iter() {
            assert!((c.norm_squared() - 24.0).abs() < normscope::tolerance::TWO_ROUTES_DEEP);
        }
    }
}

#[test]
fn decomposition_sums_back_to_the_stream() {
    // x_l = sum_j C_{l,j} B~_j per token, to TWO_ROUTES_DEEP relative, for every preset and branch.
    for p in normscope::placement::REGISTRY {
        for b in branches() {
            for norm in [NormKind::Layer, NormKind::Rms, NormKind::Identity] {
                let raw = RawModel {
                    norm,
                    lambda: (p.name == "rezero").then_some(0.7),
                    ..RawModel::default()
                };
                let n = net(p.name, b, 5, 1e-5, raw);
                let mut at = Vec::new();
                let fw = n.forward(|_, x, dec| at.push((x.clone(), dec.clone())));
                let mut sources: Vec<&DMatrix<f64>> = vec![&n.input];
                sources.extend(fw.blocks.iter().map(|b| &b.out));
                // At layer l the sources are x_0 and the first l branch outputs.
                let err = at
                    .iter()
                    .enumerate()
                    .map(|(l, (x, dec))| (&dec.rebuild(&sources[..=l]) - x).norm() / x.norm())
                    .fold(0.0, f64::max);
                assert!(
                    err < normscope::tolerance::TWO_ROUTES_DEEP,
                    "{} {b} {norm}: {err}",
                    p.name
                );
            }
        }
    }
}

/// `f(x + h v) - f(x - h v)) / 2h` against a JVP, relative error.
fn fd_check(
    f: impl Fn(&DMatrix<f64>) -> DMatrix<f64>,
    x: &DMatrix<f64>,
    v: &DMatrix<f64>,
    jvp: &DMatrix<f64>,
) -> f64 {
    let h = 1e-6;
    let fd = (f(&(x + v * h)) - f(&(x - v * h))) / (2.0 * h);
    (fd - jvp).norm() / jvp.norm().max(1e-300)
}

#[test]
fn branch_jvp_and_vjp_match_finite_differences() {
    let mut r = rng::Rng::seed_from_u64(5);
    for b in branches() {
        let n = net("pre", b, 1, 0.0, RawModel::default());
        let br = &n.branches[0];
        let u = sample::gaussian(&mut r, 24, 5);
        let du = sample::gaussian(&mut r, 24, 5);
        let (_, c) = br.forward(&u);
        let f = |x: &DMatrix<f64>| br.forward(x).0;
        let j = br.jvp(&c, Some(&du), None);
        if b != "cross-attention" {
            // ReLU's kink: the sample avoids pre-activations within h of 0 almost surely.
            assert!(
                fd_check(f, &u, &du, &j) < normscope::tolerance::FINITE_DIFFERENCE,
                "{b} input JVP"
            );
        } else {
            assert!(
                j.norm() < normscope::tolerance::ZERO,
                "cross-attention ignores the stream"
            );
        }
        // VJP: <g, J du> = <J^T g, du>, and weight gradients against weight JVPs.
        let g = sample::gaussian(&mut r, 24, 5);
        let (gu, gw) = br.backward(&c, &g);
        assert!(
            (g.dot(&j) - gu.dot(&du)).abs()
                < normscope::tolerance::TWO_ROUTES_DEEP * (1.0 + g.dot(&j).abs()),
            "{b} VJP"
        );
        let dw: Vec<DMatrix<f64>> = br
            .weights()
            .iter()
            .map(|w| sample::gaussian(&mut r, w.nrows(), w.ncols()))
            .collect();
        let jw = br.jvp(&c, None, Some(&dw));
        let lhs = g.dot(&jw);
        let rhs: f64 = gw.iter().zip(&dw).map(|(a, b)| a.dot(b)).sum();
        assert!(
            (lhs - rhs).abs() < normscope::tolerance::TWO_ROUTES_DEEP * (1.0 + lhs.abs()),
            "{b} weight VJP: {lhs} vs {rhs}"
        );
    }
}

#[test]
fn network_jvp_vjp_and_path_polynomial() {
    let mut r = rng::Rng::seed_from_u64(9);
    for p in ["pre", "post", "sandwich", "deepnorm", "lns"] {
        for b in ["gelu-mlp", "attention"] {
            let n = net(p, b, 4, 1e-3, RawModel::default());
            let fw = n.forward(|_, _, _| {});
            let dx = sample::gaussian(&mut r, 24, 5);
            // Full JVP through all blocks vs finite differences of the whole network.
            let mut t = dx.clone();
            for l in 1..=4 {
                let (s, b) = n.block_jvp(&fw, l, Some(&t), None);
                t = s.unwrap() + b;
            }
            let whole = |x: &DMatrix<f64>| {
                let mut m = n.clone();
                m.input = x.clone();
                let f = m.forward(|_, _, _| {});
                f.xs[4].clone()
            };
            assert!(
                fd_check(whole, &n.input, &dx, &t) < normscope::tolerance::FINITE_DIFFERENCE,
                "{p} {b} network JVP"
            );
            // Path polynomial: tangents per path length sum to the full JVP.
            let mut paths = vec![dx.clone()];
            for l in 1..=4 {
                let mut next = vec![DMatrix::zeros(24, 5); paths.len() + 1];
                for (k, tk) in paths.iter().enumerate() {
                    let (s, b) = n.block_jvp(&fw, l, Some(tk), None);
                    next[k] += s.unwrap();
                    next[k + 1] += b;
                }
                paths = next;
            }
            let sum = paths.iter().fold(DMatrix::zeros(24, 5), |a, b| a + b);
            assert!(
                (&sum - &t).norm() < normscope::tolerance::ACCUMULATED * t.norm(),
                "{p} {b} path sum"
            );
            // Backward: <g, J dx> = <J^T g, dx> through the final norm too.
            let g = sample::gaussian(&mut r, 24, 5);
            let bw = n.backward(&fw, &g);
            let jt = match &fw.final_norm {
                Some(c) => normscope::monte_carlo::norm::jacobian(c, &t),
                None => t.clone(),
            };
            let (a, c) = (g.dot(&jt), bw.grads[0].dot(&dx));
            assert!(
                (a - c).abs() < normscope::tolerance::TWO_ROUTES_DEEP * (1.0 + a.abs()),
                "{p} {b} backward: {a} vs {c}"
            );
        }
    }
}

#[test]
fn deepnorm_equals_post_with_scaled_branch_on_the_same_weights() {
    // Norm(alpha x + F_beta(x)) = Norm(x + (beta^2/alpha) F(x)) for a two-matrix branch whose
    // matrices are scaled by beta (ReLU is positively homogeneous), with eps = 0.
    let (alpha, beta) = (1.7, 0.6);
    let deep = net(
        "deepnorm",
        "relu-mlp",
        6,
        0.0,
        RawModel {
            alpha: Some(alpha),
            beta: Some(beta),
            ..RawModel::default()
        },
    );
    let mut post = net(
        "post",
        "relu-mlp",
        6,
        0.0,
        RawModel {
            lambda: Some(beta * beta / alpha),
            ..RawModel::default()
        },
    );
    post.input = deep.input.clone();
    for (pb, db) in post.branches.iter_mut().zip(&deep.branches) {
        let (Branch::Mlp(p), Branch::Mlp(d)) = (pb, db) else {
            panic!("relu-mlp blocks");
        };
        p.w1 = &d.w1 / beta;
        p.w2 = &d.w2 / beta;
    }
    let a = deep.forward(|_, _, _| {}).xs[6].clone();
    let b = post.forward(|_, _, _| {}).xs[6].clone();
    assert!(
        (&a - &b).norm() < normscope::tolerance::ACCUMULATED * a.norm(),
        "{}",
        (&a - &b).norm()
    );
    // The tutorial variant with alpha on the branch, Norm(x + alpha F(x)), is a different
    // network: its x_L differs.
    let mut wrong = post.clone();
    for blk in wrong.spec.segments.iter_mut() {
        blk.block.lambda = normscope::spec::BranchScale::Lambda(alpha * beta * beta);
    }
    let c = wrong.forward(|_, _, _| {}).xs[6].clone();
    assert!((&a - &c).norm() > normscope::tolerance::VISIBLY_DIFFERENT * a.norm());
}

#[test]
fn depth_one_thousand_stays_finite() {
    // DeepNet scale: 1000 blocks at d = 256 without NaN or overflow (one network).
    let raw = RawModel {
        depth: 1000,
        width: 256,
        tokens: 4,
        branch: "relu-mlp".into(),
        hidden_ratio: 1.0,
        ..RawModel::default()
    };
    for p in ["pre", "post", "deepnorm"] {
        let cfg = McConfig::new(&raw, &RawMc::default()).unwrap();
        let spec = cfg
            .model
            .stack(normscope::placement::find(p).unwrap())
            .unwrap();
        let n = sampler::network::<f64>(&spec, &cfg, &mut rng::Rng::seed_from_u64(1));
        let fw = n.forward(|_, _, _| {});
        assert!(
            fw.xs.iter().all(|x| x.iter().all(|v| v.is_finite())),
            "{p} forward"
        );
        let g = sample::gaussian(&mut rng::Rng::seed_from_u64(2), 256, 4);
        let bw = n.backward(&fw, &g);
        assert!(
            bw.grads.iter().all(|x| x.iter().all(|v| v.is_finite())),
            "{p} backward"
        );
    }
}

#[test]
fn f32_networks_follow_f64_networks() {
    // The same seed draws the same weights (f32 = f64 rounded), so an f32 network's forward
    // and backward passes track the f64 ones within f32 rounding, for every branch.
    use normscope::tolerance::F32_REL;
    for b in branches() {
        let raw = RawModel {
            branch: b.into(),
            depth: 4,
            width: 16,
            tokens: 3,
            ..RawModel::default()
        };
        let cfg = McConfig::new(
            &raw,
            &RawMc {
                eps: 1e-5,
                ..RawMc::default()
            },
        )
        .unwrap();
        let spec = cfg
            .model
            .stack(normscope::placement::find("post").unwrap())
            .unwrap();
        let n64 = sampler::network::<f64>(&spec, &cfg, &mut rng::Rng::seed_from_u64(3));
        let n32 = sampler::network::<f32>(&spec, &cfg, &mut rng::Rng::seed_from_u64(3));
        let (f64_, f32_) = (n64.forward(|_, _, _| {}), n32.forward(|_, _, _| {}));
        let rel = |a: &DMatrix<f64>, b: &DMatrix<f32>| {
            (a - b.map(f64::from)).norm() / a.norm().max(f64::MIN_POSITIVE)
        };
        assert!(rel(&f64_.xs[4], &f32_.xs[4]) < F32_REL, "{b} forward");
        let g = DMatrix::from_fn(16, 3, |i, j| ((i + 7 * j) as f64 * 0.3).sin());
        let (g64, g32) = (
            n64.backward(&f64_, &g),
            n32.backward(&f32_, &g.map(|x| x as f32)),
        );
        assert!(rel(&g64.grads[0], &g32.grads[0]) < F32_REL, "{b} backward");
    }
}
