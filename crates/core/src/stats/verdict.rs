//! Verdicts on training claims: one set of rules that every claim of the ledger goes through.
//!
//! A claim names a family of comparisons fixed before the numbers are seen. Each comparison is
//! a set of paired differences `arm A - arm B` over seeds ([`Obs`], interval-censored where the
//! measurement is a bracket), and predicts an [`Claimed::Increase`], a [`Claimed::Decrease`] or
//! [`Claimed::Equivalent`] (no difference beyond the smallest effect of interest, SESOI, fixed
//! in advance, in the effect's own units). Each comparison reports its effect first: the median
//! difference and its distribution-free 95% interval with the interval's exact coverage
//! ([`super::median_ci`]). Then, with every p-value from the exact sign test on interval data
//! ([`super::sign`]: censored or tied observations count against the alternative tested, so
//! censoring can only lose power) and each kind of test Holm-adjusted ([`super::holm`]) over all
//! the family's comparisons (`q`):
//!
//! - **Directional claims** (Increase, Decrease): the two-sided test of median 0 (`p_two_sided`);
//!   `q < alpha` with the median on the claimed side (the side whose one-sided p is smaller) is
//!   [`Outcome::AsClaimed`], on the other side [`Outcome::Opposite`], either only when the
//!   median may lie beyond `+-SESOI`: a significant effect whose median lies within it
//!   even at its most favourable (the medians of the differences' upper and of their lower
//!   ends both within `+-SESOI`; for exact values, the median itself) is
//!   [`Outcome::BelowSesoi`] (negligible: an effect smaller than the smallest of interest,
//!   never "as claimed"; rule set on 2026-12-07 after a referee's report, i.e. after the
//!   data). Otherwise the
//!   equivalence test, TOST (Schuirmann 1987, J. Pharmacokin. Biopharm. 15:657; Lakens 2017,
//!   Soc. Psychol. Personal. Sci. 8:355) by two one-sided sign tests, median `> -SESOI` and
//!   median `< +SESOI`, `p_equivalence` the larger of the two: `q < alpha` is
//!   [`Outcome::Negligible`]. Otherwise [`Outcome::Inconclusive`].
//! - **Equivalence claims**: TOST `q < alpha` is [`Outcome::AsClaimed`]. Otherwise the
//!   minimum-effect test (Murphy and Myors 1999, J. Appl. Psychol. 84:234): the one-sided sign
//!   test that the median is beyond `+SESOI` (median `> SESOI`) or beyond `-SESOI` (median `<
//!   -SESOI`), on the side the data point to (the smaller of the two one-sided p-values), that
//!   p doubled (capped at 1) because the side is chosen after seeing the data: `p_beyond`.
//!   `q < alpha` is [`Outcome::Opposite`] (the effect differs by more than the SESOI).
//!   Otherwise [`Outcome::Inconclusive`].
//! - **Not estimable**: a comparison with at least half of its differences unknown (neither
//!   end finite: both arms censored on the same side, e.g. no seed trained at any rate in
//!   either arm) has no bounded median; it is [`Outcome::NotEstimable`], printed with why,
//!   and left out of every Holm adjustment (the others are adjusted over the estimable
//!   ones). Never printed as `NaN [-inf, inf]`.
//! - **The family's verdict**: every comparison as claimed is [`Verdict::Supported`]; some as
//!   claimed is [`Verdict::Conditional`], naming where it holds and what the others are; none
//!   as claimed and every one opposite or negligible is [`Verdict::Refuted`], naming which;
//!   none estimable is [`Verdict::NotEstimable`]; anything else is [`Verdict::Inconclusive`],
//!   naming any comparison that refutes. Each verdict says how many comparisons hold ("holds
//!   in 2 of 3"). A result
//!   that is not significant never refutes: refuting takes a significant effect against the
//!   claim or a significant equivalence within the SESOI.
//!
//! The sign test's smallest two-sided p at `n` seeds is `2/2^n` (2/1024 at `n = 10`), so Holm
//! over a family of three at `n = 10` needs all ten seeds on one side for the smallest p: that
//! is the price of a distribution-free test on few seeds, stated rather than worked around.

use super::holm;
use super::median_ci::median_ci;
use super::obs::Obs;
use super::sign::{p_greater, p_less, p_two_sided};
use std::fmt;

/// The family-wise error rate every ledger claim uses unless stated otherwise.
pub const ALPHA: f64 = 0.05;

/// What a comparison predicts for its effect (a paired difference, arm A - arm B).
///
/// # Examples
///
/// Ten seeds, every difference negative: the two-sided sign test gives `p = 2/1024`
/// (R: `binom.test(0, 10)$p.value = 0.001953125`), significant on the negative side, which a
/// predicted decrease reads as claimed and a predicted increase as the opposite.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{Claimed, Comparison, Family, Outcome, judge};
///
/// let diffs: Vec<Obs> = (1..=10).map(|i| Obs::exact(-(i as f64)).unwrap()).collect();
/// let outcome = |claimed| {
///     let c = Comparison { name: "lr".into(), diffs: diffs.clone(), claimed, sesoi: None };
///     judge(&Family::new("warmup lowers the loss", 0.5, vec![c])).unwrap().0[0].outcome
/// };
/// assert_eq!(outcome(Claimed::Decrease), Outcome::AsClaimed);
/// assert_eq!(outcome(Claimed::Increase), Outcome::Opposite);
/// // Every difference is beyond -SESOI = -0.5: equivalence is refuted too.
/// assert_eq!(outcome(Claimed::Equivalent), Outcome::Opposite);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The median difference is positive.
    Increase,
    /// The median difference is negative.
    Decrease,
    /// The median difference lies within `+-SESOI`.
    Equivalent,
}

/// One comparison of a claim's family.
///
/// # Examples
///
/// Ten seeds where arm A beats arm B by 1 to 10: the sign test's two-sided p is `2/2^10 =
/// 0.001953125` (R: `binom.test(10, 10)$p.value`), the median 5.5 and its 95% interval
/// `[x_(2), x_(9)] = [2, 9]`.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{Claimed, Comparison, Family, Outcome, judge};
///
/// let c = Comparison {
///     name: "d=64".into(),
///     diffs: (1..=10).map(|i| Obs::exact(i as f64).unwrap()).collect(),
///     claimed: Claimed::Increase,
///     sesoi: Some(0.25),
/// };
/// assert_eq!(c.diffs.len(), 10);
/// let (a, _) = judge(&Family::new("A beats B", 0.5, vec![c]))?;
/// assert_eq!((a[0].n, a[0].estimate, a[0].ci), (10, 5.5, (2.0, 9.0)));
/// assert!((a[0].p_two_sided - 0.001953125).abs() < 1e-15);
/// // One comparison: Holm changes nothing.
/// assert_eq!(a[0].q_two_sided, a[0].p_two_sided);
/// assert_eq!(a[0].outcome, Outcome::AsClaimed);
/// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Where the comparison is made (named in the verdict).
    pub name: String,
    /// The paired differences, one per seed.
    pub diffs: Vec<Obs>,
    /// The claim's prediction for this comparison.
    pub claimed: Claimed,
    /// This comparison's smallest effect of interest, in its effect's units, when it differs
    /// from the family's (`None`: [`Family::sesoi`]); a family whose comparisons measure
    /// different quantities (a slope and a loss) states one for each.
    pub sesoi: Option<f64>,
}

/// A claim and its family of comparisons, all fixed in advance.
///
/// # Examples
///
/// Three comparisons at ten seeds each. Holm's correction over the three multiplies the
/// smallest two-sided p, `2/1024`, by 3: `q = 6/1024 = 0.005859375` (R:
/// `p.adjust(c(2/1024, 1, 0.7539), "holm")[1]`). The equivalence claim's TOST p is
/// `P(K >= 10) = 1/1024` on each side, Holm `3/1024`.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{ALPHA, Claimed, Comparison, Family, Outcome, judge};
///
/// let comp = |name: &str, v: &[f64], claimed| Comparison {
///     name: name.into(),
///     diffs: v.iter().map(|&x| Obs::exact(x).unwrap()).collect(),
///     claimed,
///     sesoi: None,
/// };
/// let tiny = [0.01, -0.02, 0.03, -0.04, 0.05, -0.01, 0.02, -0.03, 0.04, -0.05];
/// let mixed = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -7.0, -8.0, -9.0, -10.0];
/// let f = Family::new(
///     "wider is better, and the norm does not matter",
///     0.5,
///     vec![
///         comp("d=64", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], Claimed::Increase),
///         comp("norm", &tiny, Claimed::Equivalent),
///         comp("d=128", &mixed, Claimed::Increase),
///     ],
/// );
/// assert_eq!((f.alpha, f.sesoi, f.comparisons.len()), (ALPHA, 0.5, 3));
/// assert!(f.rule().contains("Holm-adjusted separately over the 3 at alpha = 0.05"));
///
/// let (a, _) = judge(&f)?;
/// assert!((a[0].q_two_sided - 6.0 / 1024.0).abs() < 1e-15);
/// assert!((a[1].q_equivalence - 3.0 / 1024.0).abs() < 1e-15);
/// let outcomes: Vec<Outcome> = a.iter().map(|x| x.outcome).collect();
/// assert_eq!(outcomes, [Outcome::AsClaimed, Outcome::AsClaimed, Outcome::Inconclusive]);
/// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The claim, in words.
    pub claim: String,
    /// The family-wise error rate, in `(0, 1)` ([`ALPHA`]). The reported interval stays at
    /// 95% ([`super::LEVEL`]) whatever it is.
    pub alpha: f64,
    /// The smallest effect of interest, `> 0`, in the effect's units.
    pub sesoi: f64,
    /// The comparisons (Holm runs over all of them).
    pub comparisons: Vec<Comparison>,
}

/// A comparison's result under the rules of the module docs.
///
/// # Examples
///
/// A predicted increase whose ten differences all lie within `+-SESOI = +-1`, five on each
/// side: the two-sided test is not significant (`p = 1`), but TOST is (`P(K >= 10) = 1/1024`
/// on each side), so the effect is negligible.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{Claimed, Comparison, Family, Outcome, judge};
///
/// let v = [0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.4, -0.4, 0.5, -0.5];
/// let c = Comparison {
///     name: "d=64".into(),
///     diffs: v.iter().map(|&x| Obs::exact(x).unwrap()).collect(),
///     claimed: Claimed::Increase,
///     sesoi: None,
/// };
/// let (a, _) = judge(&Family::new("A beats B", 1.0, vec![c]))?;
/// assert_eq!(a[0].outcome, Outcome::Negligible);
/// assert!((a[0].p_two_sided - 1.0).abs() < 1e-15);
/// assert!((a[0].p_equivalence - 1.0 / 1024.0).abs() < 1e-15);
/// assert_eq!(Outcome::Negligible.to_string(), "negligible");
/// assert_eq!(Outcome::AsClaimed.to_string(), "as claimed");
/// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Significant as the claim predicts.
    AsClaimed,
    /// Significant against the claim: the other direction (directional claims), or a
    /// difference beyond the SESOI (equivalence claims).
    Opposite,
    /// A directional claim's effect shown to lie within `+-SESOI` (TOST).
    Negligible,
    /// A directional claim's effect significant (two-sided test) on either side, but with its
    /// median within `+-SESOI`: an effect smaller than the smallest of interest, read as
    /// negligible, never as claimed or opposite.
    BelowSesoi,
    /// Nothing significant.
    Inconclusive,
    /// The effect cannot be estimated: at least half of the paired differences are unknown
    /// (neither end finite: both arms censored on the same side, or a value undefined), so
    /// the median is unbounded both ways. Left out of the family's Holm adjustment.
    NotEstimable,
}

impl Outcome {
    /// The outcome in at most 13 characters, for a table cell: as [`fmt::Display`], with
    /// "below SESOI" for [`Outcome::BelowSesoi`].
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::stats::verdict::Outcome;
    /// assert_eq!(Outcome::BelowSesoi.short(), "below SESOI");
    /// assert_eq!(Outcome::AsClaimed.short(), "as claimed");
    /// ```
    pub fn short(&self) -> &'static str {
        match self {
            Outcome::AsClaimed => "as claimed",
            Outcome::Opposite => "opposite",
            Outcome::Negligible => "negligible",
            Outcome::BelowSesoi => "below SESOI",
            Outcome::Inconclusive => "inconclusive",
            Outcome::NotEstimable => "not estimable",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::AsClaimed => "as claimed",
            Outcome::Opposite => "opposite",
            Outcome::Negligible => "negligible",
            Outcome::BelowSesoi => "negligible (significant, below the SESOI)",
            Outcome::Inconclusive => "inconclusive",
            Outcome::NotEstimable => "not estimable",
        })
    }
}

/// One comparison assessed: the effect first, then the tests (module docs).
///
/// # Examples
///
/// The ledger line of a comparison with differences 1 to 10 in a family of three: median 5.5,
/// interval `[x_(2), x_(9)] = [2, 9]`, and the Holm-adjusted two-sided `q = 3 * 2/1024 =
/// 0.005859375`, printed to 4 significant digits.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{Assessed, Claimed, Comparison, Family, judge};
///
/// let comp = |name: &str, shift: f64| Comparison {
///     name: name.into(),
///     diffs: (1..=10).map(|i| Obs::exact(i as f64 + shift).unwrap()).collect(),
///     claimed: Claimed::Increase,
///     sesoi: None,
/// };
/// let comps = vec![comp("d=64", 0.0), comp("d=128", 1.0), comp("d=256", 2.0)];
/// let f = Family::new("A beats B", 0.5, comps);
/// let (a, _) = judge(&f)?;
/// let first: &Assessed = &a[0];
/// assert!((first.coverage - 1002.0 / 1024.0).abs() < 1e-12);
/// assert!((first.deciding_q() - 0.005859375).abs() < 1e-15);
/// assert_eq!(first.to_string(), "+5.5 [2, 9] (n = 10, q = 0.005859): as claimed");
/// assert_eq!(a[2].to_string(), "+7.5 [4, 11] (n = 10, q = 0.005859): as claimed");
/// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Assessed {
    /// The comparison's name.
    pub name: String,
    /// Its prediction.
    pub claimed: Claimed,
    /// Number of paired differences.
    pub n: usize,
    /// The median difference ([`super::median_ci::MedianCi::estimate`]).
    pub estimate: f64,
    /// Its distribution-free 95% interval (ends infinite when censored or `n <= 5`).
    pub ci: (f64, f64),
    /// The interval's exact coverage.
    pub coverage: f64,
    /// Two-sided sign test of median 0.
    pub p_two_sided: f64,
    /// `p_two_sided`, Holm over the family.
    pub q_two_sided: f64,
    /// TOST at `+-SESOI`: the larger of the two one-sided p-values.
    pub p_equivalence: f64,
    /// `p_equivalence`, Holm over the family.
    pub q_equivalence: f64,
    /// Minimum-effect test beyond `+-SESOI` (module docs).
    pub p_beyond: f64,
    /// `p_beyond`, Holm over the family.
    pub q_beyond: f64,
    /// The result.
    pub outcome: Outcome,
    /// Paired differences with neither end finite (nothing known about them).
    pub unknown: usize,
    /// The smallest effect of interest this comparison was judged with.
    pub sesoi: f64,
}

impl Assessed {
    /// The adjusted p-value of the test that decided the outcome: the two-sided test for a
    /// directional claim (as claimed, opposite, inconclusive) or TOST (negligible); TOST for an
    /// equivalence claim (as claimed, inconclusive) or the minimum-effect test (opposite).
    /// NaN for a comparison that is not estimable (it is not tested).
    pub fn deciding_q(&self) -> f64 {
        match (self.claimed, self.outcome) {
            (_, Outcome::NotEstimable) => f64::NAN,
            (_, Outcome::BelowSesoi) => self.q_two_sided,
            (Claimed::Equivalent, Outcome::Opposite) => self.q_beyond,
            (Claimed::Equivalent, _) | (_, Outcome::Negligible) => self.q_equivalence,
            _ => self.q_two_sided,
        }
    }

    /// The outcome in words: "differs by more than the SESOI" for an equivalence claim's
    /// opposite, the SESOI named for an effect below it, why for one not estimable, else the
    /// [`Outcome`]'s own.
    pub fn outcome_text(&self) -> String {
        match (self.claimed, self.outcome) {
            (Claimed::Equivalent, Outcome::Opposite) => "differs by more than the SESOI".into(),
            (_, Outcome::BelowSesoi) => format!(
                "negligible (significant, below the SESOI of {})",
                sig4(self.sesoi)
            ),
            (_, Outcome::NotEstimable) => format!(
                "not estimable ({} of {} paired differences unknown: both arms censored on the same side)",
                self.unknown, self.n
            ),
            (_, o) => o.to_string(),
        }
    }
}

/// An interval's end in words for the ledger: [`sig4`] when finite, `unbounded` when
/// infinite (a censored end), so that no ledger cell prints `inf` or `NaN`.
pub fn end_text(x: f64) -> String {
    if x.is_finite() {
        sig4(x)
    } else {
        "unbounded".into()
    }
}

/// The ledger line: `+0.93 [0.62, 1.21] (n = 10, q = 0.004): as claimed`, numbers to 4
/// significant digits ([`sig4`]; an infinite interval end is `unbounded`, [`end_text`]), `q`
/// from [`Assessed::deciding_q`]; a comparison that is not estimable prints only why and its
/// `n`.
impl fmt::Display for Assessed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.outcome == Outcome::NotEstimable {
            return f.write_str(&self.outcome_text());
        }
        let sign = if self.estimate > 0.0 { "+" } else { "" };
        write!(
            f,
            "{sign}{} [{}, {}] (n = {}, q = {}): {}",
            sig4(self.estimate),
            end_text(self.ci.0),
            end_text(self.ci.1),
            self.n,
            sig4(self.deciding_q()),
            self.outcome_text()
        )
    }
}

/// The family's verdict (module docs); its [`Display`](fmt::Display) is the ledger's wording,
/// which says how many comparisons hold.
///
/// # Examples
///
/// Ten of ten seeds positive at one width (`q = 2 * 2/1024`, Holm over two), six of ten at the
/// other (`p = 2 P(K >= 6) = 0.754`): the claim holds at one width only.
///
/// ```rust
/// use normscope_core::stats::obs::Obs;
/// use normscope_core::stats::verdict::{Claimed, Comparison, Family, Outcome, Verdict, judge};
///
/// let comp = |name: &str, v: &[f64]| Comparison {
///     name: name.into(),
///     diffs: v.iter().map(|&x| Obs::exact(x).unwrap()).collect(),
///     claimed: Claimed::Increase,
///     sesoi: None,
/// };
/// let all = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
/// let six = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -7.0, -8.0, -9.0, -10.0];
/// let f = Family::new("A beats B", 0.5, vec![comp("d=64", &all), comp("d=128", &six)]);
/// let (_, v) = judge(&f)?;
/// assert_eq!(
///     v,
///     Verdict::Conditional {
///         holds: vec!["d=64".into()],
///         others: vec![("d=128".into(), Outcome::Inconclusive)],
///     }
/// );
/// assert_eq!(v.to_string(), "conditional: holds in 1 of 2 (at d=64); inconclusive at d=128");
///
/// let by = vec![("d=64".into(), Outcome::Opposite), ("d=128".into(), Outcome::Negligible)];
/// assert_eq!(
///     Verdict::Refuted { by }.to_string(),
///     "refuted: opposite at d=64; negligible at d=128"
/// );
/// assert_eq!(Verdict::Supported { n: 3 }.to_string(), "supported (holds in 3 of 3)");
/// let none = vec![("d=64".into(), Outcome::Inconclusive)];
/// assert_eq!(Verdict::Inconclusive { others: none }.to_string(), "inconclusive (holds in 0 of 1)");
/// let gone = Verdict::NotEstimable { names: vec!["d=64".into()] };
/// assert_eq!(gone.to_string(), "not estimable at d=64");
/// # Ok::<(), normscope_core::stats::verdict::FamilyError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every comparison as claimed.
    Supported {
        /// How many comparisons (all of them hold).
        n: usize,
    },
    /// Some comparisons as claimed.
    Conditional {
        /// Where the claim holds.
        holds: Vec<String>,
        /// The other comparisons and their outcomes.
        others: Vec<(String, Outcome)>,
    },
    /// No comparison as claimed, and not every one refutes.
    Inconclusive {
        /// Every comparison and its outcome.
        others: Vec<(String, Outcome)>,
    },
    /// No comparison as claimed, every one opposite or negligible (below the SESOI included).
    Refuted {
        /// Every comparison and how it refutes.
        by: Vec<(String, Outcome)>,
    },
    /// No comparison could be estimated ([`Outcome::NotEstimable`]).
    NotEstimable {
        /// The comparisons.
        names: Vec<String>,
    },
}

/// `"opposite at a, b; negligible at c"`: names grouped by outcome, in the order opposite,
/// negligible, below the SESOI, inconclusive, not estimable, as claimed; outcomes in `skip`
/// left out.
fn grouped(list: &[(String, Outcome)], skip: &[Outcome]) -> String {
    let order = [
        Outcome::Opposite,
        Outcome::Negligible,
        Outcome::BelowSesoi,
        Outcome::Inconclusive,
        Outcome::NotEstimable,
        Outcome::AsClaimed,
    ];
    order
        .iter()
        .filter(|o| !skip.contains(o))
        .filter_map(|o| {
            let names: Vec<&str> = list
                .iter()
                .filter(|(_, x)| x == o)
                .map(|(n, _)| n.as_str())
                .collect();
            (!names.is_empty()).then(|| format!("{o} at {}", names.join(", ")))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Supported { n } => write!(f, "supported (holds in {n} of {n})"),
            Verdict::Conditional { holds, others } => {
                write!(
                    f,
                    "conditional: holds in {} of {} (at {})",
                    holds.len(),
                    holds.len() + others.len(),
                    holds.join(", ")
                )?;
                if !others.is_empty() {
                    write!(f, "; {}", grouped(others, &[]))?;
                }
                Ok(())
            }
            Verdict::Inconclusive { others } => {
                write!(f, "inconclusive (holds in 0 of {}", others.len())?;
                let notes = grouped(others, &[Outcome::Inconclusive]);
                if !notes.is_empty() {
                    write!(f, "; {notes}")?;
                }
                f.write_str(")")
            }
            Verdict::Refuted { by } => write!(f, "refuted: {}", grouped(by, &[])),
            Verdict::NotEstimable { names } => write!(f, "not estimable at {}", names.join(", ")),
        }
    }
}

/// Why a family cannot be judged.
///
/// # Examples
///
/// ```rust
/// use normscope_core::stats::verdict::{Family, FamilyError, judge};
/// let empty = Family::new("A beats B", 0.5, vec![]);
/// let e = judge(&empty).unwrap_err();
/// assert_eq!(e, FamilyError::NoComparisons("A beats B".into()));
/// assert_eq!(e.to_string(), "the family of \"A beats B\" has no comparisons");
/// ```
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FamilyError {
    /// The family has no comparisons.
    #[error("the family of {0:?} has no comparisons")]
    NoComparisons(String),
    /// `alpha` is not in `(0, 1)`.
    #[error("alpha {0} is not in (0, 1)")]
    BadAlpha(f64),
    /// The SESOI is not a positive finite number.
    #[error("the SESOI {0} is not positive and finite")]
    BadSesoi(f64),
    /// A comparison has no differences.
    #[error("comparison {0:?} has no differences")]
    EmptyComparison(String),
}

impl Family {
    /// A family at [`ALPHA`].
    pub fn new(claim: &str, sesoi: f64, comparisons: Vec<Comparison>) -> Family {
        Family {
            claim: claim.into(),
            alpha: ALPHA,
            sesoi,
            comparisons,
        }
    }

    /// The decision rule as one line for the ledger: alpha, the SESOI, the tests, the family's
    /// comparison names and how the verdict follows (module docs).
    pub fn rule(&self) -> String {
        let names: Vec<String> = self
            .comparisons
            .iter()
            .map(|c| match c.sesoi {
                Some(x) => format!("{} (SESOI {})", c.name, sig4(x)),
                None => c.name.clone(),
            })
            .collect();
        let m = names.len();
        let directional = self
            .comparisons
            .iter()
            .any(|c| c.claimed != Claimed::Equivalent);
        let equivalence = self
            .comparisons
            .iter()
            .any(|c| c.claimed == Claimed::Equivalent);
        let s = sig4(self.sesoi);
        let mut parts = vec![format!(
            "{:?} over {m} paired comparison{} ({}): median difference with its exact \
             distribution-free 95% CI; exact sign tests (censored or tied values count against \
             each test), each kind of test (two-sided, TOST, minimum-effect) Holm-adjusted \
             separately over the {m} at alpha = {} (each kind of decision's family-wise error \
             is at most alpha)",
            self.claim,
            if m == 1 { "" } else { "s" },
            names.join(", "),
            self.alpha
        )];
        if directional {
            parts.push(format!(
                "directional: two-sided test of median 0 significant on the claimed side = as \
                 claimed, on the other = opposite, either with the median within +-{s} = \
                 negligible (below the SESOI), else TOST (one-sided tests of median > -{s} \
                 and < +{s}, the larger p) significant = negligible"
            ));
        }
        if equivalence {
            parts.push(format!(
                "equivalence: TOST at +-{s} significant = as claimed, else the minimum-effect \
                 test (median beyond +-{s} on the data's side, p doubled) significant = opposite"
            ));
        }
        parts.push(
            "a comparison with at least half its differences unknown (both arms censored on \
             the same side) is not estimable and left out of Holm; all as claimed = supported; \
             some = conditional; none, all opposite or negligible = refuted; none estimable = \
             not estimable; else inconclusive"
                .into(),
        );
        parts.join("; ")
    }
}

/// Judges a family by the rules of the module docs: each comparison assessed, in order, and
/// the family's verdict.
pub fn judge(f: &Family) -> Result<(Vec<Assessed>, Verdict), FamilyError> {
    if f.comparisons.is_empty() {
        return Err(FamilyError::NoComparisons(f.claim.clone()));
    }
    if !(f.alpha > 0.0 && f.alpha < 1.0) {
        return Err(FamilyError::BadAlpha(f.alpha));
    }
    for s in std::iter::once(f.sesoi).chain(f.comparisons.iter().filter_map(|c| c.sesoi)) {
        if !(s > 0.0 && s.is_finite()) {
            return Err(FamilyError::BadSesoi(s));
        }
    }
    let mut raw = Vec::with_capacity(f.comparisons.len());
    for c in &f.comparisons {
        let s = c.sesoi.unwrap_or(f.sesoi);
        let ci = median_ci(&c.diffs).ok_or_else(|| FamilyError::EmptyComparison(c.name.clone()))?;
        let d = &c.diffs;
        let unknown = d
            .iter()
            .filter(|o| !o.lo().is_finite() && !o.hi().is_finite())
            .count();
        let estimable = 2 * unknown < d.len() && ci.estimate.is_finite();
        // The median's most favourable value on each side given the intervals: the median of
        // the upper (lower) ends. Below the SESOI needs even that within +-SESOI, so that a
        // censored end (whose representative is its finite bound) never makes an effect small.
        let small = median_of_ends(d, Obs::hi) < s && median_of_ends(d, Obs::lo) > -s;
        let up = p_greater(d, 0.0) < p_less(d, 0.0);
        let p_two = p_two_sided(d, 0.0);
        let p_eq = p_greater(d, -s).max(p_less(d, s));
        let p_beyond = (2.0 * p_greater(d, s).min(p_less(d, -s))).min(1.0);
        raw.push((ci, up, p_two, p_eq, p_beyond, unknown, estimable, s, small));
    }
    // Holm over the estimable comparisons only; the others are not tested (q NaN).
    let holm_of = |p: fn(&Raw) -> f64| -> Vec<f64> {
        let kept: Vec<f64> = raw.iter().filter(|r| r.6).map(p).collect();
        let mut q = holm::adjust(&kept).into_iter();
        raw.iter()
            .map(|r| {
                if r.6 {
                    q.next().expect("one q per kept p")
                } else {
                    f64::NAN
                }
            })
            .collect()
    };
    let q_two = holm_of(|r| r.2);
    let q_eq = holm_of(|r| r.3);
    let q_beyond = holm_of(|r| r.4);
    let assessed: Vec<Assessed> = f
        .comparisons
        .iter()
        .zip(raw)
        .enumerate()
        .map(
            |(i, (c, (ci, up, p_two, p_eq, p_beyond, unknown, estimable, s, small)))| {
                let directional = c.claimed != Claimed::Equivalent;
                let outcome = match c.claimed {
                    _ if !estimable => Outcome::NotEstimable,
                    _ if directional && q_two[i] < f.alpha && small => Outcome::BelowSesoi,
                    _ if directional && q_two[i] < f.alpha => {
                        if up == (c.claimed == Claimed::Increase) {
                            Outcome::AsClaimed
                        } else {
                            Outcome::Opposite
                        }
                    }
                    _ if directional && q_eq[i] < f.alpha => Outcome::Negligible,
                    Claimed::Equivalent if q_eq[i] < f.alpha => Outcome::AsClaimed,
                    Claimed::Equivalent if q_beyond[i] < f.alpha => Outcome::Opposite,
                    _ => Outcome::Inconclusive,
                };
                Assessed {
                    name: c.name.clone(),
                    claimed: c.claimed,
                    n: ci.n,
                    estimate: ci.estimate,
                    ci: (ci.lo, ci.hi),
                    coverage: ci.coverage,
                    p_two_sided: p_two,
                    q_two_sided: q_two[i],
                    p_equivalence: p_eq,
                    q_equivalence: q_eq[i],
                    p_beyond,
                    q_beyond: q_beyond[i],
                    outcome,
                    unknown,
                    sesoi: s,
                }
            },
        )
        .collect();
    let verdict = verdict_of(&assessed);
    Ok((assessed, verdict))
}

/// One comparison's numbers before Holm: interval, side, the three p-values, unknown
/// differences, whether it is estimable, its SESOI, whether it is below the SESOI.
type Raw = (
    super::median_ci::MedianCi,
    bool,
    f64,
    f64,
    f64,
    usize,
    bool,
    f64,
    bool,
);

/// The sample median ([`super::bootstrap::median`]) of one end of every observation (`end` is
/// [`Obs::lo`] or [`Obs::hi`]; infinite when a middle end is, NaN when they are infinite both
/// ways).
fn median_of_ends(d: &[Obs], end: fn(&Obs) -> f64) -> f64 {
    super::bootstrap::median(&d.iter().map(end).collect::<Vec<f64>>())
}

/// The family's verdict from its comparisons' outcomes (module docs).
fn verdict_of(assessed: &[Assessed]) -> Verdict {
    let all: Vec<(String, Outcome)> = assessed
        .iter()
        .map(|a| (a.name.clone(), a.outcome))
        .collect();
    if all.iter().all(|(_, o)| *o == Outcome::NotEstimable) {
        return Verdict::NotEstimable {
            names: all.into_iter().map(|(n, _)| n).collect(),
        };
    }
    let holds: Vec<String> = all
        .iter()
        .filter(|(_, o)| *o == Outcome::AsClaimed)
        .map(|(n, _)| n.clone())
        .collect();
    let refuting = all
        .iter()
        .filter(|(_, o)| {
            matches!(
                o,
                Outcome::Opposite | Outcome::Negligible | Outcome::BelowSesoi
            )
        })
        .count();
    if holds.len() == all.len() {
        Verdict::Supported { n: all.len() }
    } else if !holds.is_empty() {
        let others = all
            .into_iter()
            .filter(|(_, o)| *o != Outcome::AsClaimed)
            .collect();
        Verdict::Conditional { holds, others }
    } else if refuting == all.len() {
        Verdict::Refuted { by: all }
    } else {
        Verdict::Inconclusive { others: all }
    }
}

/// `x` to 4 significant digits, trailing zeros dropped (`0.9300` is `0.93`, `1.2104` is
/// `1.21`); scientific notation (`1.235e-5`) below 1e-4 or from 1e6 in magnitude; `inf`,
/// `-inf` and `NaN` as such.
pub fn sig4(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-4..1e6).contains(&a) {
        let s = format!("{x:.3e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        return format!("{}e{exp}", trim(mantissa));
    }
    let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
    trim(&format!("{x:.decimals$}"))
}

/// Drops trailing zeros after a decimal point, and the point if nothing is left after it.
fn trim(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::wilson;
    use super::*;
    use normscope_numeric::rng::Rng;
    use rand::{RngExt, SeedableRng};
    use rand_distr::{Distribution, Normal};
    use statrs::distribution::{ContinuousCDF, Normal as StdNormal};

    fn ex(v: &[f64]) -> Vec<Obs> {
        v.iter().map(|&x| Obs::exact(x).unwrap()).collect()
    }

    fn comp(name: &str, v: &[f64], claimed: Claimed) -> Comparison {
        Comparison {
            name: name.into(),
            diffs: ex(v),
            claimed,
            sesoi: None,
        }
    }

    /// `k` of ten differences positive (values 1..=k), the rest negative.
    fn k_of_ten(k: usize) -> Vec<f64> {
        (0..10)
            .map(|i| {
                if i < k {
                    1.0 + i as f64
                } else {
                    -1.0 - i as f64
                }
            })
            .collect()
    }

    #[test]
    fn hand_built_families_reach_every_verdict() {
        use Claimed::*;
        // Supported: ten of ten positive in both comparisons, p = 2/1024 each, Holm 4/1024.
        let f = Family::new(
            "A beats B",
            0.5,
            vec![
                comp("d=64", &k_of_ten(10), Increase),
                comp("d=128", &k_of_ten(10), Increase),
            ],
        );
        let (a, v) = judge(&f).unwrap();
        assert_eq!(v, Verdict::Supported { n: 2 });
        assert!((a[0].p_two_sided - 2.0 / 1024.0).abs() < 1e-15);
        assert!((a[0].q_two_sided - 4.0 / 1024.0).abs() < 1e-15);
        assert_eq!(v.to_string(), "supported (holds in 2 of 2)");
        // Conditional: one of two holds, the other is an even split of large differences.
        let f = Family::new(
            "A beats B",
            0.5,
            vec![
                comp("d=64", &k_of_ten(10), Increase),
                comp("d=128", &k_of_ten(5), Increase),
            ],
        );
        let (a, v) = judge(&f).unwrap();
        assert_eq!(a[1].outcome, Outcome::Inconclusive);
        assert_eq!(
            v.to_string(),
            "conditional: holds in 1 of 2 (at d=64); inconclusive at d=128"
        );
        // Refuted, opposite: every difference negative for an Increase claim.
        let f = Family::new("A beats B", 0.5, vec![comp("d=64", &k_of_ten(0), Increase)]);
        let (a, v) = judge(&f).unwrap();
        assert_eq!(a[0].outcome, Outcome::Opposite);
        assert_eq!(v.to_string(), "refuted: opposite at d=64");
        // ... and the same data are as claimed for a Decrease claim.
        let f = Family::new("A loses", 0.5, vec![comp("d=64", &k_of_ten(0), Decrease)]);
        assert!(matches!(judge(&f).unwrap().1, Verdict::Supported { .. }));
        // Refuted, negligible: tiny differences of both signs, SESOI 1: the two-sided p is 1,
        // TOST p = max(P(K >= 10), P(K >= 10)) = 1/1024.
        let tiny: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 0.01 } else { -0.02 })
            .collect();
        let f = Family::new("A beats B", 1.0, vec![comp("d=64", &tiny, Increase)]);
        let (a, v) = judge(&f).unwrap();
        assert!((a[0].p_two_sided - 1.0).abs() < 1e-15);
        assert!((a[0].p_equivalence - 1.0 / 1024.0).abs() < 1e-15);
        assert_eq!(a[0].outcome, Outcome::Negligible);
        assert_eq!(v.to_string(), "refuted: negligible at d=64");
        // Inconclusive: 7 of 10 positive (p = 0.34375), differences too large for TOST.
        let f = Family::new("A beats B", 0.5, vec![comp("d=64", &k_of_ten(7), Increase)]);
        let (a, v) = judge(&f).unwrap();
        assert!((a[0].p_two_sided - 0.34375).abs() < 1e-12);
        assert_eq!(
            v,
            Verdict::Inconclusive {
                others: vec![("d=64".into(), Outcome::Inconclusive)]
            }
        );
        assert_eq!(v.to_string(), "inconclusive (holds in 0 of 1)");
        // Inconclusive, naming what refutes: one opposite, one not significant.
        let f = Family::new(
            "A beats B",
            0.5,
            vec![
                comp("d=64", &k_of_ten(0), Increase),
                comp("d=128", &k_of_ten(6), Increase),
            ],
        );
        let (_, v) = judge(&f).unwrap();
        assert_eq!(
            v.to_string(),
            "inconclusive (holds in 0 of 2; opposite at d=64)"
        );
        // Refuted by a mix: opposite at one, negligible at the other.
        let f = Family::new(
            "A beats B",
            1.0,
            vec![
                comp("d=64", &k_of_ten(0), Increase),
                comp("d=128", &tiny, Increase),
            ],
        );
        assert_eq!(
            judge(&f).unwrap().1.to_string(),
            "refuted: opposite at d=64; negligible at d=128"
        );
    }

    #[test]
    fn equivalence_claims() {
        use Claimed::Equivalent;
        let tiny: Vec<f64> = (0..10).map(|i| 0.01 * i as f64 - 0.04).collect();
        let big: Vec<f64> = (0..10).map(|i| 2.0 + 0.1 * i as f64).collect();
        let spread: Vec<f64> = (0..10).map(|i| 0.5 * i as f64 - 2.0).collect();
        let f = Family::new(
            "no difference",
            1.0,
            vec![
                comp("tiny", &tiny, Equivalent),
                comp("big", &big, Equivalent),
                comp("spread", &spread, Equivalent),
            ],
        );
        let (a, v) = judge(&f).unwrap();
        let outcomes: Vec<Outcome> = a.iter().map(|x| x.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::AsClaimed, Outcome::Opposite, Outcome::Inconclusive]
        );
        // big: all ten beyond +1, p = 2 * 1/1024 (side chosen by the data), Holm x3 as smallest.
        assert!((a[1].p_beyond - 2.0 / 1024.0).abs() < 1e-15);
        assert!((a[1].q_beyond - 6.0 / 1024.0).abs() < 1e-15);
        assert_eq!(a[1].outcome_text(), "differs by more than the SESOI");
        assert_eq!(
            v.to_string(),
            "conditional: holds in 1 of 3 (at tiny); opposite at big; inconclusive at spread"
        );
    }

    #[test]
    fn holm_over_three_at_ten_seeds() {
        // p = 2/1024 (10 of 10), 22/1024 (9 of 10), 22/1024: Holm gives 6/1024, 44/1024,
        // 44/1024, all below 0.05: supported.
        let fam = |ks: [usize; 3]| {
            Family::new(
                "A beats B",
                0.1,
                ks.iter()
                    .enumerate()
                    .map(|(i, &k)| comp(&format!("c{i}"), &k_of_ten(k), Claimed::Increase))
                    .collect(),
            )
        };
        let (a, v) = judge(&fam([10, 9, 9])).unwrap();
        assert!(matches!(v, Verdict::Supported { .. }));
        assert!((a[1].q_two_sided - 44.0 / 1024.0).abs() < 1e-15);
        // Three at 9 of 10: the smallest needs 3 x 22/1024 = 0.064 > 0.05: nothing holds.
        let (_, v) = judge(&fam([9, 9, 9])).unwrap();
        assert_eq!(v.to_string(), "inconclusive (holds in 0 of 3)");
        // 10, 9 and 8 of 10: the third's p = 112/1024 = 0.109: conditional.
        let (_, v) = judge(&fam([10, 9, 8])).unwrap();
        assert_eq!(
            v.to_string(),
            "conditional: holds in 2 of 3 (at c0, c1); inconclusive at c2"
        );
    }

    #[test]
    fn ledger_text_and_rule() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let f = Family::new(
            "wider is better",
            0.25,
            vec![comp("width 2x", &v, Claimed::Increase)],
        );
        let (a, _) = judge(&f).unwrap();
        // Median 5.5, [x_(2), x_(9)] = [2, 9], q = p = 2/1024 = 0.001953125.
        assert_eq!(
            a[0].to_string(),
            "+5.5 [2, 9] (n = 10, q = 0.001953): as claimed"
        );
        let rule = f.rule();
        eprintln!("rule: {rule}");
        for needle in [
            "alpha = 0.05",
            "0.25",
            "sign test",
            "TOST",
            "Holm",
            "width 2x",
            "wider is better",
        ] {
            assert!(rule.contains(needle), "{needle}: {rule}");
        }
        assert!(!rule.contains('\n'));
        assert_eq!(sig4(0.9300), "0.93");
        assert_eq!(sig4(1.2104), "1.21");
        assert_eq!(sig4(-0.0123456), "-0.01235");
        assert_eq!(sig4(123456.0), "123456");
        assert_eq!(sig4(1.23456e-5), "1.235e-5");
        assert_eq!(sig4(f64::NEG_INFINITY), "-inf");
        assert_eq!(sig4(0.0), "0");
    }

    #[test]
    fn a_significant_effect_below_the_sesoi_is_negligible() {
        // Ten of ten positive (q = 2/1024) with median 0.0345, below the SESOI 0.05: neither
        // as claimed nor opposite, whichever side was claimed; with SESOI 0.03 it is claimed.
        let v: Vec<f64> = (1..=10).map(|i| 0.03 + 0.001 * i as f64).collect();
        for claimed in [Claimed::Increase, Claimed::Decrease] {
            let (a, verdict) = judge(&Family::new(
                "A beats B",
                0.05,
                vec![comp("lm", &v, claimed)],
            ))
            .unwrap();
            assert_eq!(a[0].outcome, Outcome::BelowSesoi);
            assert!((a[0].deciding_q() - 2.0 / 1024.0).abs() < 1e-15);
            assert_eq!(
                a[0].to_string(),
                "+0.0355 [0.032, 0.039] (n = 10, q = 0.001953): negligible (significant, below the SESOI of 0.05)"
            );
            assert_eq!(
                verdict.to_string(),
                "refuted: negligible (significant, below the SESOI) at lm"
            );
        }
        let (a, _) = judge(&Family::new(
            "A beats B",
            0.03,
            vec![comp("lm", &v, Claimed::Increase)],
        ))
        .unwrap();
        assert_eq!(a[0].outcome, Outcome::AsClaimed);
    }

    #[test]
    fn comparisons_without_a_bounded_median_are_not_estimable_and_leave_holm() {
        let unknown = Obs::between(f64::NEG_INFINITY, f64::INFINITY).unwrap();
        // Both arms censored below in every seed: [-inf, inf] ten times.
        let gone = Comparison {
            name: "24 layers".into(),
            diffs: vec![unknown; 10],
            claimed: Claimed::Increase,
            sesoi: None,
        };
        // Five of ten unknown: still not estimable (half); four of ten: estimable.
        let mut half = ex(&k_of_ten(10));
        half[..5].fill(unknown);
        let mut four = ex(&k_of_ten(10));
        four[..4].fill(unknown);
        let fam = Family::new(
            "A beats B",
            0.5,
            vec![
                comp("6 layers", &k_of_ten(10), Claimed::Increase),
                gone.clone(),
                Comparison {
                    name: "half".into(),
                    diffs: half,
                    claimed: Claimed::Increase,
                    sesoi: None,
                },
            ],
        );
        let (a, v) = judge(&fam).unwrap();
        assert_eq!(a[1].outcome, Outcome::NotEstimable);
        assert_eq!(a[2].outcome, Outcome::NotEstimable);
        assert_eq!(a[1].unknown, 10);
        // Holm over the one estimable comparison: q = p = 2/1024, not 3 x.
        assert!((a[0].q_two_sided - 2.0 / 1024.0).abs() < 1e-15);
        assert!(a[1].deciding_q().is_nan());
        let text = a[1].to_string();
        assert_eq!(
            text,
            "not estimable (10 of 10 paired differences unknown: both arms censored on the same side)"
        );
        assert!(!text.contains("NaN") && !text.contains("inf"));
        assert_eq!(
            v.to_string(),
            "conditional: holds in 1 of 3 (at 6 layers); not estimable at 24 layers, half"
        );
        let alone = judge(&Family::new("A beats B", 0.5, vec![gone])).unwrap().1;
        assert_eq!(alone.to_string(), "not estimable at 24 layers");
        let c = Comparison {
            name: "four".into(),
            diffs: four,
            claimed: Claimed::Increase,
            sesoi: None,
        };
        let (a, _) = judge(&Family::new("A beats B", 0.5, vec![c])).unwrap();
        assert_ne!(a[0].outcome, Outcome::NotEstimable);
        // An unbounded interval end is printed in words.
        assert!(a[0].to_string().contains("unbounded"), "{}", a[0]);
    }

    #[test]
    fn bad_families_are_errors() {
        let c = comp("x", &[1.0], Claimed::Increase);
        assert!(matches!(
            judge(&Family::new("c", 1.0, vec![])),
            Err(FamilyError::NoComparisons(_))
        ));
        assert!(matches!(
            judge(&Family::new("c", 0.0, vec![c.clone()])),
            Err(FamilyError::BadSesoi(_))
        ));
        assert!(matches!(
            judge(&Family::new("c", f64::NAN, vec![c.clone()])),
            Err(FamilyError::BadSesoi(_))
        ));
        let mut f = Family::new("c", 1.0, vec![c]);
        f.alpha = 1.0;
        assert!(matches!(judge(&f), Err(FamilyError::BadAlpha(_))));
        let empty = Comparison {
            name: "e".into(),
            diffs: vec![],
            claimed: Claimed::Increase,
            sesoi: None,
        };
        assert!(matches!(
            judge(&Family::new("c", 1.0, vec![empty])),
            Err(FamilyError::EmptyComparison(_))
        ));
    }

    /// `P(K >= k)` for `K ~ Binomial(n, q)`, summed from exact integer binomial coefficients:
    /// the reference for the simulated rates.
    fn binom_upper(k: u64, n: u64, q: f64) -> f64 {
        let mut c: u128 = 1;
        let mut sum = 0.0;
        for i in 0..=n {
            if i >= k {
                sum += c as f64 * q.powi(i as i32) * (1.0 - q).powi((n - i) as i32);
            }
            c = c * (n - i) as u128 / (i + 1) as u128;
        }
        sum
    }

    fn phi(x: f64) -> f64 {
        StdNormal::standard().cdf(x)
    }

    /// Verdicts of `reps` seeded single-comparison families of `n` differences `mu + N(0, 1)`,
    /// claimed to increase, with the given SESOI: counts of "supported" and of "refuted:
    /// negligible" (with one comparison these are its outcomes as claimed and negligible).
    fn simulate(seed: u64, reps: u64, n: usize, mu: f64, sesoi: f64) -> (u64, u64) {
        let mut rng = Rng::seed_from_u64(seed);
        let noise = Normal::new(mu, 1.0).unwrap();
        let (mut supported, mut negligible) = (0, 0);
        for _ in 0..reps {
            let v: Vec<f64> = (0..n).map(|_| noise.sample(&mut rng)).collect();
            let f = Family::new("sim", sesoi, vec![comp("c", &v, Claimed::Increase)]);
            let (a, verdict) = judge(&f).unwrap();
            match (a[0].outcome, &verdict) {
                (Outcome::AsClaimed, Verdict::Supported { .. }) => supported += 1,
                (Outcome::Negligible, Verdict::Refuted { .. }) => negligible += 1,
                (Outcome::AsClaimed | Outcome::Negligible, _) => panic!("{verdict}"),
                _ => {}
            }
        }
        (supported, negligible)
    }

    /// The seeded rate's Wilson 95% interval contains the exact rate.
    fn agrees(what: &str, k: u64, reps: u64, exact: f64) -> (f64, f64) {
        let (lo, hi) = wilson::interval(k, reps);
        eprintln!(
            "{what}: {k} / {reps} = {:.4}, Wilson [{lo:.4}, {hi:.4}], exact {exact:.4}",
            k as f64 / reps as f64
        );
        assert!(
            lo <= exact && exact <= hi,
            "{what}: {k} / {reps}, [{lo}, {hi}] against {exact}"
        );
        (lo, hi)
    }

    #[test]
    fn calibration_under_the_null() {
        // A true median of 0: "supported" (an Increase claim) needs the two-sided test
        // significant on the positive side, at n = 10 9 or more of 10 positive (2 P(K >= 9) =
        // 0.021 < 0.05, 8 gives 0.109), at n = 20 15 or more (0.041; 14 gives 0.115). Exact
        // rates 11/1024 = 0.0107 and P(K >= 15) = 0.0207, both at most alpha/2.
        let reps = 2000;
        for (n, k, seed) in [(10usize, 9u64, 41u64), (20, 15, 42)] {
            // A SESOI far below the noise, so that "as claimed" is the sign test's decision
            // alone (a median within +-SESOI would be negligible, which only lowers the rate).
            let (supported, _) = simulate(seed, reps, n, 0.0, 1e-9);
            let exact = binom_upper(k, n as u64, 0.5);
            let (lo, hi) = agrees(&format!("null, n = {n}: supported"), supported, reps, exact);
            // No sign of exceeding alpha/2, and clearly below alpha (2000 families cannot
            // resolve 0.0207 from 0.025 at n = 20; the exact rate above is the sharper check).
            assert!(lo <= ALPHA / 2.0 && hi < ALPHA, "[{lo}, {hi}]");
        }
    }

    #[test]
    fn calibration_under_a_large_effect() {
        // A true median of 2 noise SDs: each difference is positive with probability Phi(2) =
        // 0.977, so "supported" has the exact rate P(K >= 9 | 10, Phi(2)) = 0.979 at n = 10
        // and P(K >= 15 | 20, Phi(2)) = 0.99999 at n = 20.
        let reps = 2000;
        for (n, k, seed) in [(10usize, 9u64, 43u64), (20, 15, 44)] {
            let (supported, _) = simulate(seed, reps, n, 2.0, 0.5);
            let exact = binom_upper(k, n as u64, phi(2.0));
            let (lo, _) = agrees(&format!("2 SD, n = {n}: supported"), supported, reps, exact);
            assert!(lo > 0.95, "n = {n}: {lo}");
        }
    }

    #[test]
    fn calibration_of_negligible() {
        // A true median of 0 with SESOI = 1 noise SD at n = 20: "refuted (negligible)" needs the
        // two-sided test not significant (6 to 14 positive) and TOST significant (at least 15
        // above -1 and 15 below +1, as P(K >= 15) = 0.021 < 0.05 and 14 gives 0.058). Its exact
        // probability sums the multinomial law of the counts below -1, in (-1, 0), in (0, 1)
        // and above 1 (probabilities Phi(-1), 1/2 - Phi(-1), the same, Phi(-1)): 0.807. The
        // equivalence test has to be powered for this to be large; a rate below one half would
        // mean it is not.
        let n = 20u64;
        let (t, m) = (phi(-1.0), 0.5 - phi(-1.0));
        let fact = |k: u64| (1..=k).map(|i| i as f64).product::<f64>();
        let mut exact = 0.0;
        for below in 0..=5 {
            for above in 0..=5 {
                for neg in 0..=(n - below - above) {
                    let pos_small = n - below - above - neg;
                    let positives = pos_small + above;
                    if !(6..=14).contains(&positives) {
                        continue;
                    }
                    exact += fact(n) / (fact(below) * fact(above) * fact(neg) * fact(pos_small))
                        * t.powi((below + above) as i32)
                        * m.powi((neg + pos_small) as i32);
                }
            }
        }
        assert!((exact - 0.8074).abs() < 1e-4, "{exact}");
        let reps = 2000;
        let (_, refuted) = simulate(45, reps, n as usize, 0.0, 1.0);
        let (lo, _) = agrees(
            "null, SESOI 1 SD, n = 20: refuted (negligible)",
            refuted,
            reps,
            exact,
        );
        assert!(lo > 0.5);
        // At n = 10 TOST needs 9 of 10 on each side (P(K >= 9) = 0.011; 8 gives 0.055), which
        // happens far less often: reported, and bounded by the exact value's own Wilson check.
        let mut exact10 = 0.0;
        let n = 10u64;
        for below in 0..=1 {
            for above in 0..=1 {
                for neg in 0..=(n - below - above) {
                    let pos_small = n - below - above - neg;
                    let positives = pos_small + above;
                    if !(2..=8).contains(&positives) {
                        continue;
                    }
                    exact10 += fact(n) / (fact(below) * fact(above) * fact(neg) * fact(pos_small))
                        * t.powi((below + above) as i32)
                        * m.powi((neg + pos_small) as i32);
                }
            }
        }
        let (_, refuted) = simulate(46, reps, n as usize, 0.0, 1.0);
        agrees(
            "null, SESOI 1 SD, n = 10: refuted (negligible)",
            refuted,
            reps,
            exact10,
        );
    }

    #[test]
    fn straddling_intervals_only_lose_power() {
        // Random families (three comparisons, n = 10 or 20, effects of every size) judged on
        // exact differences, then again with some differences replaced by intervals that
        // contain them and straddle zero. Coarsening can only raise p-values, so: every p and q
        // rises or stays; a censored "as claimed" or "opposite" was so with the exact data; an
        // exact "inconclusive" verdict never becomes supported or refuted; a censored supported
        // was supported; a censored refuted was refuted, unless an exact comparison was both
        // significant (as claimed) and within the SESOI, where censoring can hide the first and
        // leave the second (the rules read the two-sided test first).
        let mut rng = Rng::seed_from_u64(47);
        let (mut lost, mut same) = (0, 0);
        for _ in 0..600 {
            let n = if rng.random_bool(0.5) { 10 } else { 20 };
            let sesoi = rng.random_range(0.2..1.5);
            let mut exact = Vec::new();
            let mut cens = Vec::new();
            for c in 0..3 {
                let mu = rng.random_range(-3.0..3.0);
                let claimed = [Claimed::Increase, Claimed::Decrease, Claimed::Equivalent]
                    [rng.random_range(0..3)];
                let noise = Normal::new(mu, 1.0).unwrap();
                let v: Vec<f64> = (0..n).map(|_| noise.sample(&mut rng)).collect();
                let w: Vec<Obs> = v
                    .iter()
                    .map(|&x| {
                        if rng.random_bool(0.3) {
                            let l = x.abs() + rng.random_range(0.0..1.0);
                            let h = x.abs() + rng.random_range(0.0..1.0);
                            Obs::between(-l, h).unwrap()
                        } else {
                            Obs::exact(x).unwrap()
                        }
                    })
                    .collect();
                exact.push(comp(&format!("c{c}"), &v, claimed));
                cens.push(Comparison {
                    name: format!("c{c}"),
                    diffs: w,
                    claimed,
                    sesoi: None,
                });
            }
            let (ae, ve) = judge(&Family::new("sim", sesoi, exact)).unwrap();
            let (ac, vc) = judge(&Family::new("sim", sesoi, cens)).unwrap();
            for (e, c) in ae.iter().zip(&ac) {
                for (pe, pc) in [
                    (e.p_two_sided, c.p_two_sided),
                    (e.q_two_sided, c.q_two_sided),
                    (e.p_equivalence, c.p_equivalence),
                    (e.q_equivalence, c.q_equivalence),
                    (e.p_beyond, c.p_beyond),
                    (e.q_beyond, c.q_beyond),
                ] {
                    assert!(pc >= pe, "{pc} < {pe}");
                }
                if c.claimed != Claimed::Equivalent
                    && matches!(c.outcome, Outcome::AsClaimed | Outcome::Opposite)
                {
                    assert_eq!(c.outcome, e.outcome);
                }
                if c.claimed == Claimed::Equivalent && c.outcome != Outcome::Inconclusive {
                    assert_eq!(c.outcome, e.outcome);
                }
            }
            if matches!(ve, Verdict::Inconclusive { .. }) {
                assert!(matches!(vc, Verdict::Inconclusive { .. }), "{ve} -> {vc}");
            }
            if matches!(vc, Verdict::Supported { .. }) {
                assert!(matches!(ve, Verdict::Supported { .. }));
            }
            if matches!(vc, Verdict::Refuted { .. }) && !matches!(ve, Verdict::Refuted { .. }) {
                assert!(
                    ae.iter()
                        .any(|e| e.outcome == Outcome::AsClaimed && e.q_equivalence < ALPHA),
                    "{ve} -> {vc}"
                );
            }
            if ve == vc { same += 1 } else { lost += 1 }
        }
        eprintln!("censoring: {same} verdicts unchanged, {lost} changed");
        assert!(lost > 0 && same > 0);
    }

    #[test]
    fn calibration_of_a_family_of_three() {
        // Three independent comparisons at n = 10, Holm over the three. "Supported" needs all
        // three as claimed: every one 9 or 10 of 10 positive and at least one 10 of 10 (the
        // smallest p times 3 must be below 0.05: 3 x 22/1024 = 0.064 is not, 3 x 2/1024 is).
        // Exact rates: with P = P(K >= 9) and E = P(K = 9), P^3 - E^3; under the null 1.2e-6,
        // at 2 noise SDs (Phi(2) per seed) 0.933.
        let reps = 2000;
        for (mu, seed) in [(0.0, 48u64), (2.0, 49)] {
            let q = phi(mu);
            let (p9, e9) = (binom_upper(9, 10, q), 10.0 * q.powi(9) * (1.0 - q));
            let exact = p9.powi(3) - e9.powi(3);
            let mut rng = Rng::seed_from_u64(seed);
            let noise = Normal::new(mu, 1.0).unwrap();
            let mut supported = 0;
            for _ in 0..reps {
                let comps = (0..3)
                    .map(|c| {
                        let v: Vec<f64> = (0..10).map(|_| noise.sample(&mut rng)).collect();
                        comp(&format!("c{c}"), &v, Claimed::Increase)
                    })
                    .collect();
                if judge(&Family::new("sim", 0.5, comps)).unwrap().1
                    == (Verdict::Supported { n: 3 })
                {
                    supported += 1;
                }
            }
            agrees(
                &format!("three at n = 10, {mu} SD: supported"),
                supported,
                reps,
                exact,
            );
        }
    }
}
