//! Everything that leaves the process: tidy CSV tables (polars), figures (plotters), LaTeX
//! tables, atomic writes, the progress bar.

pub mod atomic;
pub mod figure;
pub mod heatmap;
pub mod latex;
pub mod progress;
pub mod table;
