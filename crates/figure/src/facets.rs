//! Several line plots in one figure, a grid of panels (`normscope plot --facet`): each panel a
//! [`LinePlot`] in the house style, drawn in its own cell.

use crate::figure::Figure;
use crate::line_plot::LinePlot;
use plotters::prelude::*;

/// Line plots side by side, `columns` to a row.
///
/// # Examples
///
/// Three panels two to a row take two rows of cells, each as large as the largest panel.
///
/// ```rust
/// use normscope_figure::facets::Facets;
/// use normscope_figure::{Figure, LinePlot, SIZE};
/// let f = Facets {
///     plots: vec![LinePlot::new("a", "x", "y"); 3],
///     columns: 2,
/// };
/// assert_eq!(f.size(), (2 * SIZE.0, 2 * SIZE.1));
/// ```
#[derive(Clone, Debug)]
pub struct Facets {
    /// The panels, in reading order.
    pub plots: Vec<LinePlot>,
    /// Panels per row (at least 1).
    pub columns: usize,
}

impl Facets {
    fn grid(&self) -> (usize, usize) {
        let cols = self.columns.clamp(1, self.plots.len().max(1));
        (self.plots.len().div_ceil(cols).max(1), cols)
    }

    fn cell(&self) -> (u32, u32) {
        self.plots
            .iter()
            .map(Figure::size)
            .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
    }
}

impl Figure for Facets {
    /// The grid of cells, each the size of the largest panel.
    fn size(&self) -> (u32, u32) {
        let (rows, cols) = self.grid();
        let (w, h) = self.cell();
        (w * cols as u32, h * rows as u32)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (rows, cols) = self.grid();
        for (plot, area) in self.plots.iter().zip(root.split_evenly((rows, cols))) {
            plot.paint(&area)?;
        }
        root.present().map_err(|e| e.to_string())
    }

    /// Every panel's defects ([`Figure::defects`] of a [`LinePlot`]).
    fn defects(&self) -> Vec<String> {
        self.plots.iter().flat_map(Figure::defects).collect()
    }
}
