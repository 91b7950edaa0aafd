//! # normscope
//!
//! Settles, with numbers, where normalization belongs in a residual network. One block model
//! covers the placements (THEORY.md section 2):
//!
//! ```text
//! x_l = N_out( alpha_l x_{l-1} + lambda_l N_br( F_l( N_in(x_{l-1}) ) ) )
//! ```
//!
//! Data flows one way:
//!
//! ```text
//! placement (presets) -> spec::StackSpec -> branch::BranchModel
//!     -> theory::MeanField (closed form)   -> profile::Row -> output (CSV, figures)
//!     -> symbolic::expand (exact algebra)  -> text / LaTeX / CSV
//!     -> monte_carlo (sampled networks)    -> profile::Row (with CIs) -> run::compare
//! ```
//!
//! - [`spec`]: the declarative block and stack.
//! - [`placement`]: one file per preset (pre, post, deepnorm, sandwich/peri, lns, admin, mixln,
//!   rezero) and the registry everything iterates.
//! - [`branch`]: inits, activation kernels, and the branch's mean-field summary.
//! - [`theory`]: the infinite-width recursion in log space, path-length laws, tidy rows.
//! - [`symbolic`]: exact coefficients `C_{L,j}` as products of rational powers.
//! - [`monte_carlo`]: sampled finite-width networks with forward, JVP and backward passes, every
//!   metric with a 95% confidence interval, seeded per network for byte-identical output.
//! - [`mod@bench`]: the reference workload against plain PyTorch.
//! - [`metrics`]: the metric registry (names shared by every engine).
//! - [`output`]: polars CSV, plotters figures, atomic writes.
//! - [`config`], [`cli`], [`run`]: checked configuration, the clap front end, the commands.
//! - [`analyses`]: the analyses that regenerate `data/` and `figures/` (source in `analyses/`).

#![warn(missing_docs)]

pub mod bench;
pub mod branch;
pub mod cli;
pub mod compare;
pub mod config;
pub mod engine;
pub mod error;
pub mod layers;
pub mod metrics;
pub mod monte_carlo;
pub mod output;
pub mod placement;
pub mod profile;
pub mod run;
pub mod spec;
pub mod symbolic;
pub mod tables;
pub mod theory;

#[path = "../analyses/mod.rs"]
pub mod analyses;

pub use error::{Error, Result};
