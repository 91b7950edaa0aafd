//! Everything that leaves the process: tidy CSV tables (polars), figures (plotters), atomic
//! writes.

pub mod atomic;
pub mod figure;
pub mod table;
