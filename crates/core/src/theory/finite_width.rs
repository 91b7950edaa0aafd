//! The leading finite-width correction of the closed form's gradients (`theory --finite-width d`,
//! `compare --finite-width`, applied by [`crate::closed_form::finite_width`]), derived for stacks of norm-after-sum blocks with a linear branch:
//! `x_l = N(alpha_l x_{l-1} + lambda_l W_l x_{l-1})` with Gaussian `W_l` (Post-LN, DeepNorm,
//! Admin; LayerNorm or RMSNorm). Other placements, branches and metrics have no derived
//! correction; for them the `finite-width` analysis reports the measured law instead.
//!
//! # Derivation (per token, to first order in 1/d)
//!
//! By the norm's scale invariance a block acts like `N(x + W x)` with the effective gain
//! `g_l = lambda_l^2 g / alpha_l^2` (`g` the branch's gain per unit input, with DeepNet's beta).
//! Let `x` be the block's input (a norm output: `|x|^2 = d`, `x ⟂ 1`), `xi = W x`,
//! `z = x + xi`, `sigma^2 = |P z|^2/d` (`P` the centring, identity for RMSNorm), `y = P z/sigma`,
//! and `v` the gradient arriving at the block's output. The block's backward map is
//! `g' = (I + W^T) h` with `h = Pi v / sigma`, `Pi` the projection off `1` and `y`. Splitting
//! `W` into its part along `x` (which is `xi x^T/d`, the only part `h` depends on) and the rest,
//! and using `xi^T h = -x^T h` (because `h ⟂ P z`):
//!
//! ```text
//! E|g'|^2 = E|h|^2 (1 + g (1 - 1/d)) - E (x^T h)^2 / d,     E (x^T h)^2 / d = |v|^2 g / (d (1+g)^2)
//! E[1/sigma^2] = (1/mu) (1 + Var sigma^2 / mu^2),  mu = 1 + g - g/d [LN] or 1 + g [RMS],
//!                                                   Var sigma^2 = (4 g + 2 g^2) / d
//! E|Pi v|^2 = |v|^2 (1 - e/d),
//! ```
//!
//! where `e` counts the directions of `v` the norm removes: the gradient arriving from the block
//! above is orthogonal to `y` (scale invariance of that block) and, for LayerNorm, carries a
//! share `g_{l+1}/(d (1 + g_{l+1}))` along `1` (from `W^T h` of the block above), so
//! `e_l = g_{l+1}/(1 + g_{l+1})` (LN) or 0 (RMS); the top block receives an isotropic gradient,
//! `e_L = 2` (LN) or 1 (RMS). Collecting terms, the mean-square gain of block l is the closed
//! form's times
//!
//! ```text
//! F_l = 1 + (K_l - e_l)/d,   K_l = (3 g_l + 2 g_l^2)/(1 + g_l)^2 [LN],  (2 g_l + g_l^2)/(1 + g_l)^2 [RMS]
//! ```
//!
//! so in the interior of a uniform stack every block multiplies the gradient's mean square by
//! `1 + kappa/d`, `kappa = g (g + 2)/(1 + g)^2` for both norms (3/4 at g = 1): the Monte Carlo
//! gradient near the input exceeds the closed form by `(1 + kappa/d)^L ~ exp(kappa L/d)`. The
//! corrected values are
//!
//! ```text
//! grad_sq(l)        = closed form * prod_{i=l+1..L} F_i
//! weight_grad_sq(l) = closed form * prod_{i=l+1..L} F_i * (1 + (B_l - e_l)/d),
//!                     B_l = g_l/(1+g_l) [LN only] + (4 g_l + 2 g_l^2)/(1+g_l)^2   (E|h_l|^2)
//! ```
//!
//! computed as sums of `ln(1 + .)` so that any depth stays finite. Block 1's input is the
//! Monte Carlo engine's Gaussian `x_0` (i.i.d. entries of variance q0), not a norm output: the
//! gradient at `x_0` scales as `1/|x_0|` (scale invariance), `E[d q0/|x_0|^2] = d/(d-2)` adds
//! `2/d`, and LayerNorm's centring of `x_0` adds `1/(d (1+g_1))` to both factors of block 1.
//! Not included: terms of order `L/d^2` and `1/d^2`, and cross-token terms of the weight gradient. A final norm on `x_L` (already normalized)
//! takes `r` directions off the output gradient at unit scale (`r` = 2 for LN, 1 for RMS):
//! `grad_sq(L)` gets `1 - r/d` and block L then has `e_L = 0`. The check against the Monte
//! Carlo engine is `tests/it/finite_width.rs`; Hanin and Nica 2019 (arXiv:1812.05994) find the same
//! `exp(c L/d)` growth of gradient moments for plain ReLU networks.

use crate::branch::BranchModel;
use crate::spec::{SkipScale, StackSpec};

/// The smallest width accepted: the correction is first order in 1/d.
pub const MIN_WIDTH: usize = 8;

/// The neglected second-order terms are allowed as `SECOND_ORDER (L + 2)/d^2` of the value:
/// per block the expansion's next terms are O(1/d^2), so over L blocks O(L/d^2). The
/// coefficient is not derived: it was set before the tests from exploratory Monte Carlo runs
/// (Post-LN, g = 1, d = 64 and 128, L = 16 to 128, 3000 networks), whose residuals after the
/// correction were at most about `6 (L + 2)/d^2`. On corrected values it replaces the
/// first-order allowance of [`crate::metrics::allowance`], which the correction contains.
pub const SECOND_ORDER: f64 = 8.0;

/// The allowance of a corrected value `t` of a depth-`depth` stack at width `d`.
pub fn allowance(t: f64, depth: usize, d: usize) -> f64 {
    SECOND_ORDER * (depth as f64 + 2.0) / (d as f64 * d as f64) * t.abs()
}

/// The largest L/d at which the correction has been checked against the Monte Carlo engine:
/// `tests/it/finite_width.rs` at L = d, and the `finite-width` analysis's coverage on the cells
/// with `L/d <= 1` (its fitted range). Beyond it the check fails or cannot be made: the
/// per-network gradient spreads log-normally with a variance growing like L/d (Hanin and Nica
/// 2019), so the mean of tens of networks falls far below the corrected value (Post-LN,
/// L = 256, d = 32: 17.2 against 387), and the neglected `L/d^2` terms grow. `theory` and
/// `compare` with `--finite-width` add a note beyond it ([`unchecked`]).
pub const CHECKED_MAX_L_OVER_D: f64 = 1.0;

/// The note for a corrected stack of depth `depth` at width `d` whose L/d exceeds
/// [`CHECKED_MAX_L_OVER_D`], or `None` within it.
pub fn unchecked(depth: usize, d: usize) -> Option<String> {
    let r = depth as f64 / d as f64;
    (r > CHECKED_MAX_L_OVER_D).then(|| {
        format!(
            "--finite-width {d}: L/d = {r} exceeds {CHECKED_MAX_L_OVER_D}, the largest L/d at which the correction was checked against Monte Carlo; beyond it the corrected values are unchecked (the finite-width analysis's coverage.csv shows where they fail)"
        )
    })
}

/// Per-layer multiplicative corrections, as natural logs (index = layer, 0..=L).
///
/// # Examples
///
/// Uniform Post-LN with RMSNorm at branch gain g: every interior block multiplies the
/// gradient's second moment by `1 + kappa/d`, `kappa = g (g + 2)/(1 + g)^2` (3/4 at g = 1).
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchModel};
/// use normscope_core::placement::find;
/// use normscope_core::spec::NormKind;
/// use normscope_core::theory::finite_width::correction;
/// let spec = find("post")?.stack(10)?.with_norm(NormKind::Rms);
/// let cfg = BranchConfig { gain: Some(1.0), ..BranchConfig::default() };
/// let c = correction(&spec, &BranchModel::new(&cfg, None, 1.0, 0.0), 100);
/// assert_eq!((c.ln_grad.len(), c.ln_weight[0]), (11, 0.0));
/// assert!((c.ln_grad[4] - c.ln_grad[5] - 0.0075f64.ln_1p()).abs() < 1e-15);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Correction {
    /// `ln prod_{i=l+1..L} F_i`, the factor on `grad_sq(l)`.
    pub ln_grad: Vec<f64>,
    /// The factor on `weight_grad_sq(l)` (index 0 unused, 0).
    pub ln_weight: Vec<f64>,
}

/// The correction of `spec` (which `crate::engine::refusal`'s `NormUse::FiniteWidth` accepts) with branch `model` at width `d`.
pub fn correction(spec: &StackSpec, model: &BranchModel, d: usize) -> Correction {
    let depth = spec.depth;
    let gain = model.forward(1.0, 0.0).0;
    let layer_norm = spec.norm.centers();
    let d = d as f64;
    // Effective gains g_l = lambda^2 g / alpha_l^2; Admin's omega from the profiling rule
    // omega_{l+1}^2 = omega_l^2 q_{l-1} + lambda^2 g q_{l-1}, relative to q_{l-1} (q_l = 1 after
    // the first block, whose q0 cancels in the ratio).
    let mut admin_sq = 1.0;
    let g: Vec<f64> = (1..=depth)
        .map(|l| {
            let b = spec.block(l);
            let lam_sq = b.lambda.value().powi(2);
            let alpha_sq = match b.skip {
                SkipScale::One => 1.0,
                SkipScale::Alpha(a) => a * a,
                SkipScale::AdminOmega => admin_sq,
            };
            if b.skip == SkipScale::AdminOmega {
                admin_sq = alpha_sq + lam_sq * gain;
            }
            lam_sq * gain / alpha_sq
        })
        .collect();
    let e = |l: usize| match (layer_norm, l == depth) {
        (_, true) if spec.final_norm.is_norm() => 0.0,
        (true, true) => 2.0,
        (false, true) => 1.0,
        (true, false) => g[l] / (1.0 + g[l]),
        (false, false) => 0.0,
    };
    let mut ln_grad = vec![0.0; depth + 1];
    let mut ln_weight = vec![0.0; depth + 1];
    // A final norm on the (already normalized) x_L takes the directions 1 and x_L (LN) or
    // x_L (RMS) off the isotropic output gradient at unit scale, so block L loses none.
    let final_norm = spec.final_norm.is_norm();
    let r = if layer_norm { 2.0 } else { 1.0 };
    if final_norm {
        ln_grad[depth] = (-r / d).ln_1p();
    }
    for l in (1..=depth).rev() {
        let gl = g[l - 1];
        let s2 = (1.0 + gl) * (1.0 + gl);
        let jensen = (4.0 * gl + 2.0 * gl * gl) / s2;
        let centring = if layer_norm { gl / (1.0 + gl) } else { 0.0 };
        let k = jensen + centring - gl / (1.0 + gl) - gl / s2;
        let b = jensen + centring;
        // Block 1's input is the Gaussian x_0, not a norm output: E[d q0/|x_0|^2] = d/(d-2)
        // scales the gradient at x_0 (scale invariance), and LN's centring of x_0 lowers
        // E sigma^2 to (1+g)(1 - 1/d), raising 1/mu by 1/(d (1+g)) more than in the interior.
        let (bottom_scale, bottom_centring) = if l == 1 {
            (2.0, if layer_norm { 1.0 / (1.0 + gl) } else { 0.0 })
        } else {
            (0.0, 0.0)
        };
        ln_weight[l] = ln_grad[l] + ((b + bottom_centring - e(l)) / d).ln_1p();
        ln_grad[l - 1] = ln_grad[l] + ((k + bottom_centring + bottom_scale - e(l)) / d).ln_1p();
    }
    Correction { ln_grad, ln_weight }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::NormKind;

    #[test]
    fn interior_factor_is_kappa_over_d_for_both_norms() {
        // Uniform Post-LN at g: F = 1 + kappa/d in the interior, kappa = g (g+2)/(1+g)^2.
        for norm in [NormKind::Layer, NormKind::Rms] {
            for g in [0.25, 1.0, 4.0] {
                let mut spec = crate::placement::find("post").unwrap().stack(10).unwrap();
                spec.norm = norm;
                let cfg = crate::branch::BranchConfig {
                    gain: Some(g),
                    ..crate::branch::BranchConfig::default()
                };
                let model = BranchModel::new(&cfg, None, 1.0, 0.0);
                let c = correction(&spec, &model, 100);
                let kappa = g * (g + 2.0) / ((1.0 + g) * (1.0 + g));
                let step = c.ln_grad[4] - c.ln_grad[5];
                assert!(
                    (step - (kappa / 100.0).ln_1p()).abs() < 1e-15,
                    "{norm:?} {g}"
                );
            }
        }
    }
}
