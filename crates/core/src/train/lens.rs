//! The init-time lens on trained weights: a [`TrainModel`] made back into the Monte Carlo
//! engine's [`Network`] (the reverse of [`TrainModel::from_network`]), so the engine's own
//! estimators ([`crate::monte_carlo::measure::measure`]: the path-length law and effective
//! depth, branch weights from the exact decomposition, `cos_prev`, per-block weight gradients)
//! run unchanged on a model at any point of training.
//!
//! The engine's network has no learnable norm affine maps and takes its skip and branch scales
//! from the stack spec, so only a model whose trained parameters are all branch weights maps
//! onto it exactly: trained without affine norms (`--no-affine`), and of a preset without
//! learnable `lambda` (ReZero) or `omega` (Admin) — Pre-LN, Post-LN, DeepNorm, Sandwich, Peri-LN,
//! LayerNorm-Scaling and Mix-LN qualify. [`network`] refuses the others, naming what does not
//! map. The stream `x_0` is the model's own input map applied to the inputs given (the
//! evaluation inputs), not the engine's sampled Gaussian input; the input map and the head are
//! not part of the engine's network (its gradients start from a Gaussian `dL/dx_L`).

use super::model::{Multiplier, Skip, TrainModel};
use crate::monte_carlo::measure::{self, NetworkPlan, Values};
use crate::monte_carlo::network::Network;
use crate::{Error, Result};
use nalgebra::DMatrix;
use normscope_numeric::rng::Rng;

/// The engine's network with `m`'s blocks and input `x0` (d x n), or an error naming the
/// parameter that the engine's network cannot carry.
pub fn network(m: &TrainModel, x0: DMatrix<f64>) -> Result<Network> {
    for (i, b) in m.blocks.iter().enumerate() {
        let l = i + 1;
        let spec = m.spec.block(l);
        let affine = [&b.n_in, &b.n_br, &b.n_out]
            .into_iter()
            .flatten()
            .any(|n| n.gain.is_some() || n.bias.is_some());
        if affine {
            return Err(Error::Undefined(format!(
                "lens: block {l} has learnable norm affine parameters, which the Monte Carlo network does not carry (train with affine = false)"
            )));
        }
        let state = [&b.n_in, &b.n_br, &b.n_out]
            .into_iter()
            .flatten()
            .any(|n| n.alpha.is_some() || n.running.is_some());
        if state {
            return Err(Error::Undefined(format!(
                "lens: block {l}'s norm is {}, whose trained state (DyT's alpha, BatchNorm's running statistics) the Monte Carlo network does not carry",
                m.spec.norm
            )));
        }
        let skip_ok = match (&b.skip, spec.skip) {
            (Skip::Fixed(a), crate::spec::SkipScale::One) => a.to_bits() == 1f64.to_bits(),
            (Skip::Fixed(a), crate::spec::SkipScale::Alpha(s)) => a.to_bits() == s.to_bits(),
            _ => false,
        };
        let lambda_ok = matches!(&b.lambda, Multiplier::Fixed(v) if v.to_bits() == spec.lambda.value().to_bits());
        if !skip_ok || !lambda_ok {
            return Err(Error::Undefined(format!(
                "lens: block {l} has a learnable or changed skip or branch scale (ReZero's lambda, Admin's omega), which the Monte Carlo network takes from the stack spec"
            )));
        }
    }
    let branches: Vec<_> = m.blocks.iter().map(|b| b.branch.clone()).collect();
    let weight_stds = branches
        .iter()
        .map(|b| vec![0.0; b.weights().len()])
        .collect();
    Ok(Network {
        spec: m.spec.clone(),
        branches,
        weight_stds,
        input: x0,
        eps: m.eps,
    })
}

/// The engine's estimators of `plan` on `m` at input `x0` (one network, one draw of the
/// Gaussian tangents and output gradient from `rng`).
pub fn measure(
    m: &TrainModel,
    x0: DMatrix<f64>,
    plan: &NetworkPlan,
    rng: &mut Rng,
) -> Result<Values> {
    Ok(measure::measure(&network(m, x0)?, plan, rng))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(preset: &str, affine: bool) -> (TrainModel, DMatrix<f64>) {
        let (m, set) = crate::train::ablation::tests::tiny(preset, affine);
        let x0 = m.embed(crate::train::pass::views(&set[0]).0);
        (m, x0)
    }

    #[test]
    fn the_network_reproduces_the_models_streams() {
        for p in ["pre", "post", "deepnorm"] {
            let (m, x0) = model(p, false);
            let net = network(&m, x0.clone()).unwrap();
            let fw = net.forward(|_, _, _| {});
            let pass = m.forward_from(x0, 1);
            assert_eq!(fw.xs, pass.xs, "{p}");
        }
    }

    #[test]
    fn parameters_the_engine_cannot_carry_are_refused() {
        let (m, x0) = model("pre", true);
        assert!(network(&m, x0).unwrap_err().to_string().contains("affine"));
        let (m, x0) = model("rezero", false);
        assert!(network(&m, x0).unwrap_err().to_string().contains("lambda"));
    }
}
