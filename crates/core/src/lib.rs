//! # normscope-core
//!
//! The engines of normscope, which settles with numbers where normalization belongs in a
//! residual network. One block model covers the placements (`docs/theory.md`, "The block
//! model"):
//!
//! ```text
//! x_l = N_out( alpha_l x_{l-1} + lambda_l N_br( F_l( N_in(x_{l-1}) ) ) )
//! ```
//!
//! ## A tour: data flows one way
//!
//! ```text
//! placement (presets) -> spec::StackSpec ---------------+
//! branch (BranchKind: MeanFieldBranch + Module<T>) -----+-> engine::Engine::profile(spec, plan)
//!                                                       |     closed_form::ClosedForm   (exact)
//!                                                       |     monte_carlo::MonteCarlo (95% CIs)
//!                                                       |   -> profile::Profile (keyed by metrics::Metric)
//!                                                       |   -> profile::Row -> output (CSV, LaTeX), normscope-figure (figures)
//!                                                       +-> symbolic::expand (exact algebra) -> symbolic::render
//! ```
//!
//! - [`spec`]: the declarative block and stack; [`placement`]: one file per preset and the
//!   registry everything iterates.
//! - [`branch`]: one file per branch (`linear`, `mlp`, `attention`, `cross_attention`,
//!   `transformer`), each with its mean-field kernel ([`branch::MeanFieldBranch`]) and its
//!   sampled module ([`branch::Module`], generic over f32/f64); the one activation
//!   definition; inits.
//! - [`engine`]: the one interface of both engines, [`engine::Engine::profile`] on a checked
//!   [`spec::StackSpec`] and an [`engine::Plan`].
//! - [`theory`]: the mathematics of the closed form: the infinite-width recursion in log
//!   space, path-length laws, the 1/d correction's factors.
//! - [`closed_form`]: the closed-form engine, the recursion of a stack turned into an exact
//!   profile (and the 1/d correction applied to its rows).
//! - [`monte_carlo`]: sampled finite-width networks with forward, JVP and backward passes,
//!   seeded per network for byte-identical output at any thread count.
//! - [`metrics`]: one file per metric (definition, equation, source, the raw quantities it
//!   needs from each engine, its finite-width allowance), behind one registry, and the raw
//!   quantities both engines fill ([`metrics::closed`], [`metrics::sampled`]).
//! - [`profile`]: the typed per-layer table and the tidy row; [`tables`]: rows of many
//!   presets; [`compare`]: the two engines joined key by key.
//! - [`symbolic`]: exact coefficients `C_{L,j}` as products of rational powers, rendered as
//!   text, LaTeX or CSV.
//! - [`output`]: polars CSV, LaTeX tables, atomic writes, progress bar (figures are drawn
//!   in `normscope-figure`, `crates/figure`, above this crate).
//! - [`model`], [`layers`], [`error`]: checked model parameters and layer selections (every
//!   error names its field).
//! - [`budget`]: the memory a process may use and the work cap, checked before a run
//!   allocates anything (each engine's own estimates: [`monte_carlo::size`], the closed
//!   form's plan).
//! - [`train`]: trainable models of the same stacks, their gradients, optimizers, schedules,
//!   seeded tasks and the training log (`docs/training.md`).
//!
//! Below this crate, `normscope-numeric` (`crates/numeric`) holds the floats, products, RNG,
//! normal sampler, sampling estimates and tolerances; above it, `normscope-figure`
//! (`crates/figure`) draws the figures (PNG, SVG, PDF) and checks them, `normscope-analyses`
//! (`analyses/`) holds the analyses that regenerate `data/` and `figures/`, and the
//! `normscope` binary (`src/`: clap types, command glue) is the application; the benches are
//! their own binary, `normscope-bench` (`crates/bench`).
//!
//! ## Recipes
//!
//! `CONTRIBUTING.md` has every recipe with its file counts (checked by `tests/it/recipes.rs`);
//! in short:
//!
//! **A metric** (1 new file, 1 edited): add `crates/core/src/metrics/<name>.rs` with its
//! definition and source in the module docs, an [`metrics::Info`] (`INFO`: name, layers,
//! source column, the raw quantities a sampled network computes for it ([`metrics::Needs`]),
//! what the closed form keeps for it ([`metrics::Keeps`]), its allowance reach and scale, its
//! figure title, whether the closed form carries it beyond f64's range, its finite-width
//! correction, ...) and `closed_form(q, l, put)` and `sampled(q, l, put)`; then in
//! `crates/core/src/metrics/mod.rs` add `pub mod <name>;` and one line to the `registry!`
//! invocation. The compiler lists every `Info` field and function left out; the engines, the
//! CLI, help text, table parser, comparison and figure titles read [`metrics::Metric::ALL`]
//! and `Info`, never a metric's name. If it needs a raw quantity no pass computes yet, add a
//! [`metrics::Needs`] flag and its pass in [`monte_carlo::measure`] (or a
//! [`metrics::Keeps`] flag and its field of [`metrics::closed::Quantities`]).
//!
//! **A branch** (1 new file, 5 edited): add `crates/core/src/branch/<name>.rs` with its
//! registry entry ([`branch::KindInfo`]), its mean-field kernel (a
//! [`branch::MeanFieldBranch`], if the closed form has it) and its sampled module (a
//! [`branch::Module`]); then add its [`branch::BranchKind`] variant (and, for a new module
//! shape, its [`branch::Block`] variant) in `crates/core/src/branch/mod.rs` and its
//! [`branch::Branch`] variant in `crates/core/src/branch/drawn.rs`. Every match over kinds
//! and modules is exhaustive, so the compiler lists each arm to add: in `branch/` (`info`,
//! `block`, `closed_form_proxy`, `summary`, the dispatch) and in
//! `crates/core/src/monte_carlo/sampler.rs` (drawing), `crates/core/src/monte_carlo/size.rs`
//! (memory and work) and `crates/core/src/train/dump.rs` (JSON).
//!
//! **A preset** (1 new file, 1 edited): add `crates/core/src/placement/<name>.rs` with its
//! equation, source and `build(depth) -> StackSpec`, then its `mod` line and its line in
//! [`placement::REGISTRY`] in `crates/core/src/placement/mod.rs`.
//!
//! **An optimizer** (1 new file, 1 edited): add `crates/core/src/train/optim/<name>.rs` with
//! its equations, its hyperparameters declared once (flags, defaults, checks and JSON derived
//! from them) and its [`train::optim::Algorithm`] (state and step), then its `mod` line and its
//! line in the registry (`optimizers!`, making [`train::optim::OptimizerKind`]) in
//! `crates/core/src/train/optim/mod.rs`.

#![deny(unsafe_code)]

pub mod branch;
pub mod budget;
pub mod closed_form;
pub mod compare;
pub mod engine;
pub mod error;
pub mod input;
pub mod interrupt;
pub mod layers;
pub mod metrics;
pub mod model;
pub mod monte_carlo;
pub mod norms;
pub mod output;
pub mod placement;
pub mod profile;
pub mod spec;
pub mod stats;
pub mod symbolic;
pub mod tables;
pub mod theory;
pub mod train;

pub use error::{Error, Result};
