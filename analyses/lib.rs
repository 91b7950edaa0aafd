//! Analyses: small programs over the library that regenerate `data/<id>/` and
//! `figures/<id>/`. Each has an id, an embedded default configuration (full and `--quick`),
//! accepts overrides from a TOML file ([`config_file`]), and ends with a `manifest.json` listing its
//! resolved configuration, seeds, source commit and the sha256 of every output ([`manifest`]).
//!
//! Every configuration is resolved and validated before anything runs, so bad input writes no
//! file. Adding an analysis is one new file here, its `pub mod` line and its line in
//! [`REGISTRY`], and its binary: `bin/<id>.rs` (three lines over [`binary::main`]) with its
//! `[[bin]]` entry in `Cargo.toml` (CONTRIBUTING.md's recipe).
//!
//! [`reproduce`] holds the output folder's lock ([`normscope_core::output::lock`]) for the whole run, so
//! a second writer is refused. Each analysis writes into a staging folder
//! ([`normscope_core::output::staging`]) and its two folders, `figures/<id>` and `data/<id>` (with the
//! manifest), are moved into place whole when it ends; an error, SIGINT or SIGTERM discards
//! the staging folder and leaves the analysis's earlier outputs as they were.

//!
//! ## Layers
//!
//! The crate's modules import downward only: [`runner`] (the machinery: [`Out`], manifests,
//! shards, configuration files) <- [`ledger`] (the claims' named thresholds) <- the analyses
//! (one file each, `common` and the training helpers) <- the ledger analysis [`claims`] and
//! the [`REGISTRY`] <- [`commands`] (`reproduce`, `merge`, `slurm`) <- [`binary`], the
//! entry point of the analysis binaries (`bin/<id>.rs`, one per analysis).

#![deny(unsafe_code)]

pub mod binary;
pub mod commands;
pub mod ledger;
pub mod runner;

pub mod adjacent_layers;
pub mod branch_gain;
pub mod branch_weights;
pub mod claims;
pub mod common;
pub mod convergence;
pub mod deepnorm_alpha;
pub mod effective_depth;
pub mod encoder_decoder;
pub mod expansion;
pub mod failure_mode;
pub mod finetune;
pub mod finite_width;
pub mod lr_search;
pub mod mc_grid;
pub mod norms;
pub mod optimizers;
pub mod output_change;
pub mod placement_file;
pub mod rank_collapse;
pub mod stability_law;
pub mod stream_gradients;
pub mod tier;
pub mod train_grid;
pub mod trained_lens;
pub mod training;
pub mod training_demo;
pub mod tuned;
pub mod warmup;

pub use commands::{Request, check_shardable, config_toml, merge, reproduce, slurm};
pub use runner::{
    Analysis, AnalysisConfig, Out, Prepared, Settings, Work, config_file, manifest, prepare, seed,
    shard, stale,
};

use normscope_core::{Error, Result};

/// Every analysis, in run order (`claims` reads the others' tables, so it comes after them;
/// the grid sweeps `mc-grid` and `train-grid`, which read nothing, are appended after it).
pub const REGISTRY: &[Analysis] = &[
    expansion::ANALYSIS,
    branch_weights::ANALYSIS,
    effective_depth::ANALYSIS,
    stream_gradients::ANALYSIS,
    adjacent_layers::ANALYSIS,
    output_change::ANALYSIS,
    deepnorm_alpha::ANALYSIS,
    rank_collapse::ANALYSIS,
    branch_gain::ANALYSIS,
    placement_file::ANALYSIS,
    training_demo::ANALYSIS,
    warmup::ANALYSIS,
    stability_law::ANALYSIS,
    convergence::ANALYSIS,
    optimizers::ANALYSIS,
    finetune::ANALYSIS,
    trained_lens::ANALYSIS,
    encoder_decoder::ANALYSIS,
    finite_width::ANALYSIS,
    norms::ANALYSIS,
    claims::ANALYSIS,
    mc_grid::ANALYSIS,
    train_grid::ANALYSIS,
];

/// Runs every analysis's [`Analysis::setup`] (the placement files the analyses ship are
/// loaded), before any configuration is resolved: what a configuration may name does not
/// depend on which analyses a run selects or their order.
pub fn setup_all() -> Result<()> {
    REGISTRY.iter().try_for_each(|a| (a.setup)())
}

/// The ids of [`REGISTRY`].
pub fn ids() -> Vec<&'static str> {
    REGISTRY.iter().map(|a| a.id).collect()
}

/// Finds an analysis by id.
pub fn find(id: &str) -> Result<&'static Analysis> {
    REGISTRY
        .iter()
        .find(|a| a.id == id)
        .ok_or_else(|| Error::Unknown {
            kind: "analysis",
            name: id.to_string(),
            valid: ids().join(", "),
        })
}
