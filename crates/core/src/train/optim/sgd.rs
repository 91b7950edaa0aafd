//! **SGD** (`torch.optim.SGD`, dampening 0, no Nesterov, no weight decay; Sutskever et al. 2013
//! in PyTorch's form), as `_single_tensor_sgd` in `torch/optim/sgd.py` computes it:
//!
//! ```text
//! momentum = 0:  p <- p - lr g
//! momentum > 0:  b <- g                  (t = 1: `torch.clone(grad)`)
//!                b <- (mu b) + g         (t > 1: `buf.mul_(momentum).add_(grad)`)
//!                p <- p - lr b           (`param.add_(buf, alpha=-lr)`)
//! ```

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

use super::{Algorithm, unit_interval};

hyperparameters! {
    /// SGD's hyperparameters: `torch.optim.SGD(lr, momentum, dampening=0, nesterov=False,
    /// weight_decay=0)`.
    ///
    /// # Examples
    ///
    /// PyTorch's default is plain gradient descent, `p <- p - lr g`:
    ///
    /// ```rust
    /// use nalgebra::DMatrix;
    /// use normscope_core::Error;
    /// use normscope_core::train::optim::{Hyperparameters, Optimizer, OptimizerKind, Sgd};
    ///
    /// assert_eq!(Sgd::default(), Sgd { momentum: 0.0 });
    /// let mut opt = Optimizer::new(OptimizerKind::Sgd(Sgd::default()), &[(1, 1)], &[true]);
    /// let mut p = DMatrix::from_element(1, 1, 1.0);
    /// opt.step(&mut [&mut p], &[DMatrix::from_element(1, 1, 0.5)], 0.25);
    /// assert_eq!(p[0], 0.875); // 1 - 0.25 x 0.5
    /// // The momentum is in [0, 1); the error names its flag.
    /// let err = Sgd { momentum: 1.0 }.check().unwrap_err();
    /// assert!(matches!(err, Error::InvalidParam { field: "--momentum", .. }));
    /// ```
    pub struct Sgd;
    /// The flag of SGD's hyperparameter (`--momentum`).
    ///
    /// # Examples
    ///
    /// `--momentum 0.9` as the command line gives it, resolved for SGD and refused for Adam:
    ///
    /// ```rust
    /// use normscope_core::Error;
    /// use normscope_core::train::optim::{OptimizerFlags, OptimizerKind, Sgd, SgdFlags};
    ///
    /// let flags = OptimizerFlags {
    ///     sgd: SgdFlags { momentum: Some(0.9) },
    ///     ..OptimizerFlags::default()
    /// };
    /// let sgd = OptimizerKind::resolve("sgd", &flags)?;
    /// assert_eq!(sgd, OptimizerKind::Sgd(Sgd { momentum: 0.9 }));
    /// let err = OptimizerKind::resolve("adam", &flags).unwrap_err();
    /// assert!(matches!(err, Error::InvalidParam { field: "--momentum", .. }));
    /// # Ok::<(), Error>(())
    /// ```
    pub struct SgdFlags;
    /// Momentum `mu` in `[0, 1)`; 0 (PyTorch's default) is plain gradient descent.
    momentum = 0.0, flag momentum "--momentum", check unit_interval,
        help "SGD momentum (default 0).";
}

/// SGD's per-parameter state: the momentum buffers `b` (none when the momentum is 0, as
/// PyTorch keeps none).
///
/// # Examples
///
/// The state [`Algorithm::state`] makes, carried from one step to the next: the buffer is the
/// gradient after step 1, then `mu b + g`.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::train::optim::{Algorithm, Sgd, SgdState};
///
/// let sgd = Sgd { momentum: 0.9 };
/// let mut state: SgdState<f64> = sgd.state(&[(1, 1)]);
/// let mut p = DMatrix::from_element(1, 1, 0.0);
/// let g = [DMatrix::from_element(1, 1, 1.0)];
/// sgd.step(&mut state, &mut [&mut p], &g, &[true], 0.5, 1);
/// assert_eq!(p[0], -0.5); // b = g = 1
/// sgd.step(&mut state, &mut [&mut p], &g, &[true], 0.5, 2);
/// assert_eq!(p[0], -0.5 - 0.5 * (0.9 * 1.0 + 1.0)); // b = 0.9 b + g = 1.9
/// assert!(Sgd::second_moment(&state, 0).is_none());
/// ```
#[derive(Clone, Debug)]
pub struct SgdState<T: Real> {
    buffers: Vec<DMatrix<T>>,
}

impl Algorithm for Sgd {
    const NAME: &'static str = "sgd";

    type State<T: Real> = SgdState<T>;

    fn state<T: Real>(&self, shapes: &[(usize, usize)]) -> SgdState<T> {
        // Without momentum PyTorch keeps no buffer.
        let buffers = if self.momentum == 0.0 {
            Vec::new()
        } else {
            shapes.iter().map(|&(r, c)| DMatrix::zeros(r, c)).collect()
        };
        SgdState { buffers }
    }

    /// SGD with momentum `mu` (dampening 0): `b <- g` on the first step, else `b <- mu b + g`;
    /// `p <- p - lr b`. Without momentum `p <- p - lr g`. No weight decay (`decay` unused).
    fn step<T: Real>(
        &self,
        state: &mut SgdState<T>,
        params: &mut [&mut DMatrix<T>],
        grads: &[DMatrix<T>],
        _decay: &[bool],
        lr: f64,
        t: u64,
    ) {
        let momentum = self.momentum;
        let first = t == 1;
        let buffers = &mut state.buffers;
        let (mu, lr_t) = (T::of(momentum), T::of(lr));
        for (i, p) in params.iter_mut().enumerate() {
            let g = &grads[i];
            let d = if momentum == 0.0 {
                g
            } else {
                let b = &mut buffers[i];
                if first {
                    // `buf = torch.clone(grad).detach()`.
                    b.copy_from(g);
                } else {
                    // `buf.mul_(momentum).add_(grad, alpha=1 - dampening)`, dampening 0.
                    for (b, &g) in b.as_mut_slice().iter_mut().zip(g.as_slice()) {
                        *b = *b * mu + g;
                    }
                }
                &buffers[i]
            };
            // `param.add_(d, alpha=-lr)`: p + (-lr) d, the same double as p - lr d.
            for (p, &d) in p.as_mut_slice().iter_mut().zip(d.as_slice()) {
                *p -= lr_t * d;
            }
        }
    }

    /// None: SGD keeps no second moment.
    fn second_moment<T: Real>(_state: &SgdState<T>, _i: usize) -> Option<&DMatrix<T>> {
        None
    }

    /// None: SGD keeps no second moment.
    fn second_moment_decay(&self) -> Option<f64> {
        None
    }

    /// None: SGD's update has no denominator.
    fn denominator_eps(&self) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::close;
    use super::super::{Optimizer, OptimizerKind};
    use super::*;
    use normscope_numeric::tolerance::ROUNDING;

    #[test]
    fn sgd_momentum_buffer_is_the_gradient_then_accumulates() {
        let kind = OptimizerKind::Sgd(Sgd { momentum: 0.9 });
        let lr = 0.5;
        let mut p = DMatrix::from_row_slice(1, 2, &[1.0, 1.0]);
        let mut opt = Optimizer::new(kind, &[(1, 2)], &[true]);
        // Step 1: b = g1 = (0.2, -0.4); p = 1 - 0.5 b = (0.9, 1.2).
        opt.step(
            &mut [&mut p],
            &[DMatrix::from_row_slice(1, 2, &[0.2, -0.4])],
            lr,
        );
        assert!(close(p[0], 0.9, ROUNDING) && close(p[1], 1.2, ROUNDING));
        // Step 2: b = 0.9 g1 + g2 = (0.18 + 0.1, -0.36 + 0.0) = (0.28, -0.36);
        // p = (0.9 - 0.14, 1.2 + 0.18) = (0.76, 1.38).
        opt.step(
            &mut [&mut p],
            &[DMatrix::from_row_slice(1, 2, &[0.1, 0.0])],
            lr,
        );
        assert!(close(p[0], 0.76, ROUNDING), "{}", p[0]);
        assert!(close(p[1], 1.38, ROUNDING), "{}", p[1]);
        assert!(opt.second_moment(0).is_none());
    }

    #[test]
    fn sgd_without_momentum_is_gradient_descent() {
        let mut p = DMatrix::from_row_slice(1, 2, &[1.0, -1.0]);
        let mut opt = Optimizer::new(OptimizerKind::parse("sgd").unwrap(), &[(1, 2)], &[true]);
        let g = DMatrix::from_row_slice(1, 2, &[0.5, 0.25]);
        opt.step(&mut [&mut p], std::slice::from_ref(&g), 0.1);
        opt.step(&mut [&mut p], std::slice::from_ref(&g), 0.1);
        // Two identical steps without momentum: p - 2 lr g.
        assert!(close(p[0], 0.9, ROUNDING) && close(p[1], -1.05, ROUNDING));
    }
}
