//! Where a line plot's legend goes: the first corner whose box meets nothing drawn (tested
//! exactly, segment by segment), else a strip below the axes, and that strip's columns.

use crate::font::text_width;
use crate::layout::{LEGEND_GLYPH, LEGEND_INSET, LEGEND_ROW, MARGIN, STRIP_COLUMNS, STRIP_GAP};
use crate::line_plot::{Legend, LinePlot};
use crate::series::{Mark, step_path};
use crate::sizes::{SIZE, TICK_PX};

/// Whether the segment `p`-`q` meets the rectangle `[x0, x1] x [y0, y1]` (Liang-Barsky
/// clipping; a point is a segment of length 0).
fn segment_meets(p: (f64, f64), q: (f64, f64), (x0, x1, y0, y1): (f64, f64, f64, f64)) -> bool {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (pp, qq) in [
        (-dx, p.0 - x0),
        (dx, x1 - p.0),
        (-dy, p.1 - y0),
        (dy, y1 - p.1),
    ] {
        if pp.abs() < f64::MIN_POSITIVE {
            if qq < 0.0 {
                return false;
            }
        } else {
            let t = qq / pp;
            if pp < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

impl LinePlot {
    /// Height of the legend strip below the axes: 0 unless the legend goes outside.
    pub(crate) fn strip_height(&self) -> u32 {
        let n = self.labelled().count() as u32;
        if n > 0 && self.chosen_legend() == Legend::Outside {
            n.div_ceil(self.strip_columns().len() as u32) * LEGEND_ROW + 2 * MARGIN
        } else {
            0
        }
    }

    /// The left edges (px) of the legend strip's columns, entries filling rows left to right:
    /// the most columns, up to [`STRIP_COLUMNS`], whose widest entries fit side by side in the
    /// figure's width, each column as wide as its widest entry, the block centred.
    pub(crate) fn strip_columns(&self) -> Vec<i32> {
        let widths: Vec<u32> = self
            .labelled()
            .map(|s| LEGEND_GLYPH + text_width(&s.label, TICK_PX) + STRIP_GAP)
            .collect();
        let room = SIZE.0 - 2 * MARGIN;
        for cols in (1..=STRIP_COLUMNS.min(widths.len().max(1))).rev() {
            let col: Vec<u32> = (0..cols)
                .map(|c| {
                    widths
                        .iter()
                        .skip(c)
                        .step_by(cols)
                        .copied()
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            // The last column needs no gap after it.
            let total: u32 = col.iter().sum::<u32>() - STRIP_GAP;
            if total <= room || cols == 1 {
                let mut x = (MARGIN + room.saturating_sub(total) / 2) as i32;
                return col
                    .iter()
                    .map(|w| {
                        let at = x;
                        x += *w as i32;
                        at
                    })
                    .collect();
            }
        }
        unreachable!("one column is always returned")
    }

    /// Every segment drawn, in axis-normalized coordinates: line pieces, points (segments of
    /// length 0) and interval bars.
    fn drawn_segments(&self, x: (f64, f64), y: (f64, f64)) -> Vec<((f64, f64), (f64, f64))> {
        let norm = |v: f64, (lo, hi): (f64, f64), log: bool| {
            if log {
                (v / lo).ln() / (hi / lo).ln()
            } else {
                (v - lo) / (hi - lo)
            }
        };
        let at = |p: (f64, f64)| (norm(p.0, x, self.x_log), norm(p.1, y, self.y_log));
        let ok = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
        // The points [`Figure::draw`] keeps: finite, and on a log axis positive and within the
        // axis (values beyond its 60 decades are not drawn, and their neighbours are joined).
        let (x_log, y_log) = (self.x_log, self.y_log);
        let keep = |p: &(f64, f64)| {
            ok(p) && (!x_log || p.0 > 0.0) && (!y_log || (p.1 >= y.0 && p.1 <= y.1))
        };
        let mut segs = Vec::new();
        for s in &self.series {
            let kept: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
            let raw = match s.mark {
                Mark::Steps => step_path(&kept),
                _ => kept,
            };
            let pts: Vec<(f64, f64)> = raw.into_iter().map(at).filter(ok).collect();
            match &s.mark {
                Mark::Line | Mark::Dashed | Mark::Steps => {
                    segs.extend(pts.windows(2).map(|w| (w[0], w[1])));
                    if pts.len() == 1 {
                        segs.push((pts[0], pts[0]));
                    }
                }
                Mark::Band { high } => {
                    // Both edges, and the vertical span at each point.
                    // Each point with its top, filtered together so the two edges align.
                    let (lows, tops): (Vec<_>, Vec<_>) = s
                        .points
                        .iter()
                        .zip(high)
                        .filter(|(p, _)| keep(p))
                        .map(|(p, h)| (at(*p), at((p.0, h.min(y.1)))))
                        .filter(|(a, b)| ok(a) && ok(b))
                        .unzip();
                    segs.extend(lows.windows(2).map(|w| (w[0], w[1])));
                    segs.extend(tops.windows(2).map(|w| (w[0], w[1])));
                    segs.extend(lows.iter().zip(&tops).map(|(a, b)| (*a, *b)));
                }
                Mark::Points { ci, .. } => {
                    for (p, c) in s.points.iter().zip(ci).filter(|(p, _)| keep(p)) {
                        // As drawn: on a log axis a bar whose low end is not positive starts
                        // at the point.
                        let low = if y_log && c.0 <= 0.0 { p.1 } else { c.0 };
                        let (a, b, mid) = (at((p.0, low)), at((p.0, c.1)), at(*p));
                        if ok(&a) && ok(&b) {
                            segs.push((a, b));
                        }
                        if ok(&mid) {
                            segs.push((mid, mid));
                        }
                    }
                }
            }
        }
        // The below-floor markers sit on the bottom edge.
        for (px, _) in self.below_floor(x, y.0) {
            let p = at((px, y.0));
            if ok(&p) {
                segs.push((p, p));
            }
        }
        segs
    }

    /// The legend box's size in pixels as drawn: one row of [`LEGEND_ROW`] px per labelled
    /// series, the longest label measured in the embedded font, a line sample and padding.
    pub(crate) fn legend_pixels(&self) -> (u32, u32) {
        let labels: Vec<&str> = self.labelled().map(|s| s.label.as_str()).collect();
        let text = labels
            .iter()
            .map(|l| text_width(l, TICK_PX))
            .max()
            .unwrap_or(0);
        (
            LEGEND_GLYPH + text + 30,
            labels.len() as u32 * LEGEND_ROW + 20,
        )
    }

    /// The region a corner legend takes, `(width, height)` as fractions of the plotting area:
    /// the box and its inset from the axes, plus a marker's radius.
    fn legend_box(&self) -> (f64, f64) {
        let (pw, ph) = self.plot_area();
        let (bw, bh) = self.legend_pixels();
        let pad = (LEGEND_INSET + 8) as f64;
        (
            ((bw as f64 + pad) / pw).min(1.0),
            ((bh as f64 + pad) / ph).min(1.0),
        )
    }

    /// Where the legend goes: the first corner (upper left, upper right, lower left, lower
    /// right) whose box meets nothing drawn (every line piece, point and interval bar, tested
    /// exactly), else [`Legend::Outside`], below the axes.
    pub fn auto_legend(&self, x: (f64, f64), y: (f64, f64)) -> Legend {
        if self.series.iter().all(|s| s.label.is_empty()) {
            return Legend::UpperLeft;
        }
        let (w, h) = self.legend_box();
        let segs = self.drawn_segments(x, y);
        let corners = [
            (Legend::UpperLeft, (0.0, w, 1.0 - h, 1.0)),
            (Legend::UpperRight, (1.0 - w, 1.0, 1.0 - h, 1.0)),
            (Legend::LowerLeft, (0.0, w, 0.0, h)),
            (Legend::LowerRight, (1.0 - w, 1.0, 0.0, h)),
        ];
        corners
            .iter()
            .find(|(_, r)| !segs.iter().any(|s| segment_meets(s.0, s.1, *r)))
            .map_or(Legend::Outside, |c| c.0)
    }

    /// Whether the legend at `legend` meets anything drawn (false for [`Legend::Outside`]):
    /// the tests' check of [`Self::auto_legend`]'s choice.
    #[cfg(test)]
    pub(crate) fn legend_covers_data(&self, legend: Legend) -> bool {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let (w, h) = self.legend_box();
        let r = match legend {
            Legend::UpperLeft | Legend::Auto => (0.0, w, 1.0 - h, 1.0),
            Legend::UpperRight => (1.0 - w, 1.0, 1.0 - h, 1.0),
            Legend::LowerLeft => (0.0, w, 0.0, h),
            Legend::LowerRight => (1.0 - w, 1.0, 0.0, h),
            Legend::Outside => return false,
        };
        self.drawn_segments((x0, x1), (y0, y1))
            .iter()
            .any(|s| segment_meets(s.0, s.1, r))
    }

    /// The legend this plot draws (its own, or [`Self::auto_legend`]'s choice).
    pub(crate) fn chosen_legend(&self) -> Legend {
        match self.legend {
            Legend::Auto => {
                let ((x0, x1), (y0, y1)) = self.ranges();
                self.auto_legend((x0, x1), (y0, y1))
            }
            fixed => fixed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::Figure;
    use crate::{Series, render};
    use std::path::Path;

    #[test]
    fn a_segment_is_caught_between_its_ends() {
        // A long diagonal crossing the box's corner, with both ends far outside it: sampling
        // the segment would miss it, clipping does not.
        let r = (0.0, 0.2, 0.8, 1.0);
        assert!(segment_meets((-0.5, 0.4), (0.5, 1.4), r));
        assert!(!segment_meets((0.3, 0.0), (1.0, 0.9), r));
        // A point is a segment of length 0.
        assert!(segment_meets((0.1, 0.9), (0.1, 0.9), r));
        assert!(!segment_meets((0.3, 0.9), (0.3, 0.9), r));
    }

    #[test]
    fn with_no_free_corner_the_legend_goes_below_and_the_figure_grows() {
        // An X through the whole area and a flat line along the top and bottom leave no corner
        // free.
        let mut plot = LinePlot::new("t", "x", "y");
        plot.x_log = false;
        plot.series
            .push(Series::line("a", 0, vec![(0.0, 0.0), (1.0, 1.0)]));
        plot.series
            .push(Series::line("b", 1, vec![(0.0, 1.0), (1.0, 0.0)]));
        plot.series.push(Series::line(
            "c",
            2,
            vec![(0.0, 0.5), (0.5, 0.5), (1.0, 0.5)],
        ));
        assert_eq!(plot.chosen_legend(), Legend::Outside);
        assert!(plot.size().1 > SIZE.1);
        for corner in [
            Legend::UpperLeft,
            Legend::UpperRight,
            Legend::LowerLeft,
            Legend::LowerRight,
        ] {
            assert!(plot.legend_covers_data(corner), "{corner:?}");
        }
        assert!(!plot.legend_covers_data(Legend::Outside));
        // Rendering works and the PDF is deterministic.
        let a = render(&plot, Path::new("t")).unwrap();
        let b = render(&plot, Path::new("t")).unwrap();
        assert!(a.svg == b.svg, "the SVG differs between renders");
        assert!(a.pdf == b.pdf, "the PDF differs between renders");
        assert!(a.pdf.starts_with(b"%PDF"));
        // The PNG records 300 dpi: pHYs with 11811 pixels per metre on both axes.
        let phys = a
            .png
            .windows(4)
            .position(|w| w == b"pHYs")
            .expect("pHYs chunk");
        let ppm = u32::from_be_bytes(a.png[phys + 4..phys + 8].try_into().unwrap());
        assert_eq!(ppm, 11811);
    }

    #[test]
    fn auto_legend_avoids_the_data() {
        // A line falling from the upper left to the lower right leaves the other two corners
        // free; upper right comes first in the tie order.
        let mut plot = LinePlot::new("t", "x", "y");
        plot.series
            .push(Series::line("falling", 0, vec![(1.0, 10.0), (100.0, 0.0)]));
        let ((x0, x1), (y0, y1)) = plot.ranges();
        assert_eq!(plot.auto_legend((x0, x1), (y0, y1)), Legend::UpperRight);
        // Rising: upper left is free.
        plot.series[0].points = vec![(1.0, 0.0), (100.0, 10.0)];
        let ((x0, x1), (y0, y1)) = plot.ranges();
        assert_eq!(plot.auto_legend((x0, x1), (y0, y1)), Legend::UpperLeft);
        // A flat line along the top: a lower corner.
        plot.series[0].points = vec![(1.0, 10.0), (100.0, 10.0), (50.0, 0.0)];
        plot.series[0].points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ((x0, x1), (y0, y1)) = plot.ranges();
        let l = plot.auto_legend((x0, x1), (y0, y1));
        assert!(matches!(l, Legend::LowerLeft | Legend::LowerRight), "{l:?}");
    }
}
