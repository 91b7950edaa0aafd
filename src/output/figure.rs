//! Figures through plotters, as PNG and SVG, with DejaVu Sans embedded (the `dejavu` crate) and
//! registered for plotters' `ab_glyph` text, so no system font or package is needed.
//!
//! Sized for one column of a two-column paper: 1000 x 700 px (3.3 in at 300 dpi), labels
//! 26-30 px.

use crate::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// The family name the embedded font is registered under.
pub const FONT: &str = "sans-serif";

/// Registers DejaVu Sans once per process.
pub fn register_font() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("embedded DejaVu Sans is a valid font"));
    });
}

/// Okabe-Ito colours (colour-blind safe), then grey for the Monte Carlo legend entry
/// ([`MC_COLOR`]).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(110, 110, 110),
];

/// Palette index of the grey "Monte Carlo, 95% CI" legend entry.
pub const MC_COLOR: usize = 7;

/// How a series is drawn.
#[derive(Clone, Debug)]
pub enum Mark {
    /// A solid line (closed form).
    Line,
    /// A dashed line (a second closed-form family).
    Dashed,
    /// Markers with vertical 95% confidence bars `(low, high)` per point (Monte Carlo).
    Points {
        /// The interval of each point, in the order of `points`.
        ci: Vec<(f64, f64)>,
    },
}

/// One named series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label (empty: no legend entry).
    pub label: String,
    /// Points (x, y), x increasing.
    pub points: Vec<(f64, f64)>,
    /// Line or points with intervals.
    pub mark: Mark,
    /// Index into [`PALETTE`], so a preset's line and points share a colour.
    pub color: usize,
}

impl Series {
    /// A closed-form line.
    pub fn line(label: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.into(),
            points,
            mark: Mark::Line,
            color,
        }
    }

    /// Monte Carlo points `(x, y, ci_low, ci_high)`.
    pub fn points(label: impl Into<String>, color: usize, pts: &[(f64, f64, f64, f64)]) -> Self {
        Series {
            label: label.into(),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            mark: Mark::Points {
                ci: pts.iter().map(|p| (p.2, p.3)).collect(),
            },
            color,
        }
    }

    /// Every y value this series draws (points and interval ends).
    fn ys(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.points.iter().map(|p| p.1).collect();
        if let Mark::Points { ci } = &self.mark {
            v.extend(ci.iter().flat_map(|c| [c.0, c.1]));
        }
        v
    }
}

/// Where a plot's legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legend {
    /// The corner with the least data under it (see [`LinePlot::auto_legend`]).
    Auto,
    /// Upper left corner.
    UpperLeft,
    /// Upper right corner.
    UpperRight,
    /// Lower left corner.
    LowerLeft,
    /// Lower right corner.
    LowerRight,
}

impl Legend {
    fn position(self) -> SeriesLabelPosition {
        match self {
            Legend::Auto => SeriesLabelPosition::UpperLeft,
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
        }
    }
}

/// A line plot: closed form as lines, Monte Carlo as points with 95% CI bars.
#[derive(Clone, Debug)]
pub struct LinePlot {
    /// Caption above the plot.
    pub title: String,
    /// x-axis label, with its symbol.
    pub x_label: String,
    /// y-axis label, with its symbol.
    pub y_label: String,
    /// Whether the x axis is log-scale.
    pub x_log: bool,
    /// Whether the y axis is log-scale.
    pub y_log: bool,
    /// Where the legend goes.
    pub legend: Legend,
    /// The series.
    pub series: Vec<Series>,
}

/// Default size: one column of a two-column paper at 300 dpi.
pub const SIZE: (u32, u32) = (1000, 700);

/// Compact tick text: `1e6` style outside [0.01, 10^4), trailing `.0` dropped inside.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(0.01..10_000.0).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        if (m.abs() - 1.0).abs() < 1e-9 {
            format!("{}1e{e}", if v < 0.0 { "-" } else { "" })
        } else {
            format!("{m:.1}e{e}")
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Something drawn on a plotters drawing area, saved by [`save`].
pub trait Figure {
    /// Pixel size (width, height).
    fn size(&self) -> (u32, u32) {
        SIZE
    }

    /// Draws onto `root`.
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static;
}

/// A figure drawn in memory.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The PNG file's bytes (the encoding plotters' bitmap backend writes to a file).
    pub png: Vec<u8>,
    /// The SVG file's bytes.
    pub svg: Vec<u8>,
}

/// Draws `fig` in memory as PNG and SVG; `stem` (the path without extension) only names it in
/// errors. Nothing touches the file system.
pub fn render(fig: &impl Figure, stem: &Path) -> Result<Rendered> {
    register_font();
    let (w, h) = fig.size();
    let fail = |ext: &str, message: String| Error::Figure {
        path: stem.with_extension(ext).display().to_string(),
        message,
    };
    let mut rgb = vec![0u8; 3 * w as usize * h as usize];
    fig.draw(BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area())
        .map_err(|m| fail("png", m))?;
    let mut png = std::io::Cursor::new(Vec::new());
    image::write_buffer_with_format(
        &mut png,
        &rgb,
        w,
        h,
        image::ColorType::Rgb8,
        image::ImageFormat::Png,
    )
    .map_err(|e| fail("png", e.to_string()))?;
    let mut svg = String::new();
    fig.draw(SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area())
        .map_err(|m| fail("svg", m))?;
    Ok(Rendered {
        png: png.into_inner(),
        svg: svg.into_bytes(),
    })
}

/// Writes `stem.png` and `stem.svg`, each atomically ([`super::atomic`]); an error names the
/// file.
pub fn save(fig: &impl Figure, stem: &Path) -> Result<()> {
    let r = render(fig, stem)?;
    super::atomic::write_bytes(&stem.with_extension("png"), &r.png)?;
    super::atomic::write_bytes(&stem.with_extension("svg"), &r.svg)
}

impl LinePlot {
    /// A plot with a log x axis, linear y, legend upper left and no series yet.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LinePlot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: true,
            y_log: false,
            legend: Legend::Auto,
            series: Vec::new(),
        }
    }

    /// The corner whose legend box would cover the fewest drawn samples: every point, interval
    /// end, and 20 samples along each line segment, in axis-normalized coordinates. The box is
    /// sized from the number of entries and the longest label. Ties go to upper left, upper
    /// right, lower left, lower right, in that order.
    pub fn auto_legend(&self, x: (f64, f64), y: (f64, f64)) -> Legend {
        let norm = |v: f64, (lo, hi): (f64, f64), log: bool| {
            if log {
                (v / lo).ln() / (hi / lo).ln()
            } else {
                (v - lo) / (hi - lo)
            }
        };
        let labelled: Vec<&Series> = self.series.iter().filter(|s| !s.label.is_empty()).collect();
        let longest = labelled
            .iter()
            .map(|s| s.label.chars().count())
            .max()
            .unwrap_or(0);
        // Plot area is about 800 x 540 px; an entry is ~30 px tall, a character ~11 px wide.
        let w = ((longest as f64 * 11.0 + 70.0) / 800.0).min(1.0);
        let h = ((labelled.len() as f64 * 30.0 + 20.0) / 540.0).min(1.0);
        let mut samples = Vec::new();
        for s in &self.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|p| (norm(p.0, x, self.x_log), norm(p.1, y, self.y_log)))
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            samples.extend(pts.iter().copied());
            if matches!(s.mark, Mark::Line | Mark::Dashed) {
                for w2 in pts.windows(2) {
                    for k in 1..20 {
                        let t = k as f64 / 20.0;
                        samples.push((
                            w2[0].0 + t * (w2[1].0 - w2[0].0),
                            w2[0].1 + t * (w2[1].1 - w2[0].1),
                        ));
                    }
                }
            }
            if let Mark::Points { ci } = &s.mark {
                for (p, c) in s.points.iter().zip(ci) {
                    for v in [c.0, c.1] {
                        samples.push((norm(p.0, x, self.x_log), norm(v, y, self.y_log)));
                    }
                }
            }
        }
        let corners = [
            (Legend::UpperLeft, (0.0, w), (1.0 - h, 1.0)),
            (Legend::UpperRight, (1.0 - w, 1.0), (1.0 - h, 1.0)),
            (Legend::LowerLeft, (0.0, w), (0.0, h)),
            (Legend::LowerRight, (1.0 - w, 1.0), (0.0, h)),
        ];
        let covered = |(_, (a, b), (c, d)): &(Legend, (f64, f64), (f64, f64))| {
            samples
                .iter()
                .filter(|p| p.0 >= *a && p.0 <= *b && p.1 >= *c && p.1 <= *d)
                .count()
        };
        corners
            .iter()
            .min_by_key(|c| covered(c))
            .map_or(Legend::UpperLeft, |c| c.0)
    }

    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
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
                // values are not drawn.
                let lo = lo.max(hi * 1e-60);
                let pad = (hi / lo).powf(0.04).max(1.5);
                (lo / pad, hi * pad)
            } else {
                let pad = 0.05 * (hi - lo).max(1e-9 * hi.abs().max(1.0));
                (lo - pad, hi + pad)
            }
        };
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let ys = self.series.iter().flat_map(|s| s.ys()).collect();
        (span(xs, self.x_log), span(ys, self.y_log))
    }

    /// Writes `stem.png` and `stem.svg`.
    pub fn save(&self, stem: &Path) -> Result<()> {
        save(self, stem)
    }
}

impl Figure for LinePlot {
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let ((x0, x1), (y0, y1)) = self.ranges();
        let legend = match self.legend {
            Legend::Auto => self.auto_legend((x0, x1), (y0, y1)),
            fixed => fixed,
        };
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.title, (FONT, 30))
            .margin(20)
            .margin_right(45)
            .x_label_area_size(70)
            .y_label_area_size(110);
        let (x_log, y_log) = (self.x_log, self.y_log);
        let keep = move |p: &(f64, f64)| {
            p.0.is_finite()
                && p.1.is_finite()
                && (!x_log || p.0 > 0.0)
                && (!y_log || (p.1 >= y0 && p.1 <= y1))
        };
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(&self.x_label)
                    .y_desc(&self.y_label)
                    .label_style((FONT, 22))
                    .x_label_formatter(&|v| tick(*v))
                    .y_label_formatter(&|v| tick(*v))
                    .axis_desc_style((FONT, 26))
                    .light_line_style(WHITE.mix(0.0))
                    .draw()
                    .map_err(e)?;
                for s in &self.series {
                    let c = PALETTE[s.color % PALETTE.len()];
                    let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
                    match &s.mark {
                        Mark::Line | Mark::Dashed => {
                            let dashed = matches!(s.mark, Mark::Dashed);
                            let style = c.stroke_width(3);
                            let anno = if dashed {
                                chart
                                    .draw_series(DashedLineSeries::new(pts, 12, 8, style))
                                    .map_err(e)?
                            } else {
                                chart.draw_series(LineSeries::new(pts, style)).map_err(e)?
                            };
                            if !s.label.is_empty() {
                                anno.label(s.label.clone()).legend(move |(x, y)| {
                                    PathElement::new(vec![(x, y), (x + 30, y)], c.stroke_width(3))
                                });
                            }
                        }
                        Mark::Points { ci } => {
                            let bars: Vec<_> = s
                                .points
                                .iter()
                                .zip(ci)
                                .filter(|(p, _)| keep(p))
                                .map(|(p, c)| {
                                    let lo = if y_log && c.0 <= 0.0 { p.1 } else { c.0 };
                                    (p.0, lo, p.1, c.1)
                                })
                                .collect();
                            chart
                                .draw_series(bars.iter().map(|b| {
                                    ErrorBar::new_vertical(
                                        b.0,
                                        b.1,
                                        b.2,
                                        b.3,
                                        c.stroke_width(2),
                                        12,
                                    )
                                }))
                                .map_err(e)?;
                            let anno = chart
                                .draw_series(
                                    pts.iter()
                                        .map(|p| Circle::new(*p, 6, c.filled().stroke_width(1))),
                                )
                                .map_err(e)?;
                            if !s.label.is_empty() {
                                anno.label(s.label.clone())
                                    .legend(move |(x, y)| Circle::new((x + 15, y), 6, c.filled()));
                            }
                        }
                    }
                }
                chart
                    .configure_series_labels()
                    .position(legend.position())
                    .label_font((FONT, 20))
                    .legend_area_size(40)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(e)?;
            }};
        }
        let x = x0..x1;
        let y = y0..y1;
        match (x_log, y_log) {
            (true, true) => body!(
                builder
                    .build_cartesian_2d(x.log_scale(), y.log_scale())
                    .map_err(e)?
            ),
            (true, false) => body!(builder.build_cartesian_2d(x.log_scale(), y).map_err(e)?),
            (false, true) => body!(builder.build_cartesian_2d(x, y.log_scale()).map_err(e)?),
            (false, false) => body!(builder.build_cartesian_2d(x, y).map_err(e)?),
        }
        root.present().map_err(e)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
