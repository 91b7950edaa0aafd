//! Optimizers (SGD with momentum, Adam, AdamW) and global-norm gradient clipping, with
//! PyTorch 2.x's semantics and order of floating-point operations, so a float64 training run
//! can be compared with PyTorch's step by step.
//!
//! Every parameter is a matrix `p` with its gradient `g`; `t` counts updates (1 on the first).
//! The formulas are those of PyTorch's single-tensor (`foreach=False`, `fused=False`) paths,
//! the ones it takes for CPU tensors: `_single_tensor_sgd` in `torch/optim/sgd.py`,
//! `_single_tensor_adam` in `torch/optim/adam.py` and `_single_tensor_adamw` in
//! `torch/optim/adamw.py` (PyTorch 2.x). Each line below is one PyTorch tensor operation,
//! evaluated left to right as its ATen CPU kernel does.
//!
//! **SGD** (`torch.optim.SGD`, dampening 0, no Nesterov, no weight decay; Sutskever et al. 2013
//! in PyTorch's form):
//!
//! ```text
//! momentum = 0:  p <- p - lr g
//! momentum > 0:  b <- g                  (t = 1: `torch.clone(grad)`)
//!                b <- (mu b) + g         (t > 1: `buf.mul_(momentum).add_(grad)`)
//!                p <- p - lr b           (`param.add_(buf, alpha=-lr)`)
//! ```
//!
//! **Adam** (`torch.optim.Adam`, Kingma and Ba 2015, arXiv:1412.6980, Algorithm 1 with
//! PyTorch's placement of eps):
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
//! computes `g - (g - m) (1 - w)`, and so does [`Optimizer::step`] (ATen's `Lerp.h`).
//! Mathematically `p <- p - lr m_hat / (sqrt(v_hat) + eps)` with `m_hat = m / bc1`,
//! `v_hat = v / bc2`.
//!
//! **AdamW** (`torch.optim.AdamW`, Loshchilov and Hutter 2019, arXiv:1711.05101, decoupled
//! weight decay): first `p <- p (1 - lr wd)` (`param.mul_(1 - lr * weight_decay)`), only for the
//! parameters whose decay flag is set (PyTorch: a parameter group with `weight_decay=0`), then
//! the Adam update.
//!
//! **Clipping** ([`clip_global_norm`], `torch.nn.utils.clip_grad_norm_` with `norm_type=2`,
//! `torch/nn/utils/clip_grad.py`): `total = ||(||g_1||, ..., ||g_k||)||_2` (the norm of the
//! per-matrix norms), `coef = max_norm / (total + 1e-6)`, every gradient multiplied by
//! `min(coef, 1)`.
//!
//! **Where it may differ from PyTorch in the last bit.** ATen's vectorized CPU kernels fuse
//! some multiply-adds: `lerp_` computes `fmadd(w, g - m, m)` and `add_(x, alpha)` computes
//! `fmadd(x, alpha, p)` (`at::vec::fmadd`, one rounding on AVX2/AVX-512 builds), and a C++
//! compiler may contract others. Here every operation is rounded separately, so a coordinate
//! can differ by an ulp per operation and step: relative drift of order 1e-15 per step, far
//! below a 1e-9 comparison over tens of steps. PyTorch's `beta ** step` and
//! `bias_correction2 ** 0.5` call the C library's `pow`; here `beta.powf(t)` calls the same
//! `pow`, and `sqrt` (correctly rounded) stands for `pow(x, 0.5)` (glibc's `pow` is within
//! 0.52 ulp, almost always the same double).
//!
//! **Float type.** [`Optimizer`] is generic over the parameters' float type `T` ([`Real`], f64
//! by default). Its state (momentum buffers, Adam's `m` and `v`) is kept in `T` and every
//! per-entry operation above runs in `T`, the hyperparameters and Python-float scalars
//! (`step_size`, `sqrt(bc2)`, `eps`, `1 - beta`) rounded once to `T`: what PyTorch does for
//! float32 parameters. The clipping norm is accumulated in f64 in both types.

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

use crate::{Error, Result};

/// An optimizer and its hyperparameters (all but the learning rate, which a
/// [`super::schedule::Schedule`] supplies per step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptimizerKind {
    /// `torch.optim.SGD(lr, momentum, dampening=0, nesterov=False, weight_decay=0)`.
    Sgd {
        /// Momentum `mu` in `[0, 1)`; 0 is plain gradient descent.
        momentum: f64,
    },
    /// `torch.optim.Adam(lr, betas=(beta1, beta2), eps, weight_decay=0, amsgrad=False)`.
    Adam {
        /// First-moment decay in `[0, 1)`.
        beta1: f64,
        /// Second-moment decay in `[0, 1)`.
        beta2: f64,
        /// Added to `sqrt(v_hat)` in the denominator; > 0.
        eps: f64,
    },
    /// `torch.optim.AdamW(lr, betas=(beta1, beta2), eps, weight_decay)`: decoupled decay
    /// `p <- p (1 - lr wd)` before the Adam update.
    AdamW {
        /// First-moment decay in `[0, 1)`.
        beta1: f64,
        /// Second-moment decay in `[0, 1)`.
        beta2: f64,
        /// Added to `sqrt(v_hat)` in the denominator; > 0.
        eps: f64,
        /// Decoupled weight decay `wd` >= 0 (applied only to parameters flagged for decay).
        weight_decay: f64,
    },
}

impl OptimizerKind {
    /// The valid names, comma separated.
    pub const NAMES: &'static str = "sgd, adam, adamw";

    /// PyTorch's default first-moment decay of Adam and AdamW (`betas=(0.9, 0.999)`).
    pub const DEFAULT_BETA1: f64 = 0.9;

    /// PyTorch's default second-moment decay of Adam and AdamW.
    pub const DEFAULT_BETA2: f64 = 0.999;

    /// PyTorch's default eps of Adam and AdamW.
    pub const DEFAULT_EPS: f64 = 1e-8;

    /// PyTorch's default weight decay of AdamW (`torch.optim.AdamW`, `weight_decay=1e-2`).
    pub const DEFAULT_WEIGHT_DECAY: f64 = 0.01;

    /// The name [`OptimizerKind::parse`] accepts: `sgd`, `adam` or `adamw`.
    pub fn name(&self) -> &'static str {
        match self {
            OptimizerKind::Sgd { .. } => "sgd",
            OptimizerKind::Adam { .. } => "adam",
            OptimizerKind::AdamW { .. } => "adamw",
        }
    }

    /// Parses a name, ignoring ASCII case, with PyTorch's defaults: `sgd` has momentum 0;
    /// `adam` and `adamw` have betas (0.9, 0.999) and eps 1e-8; `adamw` has weight decay 0.01.
    /// An unknown name is an [`Error::Unknown`] listing [`OptimizerKind::NAMES`].
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "sgd" => Ok(OptimizerKind::Sgd { momentum: 0.0 }),
            "adam" => Ok(OptimizerKind::Adam {
                beta1: Self::DEFAULT_BETA1,
                beta2: Self::DEFAULT_BETA2,
                eps: Self::DEFAULT_EPS,
            }),
            "adamw" => Ok(OptimizerKind::AdamW {
                beta1: Self::DEFAULT_BETA1,
                beta2: Self::DEFAULT_BETA2,
                eps: Self::DEFAULT_EPS,
                weight_decay: Self::DEFAULT_WEIGHT_DECAY,
            }),
            _ => Err(Error::Unknown {
                kind: "optimizer",
                name: name.to_string(),
                valid: Self::NAMES.to_string(),
            }),
        }
    }

    /// Checks the hyperparameters' ranges: momentum, beta1 and beta2 in `[0, 1)`, eps finite
    /// and positive, weight decay finite and `>= 0` (NaN fails every check). The error names the
    /// flag: `--momentum`, `--beta1`, `--beta2`, `--adam-eps` (not `--eps`, the norms' epsilon) or
    /// `--weight-decay`.
    pub fn check(&self) -> Result<()> {
        let unit = |field: &'static str, x: f64| {
            if (0.0..1.0).contains(&x) {
                Ok(())
            } else {
                Err(Error::invalid(field, x, "a number in [0, 1)"))
            }
        };
        let adam = |beta1: f64, beta2: f64, eps: f64| {
            unit("--beta1", beta1)?;
            unit("--beta2", beta2)?;
            if eps.is_finite() && eps > 0.0 {
                Ok(())
            } else {
                Err(Error::invalid("--adam-eps", eps, "a finite number > 0"))
            }
        };
        match *self {
            OptimizerKind::Sgd { momentum } => unit("--momentum", momentum),
            OptimizerKind::Adam { beta1, beta2, eps } => adam(beta1, beta2, eps),
            OptimizerKind::AdamW {
                beta1,
                beta2,
                eps,
                weight_decay,
            } => {
                adam(beta1, beta2, eps)?;
                if weight_decay.is_finite() && weight_decay >= 0.0 {
                    Ok(())
                } else {
                    Err(Error::invalid(
                        "--weight-decay",
                        weight_decay,
                        "a finite number >= 0",
                    ))
                }
            }
        }
    }

    /// `(beta1, beta2, eps)` of Adam and AdamW, `None` for SGD.
    fn adam_betas(&self) -> Option<(f64, f64, f64)> {
        match *self {
            OptimizerKind::Sgd { .. } => None,
            OptimizerKind::Adam { beta1, beta2, eps }
            | OptimizerKind::AdamW {
                beta1, beta2, eps, ..
            } => Some((beta1, beta2, eps)),
        }
    }
}

/// A summary of Adam's second-moment estimate `v` over one parameter's entries, for logs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SecondMoment {
    /// Mean of `v` (not bias-corrected) over the entries.
    pub mean: f64,
    /// Largest entry of `v` (not bias-corrected).
    pub max: f64,
    /// Mean of `sqrt(v_hat)`, `v_hat = v / (1 - beta2^t)`, computed as Adam's denominator is
    /// (`sqrt(v) / sqrt(1 - beta2^t)`): the typical size of the denominator before eps.
    pub mean_sqrt_corrected: f64,
}

/// The per-parameter state.
#[derive(Clone, Debug)]
enum State<T: Real> {
    /// SGD: the momentum buffers (empty when the momentum is 0).
    Sgd { buffers: Vec<DMatrix<T>> },
    /// Adam and AdamW: first moments `m` and second moments `v`, zero before the first step.
    Adam {
        m: Vec<DMatrix<T>>,
        v: Vec<DMatrix<T>>,
    },
}

/// An optimizer over a fixed list of matrix parameters, with its per-parameter state
/// (momentum buffers, or Adam's `m` and `v`) and its step count. The update equations and
/// their PyTorch sources are in the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Optimizer<T: Real = f64> {
    kind: OptimizerKind,
    shapes: Vec<(usize, usize)>,
    decay: Vec<bool>,
    state: State<T>,
    steps: u64,
}

impl Optimizer {
    /// An optimizer for parameters of the given shapes, state zero and step count 0.
    /// `shapes[i]` is parameter `i`'s `(rows, cols)`; `decay[i]` says whether AdamW's decoupled
    /// weight decay applies to parameter `i` (the model passes true for weight matrices, false
    /// for norm gains, biases and scalars; SGD and Adam ignore it). The hyperparameters are
    /// expected to have passed [`OptimizerKind::check`].
    ///
    /// # Panics
    ///
    /// If `shapes` and `decay` differ in length.
    ///
    /// In f64; [`Optimizer::new_as`] for another float type.
    pub fn new(kind: OptimizerKind, shapes: &[(usize, usize)], decay: &[bool]) -> Self {
        Self::new_as(kind, shapes, decay)
    }
}

impl<T: Real> Optimizer<T> {
    /// [`Optimizer::new`] for parameters of float type `T` (state in `T`).
    pub fn new_as(kind: OptimizerKind, shapes: &[(usize, usize)], decay: &[bool]) -> Self {
        assert_eq!(
            shapes.len(),
            decay.len(),
            "one decay flag per parameter shape"
        );
        let zeros =
            || -> Vec<DMatrix<T>> { shapes.iter().map(|&(r, c)| DMatrix::zeros(r, c)).collect() };
        let state = match kind {
            // Without momentum PyTorch keeps no buffer.
            OptimizerKind::Sgd { momentum } => State::Sgd {
                buffers: if momentum == 0.0 { Vec::new() } else { zeros() },
            },
            OptimizerKind::Adam { .. } | OptimizerKind::AdamW { .. } => State::Adam {
                m: zeros(),
                v: zeros(),
            },
        };
        Optimizer {
            kind,
            shapes: shapes.to_vec(),
            decay: decay.to_vec(),
            state,
            steps: 0,
        }
    }

    /// One update of every parameter at learning rate `lr`, with PyTorch's semantics (the
    /// equations are in the [module documentation](self)). The step count is incremented
    /// first, so Adam's bias corrections use `t = 1` on the first step and SGD's momentum buffer
    /// starts as the first gradient.
    ///
    /// # Panics
    ///
    /// If `params` or `grads` do not have one matrix of the constructor's shape per parameter.
    pub fn step(&mut self, params: &mut [&mut DMatrix<T>], grads: &[DMatrix<T>], lr: f64) {
        assert_eq!(params.len(), self.shapes.len(), "one matrix per parameter");
        assert_eq!(grads.len(), self.shapes.len(), "one gradient per parameter");
        for (i, &shape) in self.shapes.iter().enumerate() {
            assert_eq!(params[i].shape(), shape, "parameter {i}'s shape");
            assert_eq!(grads[i].shape(), shape, "gradient {i}'s shape");
        }
        self.steps += 1;
        match (&mut self.state, self.kind) {
            (State::Sgd { buffers }, OptimizerKind::Sgd { momentum }) => {
                sgd(params, grads, buffers, momentum, lr, self.steps == 1);
            }
            (State::Adam { m, v }, kind) => {
                let (beta1, beta2, eps) = kind.adam_betas().expect("Adam state with an Adam kind");
                if let OptimizerKind::AdamW { weight_decay, .. } = kind {
                    // `param.mul_(1 - lr * weight_decay)`, skipped where the group's decay is 0.
                    let factor = T::of(1.0 - lr * weight_decay);
                    for (p, &decay) in params.iter_mut().zip(&self.decay) {
                        if decay && weight_decay != 0.0 {
                            p.as_mut_slice().iter_mut().for_each(|x| *x *= factor);
                        }
                    }
                }
                adam(params, grads, m, v, (beta1, beta2, eps), lr, self.steps);
            }
            (State::Sgd { .. }, _) => unreachable!("SGD state belongs to an SGD kind"),
        }
    }

    /// The number of updates made so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Adam's (or AdamW's) second-moment estimate `v` of parameter `i`, not bias-corrected
    /// (`exp_avg_sq` in PyTorch's state); `None` for SGD. Zero before the first step.
    ///
    /// # Panics
    ///
    /// If `i` is not a parameter index.
    pub fn second_moment(&self, i: usize) -> Option<&DMatrix<T>> {
        match &self.state {
            State::Adam { v, .. } => Some(&v[i]),
            State::Sgd { .. } => None,
        }
    }

    /// A summary of `v` over parameter `i`: the mean and the largest entry of `v`, and the mean
    /// of `sqrt(v_hat)`, `v_hat = v / (1 - beta2^t)` at the current step count `t`. `None` for
    /// SGD, before the first step, or for a parameter without entries.
    ///
    /// # Panics
    ///
    /// If `i` is not a parameter index.
    pub fn second_moment_stats(&self, i: usize) -> Option<SecondMoment> {
        let (_, beta2, _) = self.kind.adam_betas()?;
        let v = self.second_moment(i)?;
        if self.steps == 0 || v.is_empty() {
            return None;
        }
        let bc2_sqrt = (1.0 - beta2.powf(self.steps as f64)).sqrt();
        let n = v.len() as f64;
        let mut sum = 0.0;
        let mut max = f64::NEG_INFINITY;
        let mut sum_sqrt = 0.0;
        for x in v.iter().map(|x| x.as_f64()) {
            sum += x;
            max = max.max(x);
            sum_sqrt += x.sqrt() / bc2_sqrt;
        }
        Some(SecondMoment {
            mean: sum / n,
            max,
            mean_sqrt_corrected: sum_sqrt / n,
        })
    }

    /// The optimizer and its hyperparameters.
    pub fn kind(&self) -> &OptimizerKind {
        &self.kind
    }
}

/// SGD with momentum `mu` (dampening 0): `b <- g` on the first step, else `b <- mu b + g`;
/// `p <- p - lr b`. Without momentum `p <- p - lr g`.
fn sgd<T: Real>(
    params: &mut [&mut DMatrix<T>],
    grads: &[DMatrix<T>],
    buffers: &mut [DMatrix<T>],
    momentum: f64,
    lr: f64,
    first: bool,
) {
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

/// One Adam update at step `t` (already incremented) of every parameter, as
/// `_single_tensor_adam` computes it.
fn adam<T: Real>(
    params: &mut [&mut DMatrix<T>],
    grads: &[DMatrix<T>],
    m: &mut [DMatrix<T>],
    v: &mut [DMatrix<T>],
    (beta1, beta2, eps): (f64, f64, f64),
    lr: f64,
    t: u64,
) {
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

/// The constant [`clip_global_norm`] adds to the total norm before dividing (PyTorch's
/// `clip_coef = max_norm / (total_norm + 1e-6)` in `torch/nn/utils/clip_grad.py`): it keeps the
/// coefficient finite for zero gradients and leaves the clipped norm just below `max_norm`.
pub const CLIP_NORM_EPS: f64 = 1e-6;

/// Clips gradients by their global norm, as `torch.nn.utils.clip_grad_norm_(max_norm,
/// norm_type=2)` does (`torch/nn/utils/clip_grad.py`): the total norm is the 2-norm of the
/// per-matrix 2-norms, `total = sqrt(sum_i ||g_i||^2)`; with `coef = max_norm / (total +`
/// [`CLIP_NORM_EPS`]`)`, every gradient is multiplied by `coef` when `coef < 1` (PyTorch
/// multiplies by `min(coef, 1)`; a factor 1 changes nothing), so the clipped norm is
/// `max_norm total / (total + 1e-6)`, just below `max_norm`. Returns the total norm before
/// clipping. A non-finite total gives NaN gradients, as in PyTorch (`error_if_nonfinite=False`):
/// the caller detects the divergence. In f64; [`clip_global_norm_as`] for another float type.
pub fn clip_global_norm(grads: &mut [DMatrix<f64>], max_norm: f64) -> f64 {
    clip_global_norm_as(grads, max_norm)
}

/// [`clip_global_norm`] of gradients of float type `T`: the norms are accumulated in f64 (each
/// entry widened first), and the coefficient is rounded to `T` where it multiplies.
pub fn clip_global_norm_as<T: Real>(grads: &mut [DMatrix<T>], max_norm: f64) -> f64 {
    // `torch.linalg.vector_norm(torch.stack([vector_norm(g) for g in grads]))`.
    let sum_of_norms_squared: f64 = grads
        .iter()
        .map(|g| {
            let norm = g
                .iter()
                .map(|x| {
                    let x = x.as_f64();
                    x * x
                })
                .sum::<f64>()
                .sqrt();
            norm * norm
        })
        .sum();
    let total = sum_of_norms_squared.sqrt();
    let coef = max_norm / (total + CLIP_NORM_EPS);
    // `clamp(coef, max=1.0)` keeps a NaN coefficient, so NaN is applied too.
    if coef < 1.0 || coef.is_nan() {
        let coef = T::of(coef);
        for g in grads.iter_mut() {
            g.as_mut_slice().iter_mut().for_each(|x| *x *= coef);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::tolerance::{ROUNDING, ROUNDING_CHAIN};

    fn adam() -> OptimizerKind {
        OptimizerKind::parse("adam").unwrap()
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

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
        let eps = OptimizerKind::DEFAULT_EPS;
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
    fn adamw_decays_only_flagged_parameters() {
        let lr = 0.01;
        let wd = 0.1;
        let kind = OptimizerKind::AdamW {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: wd,
        };
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

    #[test]
    fn sgd_momentum_buffer_is_the_gradient_then_accumulates() {
        let kind = OptimizerKind::Sgd { momentum: 0.9 };
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
        assert!(opt.second_moment_stats(0).is_none());
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

    #[test]
    fn second_moment_stats_summarise_v() {
        let mut opt = Optimizer::new(adam(), &[(1, 3)], &[true]);
        assert!(
            opt.second_moment_stats(0).is_none(),
            "before the first step"
        );
        let mut p = DMatrix::zeros(1, 3);
        opt.step(
            &mut [&mut p],
            &[DMatrix::from_row_slice(1, 3, &[1.0, -2.0, 4.0])],
            1e-3,
        );
        // t = 1: v = 0.001 g^2 = (0.001, 0.004, 0.016); sqrt(v_hat) = |g|.
        let s = opt.second_moment_stats(0).unwrap();
        assert!(close(s.mean, 0.007, ROUNDING), "{}", s.mean);
        assert!(close(s.max, 0.016, ROUNDING), "{}", s.max);
        assert!(close(s.mean_sqrt_corrected, 7.0 / 3.0, ROUNDING));
    }

    #[test]
    fn clipping_scales_to_max_norm_above_and_keeps_grads_below() {
        // Norms 3 and 4: total 5.
        let grads = vec![
            DMatrix::from_row_slice(2, 2, &[3.0, 0.0, 0.0, 0.0]),
            DMatrix::from_row_slice(1, 1, &[-4.0]),
        ];
        let mut clipped = grads.clone();
        let total = clip_global_norm(&mut clipped, 1.0);
        assert!(close(total, 5.0, ROUNDING), "{total}");
        let coef = 1.0 / (5.0 + CLIP_NORM_EPS);
        assert!(close(clipped[0][0], 3.0 * coef, ROUNDING));
        assert!(close(clipped[1][0], -4.0 * coef, ROUNDING));
        // The clipped norm is max_norm total / (total + 1e-6), just below max_norm.
        let after = clip_global_norm(&mut clipped.clone(), f64::MAX);
        assert!(
            close(after, 5.0 / (5.0 + CLIP_NORM_EPS), ROUNDING),
            "{after}"
        );
        assert!(after < 1.0);

        // Below max_norm: returned norm, gradients unchanged bit for bit.
        let mut kept = grads.clone();
        let total = clip_global_norm(&mut kept, 10.0);
        assert!(close(total, 5.0, ROUNDING));
        for (a, b) in kept.iter().zip(&grads) {
            for (x, y) in a.iter().zip(b.iter()) {
                assert_eq!(x.to_bits(), y.to_bits());
            }
        }
        // Zero gradients stay zero (coef = max_norm / 1e-6, clamped to 1).
        let mut zero = vec![DMatrix::zeros(2, 3)];
        let total = clip_global_norm(&mut zero, 1.0);
        assert!(total.abs() < f64::MIN_POSITIVE);
        assert!(zero[0].iter().all(|x| x.abs() < f64::MIN_POSITIVE));
    }

    #[test]
    fn names_parse_ignoring_case_with_pytorch_defaults() {
        for kind in ["sgd", "adam", "adamw"] {
            assert_eq!(OptimizerKind::parse(kind).unwrap().name(), kind);
            assert!(OptimizerKind::NAMES.contains(kind));
        }
        assert_eq!(
            OptimizerKind::parse("AdamW").unwrap(),
            OptimizerKind::AdamW {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.01
            }
        );
        assert_eq!(
            OptimizerKind::parse("SGD").unwrap(),
            OptimizerKind::Sgd { momentum: 0.0 }
        );
        assert_eq!(OptimizerKind::parse("ADAM").unwrap(), adam());
        let err = OptimizerKind::parse("adamax").unwrap_err();
        assert!(matches!(
            err,
            Error::Unknown {
                kind: "optimizer",
                ..
            }
        ));
        let message = err.to_string();
        assert!(message.contains("adamax") && message.contains("sgd, adam, adamw"));
    }

    #[test]
    fn check_names_the_flag_out_of_range() {
        for kind in ["sgd", "adam", "adamw"] {
            OptimizerKind::parse(kind).unwrap().check().unwrap();
        }
        let flag = |kind: OptimizerKind| match kind.check() {
            Err(Error::InvalidParam { field, .. }) => field,
            other => panic!("{kind:?} gave {other:?}"),
        };
        assert_eq!(flag(OptimizerKind::Sgd { momentum: 1.0 }), "--momentum");
        assert_eq!(flag(OptimizerKind::Sgd { momentum: -0.1 }), "--momentum");
        let adam = |beta1, beta2, eps| OptimizerKind::Adam { beta1, beta2, eps };
        assert_eq!(flag(adam(f64::NAN, 0.999, 1e-8)), "--beta1");
        assert_eq!(flag(adam(0.9, 1.0, 1e-8)), "--beta2");
        assert_eq!(flag(adam(0.9, 0.999, 0.0)), "--adam-eps");
        assert_eq!(flag(adam(0.9, 0.999, f64::INFINITY)), "--adam-eps");
        let adamw = |weight_decay| OptimizerKind::AdamW {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay,
        };
        assert_eq!(flag(adamw(-0.01)), "--weight-decay");
        assert_eq!(flag(adamw(f64::NAN)), "--weight-decay");
        adamw(0.0).check().unwrap();
        OptimizerKind::Sgd { momentum: 0.0 }.check().unwrap();
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
