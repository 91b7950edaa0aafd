//! A line plot's axes: their ranges (log or linear, padded, with room for censored ends),
//! the values a log axis cannot show, the x label as drawn, and how many ticks to ask for.

use crate::line_plot::LinePlot;
use crate::series::{Mark, step_path};

/// Most ticks on the x and y axes (plotters picks round values).
pub(crate) const X_TICKS: usize = 6;
pub(crate) const Y_TICKS: usize = 8;

/// How many ticks to ask plotters for on an axis from `lo` to `hi` (log10 units when `log`):
/// `most`, except that a log axis spanning two decades or more asks for at most one per decade,
/// so that its ticks fall on whole decades (10, 100, not 31.6).
pub(crate) fn ticks(lo: f64, hi: f64, log: bool, most: usize) -> usize {
    let decades = hi - lo;
    if log && decades >= 2.0 {
        (decades.floor() as usize + 1).min(most)
    } else {
        most
    }
}

/// Largest half span of a linear axis drawn in its own units: plotters takes `hi - lo` to
/// place points and choose ticks, which must stay finite (an infinite span never ends its
/// tick search). Wider axes are drawn in units of a power of ten ([`unit`]).
const LARGEST_HALF_SPAN: f64 = 1e300;

/// The unit a linear axis from `lo` to `hi` is drawn in (its coordinates divided by it, its
/// tick labels multiplied back): 1, or for a span beyond [`LARGEST_HALF_SPAN`] (values near
/// ±f64's largest) the power of ten of its half span, so that plotters' `hi - lo` stays
/// finite and its ticks stay round. A log axis (drawn in log10 units) is always 1.
pub(crate) fn unit(lo: f64, hi: f64, log: bool) -> f64 {
    let half = hi / 2.0 - lo / 2.0;
    if log || !half.is_finite() || half <= LARGEST_HALF_SPAN {
        1.0
    } else {
        10f64.powi(half.log10().floor() as i32)
    }
}

impl LinePlot {
    /// The x and y ranges drawn: every finite value (positive on a log axis) with some
    /// padding, always finite ends (within ±f64's largest) however wide the values spread.
    pub(crate) fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let span = |vals: Vec<f64>, log: bool| {
            let (lo, hi) = vals
                .into_iter()
                .filter(|v| v.is_finite() && (!log || *v > 0.0))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                    (a.0.min(v), a.1.max(v))
                });
            if !lo.is_finite() {
                (if log { 0.1 } else { 0.0 }, 1.0)
            } else if log {
                // At most 60 decades (plotters' log axis misbehaves near subnormals); smaller
                // values are not drawn. The padding is taken in log10 units and the top kept
                // below f64's largest number (an infinite end would hang plotters' ticks).
                let l1 = hi.log10();
                let l0 = lo.log10().max(l1 - 60.0);
                let pad = (0.04 * (l1 - l0)).max(1.5f64.log10());
                (
                    10f64.powf((l0 - pad).max(-307.0)),
                    10f64.powf((l1 + pad).min(308.0)),
                )
            } else {
                // Half the span on each side is computed first, so hi - lo cannot overflow.
                let half = hi / 2.0 - lo / 2.0;
                // One value (a single x, a constant series): half its size each side (at
                // least 0.5), so that the ticks are distinct round numbers.
                let pad = if half <= 1e-9 * hi.abs() {
                    (hi.abs() / 2.0).max(0.5)
                } else {
                    0.1 * half
                };
                ((lo - pad).max(-f64::MAX), (hi + pad).min(f64::MAX))
            }
        };
        let xs = self
            .series
            .iter()
            .flat_map(|s| match s.mark {
                // A step reaches half a unit beyond its point on each side.
                Mark::Steps => step_path(&s.points).into_iter().map(|p| p.0).collect(),
                _ => s.points.iter().map(|p| p.0).collect::<Vec<_>>(),
            })
            .collect();
        let ys = self.series.iter().flat_map(|s| s.ys()).collect();
        let (x, (mut y0, mut y1)) = (span(xs, self.x_log), span(ys, self.y_log));
        // Room for the arrows past open interval ends ([`OPEN_ARROW_PX`], about 5% of the
        // axes' height): 8% of the span more on each side that has one.
        let (below, above) = self.open_ends();
        let t = |v: f64| if self.y_log { v.log10() } else { v };
        let u = |v: f64| if self.y_log { 10f64.powf(v) } else { v };
        // From the span's halves where the span itself overflows (values near ±f64's largest).
        let room = match t(y1) - t(y0) {
            span if span.is_finite() => 0.08 * span,
            _ => 0.16 * (t(y1) / 2.0 - t(y0) / 2.0),
        };
        if below {
            y0 = u(t(y0) - room).max(-f64::MAX);
        }
        if above {
            y1 = u(t(y1) + room).min(f64::MAX);
        }
        (x, (y0, y1))
    }

    /// The points a log y axis cannot show because they are at or below its floor `y0` (zero,
    /// or more than 60 decades under the largest value), as `(x, series index)`: they are
    /// marked by a downward triangle on the bottom edge instead of being dropped.
    pub(crate) fn below_floor(&self, x: (f64, f64), y0: f64) -> Vec<(f64, usize)> {
        if !self.y_log {
            return Vec::new();
        }
        self.series
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s.points
                    .iter()
                    .filter(move |p| {
                        p.0.is_finite()
                            && (!self.x_log || p.0 > 0.0)
                            && (x.0..=x.1).contains(&p.0)
                            && p.1.is_finite()
                            && p.1 < y0
                    })
                    .map(move |p| (p.0, i))
            })
            .collect()
    }

    /// Whether any point's interval is open below, and any above (an arrow at that end,
    /// [`Series::open`]).
    fn open_ends(&self) -> (bool, bool) {
        self.series
            .iter()
            .fold((false, false), |acc, s| match &s.mark {
                Mark::Points { open, .. } => {
                    open.iter().fold(acc, |(b, a), o| (b || o.0, a || o.1))
                }
                _ => acc,
            })
    }

    /// The x label as drawn: the plot's, with what the drawing adds said after it (values
    /// below a log axis's floor, censored interval ends).
    pub(crate) fn x_desc(&self, (x0, x1): (f64, f64), y0: f64) -> String {
        let mut desc = self.x_label.clone();
        if !self.below_floor((x0, x1), y0).is_empty() {
            desc += " (▽ below)";
        }
        let arrows = match self.open_ends() {
            (true, true) => "↓↑",
            (true, false) => "↓",
            (false, true) => "↑",
            (false, false) => "",
        };
        if !arrows.is_empty() {
            desc += &format!(" ({arrows} censored)");
        }
        desc
    }
}

#[cfg(test)]
mod tests {
    use crate::{LinePlot, Series};

    #[test]
    fn one_value_gets_an_axis_with_distinct_ticks() {
        // One x (a quick run's single depth) and a constant y: half the value each side, at
        // least 0.5, so that round ticks (1, 1.5, 2, ...) tell apart.
        let mut plot = LinePlot::new("t", "x", "y");
        plot.x_log = false;
        plot.series
            .push(Series::points("a", 0, &[(2.0, 0.0, -0.1, 0.1)]));
        let ((x0, x1), (y0, y1)) = plot.ranges();
        assert_eq!((x0, x1), (1.0, 3.0));
        assert!(
            (y0 + 0.11).abs() < 1e-15 && (y1 - 0.11).abs() < 1e-15,
            "{y0} {y1}"
        );
        plot.series[0] = Series::line("b", 0, vec![(2.0, 0.0), (3.0, 0.0)]);
        let (_, (y0, y1)) = plot.ranges();
        assert_eq!((y0, y1), (-0.5, 0.5));
    }
}
