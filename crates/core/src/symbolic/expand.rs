//! The symbolic twin of [`crate::theory::mean_field`]: the same recursion with exact
//! polynomials for the second moments and exact products of rational powers for the
//! coefficients,
//!
//! ```text
//! m_l = G q_u,   G = g beta^(2k)  (k = matrices beta scales)
//! s_l = alpha_l^2 q_{l-1} + lambda_l^2 (m_l | 1 if N_br = Norm)
//! C_{l,l} = s_l^(-1/2)^[N_out] lambda_l m_l^(-1/2)^[N_br],  C_{l,j} = s_l^(-1/2)^[N_out] alpha_l C_{l-1,j}
//! ```
//!
//! It needs a branch whose gain ratio is one constant g for every input (linear, relu-mlp).

use super::expr::{Exp, Expr};
use super::poly::{NSYM, Poly, Sym};
use crate::branch::BranchModel;
use crate::engine::refusal::{NormUse, refused};
use crate::spec::{BranchScale, InputScale, SkipScale, StackSpec};
use crate::{Error, Result};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

/// Symbols replaced by exact rationals (`--subs g=1,q0=1`).
///
/// # Examples
///
/// ```rust
/// use num_rational::BigRational;
/// use normscope_core::symbolic::{Subs, Sym};
///
/// let s = Subs::parse("g=0.25, q0=3/6")?;
/// assert_eq!(s.get(Sym::G), Some(&BigRational::new(1.into(), 4.into())));
/// assert_eq!(s.get(Sym::Q0), Some(&BigRational::new(1.into(), 2.into())));
/// assert_eq!(s.get(Sym::Alpha), None);
/// assert_eq!(Subs::parse("")?, Subs::default());
/// // Unknown names, negative values and repeats are refused.
/// assert!(Subs::parse("h=1").is_err());
/// assert!(Subs::parse("g=-1").is_err());
/// assert!(Subs::parse("g=1,g=2").is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Subs {
    values: [Option<BigRational>; NSYM],
}

/// Parses an exact rational: `2`, `-3/4`, `0.25`.
pub(crate) fn parse_rational(s: &str) -> Option<BigRational> {
    let s = s.trim();
    if let Some((n, d)) = s.split_once('/') {
        let n: BigInt = n.trim().parse().ok()?;
        let d: BigInt = d.trim().parse().ok()?;
        if d.is_zero() {
            return None;
        }
        return Some(BigRational::new(n, d));
    }
    if let Some((i, f)) = s.split_once('.') {
        let neg = i.starts_with('-');
        let digits = format!("{}{}", i.trim_start_matches('-'), f);
        let n: BigInt = digits.parse().ok()?;
        let d = BigInt::from(10u32).pow(f.len() as u32);
        let r = BigRational::new(n, d);
        return Some(if neg { -r } else { r });
    }
    s.parse::<BigInt>().ok().map(BigRational::from_integer)
}

impl Subs {
    /// Parses `name=value,...` with names alpha, beta, g, lambda, q0 and exact rational values.
    pub fn parse(s: &str) -> Result<Self> {
        let mut out = Subs::default();
        if s.trim().is_empty() {
            return Ok(out);
        }
        let accepted = "name=value pairs like g=1,q0=1 with names alpha, beta, g, lambda, q0 and exact non-negative values like 2, 3/4, 0.25";
        for part in s.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| Error::invalid("--subs", part, accepted))?;
            let sym = Sym::ALL
                .into_iter()
                .find(|x| x.name() == k.trim())
                .ok_or_else(|| Error::invalid("--subs", part, accepted))?;
            let r = parse_rational(v)
                .filter(|r| *r >= BigRational::zero())
                .ok_or_else(|| Error::invalid("--subs", part, accepted))?;
            if out.values[sym.index()].is_some() {
                return Err(Error::invalid(
                    "--subs",
                    s,
                    format!("each symbol at most once ({} is given twice)", sym.name()),
                ));
            }
            out.values[sym.index()] = Some(r);
        }
        Ok(out)
    }

    /// The substituted value of s, if any.
    pub fn get(&self, s: Sym) -> Option<&BigRational> {
        self.values[s.index()].as_ref()
    }

    fn poly(&self, s: Sym) -> Poly {
        match self.get(s) {
            Some(r) => Poly::constant(r.clone()),
            None => Poly::symbol(s),
        }
    }
}

/// `x_L = sum_j C_{L,j} B_j`, exactly, with the numeric values of the symbols.
///
/// # Examples
///
/// Post-LN, `x_l = N(x_{l-1} + F_l(x_{l-1}))`, at depth 2: block 1's norm divides by
/// `sqrt(q0 (1 + g))` and block 2's by `sqrt(1 + g)`, so (by hand) `C_{2,0} = C_{2,1} =
/// q0^(-1/2) (1 + g)^(-1)` and `C_{2,2} = (1 + g)^(-1/2)`; with `g = q0 = 1` substituted,
/// `1/2` and `2^(-1/2)`.
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchModel};
/// use normscope_core::placement::{self, Overrides};
/// use normscope_core::symbolic::{Expansion, Subs, Sym, expand};
///
/// let spec = placement::build("post", 2, &Overrides::default())?;
/// let model = BranchModel::new(&BranchConfig::default(), None, 1.0, 0.0);
/// let ex: Expansion = expand(&spec, &model, 1.0, &Subs::default())?;
/// assert_eq!(ex.depth, 2);
/// assert_eq!(ex.symbols, [Sym::G, Sym::Q0]);
/// assert_eq!(ex.coefs[0].text(), "q0^(-1/2) * (1 + g)^(-1)");
/// assert_eq!(ex.coefs[2].text(), "(1 + g)^(-1/2)");
/// // Xavier linear: g = 1, and q0 = 1, so C_{2,0} = 1/2.
/// assert!((ex.value(0) - 0.5).abs() < 1e-15);
/// assert_eq!(ex.beyond_f64(0), None);
///
/// let exact = expand(&spec, &model, 1.0, &Subs::parse("g=1,q0=1")?)?;
/// assert_eq!(exact.coefs[1].text(), "1/2");
/// assert_eq!(exact.coefs[2].text(), "2^(-1/2)");
/// assert!(exact.symbols.is_empty());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Expansion {
    /// Depth L.
    pub depth: usize,
    /// `C_{L,j}`, j = 0..=L.
    pub coefs: Vec<Expr>,
    /// Values of the symbols (indexed by [`Sym::index`]) used by [`Expr::eval`].
    pub values: [f64; NSYM],
    /// Symbols that appear in some coefficient.
    pub symbols: Vec<Sym>,
}

impl Expansion {
    /// `C_{L,j}` evaluated (`inf` or 0 when beyond f64: see [`Self::beyond_f64`]).
    pub fn value(&self, j: usize) -> f64 {
        self.coefs[j].eval(&self.values)
    }

    /// Why `C_{L,j}` cannot be written as an f64 though its logarithm is exact (`10^x` above
    /// f64's largest or below its smallest positive number), or None.
    pub fn beyond_f64(&self, j: usize) -> Option<String> {
        let (_, ln) = self.coefs[j].ln_eval(&self.values);
        let v = self.value(j).abs();
        let log10 = ln / std::f64::consts::LN_10;
        if !ln.is_finite() {
            None
        } else if v.is_infinite() {
            Some(format!("overflow: |value| = 10^{log10:.3} is beyond f64"))
        } else if v < f64::MIN_POSITIVE {
            Some(format!(
                "underflow: |value| = 10^{log10:.3} is below f64's smallest number"
            ))
        } else {
            None
        }
    }

    /// `C_{L,j}` as text: the number, or, beyond f64, its sign and decimal exponent from the
    /// exact logarithm (`1.2345678901e3010`), never `inf`.
    pub(crate) fn value_text(&self, j: usize) -> String {
        if self.beyond_f64(j).is_none() {
            let v = self.value(j);
            // Plain decimals in the usual range, scientific notation outside it (Display
            // would print 1e-300 with 300 zeros).
            return if v == 0.0 || (1e-5..1e16).contains(&v.abs()) {
                v.to_string()
            } else {
                format!("{v:e}")
            };
        }
        let (sign, ln) = self.coefs[j].ln_eval(&self.values);
        let log10 = ln / std::f64::consts::LN_10;
        let e = log10.floor();
        let m = 10f64.powf(log10 - e);
        format!("{}{m:.10}e{e}", if sign < 0.0 { "-" } else { "" })
    }
}

/// The symbols `alpha` and `lambda` stand for one value each: a stack whose blocks give one of
/// them different values (an l-dependent scale from a placement file) has no expansion in
/// these symbols, and is refused rather than written with the last block's value.
fn one_value(
    seen: &mut Option<(usize, f64)>,
    v: f64,
    l: usize,
    sym: &str,
    what: &str,
) -> Result<()> {
    match *seen {
        None => *seen = Some((l, v)),
        Some((first, w)) if w.to_bits() != v.to_bits() => {
            return Err(Error::Unsupported(format!(
                "the expansion writes the {what} as one symbol {sym}, but this stack's {what} differs between blocks ({sym} = {w} at block {first}, {v} at block {l}); use `normscope theory --metrics coef` for its numeric coefficients"
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// Expands `spec` with branch `model` and input second moment `q0`. A stack whose skip scales
/// ([`SkipScale::Alpha`]) or branch multipliers ([`BranchScale::Lambda`]) take more than one
/// value is [`Error::Unsupported`]: the expansion has one symbol for each; so is a norm without
/// a per-token scalar at infinite width (BatchNorm, InstanceNorm, DyT; GroupNorm has one;
/// [`NormUse::Expansion`]).
pub fn expand(spec: &StackSpec, model: &BranchModel, q0: f64, subs: &Subs) -> Result<Expansion> {
    refused(NormUse::Expansion { spec })?;
    if !model.kind.has_constant_gain() {
        return Err(Error::Unsupported(format!(
            "exact expansion needs a branch whose gain E||F(u)||^2/||u||^2 is one constant g (linear, relu-mlp); {} depends on its input's scale or token correlation — use `normscope theory --metrics coef` for its numeric coefficients",
            model.kind.name()
        )));
    }
    let depth = spec.depth;
    let mut values = [1.0; NSYM];
    values[Sym::G.index()] = model.nominal_gain;
    values[Sym::Q0.index()] = q0;
    let mut g_poly = subs.poly(Sym::G);
    if let Some(b) = spec.beta {
        values[Sym::Beta.index()] = b;
        // beta^2 per matrix it scales: both (FFN, attention's V and O) or the last only.
        let scaled = if model.kernel().beta_scales_first() {
            2
        } else {
            1
        };
        for _ in 0..2 * scaled {
            g_poly = g_poly.mul(&subs.poly(Sym::Beta));
        }
    }
    let half = Exp::new(1, 2);
    let mut q_prev = subs.poly(Sym::Q0);
    let mut admin_acc = Poly::one();
    let mut new_coef = vec![Expr::one()];
    let mut skip = vec![Expr::one()];
    let (mut alpha_seen, mut lambda_seen) = (None, None);
    for l in 1..=depth {
        let b = spec.block(l);
        let mut q_u = if b.n_in.is_norm() {
            Poly::one()
        } else {
            q_prev.clone()
        };
        if b.in_scale == InputScale::InvSqrtLayer {
            q_u = q_u.mul(&Poly::constant(BigRational::new(
                1.into(),
                (l as u64).into(),
            )));
        }
        let m = g_poly.mul(&q_u);
        let (br_sq, n_br) = if b.n_br.is_norm() && !m.is_zero() {
            (Poly::one(), Expr::pow_poly(&m, -half))
        } else {
            (m.clone(), Expr::one())
        };
        let (alpha_sq, alpha) = match b.skip {
            SkipScale::One => (Poly::one(), Expr::one()),
            SkipScale::Alpha(a) => {
                one_value(&mut alpha_seen, a, l, "alpha", "skip scale")?;
                values[Sym::Alpha.index()] = a;
                let p = subs.poly(Sym::Alpha);
                (p.mul(&p), Expr::pow_poly(&p, Exp::one()))
            }
            SkipScale::AdminOmega => (admin_acc.clone(), Expr::pow_poly(&admin_acc, half)),
        };
        let (lam_sq, lam) = match b.lambda {
            BranchScale::One => (Poly::one(), Expr::one()),
            BranchScale::Lambda(v) => {
                one_value(&mut lambda_seen, v, l, "lambda", "branch multiplier")?;
                values[Sym::Lambda.index()] = v;
                let p = subs.poly(Sym::Lambda);
                (p.mul(&p), Expr::pow_poly(&p, Exp::one()))
            }
        };
        let s = alpha_sq.mul(&q_prev).add(&lam_sq.mul(&br_sq));
        if s.is_zero() {
            return Err(Error::Undefined(format!("x_{l} is identically zero")));
        }
        let n_out = if b.n_out.is_norm() {
            Expr::pow_poly(&s, -half)
        } else {
            Expr::one()
        };
        skip.push(n_out.mul(&alpha));
        new_coef.push(n_out.mul(&lam).mul(&n_br));
        // Admin's profiling: omega_{l+1}^2 = s_l = Var(omega_l x_{l-1}) + Var(lambda N_br(F_l)).
        if b.skip == SkipScale::AdminOmega {
            admin_acc = s.clone();
        }
        q_prev = if b.n_out.is_norm() { Poly::one() } else { s };
    }
    // C_{L,j} = C_{j,j} prod_{i=j+1..L} skip_i, accumulated from the top.
    let mut coefs = vec![Expr::one(); depth + 1];
    let mut acc = Expr::one();
    for j in (0..=depth).rev() {
        coefs[j] = new_coef[j].mul(&acc);
        if j >= 1 {
            acc = acc.mul(&skip[j]);
        }
    }
    for s in Sym::ALL {
        if let Some(r) = subs.get(s) {
            let v = super::poly::rat_to_f64(r);
            if !v.is_finite() || (v == 0.0 && !r.is_zero()) {
                return Err(Error::InvalidParam {
                    field: "--subs",
                    value: format!("{}={r}", s.name()),
                    accepted:
                        "a value within f64's range (between about 1e-307 and 1e308 in magnitude)"
                            .into(),
                });
            }
            values[s.index()] = v;
        }
    }
    let mut symbols: Vec<Sym> = coefs.iter().flat_map(|c| c.symbols()).collect();
    symbols.sort();
    symbols.dedup();
    if values.iter().any(|v| !v.is_finite()) {
        return Err(Error::Overflow("a symbol's value is not finite".into()));
    }
    if let Some((j, why)) = coefs
        .iter()
        .enumerate()
        .find_map(|(j, c)| c.undefined_at(&values).map(|w| (j, w)))
    {
        return Err(Error::Undefined(format!("C_{{{depth},{j}}} = {why}")));
    }
    Ok(Expansion {
        depth,
        coefs,
        values,
        symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rationals_parse_exactly() {
        assert_eq!(
            parse_rational("0.25"),
            Some(BigRational::new(1.into(), 4.into()))
        );
        assert_eq!(
            parse_rational("3/6"),
            Some(BigRational::new(1.into(), 2.into()))
        );
        assert_eq!(parse_rational("x"), None);
        assert!(Subs::parse("g=1,q0=2").is_ok());
        assert!(Subs::parse("h=1").is_err());
        assert!(Subs::parse("g=-1").is_err());
    }
}
