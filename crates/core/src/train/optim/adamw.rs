//! **AdamW** (`torch.optim.AdamW`, Loshchilov and Hutter 2019, arXiv:1711.05101, decoupled
//! weight decay), as `_single_tensor_adamw` in `torch/optim/adamw.py` computes it: first
//!
//! ```text
//! p <- p (1 - lr wd)                        (`param.mul_(1 - lr * weight_decay)`)
//! ```
//!
//! only for the parameters whose decay flag is set (PyTorch: a parameter group with
//! `weight_decay=0` for the others), then the Adam update ([`super::adam`]) with Adam's
//! hyperparameters, which AdamW shares ([`AdamW::adam`], the same flags).

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

use super::adam::{Adam, AdamState};
use super::{Algorithm, finite_nonnegative};

hyperparameters! {
    /// AdamW's hyperparameters: `torch.optim.AdamW(lr, betas=(beta1, beta2), eps,
    /// weight_decay)`.
    ///
    /// # Examples
    ///
    /// PyTorch's defaults, and the decoupled decay alone (a zero gradient leaves Adam's update
    /// zero): `p (1 - lr wd)` for a parameter flagged for decay, nothing for the other.
    ///
    /// ```rust
    /// use nalgebra::DMatrix;
    /// use normscope_core::train::optim::{Adam, AdamW, Optimizer, OptimizerKind};
    ///
    /// let adamw = AdamW::default();
    /// assert_eq!((adamw.adam, adamw.weight_decay), (Adam::default(), 0.01));
    /// let kind = OptimizerKind::AdamW(AdamW { weight_decay: 0.5, ..adamw });
    /// let mut opt = Optimizer::new(kind, &[(1, 1), (1, 1)], &[true, false]);
    /// let mut w = DMatrix::from_element(1, 1, 2.0);
    /// let mut gain = w.clone();
    /// let zero = DMatrix::zeros(1, 1);
    /// opt.step(&mut [&mut w, &mut gain], &[zero.clone(), zero], 0.5);
    /// assert_eq!((w[0], gain[0]), (1.5, 2.0)); // 2 (1 - 0.5 x 0.5)
    /// ```
    pub struct AdamW {
        /// Adam's `beta1`, `beta2` and `eps` (their flags are Adam's).
        adam: Adam
    };
    /// The flag of the hyperparameter AdamW adds to Adam's (`--weight-decay`).
    ///
    /// # Examples
    ///
    /// `--weight-decay 0` resolved for AdamW, and refused for Adam, which has no such flag:
    ///
    /// ```rust
    /// use normscope_core::Error;
    /// use normscope_core::train::optim::{AdamW, AdamWFlags, OptimizerFlags, OptimizerKind};
    ///
    /// let flags = OptimizerFlags {
    ///     adamw: AdamWFlags { weight_decay: Some(0.0) },
    ///     ..OptimizerFlags::default()
    /// };
    /// let OptimizerKind::AdamW(adamw) = OptimizerKind::resolve("adamw", &flags)? else {
    ///     unreachable!()
    /// };
    /// assert_eq!(adamw, AdamW { weight_decay: 0.0, ..AdamW::default() });
    /// let err = OptimizerKind::resolve("adam", &flags).unwrap_err();
    /// assert!(matches!(err, Error::InvalidParam { field: "--weight-decay", .. }));
    /// # Ok::<(), Error>(())
    /// ```
    pub struct AdamWFlags;
    /// Decoupled weight decay `wd` >= 0 (applied only to parameters flagged for decay;
    /// PyTorch's default 0.01, `torch.optim.AdamW`'s `weight_decay=1e-2`).
    weight_decay = 0.01, flag weight_decay "--weight-decay", check finite_nonnegative,
        help "AdamW's decoupled weight decay (default 0.01; matrices only).";
}

impl Algorithm for AdamW {
    const NAME: &'static str = "adamw";

    type State<T: Real> = AdamState<T>;

    fn state<T: Real>(&self, shapes: &[(usize, usize)]) -> AdamState<T> {
        self.adam.state(shapes)
    }

    /// The decay `p <- p (1 - lr wd)` of the parameters flagged in `decay`, then
    /// [`Adam::update`].
    fn step<T: Real>(
        &self,
        state: &mut AdamState<T>,
        params: &mut [&mut DMatrix<T>],
        grads: &[DMatrix<T>],
        decay: &[bool],
        lr: f64,
        t: u64,
    ) {
        let weight_decay = self.weight_decay;
        // `param.mul_(1 - lr * weight_decay)`, skipped where the group's decay is 0.
        let factor = T::of(1.0 - lr * weight_decay);
        for (p, &decay) in params.iter_mut().zip(decay) {
            if decay && weight_decay != 0.0 {
                p.as_mut_slice().iter_mut().for_each(|x| *x *= factor);
            }
        }
        self.adam.update(state, params, grads, lr, t);
    }

    /// Adam's `v` of parameter `i`.
    fn second_moment<T: Real>(state: &AdamState<T>, i: usize) -> Option<&DMatrix<T>> {
        Adam::second_moment(state, i)
    }

    /// Adam's `beta2`.
    fn second_moment_decay(&self) -> Option<f64> {
        self.adam.second_moment_decay()
    }

    /// Adam's `eps`.
    fn denominator_eps(&self) -> Option<f64> {
        self.adam.denominator_eps()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{adam, close};
    use super::super::{Optimizer, OptimizerKind};
    use super::*;
    use normscope_numeric::tolerance::{ROUNDING, ROUNDING_CHAIN};

    #[test]
    fn adamw_decays_only_flagged_parameters() {
        let lr = 0.01;
        let wd = 0.1;
        let kind = OptimizerKind::AdamW(AdamW {
            adam: Adam {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
            },
            weight_decay: wd,
        });
        let p0 = DMatrix::from_row_slice(2, 2, &[1.0, -2.0, 0.5, 3.0]);
        let g = DMatrix::from_row_slice(2, 2, &[0.3, 0.1, -0.2, 0.0]);
        let (mut decayed, mut kept) = (p0.clone(), p0.clone());
        let mut opt = Optimizer::new(kind, &[(2, 2), (2, 2)], &[true, false]);
        opt.step(&mut [&mut decayed, &mut kept], &[g.clone(), g.clone()], lr);

        // Plain Adam on the same parameter and gradient.
        let mut plain = p0.clone();
        let mut reference = Optimizer::new(adam(), &[(2, 2)], &[true]);
        reference.step(&mut [&mut plain], std::slice::from_ref(&g), lr);
        for j in 0..4 {
            // Not flagged: exactly Adam.
            assert_eq!(kept[j].to_bits(), plain[j].to_bits(), "{j}");
            // Flagged: p0 (1 - lr wd) then the same Adam step.
            let expected = p0[j] * (1.0 - lr * wd) + (plain[j] - p0[j]);
            assert!(close(decayed[j], expected, ROUNDING), "{j}");
            assert!((decayed[j] - kept[j] + lr * wd * p0[j]).abs() < ROUNDING_CHAIN);
        }
        // Where the gradient is 0 only the decay moves the parameter.
        assert!(close(decayed[3], 3.0 * (1.0 - 0.001), ROUNDING));
        assert_eq!(kept[3].to_bits(), 3.0_f64.to_bits());
    }
}
