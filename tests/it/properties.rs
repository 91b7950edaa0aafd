//! Property tests over presets, depth, gain g, alpha, branch (docs/theory.md, "The mean-field closed form" and "The metrics").

use crate::common::*;
use normscope::branch::BranchModel;
use normscope::model::RawModel;
use normscope::placement::REGISTRY;
use normscope::symbolic::{self, Subs};
use normscope::theory::MeanField;
use proptest::prelude::*;

fn raw(depth: usize, g: f64, alpha: Option<f64>, branch: &str) -> RawModel {
    RawModel {
        depth,
        gain: Some(g),
        alpha,
        branch: branch.to_string(),
        ..RawModel::default()
    }
}

fn branch() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("linear"), Just("relu-mlp")]
}

fn preset() -> impl Strategy<Value = &'static str> {
    (0..REGISTRY.len()).prop_map(|i| REGISTRY[i].name)
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64, 20261123))]

    /// Branch weights are shares of E||x_l||^2: each in [0, 1], summing to 1 at every layer
    /// (cross terms vanish in expectation).
    #[test]
    fn branch_weights_are_a_distribution(
        p in preset(), depth in 1usize..40, g in 0.05f64..4.0,
        alpha in proptest::option::of(0.2f64..3.0), b in branch(), lambda in proptest::option::of(0.1f64..2.0),
    ) {
        let r = RawModel { lambda, ..raw(depth, g, alpha, b) };
        let t = table(p, &r);
        for l in 0..=depth as u64 {
            let mut sum = 0.0;
            for j in 0..=l {
                let w = get(&t, "branch_weight", l, Some(j));
                prop_assert!((-normscope::tolerance::ROUNDING..=1.0 + normscope::tolerance::ACCUMULATED).contains(&w), "{p} w[{l},{j}] = {w}");
                sum += w;
            }
            prop_assert!(close(sum, 1.0, normscope::tolerance::ACCUMULATED), "{p} layer {l}: sum {sum}");
        }
    }

    /// DeepNorm(alpha, beta) is Post-Norm with branch multiplier beta^2/alpha for a two-matrix
    /// branch: Norm(alpha x + beta^2 F) = Norm(x + (beta^2/alpha) F) (a norm is scale-invariant).
    /// Every metric agrees, except `coef`, whose sources differ by the factor beta^2 in B_j.
    #[test]
    fn deepnorm_is_post_with_scaled_branch(
        depth in 1usize..30, g in 0.05f64..4.0, alpha in 0.5f64..4.0, beta in 0.05f64..1.5,
    ) {
        let deep = table("deepnorm", &RawModel { beta: Some(beta), ..raw(depth, g, Some(alpha), "relu-mlp") });
        let post = table("post", &RawModel { lambda: Some(beta * beta / alpha), ..raw(depth, g, None, "relu-mlp") });
        prop_assert_eq!(deep.len(), post.len());
        for (k, v) in &deep {
            let w = post[k];
            match k.0.as_str() {
                "coef" if k.2 != Some(0) => {
                    prop_assert!(close(*v * beta * beta, w, normscope::tolerance::TWO_ROUTES), "{k:?}: {v} vs {w}");
                }
                // weight_grad_sq: DeepNorm's last matrix beta W2 sees the input beta a and the
                // gradient (1/alpha) dl/dy, Post's W2 sees a and lambda dl/dy with
                // lambda = beta^2/alpha: ||dW||^2 differs by exactly 1/beta^2.
                "weight_grad_sq" => {
                    prop_assert!(close(*v * beta * beta, w, normscope::tolerance::TWO_ROUTES), "{k:?}: {v} vs {w}");
                }
                _ => prop_assert!(close(*v, w, normscope::tolerance::TWO_ROUTES), "{k:?}: {v} vs {w}"),
            }
        }
    }

    /// Whenever g_b = g (linear and ReLU branches), a path through block l takes the branch
    /// with probability equal to block l's own-branch weight at layer l, so the effective
    /// depth equals sum_l w_{l,l} (Admin's beta_ll^2, Liu et al. 2020).
    #[test]
    fn eff_depth_is_sum_of_own_branch_weights(
        p in preset(), depth in 1usize..40, g in 0.05f64..4.0,
        alpha in proptest::option::of(0.2f64..3.0), b in branch(),
    ) {
        let t = table(p, &raw(depth, g, alpha, b));
        let own: f64 = (1..=depth as u64).map(|l| get(&t, "branch_weight", l, Some(l))).sum();
        let eff = get(&t, "eff_depth", depth as u64, None);
        prop_assert!(close(eff, own, normscope::tolerance::ACCUMULATED), "{p}: eff {eff} vs sum {own}");
    }

    /// The exact symbolic coefficients evaluate to the numeric engine's values.
    #[test]
    fn symbolic_coefficients_match_numeric(
        p in preset(), depth in 1usize..14, g in 0.05f64..4.0,
        alpha in proptest::option::of(0.2f64..3.0), b in branch(), q0 in 0.2f64..5.0,
    ) {
        let r = RawModel { q0, ..raw(depth, g, alpha, b) };
        let model = r.check().unwrap();
        let spec = model.stack(normscope::placement::find(p).unwrap()).unwrap();
        let bm = BranchModel::new(&model.branch, spec.beta, q0, 0.0);
        let ex = symbolic::expand(&spec, &bm, q0, &Subs::default()).unwrap();
        let mf = MeanField::new(&spec, &bm, model.inputs).unwrap();
        for j in 0..=depth {
            let (s, n) = (ex.value(j), mf.coef(depth, j));
            prop_assert!(close(s, n, normscope::tolerance::TWO_ROUTES), "{p} C[{depth},{j}]: symbolic {s} numeric {n} ({})", ex.coefs[j].text());
        }
    }

    /// Path-length shares form a distribution whose mean is eff_depth.
    #[test]
    fn path_lengths_are_a_distribution(p in preset(), depth in 1usize..40, g in 0.05f64..4.0) {
        let t = table(p, &raw(depth, g, None, "linear"));
        let l = depth as u64;
        let (mut total, mut mean) = (0.0, 0.0);
        for k in 0..=l {
            if let Some(v) = t.get(&("path_len".to_string(), l, Some(k))) {
                total += v;
                mean += k as f64 * v;
            }
        }
        prop_assert!(close(total, 1.0, normscope::tolerance::ACCUMULATED));
        prop_assert!(close(mean, get(&t, "eff_depth", l, None), normscope::tolerance::TWO_ROUTES_DEEP));
    }
}
