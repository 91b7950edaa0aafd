//! BatchNorm's running statistics and its evaluation mode, as `torch.nn.BatchNorm1d` keeps
//! them (PyTorch documentation of `BatchNorm1d`; ATen `batch_norm` in
//! `aten/src/ATen/native/Normalization.cpp`):
//!
//! ```text
//! training step:  mean_c = batch mean,  var_c = batch variance with n - 1 (unbiased)
//!                 running_mean <- (1 - momentum) running_mean + momentum mean_c
//!                 running_var  <- (1 - momentum) running_var  + momentum var_c
//! evaluation:     y = (z - running_mean) / sqrt(running_var + eps)
//! ```
//!
//! over the `n` columns of each channel (row), with `running_mean = 0`, `running_var = 1`
//! before the first step and PyTorch's defaults `momentum = 0.1`, `eps = 1e-5`. The
//! training-mode output normalizes with the biased variance ([`super::grouped`]); only the
//! running variance is unbiased. Statistics are accumulated in f64.

use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// PyTorch's default momentum of the running statistics (`BatchNorm1d(momentum=0.1)`).
pub const MOMENTUM: f64 = 0.1;

/// PyTorch's default epsilon of its norms (`BatchNorm1d`, `InstanceNorm1d`, `GroupNorm`,
/// `LayerNorm`: `eps=1e-05`).
pub const EPS: f64 = 1e-5;

/// Per-channel running statistics.
///
/// # Examples
///
/// One channel, one training batch `(1, 2, 3, 4)`: mean 2.5 and unbiased variance 5/3, so the
/// running mean becomes `0.9 * 0 + 0.1 * 2.5` and the running variance `0.9 * 1 + 0.1 * 5/3`.
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::norms::running::{MOMENTUM, Running};
/// let mut r = Running::new(1);
/// r.update(&DMatrix::from_row_slice(1, 4, &[1.0, 2.0, 3.0, 4.0]), MOMENTUM);
/// assert_eq!(r.mean, [0.9 * 0.0 + 0.1 * 2.5]);
/// assert_eq!(r.var, [0.9 * 1.0 + 0.1 * (5.0 / 3.0)]);
/// let y = r.eval(&DMatrix::from_element(1, 1, r.mean[0]), 1e-5);
/// assert_eq!(y[0], 0.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Running {
    /// Running mean per channel (0 at first).
    pub mean: Vec<f64>,
    /// Running variance per channel (1 at first).
    pub var: Vec<f64>,
}

impl Running {
    /// The statistics before the first step, for `channels` channels.
    pub fn new(channels: usize) -> Self {
        Running {
            mean: vec![0.0; channels],
            var: vec![1.0; channels],
        }
    }

    /// One training step's update from the batch `z` (channels x n, n >= 2).
    pub fn update<T: Real>(&mut self, z: &DMatrix<T>, momentum: f64) {
        assert_eq!(z.nrows(), self.mean.len(), "one row per channel");
        let n = z.ncols();
        assert!(n >= 2, "the unbiased variance needs 2 columns");
        for (c, row) in z.row_iter().enumerate() {
            let mean = row.iter().map(|x| x.as_f64()).sum::<f64>() / n as f64;
            let ss: f64 = row.iter().map(|x| (x.as_f64() - mean).powi(2)).sum();
            let var = ss / (n - 1) as f64;
            self.mean[c] = (1.0 - momentum) * self.mean[c] + momentum * mean;
            self.var[c] = (1.0 - momentum) * self.var[c] + momentum * var;
        }
    }

    /// `1 / sqrt(running_var + eps)` per channel: the evaluation mode's Jacobian
    /// `diag(1/sigma_c)`.
    pub fn inv_sigma(&self, eps: f64) -> Vec<f64> {
        self.var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect()
    }

    /// Evaluation mode: `(z - running_mean) / sqrt(running_var + eps)` per channel.
    pub fn eval<T: Real>(&self, z: &DMatrix<T>, eps: f64) -> DMatrix<T> {
        assert_eq!(z.nrows(), self.mean.len(), "one row per channel");
        DMatrix::from_fn(z.nrows(), z.ncols(), |c, j| {
            T::of((z[(c, j)].as_f64() - self.mean[c]) / (self.var[c] + eps).sqrt())
        })
    }
}
