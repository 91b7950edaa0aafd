//! Everything that leaves the process: tidy CSV tables (polars), figures (plotters), LaTeX
//! tables, atomic writes.

pub mod atomic;
pub mod figure;
pub mod heatmap;
pub mod latex;
pub mod table;
