//! Everything that leaves the process: tidy CSV tables (polars), LaTeX tables, atomic writes
//! (of one file, or of a file and its sidecar together: [`pair`]), standard output and error without panics, staging and the output folder's lock, the
//! progress bar. Figures are drawn above this crate, in `normscope-figure` (`crates/figure`),
//! which writes them through [`atomic`] and reports their defects through [`console`].

pub mod atomic;
pub mod console;
pub mod exit;
pub mod latex;
pub mod lock;
pub mod pair;
pub mod progress;
pub mod staging;
pub mod table;
