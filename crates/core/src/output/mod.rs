//! Everything that leaves the process: tidy CSV tables (polars), figures (plotters), LaTeX
//! tables, atomic writes, standard output and error without panics, staging and the output folder's lock, the progress bar.

pub mod atomic;
pub mod console;
pub mod exit;
pub mod facets;
pub mod figure;
pub mod heatmap;
pub mod inspect;
pub mod latex;
pub mod lock;
pub mod progress;
pub mod staging;
pub mod table;
