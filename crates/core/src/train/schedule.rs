//! Learning-rate schedules: linear warmup to a peak, then constant, linear decay, inverse square
//! root or cosine decay.
//!
//! Updates are numbered `s = 1, ..., S` (`S` = `steps`, `W` = `warmup`, `0 <= W <= S`). The rate
//! of update `s` is `lr(s) = peak * f(s)`, the factor `f(s)` computed first and then multiplied
//! by the peak, as `torch.optim.lr_scheduler.LambdaLR` does (`base_lr * lr_lambda(epoch)`): a
//! PyTorch reference with `LambdaLR(optimizer, lambda k: f(k + 1))` (its epoch `k` counts from
//! 0) gets the same doubles.
//!
//! ```text
//! warmup, s <= W:     f(s) = s / W                                      (linear warmup)
//! after,  s > W, with n = S - W (>= 1) and k = s - W - 1 in 0..n:
//!   constant          f(s) = 1
//!   linear            f(s) = (S - s + 1) / (S - W)                      (= (n - k) / n)
//!   inv-sqrt          f(s) = sqrt(max(W, 1)) / sqrt(s)
//!   cosine            f(s) = 0.5 (1 + cos(pi k / n))
//! ```
//!
//! - Warmup (Goyal et al. 2017, arXiv:1706.02677; Vaswani et al. 2017): the first update uses
//!   `peak / W`, update `W` uses `peak`. With `W = S` every update is in warmup; with `W = 0`
//!   there is none.
//! - Linear decay: the first update after warmup uses `peak`, each later one `peak / n` less;
//!   **the last update uses `peak / n`, not zero** (every update moves the parameters).
//! - Inverse square root: fairseq's `inverse_sqrt` scheduler
//!   (`fairseq/optim/lr_scheduler/inverse_square_root_schedule.py`, `lr = decay_factor /
//!   sqrt(num_updates)` with `decay_factor = peak sqrt(warmup_updates)`): continuous at `s = W`,
//!   where the formula gives `peak` as the warmup does; without warmup it is `peak / sqrt(s)`.
//! - Cosine (Loshchilov and Hutter 2017, SGDR, arXiv:1608.03983, one cycle to a minimum of 0):
//!   the first update after warmup uses `peak`; the phase reaches `pi (n - 1) / n` at the last
//!   update, so **the rate never reaches zero**.

use std::f64::consts::PI;

use crate::{Error, Result};

/// The decay after warmup.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::schedule::Decay;
///
/// assert_eq!(Decay::parse("rsqrt")?, Decay::InvSqrt);
/// assert_eq!(Decay::parse("Cosine")?, Decay::Cosine);
/// assert_eq!(Decay::InvSqrt.name(), "inv-sqrt");
/// assert_eq!(Decay::ALL.map(Decay::name).join(", "), Decay::NAMES);
/// assert!(Decay::parse("step").is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decay {
    /// Constant at the peak: `f = 1`.
    Constant,
    /// Linear towards zero: `f(s) = (S - s + 1) / (S - W)`, last update `1 / (S - W)`.
    Linear,
    /// fairseq's inverse square root: `f(s) = sqrt(max(W, 1)) / sqrt(s)`.
    InvSqrt,
    /// Half a cosine: `f(s) = 0.5 (1 + cos(pi (s - W - 1) / (S - W)))`.
    Cosine,
}

impl Decay {
    /// Every decay, in the order of [`Decay::NAMES`].
    pub const ALL: [Decay; 4] = [
        Decay::Constant,
        Decay::Linear,
        Decay::InvSqrt,
        Decay::Cosine,
    ];

    /// The valid names, comma separated.
    pub const NAMES: &'static str = "constant, linear, inv-sqrt, cosine";

    /// The name [`Decay::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            Decay::Constant => "constant",
            Decay::Linear => "linear",
            Decay::InvSqrt => "inv-sqrt",
            Decay::Cosine => "cosine",
        }
    }

    /// Parses a name, ignoring ASCII case; `rsqrt` and `inverse-sqrt` are aliases of
    /// `inv-sqrt`. An unknown name is an [`Error::Unknown`] listing [`Decay::NAMES`].
    pub fn parse(name: &str) -> Result<Self> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "rsqrt" | "inverse-sqrt" => Ok(Decay::InvSqrt),
            s => Self::ALL
                .into_iter()
                .find(|d| d.name() == s)
                .ok_or_else(|| Error::Unknown {
                    kind: "schedule",
                    name: name.to_string(),
                    valid: Self::NAMES.to_string(),
                }),
        }
    }
}

/// A learning-rate schedule over `steps` updates: linear warmup over the first `warmup`
/// updates to `peak`, then `decay`. The equations are in the
/// [module documentation](self). Build it with [`Schedule::new`], which checks the fields.
///
/// # Examples
///
/// Peak 1, warmup W = 2 over S = 6 updates, then linear decay over n = 4:
/// `s/W = 0.5, 1`, then `(S - s + 1)/n = 1, 0.75, 0.5, 0.25`; cosine without warmup over two
/// updates: `0.5 (1 + cos(pi k/2))` = 1, 0.5.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::schedule::{Decay, Schedule};
///
/// let s = Schedule::new(1.0, 2, 6, Decay::Linear)?;
/// assert_eq!(s.lrs(), [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]);
/// assert_eq!(s.lr(4), s.peak * s.factor(4));
/// let cos = Schedule::new(1.0, 0, 2, Decay::Cosine)?;
/// assert_eq!(cos.lrs(), [1.0, 0.5]);
/// assert!(Schedule::new(1.0, 7, 6, Decay::Constant).is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// The peak learning rate (finite, > 0), reached at update `warmup` (update 1 without
    /// warmup).
    pub peak: f64,
    /// Warmup updates `W`, `0..=steps`.
    pub warmup: u64,
    /// Total updates `S` >= 1.
    pub steps: u64,
    /// The decay after warmup.
    pub decay: Decay,
}

impl Schedule {
    /// A checked schedule: `peak` finite and > 0 (field `--lr`), `steps >= 1` (`--steps`),
    /// `warmup <= steps` (`--warmup`).
    pub fn new(peak: f64, warmup: u64, steps: u64, decay: Decay) -> Result<Self> {
        if !(peak.is_finite() && peak > 0.0) {
            return Err(Error::invalid("--lr", peak, "a finite number > 0"));
        }
        if steps < 1 {
            return Err(Error::invalid("--steps", steps, "an integer >= 1"));
        }
        if warmup > steps {
            return Err(Error::invalid(
                "--warmup",
                warmup,
                format!("0..=steps ({steps})"),
            ));
        }
        Ok(Schedule {
            peak,
            warmup,
            steps,
            decay,
        })
    }

    /// The factor `f(s)` of update `s` (1-based): `lr(s) = peak * f(s)`.
    ///
    /// # Panics
    ///
    /// If `s` is not in `1..=steps`.
    pub fn factor(&self, s: u64) -> f64 {
        assert!(
            (1..=self.steps).contains(&s),
            "update {s} outside 1..={}",
            self.steps
        );
        let (w, total) = (self.warmup, self.steps);
        if s <= w {
            return s as f64 / w as f64;
        }
        // s > W, so n = S - W >= 1 and k = s - W - 1 in 0..n.
        let n = (total - w) as f64;
        match self.decay {
            Decay::Constant => 1.0,
            Decay::Linear => (total - s + 1) as f64 / n,
            Decay::InvSqrt => (w.max(1) as f64).sqrt() / (s as f64).sqrt(),
            Decay::Cosine => 0.5 * (1.0 + (PI * (s - w - 1) as f64 / n).cos()),
        }
    }

    /// The learning rate of update `s = 1..=steps` (1-based update number): `peak * f(s)`.
    ///
    /// # Panics
    ///
    /// If `s` is not in `1..=steps`.
    pub fn lr(&self, s: u64) -> f64 {
        self.peak * self.factor(s)
    }

    /// The learning rates of all updates, `lr(1), ..., lr(steps)`.
    pub fn lrs(&self) -> Vec<f64> {
        (1..=self.steps).map(|s| self.lr(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::tolerance::ROUNDING;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= ROUNDING * b.abs()
    }

    #[test]
    fn warmup_rises_linearly_to_the_peak() {
        for decay in Decay::ALL {
            let s = Schedule::new(1e-3, 4, 10, decay).unwrap();
            assert!(close(s.lr(1), 2.5e-4), "{decay:?}");
            assert!(close(s.lr(2), 5e-4), "{decay:?}");
            assert!(close(s.lr(3), 7.5e-4), "{decay:?}");
            assert_eq!(s.lr(4).to_bits(), 1e-3_f64.to_bits(), "{decay:?}");
            // Without warmup the first update is at the peak.
            let s = Schedule::new(1e-3, 0, 10, decay).unwrap();
            assert_eq!(s.lr(1).to_bits(), 1e-3_f64.to_bits(), "{decay:?}");
        }
    }

    #[test]
    fn all_warmup_when_warmup_is_steps() {
        for decay in Decay::ALL {
            let s = Schedule::new(0.1, 5, 5, decay).unwrap();
            let lrs = s.lrs();
            assert_eq!(lrs.len(), 5);
            for (i, lr) in lrs.iter().enumerate() {
                assert!(close(*lr, 0.1 * (i + 1) as f64 / 5.0), "{decay:?} {i}");
            }
        }
    }

    #[test]
    fn constant_stays_at_the_peak() {
        let s = Schedule::new(0.3, 2, 6, Decay::Constant).unwrap();
        for u in 2..=6 {
            assert_eq!(s.lr(u).to_bits(), 0.3_f64.to_bits(), "{u}");
        }
    }

    #[test]
    fn linear_and_cosine_decay_monotonically_and_end_above_zero() {
        for decay in [Decay::Linear, Decay::Cosine] {
            let s = Schedule::new(1.0, 3, 13, decay).unwrap();
            let lrs = s.lrs();
            // The first update after warmup is at the peak.
            assert_eq!(lrs[3].to_bits(), 1.0_f64.to_bits(), "{decay:?}");
            for u in 4..13 {
                assert!(lrs[u] < lrs[u - 1], "{decay:?} update {}", u + 1);
            }
            assert!(lrs[12] > 0.0, "{decay:?}");
        }
        // Linear: the last update uses peak / (S - W) = 1/10; the one before 2/10.
        let s = Schedule::new(1.0, 3, 13, Decay::Linear).unwrap();
        assert!(close(s.lr(13), 0.1) && close(s.lr(12), 0.2));
        // Cosine: n = 10, k = 5 at update 9 is half the peak; the last (k = 9) is
        // 0.5 (1 + cos(0.9 pi)) = 0.0244717...
        let s = Schedule::new(1.0, 3, 13, Decay::Cosine).unwrap();
        assert!((s.lr(9) - 0.5).abs() < ROUNDING);
        assert!((s.lr(13) - 0.024_471_741_852_423).abs() < 1e-14);
    }

    #[test]
    fn inv_sqrt_is_continuous_at_the_end_of_warmup() {
        let s = Schedule::new(2e-3, 16, 100, Decay::InvSqrt).unwrap();
        // The warmup ends at the peak, and the decay's formula gives the peak at s = W.
        assert_eq!(s.lr(16).to_bits(), 2e-3_f64.to_bits());
        let formula_at_w = 2e-3 * (16.0_f64).sqrt() / (16.0_f64).sqrt();
        assert_eq!(formula_at_w.to_bits(), s.lr(16).to_bits());
        // Just after, peak sqrt(16 / 17); at 4 W = 64 exactly half the peak.
        assert!(close(s.lr(17), 2e-3 * 4.0 / 17.0_f64.sqrt()));
        assert!((s.lr(17) / s.lr(16) - 1.0).abs() < 0.03);
        assert!(close(s.lr(64), 1e-3));
        // Without warmup: peak / sqrt(s).
        let s = Schedule::new(1.0, 0, 100, Decay::InvSqrt).unwrap();
        assert!(close(s.lr(4), 0.5) && close(s.lr(100), 0.1));
    }

    #[test]
    fn bad_fields_are_refused_naming_their_flag() {
        let field = |r: Result<Schedule>| match r {
            Err(Error::InvalidParam { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(Schedule::new(0.0, 0, 10, Decay::Constant)), "--lr");
        assert_eq!(field(Schedule::new(-1e-3, 0, 10, Decay::Constant)), "--lr");
        assert_eq!(
            field(Schedule::new(f64::NAN, 0, 10, Decay::Constant)),
            "--lr"
        );
        assert_eq!(
            field(Schedule::new(f64::INFINITY, 0, 10, Decay::Constant)),
            "--lr"
        );
        assert_eq!(field(Schedule::new(1e-3, 0, 0, Decay::Constant)), "--steps");
        let err = Schedule::new(1e-3, 11, 10, Decay::Linear).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("--warmup") && message.contains("0..=steps (10)"),
            "{message}"
        );
        Schedule::new(1e-3, 10, 10, Decay::Linear).unwrap();
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn updates_are_numbered_from_one() {
        Schedule::new(1e-3, 0, 10, Decay::Constant).unwrap().lr(0);
    }

    #[test]
    fn decay_names_parse_with_aliases_and_case() {
        for d in Decay::ALL {
            assert_eq!(Decay::parse(d.name()).unwrap(), d);
            assert!(Decay::NAMES.contains(d.name()));
        }
        assert_eq!(Decay::parse("RSQRT").unwrap(), Decay::InvSqrt);
        assert_eq!(Decay::parse("inverse-sqrt").unwrap(), Decay::InvSqrt);
        assert_eq!(Decay::parse("Cosine").unwrap(), Decay::Cosine);
        let err = Decay::parse("exponential").unwrap_err();
        assert!(matches!(
            err,
            Error::Unknown {
                kind: "schedule",
                ..
            }
        ));
        let message = err.to_string();
        assert!(message.contains("exponential") && message.contains(Decay::NAMES));
    }
}
