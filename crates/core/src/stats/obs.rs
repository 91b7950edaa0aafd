//! Interval observations: a value known only to lie in a closed interval `[lo, hi]` (Turnbull
//! 1976, J. R. Statist. Soc. B 38:290, section 1; Klein and Moeschberger 2003, Survival
//! Analysis, section 3.3). `lo == hi` is an exact value; `lo = -inf` is left-censored (known
//! only to be at most `hi`); `hi = +inf` is right-censored (known only to be at least `lo`). A
//! maximum stable learning rate found by bisection lies between the last stable and the first
//! failing rate; one still stable at the search's cap is right-censored at the cap.
//!
//! The paired difference of two interval observations is the set of every difference of values
//! they allow (interval arithmetic; Moore 1966, Interval Analysis, chapter 2):
//!
//! ```text
//! [a.lo, a.hi] - [b.lo, b.hi] = [a.lo - b.hi, a.hi - b.lo]
//! ```

use std::ops::Sub;

/// A value known to lie in `[lo, hi]`, with `lo <= hi`, neither NaN, `lo < +inf` and
/// `hi > -inf` (so the interval is never empty and never a point at infinity). Built only by
/// the constructors here, which return `None` for anything else.
///
/// # Examples
///
/// A bisection bracket (stable at 0.5, failing at 1), a rate still stable at the search's cap
/// 2 (right-censored), and their paired difference by interval arithmetic:
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
///
/// let a = Obs::between(0.5, 1.0).unwrap();
/// assert_eq!((a.lo(), a.hi()), (0.5, 1.0));
/// assert_eq!(a.representative(), Some(0.75));
/// assert!(a.contains(0.5) && !a.contains(1.5) && !a.is_exact());
///
/// let r = Obs::at_least(2.0).unwrap();
/// assert_eq!((r.lo(), r.hi()), (2.0, f64::INFINITY));
/// assert_eq!(r.representative(), Some(2.0));
///
/// // [2, inf] - [0.5, 1] = [2 - 1, inf - 0.5] = [1, inf].
/// let d = r - a;
/// assert_eq!((d.lo(), d.hi()), (1.0, f64::INFINITY));
/// // [0.5, 1] - [0.25, 0.25] = [0.25, 0.75].
/// let e = a - Obs::exact(0.25).unwrap();
/// assert_eq!((e.lo(), e.hi()), (0.25, 0.75));
/// assert_eq!(Obs::paired(&[a, r], &[a]), None);
///
/// // Not an interval: reversed ends, NaN, a point at infinity.
/// assert_eq!(Obs::between(2.0, 1.0), None);
/// assert_eq!(Obs::between(f64::NAN, 1.0), None);
/// assert_eq!(Obs::exact(f64::INFINITY), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obs {
    lo: f64,
    hi: f64,
}

impl Obs {
    /// The interval `[lo, hi]`; `None` when either end is NaN, `lo > hi`, `lo = +inf` or
    /// `hi = -inf`. `[-inf, +inf]` (nothing known) is allowed.
    pub fn between(lo: f64, hi: f64) -> Option<Obs> {
        if lo.is_nan() || hi.is_nan() || lo > hi || lo == f64::INFINITY || hi == f64::NEG_INFINITY {
            return None;
        }
        Some(Obs { lo, hi })
    }

    /// The exact value `x` (`[x, x]`); `None` unless `x` is finite.
    pub fn exact(x: f64) -> Option<Obs> {
        if x.is_finite() {
            Obs::between(x, x)
        } else {
            None
        }
    }

    /// Right-censored at `lo`: the value is at least `lo` (`[lo, +inf]`); `None` unless `lo`
    /// is finite.
    pub fn at_least(lo: f64) -> Option<Obs> {
        if lo.is_finite() {
            Obs::between(lo, f64::INFINITY)
        } else {
            None
        }
    }

    /// Left-censored at `hi`: the value is at most `hi` (`[-inf, hi]`); `None` unless `hi` is
    /// finite.
    pub fn at_most(hi: f64) -> Option<Obs> {
        if hi.is_finite() {
            Obs::between(f64::NEG_INFINITY, hi)
        } else {
            None
        }
    }

    /// The lower end (`-inf` when left-censored).
    pub fn lo(&self) -> f64 {
        self.lo
    }

    /// The upper end (`+inf` when right-censored).
    pub fn hi(&self) -> f64 {
        self.hi
    }

    /// Whether the value is known exactly (`lo == hi`).
    pub fn is_exact(&self) -> bool {
        self.lo.total_cmp(&self.hi).is_eq()
    }

    /// Whether `x` lies in the closed interval `[lo, hi]`.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// The value that stands for the observation in a point estimate: the midpoint
    /// `(lo + hi)/2` when both ends are finite (the value itself when exact), the finite end
    /// when one end is infinite, `None` when both are (nothing is known).
    pub fn representative(&self) -> Option<f64> {
        match (self.lo.is_finite(), self.hi.is_finite()) {
            (true, true) => Some(self.lo + (self.hi - self.lo) / 2.0),
            (true, false) => Some(self.lo),
            (false, true) => Some(self.hi),
            (false, false) => None,
        }
    }

    /// The paired differences `a_i - b_i` (see [`Sub`]); `None` when the lengths differ.
    pub fn paired(a: &[Obs], b: &[Obs]) -> Option<Vec<Obs>> {
        (a.len() == b.len()).then(|| a.iter().zip(b).map(|(x, y)| *x - *y).collect())
    }
}

/// The difference of two interval observations, `[a.lo - b.hi, a.hi - b.lo]`: every value
/// `x - y` with `x` in `a` and `y` in `b`, and no other. An end is infinite when either
/// operand's matching end is, never NaN (`a.lo` and `-b.hi` are each `< +inf`).
impl Sub for Obs {
    type Output = Obs;
    fn sub(self, b: Obs) -> Obs {
        Obs {
            lo: self.lo - b.hi,
            hi: self.hi - b.lo,
        }
    }
}

#[cfg(test)]
// Exact values: the ends below are small integers and halves, exactly representable, and their
// sums and differences are exact.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    #[test]
    fn constructors_reject_what_is_not_an_interval() {
        assert!(Obs::between(2.0, 1.0).is_none());
        assert!(Obs::between(f64::NAN, 1.0).is_none());
        assert!(Obs::between(0.0, f64::NAN).is_none());
        assert!(Obs::between(INF, INF).is_none());
        assert!(Obs::between(-INF, -INF).is_none());
        assert!(Obs::exact(INF).is_none() && Obs::exact(f64::NAN).is_none());
        assert!(Obs::at_least(INF).is_none() && Obs::at_least(-INF).is_none());
        assert!(Obs::at_most(-INF).is_none() && Obs::at_most(f64::NAN).is_none());
        let any = Obs::between(-INF, INF).unwrap();
        assert_eq!(any.representative(), None);
        assert!(any.contains(1e308) && !any.is_exact());
    }

    #[test]
    fn ends_and_representatives() {
        let e = Obs::exact(1.5).unwrap();
        assert!(e.is_exact() && e.lo() == 1.5 && e.hi() == 1.5);
        assert_eq!(e.representative(), Some(1.5));
        let b = Obs::between(1.0, 2.0).unwrap();
        assert_eq!(b.representative(), Some(1.5));
        assert!(b.contains(1.0) && b.contains(2.0) && !b.contains(2.5));
        let r = Obs::at_least(3.0).unwrap();
        assert_eq!((r.lo(), r.hi(), r.representative()), (3.0, INF, Some(3.0)));
        let l = Obs::at_most(-1.0).unwrap();
        assert_eq!(
            (l.lo(), l.hi(), l.representative()),
            (-INF, -1.0, Some(-1.0))
        );
    }

    #[test]
    fn differences_follow_interval_arithmetic() {
        // [1, 2] - [0.5, 3] = [1 - 3, 2 - 0.5] = [-2, 1.5].
        let d = Obs::between(1.0, 2.0).unwrap() - Obs::between(0.5, 3.0).unwrap();
        assert_eq!((d.lo(), d.hi()), (-2.0, 1.5));
        // Exact minus exact is exact.
        let d = Obs::exact(3.0).unwrap() - Obs::exact(1.0).unwrap();
        assert!(d.is_exact() && d.lo() == 2.0);
        // Right-censored minus exact: right-censored; exact minus right-censored: left-censored.
        let r = Obs::at_least(4.0).unwrap();
        let x = Obs::exact(1.0).unwrap();
        assert_eq!(((r - x).lo(), (r - x).hi()), (3.0, INF));
        assert_eq!(((x - r).lo(), (x - r).hi()), (-INF, -3.0));
        // Two right-censored: nothing known, and no NaN.
        let rr = r - r;
        assert_eq!((rr.lo(), rr.hi()), (-INF, INF));
        // Every difference of members is a member (a grid over the two intervals).
        let (a, b) = (
            Obs::between(-1.0, 2.0).unwrap(),
            Obs::between(0.5, 1.0).unwrap(),
        );
        let d = a - b;
        for i in 0..=6 {
            for j in 0..=4 {
                let (x, y) = (-1.0 + 0.5 * i as f64, 0.5 + 0.125 * j as f64);
                assert!(d.contains(x - y), "{x} - {y}");
            }
        }
        assert_eq!(Obs::paired(&[a, x], &[b, x]), Some(vec![a - b, x - x]));
        assert_eq!(Obs::paired(&[a], &[]), None);
    }
}
