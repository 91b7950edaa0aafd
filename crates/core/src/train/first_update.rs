//! The output change of one Adam-like update at init, per unit learning rate: the predictor of
//! the stability law (docs/training.md, "The stability law"; Liu et al. 2020, arXiv:2004.08249, section 4:
//! instability as amplification of the output change).
//!
//! **Adam's first update** moves every parameter by about the learning rate. With
//! bias-corrected moments `m_1 = g`, `v_1 = g^2` (PyTorch's `torch.optim.Adam` at step 1), the
//! update is exactly
//!
//! ```text
//! delta theta_i = -lr g_i / (|g_i| + eps)          (= -lr sign(g_i) where |g_i| >> eps)
//! ```
//!
//! whatever the gradient's scale. To first order in `lr` the output on the probe batch `P`
//! changes by `lr J u` with `u_i = g_i / (|g_i| + eps)` and `J` the output's Jacobian, so
//!
//! ```text
//! c = || J u ||_F / sqrt(columns)       (output change per unit lr, the RMS over tokens)
//! ```
//!
//! ([`first_update`]), the same normalisation as the training log's `output_change`. If a run
//! becomes unstable once its first-update output change `lr c` exceeds a threshold `tau` that
//! does not depend on the preset or depth, the maximum stable rate is `tau / c`: **slope -1** of
//! `log lr_max` on `log c`, and presets with equal `c` have equal `lr_max`.
//!
//! **A random-sign update** ([`random_sign`]): every branch weight moved by `+-lr` with
//! independent signs (what "every weight moved by about lr" means without the gradient's
//! direction; the mean field's perturbation with entry variance `lr^2`). Its squared output
//! change is what the closed form's `output_change` gives for a perturbation of variance
//! `eps^2 Var(W)` with `eps^2 = lr^2 / Var(W)`.

use super::model::{ParamInfo, TrainModel};
use super::pass;
use super::pass::views;
use super::task::Batch;
use nalgebra::DMatrix;
use normscope_numeric::rng::Rng;
use rand::{RngExt, SeedableRng};

/// `||t||_F / sqrt(columns)` of an output tangent.
fn rms(t: &DMatrix<f64>) -> f64 {
    (t.norm_squared() / t.ncols() as f64).sqrt()
}

/// The output change per unit learning rate of Adam's first update (module docs): the
/// gradient on `first` (the run's first batch), the direction `g / (|g| + eps)` for every
/// parameter, its output tangent on `probe`.
pub fn first_update(m: &TrainModel, first: &Batch, probe: &Batch, eps: f64) -> f64 {
    let (input, target) = views(first);
    let p = m.forward(input);
    let (_, g) = pass::loss(&p.output, target);
    let grads = m.backward(input, &p, &g);
    let u: Vec<DMatrix<f64>> = grads
        .iter()
        .map(|g| g.map(|x| x / (x.abs() + eps)))
        .collect();
    let (probe_in, _) = views(probe);
    let pp = m.forward(probe_in);
    rms(&m.jvp(probe_in, &pp, &u))
}

/// Whether a parameter is a branch weight (a matrix of a block's branch `F_l`), not an input
/// map, head, norm gain or bias, Admin's omega or ReZero's lambda.
pub(crate) fn is_branch_weight(info: &ParamInfo, depth: usize) -> bool {
    (1..=depth).contains(&info.layer)
        && !info.name.contains('.')
        && info.name != "omega"
        && info.name != "lambda"
}

/// The output change per unit learning rate of a random-sign update of the branch weights
/// (module docs), the signs drawn from `Xoshiro256++` seeded with `seed`, parameter by
/// parameter in [`TrainModel::params`] order, entries in column-major order.
pub fn random_sign(m: &TrainModel, probe: &Batch, seed: u64) -> f64 {
    let mut rng = Rng::seed_from_u64(seed);
    let depth = m.depth();
    let u: Vec<DMatrix<f64>> = m
        .params()
        .iter()
        .map(|(info, w)| {
            if is_branch_weight(info, depth) {
                w.map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
            } else {
                DMatrix::zeros(w.nrows(), w.ncols())
            }
        })
        .collect();
    let (probe_in, _) = views(probe);
    let pp = m.forward(probe_in);
    rms(&m.jvp(probe_in, &pp, &u))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::RawTrain;
    use crate::train::optim::Optimizer;
    use crate::train::{run, sweep};

    /// The first-order prediction against the real first Adam update, by finite learning
    /// rates: the actual output change divided by lr tends to `c` as lr -> 0.
    #[test]
    fn matches_the_first_adam_update_to_first_order() {
        let raw = RawTrain {
            presets: "post".into(),
            model: crate::model::RawModel {
                depth: 4,
                ..RawTrain::default().model
            },
            steps: 1,
            batch: 4,
            ..RawTrain::default()
        };
        let cfg = raw.check().unwrap();
        let (task, eval) = sweep::task_and_eval(&raw).unwrap();
        let (m0, _, first) = run::start(&cfg, task.as_ref(), cfg.presets[0], 0).unwrap();
        let eps = 1e-8;
        let c = first_update(&m0, &first, &eval[0], eps);
        assert!(c.is_finite() && c > 0.0);
        let (input, target) = views(&first);
        let p = m0.forward(input);
        let (_, g) = pass::loss(&p.output, target);
        let grads = m0.backward(input, &p, &g);
        let f0 = m0.forward(views(&eval[0]).0).output;
        let shapes: Vec<(usize, usize)> = grads.iter().map(|g| g.shape()).collect();
        let decay = vec![false; shapes.len()];
        let mut ratios = Vec::new();
        for lr in [1e-4, 1e-5] {
            let mut m = m0.clone();
            let mut opt = Optimizer::<f64>::new_as(cfg.optimizer, &shapes, &decay);
            opt.step(&mut m.params_mut(), &grads, lr);
            let f1 = m.forward(views(&eval[0]).0).output;
            ratios.push(rms(&(f1 - &f0)) / lr / c);
        }
        // Second-order terms shrink with lr: the ratio approaches 1 linearly.
        assert!((ratios[1] - 1.0).abs() < 2e-3, "{ratios:?}");
        assert!(
            (ratios[1] - 1.0).abs() < (ratios[0] - 1.0).abs(),
            "{ratios:?}"
        );
    }

    #[test]
    fn random_signs_move_only_branch_weights() {
        let raw = RawTrain {
            presets: "pre".into(),
            model: crate::model::RawModel {
                depth: 2,
                ..RawTrain::default().model
            },
            batch: 2,
            ..RawTrain::default()
        };
        let cfg = raw.check().unwrap();
        let (task, eval) = sweep::task_and_eval(&raw).unwrap();
        let (m, _, _) = run::start(&cfg, task.as_ref(), cfg.presets[0], 0).unwrap();
        let names: Vec<String> = m
            .params()
            .iter()
            .filter(|(i, _)| is_branch_weight(i, 2))
            .map(|(i, _)| i.name.clone())
            .collect();
        assert_eq!(names, ["wq", "wk", "wv", "wo", "w1", "w2"]);
        let a = random_sign(&m, &eval[0], 1);
        assert!(a > 0.0);
        assert_eq!(a.to_bits(), random_sign(&m, &eval[0], 1).to_bits());
        assert_ne!(a.to_bits(), random_sign(&m, &eval[0], 2).to_bits());
    }
}
