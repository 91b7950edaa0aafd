//! Claim 7's mechanism tested on the optimizers themselves (an intervention, not a regression
//! across blocks): rescale one parameter block's gradients by `k` and compare the steps.
//!
//! - **Adam**: per entry `step = lr m_hat / (sqrt(v_hat) + eps)`. Scaling every gradient of
//!   the block's history by `k` scales `m_hat` and `sqrt(v_hat)` by `|k|`, so the scaled step
//!   is `lr m_hat / (sqrt(v_hat) + eps / k)` (`k > 0`) and
//!   `|step_k / step_1 - 1| = eps |1 - 1/k| / (sqrt(v_hat) + eps / k) <= max(1, 1/k) eps / sqrt(v_hat)`,
//!   with `sqrt(v_hat)` the unscaled run's (at update 1, `|g|`): for `k = 1e-3` the bound is
//!   `eps / (k |g|)`, for `k = 1e3` it is `eps / |g|`. Unchanged up to eps effects.
//! - **Plain SGD**: `step = lr g`, so the step scales by exactly `k` (bit for bit when `k` is a
//!   power of two; within a rounding otherwise).
//! - **SGD with momentum** `mu`: `b <- mu b + g`, `step = lr b`: the step scales by `k` when
//!   the whole history is scaled, but not when only the current gradient is (the buffer
//!   carries the earlier, unscaled gradients): why a momentum run's slope across blocks
//!   measures momentum's averaging as much as the gradient's scale.
//!
//! Each optimizer keeps one state per parameter tensor, so the other block's steps are bit for
//! bit the same whatever `k`.

#[cfg(test)]
mod tests {
    use super::super::{Optimizer, OptimizerKind, Sgd};
    use nalgebra::DMatrix;

    /// Two blocks as a Transformer's alternate: an "attention" block of 4 x 8 entries and an
    /// "MLP" block of 8 x 16, at different gradient scales.
    const SHAPES: [(usize, usize); 2] = [(4, 8), (8, 16)];
    const STEPS: u64 = 6;
    const LR: f64 = 1e-2;

    /// Block `b`'s gradient at update `t`: entries of magnitude `scale_b (0.2 + |sin|)` with a
    /// sign fixed per entry (a consistent history: momentum adds up rather than cancels).
    fn grad(b: usize, t: u64) -> DMatrix<f64> {
        let (r, c) = SHAPES[b];
        let scale = [3e-2, 0.7][b];
        DMatrix::from_fn(r, c, |i, j| {
            let e = (i * c + j) as f64;
            let sign = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
            sign * scale * (0.2 + (1.3 * e + 0.7 * t as f64 + 0.1 * b as f64).sin().abs())
        })
    }

    /// The steps `p_{t-1} - p_t` of both blocks at every update, block 0's gradient multiplied
    /// by `k` at updates `t >= from` (from 1: the whole history), and Adam's `sqrt(v_hat)` of
    /// block 0 at every update (None for SGD).
    #[allow(clippy::type_complexity)]
    fn steps(
        kind: OptimizerKind,
        k: f64,
        from: u64,
    ) -> (Vec<[DMatrix<f64>; 2]>, Vec<Option<DMatrix<f64>>>) {
        let mut opt = Optimizer::new(kind, &SHAPES, &[true, true]);
        let mut p: [DMatrix<f64>; 2] = SHAPES.map(|(r, c)| DMatrix::zeros(r, c));
        let (mut out, mut denom) = (Vec::new(), Vec::new());
        for t in 1..=STEPS {
            let mut g0 = grad(0, t);
            if t >= from {
                g0 *= k;
            }
            let before = p.clone();
            let [p0, p1] = &mut p;
            opt.step(&mut [p0, p1], &[g0, grad(1, t)], LR);
            out.push([&before[0] - &p[0], &before[1] - &p[1]]);
            let bc2 = 1.0 - 0.999_f64.powi(t as i32);
            denom.push(opt.second_moment(0).map(|v| v.map(|x| (x / bc2).sqrt())));
        }
        (out, denom)
    }

    fn rms(x: &DMatrix<f64>) -> f64 {
        x.norm() / (x.len() as f64).sqrt()
    }

    #[test]
    fn adams_step_is_unchanged_when_the_gradient_is_rescaled_up_to_eps() {
        let kind = OptimizerKind::parse("adam").unwrap();
        let eps = kind.denominator_eps().unwrap();
        let (base, denom) = steps(kind, 1.0, 1);
        for k in [1e-3, 1e3] {
            let (scaled, _) = steps(kind, k, 1);
            for t in 0..STEPS as usize {
                // The other block: its own state, bit for bit the same steps.
                assert_eq!(scaled[t][1], base[t][1], "k = {k}, update {}", t + 1);
                // The rescaled block: entry by entry within the bound of the module docs (plus
                // a rounding slack), at update 1 and at later updates with the whole history
                // rescaled.
                let s = denom[t].as_ref().unwrap();
                for (i, (a, b)) in scaled[t][0].iter().zip(base[t][0].iter()).enumerate() {
                    let bound = k.recip().max(1.0) * eps / s[i] + 1e-12;
                    assert!(
                        (a / b - 1.0).abs() <= bound,
                        "k = {k}, update {}, entry {i}: {a} vs {b} (bound {bound})",
                        t + 1
                    );
                }
                // And the block's RMS step: the gradient moved by a factor of 1e3 either way, the
                // step by less than 1e-3 of itself (gradient entries >= 6e-3 here, so
                // eps / (k |g|) <= 1.7e-3 at most and about 4e-4 in RMS).
                let r = rms(&scaled[t][0]) / rms(&base[t][0]);
                assert!((r - 1.0).abs() < 1e-3, "k = {k}, update {}: {r}", t + 1);
            }
        }
    }

    #[test]
    fn plain_sgds_step_scales_by_exactly_k() {
        let kind = OptimizerKind::parse("sgd").unwrap();
        assert_eq!(kind, OptimizerKind::Sgd(Sgd { momentum: 0.0 }));
        let (base, _) = steps(kind, 1.0, 1);
        for k in [1e-3, 1e3] {
            let (scaled, _) = steps(kind, k, 1);
            for t in 0..STEPS as usize {
                assert_eq!(scaled[t][1], base[t][1]);
                for (a, b) in scaled[t][0].iter().zip(base[t][0].iter()) {
                    // One product rounded, and the cancellation of p_{t-1} - p_t (|p| up to 6
                    // steps): a few ulps of the step.
                    assert!((a / (k * b) - 1.0).abs() < 1e-13, "k = {k}: {a} vs {b}");
                }
            }
        }
        // A power of two commutes with every rounding: bit for bit k times the step.
        for k in [1024.0, 1.0 / 1024.0] {
            let (scaled, _) = steps(kind, k, 1);
            for t in 0..STEPS as usize {
                assert_eq!(scaled[t][0], &base[t][0] * k, "k = {k}, update {}", t + 1);
            }
        }
    }

    #[test]
    fn momentum_sgd_scales_by_k_only_when_its_history_does() {
        let kind = OptimizerKind::Sgd(Sgd { momentum: 0.9 });
        let (base, _) = steps(kind, 1.0, 1);
        for k in [1e-3, 1e3] {
            // The whole history rescaled: the buffer, so the step, scales by k.
            let (scaled, _) = steps(kind, k, 1);
            for t in 0..STEPS as usize {
                for (a, b) in scaled[t][0].iter().zip(base[t][0].iter()) {
                    assert!((a / (k * b) - 1.0).abs() < 1e-12, "k = {k}: {a} vs {b}");
                }
            }
            // Only the last update's gradient rescaled: the buffer still holds the earlier
            // gradients, so the step is far from k times the unscaled one (for k = 1e-3 it keeps
            // most of its size, 0.9 b over b + g; for k = 1e3 it grows by less than k).
            let (late, _) = steps(kind, k, STEPS);
            let t = STEPS as usize - 1;
            let r = rms(&late[t][0]) / rms(&base[t][0]);
            assert!(
                (r / k).ln().abs() > 1.0,
                "k = {k}: RMS ratio {r}, proportional would be {k}"
            );
            // Earlier updates saw the same gradients: the same steps.
            assert_eq!(late[t - 1][0], base[t - 1][0]);
        }
    }
}
