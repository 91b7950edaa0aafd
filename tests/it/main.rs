//! The integration tests, as one binary: each former `tests/<name>.rs` is the module
//! `<name>` here, so the binary (which links polars, plotters and the whole workspace) is
//! built and linked once instead of once per file.
//!
//! Select by module path: `cargo test --release --test it reproduce::` runs what was
//! `--test reproduce`, `cargo test --release --test it reproduce::golden` the golden-table
//! test. Fixtures stay where they were (`tests/golden/`, `tests/reference/`), found through
//! `CARGO_MANIFEST_DIR`.
//!
//! All modules share one process. None sets environment variables, the current directory,
//! signal handlers, rlimits or rayon's global pool; runs that need any of those are child
//! processes of the `normscope` binary. The process-global state the library keeps (the
//! placement registry of `placement::load`, the staging and temporary-file registries) is
//! safe to share. Tests that must not run beside each other take [`common::exclusive`].

mod common;

mod admin_profiling;
mod batch_norm;
mod citation;
mod cite;
mod cli;
mod dependencies;
mod doctests;
mod engines;
mod expansion;
mod f64_edge;
mod figure_checks;
mod finite_width;
mod gelu;
mod grids;
mod hand_cases;
mod hostile;
mod interrupt;
mod latex;
mod layers;
mod mc_agreement;
mod mc_determinism;
mod mc_identities;
mod mc_memory;
mod mc_slow;
mod non_finite;
mod norm_registry;
mod normal_sampler;
mod norms_torch;
mod numerics;
mod placements;
mod plot;
mod preflight;
mod properties;
mod python;
mod random_inputs;
mod recipes;
mod regenerate;
mod reproduce;
mod settings;
mod shard;
mod sidecar;
mod slurm;
mod train_cli;
mod train_gradients;
mod train_precision;
mod train_seq2seq;
mod train_sweep;
mod train_torch;
