//! `normscope-bench`'s arguments.

use clap::Parser;
use normscope::monte_carlo::Precision;
use std::path::PathBuf;

/// The performance targets, each against a reference measured in the same run.
#[derive(Parser, Debug)]
#[command(name = "normscope-bench", version = normscope::analyses::manifest::VERSION, after_help = "Examples:
  normscope-bench --no-torch
  normscope-bench --python /path/to/venv/bin/python
  normscope-bench --train --python /path/to/venv/bin/python
  normscope-bench --train-grid --python /path/to/venv/bin/python
  normscope-bench --all --python /path/to/venv/bin/python
  normscope-bench --train --precision f64 --repeats 5 --python /path/to/venv/bin/python
  normscope-bench --shards 8 --quick --nodes 100

From the repository: cargo run --release -p normscope-bench -- --all --python VENV/bin/python")]
pub struct BenchArgs {
    /// Python interpreter with PyTorch installed.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// The PyTorch reference script.
    #[arg(long, default_value = "benches/torch_reference.py")]
    pub script: PathBuf,
    /// A small workload (smoke test) instead of the reference size.
    #[arg(long)]
    pub quick: bool,
    /// Skip the PyTorch run (print normscope's numbers only, and the GEMM rate without --train).
    #[arg(long)]
    pub no_torch: bool,
    /// Time training instead: Pre-LN and Post-LN decoder-only Transformers (d = 64, 4 heads,
    /// L = 12, seq 32, batch 16) trained with Adam for 200 steps, against plain PyTorch eager.
    #[arg(long)]
    pub train: bool,
    /// Time one cell of the training analyses' Transformer tier instead: 10 seeds of Post-LN
    /// (d = 32, 4 heads, L = 12 blocks, seq 16, batch 16, 300 Adam steps) against PyTorch's
    /// eager loop over the seeds and its vmap ensemble (the ratio to the better; target >= 3x
    /// in f32).
    #[arg(long, conflicts_with = "train")]
    pub train_grid: bool,
    /// Every performance target in one run: the Monte Carlo workload (GEMM rates, PyTorch
    /// ratio, memory), then the training workload (--train) and the training-grid cell
    /// (--train-grid), then a summary with one line per target and its verdict.
    #[arg(long, conflicts_with_all = ["train", "train_grid", "shards", "memory_probe"])]
    pub all: bool,
    /// Times each side this many times and judges the medians: with --train each training
    /// side, alternating; for the Monte Carlo workload (plain, or --all) the GEMM rates and
    /// normscope's run, in rounds.
    #[arg(
        long,
        default_value_t = crate::common::DEFAULT_REPEATS,
        value_name = "N",
        conflicts_with_all = ["shards", "memory_probe"]
    )]
    pub repeats: usize,
    /// The PyTorch training reference script (for --train and --all).
    #[arg(long, default_value = "benches/torch_train_reference.py")]
    pub train_script: PathBuf,
    /// The PyTorch ensemble script (for --train-grid and --all).
    #[arg(long, default_value = "benches/torch_ensemble.py")]
    pub ensemble_script: PathBuf,
    /// Measure sharding instead: finite-width and warmup unsharded, as N shards run one
    /// after another, and merged; overhead per unit and a projection for --nodes nodes.
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
    /// Cluster size for the --shards projection.
    #[arg(long, default_value_t = 100)]
    pub nodes: usize,
    /// With --shards: only these of finite-width, warmup (comma-separated; both if absent).
    #[arg(long, value_delimiter = ',')]
    pub analyses: Vec<String>,
    /// With --shards: a `reproduce --config` TOML file for the measured analyses (e.g. a grid
    /// between --quick and the full run).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only this precision (f64 or f32): GEMM rates, normscope, PyTorch in the same dtype, and
    /// memory (with --train: normscope's and PyTorch's training in that dtype); both if absent.
    #[arg(long, value_enum)]
    pub precision: Option<Precision>,
    /// Depths L of the peak-memory measurement (one network each, in a child process).
    #[arg(long, value_delimiter = ',', value_name = "L,...")]
    pub memory_depths: Vec<usize>,
    /// Internal: sample and measure one network of depth L and print its peak memory as JSON.
    #[arg(long, value_name = "L", hide = true)]
    pub memory_probe: Option<usize>,
}
