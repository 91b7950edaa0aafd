//! Drawing a line plot: the title, axes and ticks (log axes as linear axes in log10 units),
//! the shaded stretch, each series' marks (bands, lines, points with their interval bars,
//! dodged apart where they share an x), the marks below a log axis's floor, and the legend.

use crate::axes::{X_TICKS, Y_TICKS, ticks, unit};
use crate::figure::Figure;
use crate::font::FONT;
use crate::layout::{MARGIN, MARGIN_RIGHT, TITLE_TOP, X_LABEL_AREA, Y_LABEL_AREA};
use crate::legend::{Entry, draw_legend_box, draw_legend_strip};
use crate::line_plot::LinePlot;
use crate::series::{Mark, Series, step_path};
use crate::sizes::{LABEL_PX, SIZE, TICK_PX, TITLE_PX};
use crate::style::{PALETTE, draw_marker};
use crate::text::tick;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Opacity of a [`Mark::Band`]'s fill: light enough that the lines over it and other bands
/// under it stay visible.
const BAND_ALPHA: f64 = 0.2;

/// Horizontal offset in pixels between neighbouring labelled points series, so that estimates
/// of several series at one x stay apart ([`LinePlot::dodge`]).
const DODGE_PX: f64 = 14.0;

/// Length in pixels of the arrow drawn on past an open end of an interval ([`Series::open`]).
const OPEN_ARROW_PX: i32 = 24;

/// Grey of [`LinePlot::shade_from`]'s stretch (opacity over white).
const SHADE_ALPHA: f64 = 0.08;

impl LinePlot {
    /// The marker of the unlabelled points drawn in line series `s`'s colour (a preset's Monte
    /// Carlo points beside its closed-form line), shown on `s`'s legend sample; `None` for
    /// other series.
    fn points_marker(&self, s: &Series) -> Option<usize> {
        if matches!(s.mark, Mark::Points { .. }) {
            return None;
        }
        self.series
            .iter()
            .find(|p| {
                p.label.is_empty()
                    && p.color == s.color
                    && matches!(p.mark, Mark::Points { .. })
                    && !p.points.is_empty()
            })
            .map(Series::marker)
    }

    /// The horizontal offset in pixels of each point of each series, keyed by `(series
    /// index, x bits)`: at an x that two or more of them share (a depth, a tier), the labelled
    /// points series with points that are their own estimates (not Monte Carlo beside a
    /// labelled line of their colour) are spread [`DODGE_PX`] apart around it, in series
    /// order among those present there, so that estimates at one x do not hide each other. A
    /// point at an x of its own is not moved (a measured x stays where it is).
    fn dodge(&self) -> std::collections::BTreeMap<(usize, u64), i32> {
        let beside_line = |s: &Series| {
            self.series.iter().any(|l| {
                !l.label.is_empty() && l.color == s.color && !matches!(l.mark, Mark::Points { .. })
            })
        };
        let dodged = |s: &Series| {
            !s.label.is_empty()
                && matches!(s.mark, Mark::Points { .. })
                && !s.points.is_empty()
                && !beside_line(s)
        };
        let mut at_x = std::collections::BTreeMap::<u64, Vec<usize>>::new();
        for (i, s) in self.series.iter().enumerate().filter(|(_, s)| dodged(s)) {
            let xs: std::collections::BTreeSet<u64> =
                s.points.iter().map(|p| p.0.to_bits()).collect();
            for x in xs {
                at_x.entry(x).or_default().push(i);
            }
        }
        let mut out = std::collections::BTreeMap::new();
        for (x, here) in at_x.into_iter().filter(|e| e.1.len() > 1) {
            let mid = (here.len() as f64 - 1.0) / 2.0;
            for (rank, i) in here.into_iter().enumerate() {
                out.insert((i, x), ((rank as f64 - mid) * DODGE_PX).round() as i32);
            }
        }
        out
    }

    /// Draws the plot onto `root` without presenting it (a panel of a larger figure,
    /// [`crate::facets::Facets`]). Log axes are drawn as linear axes in log10 units, with
    /// ticks chosen there and labelled with the value (`1e-14`): plotters' own log axis labels
    /// only a few decades of a range that spans dozens.
    pub fn paint<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let merged = self.merged();
        let this = &merged;
        // An axis label longer than its axis would be clipped: refuse to draw it.
        if let Some((_, why)) = this.drawn_label_misfit() {
            return Err(why);
        }
        let ((x0, x1), (y0, y1)) = this.ranges();
        let x_desc = this.x_desc((x0, x1), y0);
        let legend = this.chosen_legend();
        let labelled: Vec<&Series> = this.labelled().collect();
        // An outside legend takes a strip below the axes: two entries per row.
        let (area, strip) = if this.strip_height() > 0 {
            let (_, h) = root.dim_in_pixel();
            let (a, b) = root.split_vertically(h - this.strip_height());
            (a, Some(b))
        } else {
            (root.clone(), None)
        };
        let (x_log, y_log) = (this.x_log, this.y_log);
        // Linear axes in their [`unit`] (1 but for spans near f64's largest).
        let (ux, uy) = (unit(x0, x1, x_log), unit(y0, y1, y_log));
        let tx = move |v: f64| if x_log { v.log10() } else { v / ux };
        let ty = move |v: f64| if y_log { v.log10() } else { v / uy };
        let at = move |p: (f64, f64)| (tx(p.0), ty(p.1));
        let keep = move |p: &(f64, f64)| {
            p.0.is_finite()
                && p.1.is_finite()
                && (!x_log || p.0 > 0.0)
                && (!y_log || (p.1 >= y0 && p.1 <= y1))
        };
        let label = |log: bool, unit: f64| {
            move |v: &f64| {
                if log {
                    tick(10f64.powf(*v))
                } else {
                    tick(*v * unit)
                }
            }
        };
        // A title too wide for one line: the lines before the last are drawn above the
        // chart, whose caption is the last line.
        let (w, _) = area.dim_in_pixel();
        let (lines, line_h, title_h) = this.title_block(w);
        use plotters::style::text_anchor::{HPos, Pos, VPos};
        let centred =
            TextStyle::from((FONT, TITLE_PX).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (i, line) in lines.iter().enumerate() {
            let y = (TITLE_TOP + i as u32 * line_h) as i32;
            area.draw_text(line, &centred, ((w / 2) as i32, y))
                .map_err(e)?;
        }
        let area = area.margin(title_h, 0, 0, 0);
        let mut chart = ChartBuilder::on(&area)
            .margin(MARGIN)
            // The title block ends with the room the top tick label needs.
            .margin_top(0)
            .margin_right(MARGIN_RIGHT)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(tx(x0)..tx(x1), ty(y0)..ty(y1))
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(&this.y_label)
            .label_style((FONT, TICK_PX))
            // At most 6 (x) and 8 (y) ticks at round values of the (log10) axis: whole decades,
            // every 1, 2, 5, 10, ... of them, across the whole range.
            .x_labels(ticks(tx(x0), tx(x1), x_log, X_TICKS))
            .y_labels(ticks(ty(y0), ty(y1), y_log, Y_TICKS))
            .x_label_formatter(&label(x_log, ux))
            .y_label_formatter(&label(y_log, uy))
            .axis_desc_style((FONT, LABEL_PX))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(e)?;
        if let Some(from) = this.shade_from.filter(|&from| from < x1) {
            let from = from.max(x0);
            let corners = [(tx(from), ty(y0)), (tx(x1), ty(y1))];
            chart
                .draw_series([Rectangle::new(corners, BLACK.mix(SHADE_ALPHA).filled())])
                .map_err(e)?;
        }
        let dodge = this.dodge();
        for (si, s) in this.series.iter().enumerate() {
            let c = PALETTE[s.color % PALETTE.len()];
            let kept: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
            let pts: Vec<(f64, f64)> = match s.mark {
                Mark::Steps => step_path(&kept).into_iter().map(at).collect(),
                _ => kept.iter().copied().map(at).collect(),
            };
            match &s.mark {
                Mark::Band { high } => {
                    let (lo, hi): (Vec<_>, Vec<_>) = s
                        .points
                        .iter()
                        .zip(high)
                        .filter(|(p, h)| keep(p) && keep(&(p.0, **h)))
                        .map(|(p, h)| (at(*p), at((p.0, *h))))
                        .unzip();
                    let outline: Vec<(f64, f64)> =
                        lo.into_iter().chain(hi.into_iter().rev()).collect();
                    chart
                        .draw_series([Polygon::new(outline, c.mix(BAND_ALPHA).filled())])
                        .map_err(e)?;
                }
                Mark::Line | Mark::Dashed | Mark::Steps => {
                    let (dash, gap) = s.pattern();
                    let style = c.stroke_width(3);
                    if dash == 0 {
                        chart.draw_series(LineSeries::new(pts, style)).map_err(e)?;
                    } else {
                        chart
                            .draw_series(DashedLineSeries::new(pts, dash, gap, style))
                            .map_err(e)?;
                    }
                }
                Mark::Points { ci, open } => {
                    let dx_at = |x: f64| dodge.get(&(si, x.to_bits())).copied().unwrap_or(0);
                    let style = c.stroke_width(2);
                    let area = chart.plotting_area();
                    // The bar and its ends as plain strokes in pixels from the point (plotters'
                    // `ErrorBar` adds a hollow circle at the point, a ring around square or
                    // triangle markers): a cap at a closed end, an arrow pointing on at an open
                    // one. On a log axis a low end that is not positive starts at the point.
                    let points = s.points.iter().zip(ci).zip(open);
                    for ((p, c), o) in points.filter(|((p, _), _)| keep(p)) {
                        let dx = dx_at(p.0);
                        let pixel = |v: f64| area.map_coordinate(&(tx(p.0), ty(v))).1;
                        let y = pixel(p.1);
                        let lo = if y_log && c.0 <= 0.0 { y } else { pixel(c.0) } - y;
                        let hi = pixel(c.1) - y;
                        let mut strokes = vec![vec![(dx, lo), (dx, hi)]];
                        // Pixel y grows downwards: below is +, above is -.
                        for (end, is_open, down) in [(lo, o.0, 1), (hi, o.1, -1)] {
                            if is_open {
                                let tip = end + down * OPEN_ARROW_PX;
                                strokes.push(vec![(dx, end), (dx, tip)]);
                                let back = tip - down * 7;
                                strokes.push(vec![(dx - 5, back), (dx, tip), (dx + 5, back)]);
                            } else {
                                strokes.push(vec![(dx - 6, end), (dx + 6, end)]);
                            }
                        }
                        for path in strokes {
                            let at = EmptyElement::at((tx(p.0), ty(p.1)));
                            area.draw(&(at + PathElement::new(path, style)))
                                .map_err(e)?;
                        }
                    }
                    for (p, drawn) in kept.iter().zip(&pts) {
                        draw_marker(area, *drawn, dx_at(p.0), c, s.marker()).map_err(e)?;
                    }
                }
            }
        }
        // Values below a log axis's floor: a hollow downward triangle on the bottom edge in
        // the series' colour (the x label says so).
        for (px, i) in this.below_floor((x0, x1), y0) {
            let c = PALETTE[this.series[i].color % PALETTE.len()];
            let tri = EmptyElement::at((tx(px), ty(y0)))
                + PathElement::new(
                    vec![(-7, -14), (7, -14), (0, -1), (-7, -14)],
                    c.stroke_width(2),
                );
            chart.plotting_area().draw(&tri).map_err(e)?;
        }
        let entries: Vec<Entry> = labelled
            .iter()
            .map(|s| Entry {
                series: s,
                marker: this.points_marker(s),
            })
            .collect();
        if strip.is_none() && !entries.is_empty() {
            let area = chart.plotting_area().strip_coord_spec();
            draw_legend_box(&area, &entries, legend, this.legend_pixels()).map_err(e)?;
        }
        if let Some(strip) = strip {
            draw_legend_strip(&strip, &entries, &this.strip_columns()).map_err(e)?;
        }
        Ok(())
    }
}

impl Figure for LinePlot {
    /// [`SIZE`], taller by the legend strip when the legend goes below the axes (the axes keep
    /// their size).
    fn size(&self) -> (u32, u32) {
        (SIZE.0, SIZE.1 + self.merged().strip_height())
    }

    /// [`LinePlot::paint`], then the backend's output.
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        self.paint(&root)?;
        root.present().map_err(|x| x.to_string())
    }

    /// No point in any series (axes and a legend only), a linear axis whose values (all of one
    /// sign) span more than two decades, and legend entries that differ only in colour (same
    /// mark, same dash or marker).
    fn defects(&self) -> Vec<String> {
        self.content_defects()
    }
}
