//! Log-space helpers: deep products are sums of logs, so depth 10^6 stays finite.

/// `ln(e^a + e^b)`, exact for infinities.
pub fn ln_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// `ln x` for `x >= 0` (`-inf` at 0).
pub fn ln0(x: f64) -> f64 {
    if x <= 0.0 { f64::NEG_INFINITY } else { x.ln() }
}

/// Running sum in double-double (Knuth's two-sum), so that differences of prefix sums
/// `P_l - P_j` of 10^6 terms keep full relative precision. `-inf` terms are counted, not added.
#[derive(Clone, Debug, Default)]
pub struct PrefixSum {
    hi: Vec<f64>,
    lo: Vec<f64>,
    zeros: Vec<u32>,
}

impl PrefixSum {
    /// Starts with `P_0 = 0`.
    pub fn new(capacity: usize) -> Self {
        let mut p = PrefixSum {
            hi: Vec::with_capacity(capacity + 1),
            lo: Vec::with_capacity(capacity + 1),
            zeros: Vec::with_capacity(capacity + 1),
        };
        p.hi.push(0.0);
        p.lo.push(0.0);
        p.zeros.push(0);
        p
    }

    /// Appends term `t` (a log factor, possibly `-inf`).
    pub fn push(&mut self, t: f64) {
        let (h, l, z) = (
            *self.hi.last().unwrap(),
            *self.lo.last().unwrap(),
            *self.zeros.last().unwrap(),
        );
        if t == f64::NEG_INFINITY {
            self.hi.push(h);
            self.lo.push(l);
            self.zeros.push(z + 1);
            return;
        }
        let s = h + t;
        let bp = s - h;
        let err = (h - (s - bp)) + (t - bp);
        let lo = l + err;
        let hi = s + lo;
        let lo = lo - (hi - s);
        self.hi.push(hi);
        self.lo.push(lo);
        self.zeros.push(z);
    }

    /// `P_l - P_j` (`-inf` if a `-inf` term lies in `j+1..=l`).
    pub fn diff(&self, l: usize, j: usize) -> f64 {
        if self.zeros[l] != self.zeros[j] {
            return f64::NEG_INFINITY;
        }
        (self.hi[l] - self.hi[j]) + (self.lo[l] - self.lo[j])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_differences_are_precise() {
        // 10^6 terms of -ln(2)/2: P_l - P_j must be -(l-j) ln 2 / 2 to near machine precision.
        let t = -std::f64::consts::LN_2 / 2.0;
        let mut p = PrefixSum::new(1_000_000);
        for _ in 0..1_000_000 {
            p.push(t);
        }
        let d = p.diff(1_000_000, 999_990);
        assert!(
            (d - 10.0 * t).abs() < crate::tolerance::ROUNDING_CHAIN,
            "{d}"
        );
    }

    #[test]
    fn zeros_propagate() {
        let mut p = PrefixSum::new(3);
        p.push(1.0);
        p.push(f64::NEG_INFINITY);
        p.push(2.0);
        assert!(p.diff(3, 0).is_infinite() && p.diff(3, 0) < 0.0);
        assert!((p.diff(3, 2) - 2.0).abs() < crate::tolerance::ROUNDING);
        assert!((ln_add(0.0, 0.0) - std::f64::consts::LN_2).abs() < crate::tolerance::ROUNDING);
    }
}

/// A non-negative magnitude carried both as a plain f64 and as its log: arithmetic is done in
/// both, and the plain value is used while it is a normal float, so ordinary depths print the
/// exactly rounded value (3, not 2.9999999999999996) while depth 10^6 cannot overflow or
/// underflow (the log takes over).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mag {
    lin: f64,
    ln: f64,
}

impl Mag {
    /// The value x >= 0.
    pub fn new(x: f64) -> Self {
        Mag { lin: x, ln: ln0(x) }
    }

    /// Zero.
    pub fn zero() -> Self {
        Mag::new(0.0)
    }

    /// One.
    pub fn one() -> Self {
        Mag::new(1.0)
    }

    fn plain(self) -> bool {
        self.lin.is_normal() || (self.lin == 0.0 && self.ln == f64::NEG_INFINITY)
    }

    /// The value (`inf` only if it is beyond f64 even as a log's exponential).
    pub fn value(self) -> f64 {
        if self.plain() {
            self.lin
        } else {
            self.ln.exp()
        }
    }

    /// The natural log.
    pub fn ln(self) -> f64 {
        if self.plain() { ln0(self.lin) } else { self.ln }
    }

    /// `self / o` as a plain number (for ratios that are O(1) even when both are huge).
    pub fn ratio(self, o: Mag) -> f64 {
        if self.plain() && o.plain() {
            self.lin / o.lin
        } else {
            (self.ln() - o.ln()).exp()
        }
    }
}

impl std::ops::Mul for Mag {
    type Output = Mag;
    /// Product.
    fn mul(self, o: Mag) -> Mag {
        Mag {
            lin: self.lin * o.lin,
            ln: self.ln + o.ln,
        }
    }
}

impl std::ops::Add for Mag {
    type Output = Mag;
    /// Sum (the log part through [`ln_add`]).
    fn add(self, o: Mag) -> Mag {
        Mag {
            lin: self.lin + o.lin,
            ln: ln_add(self.ln, o.ln),
        }
    }
}

impl std::ops::Div for Mag {
    type Output = Mag;
    /// Quotient.
    fn div(self, o: Mag) -> Mag {
        Mag {
            lin: self.lin / o.lin,
            ln: self.ln - o.ln,
        }
    }
}

#[cfg(test)]
mod mag_tests {
    use super::*;

    #[test]
    fn plain_values_are_exact_and_huge_ones_survive() {
        // Exactly 3, bit for bit (log space alone gives 2.9999999999999996).
        assert_eq!(
            (Mag::new(2.0) + Mag::one()).value().to_bits(),
            3.0f64.to_bits()
        );
        let mut m = Mag::one();
        for _ in 0..2000 {
            m = m * Mag::new(2.0);
        }
        assert!((m.ln() - 2000.0 * std::f64::consts::LN_2).abs() < crate::tolerance::LOG_OF_HUGE);
        assert!((m.ratio(m * Mag::new(4.0)) - 0.25).abs() < crate::tolerance::ACCUMULATED);
    }
}
