//! Random matrices and inputs.

use super::normal;
use super::rng::Rng;
use crate::branch::Init;
use crate::branch::init::BERT_STD;
use nalgebra::DMatrix;
use rand::RngExt;

/// A `rows x cols` matrix (fan_in = cols, fan_out = rows) drawn from `init`, times `scale`:
/// Xavier and He normal, PyTorch's uniform default, BERT's normal truncated at two standard
/// deviations (by rejection). Entries are drawn in column-major order with [`normal`]'s
/// ziggurat, bit-identical to `rand_distr::StandardNormal` draw for draw.
pub fn matrix(rng: &mut Rng, init: Init, rows: usize, cols: usize, scale: f64) -> DMatrix<f64> {
    let (fan_in, fan_out) = (cols as f64, rows as f64);
    let mut data = vec![0.0; rows * cols];
    match init {
        Init::Xavier | Init::He => {
            let s = init.variance(fan_in, fan_out).sqrt() * scale;
            normal::fill_scaled(rng, &mut data, s);
        }
        Init::TorchDefault => {
            let b = 1.0 / fan_in.sqrt();
            for v in data.iter_mut() {
                *v = scale * rng.random_range(-b..b);
            }
        }
        Init::Bert => normal::fill_truncated(rng, &mut data, 2.0, scale * BERT_STD),
    }
    DMatrix::from_vec(rows, cols, data)
}

/// A standard normal matrix (column-major draws, as [`matrix`]).
pub fn gaussian(rng: &mut Rng, rows: usize, cols: usize) -> DMatrix<f64> {
    let mut data = vec![0.0; rows * cols];
    normal::fill(rng, &mut data);
    DMatrix::from_vec(rows, cols, data)
}

/// n tokens of width d with per-coordinate second moment q0 and pairwise correlation c0:
/// `X = sqrt(q0) Z L^T` with `L L^T = (1 - c0) I + c0 1 1^T` (n x n), which is positive
/// definite for `-1/(n-1) < c0 < 1`; c0 = 1 gives identical tokens.
pub fn tokens(rng: &mut Rng, d: usize, n: usize, q0: f64, c0: f64) -> DMatrix<f64> {
    let z = gaussian(rng, d, n);
    if c0 >= 1.0 {
        let col = z.column(0).into_owned();
        return DMatrix::from_fn(d, n, |i, _| q0.sqrt() * col[i]);
    }
    let cov = DMatrix::from_fn(n, n, |i, j| if i == j { 1.0 } else { c0 });
    let l = cov
        .cholesky()
        .expect("token covariance is positive definite (checked with the config)")
        .l();
    (z * l.transpose()) * q0.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn token_moments() {
        let mut rng = Rng::seed_from_u64(7);
        let x = tokens(&mut rng, 20_000, 3, 2.0, 0.5);
        let q = x.column(0).norm_squared() / 20_000.0;
        let c = x.column(0).dot(&x.column(1)) / 20_000.0 / 2.0;
        assert!((q - 2.0).abs() < crate::tolerance::SAMPLE_Q_4SE, "{q}");
        assert!((c - 0.5).abs() < crate::tolerance::SAMPLE_C_4SE, "{c}");
    }
}
