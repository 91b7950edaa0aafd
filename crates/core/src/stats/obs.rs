//! Interval observations: a value known only to lie in an interval (Turnbull 1976, J. R.
//! Statist. Soc. B 38:290, section 1; Klein and Moeschberger 2003, Survival Analysis, section
//! 3.3). Each finite end is closed (the value may equal it) or open (it may not): `[lo, hi]`,
//! `[lo, hi)`, `(lo, hi]` or `(lo, hi)`. `lo == hi` (closed) is an exact value; `lo = -inf` is
//! left-censored (known only to be at most `hi`, or below it when that end is open); `hi =
//! +inf` is right-censored (known only to be at least `lo`). An infinite end is never a value,
//! and is stored closed, so that two observations allowing the same values compare equal.
//!
//! A maximum stable learning rate `m` found by a search ([`crate::train::search`]) lies in the
//! half-open bracket `[stable, unstable)`: the run was stable at `stable` (so `m >= stable`)
//! and failed at `unstable` (so `m < unstable`). Failing even at the search's `min` gives
//! `(-inf, min)` on a log scale ([`Obs::less_than`]); stable at its `max` gives `[max, +inf]`
//! ([`Obs::at_least`]).
//!
//! The paired difference of two interval observations is the set of every difference of values
//! they allow (interval arithmetic; Moore 1966, Interval Analysis, chapter 2, whose endpoint
//! formulas hold whatever the ends' closure):
//!
//! ```text
//! a - b = <a.lo - b.hi, a.hi - b.lo>
//! lower end open iff a.lo or b.hi is open; upper end open iff a.hi or b.lo is open
//! ```
//!
//! since `x - y` reaches `a.lo - b.hi` only at `x = a.lo` and `y = b.hi`, both of which must be
//! allowed (likewise for the upper end). So `[0, 1) - [-1, 0) = (0, 2)`: two touching brackets,
//! one stable where the other failed, differ by strictly more than 0.

use std::ops::Sub;

/// A value known to lie in an interval from `lo` to `hi`, each finite end closed or open
/// (module docs), with `lo <= hi`, neither NaN, `lo < +inf`, `hi > -inf`, and `lo < hi`
/// whenever an end is open (so the interval is never empty and never a point at infinity).
/// Built only by the constructors here, which return `None` for anything else. Every
/// constructor but [`Obs::half_open`], [`Obs::less_than`] and [`Obs::with_ends`] gives closed
/// ends.
///
/// # Examples
///
/// A bisection bracket `[0.5, 1)` (stable at 0.5, failing at 1), a rate still stable at the
/// search's cap 2 (right-censored), and their paired difference by interval arithmetic:
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
///
/// let a = Obs::half_open(0.5, 1.0).unwrap();
/// assert_eq!((a.lo(), a.hi(), a.lo_open(), a.hi_open()), (0.5, 1.0, false, true));
/// assert_eq!(a.representative(), Some(0.75));
/// assert!(a.contains(0.5) && !a.contains(1.0) && !a.contains(1.5) && !a.is_exact());
///
/// let r = Obs::at_least(2.0).unwrap();
/// assert_eq!((r.lo(), r.hi()), (2.0, f64::INFINITY));
/// assert_eq!(r.representative(), Some(2.0));
///
/// // [2, inf] - [0.5, 1) = (2 - 1, inf - 0.5]: open below, since the 1 is never reached.
/// let d = r - a;
/// assert_eq!((d.lo(), d.hi(), d.lo_open()), (1.0, f64::INFINITY, true));
/// // [0.5, 1) - [0.25, 0.25] = [0.25, 0.75).
/// let e = a - Obs::exact(0.25).unwrap();
/// assert_eq!(e, Obs::half_open(0.25, 0.75).unwrap());
/// assert_eq!(Obs::paired(&[a, r], &[a]), None);
///
/// // Touching brackets: [1, 2) - [0.5, 1) = (0, 1.5), certainly above 0.
/// let t = Obs::half_open(1.0, 2.0).unwrap() - Obs::half_open(0.5, 1.0).unwrap();
/// assert_eq!(t, Obs::with_ends(0.0, true, 1.5, true).unwrap());
/// assert!(!t.contains(0.0));
///
/// // Closed intervals keep the closed arithmetic: [0.5, 1] - [0.25, 0.25] = [0.25, 0.75].
/// let c = Obs::between(0.5, 1.0).unwrap() - Obs::exact(0.25).unwrap();
/// assert_eq!(c, Obs::between(0.25, 0.75).unwrap());
/// assert_ne!(c, e);
///
/// // Not an interval: reversed ends, NaN, a point at infinity, an empty [1, 1).
/// assert_eq!(Obs::between(2.0, 1.0), None);
/// assert_eq!(Obs::between(f64::NAN, 1.0), None);
/// assert_eq!(Obs::exact(f64::INFINITY), None);
/// assert_eq!(Obs::half_open(1.0, 1.0), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obs {
    lo: f64,
    hi: f64,
    lo_open: bool,
    hi_open: bool,
}

impl Obs {
    /// The interval from `lo` to `hi`, the lower end open when `lo_open` and the upper when
    /// `hi_open`: `[lo, hi]`, `(lo, hi]`, `[lo, hi)` or `(lo, hi)`. `None` when either end is
    /// NaN, `lo > hi`, `lo = +inf`, `hi = -inf`, or `lo == hi` with an open end (empty). An
    /// infinite end is stored closed whatever its flag (module docs).
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::stats::obs::Obs;
    ///
    /// let o = Obs::with_ends(0.0, true, 2.0, false).unwrap(); // (0, 2]
    /// assert!(!o.contains(0.0) && o.contains(1e-300) && o.contains(2.0));
    /// assert_eq!(Obs::with_ends(1.0, false, 1.0, false), Obs::exact(1.0));
    /// assert_eq!(Obs::with_ends(1.0, true, 1.0, false), None);
    /// // (-inf, 3]: the infinite end is stored closed, the same observation as at_most(3).
    /// assert_eq!(Obs::with_ends(f64::NEG_INFINITY, true, 3.0, false), Obs::at_most(3.0));
    /// ```
    pub fn with_ends(lo: f64, lo_open: bool, hi: f64, hi_open: bool) -> Option<Obs> {
        if lo.is_nan() || hi.is_nan() || lo > hi || lo == f64::INFINITY || hi == f64::NEG_INFINITY {
            return None;
        }
        let (lo_open, hi_open) = (lo_open && lo.is_finite(), hi_open && hi.is_finite());
        // lo <= hi here, so lo >= hi is lo == hi: a point, empty if an end is open.
        if lo >= hi && (lo_open || hi_open) {
            return None;
        }
        Some(Obs {
            lo,
            hi,
            lo_open,
            hi_open,
        })
    }

    /// The closed interval `[lo, hi]`; `None` when either end is NaN, `lo > hi`, `lo = +inf`
    /// or `hi = -inf`. `[-inf, +inf]` (nothing known) is allowed.
    pub fn between(lo: f64, hi: f64) -> Option<Obs> {
        Obs::with_ends(lo, false, hi, false)
    }

    /// The half-open interval `[lo, hi)`: at least `lo`, below `hi`. A search's bracket
    /// `[stable, unstable)` (module docs). `None` unless `lo < hi`, neither NaN, `lo < +inf`.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::stats::obs::Obs;
    ///
    /// let b = Obs::half_open(-1.0, 0.0).unwrap(); // log2 of a bracket [0.5, 1)
    /// assert!(b.contains(-1.0) && b.contains(-1e-300) && !b.contains(0.0));
    /// assert_eq!(Obs::half_open(0.0, f64::INFINITY), Obs::at_least(0.0));
    /// assert_eq!(Obs::half_open(0.0, 0.0), None);
    /// ```
    pub fn half_open(lo: f64, hi: f64) -> Option<Obs> {
        Obs::with_ends(lo, false, hi, true)
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

    /// Left-censored below `hi`, open: the value is less than `hi` (`(-inf, hi)`), as a
    /// search failing at its `min` leaves the maximum stable rate (module docs). `None` unless
    /// `hi` is finite.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::stats::obs::Obs;
    ///
    /// let l = Obs::less_than(-3.0).unwrap();
    /// assert_eq!((l.lo(), l.hi(), l.hi_open()), (f64::NEG_INFINITY, -3.0, true));
    /// assert!(l.contains(-3.5) && !l.contains(-3.0));
    /// assert_ne!(l, Obs::at_most(-3.0).unwrap());
    /// ```
    pub fn less_than(hi: f64) -> Option<Obs> {
        if hi.is_finite() {
            Obs::with_ends(f64::NEG_INFINITY, false, hi, true)
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

    /// Whether the lower end is open (the value is `> lo`, not `>= lo`); false when `lo` is
    /// infinite.
    pub fn lo_open(&self) -> bool {
        self.lo_open
    }

    /// Whether the upper end is open (the value is `< hi`, not `<= hi`); false when `hi` is
    /// infinite.
    pub fn hi_open(&self) -> bool {
        self.hi_open
    }

    /// Whether the value is known exactly (`lo == hi`, both ends then closed).
    pub fn is_exact(&self) -> bool {
        self.lo.total_cmp(&self.hi).is_eq()
    }

    /// Whether `x` lies in the interval: `lo <= x` (`lo < x` when the lower end is open) and
    /// `x <= hi` (`x < hi` when the upper end is open).
    pub fn contains(&self, x: f64) -> bool {
        let above_lo = if self.lo_open {
            self.lo < x
        } else {
            self.lo <= x
        };
        let below_hi = if self.hi_open {
            x < self.hi
        } else {
            x <= self.hi
        };
        above_lo && below_hi
    }

    /// Whether the two intervals share a value: the larger lower end `l` below the smaller
    /// upper end `h`, or `l == h` with both ends closed. Touching half-open brackets
    /// `[0.5, 1)` and `[1, 2)` share none.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::stats::obs::Obs;
    ///
    /// let (a, b) = (Obs::half_open(0.5, 1.0).unwrap(), Obs::half_open(1.0, 2.0).unwrap());
    /// assert!(!a.intersects(&b) && !b.intersects(&a));
    /// let (c, d) = (Obs::between(0.5, 1.0).unwrap(), Obs::between(1.0, 2.0).unwrap());
    /// assert!(c.intersects(&d) && a.intersects(&Obs::half_open(0.75, 1.5).unwrap()));
    /// ```
    pub fn intersects(&self, other: &Obs) -> bool {
        // The intersection's lower end is the larger lo, open if either lo at that value is;
        // likewise its upper end.
        let end = |x: f64, xo: bool, y: f64, yo: bool, larger: bool| match x.partial_cmp(&y) {
            Some(std::cmp::Ordering::Greater) if larger => (x, xo),
            Some(std::cmp::Ordering::Less) if !larger => (x, xo),
            Some(std::cmp::Ordering::Equal) => (x, xo || yo),
            _ => (y, yo),
        };
        let (l, lo) = end(self.lo, self.lo_open, other.lo, other.lo_open, true);
        let (h, ho) = end(self.hi, self.hi_open, other.hi, other.hi_open, false);
        // l <= h after l < h fails is l == h.
        l < h || (l <= h && !lo && !ho)
    }

    /// The interval moved by `d`, each end's closure kept: `<lo + d, hi + d>`; `None` unless
    /// `d` is finite and the moved ends still make an interval (an end may overflow to
    /// infinity).
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::stats::obs::Obs;
    ///
    /// let b = Obs::half_open(-1.0, 0.0).unwrap();
    /// assert_eq!(b.shift(1.5), Obs::half_open(0.5, 1.5));
    /// assert_eq!(Obs::less_than(1.0).unwrap().shift(-1.0), Obs::less_than(0.0));
    /// assert_eq!(b.shift(f64::NAN), None);
    /// ```
    pub fn shift(&self, d: f64) -> Option<Obs> {
        if !d.is_finite() {
            return None;
        }
        Obs::with_ends(self.lo + d, self.lo_open, self.hi + d, self.hi_open)
    }

    /// The value that stands for the observation in a point estimate: the midpoint
    /// `(lo + hi)/2` when both ends are finite (the value itself when exact), the finite end
    /// when one end is infinite, `None` when both are (nothing is known). The closure of the
    /// ends does not change it.
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

/// The difference of two interval observations, `<a.lo - b.hi, a.hi - b.lo>`: every value
/// `x - y` with `x` in `a` and `y` in `b`, and no other. The lower end is open iff `a.lo` or
/// `b.hi` is, the upper end iff `a.hi` or `b.lo` is (module docs); with closed operands it is
/// Moore's `[a.lo - b.hi, a.hi - b.lo]`. An end is infinite when either operand's matching end
/// is, never NaN (`a.lo` and `-b.hi` are each `< +inf`). Should rounding make the two ends
/// equal while one is open (operands of very different magnitudes), the result is that closed
/// point rather than an empty interval.
impl Sub for Obs {
    type Output = Obs;
    fn sub(self, b: Obs) -> Obs {
        let (lo, hi) = (self.lo - b.hi, self.hi - b.lo);
        Obs::with_ends(lo, self.lo_open || b.hi_open, hi, self.hi_open || b.lo_open)
            .or_else(|| Obs::between(lo, hi))
            .expect("the difference of two intervals is an interval")
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

    #[test]
    fn open_ends_follow_from_the_operands() {
        let h = |lo, hi| Obs::half_open(lo, hi).unwrap();
        let open = |lo, lo_open, hi, hi_open| Obs::with_ends(lo, lo_open, hi, hi_open).unwrap();
        // Touching brackets, warmup [1, 2) and none [0.5, 1) (log2 [0, 1) and [-1, 0)): the
        // difference is (0, 2), open at 0 because no-warmup failed where warmup was stable.
        let d = h(0.0, 1.0) - h(-1.0, 0.0);
        assert_eq!(d, open(0.0, true, 2.0, true));
        assert!(!d.contains(0.0) && d.contains(1e-300) && !d.contains(2.0));
        // Overlapping brackets: [0, 1) - [-0.5, 0.5) = (-0.5, 1.5), which holds 0.
        let o = h(0.0, 1.0) - h(-0.5, 0.5);
        assert_eq!(o, open(-0.5, true, 1.5, true));
        assert!(o.contains(0.0));
        // Closed minus half-open: [0, 1] - [-1, 0) = (0, 2], the upper end closed (0 - -1).
        let c = Obs::between(0.0, 1.0).unwrap() - h(-1.0, 0.0);
        assert_eq!(c, open(0.0, true, 2.0, false));
        // Censored below, (-inf, -3), minus a bracket [-1, 0): (-inf, -3 - -1) = (-inf, -2).
        let l = Obs::less_than(-3.0).unwrap() - h(-1.0, 0.0);
        assert_eq!(l, Obs::less_than(-2.0).unwrap());
        // A bracket minus censored below: (0 - -3, inf] = (3, inf], open at 3.
        let r = h(0.0, 1.0) - Obs::less_than(-3.0).unwrap();
        assert_eq!(
            (r.lo(), r.lo_open(), r.hi(), r.hi_open()),
            (3.0, true, INF, false)
        );
        // Every difference of members is a member, and the open ends are not (a grid over the
        // members of [-1, 2) and (0.5, 1]).
        let (a, b) = (h(-1.0, 2.0), open(0.5, true, 1.0, false));
        let d = a - b;
        assert_eq!(d, open(-2.0, false, 1.5, true));
        for i in 0..6 {
            for j in 1..=4 {
                let (x, y) = (-1.0 + 0.5 * i as f64, 0.5 + 0.125 * j as f64);
                assert!(
                    a.contains(x) && b.contains(y) && d.contains(x - y),
                    "{x} - {y}"
                );
            }
        }
        assert!(!a.contains(2.0) && !b.contains(0.5));
        assert!(d.contains(-2.0) && !d.contains(1.5));
    }

    #[test]
    fn closed_intervals_are_unchanged() {
        // Every existing constructor gives closed ends, and their differences stay closed.
        let all = [
            Obs::between(0.5, 1.0).unwrap(),
            Obs::exact(0.25).unwrap(),
            Obs::at_least(2.0).unwrap(),
            Obs::at_most(-1.0).unwrap(),
            Obs::between(-INF, INF).unwrap(),
        ];
        for a in all {
            assert!(!a.lo_open() && !a.hi_open());
            assert!(a.contains(a.lo()) && a.contains(a.hi()));
            for b in all {
                let d = a - b;
                assert!(!d.lo_open() && !d.hi_open());
                assert_eq!(d, Obs::between(a.lo() - b.hi(), a.hi() - b.lo()).unwrap());
            }
        }
        // Closure makes a difference to equality, not to the ends.
        let (c, h) = (
            Obs::between(0.0, 1.0).unwrap(),
            Obs::half_open(0.0, 1.0).unwrap(),
        );
        assert_ne!(c, h);
        assert_eq!(
            (c.lo(), c.hi(), c.representative()),
            (h.lo(), h.hi(), h.representative())
        );
    }

    #[test]
    fn open_points_and_rounding() {
        assert!(Obs::half_open(1.0, 1.0).is_none());
        assert!(Obs::with_ends(1.0, false, 1.0, true).is_none());
        assert!(Obs::half_open(f64::NAN, 1.0).is_none() && Obs::less_than(INF).is_none());
        // 1e20 - [0, 1) rounds both ends to 1e20: the closed point, never an empty interval.
        let d = Obs::exact(1e20).unwrap() - Obs::half_open(0.0, 1.0).unwrap();
        assert!(d.is_exact() && d.lo() == 1e20 && !d.hi_open());
        // Shifts keep closure; intersections respect it.
        let s = Obs::with_ends(0.0, true, 1.0, false)
            .unwrap()
            .shift(2.0)
            .unwrap();
        assert_eq!(s, Obs::with_ends(2.0, true, 3.0, false).unwrap());
        let (a, b) = (
            Obs::half_open(0.0, 1.0).unwrap(),
            Obs::between(1.0, 2.0).unwrap(),
        );
        assert!(!a.intersects(&b) && b.intersects(&Obs::exact(1.0).unwrap()));
        assert!(a.intersects(&Obs::between(-INF, INF).unwrap()));
    }
}
