//! The maximum stable learning rate of one (cell, seed), found by a search on a log scale whose
//! bracket widens until it holds the boundary (docs/training.md, "Statistics, fixed before the data": "the maximum stable lr
//! found per seed by log-bisection with widening brackets, not a fixed grid whose top censors
//! the stable presets").
//!
//! A learning rate is *stable* for a (cell, seed) when that run is trained or still descending
//! ([`super::classify`]). Stability is assumed monotone in the learning rate (stable below the
//! boundary, failing above it); where it is not, the answer is one point of the boundary.
//!
//! **The search** ([`Plan`]): train at `start`. If stable, multiply by `factor` until a run
//! fails or `max` is reached stable; if not, divide by `factor` until a run is stable or `min`
//! fails. The last stable and first failing rates bracket the boundary, and `halvings`
//! bisections of the bracket's logarithm follow, each one run at the geometric midpoint:
//!
//! ```text
//! resolution (ratio of the final bracket's ends) = factor^(2^-halvings)
//! ```
//!
//! **Censoring** is reported, never hidden: stable at `max` is censored above (the maximum
//! stable rate is at least `max`), failing at `min` is censored below (it is below `min`).
//! The result is an interval observation of the maximum stable rate `m` ([`Search::interval`]):
//! the half-open `[stable, unstable)` (stable at `stable`, so `m >= stable`; failed at
//! `unstable`, so `m < unstable`), `[max, inf)` or `(0, min)`, which the statistics model as
//! such ([`crate::stats::obs::Obs::half_open`]; interval-censored likelihood, conservative
//! sign tests in which touching brackets, one arm stable where the other failed, are strict).
//!
//! `max` and `min` are hard caps stated in every analysis's configuration; `start` only
//! changes how many runs a search takes (given monotonicity, not its answer).

use serde::{Deserialize, Serialize};

/// How one search runs (module docs).
///
/// # Examples
///
/// Widening by 4 with one bisection: the final bracket's ends are `4^(1/2) = 2` apart.
///
/// ```rust
/// use normscope_core::train::search::Plan;
///
/// let plan = Plan { start: 1.0, factor: 4.0, halvings: 1, min: 1.0 / 64.0, max: 64.0 };
/// assert!(plan.check().is_ok());
/// assert_eq!(plan.resolution(), 2.0);
/// let bad = Plan { factor: 1.0, ..plan };
/// assert!(bad.check().unwrap_err().to_string().contains("search.factor"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The first learning rate tried.
    pub start: f64,
    /// The widening factor, `> 1`.
    pub factor: f64,
    /// Bisections of the bracket's logarithm once it is found.
    pub halvings: u32,
    /// The smallest learning rate tried: failing there is censored below.
    pub min: f64,
    /// The largest learning rate tried: stable there is censored above.
    pub max: f64,
}

impl Plan {
    /// Checks the plan, naming the field (`search.start`, ...: an analysis's configuration
    /// holds its plan under the key `search`) and what it accepts.
    pub fn check(&self) -> crate::Result<()> {
        let bad = |k: &'static str, v: f64, what: &str| Err(crate::Error::invalid(k, v, what));
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if !pos(self.min) {
            return bad("search.min", self.min, "a finite learning rate > 0");
        }
        if !(pos(self.max) && self.max >= self.min) {
            return bad("search.max", self.max, "a finite learning rate >= min");
        }
        if !(pos(self.start) && self.start >= self.min && self.start <= self.max) {
            return bad(
                "search.start",
                self.start,
                "a learning rate from min to max",
            );
        }
        if !(self.factor.is_finite() && self.factor > 1.0) {
            return bad("search.factor", self.factor, "a finite number > 1");
        }
        if self.halvings > 10 {
            return bad(
                "search.halvings",
                self.halvings as f64,
                "an integer from 0 to 10",
            );
        }
        Ok(())
    }

    /// The ratio of a bracketed result's ends: `factor^(2^-halvings)`.
    pub fn resolution(&self) -> f64 {
        self.factor.powf(0.5f64.powi(self.halvings as i32))
    }
}

/// Where a search's answer lies.
///
/// # Examples
///
/// A run stable everywhere is censored above: the search widens 1, 4, 16, 64 and stops at the
/// plan's `max`.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::search::{self, Censor, Plan};
///
/// let plan = Plan { start: 1.0, factor: 4.0, halvings: 1, min: 1.0 / 64.0, max: 64.0 };
/// let found = search::run(&plan, |_| Ok(true))?;
/// assert_eq!(found.censored, Censor::Above);
/// assert_eq!(found.interval(), (64.0, f64::INFINITY));
/// assert_eq!(Censor::Above.name(), "above");
/// let never = search::run(&plan, |_| Ok(false))?;
/// assert_eq!((never.censored, never.interval()), (Censor::Below, (0.0, 1.0 / 64.0)));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Censor {
    /// Bracketed: between the largest stable and the smallest failing rate tried.
    None,
    /// Failing even at the plan's `min`: the maximum stable rate is below it.
    Below,
    /// Stable even at the plan's `max`: the maximum stable rate is at least it.
    Above,
}

impl Censor {
    /// `none`, `below`, `above`.
    pub fn name(self) -> &'static str {
        match self {
            Censor::None => "none",
            Censor::Below => "below",
            Censor::Above => "above",
        }
    }
}

/// The result of one search: the largest stable and smallest failing rates it tried, and
/// every rate it tried in order with whether it was stable.
///
/// # Examples
///
/// Against a boundary at 5 (stable iff lr <= 5): 1 and 4 are stable, 16 fails, and one
/// bisection at `sqrt(4 x 16) = 8` fails, so the maximum stable rate lies in [4, 8).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::search::{self, Censor, Plan, Search};
///
/// let plan = Plan { start: 1.0, factor: 4.0, halvings: 1, min: 1.0 / 64.0, max: 64.0 };
/// let found: Search = search::run(&plan, |lr| Ok(lr <= 5.0))?;
/// assert_eq!(found.tried, [(1.0, true), (4.0, true), (16.0, false), (8.0, false)]);
/// assert_eq!(found.censored, Censor::None);
/// assert_eq!(found.interval(), (4.0, 8.0));
/// assert_eq!(found.point(), 32f64.sqrt());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The largest stable rate tried (`None`: every rate tried failed).
    pub stable: Option<f64>,
    /// The smallest failing rate tried (`None`: every rate tried was stable).
    pub unstable: Option<f64>,
    /// Where the answer lies.
    pub censored: Censor,
    /// `(lr, stable)` of every run, in the order tried.
    pub tried: Vec<(f64, bool)>,
}

impl Search {
    /// The ends `(lo, hi)` of the interval holding the maximum stable rate: `[stable,
    /// unstable)` when bracketed (half-open: stable at `stable`, failed at `unstable`), `[max,
    /// inf)` when censored above, `(0, min)` (with `lo = 0`) when censored below (module docs).
    pub fn interval(&self) -> (f64, f64) {
        match self.censored {
            Censor::None => (
                self.stable.expect("a bracketed search has a stable rate"),
                self.unstable
                    .expect("a bracketed search has a failing rate"),
            ),
            Censor::Above => (
                self.stable.expect("censored above: stable at max"),
                f64::INFINITY,
            ),
            Censor::Below => (0.0, self.unstable.expect("censored below: failing at min")),
        }
    }

    /// A representative value: the geometric midpoint when bracketed, else the finite end.
    pub fn point(&self) -> f64 {
        let (lo, hi) = self.interval();
        match self.censored {
            Censor::None => (lo * hi).sqrt(),
            Censor::Above => lo,
            Censor::Below => hi,
        }
    }
}

/// Runs the search of `plan` with `stable(lr)` training one run and saying whether it is
/// stable (module docs). `stable` is called in the order the search needs, one run at a time;
/// an error stops the search.
pub fn run(
    plan: &Plan,
    mut stable: impl FnMut(f64) -> crate::Result<bool>,
) -> crate::Result<Search> {
    let mut tried = Vec::new();
    let mut probe = |lr: f64, tried: &mut Vec<(f64, bool)>| -> crate::Result<bool> {
        let s = stable(lr)?;
        tried.push((lr, s));
        Ok(s)
    };
    let (mut lo, mut hi);
    if probe(plan.start, &mut tried)? {
        lo = plan.start;
        loop {
            if lo >= plan.max {
                return Ok(Search {
                    stable: Some(lo),
                    unstable: None,
                    censored: Censor::Above,
                    tried,
                });
            }
            let next = (lo * plan.factor).min(plan.max);
            if probe(next, &mut tried)? {
                lo = next;
            } else {
                hi = next;
                break;
            }
        }
    } else {
        hi = plan.start;
        loop {
            if hi <= plan.min {
                return Ok(Search {
                    stable: None,
                    unstable: Some(hi),
                    censored: Censor::Below,
                    tried,
                });
            }
            let next = (hi / plan.factor).max(plan.min);
            if probe(next, &mut tried)? {
                lo = next;
                break;
            } else {
                hi = next;
            }
        }
    }
    for _ in 0..plan.halvings {
        let mid = (lo * hi).sqrt();
        if probe(mid, &mut tried)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Search {
        stable: Some(lo),
        unstable: Some(hi),
        censored: Censor::None,
        tried,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            start: 1e-2,
            factor: 4.0,
            halvings: 2,
            min: 1e-4,
            max: 1.0,
        }
    }

    /// A search against a known boundary `b` (stable iff lr <= b).
    fn against(b: f64) -> Search {
        run(&plan(), |lr| Ok(lr <= b)).unwrap()
    }

    #[test]
    fn brackets_a_known_boundary_to_the_stated_resolution() {
        for b in [2e-4, 7e-4, 3e-3, 0.0099, 0.011, 0.05, 0.3, 0.99] {
            let s = against(b);
            assert_eq!(s.censored, Censor::None, "{b}");
            let (lo, hi) = s.interval();
            assert!(lo <= b && b < hi, "{b}: [{lo}, {hi}]");
            let ratio = hi / lo;
            assert!(
                (ratio / plan().resolution() - 1.0).abs() < 1e-12 || hi >= plan().max,
                "{b}: ratio {ratio}"
            );
            // Every run agrees with the oracle, and widening needed at most the runs to reach
            // the boundary plus the halvings.
            assert!(s.tried.iter().all(|(lr, st)| (*lr <= b) == *st));
        }
        assert!((plan().resolution() - 2f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn caps_are_censored_not_hidden() {
        let above = against(5.0);
        assert_eq!(above.censored, Censor::Above);
        assert_eq!(above.interval(), (1.0, f64::INFINITY));
        // It widened 1e-2 -> 4e-2 -> 0.16 -> 0.64 -> 1 (capped): five runs.
        assert_eq!(above.tried.len(), 5);
        let below = against(1e-5);
        assert_eq!(below.censored, Censor::Below);
        assert_eq!(below.interval(), (0.0, 1e-4));
        assert!(below.tried.iter().all(|t| !t.1));
        // A boundary exactly at the cap is stable there: censored above.
        assert_eq!(against(1.0).censored, Censor::Above);
    }

    #[test]
    fn bad_plans_name_the_field() {
        let p = plan();
        for (bad, field) in [
            (Plan { min: 0.0, ..p }, "search.min"),
            (Plan { max: 1e-5, ..p }, "search.max"),
            (Plan { start: 2.0, ..p }, "search.start"),
            (Plan { factor: 1.0, ..p }, "search.factor"),
            (Plan { halvings: 11, ..p }, "search.halvings"),
        ] {
            let e = bad.check().unwrap_err().to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
        p.check().unwrap();
    }
}
