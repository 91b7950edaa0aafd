//! Hand-derivable closed-form cases: every preset and every metric at depth 1 (depth 2 for
//! `merge_error`, which compares blocks l and l+1), with the seeds' setting alpha = 1, g = 1
//! (linear branch, Xavier init), q0 = 1, c0 = 0. Each expected value is derived in a comment
//! from docs/theory.md, "The mean-field closed form" and "The metrics":
//!
//! ```text
//! s = alpha^2 q0 + lambda^2 q_br,  q_1 = s (or 1 after N_out),  C_{1,0} = n alpha,
//! C_{1,1} = n lambda / sqrt(m)^[N_br],  a^2 = n^2 alpha^2,  b^2 = n^2 lambda^2 (1/m)^[N_br] g (1/q0)^[N_in]
//! ```

use crate::common::*;
use normscope::tolerance::EXACT;

/// Expected depth-1 values, in the order of the fields.
struct Depth1 {
    stream_sq: f64,
    coef: [f64; 2],
    branch_weight: [f64; 2],
    skip_gain: f64,
    branch_gain: f64,
    grad_sq: [f64; 2],
    weight_grad_sq: f64,
    path_len: [f64; 2],
    rel_update: f64,
    cos_prev: f64,
    output_change: f64,
    /// merge_error at layer 1 of the depth-2 stack.
    merge_error_depth2: f64,
}

fn check(preset: &str, e: Depth1) {
    let t = table(preset, &seeds_model(1));
    let tol = EXACT;
    let p = |m: &str| format!("{preset} {m}");
    assert_close(get(&t, "stream_sq", 0, None), 1.0, tol, &p("stream_sq_0"));
    assert_close(
        get(&t, "stream_sq", 1, None),
        e.stream_sq,
        tol,
        &p("stream_sq_1"),
    );
    // c0 = 0 and a linear branch keeps the correlation: kappa(0) = 0, so c_1 = 0.
    assert_close(get(&t, "corr", 1, None), 0.0, tol, &p("corr_1"));
    assert_close(get(&t, "coef", 0, Some(0)), 1.0, tol, &p("coef_00"));
    for j in 0..2 {
        assert_close(
            get(&t, "coef", 1, Some(j)),
            e.coef[j as usize],
            tol,
            &p("coef"),
        );
        let bw = get(&t, "branch_weight", 1, Some(j));
        assert_close(bw, e.branch_weight[j as usize], tol, &p("branch_weight"));
        assert_close(
            get(&t, "grad_sq", j, None),
            e.grad_sq[j as usize],
            tol,
            &p("grad_sq"),
        );
    }
    assert_close(
        get(&t, "skip_gain", 1, None),
        e.skip_gain,
        tol,
        &p("skip_gain"),
    );
    assert_close(
        get(&t, "branch_gain", 1, None),
        e.branch_gain,
        tol,
        &p("branch_gain"),
    );
    let wg = get(&t, "weight_grad_sq", 1, None);
    assert_close(wg, e.weight_grad_sq, tol, &p("weight_grad_sq"));
    assert_close(
        get(&t, "path_len", 1, Some(0)),
        e.path_len[0],
        tol,
        &p("path_len_0"),
    );
    let k1 = t
        .get(&("path_len".into(), 1, Some(1)))
        .copied()
        .unwrap_or(0.0);
    assert_close(k1, e.path_len[1], tol, &p("path_len_1"));
    // eff_depth is the mean path length: 0 * P(0) + 1 * P(1).
    assert_close(
        get(&t, "eff_depth", 1, None),
        e.path_len[1],
        tol,
        &p("eff_depth"),
    );
    assert_close(get(&t, "eff_depth", 0, None), 0.0, tol, &p("eff_depth_0"));
    assert_close(
        get(&t, "rel_update", 1, None),
        e.rel_update,
        tol,
        &p("rel_update"),
    );
    assert_close(
        get(&t, "cos_prev", 1, None),
        e.cos_prev,
        tol,
        &p("cos_prev"),
    );
    let ang = e.cos_prev.acos() / std::f64::consts::PI;
    assert_close(
        get(&t, "angular_dist", 1, None),
        ang,
        tol,
        &p("angular_dist"),
    );
    let oc = get(&t, "output_change", 1, None);
    assert_close(oc, e.output_change, tol, &p("output_change"));
    assert_close(
        get(&t, "output_change", 0, None),
        0.0,
        tol,
        &p("output_change_0"),
    );
    assert!(
        !t.contains_key(&("merge_error".into(), 1, None)),
        "{preset}: merge_error needs l < L"
    );
    let t2 = table(preset, &seeds_model(2));
    let me = get(&t2, "merge_error", 1, None);
    assert_close(me, e.merge_error_depth2, tol, &p("merge_error"));
}

const R2: f64 = std::f64::consts::SQRT_2;

/// Pre-Norm and its depth-1 twins: N_in = Norm gives q_u = 1, m = g = 1; no N_out, so
/// s = q_1 = 1 + 1 = 2, C = (1, 1), weights (1/2, 1/2); a^2 = 1, b^2 = g/q0 = 1, p = 1/2;
/// final Norm: r_1 = 1/q_1 = 1/2, r_0 = (a^2 + b^2) r_1 = 1; weight grad = r_1 * 1 * q_u = 1/2;
/// rel_update = sqrt(0 + 1/1) = 1; cos = sqrt(a^2 q0/q_1) = 1/sqrt 2; output change
/// = m * 1 / q_1 = 1/2. Depth 2: F_2 sees Norm(x_1) and Norm(x_0) with cosine 1/sqrt 2, and a
/// linear branch gives ||u - u'||^2/||u||^2 = 2 - 2 cos = 2 - sqrt 2.
fn pre_like() -> Depth1 {
    Depth1 {
        stream_sq: 2.0,
        coef: [1.0, 1.0],
        branch_weight: [0.5, 0.5],
        skip_gain: 1.0,
        branch_gain: 1.0,
        grad_sq: [1.0, 0.5],
        weight_grad_sq: 0.5,
        path_len: [0.5, 0.5],
        rel_update: 1.0,
        cos_prev: 1.0 / R2,
        output_change: 0.5,
        merge_error_depth2: 2.0 - R2,
    }
}

/// Post-Norm: s = q0 + g q0 = 2, n = 1/sqrt 2, q_1 = 1, C = (1/sqrt 2, 1/sqrt 2), weights
/// (1/2, 1/2); a^2 = b^2 = 1/2, p = 1/2; no final Norm: r_1 = 1, r_0 = 1; weight grad
/// = r_1 n^2 q0 = 1/2; rel_update^2 = (1/sqrt 2 - 1)^2 + 1/2 = 2 - sqrt 2; cos = 1/sqrt 2;
/// output change = m n^2 = 1/2; merge (raw inputs x_1, x_0, both q = 1, cos 1/sqrt 2)
/// = 2 - sqrt 2.
fn post_like() -> Depth1 {
    Depth1 {
        stream_sq: 1.0,
        coef: [1.0 / R2, 1.0 / R2],
        branch_weight: [0.5, 0.5],
        skip_gain: 0.5,
        branch_gain: 0.5,
        grad_sq: [1.0, 1.0],
        weight_grad_sq: 0.5,
        path_len: [0.5, 0.5],
        rel_update: (2.0 - R2).sqrt(),
        cos_prev: 1.0 / R2,
        output_change: 0.5,
        merge_error_depth2: 2.0 - R2,
    }
}

#[test]
fn pre() {
    check("pre", pre_like());
}

#[test]
fn post() {
    check("post", post_like());
}

#[test]
fn lns() {
    // At l = 1 the 1/sqrt(l) scale is 1: Pre-Norm exactly. At depth 2, F_2 sees both inputs
    // scaled by 1/sqrt 2, which cancels in the merge ratio.
    check("lns", pre_like());
}

#[test]
fn mixln() {
    // floor(0.25 * 1) = floor(0.25 * 2) = 0 Post blocks: Pre-Norm exactly.
    check("mixln", pre_like());
}

#[test]
fn sandwich() {
    // N_br = Norm gives q_br = 1 and C_{1,1} = lambda/sqrt(m) = 1; b^2 = (1/m) g (1/q0) = 1:
    // with g = 1 every value equals Pre-Norm's.
    check("sandwich", pre_like());
}

#[test]
fn admin() {
    // omega_1^2 = 1 + (empty sum) = 1: Post-Norm exactly at depth 1.
    check("admin", post_like());
}

#[test]
fn deepnorm() {
    // L = 1: alpha = (2N)^(1/4) = 1 with N = 1/2, beta = (8N)^(-1/4) = 4^(-1/4), so the linear
    // branch has gain g beta^2 = 1/2 = m. s = 1 + 1/2 = 3/2, n^2 = 2/3, q_1 = 1;
    // C_{1,0} = sqrt(2/3), C_{1,1} = sqrt(2/3) (relative to the scaled branch output);
    // weights (2/3, (2/3)(1/2)) = (2/3, 1/3); a^2 = 2/3, b^2 = (1/2)/(3/2) = 1/3, p = 1/3;
    // r = 1; weight grad = n^2 q0 = 2/3; rel_update^2 = (sqrt(2/3) - 1)^2 + (2/3)(1/2)
    // = 2 - 2 sqrt(2/3); cos = sqrt(2/3); output change = m n^2 = 1/3.
    // Depth 2: alpha^2 = sqrt 2, g beta^2 = 8^(-1/2), a_1^2 = sqrt2/(sqrt2 + 1/(2 sqrt2)) = 4/5,
    // cos_1 = sqrt(4/5), merge = 2 - 2 sqrt(4/5).
    let t = (2.0f64 / 3.0).sqrt();
    check(
        "deepnorm",
        Depth1 {
            stream_sq: 1.0,
            coef: [t, t],
            branch_weight: [2.0 / 3.0, 1.0 / 3.0],
            skip_gain: 2.0 / 3.0,
            branch_gain: 1.0 / 3.0,
            grad_sq: [1.0, 1.0],
            weight_grad_sq: 2.0 / 3.0,
            path_len: [2.0 / 3.0, 1.0 / 3.0],
            rel_update: (2.0 - 2.0 * t).sqrt(),
            cos_prev: t,
            output_change: 1.0 / 3.0,
            merge_error_depth2: 2.0 - 2.0 * 0.8f64.sqrt(),
        },
    );
}

#[test]
fn deepnorm_encoder_decoder_decoder_side() {
    // Decoder of an encoder-decoder: M = L/3, alpha = (3M)^(1/4) = L^(1/4), beta = (12M)^(-1/4)
    // = (4L)^(-1/4): the same block constants as deepnorm, so the tables agree.
    for depth in [1, 2, 7] {
        let a = table("deepnorm-ed-dec", &seeds_model(depth));
        let b = table("deepnorm", &seeds_model(depth));
        assert_eq!(a.len(), b.len());
        for (k, v) in &a {
            assert_close(*v, b[k], EXACT, &format!("{k:?}"));
        }
    }
}

#[test]
fn deepnorm_encoder_decoder_encoder_side() {
    // Encoder with N = M = L/2: alpha = 0.81 (N^5)^(1/16), beta = 0.87 (N^5)^(-1/16)
    // (DeepNet, Wang et al. 2022, Fig. 2). At L = 2 (N = 1): alpha = 0.81, beta = 0.87; the
    // linear branch has gain beta^2, so p_1 = beta^2 / (alpha^2 + beta^2).
    let t = table("deepnorm-ed-enc", &seeds_model(2));
    let (a2, b2) = (0.81f64 * 0.81, 0.87f64 * 0.87);
    assert_close(
        get(&t, "skip_gain", 1, None),
        a2 / (a2 + b2),
        EXACT,
        "a_1^2",
    );
    assert_close(
        get(&t, "branch_weight", 1, Some(1)),
        b2 / (a2 + b2),
        EXACT,
        "w_11",
    );
}

#[test]
fn rezero() {
    // lambda = 0: x_1 = x_0, C = (1, 0), weights (1, 0); a^2 = 1, b^2 = 0, p = 0 (the length-1
    // path has zero weight and is not written); r = 1; weight grad = r_1 lambda^2 q0 = 0;
    // rel_update = 0, cos = 1; output change = m lambda^2 = 0; merge: F_2(x_1) = F_2(x_0), 0.
    check(
        "rezero",
        Depth1 {
            stream_sq: 1.0,
            coef: [1.0, 0.0],
            branch_weight: [1.0, 0.0],
            skip_gain: 1.0,
            branch_gain: 0.0,
            grad_sq: [1.0, 1.0],
            weight_grad_sq: 0.0,
            path_len: [1.0, 0.0],
            rel_update: 0.0,
            cos_prev: 1.0,
            output_change: 0.0,
            merge_error_depth2: 0.0,
        },
    );
}

#[test]
fn admin_depth_two_equalizes_like_pre_norm() {
    // omega_2^2 = 1 + m_1 = 2, s_2 = 2 + 1 = 3: C_{2,j} = 1/sqrt 3 for all j, weights 1/3 each
    // (Admin reproduces Pre-LN's shares at init, Liu et al. 2020).
    let t = table("admin", &seeds_model(2));
    for j in 0..3 {
        assert_close(
            get(&t, "coef", 2, Some(j)),
            1.0 / 3f64.sqrt(),
            EXACT,
            "C_2j",
        );
        assert_close(
            get(&t, "branch_weight", 2, Some(j)),
            1.0 / 3.0,
            EXACT,
            "w_2j",
        );
    }
}

#[test]
fn mixln_switches_at_a_quarter() {
    // L = 4: block 1 is Post (q_1 = 1), blocks 2..4 Pre (q_l = q_{l-1} + 1): q_4 = 4.
    let t = table("mixln", &seeds_model(4));
    assert_close(get(&t, "stream_sq", 1, None), 1.0, EXACT, "q_1");
    assert_close(get(&t, "stream_sq", 4, None), 4.0, EXACT, "q_4");
}

#[test]
fn lns_scales_the_branch_input() {
    // q_2 = q_1 + g/2 = 2.5 (the second branch sees Norm(x_1)/sqrt 2).
    let t = table("lns", &seeds_model(2));
    assert_close(get(&t, "stream_sq", 2, None), 2.5, EXACT, "q_2");
}

#[test]
fn relu_branch_correlation_map() {
    // A ReLU MLP maps correlation 0 to kappa(0) = 1/pi (arc-cosine kernel, Cho and Saul 2009).
    // Post at depth 1: c_1 = (q0 c0 + m kappa(0)) / s with m = g q0: c_1 = g/pi/(1 + g).
    let raw = normscope::model::RawModel {
        branch: "relu-mlp".into(),
        ..seeds_model(1)
    };
    let t = table("post", &raw);
    let g = 8.0 / 25.0; // Xavier, ratio 4: g = 2r/(1+r)^2.
    let want = g / std::f64::consts::PI / (1.0 + g);
    assert_close(get(&t, "corr", 1, None), want, EXACT, "c_1");
}

#[test]
fn uniform_attention_pre_norm_depth_one() {
    // Pre-Norm, uniform attention (W_Q = W_K = 0), Xavier so sV = sO = 1, n = 8 tokens with
    // correlation c0 = 1/2: every token gets W_O W_V of the token mean, whose second moment is
    // q_u (c0 + (1 - c0)/n) = 1/2 + 1/16 = 9/16 (q_u = 1 after Norm). So q_1 = 1 + 9/16; the
    // output is the same for all tokens (kappa = 1): c_1 = (1 * 1/2 + 9/16 * 1)/(25/16) = 17/25.
    // Backward, each token's output gradient reaches its own input with weight 1/n:
    // b^2 = sV sO / n / q0 = 1/8.
    let raw = normscope::model::RawModel {
        branch: "uniform-attention".into(),
        tokens: 8,
        c0: 0.5,
        ..seeds_model(1)
    };
    let t = table("pre", &raw);
    assert_close(get(&t, "stream_sq", 1, None), 25.0 / 16.0, EXACT, "q_1");
    assert_close(get(&t, "corr", 1, None), 17.0 / 25.0, EXACT, "c_1");
    assert_close(get(&t, "branch_gain", 1, None), 1.0 / 8.0, EXACT, "b^2");
    assert_close(
        get(&t, "branch_weight", 1, Some(1)),
        9.0 / 25.0,
        EXACT,
        "w_11",
    );
}

#[test]
fn cross_attention_does_not_depend_on_the_stream() {
    // Post-Norm with cross-attention to a memory distributed like the input (q0 = 1, c0 = 0,
    // n = 4): the branch outputs W_O W_V of the memory mean, second moment 1/4, identical for
    // every token (kappa = 1), and its Jacobian w.r.t. the stream is zero: b^2 = 0, so no
    // Jacobian path takes a branch (eff_depth = 0) although the branch carries
    // (1/4)/(1 + 1/4) = 1/5 of the stream at layer 1.
    let raw = normscope::model::RawModel {
        branch: "cross-attention".into(),
        tokens: 4,
        ..seeds_model(3)
    };
    let t = table("post", &raw);
    assert_close(get(&t, "branch_weight", 1, Some(1)), 0.2, EXACT, "w_11");
    assert_close(get(&t, "branch_gain", 2, None), 0.0, EXACT, "b^2");
    assert_close(get(&t, "eff_depth", 3, None), 0.0, EXACT, "eff");
    assert_close(get(&t, "merge_error", 1, None), 0.0, EXACT, "merge");
}

#[test]
fn post_norm_gradient_decays_by_one_over_one_plus_g_per_cross_attention_block() {
    // Post-Norm with cross-attention (Xavier, so sV = sO = 1; q0 = 1, c0 = 0, n tokens): the
    // branch outputs W_O W_V m of the memory mean, forward gain g = sV sO q0 (c0 + (1-c0)/n)
    // = 1/n, and its Jacobian w.r.t. the stream is zero (docs/theory.md, "Branches": g_b = 0).
    // Block l is x_l = N(x_{l-1} + F_l) with q_{l-1} = 1 (after the previous N; q0 = 1), so
    // N's input has second moment 1 + g and its Jacobian scales a gradient's mean square by
    // 1/(1+g) (section 4), while the branch path adds nothing backward:
    //   grad_sq_{l-1} = grad_sq_l / (1+g),  so  grad_sq_0 / grad_sq_L = (1+g)^-L.
    // Block l's last-matrix (W_O) gradient is the gradient at the branch output,
    // grad_sq_l/(1+g), times the second moment of W_O's input W_V m, sV/n = g, the same in
    // every block; so weight_grad_sq_L = g/(1+g) (grad_sq_L = 1) and
    //   weight_grad_sq_1 / weight_grad_sq_L = (1+g)^-(L-1):
    // Post-LN's gradient vanishes toward the input through cross-attention (encoder-decoder
    // attention) sublayers, as Liu et al. 2020 (arXiv:2004.08249) observe, while a stack whose
    // branch depends on the stream keeps the ratio at 1 (hand_cases' post, claims ledger).
    for (n, depth) in [(4usize, 12usize), (16, 40)] {
        let raw = normscope::model::RawModel {
            branch: "cross-attention".into(),
            tokens: n,
            ..seeds_model(depth)
        };
        let t = table("post", &raw);
        let g = 1.0 / n as f64;
        let l = depth as u64;
        let what = |m: &str| format!("n = {n}, L = {depth}: {m}");
        let last = get(&t, "weight_grad_sq", l, None);
        assert_close(last, g / (1.0 + g), EXACT, &what("weight_grad_sq_L"));
        // Relative checks: the ratios are far below 1, where assert_close is absolute.
        let ratio = get(&t, "weight_grad_sq", 1, None) / last;
        let want = (1.0 + g).powi(-(depth as i32 - 1));
        assert_close(ratio / want, 1.0, EXACT, &what("weight-gradient ratio"));
        let grads = get(&t, "grad_sq", 0, None) / get(&t, "grad_sq", l, None);
        let want = (1.0 + g).powi(-(depth as i32));
        assert_close(grads / want, 1.0, EXACT, &what("grad_sq ratio"));
    }
}

#[test]
fn he_and_torch_default_gains() {
    // He ReLU MLP: s1 = s2 = 2, g = s1 s2/2 = 2 (He et al. 2015). Post at depth 1: the branch
    // carries g/(1+g) = 2/3 of x_1. torch-default linear: Var = 1/(3 fan_in), g = 1/3:
    // Pre at depth 1: q_1 = 1 + 1/3.
    let he = normscope::model::RawModel {
        branch: "relu-mlp".into(),
        init: "he".into(),
        ..seeds_model(1)
    };
    let t = table("post", &he);
    assert_close(get(&t, "branch_weight", 1, Some(1)), 2.0 / 3.0, EXACT, "He");
    let torch = normscope::model::RawModel {
        init: "torch-default".into(),
        ..seeds_model(1)
    };
    let t = table("pre", &torch);
    assert_close(get(&t, "stream_sq", 1, None), 4.0 / 3.0, EXACT, "torch");
}

#[test]
fn identity_norm_removes_every_norm() {
    // --norm identity: Post-Norm becomes x_l = x_{l-1} + F(x_{l-1}), so q_l = (1 + g)^l q0
    // = 2^l, a^2 = 1, b^2 = g = 1, and grad_sq at x_0 = 2^L (no final norm).
    let raw = normscope::model::RawModel {
        norm: normscope::spec::NormKind::Identity,
        ..seeds_model(5)
    };
    let t = table("post", &raw);
    assert_close(get(&t, "stream_sq", 5, None), 32.0, EXACT, "q_5");
    assert_close(get(&t, "grad_sq", 0, None), 32.0, EXACT, "r_0");
    assert_close(get(&t, "skip_gain", 3, None), 1.0, EXACT, "a^2");
}
