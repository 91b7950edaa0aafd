//! The plot as drawn: its text in Unicode math, coinciding lines folded into one legend entry,
//! log axes over less than two decades drawn linear; and discrete distributions as steps.

use crate::line_plot::LinePlot;
use crate::series::{Mark, Series};
use crate::text::math;

/// Relative difference below which two presets' Monte Carlo points count as one point in a
/// merged legend entry (1%: indistinguishable at the figure's size).
pub(crate) const SAME_POINT: f64 = 0.01;

impl LinePlot {
    /// The plot as drawn: its text in Unicode math ([`math`]), and a line that coincides with an
    /// earlier labelled line (the same points to 1e-9 relative) folded into that line's legend
    /// entry (`Pre-LN = Peri-LN`), its own entry dropped; it is still drawn, in the colour of
    /// that entry, so no curve hides another without a word.
    pub fn merged(&self) -> LinePlot {
        let mut p = self.clone();
        p.title = math(&p.title);
        p.x_label = math(&p.x_label);
        p.y_label = math(&p.y_label);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        let orig: Vec<usize> = p.series.iter().map(|s| s.color).collect();
        let line = |s: &Series| !s.label.is_empty() && !matches!(s.mark, Mark::Points { .. });
        let same = |a: &Series, b: &Series| {
            !a.points.is_empty()
                && a.points.len() == b.points.len()
                && a.points
                    .iter()
                    .zip(&b.points)
                    .all(|(u, v)| close(u.0, v.0) && close(u.1, v.1))
        };
        for i in 0..p.series.len() {
            if !p.fold || !line(&p.series[i]) {
                continue;
            }
            if let Some(j) =
                (0..i).find(|&j| line(&p.series[j]) && same(&p.series[j], &p.series[i]))
            {
                let extra = std::mem::take(&mut p.series[i].label);
                let first = p.series[j]
                    .label
                    .split(" = ")
                    .next()
                    .unwrap_or("")
                    .to_string();
                p.series[j].label = format!("{} = {extra}", p.series[j].label);
                // The folded preset is drawn in the colour and pattern of the entry that
                // names it, its Monte Carlo points included when they agree too (overlapping
                // intervals); points that differ keep their colour and get a legend entry of
                // their own.
                // Colours as given (earlier folds recolour series): a preset's own points.
                let (from, to) = (orig[i], orig[j]);
                let points_of = |p: &LinePlot, c: usize| -> Vec<usize> {
                    (0..p.series.len())
                        .filter(|&k| {
                            orig[k] == c
                                && !p.series[k].points.is_empty()
                                && matches!(p.series[k].mark, Mark::Points { .. })
                        })
                        .collect()
                };
                // Points agree when, at every x they share, their 95% intervals overlap or
                // their values are within [`SAME_POINT`] of each other (indistinguishable as
                // drawn, e.g. a stream normalized to 1 with an interval of width 1e-12).
                let overlap = |a: &Series, b: &Series| match (&a.mark, &b.mark) {
                    (Mark::Points { ci: ca, .. }, Mark::Points { ci: cb, .. }) => {
                        a.points.iter().zip(ca).all(|(u, cu)| {
                            b.points.iter().zip(cb).all(|(v, cv)| {
                                !close(u.0, v.0)
                                    || cu.0.max(cv.0) <= cu.1.min(cv.1)
                                    || (u.1 - v.1).abs() <= SAME_POINT * u.1.abs().max(v.1.abs())
                            })
                        })
                    }
                    _ => false,
                };
                let (pf, pt) = (points_of(&p, from), points_of(&p, to));
                let agree = pf.len() == pt.len()
                    && pf
                        .iter()
                        .zip(&pt)
                        .all(|(&a, &b)| overlap(&p.series[a], &p.series[b]));
                p.series[i].color = to;
                if agree {
                    for k in pf {
                        p.series[k].color = to;
                    }
                } else {
                    for k in pf {
                        p.series[k].label = format!("{extra}, Monte Carlo");
                    }
                    for k in pt {
                        if p.series[k].label.is_empty() {
                            p.series[k].label = format!("{first}, Monte Carlo");
                        }
                    }
                }
            }
        }
        for s in &mut p.series {
            s.label = math(&s.label);
        }
        // A log axis over less than two decades gets plotters' half-decade ticks (3.162): draw
        // it linear instead, where its ticks are round.
        let ((x0, x1), (y0, y1)) = p.ranges();
        p.x_log &= x1 / x0 >= 100.0;
        p.y_log &= y1 / y0 >= 100.0;
        p
    }

    /// Makes the plot a discrete distribution: lines become steps, and every series is cut to
    /// the x range where some value reaches `floor` times the largest (plus one step each side).
    pub fn discrete(&mut self, floor: f64) {
        let top = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|y| y.is_finite())
            .fold(0.0f64, f64::max);
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.1.is_finite() && p.1 >= floor * top)
            .map(|p| p.0)
            .collect();
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min) - 1.0;
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 1.0;
        for s in &mut self.series {
            if matches!(s.mark, Mark::Line) {
                s.mark = Mark::Steps;
            }
            let keep: Vec<bool> = s.points.iter().map(|p| p.0 >= lo && p.0 <= hi).collect();
            let mut it = keep.iter();
            s.points.retain(|_| *it.next().unwrap_or(&false));
            if let Mark::Points { ci, open } = &mut s.mark {
                let mut it = keep.iter();
                ci.retain(|_| *it.next().unwrap_or(&false));
                let mut it = keep.iter();
                open.retain(|_| *it.next().unwrap_or(&false));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::font::text_width;
    use crate::layout::{MARGIN, title_lines};
    use crate::series::step_path;
    use crate::sizes::{SIZE, TITLE_PX};
    use crate::{Legend, LinePlot, Mark, Series, math};

    #[test]
    fn coinciding_lines_share_one_legend_entry_in_unicode() {
        let mut plot = LinePlot::new("||x_L||^2 against alpha", "x", "y");
        let pts = vec![(1.0, 2.0), (2.0, 3.0)];
        plot.series.push(Series::line("Pre-LN", 0, pts.clone()));
        plot.series
            .push(Series::line("Post-LN", 1, vec![(1.0, 2.0), (2.0, 5.0)]));
        plot.series.push(Series::line("Peri-LN", 3, pts));
        let m = plot.merged();
        let labels: Vec<&str> = m.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["Pre-LN = Peri-LN", "Post-LN", ""]);
        assert_eq!(m.title, "‖x_L‖² against α");
        assert_eq!(math("alphabet at 10^20, beta^2"), "alphabet at 10^20, β²");
        // Coinciding lines whose Monte Carlo points differ: one line entry, and the points
        // keep their presets' colours with entries of their own.
        let mut mixed = LinePlot::new("t", "x", "y");
        let line = vec![(1.0, 1.0), (2.0, 1.0)];
        mixed.series.push(Series::line("Pre-LN", 0, line.clone()));
        mixed.series.push(Series::line("Post-LN", 1, line));
        mixed
            .series
            .push(Series::points("", 0, &[(1.0, 1.0, 0.9, 1.1)]));
        mixed
            .series
            .push(Series::points("", 1, &[(1.0, 1.8, 1.5, 2.1)]));
        let mm = mixed.merged();
        let entries: Vec<(&str, usize)> =
            mm.labelled().map(|s| (s.label.as_str(), s.color)).collect();
        assert_eq!(
            entries,
            [
                ("Pre-LN = Post-LN", 0),
                ("Pre-LN, Monte Carlo", 0),
                ("Post-LN, Monte Carlo", 1)
            ]
        );
        // Three coinciding lines: points that agree (overlapping intervals) take the merged
        // colour; points that differ keep theirs, once each; empty point series get no entry.
        let mut three = LinePlot::new("t", "x", "y");
        for (name, c) in [("Pre-LN", 0), ("Peri-LN", 3), ("Admin", 4)] {
            three
                .series
                .push(Series::line(name, c, vec![(1.0, 1.0), (2.0, 1.0)]));
        }
        three
            .series
            .push(Series::points("", 0, &[(1.0, 1.0, 0.9, 1.1)]));
        three
            .series
            .push(Series::points("", 3, &[(1.0, 1.05, 0.95, 1.15)]));
        three
            .series
            .push(Series::points("", 4, &[(1.0, 2.0, 1.8, 2.2)]));
        three.series.push(Series::points("", 1, &[]));
        let m3 = three.merged();
        let entries: Vec<(&str, usize)> =
            m3.labelled().map(|s| (s.label.as_str(), s.color)).collect();
        assert_eq!(
            entries,
            [
                ("Pre-LN = Peri-LN = Admin", 0),
                ("Pre-LN, Monte Carlo", 0),
                ("Admin, Monte Carlo", 4)
            ]
        );
        assert_eq!(
            m3.series[4].color, 0,
            "Peri-LN's agreeing points take the merged colour"
        );
        // A legend strip takes as many columns (up to three) as its widest entries allow,
        // each column as wide as its own widest entry, within the figure.
        let mut wide = LinePlot::new("t", "x", "y");
        wide.legend = Legend::Outside;
        wide.series.push(Series::line("short", 0, vec![(1.0, 1.0)]));
        assert_eq!(wide.strip_columns().len(), 1);
        for (i, l) in ["Pre-LN", "Post-LN", "DeepNorm"].into_iter().enumerate() {
            wide.series.push(Series::line(l, i + 1, vec![(1.0, 2.0)]));
        }
        let cols = wide.strip_columns();
        assert_eq!(cols.len(), 3);
        assert!(cols.windows(2).all(|w| w[0] < w[1]));
        let long = "a label far too long for one third of the figure's width, or half";
        wide.series
            .insert(0, Series::line(long, 5, vec![(1.0, 2.0)]));
        wide.series
            .insert(1, Series::line(long, 6, vec![(1.0, 2.0)]));
        assert_eq!(wide.strip_columns().len(), 1);
        // A title too wide for the figure breaks before its setting, every line within it.
        let long = "Angular distance of adjacent layers at L = 1000 (ReLU MLP, He init)";
        let lines = title_lines(long, SIZE.0);
        assert_eq!(
            lines,
            [
                "Angular distance of adjacent layers at L = 1000",
                "(ReLU MLP, He init)"
            ]
        );
        let wordy = ["word"; 60].join(" ");
        let lines = title_lines(&wordy, SIZE.0);
        assert!(
            lines.len() > 1
                && lines
                    .iter()
                    .all(|l| text_width(l, TITLE_PX) <= SIZE.0 - 2 * MARGIN)
        );
        assert_eq!(lines.join(" "), wordy);
        assert_eq!(title_lines("Short", SIZE.0), ["Short"]);
        assert_eq!(
            math("angle(x_t, x_{t-1}) / pi, x_0 of x_L, x_{L-1}, pipe_2"),
            "angle(xₜ, xₜ₋₁) / π, x₀ of x_L, x_{L-1}, pipe₂"
        );
        // Every line is still drawn, and the first four presets' patterns differ.
        assert_eq!(m.series.iter().filter(|s| !s.points.is_empty()).count(), 3);
        let patterns: Vec<(u32, u32)> = (0..4)
            .map(|c| Series::line("", c, vec![]).pattern())
            .collect();
        for i in 0..4 {
            for j in 0..i {
                assert_ne!(patterns[i], patterns[j]);
            }
        }
    }

    #[test]
    fn distributions_are_steps_cut_to_their_mass() {
        let mut plot = LinePlot::new("t", "k", "share");
        plot.x_log = false;
        let law: Vec<(f64, f64)> = (0..60)
            .map(|k| (k as f64, if (10..=14).contains(&k) { 0.2 } else { 1e-9 }))
            .collect();
        plot.series.push(Series::line("a", 0, law));
        plot.discrete(1e-3);
        let s = &plot.series[0];
        assert!(matches!(s.mark, Mark::Steps));
        let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        assert_eq!(xs.first(), Some(&9.0));
        assert_eq!(xs.last(), Some(&15.0));
        assert_eq!(step_path(&[(1.0, 0.5)]), vec![(0.5, 0.5), (1.5, 0.5)]);
    }
}
