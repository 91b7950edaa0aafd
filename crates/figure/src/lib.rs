//! # normscope-figure
//!
//! The figures of normscope's analyses, in one house style: line plots (closed form as
//! lines, Monte Carlo as points with 95% intervals), heatmaps and grids of panels, drawn
//! with plotters and written as PNG, SVG and PDF with DejaVu Sans embedded, so no system font
//! is read. Every figure is checked as it is drawn ([`inspect`], [`defects`]).
//!
//! Above `normscope-core` (its [`enum@normscope_core::Error`], atomic writes and console
//! notes) and below `normscope-analyses`, the only crate that draws figures; the engines
//! need none of the plotting crates.
//!
//! One concept a file, bottom to top:
//!
//! - `sizes`: paper and type sizes at [`DPI`] = 300; `font`: the embedded font; `text`:
//!   Unicode math in labels ([`math`]) and tick labels ([`tick`]); `style`: palette, dashes
//!   and markers.
//! - `figure`: the [`Figure`] trait, drawing in memory ([`render`]) and to files ([`save`]),
//!   the defect checks ([`defects`]); `encode`: the PNG and PDF encoders; [`inspect`]: the
//!   checks on a figure's text.
//! - The line plot: `series` ([`Series`], [`Mark`]), `line_plot` ([`LinePlot`], [`Legend`]),
//!   and its methods by concern: `layout`, `axes`, `merged` (the plot as drawn), `legend`
//!   (where it goes, how it is drawn), `draw` (the drawing), `checks` (its own defects).
//! - The other figures: [`heatmap`], and [`facets`], line plots in a grid of panels.

#![deny(unsafe_code)]

mod axes;
mod checks;
mod draw;
mod encode;
pub mod facets;
mod figure;
mod font;
pub mod heatmap;
pub mod inspect;
mod layout;
mod legend;
mod line_plot;
mod merged;
mod series;
mod sizes;
mod style;
mod text;

pub use figure::{Figure, Rendered, defects, render, save};
pub use font::{FONT, register_font};
pub use line_plot::{Legend, LinePlot};
pub use series::{Mark, Series};
pub use sizes::{
    DPI, ONE_COLUMN_IN, PLOTTERS_FONT_SCALE, SIZE, TICK_PX, TWO_COLUMN_IN, inches, points,
};
pub use style::{DASHES, MARKERS, MC_COLOR, PALETTE};
pub use text::{math, tick};
