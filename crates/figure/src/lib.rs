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

#![deny(unsafe_code)]

pub mod facets;
mod figure;
pub mod heatmap;
pub mod inspect;

pub use figure::{
    DASHES, DPI, FONT, Figure, Legend, LinePlot, MARKERS, MC_COLOR, Mark, ONE_COLUMN_IN, PALETTE,
    PLOTTERS_FONT_SCALE, Rendered, SIZE, Series, TICK_PX, TWO_COLUMN_IN, defects, inches, math,
    points, register_font, render, save, tick,
};
