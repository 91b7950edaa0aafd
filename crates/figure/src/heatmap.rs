//! Heatmaps (one panel per preset, shared log colour scale and colour bar), drawn with plotters'
//! Viridis colour map, saved through [`crate::save`].

use crate::figure::Figure;
use crate::font::{FONT, text_width};
use crate::sizes::{LABEL_PX, TICK_PX, TITLE_PX, TWO_COLUMN_IN, inches};
use crate::text::{math, tick};
use plotters::coord::Shift;
use plotters::prelude::*;

/// One panel: values on an integer grid `(x, y) -> v`.
///
/// # Examples
///
/// ```rust
/// use normscope_figure::heatmap::Panel;
///
/// let panel = Panel {
///     title: "Pre-LN".into(),
///     cells: vec![(0, 0, 1.0), (1, 0, 0.1), (0, 1, 0.01)],
/// };
/// assert_eq!(panel.cells.len(), 3);
/// assert_eq!(panel.cells[1], (1, 0, 0.1));
/// ```
#[derive(Clone, Debug)]
pub struct Panel {
    /// Panel caption (e.g. the preset's name as papers write it).
    pub title: String,
    /// Cells `(x, y, value)`; x and y are integer positions.
    pub cells: Vec<(u64, u64, f64)>,
}

/// Side-by-side heatmaps with one log10 colour scale.
///
/// # Examples
///
/// One panel on a log10 scale from `10^-2` to `10^0`; a heatmap is two columns of a paper wide
/// (6.9 in at 300 dpi = 2070 px).
///
/// ```rust
/// use normscope_figure::Figure;
/// use normscope_figure::heatmap::{Heatmap, Panel};
///
/// let map = Heatmap {
///     x_label: "layer l".into(),
///     y_label: "source j".into(),
///     value_label: "share".into(),
///     log10_range: (-2.0, 0.0),
///     panels: vec![Panel { title: "Pre-LN".into(), cells: vec![(0, 0, 1.0), (1, 0, 0.1)] }],
///     x_ticks: Vec::new(),
///     y_ticks: Vec::new(),
///     linear: None,
/// };
/// assert_eq!(map.size(), (2070, 760));
/// assert_eq!(map.panels[0].title, "Pre-LN");
/// ```
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// Colour-bar label.
    pub value_label: String,
    /// Colour range in log10 units `(lo, hi)`; values below `lo` (and zeros) get the lowest
    /// colour.
    pub log10_range: (f64, f64),
    /// The panels, left to right.
    pub panels: Vec<Panel>,
    /// Tick labels of the x positions `0, 1, ...`, at the cells' centres (empty: the
    /// positions' numbers at the cells' lower edges).
    pub x_ticks: Vec<String>,
    /// Tick labels of the y positions, as [`Self::x_ticks`].
    pub y_ticks: Vec<String>,
    /// A linear colour scale over `(lo, hi)` instead of the log10 one (for rates in [0, 1],
    /// where a zero must differ from the smallest non-zero value); `log10_range` is then
    /// unused.
    pub linear: Option<(f64, f64)>,
}

impl Heatmap {
    fn colour(&self, v: f64) -> RGBColor {
        let (lo, hi) = self.range();
        let t = match self.linear {
            Some(_) => v.clamp(lo, hi),
            None if v > 0.0 => v.log10().clamp(lo, hi),
            None => lo,
        };
        ViridisRGB::get_color_normalized(t, lo, hi)
    }

    /// The colour bar's range, in the units of the scale.
    fn range(&self) -> (f64, f64) {
        self.linear.unwrap_or(self.log10_range)
    }
}

/// plotters' default number of axis labels.
const DEFAULT_LABELS: usize = 11;

/// At most this many labels on an axis: one per cell when labelled, else plotters' default.
fn label_count(ticks: &[String]) -> usize {
    if ticks.is_empty() {
        DEFAULT_LABELS
    } else {
        ticks.len() + 1
    }
}

/// Label every k-th of `ticks` (k returned) so that labels fit cells `cell` px wide with a gap
/// of one tick label's height between them.
///
/// # Examples
///
/// ```rust
/// # use normscope_figure::heatmap::thinning;
/// let ticks: Vec<String> = ["64", "128", "256", "512", "1024"].map(String::from).to_vec();
/// assert_eq!(thinning(&ticks, 400.0), 1);
/// assert!(thinning(&ticks, 60.0) > 1);
/// ```
pub fn thinning(ticks: &[String], cell: f64) -> usize {
    let widest = ticks
        .iter()
        .map(|t| text_width(t, TICK_PX))
        .max()
        .unwrap_or(0);
    let need = f64::from(widest + TICK_PX / 2);
    if cell <= 0.0 {
        return 1;
    }
    ((need / cell).ceil() as usize).max(1)
}

/// The label of position `v` from `ticks` (cells centred on integer positions), or the
/// position's number when `ticks` is empty.
fn position_label(ticks: &[String], v: f64) -> String {
    if ticks.is_empty() {
        return tick(v);
    }
    let i = v.round();
    if (v - i).abs() > 1e-9 || i < 0.0 {
        return String::new();
    }
    ticks.get(i as usize).cloned().unwrap_or_default()
}

/// Width of a panel's y label area: four-digit tick labels and the rotated axis label beside
/// them, apart.
const Y_LABEL_AREA: u32 = 140;

/// Width of the colour bar's area (tick labels, bar, caption above).
const COLOUR_BAR_AREA: u32 = 330;

impl Figure for Heatmap {
    fn size(&self) -> (u32, u32) {
        // Two columns of a paper (6.9 in at 300 dpi), the colour bar included.
        (inches(TWO_COLUMN_IN), 760)
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
        let (w, _) = root.dim_in_pixel();
        let (left, bar) = root.split_horizontally(w - COLOUR_BAR_AREA);
        let panels = left.split_evenly((1, self.panels.len().max(1)));
        for (area, p) in panels.iter().zip(&self.panels) {
            let nx = p.cells.iter().map(|c| c.0).max().unwrap_or(0) + 1;
            let ny = p.cells.iter().map(|c| c.1).max().unwrap_or(0) + 1;
            // With tick labels, cell i spans [i - 1/2, i + 1/2] so its label sits at its centre.
            let sx = if self.x_ticks.is_empty() { 0.0 } else { 0.5 };
            let sy = if self.y_ticks.is_empty() { 0.0 } else { 0.5 };
            // Labels wider than their cells would run together: label every k-th cell.
            let plot_w = area.dim_in_pixel().0.saturating_sub(Y_LABEL_AREA + 2 * 15);
            let every = thinning(&self.x_ticks, plot_w as f64 / nx as f64);
            let mut chart = ChartBuilder::on(area)
                .caption(math(&p.title), (FONT, TITLE_PX))
                .margin(15)
                .x_label_area_size(85)
                .y_label_area_size(Y_LABEL_AREA)
                .build_cartesian_2d(-sx..nx as f64 - sx, -sy..ny as f64 - sy)
                .map_err(e)?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc(math(&self.x_label))
                .y_desc(math(&self.y_label))
                .label_style((FONT, TICK_PX))
                .axis_desc_style((FONT, LABEL_PX))
                .x_labels(label_count(&self.x_ticks))
                .y_labels(label_count(&self.y_ticks))
                .x_label_formatter(&|v| {
                    let i = v.round();
                    if i >= 0.0 && !(i as usize).is_multiple_of(every) {
                        return String::new();
                    }
                    position_label(&self.x_ticks, *v)
                })
                .y_label_formatter(&|v| position_label(&self.y_ticks, *v))
                .draw()
                .map_err(e)?;
            chart
                .draw_series(p.cells.iter().map(|&(x, y, v)| {
                    let (x, y) = (x as f64 - sx, y as f64 - sy);
                    Rectangle::new([(x, y), (x + 1.0, y + 1.0)], self.colour(v).filled())
                }))
                .map_err(e)?;
        }
        let (lo, hi) = self.range();
        // The bar's label is its caption, right above it.
        let mut cb = ChartBuilder::on(&bar)
            .caption(math(&self.value_label), (FONT, TICK_PX))
            .margin_top(15)
            .top_x_label_area_size(20)
            .margin_bottom(100)
            .margin_right(60)
            .y_label_area_size(100)
            .build_cartesian_2d(0f64..1.0, lo..hi)
            .map_err(e)?;
        cb.configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .label_style((FONT, TICK_PX))
            .y_label_formatter(&|v| match self.linear {
                Some(_) => tick(*v),
                None => format!("1e{}", v.round() as i64),
            })
            .draw()
            .map_err(e)?;
        let steps = 200;
        cb.draw_series((0..steps).map(|i| {
            let a = lo + (hi - lo) * i as f64 / steps as f64;
            let b = lo + (hi - lo) * (i + 1) as f64 / steps as f64;
            Rectangle::new(
                [(0.0, a), (1.0, b)],
                ViridisRGB::get_color_normalized(a, lo, hi).filled(),
            )
        }))
        .map_err(e)?;
        root.present().map_err(e)?;
        Ok(())
    }
}
