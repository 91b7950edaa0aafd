//! # normscope
//!
//! The facade of the workspace: one name for its four library crates, so that integration
//! tests, examples and the binary read `normscope::train::...` whichever crate holds the item.
//!
//! - [`numeric`] (`crates/numeric`): floats, GEMM, RNG, normals, estimates, tolerances.
//! - everything of `normscope-core` (`crates/core`) at the top level: [`spec`],
//!   [`placement`], [`branch`], [`metrics`], [`engine`], [`theory`], [`monte_carlo`],
//!   [`train`], [`stats`], [`symbolic`], [`output`], ...
//! - [`figure`] (`crates/figure`): line plots, heatmaps and panels as PNG, SVG and PDF, and
//!   the defect checks every figure passes.
//! - [`analyses`] (`analyses/`): the runs that regenerate `data/` and `figures/`, one binary
//!   per analysis.
//! - [`app`]: the command line's arguments, checks and commands, shared by the binary and the
//!   Python package (`python/`).
//!
//! The layers import downward only: numeric <- core <- figure <- analyses <- this facade
//! with [`app`] and the binary <- the bench binary (`crates/bench`) and the Python package.

#![deny(unsafe_code)]

pub mod app;

pub use normscope_analyses as analyses;
pub use normscope_core::*;
pub use normscope_figure as figure;
pub use normscope_numeric as numeric;
pub use normscope_numeric::tolerance;
