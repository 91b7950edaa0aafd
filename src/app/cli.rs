//! The clap front end. Raw arguments become [`crate::model`] values before anything runs.
//! Defaults come from [`RawModel::default`] and [`RawMc::default`], and the lists of metrics,
//! branches, inits and presets in the help text from the library's registries.

// The doc comments below are the commands' help text, written for a terminal: `<analysis>` in
// them is a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

use crate::analyses::commands::args::RunArgs;
use crate::branch::{BranchKind, Init};
use crate::input::literal_f64;
use crate::metrics::Metric;
use crate::model::{FinalNorm, RawModel};
use crate::monte_carlo::{Memory, Precision, RawMc};
use crate::spec::NormKind;
use crate::symbolic::render::Format;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// `--branch` help: the closed form's branches, and those only Monte Carlo runs.
fn branch_help() -> String {
    let mc_only: Vec<&str> = BranchKind::ALL
        .iter()
        .filter(|k| !k.info().closed_form)
        .map(|k| k.name())
        .collect();
    format!(
        "Branch F: {}; Monte Carlo (mc, compare) also {}",
        BranchKind::names(true),
        mc_only.join(", ")
    )
}

/// `--metrics` help, from the metric registry.
fn metrics_help() -> String {
    format!(
        "Metrics: all, or a comma-separated list of {}",
        Metric::names()
    )
}

/// `--preset` help, from the preset registry.
fn presets_help() -> String {
    let names: Vec<&str> = crate::placement::REGISTRY.iter().map(|p| p.name).collect();
    format!(
        "Comma-separated presets ({}, or a --placements file's); their rows are stacked",
        names.join(", ")
    )
}

/// `--branch` values for clap's value list and completions: every branch with its aliases (any
/// case); `theory` and `expand` explain when a branch has no closed form.
fn branch_values() -> PossibleValuesParser {
    PossibleValuesParser::new(BranchKind::ALL.map(|k| {
        let i = k.info();
        PossibleValue::new(i.name).aliases(i.aliases.iter().copied())
    }))
}

/// `--init` values for clap's value list and completions, with their aliases (any case).
fn init_values() -> PossibleValuesParser {
    PossibleValuesParser::new(
        Init::ALL.map(|i| PossibleValue::new(i.name()).aliases(i.aliases().iter().copied())),
    )
}

/// `--init` help.
fn init_help() -> String {
    format!("Init scheme: {}", Init::NAMES)
}

/// `--version`: the version, the commit built from and the toolchain.
pub const VERSION: &str = crate::analyses::manifest::VERSION;

/// normscope: where does normalization belong in a residual network?
///
/// Exact expansions, infinite-width closed forms and Monte Carlo on sampled finite-width
/// networks for Pre-Norm, Post-Norm, DeepNorm and their relatives. With no command, prints
/// this help; `normscope reproduce` regenerates the analyses into data/ and figures/.
#[derive(Debug, Parser)]
#[command(name = "normscope", version = VERSION, about, long_about, after_help = "Examples:
  normscope theory --preset pre,post --depth 256 --metrics eff_depth --layers last
  normscope mc --preset post --branch relu-mlp --init he --depth 64 --samples 16 --layers last
  normscope compare --preset deepnorm --depth 32 --metrics grad_sq --layers log:6
  normscope expand --preset post --depth 4 --format latex
  normscope reproduce --quick --out-dir /tmp/normscope
  normscope reproduce                  # regenerate data/ and figures/ here")]
pub struct Cli {
    /// The command (none: print this help).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Closed-form (infinite-width) metrics of every layer as a tidy CSV.
    #[command(after_help = "Examples:
  normscope theory --preset pre,post,deepnorm --depth 256 --metrics eff_depth --layers last
  normscope theory --preset post --branch relu-mlp --init he --depth 64 --metrics grad_sq --layers all --out grad.csv
  normscope theory --preset pre --depth 1000000 --metrics stream_sq --layers log:12
  normscope theory --preset post --depth 256 --finite-width 128 --metrics grad_sq,weight_grad_sq --layers 0,1
  normscope theory --placements examples/placements/depth-mup.toml --preset pre,depth-mup --depth 256 --metrics eff_depth --layers last")]
    Theory(TheoryArgs),
    /// Exact symbolic expansion x_L = sum_j C_{L,j} B_j with simplified coefficients.
    #[command(after_help = "Examples:
  normscope expand --preset post --depth 4
  normscope expand --preset deepnorm --depth 3 --format latex --out deepnorm.tex
  normscope expand --preset post --depth 8 --subs g=1,q0=1 --format csv
  normscope expand --placements examples/placements/mixln.toml --preset my-mixln --depth 8")]
    Expand(ExpandArgs),
    /// List the presets with their equations and sources.
    #[command(after_help = "Examples:
  normscope presets
  normscope presets --placements examples/placements/depth-mup.toml")]
    Presets(PresetsArgs),
    /// Regenerate the default analyses into data/ and figures/.
    #[command(after_help = "Examples:
  normscope reproduce                                  # everything, into ./data and ./figures
  normscope reproduce --quick --out-dir /tmp/ns        # reduced Monte Carlo, under a minute
  normscope reproduce --only effective-depth,claims --seed 7
  normscope reproduce --print-config > my.toml && normscope reproduce --config my.toml
  normscope reproduce --only finite-width --shard 0/4 --out-dir shards/0   # one shard of four")]
    Reproduce(ReproduceArgs),
    /// Merge the shard folders of one sharded analysis into the files an unsharded run writes.
    #[command(after_help = "Examples:
  for i in 0 1 2; do normscope reproduce --only finite-width --quick --shard $i/3 --out-dir shards/$i; done
  normscope merge shards/0 shards/1 shards/2 --out-dir .

A missing, duplicated, corrupt or foreign shard (another configuration, commit or build) is
refused with exit status 2, naming it; nothing is written.")]
    Merge(MergeArgs),
    /// Write Slurm batch scripts that run one analysis's shards as a job array and merge them.
    #[command(after_help = "Examples:
  normscope slurm --only finite-width --shards 64 --partition cpu --time 02:00:00 --cpus-per-task 4 --mem 8G
  normscope slurm --only warmup --shards 100 --account myproj --dir sweeps/warmup --submit

Writes DIR/array.sbatch (sbatch --array=0-(N-1), task i runs `reproduce --shard i/N`),
DIR/merge.sbatch (`merge` of the N shard folders) and DIR/submit.sh (submits both, the merge
with --dependency=afterok on the array). A failed task is resubmitted alone with
`sbatch --array=I DIR/array.sbatch`; then submit the merge after it.")]
    Slurm(SlurmArgs),
    /// One number of a table that `reproduce` wrote, or a figure, ready to cite: the value as
    /// stored with its interval, whether the file is as its commit wrote it, the commit, the
    /// command that regenerates it and a BibTeX entry.
    #[command(after_help = "Examples:
  normscope cite data/norms/verdicts.csv --where norm=batch --column post_x0_factor
  normscope cite data/effective-depth/theory.csv --where preset=post --where depth=1000000
  normscope cite figures/norms/batch_norm_by_placement.pdf

The file's analysis must have its manifest (data/<analysis>/manifest.json), whose values are
checked (a bad one is refused naming its field); the row is chosen by --where filters on the
values as the file stores them, and must be the only one matching. A file whose sha256 differs
from the manifest's, or (in a git checkout) whose bytes differ from what git holds at the
recorded commit or HEAD, is CHANGED: refused with exit status 1, or cited with
--allow-changed, its BibTeX note marked MODIFIED. Where git cannot check it, the report says
\"not verified against the commit\". The regenerate line quotes every argument for a POSIX
shell.")]
    Cite(CiteArgs),
    /// A figure of your own table (CSV or Parquet from any command) in the house style: one
    /// series per --by value, one panel per --facet value; rows with an interval drawn as
    /// points with their 95% bars, rows without as lines.
    #[command(after_help = "Examples:
  normscope plot data/effective-depth/theory.csv --x depth --y value --by preset --log-x --log-y --out /tmp/eff_depth.pdf
  normscope plot data/effective-depth/mc.csv --x depth --y value --by preset --where metric=eff_depth --log-x --out /tmp/mc.png
  normscope plot data/stream-and-gradients/theory.csv --x layer --y value --by preset --facet metric --where depth=256 --log-y --out /tmp/panels.svg

The output format is the extension of --out (.pdf, .png, .svg); the file is written whole or
not at all. Intervals are read from ci_low/ci_high (for --y value), <y>_lo/<y>_hi or
<y>_ci_low/<y>_ci_high.

Bounds, checked before drawing: a table of at most 16777216 cells; at most 24 panels
(--facet values), 7 series (--by values) and 200000 points; a --title of at most 100
characters and column names and values of at most 40, without control characters.")]
    Plot(PlotArgs),
    /// Monte Carlo metrics on sampled finite-width networks, with 95% confidence intervals.
    #[command(after_help = "Examples:
  normscope mc --preset post --branch relu-mlp --init he --depth 64 --samples 16 --layers last
  normscope mc --preset pre,post --branch transformer --depth 24 --width 128 --tokens 16 --metrics corr
  normscope mc --preset deepnorm --depth 32 --metrics eff_depth --layers last --seed 3
  normscope mc --placements examples/placements/depth-mup.toml --preset depth-mup --depth 64 --layers last
  normscope mc --preset pre,post --branch relu-mlp --depth 64 --width 128 --precision f32 --memory streamed --layers last")]
    Mc(McArgs),
    /// Closed form against Monte Carlo per metric and layer: difference, CI, allowance, status
    /// (agree, disagree, or uninformative when the allowance exceeds half the value), whether
    /// the Monte Carlo interval itself covers the closed form, and the estimator of each row.
    #[command(after_help = "Examples:
  normscope compare --preset deepnorm --depth 32 --metrics grad_sq --layers log:6
  normscope compare --preset pre,post --branch relu-mlp --init he --depth 16 --width 64 --samples 32
  normscope compare --preset post --depth 64 --width 64 --metrics grad_sq --layers 0,1 --finite-width
  normscope compare --placements examples/placements/depth-mup.toml --preset depth-mup --depth 16 --metrics eff_depth")]
    Compare(CompareArgs),
    /// Train presets on a seeded task with per-layer diagnostics (tidy CSV, one value per row).
    #[command(after_help = "Examples:
  normscope train --preset pre,post,deepnorm --branch transformer --task teacher-lm --depth 12 --lr 1e-2 --steps 400 --seeds 0..8 --out runs.csv
  normscope train --preset post --warmup 100 --schedule inv-sqrt --lr 1e-2 --steps 400
  normscope train --preset pre,post --branch relu-mlp --task regression --depth 24 --optimizer sgd --momentum 0.9 --lr 0.05
  normscope train --preset post --task copy --vocab 10 --seq 16 --seeds 0..4 --log-every 1 --out copy.parquet
  normscope train --preset deepnorm --seeds 0 --steps 60 --dump-init init.json
  normscope train --placements examples/placements/depth-mup.toml --preset pre,depth-mup --branch relu-mlp --task regression --depth 8 --steps 60 --seeds 0..2")]
    Train(Box<super::train::TrainArgs>),
    /// Print a shell completion script, e.g. `normscope completions bash > ~/.local/share/bash-completion/completions/normscope`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Model flags shared by `theory`, `expand`, `mc` and `compare`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Number of residual blocks L (a Transformer layer is two blocks).
    #[arg(long, default_value_t = RawModel::default().depth, allow_hyphen_values = true)]
    pub depth: usize,
    /// Branch F (see the list below).
    #[arg(long, default_value_t = RawModel::default().branch, help = branch_help(),
          value_parser = branch_values(), ignore_case = true, hide_possible_values = true)]
    pub branch: String,
    /// Init scheme.
    #[arg(long, default_value_t = RawModel::default().init, help = init_help(),
          value_parser = init_values(), ignore_case = true, hide_possible_values = true)]
    pub init: String,
    /// MLP hidden width as a multiple of d.
    #[arg(long, value_parser = literal_f64, default_value_t = RawModel::default().hidden_ratio, allow_hyphen_values = true)]
    pub hidden_ratio: f64,
    /// Override the derived gain g = E||F(u)||^2/||u||^2 of the unscaled branch (at unit input).
    #[arg(long, value_parser = literal_f64, allow_hyphen_values = true)]
    pub gain: Option<f64>,
    /// Override the skip scale alpha of every block.
    #[arg(long, value_parser = literal_f64, allow_hyphen_values = true)]
    pub alpha: Option<f64>,
    /// Set DeepNet's branch-weight scale beta.
    #[arg(long, value_parser = literal_f64, allow_hyphen_values = true)]
    pub beta: Option<f64>,
    /// Override the branch multiplier lambda of every block.
    #[arg(long, value_parser = literal_f64, allow_hyphen_values = true)]
    pub lambda: Option<f64>,
    /// Input second moment q0 = E||x_0||^2/d.
    #[arg(long, value_parser = literal_f64, default_value_t = RawModel::default().q0, allow_hyphen_values = true)]
    pub q0: f64,
    /// Correlation of the two inputs / tokens: in [-1, 1], and above -1/(n-1) for n = --tokens
    /// (n tokens with one pairwise correlation must have a positive definite covariance; both
    /// engines check it, so --tokens 2 admits every c0 > -1).
    #[arg(long, value_parser = literal_f64, default_value_t = RawModel::default().c0, allow_hyphen_values = true)]
    pub c0: f64,
    /// Tokens n (attention branches; every token is a sample in Monte Carlo).
    #[arg(long, default_value_t = RawModel::default().tokens, allow_hyphen_values = true)]
    pub tokens: usize,
    /// Width d (Monte Carlo; in the closed form only the BERT init's gain depends on it).
    #[arg(long, default_value_t = RawModel::default().width, allow_hyphen_values = true)]
    pub width: usize,
    /// Normalizer of every norm slot: layer, rms, group (identical in the closed form),
    /// batch, instance (per channel over the batch / over a sequence's tokens; closed form
    /// for Pre-Norm placements and Post-Norm with --alpha 0, linear and relu-mlp branches),
    /// dyt (tanh(alpha x), alpha = 0.5; closed form for Pre-Norm placements with per-token
    /// branches), or identity (no norms at all: the un-normalized baseline). Default: layer; a placement file's presets use the kind
    /// their file names (identity still removes their norms).
    #[arg(long, value_enum)]
    pub norm: Option<NormKind>,
    /// GroupNorm's number of groups G, a divisor of --width (read with --norm group; Wu and He
    /// 2018's default).
    #[arg(long, default_value_t = RawModel::default().groups, allow_hyphen_values = true)]
    pub groups: usize,
    /// A placement file (TOML) whose presets join the built-in ones for --preset; repeatable.
    /// See docs/placements.md and examples/placements/.
    #[arg(long, value_name = "FILE")]
    pub placements: Vec<PathBuf>,
    /// Final Norm on the network output: auto (the preset's), on, off.
    #[arg(long, value_enum, default_value_t = RawModel::default().final_norm)]
    pub final_norm: FinalNorm,
}

impl ModelArgs {
    /// The raw (unchecked) values.
    pub fn raw(&self) -> RawModel {
        RawModel {
            depth: self.depth,
            branch: self.branch.clone(),
            init: self.init.clone(),
            hidden_ratio: self.hidden_ratio,
            gain: self.gain,
            alpha: self.alpha,
            beta: self.beta,
            lambda: self.lambda,
            q0: self.q0,
            c0: self.c0,
            tokens: self.tokens,
            width: self.width,
            norm: self.norm.unwrap_or(RawModel::default().norm),
            groups: self.groups,
            final_norm: self.final_norm,
        }
    }
}

/// What a table command writes: presets, metrics, layers, destination.
#[derive(Debug, Args)]
pub struct TableArgs {
    /// Comma-separated presets (see `normscope presets`).
    #[arg(long, default_value = "pre,post,deepnorm", help = presets_help())]
    pub preset: String,
    /// Metrics (see the list below).
    #[arg(long, default_value = "all", help = metrics_help())]
    pub metrics: String,
    /// Layers written: all, last, log:K, or a list like 1,4,16 or 0,last.
    #[arg(long, default_value = "all", allow_hyphen_values = true)]
    pub layers: String,
    /// Output file, written atomically: CSV, or typed Parquet if it ends in .parquet; CSV on
    /// stdout if absent or -.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Output format: csv, parquet, or table (aligned columns for reading). Default: by
    /// --out's extension (Parquet for .parquet, else CSV).
    #[arg(long, value_enum)]
    pub format: Option<crate::output::table::Format>,
}

/// `normscope theory`.
#[derive(Debug, Args)]
pub struct TheoryArgs {
    /// Model parameters.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Presets, metrics, layers, output.
    #[command(flatten)]
    pub table: TableArgs,
    /// Apply the leading finite-width correction at width D to grad_sq and weight_grad_sq
    /// (derived for norm-after-sum stacks with a linear branch: post, deepnorm, admin; engine
    /// column `theory-fw`, width D). Other presets and metrics are written uncorrected, with a
    /// note. Off by default (the d -> infinity closed form).
    #[arg(long, value_name = "D")]
    pub finite_width: Option<usize>,
    /// Samples per batch B, the columns BatchNorm averages each channel over (read with
    /// --norm batch, which takes one token per sample, --tokens 1, and needs B >= 6).
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    pub batch: usize,
}

/// Sampling flags of `mc` and `compare`.
#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// Independent networks S (>= 2).
    #[arg(long, default_value_t = RawMc::default().samples, allow_hyphen_values = true)]
    pub samples: usize,
    /// Base seed; network i draws from a stream seeded by (seed, configuration, i).
    #[arg(long, default_value_t = RawMc::default().seed, allow_hyphen_values = true)]
    pub seed: u64,
    /// Norm epsilon (0 allowed).
    #[arg(long, value_parser = literal_f64, default_value_t = RawMc::default().eps, allow_hyphen_values = true)]
    pub eps: f64,
    /// Attention heads (must divide --width).
    #[arg(long, default_value_t = RawMc::default().heads, allow_hyphen_values = true)]
    pub heads: usize,
    /// Uniform attention: W_Q = W_K = 0.
    #[arg(long)]
    pub uniform: bool,
    /// Exact path polynomial up to this depth; a factorized estimator beyond.
    #[arg(long, default_value_t = RawMc::default().path_max, allow_hyphen_values = true)]
    pub path_max: usize,
    /// Float type of the products and activations: f64 (the tables in data/, exact
    /// comparisons) or f32 (faster; statistics still accumulated in f64). Both precisions
    /// sample the same networks from the same seed.
    #[arg(long, value_enum, default_value = "f64")]
    pub precision: Precision,
    /// Hold each network whole (faster), stream it block by block (memory O(d^2 r + L d n):
    /// weights regenerated from their seed, each block recomputed from its input), or auto:
    /// held while the networks running at once fit in half the available memory. The numbers
    /// are identical either way.
    #[arg(long, value_enum, default_value = "auto")]
    pub memory: Memory,
    /// Independent sequences of --tokens tokens per network input, side by side: the columns
    /// BatchNorm averages each channel over (batch x tokens >= 2). Above 1 only with a
    /// per-token branch (linear, relu-mlp, gelu-mlp); metrics average over every column.
    #[arg(long, default_value_t = RawMc::default().batch, allow_hyphen_values = true)]
    pub batch: usize,
}

impl SamplingArgs {
    /// The raw values.
    pub fn raw(&self) -> RawMc {
        RawMc {
            samples: self.samples,
            seed: self.seed,
            eps: self.eps,
            heads: self.heads,
            uniform: self.uniform,
            path_max: self.path_max,
            precision: self.precision,
            memory: self.memory,
            batch: self.batch,
        }
    }
}

/// `normscope mc` and `normscope compare`.
#[derive(Debug, Args)]
pub struct McArgs {
    /// Model parameters (branch also accepts attention, transformer).
    #[command(flatten)]
    pub model: ModelArgs,
    /// Sampling parameters.
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Presets, metrics, layers, output.
    #[command(flatten)]
    pub table: TableArgs,
}

/// `normscope compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Model, sampling, presets, metrics, layers, output (as `mc`).
    #[command(flatten)]
    pub mc: McArgs,
    /// Compare against the closed form with its leading finite-width correction at width D,
    /// the networks' own --width (given alone, D is --width; as `theory --finite-width D`):
    /// grad_sq and weight_grad_sq of post, deepnorm and admin with a linear branch; the rest
    /// stays uncorrected, with a note; column `theory_corrected`.
    // No `allow_hyphen_values`: with an optional value it would take the next flag as D
    // (`--finite-width --out x.csv`); a negative D is still read as a value and refused.
    #[arg(long, value_name = "D", num_args = 0..=1)]
    pub finite_width: Option<Option<usize>>,
}

/// `normscope cite`.
#[derive(Debug, Args)]
pub struct CiteArgs {
    /// A table (CSV or Parquet) or a figure (PDF, PNG, SVG) under data/<analysis>/ or
    /// figures/<analysis>/.
    pub path: PathBuf,
    /// A filter `column=value` the row must meet (repeatable; values compared as the file
    /// stores them).
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    pub filters: Vec<String>,
    /// The column to cite (default: value); its 95% interval is `<c>_ci_low`/`<c>_ci_high`, or
    /// `ci_low`/`ci_high` for value and median.
    #[arg(long)]
    pub column: Option<String>,
    /// Cite a file that is CHANGED (its bytes differ from its manifest or from git) instead of
    /// refusing it (exit status 1); its BibTeX note is marked MODIFIED.
    #[arg(long)]
    pub allow_changed: bool,
}

/// `normscope plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The table (CSV or Parquet).
    pub path: PathBuf,
    /// The column on the x axis.
    #[arg(long)]
    pub x: String,
    /// The column on the y axis.
    #[arg(long)]
    pub y: String,
    /// One series per value of this column.
    #[arg(long)]
    pub by: Option<String>,
    /// One panel per value of this column.
    #[arg(long)]
    pub facet: Option<String>,
    /// A filter `column=value` the rows must meet (repeatable; values compared as stored).
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    pub filters: Vec<String>,
    /// Log-scale x axis.
    #[arg(long)]
    pub log_x: bool,
    /// Log-scale y axis.
    #[arg(long)]
    pub log_y: bool,
    /// Title above the plot (default: "Y by X").
    #[arg(long)]
    pub title: Option<String>,
    /// The figure: .pdf, .png or .svg.
    #[arg(long)]
    pub out: PathBuf,
}

/// `normscope presets`.
#[derive(Debug, Args)]
pub struct PresetsArgs {
    /// A placement file (TOML) whose presets are listed after the built-in ones; repeatable.
    #[arg(long, value_name = "FILE")]
    pub placements: Vec<PathBuf>,
}

/// `normscope expand`.
#[derive(Debug, Args)]
pub struct ExpandArgs {
    /// One preset.
    #[arg(long, default_value = "post")]
    pub preset: String,
    /// Model parameters.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Replace symbols by exact values before simplifying, e.g. g=1,q0=1.
    #[arg(long, default_value = "")]
    pub subs: String,
    /// Output file (written atomically); stdout if absent.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `normscope reproduce`: the analyses to run (`--only`, `--list`) and the flags every
/// analysis binary takes too ([`RunArgs`]).
#[derive(Debug, Args, Default)]
pub struct ReproduceArgs {
    /// Run only these analyses (comma-separated ids; `normscope reproduce --list` shows them).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// List the analyses: id, what it shows, and its work unit for --shard; then exit.
    #[arg(long)]
    pub list: bool,
    /// Output folder, configuration, seed and shard.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `normscope merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard folders written by `normscope reproduce --only ID --shard I/N`, all N of them.
    #[arg(required = true, value_name = "SHARD_DIRS")]
    pub shards: Vec<PathBuf>,
    /// Write DIR/data/ID and DIR/figures/ID.
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
}

/// `normscope slurm`.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// The analysis to shard (`normscope reproduce --list` shows the ids).
    #[arg(long)]
    pub only: String,
    /// Number of shards: array tasks 0..N-1.
    #[arg(long)]
    pub shards: usize,
    /// Reduced defaults, as `reproduce --quick`.
    #[arg(long)]
    pub quick: bool,
    /// TOML configuration, as `reproduce --config` (passed to every shard).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Base seed, as `reproduce --seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit per task, as Slurm reads it (e.g. 02:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// CPUs per task.
    #[arg(long)]
    pub cpus_per_task: Option<u32>,
    /// Memory per task, as Slurm reads it (e.g. 8G).
    #[arg(long)]
    pub mem: Option<String>,
    /// Slurm account.
    #[arg(long)]
    pub account: Option<String>,
    /// Work folder for the scripts, shard folders and logs (default: slurm-ID).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Where the merge writes data/ and figures/.
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// Submit the array and the merge with sbatch and print the job ids.
    #[arg(long)]
    pub submit: bool,
    /// The normscope binary the jobs run, as the compute nodes see it (default: this one).
    #[arg(long)]
    pub binary: Option<PathBuf>,
}
