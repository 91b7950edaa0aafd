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

/// Okabe-Ito colours (colour-blind safe).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// One named line.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points (x, y), x increasing.
    pub points: Vec<(f64, f64)>,
}

/// A line plot with a log-scale x axis.
#[derive(Clone, Debug)]
pub struct LinePlot {
    /// Caption above the plot.
    pub title: String,
    /// x-axis label, with its symbol.
    pub x_label: String,
    /// y-axis label, with its symbol.
    pub y_label: String,
    /// Whether the y axis is log-scale too.
    pub y_log: bool,
    /// The lines.
    pub series: Vec<Series>,
}

const SIZE: (u32, u32) = (1000, 700);

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

impl LinePlot {
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let pts = || self.series.iter().flat_map(|s| s.points.iter());
        let fold = |f: fn(&(f64, f64)) -> f64| {
            pts()
                .map(f)
                .filter(|v| v.is_finite())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                    (a.0.min(v), a.1.max(v))
                })
        };
        let x = fold(|p| p.0);
        let y = if self.y_log {
            let (lo, hi) = pts()
                .map(|p| p.1)
                .filter(|v| *v > 0.0 && v.is_finite())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                    (a.0.min(v), a.1.max(v))
                });
            (lo / 2.0, hi * 2.0)
        } else {
            let (lo, hi) = fold(|p| p.1);
            let pad = 0.05 * (hi - lo).max(1e-12);
            (lo - pad, hi + pad)
        };
        (x, y)
    }

    /// Writes `stem.png` and `stem.svg`.
    pub fn save(&self, stem: &Path) -> Result<()> {
        register_font();
        for ext in ["png", "svg"] {
            let path = stem.with_extension(ext);
            super::atomic::ensure_parent(&path)?;
            let tmp = path.with_extension(format!("{ext}.tmp.{ext}"));
            let fail = |message: String| Error::Figure {
                path: path.display().to_string(),
                message,
            };
            let drawn = if ext == "png" {
                self.draw(BitMapBackend::new(&tmp, SIZE).into_drawing_area())
            } else {
                self.draw(SVGBackend::new(&tmp, SIZE).into_drawing_area())
            };
            if let Err(m) = drawn {
                let _ = std::fs::remove_file(&tmp);
                return Err(fail(m));
            }
            std::fs::rename(&tmp, &path).map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

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
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.title, (FONT, 30))
            .margin(20)
            .margin_right(45)
            .x_label_area_size(70)
            .y_label_area_size(110);
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
                for (i, s) in self.series.iter().enumerate() {
                    let c = PALETTE[i % PALETTE.len()];
                    let pts: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .copied()
                        .filter(|p| {
                            p.0.is_finite() && p.1.is_finite() && (!self.y_log || p.1 > 0.0)
                        })
                        .collect();
                    chart
                        .draw_series(LineSeries::new(pts, c.stroke_width(3)))
                        .map_err(e)?
                        .label(s.label.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 30, y)], c.stroke_width(3))
                        });
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperLeft)
                    .label_font((FONT, 24))
                    .legend_area_size(45)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(e)?;
            }};
        }
        if self.y_log {
            body!(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                    .map_err(e)?
            );
        } else {
            body!(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                    .map_err(e)?
            );
        }
        root.present().map_err(e)?;
        Ok(())
    }
}
