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
pub(crate) fn ln0(x: f64) -> f64 {
    if x <= 0.0 { f64::NEG_INFINITY } else { x.ln() }
}

/// Running sum in double-double (Knuth's two-sum), so that differences of prefix sums
/// `P_l - P_j` of 10^6 terms keep full relative precision. `-inf` terms are counted, not added.
///
/// # Examples
///
/// ```rust
/// use normscope_core::theory::logsum::PrefixSum;
/// let mut p = PrefixSum::new(3);
/// for t in [1e16, 1.0, -1e16] {
///     p.push(t);
/// }
/// // P_3 - P_0 = 1 exactly, where plain f64 sums lose the 1 to rounding.
/// assert_eq!(p.diff(3, 0), 1.0);
/// assert_eq!((1e16 + 1.0) - 1e16, 0.0);
/// p.push(f64::NEG_INFINITY); // a zero factor
/// assert_eq!((p.diff(4, 3), p.diff(3, 1)), (f64::NEG_INFINITY, 1.0 - 1e16));
/// ```
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

/// Why `e^ln` cannot be written as an f64 though `ln` is exact: above f64's largest number or
/// below its smallest positive normal one; None for a number in range, a true zero
/// (`ln = -inf`) or a NaN `ln` (which the row's own check reports as undefined).
pub(crate) fn ln_beyond_f64(ln: f64) -> Option<String> {
    if !ln.is_finite() {
        return None;
    }
    let v = ln.exp();
    let log10 = ln / std::f64::consts::LN_10;
    if v < f64::MIN_POSITIVE {
        Some(format!(
            "underflow: e^{ln:.1} = 10^{log10:.1} is below f64's smallest number (its log is exact)"
        ))
    } else if v.is_infinite() {
        Some(format!(
            "overflow: e^{ln:.1} = 10^{log10:.1} is beyond f64's largest number (its log is exact)"
        ))
    } else {
        None
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
            (d - 10.0 * t).abs() < normscope_numeric::tolerance::ROUNDING_CHAIN,
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
        assert!((p.diff(3, 2) - 2.0).abs() < normscope_numeric::tolerance::ROUNDING);
        assert!(
            (ln_add(0.0, 0.0) - std::f64::consts::LN_2).abs()
                < normscope_numeric::tolerance::ROUNDING
        );
    }
}

/// A non-negative magnitude carried both as a plain f64 and in extended range, `mant 2^exp`
/// with `mant` in `[1, 2)` and an integer exponent: arithmetic is done in both, and the plain
/// value is used while every operation that produced it stayed a normal float (or an exact
/// zero), so ordinary depths print the exactly rounded value (3, not 2.9999999999999996) bit
/// for bit as before, while a huge or tiny intermediate (`q0 g^2` at `q0 = 1.7e308`, depth
/// 10^6) keeps full precision: each extended operation rounds once, like a plain one, so a
/// ratio of two magnitudes beyond f64 is as exact as one of two ordinary numbers (a log-space
/// ratio `e^(ln a - ln b)` would lose `|ln a| 2^-53` of it, 1e-13 at `e^709`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mag {
    lin: f64,
    plain: bool,
    mant: f64,
    exp: i64,
}

/// Mantissa bits of an f64.
const MANT_BITS: u32 = 52;
/// Exponent bias of an f64.
const BIAS: i64 = 1023;

/// `x = m 2^e` with `m` in `[1, 2)` for finite nonzero `x >= 0`; `(x, 0)` for 0, inf, NaN.
fn split_exp(x: f64) -> (f64, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    // Subnormals are brought into the normal range first (exactly, by 2^64).
    let (x, shift) = if x.is_normal() {
        (x, 0)
    } else {
        (x * f64::from_bits(((64 + BIAS) as u64) << MANT_BITS), -64)
    };
    let bits = x.to_bits();
    let e = ((bits >> MANT_BITS) & 0x7ff) as i64 - BIAS;
    let m = f64::from_bits((bits & !(0x7ffu64 << MANT_BITS)) | ((BIAS as u64) << MANT_BITS));
    (m, e + shift)
}

/// `2^e` for `e` in f64's normal exponent range `[-1022, 1023]`.
fn pow2(e: i64) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + BIAS) as u64) << MANT_BITS)
}

/// `m 2^e` rounded to f64 (`inf` above its range, a subnormal or 0 below it).
fn ldexp(mut m: f64, e: i64) -> f64 {
    let mut e = e.clamp(-2200, 2200);
    while e > 1023 {
        m *= pow2(1023);
        e -= 1023;
    }
    while e < -1022 {
        m *= pow2(-1022);
        e += 1022;
    }
    m * pow2(e)
}

impl Mag {
    /// The value x >= 0.
    pub fn new(x: f64) -> Self {
        let (mant, exp) = split_exp(x);
        Mag {
            lin: x,
            plain: x.is_normal() || x == 0.0,
            mant,
            exp,
        }
    }

    /// Zero.
    pub fn zero() -> Self {
        Mag::new(0.0)
    }

    /// One.
    pub fn one() -> Self {
        Mag::new(1.0)
    }

    /// The result of an operation: `lin` from the plain operation, `(m, e)` from the extended
    /// one (renormalized); plain only if both operands were and `lin` is normal or an exact 0.
    fn made(lin: f64, plain: bool, m: f64, e: i64) -> Self {
        // Products, quotients and sums of mantissas in [1, 2) land in [0.5, 4): renormalized
        // by an exact halving or doubling, without taking the float apart.
        let (mant, shift) = if (1.0..2.0).contains(&m) {
            (m, 0)
        } else if (2.0..4.0).contains(&m) {
            (m * 0.5, 1)
        } else if (0.5..1.0).contains(&m) {
            (m * 2.0, -1)
        } else {
            split_exp(m)
        };
        Mag {
            lin,
            plain: plain && (lin.is_normal() || (lin == 0.0 && m == 0.0)),
            mant,
            exp: e + shift,
        }
    }

    /// `m 2^exp` with `exp` in f64's range exactly (a power-of-two rescaling, for ratios).
    fn scaled(self, exp: i64) -> f64 {
        ldexp(self.mant, self.exp - exp)
    }

    /// The binary exponent of the value (`floor(log2 x)`; 0 for 0, inf, NaN).
    pub fn exponent(self) -> i64 {
        self.exp
    }

    /// `self / 2^e` rounded to f64: exact where the result is a normal number, so a set of
    /// magnitudes divided by one power of two keeps every ratio bit for bit.
    pub fn over_pow2(self, e: i64) -> f64 {
        if self.plain {
            ldexp(self.lin, -e)
        } else {
            self.scaled(e)
        }
    }

    /// The value (`inf` or a subnormal/0 only if it is beyond f64's normal range).
    pub fn value(self) -> f64 {
        if self.plain { self.lin } else { self.scaled(0) }
    }

    /// The natural log.
    pub fn ln(self) -> f64 {
        if self.plain {
            ln0(self.lin)
        } else {
            ln0(self.mant) + self.exp as f64 * std::f64::consts::LN_2
        }
    }

    /// `self / o` as a plain number (for ratios that are O(1) even when both are huge).
    pub fn ratio(self, o: Mag) -> f64 {
        if self.plain && o.plain {
            self.lin / o.lin
        } else {
            (self / o).value()
        }
    }

    /// `sqrt(self)`, exact to one rounding in extended range too.
    pub fn sqrt(self) -> Mag {
        let (m, e) = if self.exp % 2 == 0 {
            (self.mant, self.exp)
        } else {
            (2.0 * self.mant, self.exp - 1)
        };
        Mag::made(self.lin.sqrt(), self.plain, m.sqrt(), e / 2)
    }
}

impl std::ops::Mul for Mag {
    type Output = Mag;
    /// Product.
    fn mul(self, o: Mag) -> Mag {
        Mag::made(
            self.lin * o.lin,
            self.plain && o.plain,
            self.mant * o.mant,
            self.exp + o.exp,
        )
    }
}

impl std::ops::Add for Mag {
    type Output = Mag;
    /// Sum (the extended part aligned to the larger exponent, one rounding).
    fn add(self, o: Mag) -> Mag {
        let (hi, lo) = if self.mant == 0.0 || (o.mant != 0.0 && o.exp > self.exp) {
            (o, self)
        } else {
            (self, o)
        };
        // A term below 2^-110 of the other is below half its ulp: the sum rounds to it.
        let m = if lo.mant == 0.0 || hi.exp - lo.exp > 110 {
            hi.mant
        } else {
            hi.mant + lo.mant * pow2(lo.exp - hi.exp)
        };
        Mag::made(self.lin + o.lin, self.plain && o.plain, m, hi.exp)
    }
}

impl std::ops::Div for Mag {
    type Output = Mag;
    /// Quotient.
    fn div(self, o: Mag) -> Mag {
        Mag::made(
            self.lin / o.lin,
            self.plain && o.plain,
            self.mant / o.mant,
            self.exp - o.exp,
        )
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
        assert!(
            (m.ln() - 2000.0 * std::f64::consts::LN_2).abs()
                < normscope_numeric::tolerance::LOG_OF_HUGE
        );
        assert!(
            (m.ratio(m * Mag::new(4.0)) - 0.25).abs() < normscope_numeric::tolerance::ACCUMULATED
        );
    }

    #[test]
    fn extended_ratios_are_exactly_rounded() {
        // 3e307 * 7 overflows; its ratio to 7e307 * 3 rounds as the same products scaled by
        // 2^-10 (exact) do in plain f64.
        let (a, b) = (
            Mag::new(3e307) * Mag::new(7.0),
            Mag::new(7e307) * Mag::new(3.0),
        );
        assert!(a.value().is_infinite());
        let k = 2f64.powi(-10);
        assert_eq!(
            a.ratio(b).to_bits(),
            ((3e307 * k * 7.0) / (7e307 * k * 3.0)).to_bits()
        );
        // A subnormal intermediate does not make a later normal value imprecise (plain f64 is
        // 3e-15 off here).
        let tiny = Mag::new(1e-300) * Mag::new(1e-10);
        assert!(tiny.value() < f64::MIN_POSITIVE);
        let back = (tiny * Mag::new(1e10)).value();
        let plain: f64 = 1e-300 * 1e-10 * 1e10;
        assert!((back - 1e-300).abs() < normscope_numeric::tolerance::ROUNDING * 1e-300);
        assert!((plain - 1e-300).abs() > normscope_numeric::tolerance::ROUNDING * 1e-300);
        // Sums across 200 binary orders keep the larger term.
        let s = Mag::new(1e300) * Mag::new(1e300) + Mag::new(1.0);
        assert!(
            (s.ln() - 600.0 * std::f64::consts::LN_10).abs()
                < normscope_numeric::tolerance::LOG_OF_HUGE
        );
        assert_eq!(
            (Mag::new(2.0) * Mag::new(8.0)).sqrt().value().to_bits(),
            4.0f64.to_bits()
        );
        assert_eq!(Mag::new(4.0).over_pow2(2).to_bits(), 1.0f64.to_bits());
    }
}
