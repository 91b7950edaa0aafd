//! Teacher-student regression (docs/training.md, "Designs that fit a small machine", tier 0): a random deep residual-MLP
//! teacher of width `w` (`--teacher-width`) and depth `L` (`--teacher-depth`),
//!
//! ```text
//! x ~ N(0, I_{d_in})
//! h_0 = A x
//! h_l = h_{l-1} + W2_l relu(W1_l LN(h_{l-1})) / sqrt(L),   l = 1..L
//! y   = B LN(h_L) / s + noise e,   e ~ N(0, I_{d_out})
//! ```
//!
//! with `A` (`w x d_in`) of entries `N(0, 1/d_in)`, `W1_l`, `W2_l` (`w x w`, hidden width `w`)
//! He-initialized (`N(0, 2/w)`, He et al. 2015), `B` (`d_out x w`) of entries `N(0, 1/w)`
//! (`B = G / sqrt(w)`, G standard normal) and LN the LayerNorm without affine
//! ([`crate::monte_carlo::norm`], eps [`super::NORM_EPS`]). Since `|LN(h)|^2 = w` up to eps,
//! `B LN(h_L)` has second moment about 1 per output, but part of it is a mean over x (the ReLU
//! blocks add a direction common to all inputs: measured `mean_k Var = 0.65` at the defaults,
//! teacher seed 0), so the teacher is calibrated: `s^2 = mean_k Var_x (B LN(h_L))_k`, the
//! unbiased sample variance over [`super::CONTEXT_FREE_SAMPLE`] inputs drawn from
//! [`super::estimate_rng`] when the task is built, which makes `mean_k Var(y_clean,k) = 1` on
//! that sample (an estimate of the population value, relative standard error about 0.5% at the
//! defaults). The weights are drawn from [`super::teacher_rng`] in the order A,
//! `W1_1, W2_1, ..., W1_L, W2_L`, G.
//!
//! Floor: the Bayes-optimal predictor is `y_clean = B LN(h_L) / s`, whose mean squared error is
//! `noise^2`. Context-free loss: predicting the per-output mean of y costs
//! `mean_k Var(y_k) = mean_k Var(y_clean,k) + noise^2 = 1 + noise^2` (the first term as
//! calibrated on the seeded sample).

use super::{Batch, Io, NORM_EPS, Task, TaskConfig, TaskKind, VectorBatch};
use crate::Result;
use crate::branch::{Activation, Init, Module, mlp::Mlp};
use crate::monte_carlo::norm;
use crate::monte_carlo::sample::{gaussian, matrix};
use crate::spec::NormKind;
use nalgebra::DMatrix;
use normscope_numeric::rng::Rng;

/// The regression task and its teacher.
///
/// # Examples
///
/// A teacher of width 8 from 4 inputs to 2 outputs, noise std 0.5: the floor is
/// `noise^2 = 0.25`, and the context-free loss `1 + noise^2` (the clean outputs are scaled to
/// unit variance on the calibration sample).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::regression::Regression;
/// use normscope_core::train::task::{Batch, Io, Task, TaskConfig};
///
/// let cfg = TaskConfig {
///     d_in: 4,
///     d_out: 2,
///     teacher_width: 8,
///     noise: 0.5,
///     ..TaskConfig::default()
/// };
/// let task = Regression::new(&cfg)?;
/// assert_eq!(task.io(), Io::Vectors { d_in: 4, d_out: 2 });
/// let batch = task.batch(&mut data_rng(0), 3);
/// assert_eq!(task.floor(&batch), 0.25);
/// assert!((task.context_free_loss() - 1.25).abs() < 1e-12);
/// let Batch::Vectors(v) = &batch else { panic!("vectors") };
/// assert_eq!(task.clean(&v.x).shape(), (2, 3));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Regression {
    /// Input width.
    d_in: usize,
    /// Output noise standard deviation.
    noise: f64,
    /// A, `w x d_in`.
    embed: DMatrix<f64>,
    /// The residual ReLU MLPs, `W2 relu(W1 u)`.
    blocks: Vec<Mlp<f64>>,
    /// `B / s`, `d_out x w`.
    readout: DMatrix<f64>,
    /// `mean_k Var(y_clean,k)` on the calibration sample (1 up to rounding).
    clean_variance: f64,
}

impl Regression {
    /// Checks `cfg` as a regression config ([`TaskConfig::check_as`]) and draws the teacher.
    pub fn new(cfg: &TaskConfig) -> Result<Self> {
        cfg.check_as(TaskKind::Regression)?;
        let mut rng = super::teacher_rng(cfg.teacher_seed);
        let w = cfg.teacher_width;
        let embed = gaussian(&mut rng, w, cfg.d_in) / (cfg.d_in as f64).sqrt();
        let blocks = (0..cfg.teacher_depth)
            .map(|_| Mlp {
                w1: matrix(&mut rng, Init::He, w, w, 1.0),
                w2: matrix(&mut rng, Init::He, w, w, 1.0),
                act: Activation::Relu,
            })
            .collect();
        let readout = gaussian(&mut rng, cfg.d_out, w) / (w as f64).sqrt();
        let mut task = Regression {
            d_in: cfg.d_in,
            noise: cfg.noise,
            embed,
            blocks,
            readout,
            clean_variance: 0.0,
        };
        let x = gaussian(
            &mut super::estimate_rng(cfg.teacher_seed),
            cfg.d_in,
            super::CONTEXT_FREE_SAMPLE,
        );
        let raw = mean_variance(&task.clean(&x));
        if raw.is_finite() && raw > 0.0 {
            task.readout /= raw.sqrt();
        }
        task.clean_variance = mean_variance(&task.clean(&x));
        Ok(task)
    }

    /// The clean teacher output `y_clean = B LN(h_L) / s` for inputs `x` (`d_in x n`), `d_out x n`:
    /// the Bayes-optimal prediction.
    pub fn clean(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        let scale = 1.0 / (self.blocks.len() as f64).sqrt();
        let mut h = &self.embed * x;
        for block in &self.blocks {
            let (f, _) = block.forward(&norm::forward(NormKind::Layer, NORM_EPS, &h).y);
            h += f * scale;
        }
        &self.readout * norm::forward(NormKind::Layer, NORM_EPS, &h).y
    }
}

/// `mean_k Var_k` of the rows of `y` (`d_out x n`, n >= 2): unbiased sample variances
/// `sum_i (y_ki - mean_k)^2 / (n - 1)`, averaged over the rows.
pub(crate) fn mean_variance(y: &DMatrix<f64>) -> f64 {
    let n = y.ncols() as f64;
    let per_output = y.row_iter().map(|r| r.variance() * n / (n - 1.0));
    per_output.sum::<f64>() / y.nrows() as f64
}

impl Task for Regression {
    fn kind(&self) -> TaskKind {
        TaskKind::Regression
    }

    fn io(&self) -> Io {
        Io::Vectors {
            d_in: self.d_in,
            d_out: self.readout.nrows(),
        }
    }

    /// x (`d_in x size`, standard normal), then the noise e (`d_out x size`), from `rng`.
    fn batch(&self, rng: &mut Rng, size: usize) -> Batch {
        let x = gaussian(rng, self.d_in, size);
        let e = gaussian(rng, self.readout.nrows(), size);
        let y = self.clean(&x) + e * self.noise;
        Batch::Vectors(VectorBatch { x, y })
    }

    /// `noise^2`, whatever the batch.
    fn floor(&self, _batch: &Batch) -> f64 {
        self.noise * self.noise
    }

    fn context_free_loss(&self) -> f64 {
        self.clean_variance + self.noise * self.noise
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn task(seed: u64) -> Regression {
        Regression::new(&TaskConfig {
            teacher_seed: seed,
            ..TaskConfig::default()
        })
        .unwrap()
    }

    fn vectors(b: Batch) -> VectorBatch {
        match b {
            Batch::Vectors(v) => v,
            _ => panic!("regression gives vectors"),
        }
    }

    #[test]
    fn teacher_depends_only_on_its_seed() {
        let a = task(5);
        let b = task(5);
        assert_eq!(a.embed, b.embed);
        assert_eq!(a.readout, b.readout);
        assert_eq!(a.blocks[1].w2, b.blocks[1].w2);
        // The batch generator, or another field that is not a shape, changes nothing.
        let c = Regression::new(&TaskConfig {
            teacher_seed: 5,
            noise: 0.3,
            seq: 4,
            ..TaskConfig::default()
        })
        .unwrap();
        assert_eq!(a.blocks[0].w1, c.blocks[0].w1);
        let d = task(6);
        assert!(
            (a.embed.clone() - d.embed).amax() > normscope_numeric::tolerance::CLEARLY_DIFFERENT
        );
    }

    #[test]
    fn residual_mse_is_the_noise_variance() {
        // (y - y_clean)^2 = noise^2 e^2 with e standard normal: mean noise^2, standard error
        // noise^2 sqrt(2 / N) over N = 4096 x 16 entries; the check is 4 standard errors.
        let t = task(0);
        let b = vectors(t.batch(&mut Rng::seed_from_u64(11), 4096));
        let r = &b.y - t.clean(&b.x);
        let n = r.len() as f64;
        let mse = r.norm_squared() / n;
        let floor = t.floor(&Batch::Vectors(b.clone()));
        let se = floor * (2.0 / n).sqrt();
        assert!((mse - floor).abs() < 4.0 * se, "{mse} vs {floor} (se {se})");
        assert!((floor - 0.01).abs() < normscope_numeric::tolerance::ROUNDING);
    }

    #[test]
    fn clean_targets_have_unit_variance_on_a_fresh_sample() {
        // mean_k Var(y_clean,k) on 4096 fresh inputs against the calibration's 1 (another
        // 4096-input sample): per example e_i = mean_k (y_ik - mean_k)^2, the estimate is
        // mean_i e_i with standard error sd(e) / sqrt(n); the two samples are independent, so
        // the difference has sqrt(2) times that, and the check is 4 of those.
        for seed in 0..4 {
            let t = task(seed);
            assert!((t.clean_variance - 1.0).abs() < normscope_numeric::tolerance::ROUNDING_CHAIN);
            let cf = t.context_free_loss();
            assert!(
                (cf - 1.01).abs() < normscope_numeric::tolerance::ROUNDING_CHAIN,
                "{cf}"
            );
            let x = gaussian(&mut Rng::seed_from_u64(100 + seed), 16, 4096);
            let y = t.clean(&x);
            let n = y.ncols() as f64;
            let centered =
                DMatrix::from_fn(y.nrows(), y.ncols(), |k, i| y[(k, i)] - y.row(k).mean());
            let e: Vec<f64> = centered
                .column_iter()
                .map(|c| c.norm_squared() / y.nrows() as f64)
                .collect();
            let mean = e.iter().sum::<f64>() / n;
            let sd = (e.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let se = sd / n.sqrt();
            let v = mean_variance(&y);
            assert!((v - mean * n / (n - 1.0)).abs() < normscope_numeric::tolerance::ACCUMULATED);
            assert!(
                (v - 1.0).abs() < 4.0 * 2f64.sqrt() * se,
                "seed {seed}: {v} (se {se})"
            );
        }
    }
}
