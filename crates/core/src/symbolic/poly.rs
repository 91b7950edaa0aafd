//! Polynomials with rational coefficients in the five symbols of the expansion
//! (alpha, beta, g, lambda, q0), in a canonical form (sorted terms, no zero coefficients), so
//! that equal polynomials compare equal and can be the bases of [`super::Expr`] powers.

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use std::collections::BTreeMap;

/// A symbol of the expansion.
///
/// # Examples
///
/// ```rust
/// use normscope_core::symbolic::Sym;
///
/// assert_eq!(Sym::ALL.map(Sym::name), ["alpha", "beta", "g", "lambda", "q0"]);
/// assert_eq!(Sym::Q0.latex(), "q_0");
/// assert_eq!(Sym::Alpha.latex(), "\\alpha");
/// assert_eq!(Sym::G.index(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sym {
    /// Skip scale alpha.
    Alpha,
    /// DeepNet's branch-weight scale beta.
    Beta,
    /// Branch gain g (unscaled, at unit input second moment).
    G,
    /// Branch multiplier lambda.
    Lambda,
    /// Input second moment q0.
    Q0,
}

/// Number of symbols.
pub const NSYM: usize = 5;

impl Sym {
    /// All symbols in display order.
    pub const ALL: [Sym; NSYM] = [Sym::Alpha, Sym::Beta, Sym::G, Sym::Lambda, Sym::Q0];

    /// Plain-text name (also the `--subs` key).
    pub fn name(self) -> &'static str {
        match self {
            Sym::Alpha => "alpha",
            Sym::Beta => "beta",
            Sym::G => "g",
            Sym::Lambda => "lambda",
            Sym::Q0 => "q0",
        }
    }

    /// LaTeX name.
    pub fn latex(self) -> &'static str {
        match self {
            Sym::Alpha => "\\alpha",
            Sym::Beta => "\\beta",
            Sym::G => "g",
            Sym::Lambda => "\\lambda",
            Sym::Q0 => "q_0",
        }
    }

    /// Index into exponent arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Exponents of the five symbols in a monomial.
pub(crate) type Exps = [i64; NSYM];

/// A polynomial `sum_t c_t prod_s s^{e_{t,s}}`.
///
/// # Examples
///
/// `(1 + g)^2 = 1 + 2 g + g^2`, 16 at `g = 3`; `2 + 2 g` has content 2 and primitive part
/// `1 + g`.
///
/// ```rust
/// use num_rational::BigRational;
/// use normscope_core::symbolic::poly::NSYM;
/// use normscope_core::symbolic::{Poly, Sym};
///
/// let g = Poly::symbol(Sym::G);
/// let one_g = Poly::one().add(&g);
/// let sq = one_g.mul(&one_g);
/// assert_eq!(sq.text(), "1 + 2*g + g^2");
/// assert_eq!(sq.latex(), "1 + 2 g + g^{2}");
/// let mut vals = [1.0; NSYM];
/// vals[Sym::G.index()] = 3.0;
/// assert_eq!(sq.eval(&vals), 16.0);
/// assert!(sq.uses(Sym::G) && !sq.uses(Sym::Q0));
///
/// let two = Poly::constant(BigRational::from_integer(2.into()));
/// let (c, mono, prim) = two.mul(&one_g).content();
/// assert_eq!((c, mono, prim), (BigRational::from_integer(2.into()), [0; NSYM], one_g.clone()));
/// // Equal polynomials compare equal, however they were built.
/// assert_eq!(g.add(&Poly::one()), one_g);
/// let minus_one = Poly::constant(BigRational::from_integer((-1).into()));
/// assert_eq!(one_g.add(&g.mul(&minus_one)), Poly::one());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Poly {
    terms: BTreeMap<Exps, BigRational>,
}

/// Converts a rational to f64 (through its parts for very large ones).
pub fn rat_to_f64(r: &BigRational) -> f64 {
    r.to_f64().unwrap_or_else(|| {
        let n = r.numer().to_f64().unwrap_or(f64::INFINITY);
        let d = r.denom().to_f64().unwrap_or(f64::INFINITY);
        n / d
    })
}

/// `ln n` of a positive integer of any size: exact to f64 rounding, through its top 64 bits
/// and its bit length (`n = m 2^k` with `m < 2^64`, so `ln n = ln m + k ln 2`). `-inf` for 0.
pub(crate) fn ln_biguint(n: &num_bigint::BigUint) -> f64 {
    let bits = n.bits();
    if bits <= 64 {
        return n.to_f64().map_or(f64::NAN, f64::ln);
    }
    let shift = bits - 64;
    let top = (n >> shift).to_f64().map_or(f64::NAN, f64::ln);
    top + shift as f64 * std::f64::consts::LN_2
}

/// `ln |r|` of a rational of any size (where [`rat_to_f64`] would saturate to inf or 0).
pub fn ln_abs_rat(r: &BigRational) -> f64 {
    if let Some(v) = r.to_f64().filter(|v| v.is_normal()) {
        return v.abs().ln();
    }
    ln_biguint(r.numer().magnitude()) - ln_biguint(r.denom().magnitude())
}

impl Poly {
    /// The zero polynomial.
    pub fn zero() -> Self {
        Poly::default()
    }

    /// A constant.
    pub fn constant(c: BigRational) -> Self {
        let mut p = Poly::zero();
        if !c.is_zero() {
            p.terms.insert([0; NSYM], c);
        }
        p
    }

    /// The constant 1.
    pub fn one() -> Self {
        Poly::constant(BigRational::one())
    }

    /// The symbol s.
    pub fn symbol(s: Sym) -> Self {
        let mut e = [0; NSYM];
        e[s.index()] = 1;
        let mut p = Poly::zero();
        p.terms.insert(e, BigRational::one());
        p
    }

    /// Whether this is zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value if constant.
    pub(crate) fn as_constant(&self) -> Option<BigRational> {
        match self.terms.len() {
            0 => Some(BigRational::zero()),
            1 => self.terms.get(&[0; NSYM]).cloned(),
            _ => None,
        }
    }

    /// Whether symbol s appears in some term.
    pub fn uses(&self, s: Sym) -> bool {
        self.terms.keys().any(|e| e[s.index()] != 0)
    }

    /// Sum.
    pub fn add(&self, o: &Poly) -> Poly {
        let mut t = self.terms.clone();
        for (e, c) in &o.terms {
            let v = t.entry(*e).or_insert_with(BigRational::zero);
            *v += c;
            if v.is_zero() {
                t.remove(e);
            }
        }
        Poly { terms: t }
    }

    /// Product.
    pub fn mul(&self, o: &Poly) -> Poly {
        let mut out = Poly::zero();
        for (ea, ca) in &self.terms {
            for (eb, cb) in &o.terms {
                let mut e = [0; NSYM];
                for i in 0..NSYM {
                    e[i] = ea[i] + eb[i];
                }
                let v = out.terms.entry(e).or_insert_with(BigRational::zero);
                *v += ca * cb;
                if v.is_zero() {
                    out.terms.remove(&e);
                }
            }
        }
        out
    }

    /// Splits `self = c * m * p` with c a positive rational, m a monomial (returned as its
    /// exponents) and p primitive: integer coefficients with gcd 1, a positive first term, and
    /// no symbol dividing every term.
    pub fn content(&self) -> (BigRational, Exps, Poly) {
        let mut mins = [i64::MAX; NSYM];
        for e in self.terms.keys() {
            for i in 0..NSYM {
                mins[i] = mins[i].min(e[i]);
            }
        }
        if self.terms.is_empty() {
            return (BigRational::zero(), [0; NSYM], Poly::zero());
        }
        let mut num_gcd = BigInt::zero();
        let mut den_lcm = BigInt::one();
        for c in self.terms.values() {
            num_gcd = num_gcd.gcd(c.numer());
            den_lcm = den_lcm.lcm(c.denom());
        }
        let mut c = BigRational::new(num_gcd, den_lcm);
        if self.terms.values().next().is_some_and(|v| v.is_negative()) {
            c = -c;
        }
        let mut p = Poly::zero();
        for (e, v) in &self.terms {
            let mut e2 = *e;
            for i in 0..NSYM {
                e2[i] -= mins[i];
            }
            p.terms.insert(e2, v / &c);
        }
        (c, mins, p)
    }

    /// Value at `vals` (indexed by [`Sym::index`]).
    pub fn eval(&self, vals: &[f64; NSYM]) -> f64 {
        self.terms
            .iter()
            .map(|(e, c)| {
                let mut v = rat_to_f64(c);
                for i in 0..NSYM {
                    if e[i] != 0 {
                        v *= vals[i].powi(e[i] as i32);
                    }
                }
                v
            })
            .sum()
    }

    /// `(sign, ln |value|)` at `vals`, for a value beyond f64's range: each term's exact log
    /// (`ln_abs_rat` for its coefficient), then a log-sum-exp over terms of either sign.
    /// `(1, -inf)` when the value is 0; `ln` is NaN only when a symbol's log is.
    pub fn ln_eval(&self, vals: &[f64; NSYM]) -> (f64, f64) {
        let terms: Vec<(f64, f64)> = self
            .terms
            .iter()
            .map(|(e, c)| {
                let mut ln = ln_abs_rat(c);
                let mut sign = if c.is_negative() { -1.0 } else { 1.0 };
                for i in 0..NSYM {
                    if e[i] != 0 {
                        ln += e[i] as f64 * vals[i].abs().ln();
                        if vals[i] < 0.0 && e[i] % 2 != 0 {
                            sign = -sign;
                        }
                    }
                }
                (sign, ln)
            })
            .collect();
        let top = terms.iter().fold(f64::NEG_INFINITY, |m, t| m.max(t.1));
        if top == f64::NEG_INFINITY || top.is_nan() {
            return (1.0, top);
        }
        let sum: f64 = terms.iter().map(|(s, ln)| s * (ln - top).exp()).sum();
        let sign = if sum < 0.0 { -1.0 } else { 1.0 };
        (sign, top + sum.abs().ln())
    }

    fn sorted_terms(&self) -> Vec<(&Exps, &BigRational)> {
        let mut v: Vec<_> = self.terms.iter().collect();
        v.sort_by_key(|(e, _)| {
            let deg: i64 = e.iter().sum();
            (deg, e.map(|x| -x))
        });
        v
    }

    /// Plain text, e.g. `1 + g` or `alpha^2 + beta^4*g`.
    pub fn text(&self) -> String {
        self.render(false)
    }

    /// LaTeX, e.g. `\alpha^{2} + \beta^{4} g`.
    pub fn latex(&self) -> String {
        self.render(true)
    }

    fn render(&self, latex: bool) -> String {
        if self.terms.is_empty() {
            return "0".to_string();
        }
        let mut s = String::new();
        for (i, (e, c)) in self.sorted_terms().into_iter().enumerate() {
            let neg = c.is_negative();
            if i > 0 {
                s.push_str(if neg { " - " } else { " + " });
            } else if neg {
                s.push('-');
            }
            let a = c.abs();
            let mut factors: Vec<String> = Vec::new();
            for sym in Sym::ALL {
                let k = e[sym.index()];
                if k == 0 {
                    continue;
                }
                factors.push(match (latex, k) {
                    (true, 1) => sym.latex().to_string(),
                    (true, _) => format!("{}^{{{k}}}", sym.latex()),
                    (false, 1) => sym.name().to_string(),
                    (false, _) => format!("{}^{k}", sym.name()),
                });
            }
            if !a.is_one() || factors.is_empty() {
                factors.insert(0, rat_text(&a, latex));
            }
            s.push_str(&factors.join(if latex { " " } else { "*" }));
        }
        s
    }
}

/// A rational as text (`3/4`) or LaTeX (`\tfrac{3}{4}`).
pub(crate) fn rat_text(r: &BigRational, latex: bool) -> String {
    if r.is_integer() {
        r.numer().to_string()
    } else if latex {
        format!("\\tfrac{{{}}}{{{}}}", r.numer(), r.denom())
    } else {
        format!("{}/{}", r.numer(), r.denom())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i64, d: i64) -> BigRational {
        BigRational::new(n.into(), d.into())
    }

    #[test]
    fn content_extraction_is_canonical() {
        // (2 q0 alpha^2 + 2 q0 g)/3 = (2/3) q0 (alpha^2 + g)
        let q0 = Poly::symbol(Sym::Q0);
        let a2 = Poly::symbol(Sym::Alpha).mul(&Poly::symbol(Sym::Alpha));
        let p = q0
            .mul(&a2.add(&Poly::symbol(Sym::G)))
            .mul(&Poly::constant(r(2, 3)));
        let (c, m, prim) = p.content();
        assert_eq!(c, r(2, 3));
        assert_eq!(m, [0, 0, 0, 0, 1]);
        assert_eq!(prim, a2.add(&Poly::symbol(Sym::G)));
        assert_eq!(prim.text(), "g + alpha^2");
    }
}
