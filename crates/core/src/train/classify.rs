//! What became of a training run, read from its evaluation curve: **diverged**, **collapsed**
//! (at or above the context-free loss and not coming down), **slow** (still coming down, but
//! not yet off the plateau), **still descending** (off the plateau, still falling), or
//! **trained**.
//!
//! Why a classifier (docs/training.md, "Statistics, fixed before the data"): a run that ends near the context-free loss `C` is
//! not necessarily a failure. At d = 16 and 200 updates, slow training at a small learning rate
//! looked like Post-LN's collapse; at L = 48, lr 3e-4, every such "failure" recovered by 1000
//! updates. A collapsed run sits on the plateau (docs/training.md, "Designs that fit a small machine": Post-LN reaches the
//! unigram loss within about 50 updates and stays there); a slow one is still coming down.
//!
//! With `F` the task's floor, `C` its context-free loss, the gap `G = C - F`, `E` the last
//! evaluation loss (at update `t`, the run's `S` updates or where it was stopped) and `D` the
//! fall of the evaluation loss over the last [`DESCENT_WINDOW`] of the run before it (the loss
//! at the first evaluation at or after update `t - DESCENT_WINDOW S`, minus `E`):
//!
//! ```text
//! diverged     flagged by the divergence rule (crate::train::run: a non-finite loss or
//!              gradient, or DIVERGE_EVALS evaluations in a row above DIVERGE_FACTOR x the
//!              initial loss)
//! at plateau   E > F + PLATEAU_FRACTION G          (less than a tenth of the gap closed)
//! descending   D > DESCENT_MIN G                   (still falling by a visible part of the gap)
//! collapsed    at plateau and not descending
//! slow         at plateau and descending (falling toward, or just under, the context-free
//!              loss: has not learnt what the context tells within the run)
//! descending   (still descending) off the plateau, descending and E > F + TRAINED_FRACTION G
//! trained      otherwise: off the plateau, and either no longer falling or past half the gap
//! ```
//!
//! A learning rate is **stable** for a run when the run is trained or still descending off the
//! plateau ([`RunClass::stable`]). Diverged and collapsed runs failed; a slow one did not fail
//! but has not trained either (at a tiny learning rate a run falls from its initial loss
//! toward the context-free loss for the whole run), so it is not stable: a maximum stable
//! learning rate is the largest rate at which a run gets off the plateau and stays off it.
//!
//! The thresholds are named constants fixed before the Transformer-tier grids ran; the tests
//! check the classifier on made curves of each kind.

/// Fraction of the gap `C - F` above the floor beyond which a final loss is on the plateau:
/// less than `1 - PLATEAU_FRACTION` = a tenth of the gap closed.
pub const PLATEAU_FRACTION: f64 = 0.9;

/// Fraction of the gap above the floor below which a run counts as trained even if it is
/// still falling: past half the gap.
pub const TRAINED_FRACTION: f64 = 0.5;

/// The last part of the run (a fraction of its updates) over which descent is measured.
pub const DESCENT_WINDOW: f64 = 0.25;

/// A fall over [`DESCENT_WINDOW`] larger than this fraction of the gap is "still descending".
pub const DESCENT_MIN: f64 = 0.02;

/// Sweeps stop a run that is collapsed on its evaluations so far ([`Curve::class`] of the curve
/// up to now) once it has trained this fraction of its updates: collapse is a run that reaches
/// the plateau and stays there (module docs), and a run on the plateau that has not come down
/// over the last [`DESCENT_WINDOW`] of the run is classified collapsed whether it stops there
/// or goes on to end the same way. A stopped run is classified collapsed.
pub const STOP_FROM: f64 = 0.5;

/// The class of a run.
///
/// # Examples
///
/// ```rust
/// use normscope_core::train::classify::RunClass;
///
/// let names: Vec<&str> = RunClass::ALL.iter().map(|c| c.name()).collect();
/// assert_eq!(names, ["diverged", "collapsed", "slow", "descending", "trained"]);
/// let stable: Vec<bool> = RunClass::ALL.iter().map(|c| c.stable()).collect();
/// assert_eq!(stable, [false, false, false, true, true]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RunClass {
    /// Flagged by the divergence rule.
    Diverged,
    /// At or above the context-free loss, and not coming down.
    Collapsed,
    /// On (or above) the plateau, still falling: not yet off it.
    Slow,
    /// Off the plateau, still falling, not yet past half the gap.
    Descending,
    /// Off the plateau and settled, or past half the gap.
    Trained,
}

impl RunClass {
    /// Every class, in table order.
    pub const ALL: [RunClass; 5] = [
        RunClass::Diverged,
        RunClass::Collapsed,
        RunClass::Slow,
        RunClass::Descending,
        RunClass::Trained,
    ];

    /// Its name in tables: `diverged`, `collapsed`, `slow`, `descending`, `trained`.
    pub fn name(self) -> &'static str {
        match self {
            RunClass::Diverged => "diverged",
            RunClass::Collapsed => "collapsed",
            RunClass::Slow => "slow",
            RunClass::Descending => "descending",
            RunClass::Trained => "trained",
        }
    }

    /// Trained or still descending off the plateau: the run got off the plateau and stayed
    /// off it (module docs).
    pub fn stable(self) -> bool {
        matches!(self, RunClass::Descending | RunClass::Trained)
    }
}

/// A run's evaluation curve and its task's two reference losses.
///
/// # Examples
///
/// Floor 0, context-free loss 2 (the gap G = 2), 100 updates. A run flat at 2 sits on the
/// plateau (above `0.9 G = 1.8`) and is not falling: collapsed. One that fell from 1.5 at
/// update 75 to 0.5 at 100 is off the plateau and still falling by more than `0.02 G`, but
/// past half the gap: trained.
///
/// ```rust
/// use normscope_core::train::classify::{Curve, RunClass};
///
/// let curve = |points| Curve {
///     points,
///     steps: 100,
///     diverged: false,
///     floor: 0.0,
///     context_free: 2.0,
/// };
/// let flat = [(0, 2.0), (50, 2.0), (100, 2.0)];
/// assert_eq!(curve(&flat).class(), RunClass::Collapsed);
/// let falling = [(0, 2.0), (75, 1.5), (100, 0.5)];
/// assert_eq!(curve(&falling).descent(), 1.0);
/// assert_eq!(curve(&falling).class(), RunClass::Trained);
/// let slow = [(0, 2.5), (75, 2.3), (100, 1.9)];
/// assert_eq!(curve(&slow).class(), RunClass::Slow);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Curve<'a> {
    /// `(update, evaluation loss)`, in update order, starting at update 0.
    pub points: &'a [(u64, f64)],
    /// The run's planned updates `S`.
    pub steps: u64,
    /// Whether the divergence rule stopped it.
    pub diverged: bool,
    /// The task's floor `F`.
    pub floor: f64,
    /// The task's context-free loss `C`.
    pub context_free: f64,
}

impl Curve<'_> {
    /// The fall of the loss over the [`DESCENT_WINDOW`] of the run before its last
    /// evaluation `t`: the loss at the first evaluation at or after update `t -
    /// DESCENT_WINDOW S` minus the last loss (0 when the window holds a single evaluation).
    pub fn descent(&self) -> f64 {
        let (t, last) = self.points.last().copied().unwrap_or((0, f64::NAN));
        let start = (t as f64 - DESCENT_WINDOW * self.steps as f64)
            .ceil()
            .max(0.0) as u64;
        self.points
            .iter()
            .find(|(s, _)| *s >= start)
            .map_or(0.0, |(_, e)| e - last)
    }

    /// The class (module docs). A curve without evaluations, or with a non-finite final loss,
    /// is diverged.
    pub fn class(&self) -> RunClass {
        let last = self.points.last().map(|p| p.1);
        let Some(e) = last.filter(|e| e.is_finite()) else {
            return RunClass::Diverged;
        };
        if self.diverged {
            return RunClass::Diverged;
        }
        let gap = self.context_free - self.floor;
        let plateau = e > self.floor + PLATEAU_FRACTION * gap;
        let descending = self.descent() > DESCENT_MIN * gap;
        match (plateau, descending) {
            (true, false) => RunClass::Collapsed,
            (true, true) => RunClass::Slow,
            (false, true) if e > self.floor + TRAINED_FRACTION * gap => RunClass::Descending,
            _ => RunClass::Trained,
        }
    }
}

/// Whether a sweep stops a run now ([`STOP_FROM`]): at update `t >= STOP_FROM S`, its curve so
/// far (`points`, ending at `t`) is collapsed.
pub fn stop_now(points: &[(u64, f64)], steps: u64, floor: f64, context_free: f64) -> bool {
    let Some(&(t, _)) = points.last() else {
        return false;
    };
    (t as f64) >= STOP_FROM * steps as f64
        && Curve {
            points,
            steps,
            diverged: false,
            floor,
            context_free,
        }
        .class()
            == RunClass::Collapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: f64 = 1.6;
    const C: f64 = 2.4;

    /// A curve evaluated every 25 updates over 400 updates, `f(step)` the loss.
    fn made(f: impl Fn(f64) -> f64) -> Vec<(u64, f64)> {
        (0..=16).map(|k| (25 * k, f(25.0 * k as f64))).collect()
    }

    fn class(points: &[(u64, f64)], diverged: bool) -> RunClass {
        Curve {
            points,
            steps: 400,
            diverged,
            floor: F,
            context_free: C,
        }
        .class()
    }

    #[test]
    fn made_curves_get_their_class() {
        let init = 2.8;
        // Trains: exponential approach to 10% of the gap above the floor.
        let trained = made(|s| F + 0.1 * (C - F) + (init - F) * (-s / 60.0).exp());
        assert_eq!(class(&trained, false), RunClass::Trained);
        // Post-LN's collapse: down to the plateau within 50 updates, then flat with noise.
        let collapsed = made(|s| {
            if s < 50.0 {
                init - (init - C) * s / 50.0
            } else {
                C + 0.004 * (s / 7.0).sin()
            }
        });
        assert_eq!(class(&collapsed, false), RunClass::Collapsed);
        // Slow training at a small lr: still on the plateau at the end, but falling.
        let slow = made(|s| C + 0.1 - 0.1 * (C - F) * s / 400.0);
        assert!(slow.last().unwrap().1 > F + PLATEAU_FRACTION * (C - F));
        assert_eq!(class(&slow, false), RunClass::Slow);
        // A tiny lr: falling from the initial loss toward the context-free loss all run.
        let tiny = made(|s| 2.8 - (2.8 - C) * s / 500.0);
        assert_eq!(class(&tiny, false), RunClass::Slow);
        assert!(!RunClass::Slow.stable());
        // Off the plateau, a third of the gap closed, still falling steadily: descending.
        let slow2 = made(|s| C - 0.33 * (C - F) * s / 400.0);
        assert_eq!(class(&slow2, false), RunClass::Descending);
        // Past half the gap and still falling: trained.
        let deep = made(|s| C - 0.8 * (C - F) * s / 400.0);
        assert_eq!(class(&deep, false), RunClass::Trained);
        // Trained, then drifting back up onto the plateau (and above it): collapsed.
        let relapse = made(|s| {
            if s < 200.0 {
                C - 0.5 * (C - F) * s / 200.0
            } else {
                F + 0.5 * (C - F) + 0.7 * (C - F) * (s - 200.0) / 200.0
            }
        });
        assert_eq!(class(&relapse, false), RunClass::Collapsed);
        // Flagged by the divergence rule, or ending non-finite, or never evaluated.
        assert_eq!(class(&trained, true), RunClass::Diverged);
        let mut nan = trained.clone();
        nan.last_mut().unwrap().1 = f64::NAN;
        assert_eq!(class(&nan, false), RunClass::Diverged);
        assert_eq!(class(&[], false), RunClass::Diverged);
    }

    #[test]
    fn thresholds_sit_where_the_docs_say() {
        // Final loss just inside / outside the plateau band, flat over the window.
        let at = |e: f64| made(move |_| e);
        let band = F + PLATEAU_FRACTION * (C - F);
        assert_eq!(class(&at(band + 1e-9), false), RunClass::Collapsed);
        assert_eq!(class(&at(band - 1e-9), false), RunClass::Trained);
        // A fall of just more / less than DESCENT_MIN of the gap over the last quarter.
        let falling = |fall: f64| {
            made(move |s| {
                let w = (1.0 - DESCENT_WINDOW) * 400.0;
                if s < w {
                    C
                } else {
                    C - fall * (s - w) / (400.0 - w)
                }
            })
        };
        let eps = 1e-6;
        let g = C - F;
        assert_eq!(
            class(&falling((DESCENT_MIN + eps) * g), false),
            RunClass::Slow
        );
        assert_eq!(
            class(&falling((DESCENT_MIN - eps) * g), false),
            RunClass::Collapsed
        );
        assert!(RunClass::Trained.stable() && RunClass::Descending.stable());
    }

    #[test]
    fn collapsed_runs_stop_from_half_way_and_only_then() {
        let collapsed = made(|s| if s < 50.0 { 2.8 - 0.4 * s / 50.0 } else { C });
        let upto = |t: u64| -> Vec<(u64, f64)> {
            collapsed.iter().copied().filter(|p| p.0 <= t).collect()
        };
        assert!(!stop_now(&upto(175), 400, F, C));
        assert!(stop_now(&upto(200), 400, F, C));
        // The stopped curve is classified collapsed, as the whole one is.
        assert_eq!(class(&upto(200), false), RunClass::Collapsed);
        assert_eq!(class(&collapsed, false), RunClass::Collapsed);
        // A slow run on the plateau but falling is not stopped; a trained one neither.
        let slow = made(|s| C + 0.1 - 0.1 * (C - F) * s / 400.0);
        let trained = made(|s| F + 0.1 * (C - F) + (2.8 - F) * (-s / 60.0).exp());
        for curve in [&slow, &trained] {
            for t in [200, 300, 400] {
                let part: Vec<(u64, f64)> = curve.iter().copied().filter(|p| p.0 <= t).collect();
                assert!(!stop_now(&part, 400, F, C), "{t}");
            }
        }
        assert!(!stop_now(&[], 400, F, C));
        assert!(!RunClass::Collapsed.stable() && !RunClass::Diverged.stable());
    }
}
