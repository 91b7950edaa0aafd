//! Exact coefficients: a rational times rational powers of primes, of symbols, and of
//! primitive polynomials (see [`Poly::content`]). Equal bases always merge, integer powers of
//! primes fold into the rational, so every coefficient prints in one simplified form, e.g.
//! `q0^(-1/2) * (1 + g)^(-3/2)` or, with g = q0 = 1 substituted, `2^(-3/2)`.

use super::poly::{NSYM, Poly, Sym, rat_text};
use num_bigint::{BigInt, BigUint};
use num_rational::{BigRational, Ratio};
use num_traits::{One, Signed, ToPrimitive, Zero};
use std::collections::BTreeMap;

/// A rational exponent.
///
/// # Examples
///
/// ```rust
/// use normscope_core::symbolic::expr::Exp;
/// use normscope_core::symbolic::{Expr, Poly, Sym};
///
/// // Reduced on construction: 2/4 is 1/2.
/// assert_eq!(Exp::new(2, 4), Exp::new(1, 2));
/// let q0 = Poly::symbol(Sym::Q0);
/// assert_eq!(Expr::pow_poly(&q0, Exp::new(-1, 2)).text(), "q0^(-1/2)");
/// assert_eq!(Expr::pow_poly(&q0, Exp::from(3)).text(), "q0^3");
/// ```
pub type Exp = Ratio<i64>;

/// `coeff * prod p^e * prod s^e * prod P^e`.
///
/// # Examples
///
/// `2^(-1/2) * 2^(-1/2) = 1/2` exactly, `4^(1/2) = 2`, and `(1 + g)^(-3/2)` at `g = 3` is
/// `4^(-3/2) = 1/8`:
///
/// ```rust
/// use num_rational::BigRational;
/// use normscope_core::symbolic::expr::Exp;
/// use normscope_core::symbolic::poly::NSYM;
/// use normscope_core::symbolic::{Expr, Poly, Sym};
///
/// let two = Poly::constant(BigRational::from_integer(2.into()));
/// let r = Expr::pow_poly(&two, Exp::new(-1, 2));
/// assert_eq!(r.text(), "2^(-1/2)");
/// assert_eq!(r.latex(), "\\frac{1}{\\sqrt{2}}");
/// assert_eq!(r.mul(&r), Expr::rational(BigRational::new(1.into(), 2.into())));
/// let four = Poly::constant(BigRational::from_integer(4.into()));
/// assert_eq!(Expr::pow_poly(&four, Exp::new(1, 2)).text(), "2");
///
/// let one_g = Poly::one().add(&Poly::symbol(Sym::G));
/// let e = Expr::pow_poly(&one_g, Exp::new(-3, 2));
/// assert_eq!(e.text(), "(1 + g)^(-3/2)");
/// assert_eq!(e.symbols(), [Sym::G]);
/// let mut vals = [1.0; NSYM];
/// vals[Sym::G.index()] = 3.0;
/// // Evaluated as a sum of logarithms: 0.125 to within rounding (0.12500000000000003).
/// assert!((e.eval(&vals) - 0.125).abs() < 1e-15);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    coeff: BigRational,
    primes: BTreeMap<BigUint, Exp>,
    syms: [Exp; NSYM],
    polys: BTreeMap<Poly, Exp>,
}

/// Prime factors of `n` by trial division up to 10^6; a cofactor that is not fully factored is
/// kept as one base (still canonical, just not split further).
fn factor(n: &BigUint) -> Vec<(BigUint, i64)> {
    let mut out = Vec::new();
    let Some(mut m) = n.to_u64() else {
        return vec![(n.clone(), 1)];
    };
    let mut p = 2u64;
    while p <= 1_000_000 && p * p <= m {
        let mut k = 0;
        while m.is_multiple_of(p) {
            m /= p;
            k += 1;
        }
        if k > 0 {
            out.push((BigUint::from(p), k));
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if m > 1 {
        out.push((BigUint::from(m), 1));
    }
    out
}

/// Signed power of prime p in the rational r (positive in the numerator).
fn multiplicity(r: &BigRational, p: &BigUint) -> i64 {
    let count = |n: &BigInt| {
        let mut n = n.magnitude().clone();
        let mut k = 0;
        while !n.is_zero() && (&n % p).is_zero() {
            n /= p;
            k += 1;
        }
        k
    };
    count(r.numer()) - count(r.denom())
}

impl Expr {
    /// The constant 1.
    pub fn one() -> Self {
        Expr::rational(BigRational::one())
    }

    /// A rational constant.
    pub fn rational(r: BigRational) -> Self {
        Expr {
            coeff: r,
            primes: BTreeMap::new(),
            syms: [Exp::zero(); NSYM],
            polys: BTreeMap::new(),
        }
    }

    /// Whether the value is exactly zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.coeff.is_zero()
    }

    /// A symbol.
    pub fn symbol(s: Sym) -> Self {
        Expr::pow_poly(&Poly::symbol(s), Exp::one())
    }

    /// `p^e`, simplified. `0^e` is 0 for e > 0; a zero base with e <= 0 is a caller error and
    /// gives 0 too (callers never build it).
    pub fn pow_poly(p: &Poly, e: Exp) -> Self {
        if p.is_zero() {
            return Expr::rational(BigRational::zero());
        }
        let (c, mono, prim) = p.content();
        let mut out = Expr::rational_pow(&c, e);
        for s in Sym::ALL {
            out.syms[s.index()] = Exp::from(mono[s.index()]) * e;
        }
        if prim.as_constant().is_none() && !e.is_zero() {
            out.polys.insert(prim, e);
        }
        out
    }

    /// `c^e` for a positive rational c: integer powers stay rational, fractional powers split
    /// into prime powers.
    fn rational_pow(c: &BigRational, e: Exp) -> Self {
        if e.is_integer() {
            return Expr::rational(c.pow(e.to_integer() as i32));
        }
        let mut out = Expr::one();
        let num = c.numer().magnitude().clone();
        let den = c.denom().magnitude().clone();
        for (p, k) in factor(&num) {
            out.mul_prime(p, Exp::from(k) * e);
        }
        for (p, k) in factor(&den) {
            out.mul_prime(p, -Exp::from(k) * e);
        }
        out
    }

    /// Multiplies by `p^e`. Canonical form: a prime appears either only in the rational (an
    /// integer total power) or only in `primes` (a fractional total power, carrying every power
    /// of p, the rational's included).
    fn mul_prime(&mut self, p: BigUint, e: Exp) {
        let mut total = self.primes.remove(&p).unwrap_or_else(Exp::zero) + e;
        let base = BigRational::from(BigInt::from(p.clone()));
        if !total.is_integer() {
            // Absorb p's multiplicity in the rational into the exponent.
            let k = multiplicity(&self.coeff, &p);
            if k != 0 {
                self.coeff /= base.pow(k as i32);
                total += Exp::from(k);
            }
        }
        if total.is_integer() {
            self.coeff *= base.pow(total.to_integer() as i32);
        } else {
            self.primes.insert(p, total);
        }
    }

    /// Product.
    pub fn mul(&self, o: &Expr) -> Expr {
        if self.is_zero() || o.is_zero() {
            return Expr::rational(BigRational::zero());
        }
        let mut out = self.clone();
        out.coeff *= &o.coeff;
        for (p, e) in &o.primes {
            out.mul_prime(p.clone(), *e);
        }
        // The product of the rationals may carry powers of primes already in `primes`.
        let keys: Vec<BigUint> = out.primes.keys().cloned().collect();
        for p in keys {
            out.mul_prime(p, Exp::zero());
        }
        for i in 0..NSYM {
            out.syms[i] += o.syms[i];
        }
        for (p, e) in &o.polys {
            let t = out.polys.remove(p).unwrap_or_else(Exp::zero) + e;
            if !t.is_zero() {
                out.polys.insert(p.clone(), t);
            }
        }
        out
    }

    /// Value at `vals` (indexed by [`Sym::index`]), accumulated in log space: `inf` or 0 when
    /// it is beyond f64's range (see [`Self::ln_eval`] for its exact logarithm).
    pub fn eval(&self, vals: &[f64; NSYM]) -> f64 {
        let (sign, ln) = self.ln_eval(vals);
        sign * ln.exp()
    }

    /// `(sign, ln |value|)` at `vals`: the product of the rational, the symbols' powers and the
    /// polynomials' powers summed as logs, so that values beyond f64 (alpha = 1e300, or
    /// alpha = 2 at depth 10^4) keep an exact logarithm. A polynomial whose plain value is a
    /// normal number enters as `ln(value)`, else through [`Poly::ln_eval`].
    pub fn ln_eval(&self, vals: &[f64; NSYM]) -> (f64, f64) {
        if self.is_zero() {
            return (1.0, f64::NEG_INFINITY);
        }
        let r = |e: &Exp| *e.numer() as f64 / *e.denom() as f64;
        // A negative base to an odd integer power flips the sign; to a fractional power it
        // has no real value.
        let mut sign = if self.coeff.is_negative() { -1.0 } else { 1.0 };
        let mut flip = |base_sign: f64, e: &Exp| -> f64 {
            if base_sign >= 0.0 {
                0.0
            } else if !e.is_integer() {
                f64::NAN
            } else {
                if e.numer() % 2 != 0 {
                    sign = -sign;
                }
                0.0
            }
        };
        let mut acc = super::poly::ln_abs_rat(&self.coeff);
        for (p, e) in &self.primes {
            acc += r(e) * super::poly::ln_biguint(p);
        }
        for s in Sym::ALL {
            let e = &self.syms[s.index()];
            if !e.is_zero() {
                let v = vals[s.index()];
                acc += r(e) * v.abs().ln() + flip(v, e);
            }
        }
        for (p, e) in &self.polys {
            let plain = p.eval(vals);
            let (ps, lp) = if plain.is_normal() {
                (plain.signum(), plain.abs().ln())
            } else {
                p.ln_eval(vals)
            };
            acc += r(e) * lp + flip(ps, e);
        }
        (sign, acc)
    }

    /// Why this coefficient has no value at `vals`, or None: a zero factor to a negative power
    /// (`0^(-k)`, alone or against another zero factor, e.g. Post-LN with `alpha = 0` and
    /// `g = 0`, where the norm's input is 0), or a negative base to a fractional power.
    pub(crate) fn undefined_at(&self, vals: &[f64; NSYM]) -> Option<String> {
        let (_, ln) = self.ln_eval(vals);
        // NaN: 0 * inf; +inf: a division by zero (an infinite coefficient).
        (ln.is_nan() || ln == f64::INFINITY).then(|| {
            let names: Vec<String> = Sym::ALL
                .into_iter()
                .filter(|s| !self.syms[s.index()].is_zero())
                .map(|s| format!("{} = {}", s.name(), vals[s.index()]))
                .collect();
            format!(
                "{} is undefined at {} (a zero to a negative power, e.g. a norm of a zero stream, or a negative base to a fractional power)",
                self.text(),
                if names.is_empty() {
                    "these values".to_string()
                } else {
                    names.join(", ")
                }
            )
        })
    }

    /// Symbols that appear.
    pub fn symbols(&self) -> Vec<Sym> {
        let mut v: Vec<Sym> = Sym::ALL
            .into_iter()
            .filter(|s| !self.syms[s.index()].is_zero())
            .collect();
        for p in self.polys.keys() {
            for s in Sym::ALL {
                if p.uses(s) && !v.contains(&s) {
                    v.push(s);
                }
            }
        }
        v.sort();
        v
    }

    /// Plain text, e.g. `q0^(-1/2) * (1 + g)^(-3/2)`.
    pub fn text(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let exp = |e: &Exp| {
            if e.is_one() {
                String::new()
            } else if e.is_integer() && e.is_positive() {
                format!("^{}", e.numer())
            } else {
                format!("^({})", e)
            }
        };
        let mut f: Vec<String> = Vec::new();
        for (p, e) in &self.primes {
            f.push(format!("{p}{}", exp(e)));
        }
        for s in Sym::ALL {
            let e = &self.syms[s.index()];
            if !e.is_zero() {
                f.push(format!("{}{}", s.name(), exp(e)));
            }
        }
        for (p, e) in &self.polys {
            f.push(format!("({}){}", p.text(), exp(e)));
        }
        let c = rat_text(&self.coeff, false);
        if f.is_empty() {
            c
        } else if self.coeff.is_one() {
            f.join(" * ")
        } else {
            format!("{c} * {}", f.join(" * "))
        }
    }

    /// LaTeX: positive powers over negative ones in a `\frac`, `x^{1/2}` as `\sqrt{x}`, no
    /// factor 1 and no exponent 1; a sum is parenthesized when raised to a power or next to
    /// another factor, and not when it is alone over or under a fraction bar
    /// (`\frac{1}{1 + g}`). A coefficient that is a bare sum keeps its parentheses, so that it
    /// can stand before a source (`\left(1 + g\right) \, x_0`).
    pub fn latex(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        // (base, is a sum, |exponent|) per factor.
        let mut num: Vec<(String, bool, Exp)> = Vec::new();
        let mut den: Vec<(String, bool, Exp)> = Vec::new();
        let mut put = |base: String, multi: bool, e: &Exp| {
            if e.is_positive() {
                num.push((base, multi, e.abs()))
            } else {
                den.push((base, multi, e.abs()))
            }
        };
        for (p, e) in &self.primes {
            put(p.to_string(), false, e);
        }
        for s in Sym::ALL {
            let e = &self.syms[s.index()];
            if !e.is_zero() {
                put(s.latex().to_string(), false, e);
            }
        }
        for (p, e) in &self.polys {
            put(p.latex(), true, e);
        }
        let c = self.coeff.abs();
        let sign = if self.coeff.is_negative() { "-" } else { "" };
        let fraction = !c.denom().is_one() || !den.is_empty();
        // One side of the fraction (or the whole product): `lead` is its integer factor.
        let side = |lead: &BigInt, factors: &[(String, bool, Exp)], in_frac: bool| {
            let alone = factors.len() == 1 && lead.is_one() && in_frac;
            let mut parts: Vec<String> = Vec::new();
            if !lead.is_one() || factors.is_empty() {
                parts.push(lead.to_string());
            }
            for (base, multi, a) in factors {
                parts.push(if *a == Exp::new(1, 2) {
                    format!("\\sqrt{{{base}}}")
                } else {
                    let b = if *multi && !(alone && a.is_one()) {
                        format!("\\left({base}\\right)")
                    } else {
                        base.clone()
                    };
                    if a.is_one() {
                        b
                    } else if a.is_integer() {
                        format!("{b}^{{{}}}", a.numer())
                    } else {
                        format!("{b}^{{{}/{}}}", a.numer(), a.denom())
                    }
                });
            }
            // An integer before a root or a symbol reads without a thin space: `2 \sqrt{2}`.
            let mut out = String::new();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    let numeral = i == 1 && parts[0].chars().all(|ch| ch.is_ascii_digit());
                    out.push_str(if numeral { " " } else { " \\, " });
                }
                out.push_str(p);
            }
            out
        };
        let n = side(c.numer(), &num, fraction);
        if fraction {
            let d = side(c.denom(), &den, true);
            format!("{sign}\\frac{{{n}}}{{{d}}}")
        } else {
            format!("{sign}{n}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surds_merge_and_fold() {
        // 2^(-1/2) * 2^(-1/2) = 1/2 exactly; 4^(1/2) = 2.
        let h = Exp::new(-1, 2);
        let two = Poly::constant(BigRational::from_integer(2.into()));
        let a = Expr::pow_poly(&two, h);
        assert_eq!(
            a.mul(&a),
            Expr::rational(BigRational::new(1.into(), 2.into()))
        );
        // Order-independent: (2^(-1/2))^3 built by products equals 2^(-3/2) built directly.
        let direct = Expr::pow_poly(&two, Exp::new(-3, 2));
        assert_eq!(a.mul(&a).mul(&a), direct);
        assert_eq!(direct.text(), "2^(-3/2)");
        let half = Expr::rational(BigRational::new(1.into(), 2.into()));
        assert_eq!(half.mul(&a), direct);
        let four = Poly::constant(BigRational::from_integer(4.into()));
        assert_eq!(Expr::pow_poly(&four, Exp::new(1, 2)).text(), "2");
        assert_eq!(a.text(), "2^(-1/2)");
        assert_eq!(a.latex(), "\\frac{1}{\\sqrt{2}}");
    }

    #[test]
    fn polynomial_bases_merge() {
        let one_g = Poly::one().add(&Poly::symbol(Sym::G));
        let a = Expr::pow_poly(&one_g, Exp::new(-1, 2));
        let b = a.mul(&a).mul(&a);
        assert_eq!(b.text(), "(1 + g)^(-3/2)");
        assert_eq!(b.latex(), "\\frac{1}{\\left(1 + g\\right)^{3/2}}");
        let mut vals = [1.0; NSYM];
        vals[Sym::G.index()] = 3.0;
        assert!((b.eval(&vals) - 0.125).abs() < normscope_numeric::tolerance::ROUNDING);
    }

    #[test]
    fn latex_has_no_redundant_ones_or_parentheses() {
        let one_g = Poly::one().add(&Poly::symbol(Sym::G));
        let two = Poly::constant(BigRational::from_integer(2.into()));
        let alpha = Poly::symbol(Sym::Alpha);
        let q0 = Poly::symbol(Sym::Q0);
        // A lone sum under the bar: no parentheses.
        assert_eq!(
            Expr::pow_poly(&one_g, Exp::from(-1)).latex(),
            "\\frac{1}{1 + g}"
        );
        // Next to another factor: parentheses.
        let e = Expr::pow_poly(&one_g, Exp::from(-1)).mul(&Expr::pow_poly(&q0, Exp::new(-1, 2)));
        assert_eq!(e.latex(), "\\frac{1}{\\sqrt{q_0} \\, \\left(1 + g\\right)}");
        assert_eq!(e.latex().matches("\\left(").count(), 1);
        // A bare sum as a whole coefficient keeps them (it multiplies a source).
        assert_eq!(
            Expr::pow_poly(&one_g, Exp::one()).latex(),
            "\\left(1 + g\\right)"
        );
        // alpha^1 is alpha, alpha^0 vanishes, sqrt(2)^k folds.
        assert_eq!(Expr::pow_poly(&alpha, Exp::one()).latex(), "\\alpha");
        assert_eq!(Expr::pow_poly(&alpha, Exp::zero()).latex(), "1");
        let s = |k: i64| Expr::pow_poly(&two, Exp::new(-k, 2)).latex();
        assert_eq!(s(1), "\\frac{1}{\\sqrt{2}}");
        assert_eq!(s(2), "\\frac{1}{2}");
        assert_eq!(s(3), "\\frac{1}{2^{3/2}}");
        assert_eq!(s(4), "\\frac{1}{4}");
        let a3 = Expr::pow_poly(&alpha, Exp::from(3)).mul(&Expr::pow_poly(&two, Exp::new(-3, 2)));
        assert_eq!(a3.latex(), "\\frac{\\alpha^{3}}{2^{3/2}}");
        for l in [s(1), s(4), a3.latex()] {
            assert!(
                !l.contains("^{1}") && !l.contains("^{0}") && !l.contains("1 \\,"),
                "{l}"
            );
        }
    }
}
