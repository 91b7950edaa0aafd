//! The line plot: closed form as lines, Monte Carlo as points with 95% intervals, and where its
//! legend goes. Its methods are spread by concern: the axes' ranges (`axes`), the plot as
//! drawn (`merged`), its layout (`layout`), the legend's place and drawing (`legend`), its
//! drawing (`draw`) and its own defect checks (`checks`).

use crate::figure::save;
use crate::series::Series;
use normscope_core::Result;
use std::path::Path;

/// Where a plot's legend goes.
///
/// # Examples
///
/// A new plot places its legend automatically; any corner can be asked for instead.
///
/// ```rust
/// use normscope_figure::{Legend, LinePlot};
///
/// let mut plot = LinePlot::new("q_l", "layer l", "q_l");
/// assert_eq!(plot.legend, Legend::Auto);
/// plot.legend = Legend::LowerRight;
/// assert_eq!(plot.merged().legend, Legend::LowerRight);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legend {
    /// The first corner free of data, else below the axes (see [`LinePlot::auto_legend`]).
    Auto,
    /// Upper left corner.
    UpperLeft,
    /// Upper right corner.
    UpperRight,
    /// Lower left corner.
    LowerLeft,
    /// Lower right corner.
    LowerRight,
    /// Below the axes, in two columns: where no corner is free of data.
    Outside,
}

/// A line plot: closed form as lines, Monte Carlo as points with 95% CI bars.
///
/// # Examples
///
/// Two presets with the same closed-form line share one legend entry once merged, and the
/// labels turn into Unicode math (`alpha` to `α`). [`render`](crate::render) draws it in memory
/// (PNG, SVG, PDF) at the one-column [`SIZE`](crate::SIZE).
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_figure::{LinePlot, SIZE, Series, render};
/// use std::path::Path;
///
/// let mut plot = LinePlot::new("Skip gain", "layer l", "alpha");
/// assert!(plot.x_log && !plot.y_log);
/// let pts = vec![(1.0, 1.0), (2.0, 0.5), (4.0, 0.25)];
/// plot.series.push(Series::line("Pre-LN", 0, pts.clone()));
/// plot.series.push(Series::line("Peri-LN", 1, pts));
/// let merged = plot.merged();
/// assert_eq!(merged.y_label, "α");
/// assert_eq!(merged.series[0].label, "Pre-LN = Peri-LN");
/// assert_eq!(merged.series[1].label, "");
///
/// let drawn = render(&plot, Path::new("skip_gain"))?;
/// assert!(drawn.png.starts_with(b"\x89PNG"));
/// assert!(drawn.pdf.starts_with(b"%PDF"));
/// assert_eq!(SIZE, (990, 750));
/// # Ok(())
/// # }
/// ```
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
    /// Whether coinciding lines share one legend entry ([`LinePlot::merged`]); off for the
    /// panels of one figure, whose colours must mean the same series in every panel.
    pub fold: bool,
    /// A shaded stretch of the x axis, from this value to the right edge: where Monte Carlo
    /// at a finite width is expected to leave the infinite-width closed form. The x label
    /// says what it marks.
    pub shade_from: Option<f64>,
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
            fold: true,
            shade_from: None,
        }
    }

    /// The series with a legend entry, in legend order.
    pub(crate) fn labelled(&self) -> impl Iterator<Item = &Series> {
        self.series.iter().filter(|s| !s.label.is_empty())
    }

    /// Writes `stem.png`, `stem.svg` and `stem.pdf` (see [`save`]).
    pub fn save(&self, stem: &Path) -> Result<()> {
        save(self, stem)
    }
}
