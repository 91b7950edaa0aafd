//! Random matrices and inputs.

use crate::branch::Init;
use crate::branch::init::BERT_STD;
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use normscope_numeric::normal;
use normscope_numeric::rng::Rng;
use rand::RngExt;

/// A `rows x cols` matrix (fan_in = cols, fan_out = rows) drawn from `init`, times `scale`:
/// Xavier and He normal, PyTorch's uniform default, BERT's normal truncated at two standard
/// deviations (by rejection). Entries are drawn in column-major order with [`normal`]'s
/// ziggurat, bit-identical to `rand_distr::StandardNormal` draw for draw.
pub fn matrix(rng: &mut Rng, init: Init, rows: usize, cols: usize, scale: f64) -> DMatrix<f64> {
    matrix_in(rng, init, rows, cols, scale)
}

/// [`matrix`] rounded to `T` ([`Real::of`]): each entry is drawn in f64 and rounded as it is
/// written, so an f32 matrix never has an f64 copy beside it. The same draws in the same
/// order, so the same values as rounding [`matrix`]'s result (for f64, [`matrix`] itself).
/// The matrix's memory is written once, not zeroed first.
pub fn matrix_in<T: Real>(
    rng: &mut Rng,
    init: Init,
    rows: usize,
    cols: usize,
    scale: f64,
) -> DMatrix<T> {
    let (n, fan_in, fan_out) = (rows * cols, cols as f64, rows as f64);
    let data = match init {
        Init::Xavier | Init::He => {
            normal::scaled_vec(rng, n, init.variance(fan_in, fan_out).sqrt() * scale)
        }
        Init::TorchDefault => {
            let b = 1.0 / fan_in.sqrt();
            (0..n)
                .map(|_| T::of(scale * rng.random_range(-b..b)))
                .collect()
        }
        Init::Bert => normal::truncated_vec(rng, n, 2.0, scale * BERT_STD),
    };
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

/// `m` in float type `T`: moved as it is for f64 (no copy: a streamed network's peak memory
/// holds one block's matrices once), rounded entry by entry for f32.
pub(crate) fn into_real<T: Real>(m: DMatrix<f64>) -> DMatrix<T> {
    let boxed: Box<dyn std::any::Any> = Box::new(m);
    match boxed.downcast::<DMatrix<T>>() {
        Ok(same) => *same,
        Err(other) => other
            .downcast::<DMatrix<f64>>()
            .expect("an f64 matrix")
            .map(T::of),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn rounded_matrices_are_the_f64_ones_rounded_from_the_same_stream() {
        for init in Init::ALL {
            let (mut a, mut b) = (Rng::seed_from_u64(11), Rng::seed_from_u64(11));
            let wide = matrix(&mut a, init, 3, 4000, 0.7);
            let single = matrix_in::<f32>(&mut b, init, 3, 4000, 0.7);
            assert_eq!(single, wide.map(|x| x as f32), "{init:?}");
            assert_eq!(a, b, "{init:?}: the stream ends at the same place");
            let mut c = Rng::seed_from_u64(11);
            assert_eq!(matrix_in::<f64>(&mut c, init, 3, 4000, 0.7), wide);
        }
    }

    #[test]
    fn token_moments() {
        let mut rng = Rng::seed_from_u64(7);
        let x = tokens(&mut rng, 20_000, 3, 2.0, 0.5);
        let q = x.column(0).norm_squared() / 20_000.0;
        let c = x.column(0).dot(&x.column(1)) / 20_000.0 / 2.0;
        assert!(
            (q - 2.0).abs() < normscope_numeric::tolerance::SAMPLE_Q_4SE,
            "{q}"
        );
        assert!(
            (c - 0.5).abs() < normscope_numeric::tolerance::SAMPLE_C_4SE,
            "{c}"
        );
    }
}
