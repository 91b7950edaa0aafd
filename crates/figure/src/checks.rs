//! A line plot's own defect checks, on what it shows rather than its drawn text (which
//! [`crate::inspect`] checks): no data drawn, a linear axis over more than two decades, legend
//! entries told apart by colour alone. [`crate::Figure::defects`] of a [`LinePlot`].

use crate::inspect::over_two_decades;
use crate::line_plot::LinePlot;
use crate::series::{Mark, Series};

impl LinePlot {
    /// No point in any series (axes and a legend only), a linear axis whose values (all of one
    /// sign) span more than two decades, and legend entries that differ only in colour (same
    /// mark, same dash or marker).
    pub(crate) fn content_defects(&self) -> Vec<String> {
        let p = self.merged();
        let mut out = Vec::new();
        // Axes and a legend with nothing in them: every point was filtered out upstream.
        if p.series.iter().all(|s| s.points.is_empty()) {
            out.push(format!("{:?}: no data drawn", p.title));
        }
        let xs: Vec<f64> = p
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.0))
            .collect();
        // The points themselves: an interval reaching near 0 does not make an axis span
        // decades. An interval that reaches 0 or crosses it does make 0 a value the axis must
        // show (a difference, a cost), which a log axis cannot: its end is counted then.
        let mut ys: Vec<f64> = Vec::new();
        for s in &p.series {
            ys.extend(s.points.iter().map(|q| q.1));
            if let Mark::Points { ci, .. } = &s.mark {
                for (q, c) in s.points.iter().zip(ci) {
                    if q.1 > 0.0 && c.0 <= 0.0 {
                        ys.push(c.0);
                    } else if q.1 < 0.0 && c.1 >= 0.0 {
                        ys.push(c.1);
                    }
                }
            }
        }
        for (axis, log, values) in [("x", p.x_log, xs), ("y", p.y_log, ys)] {
            if !log && over_two_decades(&values) {
                out.push(format!(
                    "{:?}: linear {axis} axis over more than two decades",
                    p.title
                ));
            }
        }
        let entries: Vec<&Series> = p.labelled().collect();
        for (i, a) in entries.iter().enumerate() {
            for b in &entries[i + 1..] {
                if a.look() == b.look() {
                    out.push(format!(
                        "{:?}: {:?} and {:?} differ only in colour",
                        p.title, a.label, b.label
                    ));
                }
            }
        }
        out
    }
}
