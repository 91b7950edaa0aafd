//! **Adam** (`torch.optim.Adam`, Kingma and Ba 2015, arXiv:1412.6980, Algorithm 1 with
//! PyTorch's placement of eps), as `_single_tensor_adam` in `torch/optim/adam.py` computes it:
//!
//! ```text
//! m <- m + (1 - beta1) (g - m)              (`exp_avg.lerp_(grad, 1 - beta1)`)
//! v <- (beta2 v) + ((1 - beta2) g) g        (`exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)`)
//! bc1 = 1 - beta1^t,  bc2 = 1 - beta2^t     (Python floats: `1 - beta1 ** step`)
//! step_size = lr / bc1
//! denom = sqrt(v) / sqrt(bc2) + eps         (`(exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`)
//! p <- p - (step_size m) / denom            (`param.addcdiv_(exp_avg, denom, value=-step_size)`)
//! ```
//!
//! `torch.lerp` with a weight `w` below 0.5 computes `m + w (g - m)` (the form above, not
//! `beta1 m + (1 - beta1) g`, which rounds differently); with `w >= 0.5` (`beta1 <= 0.5`) it
//! computes `g - (g - m) (1 - w)`, and so does [`Adam::update`] (ATen's `Lerp.h`).
//! Mathematically `p <- p - lr m_hat / (sqrt(v_hat) + eps)` with `m_hat = m / bc1`,
//! `v_hat = v / bc2`.

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

use super::{Algorithm, finite_positive, unit_interval};

hyperparameters! {
    /// Adam's hyperparameters: `torch.optim.Adam(lr, betas=(beta1, beta2), eps,
    /// weight_decay=0, amsgrad=False)`; AdamW's first three ([`super::AdamW::adam`]).
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::Error;
    /// use normscope_core::train::optim::{Adam, Hyperparameters, OptimizerKind};
    ///
    /// // PyTorch's defaults, betas=(0.9, 0.999), eps=1e-8: what `--optimizer adam` gives.
    /// let adam = Adam::default();
    /// assert_eq!((adam.beta1, adam.beta2, adam.eps), (0.9, 0.999, 1e-8));
    /// assert_eq!(OptimizerKind::parse("adam")?, OptimizerKind::Adam(adam));
    /// assert_eq!(Adam::flags(), ["--beta1", "--beta2", "--adam-eps"]);
    /// // Each range check names its flag: beta2 is in [0, 1).
    /// let err = Adam { beta2: 1.0, ..adam }.check().unwrap_err();
    /// assert!(matches!(err, Error::InvalidParam { field: "--beta2", .. }));
    /// # Ok::<(), Error>(())
    /// ```
    pub struct Adam;
    /// The flags of Adam's hyperparameters (`--beta1`, `--beta2`, `--adam-eps`), AdamW's too.
    ///
    /// # Examples
    ///
    /// `--beta1 0.5` sets Adam's `beta1` and AdamW's alike; the others keep their defaults:
    ///
    /// ```rust
    /// use normscope_core::train::optim::{Adam, AdamFlags, AdamW, OptimizerFlags, OptimizerKind};
    ///
    /// let flags = OptimizerFlags {
    ///     adam: AdamFlags { beta1: Some(0.5), ..AdamFlags::default() },
    ///     ..OptimizerFlags::default()
    /// };
    /// let adam = Adam { beta1: 0.5, ..Adam::default() };
    /// assert_eq!(OptimizerKind::resolve("adam", &flags)?, OptimizerKind::Adam(adam));
    /// let adamw = AdamW { adam, weight_decay: 0.01 };
    /// assert_eq!(OptimizerKind::resolve("adamw", &flags)?, OptimizerKind::AdamW(adamw));
    /// # Ok::<(), normscope_core::Error>(())
    /// ```
    pub struct AdamFlags;
    /// First-moment decay in `[0, 1)` (PyTorch's default 0.9, `betas=(0.9, 0.999)`).
    beta1 = 0.9, flag beta1 "--beta1", check unit_interval,
        help "Adam/AdamW beta1 (default 0.9).";
    /// Second-moment decay in `[0, 1)` (PyTorch's default 0.999).
    beta2 = 0.999, flag beta2 "--beta2", check unit_interval,
        help "Adam/AdamW beta2 (default 0.999).";
    /// Added to `sqrt(v_hat)` in the denominator; > 0 (PyTorch's default 1e-8). Its flag is
    /// `--adam-eps`, not `--eps` (the norms' epsilon).
    eps = 1e-8, flag adam_eps "--adam-eps", check finite_positive,
        help "Adam/AdamW epsilon (default 1e-8).";
}

/// Adam's (and AdamW's) per-parameter state: the first moments `m` and second moments `v`
/// (PyTorch's `exp_avg` and `exp_avg_sq`), zero before the first step.
///
/// # Examples
///
/// The state [`Algorithm::state`] makes, through one step at `t = 1`. There the bias
/// corrections undo the moments' decay (`m_hat = g`, `v_hat = g^2`), so the entry moves by
/// `lr g / (|g| + eps)`: computed here in the order [`Adam::update`] rounds it.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::train::optim::{Adam, AdamState, Algorithm};
///
/// let adam = Adam::default();
/// let mut state: AdamState<f64> = adam.state(&[(1, 1)]);
/// assert_eq!(Adam::second_moment(&state, 0).unwrap()[0], 0.0);
/// let (lr, g) = (0.1, 2.0);
/// let mut p = DMatrix::from_element(1, 1, 0.0);
/// adam.step(&mut state, &mut [&mut p], &[DMatrix::from_element(1, 1, g)], &[true], lr, 1);
/// let (m, v) = ((1.0 - 0.9) * g, (1.0 - 0.999) * g * g);
/// let step = lr / (1.0 - 0.9) * m / (v.sqrt() / (1.0 - 0.999_f64).sqrt() + 1e-8);
/// assert_eq!((p[0], Adam::second_moment(&state, 0).unwrap()[0]), (-step, v));
/// assert!((step - lr * g / (g + 1e-8)).abs() < 1e-15);
/// ```
#[derive(Clone, Debug)]
pub struct AdamState<T: Real> {
    m: Vec<DMatrix<T>>,
    v: Vec<DMatrix<T>>,
}

impl Adam {
    /// One Adam update at step `t` (already incremented) of every parameter, as
    /// `_single_tensor_adam` computes it (the module documentation's equations); AdamW's
    /// update after its decay.
    pub fn update<T: Real>(
        &self,
        state: &mut AdamState<T>,
        params: &mut [&mut DMatrix<T>],
        grads: &[DMatrix<T>],
        lr: f64,
        t: u64,
    ) {
        let Adam { beta1, beta2, eps } = *self;
        let AdamState { m, v } = state;
        // Python floats: `1 - beta1 ** step` (C `pow`), `lr / bias_correction1`.
        let t = t as f64;
        let bias_correction1 = 1.0 - beta1.powf(t);
        let bias_correction2 = 1.0 - beta2.powf(t);
        let step_size = T::of(lr / bias_correction1);
        let bias_correction2_sqrt = T::of(bias_correction2.sqrt());
        let w1 = T::of(1.0 - beta1);
        let w2 = T::of(1.0 - beta2);
        let (beta2, eps) = (T::of(beta2), T::of(eps));
        // On slices (contiguous column-major storage), so that the loop vectorizes; the same
        // arithmetic per entry.
        for (i, p) in params.iter_mut().enumerate() {
            let entries = p
                .as_mut_slice()
                .iter_mut()
                .zip(grads[i].as_slice())
                .zip(m[i].as_mut_slice().iter_mut().zip(v[i].as_mut_slice()));
            for ((p, &g), (m, v)) in entries {
                *m = lerp_as(*m, g, w1);
                // `exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)`: ATen's addcmul
                // is `self + value * t1 * t2`, left to right.
                *v = *v * beta2 + w2 * g * g;
                let denom = v.sqrt() / bias_correction2_sqrt + eps;
                // `param.addcdiv_(exp_avg, denom, value=-step_size)`: ATen's addcdiv is
                // `self + value * t1 / t2`; negating `value` is exact, so this is the same double.
                *p -= step_size * *m / denom;
            }
        }
    }
}

impl Algorithm for Adam {
    const NAME: &'static str = "adam";

    type State<T: Real> = AdamState<T>;

    fn state<T: Real>(&self, shapes: &[(usize, usize)]) -> AdamState<T> {
        let zeros =
            || -> Vec<DMatrix<T>> { shapes.iter().map(|&(r, c)| DMatrix::zeros(r, c)).collect() };
        AdamState {
            m: zeros(),
            v: zeros(),
        }
    }

    /// [`Adam::update`]; no weight decay (`decay` unused).
    fn step<T: Real>(
        &self,
        state: &mut AdamState<T>,
        params: &mut [&mut DMatrix<T>],
        grads: &[DMatrix<T>],
        _decay: &[bool],
        lr: f64,
        t: u64,
    ) {
        self.update(state, params, grads, lr, t);
    }

    /// `v` of parameter `i`.
    fn second_moment<T: Real>(state: &AdamState<T>, i: usize) -> Option<&DMatrix<T>> {
        Some(&state.v[i])
    }

    /// `beta2`.
    fn second_moment_decay(&self) -> Option<f64> {
        Some(self.beta2)
    }

    /// `eps`.
    fn denominator_eps(&self) -> Option<f64> {
        Some(self.eps)
    }
}

/// `torch.lerp(start, end, weight)` on doubles ([`lerp_as`] in f64).
#[cfg(test)]
fn lerp(start: f64, end: f64, weight: f64) -> f64 {
    lerp_as(start, end, weight)
}

/// `torch.lerp(start, end, weight)` in type `T`, as ATen's `Lerp.h` writes it: `start + weight
/// (end - start)` for `|weight| < 0.5`, else `end - (end - start) (1 - weight)`.
#[inline(always)]
fn lerp_as<T: Real>(start: T, end: T, weight: T) -> T {
    if weight.as_f64().abs() < 0.5 {
        start + weight * (end - start)
    } else {
        end - (end - start) * (T::one() - weight)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Optimizer;
    use super::super::test_support::{adam, close};
    use super::*;
    use normscope_numeric::tolerance::{ROUNDING, ROUNDING_CHAIN};

    #[test]
    fn adam_two_steps_match_the_formulas_by_hand() {
        // One 1x2 parameter, lr 0.1, betas (0.9, 0.999), eps 1e-8.
        // Coordinate a: p0 = 1, g1 = 1, g2 = 3. Coordinate b: p0 = -2, g1 = -2, g2 = 0.5.
        let lr = 0.1;
        let eps = 1e-8;
        let mut opt = Optimizer::new(adam(), &[(1, 2)], &[true]);
        let mut p = DMatrix::from_row_slice(1, 2, &[1.0, -2.0]);

        // Step 1 (t = 1): m = 0.1 g1, v = 0.001 g1^2, bc1 = 0.1, bc2 = 0.001, so m_hat = g1 and
        // sqrt(v_hat) = |g1|: p1 = p0 - lr g1 / (|g1| + eps).
        opt.step(
            &mut [&mut p],
            &[DMatrix::from_row_slice(1, 2, &[1.0, -2.0])],
            lr,
        );
        let a1 = 1.0 - lr * 1.0 / (1.0 + eps); // 0.900000001
        let b1 = -2.0 - lr * (-2.0) / (2.0 + eps); // -1.9000000005
        assert!(close(p[0], a1, ROUNDING), "{} vs {a1}", p[0]);
        assert!(close(p[1], b1, ROUNDING), "{} vs {b1}", p[1]);
        let v = opt.second_moment(0).unwrap();
        assert!(close(v[0], 0.001, ROUNDING) && close(v[1], 0.004, ROUNDING));

        // Step 2 (t = 2): m = 0.9 (0.1 g1) + 0.1 g2 = 0.09 g1 + 0.1 g2,
        // v = 0.999 (0.001 g1^2) + 0.001 g2^2 = 0.000999 g1^2 + 0.001 g2^2,
        // bc1 = 1 - 0.81 = 0.19, bc2 = 1 - 0.998001 = 0.001999.
        opt.step(
            &mut [&mut p],
            &[DMatrix::from_row_slice(1, 2, &[3.0, 0.5])],
            lr,
        );
        // a: m = 0.09 + 0.3 = 0.39, v = 0.000999 + 0.009 = 0.009999.
        // b: m = -0.18 + 0.05 = -0.13, v = 0.003996 + 0.00025 = 0.004246.
        let a2 = a1 - (lr / 0.19) * 0.39 / ((0.009999_f64 / 0.001999).sqrt() + eps);
        let b2 = b1 - (lr / 0.19) * -0.13 / ((0.004246_f64 / 0.001999).sqrt() + eps);
        // The hand values round 0.19 and 0.001999 once; Adam computes 1 - 0.9^2 and
        // 1 - 0.999^2, whose cancellation (relative 1e-16 / 0.002) reaches a few 1e-15 of the
        // O(1) parameters through an update of size 0.1.
        assert!(close(p[0], a2, ROUNDING_CHAIN), "{} vs {a2}", p[0]);
        assert!(close(p[1], b2, ROUNDING_CHAIN), "{} vs {b2}", p[1]);
        // And the values themselves: a moved by 0.1 * 2.05263 / 2.23652 = 0.0917781 to
        // 0.8082219, b by -0.1 * (-0.68421) / 1.45742 = 0.0469468 to -1.8530532.
        assert!((p[0] - 0.808_221_9).abs() < 1e-7, "{}", p[0]);
        assert!((p[1] + 1.853_053_2).abs() < 1e-7, "{}", p[1]);
        let v = opt.second_moment(0).unwrap();
        assert!(close(v[0], 0.009999, ROUNDING) && close(v[1], 0.004246, ROUNDING));
        assert_eq!(opt.steps(), 2);
    }

    #[test]
    fn first_adam_step_moves_each_coordinate_by_about_lr() {
        // m_hat = g and sqrt(v_hat) = |g| at t = 1, so |dp| = lr |g| / (|g| + eps): lr up to a
        // relative eps / |g|, whatever the gradient's scale, against the sign of g.
        let lr = 1e-3;
        let eps = Adam::default().eps;
        let g = [1e-3, -1.0, 1e3, -5.0, 0.0];
        // Parameters start at 0 so that p - p0 is the update itself, without cancellation.
        let p0 = [0.0, 0.0, 0.0, 0.0, 1.0];
        let mut p = DMatrix::from_row_slice(1, 5, &p0);
        let mut opt = Optimizer::new(adam(), &[(1, 5)], &[false]);
        opt.step(&mut [&mut p], &[DMatrix::from_row_slice(1, 5, &g)], lr);
        for j in 0..4 {
            let dp = p[j] - p0[j];
            assert!(dp * g[j] < 0.0, "coordinate {j} moved along its gradient");
            let exact = lr * g[j].abs() / (g[j].abs() + eps);
            assert!(close(dp.abs() / lr, exact / lr, ROUNDING_CHAIN), "{j}");
            assert!((dp.abs() / lr - 1.0).abs() <= 2.0 * eps / g[j].abs(), "{j}");
        }
        // A zero gradient does not move its coordinate (0 / eps).
        assert_eq!(p[4].to_bits(), p0[4].to_bits());
    }

    #[test]
    fn lerp_follows_aten_on_both_sides_of_one_half() {
        // beta1 = 0 (weight 1): m becomes g exactly.
        assert_eq!(lerp(0.3, 0.7, 1.0).to_bits(), 0.7_f64.to_bits());
        // Small weight: start + w (end - start).
        assert_eq!(
            lerp(1.0, 2.0, 0.1).to_bits(),
            (1.0 + 0.1 * 1.0_f64).to_bits()
        );
        assert!(close(lerp(1.0, 3.0, 0.75), 2.5, ROUNDING));
    }
}
