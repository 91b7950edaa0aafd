//! What a norm slot does in the mean-field recursion ([`super::mean_field`]): the second
//! moment of its output, the token correlation after it, and its Jacobian's mean-square gain
//! on a tangent independent of its input (docs/theory.md, "Other norms"):
//!
//! ```text
//! LayerNorm, RMSNorm, GroupNorm:  q' = 1,                c' = c,                          gain = 1/q
//! DyT (y = tanh(alpha z)):        q' = E tanh^2(s Z),    c' = E[tanh(s X) tanh(s Y)] / q',  gain = alpha^2 E sech^4(s Z)
//! InstanceNorm, BatchNorm:        q' = 1,                c' = -1/(n - 1),                 gain = n (n - 2) / ((n - 1)(n - 3) q (1 - c))  on the fluctuation, 0 on the mean
//! ```
//!
//! The last line is the map of a norm that averages each channel over n exchangeable columns
//! (InstanceNorm: the n tokens of a sequence; BatchNorm: the n = B samples of a batch of
//! one-token inputs) with Gaussian input columns of second moment q and pairwise correlation
//! c (Yang, Pennington, Rao, Sohl-Dickstein and Schoenholz 2019, "A Mean Field Theory of Batch
//! Normalization", ICLR; their linear-network rate is the case `q (1 - c) = n/(n - 1)`). Per
//! channel the norm maps `z` to `y = sqrt(n) P z / |P z|` with `P = I - 11^T/n`; `P z` is
//! isotropic in the (n-1)-dimensional range of P, so `E[y y^T] = n/(n-1) P` (the output's
//! `q' = 1`, `c' = -1/(n-1)`), its direction is independent of its radius,
//! `E 1/|P z|^2 = 1/(q (1 - c)(n - 3))` (inverse chi-square with n - 1 degrees), and its
//! Jacobian `(sqrt(n)/|P z|)(P - y y^T/n)` removes the columns' mean and, of a gradient's
//! fluctuation (isotropic in the range of P for exchangeable columns), keeps `(n-2)/(n-1)`
//! times `n / |P z|^2`. It needs `c < 1` and `n >= 4` for the inverse chi-square's mean; it is
//! taken from `n >= 6` ([`MIN_COLUMNS`]), where its variance is finite too.
//!
//! with `s = alpha sqrt(q)`, Z standard normal and (X, Y) standard normals of correlation c
//! (the two tokens' coordinates). DyT's Jacobian is `diag(alpha sech^2(alpha z))`; its mean
//! square on an independent tangent is `alpha^2 E sech^4`. The integrals are
//! [`crate::norms::dyt_moments`], accurate at any `s` (the correlation by its series
//! `c - (2/3) c (1 - c^2) s^4` below `s = 1e-3`); beyond `q = e^(+-600)` their limits
//! are used: `q' = alpha^2 q`, `c' = c`, `gain = alpha^2` as `q -> 0` (tanh is linear there),
//! and `q' = 1`, `c' = (2/pi) asin(c)`, `gain = alpha 4 / (3 sqrt(2 pi q))` as `q -> infinity`
//! (tanh is the sign there).

use super::logsum::Mag;
use crate::norms::{dyt, dyt_moments};
use crate::spec::{NormKind, NormMap};
use crate::{Error, Result};
use std::ops::{Div, Mul};

/// A norm slot's action on a stream of second moment `q` and token correlation `c`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlotMap {
    /// Second moment of the output, per coordinate.
    pub q: Mag,
    /// Token correlation of the output.
    pub corr: f64,
    /// Mean-square gain of the Jacobian (on a tangent's fluctuation over the columns when
    /// [`Self::kills_mean`]).
    pub gain: Mag,
    /// Whether the Jacobian removes the columns' mean (InstanceNorm, BatchNorm), so that
    /// `gain` applies to a tangent's fluctuation alone.
    pub kills_mean: bool,
}

/// `ln q` beyond which DyT's integrals take their limits (`s` below `e^-300` or above
/// `e^300`: far beyond where the limits hold to f64's precision).
const LN_Q_LIMIT: f64 = 600.0;

/// The map of a slot of norm `kind` (module docs) over `n` exchangeable columns (read by
/// InstanceNorm and BatchNorm only); `layer` names the block in an error.
pub(crate) fn slot_map(kind: NormKind, q: Mag, c: f64, n: f64, layer: usize) -> Result<SlotMap> {
    match kind.closed_form_map() {
        NormMap::Sphere => Ok(SlotMap {
            q: Mag::one(),
            corr: c,
            gain: Mag::one().div(q),
            kills_mean: false,
        }),
        NormMap::Tanh => Ok(dyt_map(dyt::ALPHA0, q, c)),
        NormMap::Columns => column_map(kind, q, c, n, layer),
        NormMap::Absent => Err(Error::Unsupported(
            "the identity has no norm slot to map".to_string(),
        )),
    }
}

/// The fewest columns a column norm's map is derived for. Its mean needs `E 1/chi^2_{n-1}`,
/// finite from `n = 4`; below `n = 6` its variance `E 1/chi^4_{n-1}` is infinite, so the
/// finite-width networks it describes have per-channel gains without a variance, their
/// deviation from the limit is not O(1/d) and Monte Carlo's intervals do not hold (measured:
/// Pre-Norm, InstanceNorm over 4 tokens, `c0 = 0.3`, d = 256: `grad_sq` at layer 0 is 7.59 +-
/// 0.46 by Monte Carlo against 10.35). The closed form is derived from `n = 6`.
pub const MIN_COLUMNS: f64 = 6.0;

/// InstanceNorm's and BatchNorm's map over `n` columns (module docs).
fn column_map(kind: NormKind, q: Mag, c: f64, n: f64, layer: usize) -> Result<SlotMap> {
    if n < MIN_COLUMNS {
        return Err(Error::Unsupported(format!(
            "the closed form of {} over {n} columns: its Jacobian's mean square has no \
             variance below 6 (E 1/chi^4 with n - 1 = {} degrees); derived for n >= 6",
            kind.label(),
            n - 1.0
        )));
    }
    let spread = 1.0 - c;
    if spread.is_nan() || spread <= 0.0 || q.value() == 0.0 && q.ln() == f64::NEG_INFINITY {
        return Err(Error::Undefined(format!(
            "{}'s input at block {layer} has identical columns (correlation {c}, second \
             moment {:e}): nothing to normalize",
            kind.label(),
            q.value()
        )));
    }
    let k = n * (n - 2.0) / ((n - 1.0) * (n - 3.0) * spread);
    Ok(SlotMap {
        q: Mag::one(),
        corr: -1.0 / (n - 1.0),
        gain: Mag::new(k).div(q),
        kills_mean: true,
    })
}

/// Maps kept per thread ([`remembered`]) before the cache is emptied.
const CACHE_ENTRIES: usize = 1 << 16;

thread_local! {
    /// DyT's maps by the bits of `(q, c)`: the recursion recomputes each block's step from
    /// its checkpoint in the backward pass, and each costs a pair moment (about 0.15 s).
    static CACHE: std::cell::RefCell<std::collections::HashMap<(i64, u64, u64), SlotMap>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// `map()`, or the map this thread computed before for the same bits of `q` and `c` (the
/// same value: a cache changes no output). Only maps built from f64 values are kept, whose
/// `Mag`s are canonical.
fn remembered(q: Mag, c: f64, map: impl FnOnce() -> SlotMap) -> SlotMap {
    let e = q.exponent();
    let key = (e, q.over_pow2(e).to_bits(), c.to_bits());
    if let Some(m) = CACHE.with(|k| k.borrow().get(&key).copied()) {
        return m;
    }
    let m = map();
    CACHE.with(|k| {
        let mut k = k.borrow_mut();
        if k.len() >= CACHE_ENTRIES {
            k.clear();
        }
        k.insert(key, m);
    });
    m
}

/// DyT's map at `alpha` (module docs).
fn dyt_map(alpha: f64, q: Mag, c: f64) -> SlotMap {
    let ln_q = q.ln();
    if q.value() == 0.0 && ln_q == f64::NEG_INFINITY {
        return SlotMap {
            q: Mag::zero(),
            corr: c,
            gain: Mag::new(alpha * alpha),
            kills_mean: false,
        };
    }
    if ln_q < -LN_Q_LIMIT {
        return SlotMap {
            q: q.mul(Mag::new(alpha * alpha)),
            corr: c,
            gain: Mag::new(alpha * alpha),
            kills_mean: false,
        };
    }
    if ln_q > LN_Q_LIMIT {
        let k = 4.0 / (3.0 * (2.0 * std::f64::consts::PI).sqrt());
        return SlotMap {
            q: Mag::one(),
            corr: std::f64::consts::FRAC_2_PI * c.clamp(-1.0, 1.0).asin(),
            gain: Mag::new(alpha * k).div(q.sqrt()),
            kills_mean: false,
        };
    }
    remembered(q, c, || {
        let s = alpha * q.value().sqrt();
        let second = dyt_moments::second_moment(s);
        SlotMap {
            q: Mag::new(second),
            corr: dyt_corr(s, c, second),
            gain: Mag::new(alpha * alpha * dyt_moments::deriv_second_moment(s)),
            kills_mean: false,
        }
    })
}

/// Below this `s` the correlation after DyT is its series (truncation `s^6 < 1e-18`).
const SERIES_S: f64 = 1e-3;

/// `E[tanh(sX) tanh(sY)] / E tanh^2(sZ)` for correlation `c` (`second` the denominator):
/// `c` itself at `|c| = 1` and 0, the series `c - (2/3) c (1 - c^2) s^4` below [`SERIES_S`]
/// (`tanh x = x - x^3/3 + 2 x^5/15`, Isserlis' moments), else the integrals.
#[allow(clippy::float_cmp)] // the exact ends c = +-1 and 0 map to themselves
fn dyt_corr(s: f64, c: f64, second: f64) -> f64 {
    let c = c.clamp(-1.0, 1.0);
    if c.abs() == 1.0 || c == 0.0 {
        return c;
    }
    if s < SERIES_S {
        return c - 2.0 / 3.0 * c * (1.0 - c * c) * s.powi(4);
    }
    (dyt_moments::pair_moment(s, s, c) / second).clamp(-1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_join_the_integrals() {
        let a = dyt::ALPHA0;
        // Small q: tanh is linear.
        let m = dyt_map(a, Mag::new(1e-200), 0.3);
        assert!((m.q.value() / (a * a * 1e-200) - 1.0).abs() < 1e-12);
        assert!((m.corr - 0.3).abs() < 1e-12 && (m.gain.value() / (a * a) - 1.0).abs() < 1e-12);
        // Large q: tanh is the sign; the arcsine law and the 1/sqrt(q) gain.
        let q = 1e200;
        let m = dyt_map(a, Mag::new(q), 0.3);
        assert!((m.q.value() - 1.0).abs() < 1e-12);
        let arcsine = std::f64::consts::FRAC_2_PI * 0.3f64.asin();
        assert!((m.corr - arcsine).abs() < 1e-9, "{} vs {arcsine}", m.corr);
        let k = 4.0 / (3.0 * (2.0 * std::f64::consts::PI).sqrt());
        assert!((m.gain.value() / (a * k / q.sqrt()) - 1.0).abs() < 1e-6);
        // Beyond the limit the same formulas, continuous at the switch.
        let huge = dyt_map(a, Mag::new(1e300).mul(Mag::new(1e300)), 0.3);
        assert_eq!(huge.q, Mag::one());
        assert!(huge.gain.value() > 0.0 && huge.gain.ln() < -600.0);
    }

    #[test]
    fn the_correlation_is_exact_at_its_ends_and_follows_its_series() {
        for c in [-1.0, 0.0, 1.0] {
            assert_eq!(dyt_map(0.5, Mag::new(4.0), c).corr.to_bits(), c.to_bits());
        }
        // Across the switch to the series the integrals agree with it to their own accuracy,
        // about 1e-12 at s = 2e-3 (30-digit mpmath gives -0.899999999998176044 at c = -0.9,
        // the series' value to its truncation s^6 ~ 6e-17; the integrals -0.89999999999929).
        for c in [0.3, -0.9, 0.999] {
            let s = 2e-3;
            let second = dyt_moments::second_moment(s);
            let integral = dyt_moments::pair_moment(s, s, c) / second;
            let series = c - 2.0 / 3.0 * c * (1.0 - c * c) * s.powi(4);
            assert!(
                (integral - series).abs() < 3e-12,
                "{c}: {integral} vs {series}"
            );
        }
        // Below the switch the map is the series itself (at s = 5e-5 its correction is below
        // an ulp of c, where the integrals would be off by about 1e-10).
        let tiny = dyt_map(0.5, Mag::new(1e-8), -0.9);
        let series = -0.9 + 2.0 / 3.0 * 0.9 * 0.19 * (5e-5f64).powi(4);
        assert_eq!(tiny.corr.to_bits(), series.to_bits());
    }

    #[test]
    fn layer_norm_divides_by_the_second_moment() {
        let m = slot_map(NormKind::Layer, Mag::new(4.0), 0.2, 8.0, 1).unwrap();
        assert_eq!((m.q, m.corr, m.gain.value()), (Mag::one(), 0.2, 0.25));
        assert!(!m.kills_mean);
    }

    #[test]
    fn column_norms_follow_yang_et_al() {
        // Yang et al. 2019, Theorem 3.9: a linear BatchNorm network's gradient grows by
        // (B - 2)/(B - 3) per layer; its BatchNorm input has q (1 - c) = B/(B - 1) (q = 1
        // and c = -1/(B - 1) after the previous BatchNorm).
        for n in [6.0, 8.0, 16.0, 1000.0] {
            let c = -1.0 / (n - 1.0);
            let m = slot_map(NormKind::Batch, Mag::one(), c, n, 1).unwrap();
            assert_eq!((m.q, m.corr, m.kills_mean), (Mag::one(), c, true));
            let rate = (n - 2.0) / (n - 3.0);
            assert!((m.gain.value() / rate - 1.0).abs() < 1e-15, "{n}");
        }
        // The gain scales as 1/(q (1 - c)); InstanceNorm is the same map over tokens.
        let m = slot_map(NormKind::Instance, Mag::new(2.0), 0.5, 6.0, 1).unwrap();
        assert!((m.gain.value() - 6.0 * 4.0 / (5.0 * 3.0 * 2.0 * 0.5)).abs() < 1e-15);
        let few = slot_map(NormKind::Batch, Mag::one(), 0.0, 5.0, 1).unwrap_err();
        assert!(few.to_string().contains("n >= 6"), "{few}");
        let same = slot_map(NormKind::Instance, Mag::one(), 1.0, 8.0, 5).unwrap_err();
        assert!(same.to_string().contains("block 5"), "{same}");
    }
}
