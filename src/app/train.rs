//! `normscope train`: its flags and its glue (check, run with a progress bar, write the log
//! atomically, or dump one run's initial weights and batches).

use crate::Error;
use crate::input::literal_f64;
use crate::model::RawModel;
use crate::monte_carlo::{Precision, RawMc};
use crate::output::{atomic, table};
use crate::spec::NormKind;
use crate::train::config::{Arch, RawTrain};
use crate::train::optim::{OptimizerFlags, OptimizerKind};
use crate::train::task::{TaskConfig, TaskKind};
use clap::Args;
use std::path::PathBuf;

/// `normscope train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Comma-separated presets (see `normscope presets`, or a --placements file's); all train
    /// on the same data from the same seeds.
    #[arg(long, default_value_t = RawTrain::default().presets)]
    pub preset: String,
    /// A placement file (TOML) whose presets join the built-in ones for --preset; repeatable.
    /// See docs/placements.md and examples/placements/.
    #[arg(long, value_name = "FILE")]
    pub placements: Vec<std::path::PathBuf>,
    /// Architecture: decoder (one stack of --depth blocks: decoder-only Transformers, MLPs)
    /// or encoder-decoder (a Transformer of --layers N encoder layers of 2 blocks and N
    /// decoder layers of 3: causal self-attention, cross-attention, MLP; --task
    /// reverse-pairs).
    #[arg(long, default_value_t = RawTrain::default().arch)]
    pub arch: String,
    /// Layers N per stack of --arch encoder-decoder (2N encoder and 3N decoder blocks).
    #[arg(long)]
    pub layers: Option<usize>,
    /// Branch: linear, relu-mlp (mlp), gelu-mlp, attention, uniform-attention, transformer
    /// (attention and ReLU MLP blocks alternating; the only one of --arch encoder-decoder).
    #[arg(long, default_value_t = RawTrain::default().model.branch)]
    pub branch: String,
    /// Residual blocks L of --arch decoder (a Transformer layer is two blocks) [default: 12].
    #[arg(long)]
    pub depth: Option<usize>,
    /// Width d.
    #[arg(long, default_value_t = RawTrain::default().model.width)]
    pub width: usize,
    /// Attention heads (must divide --width).
    #[arg(long, default_value_t = RawTrain::default().mc.heads)]
    pub heads: usize,
    /// MLP hidden width as a multiple of d.
    #[arg(long, value_parser = literal_f64, default_value_t = RawTrain::default().model.hidden_ratio, allow_hyphen_values = true)]
    pub hidden_ratio: f64,
    /// Init scheme of the branch matrices and the head: xavier, he, torch-default, bert.
    #[arg(long, default_value_t = RawTrain::default().model.init)]
    pub init: String,
    /// Normalizer of every norm slot, with a learnable gain and bias (RMSNorm: gain only)
    /// unless --no-affine: layer, rms, batch (batch statistics in training, running ones in
    /// evaluation, as BatchNorm1d), instance (token tasks), group (--groups), dyt (alpha
    /// learnable, 0.5 at init), identity.
    #[arg(long, value_enum, default_value_t = RawTrain::default().model.norm)]
    pub norm: NormKind,
    /// GroupNorm's number of groups G, a divisor of --width (read with --norm group; Wu and He
    /// 2018's default).
    #[arg(long, default_value_t = RawTrain::default().model.groups)]
    pub groups: usize,
    /// No learnable gain and bias on the norms (DyT keeps its learnable alpha).
    #[arg(long)]
    pub no_affine: bool,
    /// Norm epsilon.
    #[arg(long, value_parser = literal_f64, default_value_t = RawTrain::default().mc.eps, allow_hyphen_values = true)]
    pub eps: f64,
    /// Task: regression, teacher-lm, copy, reverse, sort; reverse-pairs (the source's reverse,
    /// for --arch encoder-decoder) [default: teacher-lm; reverse-pairs with --arch
    /// encoder-decoder].
    #[arg(long)]
    pub task: Option<String>,
    /// Vocabulary size (sequence tasks; copy/reverse/sort use one id as the separator).
    #[arg(long, default_value_t = TaskConfig::default().vocab)]
    pub vocab: usize,
    /// Tokens per sequence the model sees (copy/reverse/sort: even, 2k for k symbols;
    /// reverse-pairs: k, the source's and the target's length).
    #[arg(long, default_value_t = TaskConfig::default().seq)]
    pub seq: usize,
    /// Regression input dimension.
    #[arg(long, default_value_t = TaskConfig::default().d_in)]
    pub task_in: usize,
    /// Regression output dimension.
    #[arg(long, default_value_t = TaskConfig::default().d_out)]
    pub task_out: usize,
    /// Teacher depth (regression: residual MLP blocks; teacher-lm: Transformer layers).
    #[arg(long, default_value_t = TaskConfig::default().teacher_depth)]
    pub teacher_depth: usize,
    /// Teacher width.
    #[arg(long, default_value_t = TaskConfig::default().teacher_width)]
    pub teacher_width: usize,
    /// Regression noise standard deviation (its square is the loss floor).
    #[arg(long, value_parser = literal_f64, default_value_t = TaskConfig::default().noise, allow_hyphen_values = true)]
    pub noise: f64,
    /// Teacher-lm softmax temperature.
    #[arg(long, value_parser = literal_f64, default_value_t = TaskConfig::default().temperature, allow_hyphen_values = true)]
    pub teacher_temperature: f64,
    /// Seed of the teacher's weights and of the evaluation set.
    #[arg(long, default_value_t = TaskConfig::default().teacher_seed)]
    pub teacher_seed: u64,
    /// Teacher-lm: the fraction of the vocabulary whose teacher embeddings are drawn anew (a
    /// related language for fine-tuning; 0 = the teacher as drawn).
    #[arg(long, value_parser = literal_f64, default_value_t = TaskConfig::default().rewire, allow_hyphen_values = true)]
    pub teacher_rewire: f64,
    /// Seed of the rewired tokens and their new embeddings.
    #[arg(long, default_value_t = TaskConfig::default().rewire_seed)]
    pub teacher_rewire_seed: u64,
    /// Optimizer (its names from the registry, `crate::train::optim`).
    #[arg(long, help = format!("Optimizer: {}", OptimizerKind::NAMES.join(", ")), default_value_t = RawTrain::default().optimizer)]
    pub optimizer: String,
    /// Peak learning rate.
    #[arg(long, value_parser = literal_f64, default_value_t = RawTrain::default().lr, allow_hyphen_values = true)]
    pub lr: f64,
    /// The optimizers' hyperparameters (`--beta1`, `--momentum`, ...), declared with their
    /// optimizers (`crate::train::optim`).
    #[command(flatten)]
    pub optimizer_flags: OptimizerFlags,
    /// Clip the global gradient norm to this value.
    #[arg(long, value_parser = literal_f64, allow_hyphen_values = true)]
    pub clip: Option<f64>,
    /// Schedule after warmup: constant, linear, inv-sqrt, cosine.
    #[arg(long, default_value_t = RawTrain::default().schedule)]
    pub schedule: String,
    /// Linear warmup updates (0..=steps).
    #[arg(long, default_value_t = RawTrain::default().warmup)]
    pub warmup: u64,
    /// Updates.
    #[arg(long, default_value_t = RawTrain::default().steps)]
    pub steps: u64,
    /// Sequences (or examples) per batch.
    #[arg(long, default_value_t = RawTrain::default().batch)]
    pub batch: usize,
    /// Seeds: a..b (half-open), a..=b, a comma list, or one; paired across presets.
    #[arg(long, default_value_t = RawTrain::default().seeds, allow_hyphen_values = true)]
    pub seeds: String,
    /// Evaluate (eval loss, output change, norm inputs, attention) every this many updates.
    #[arg(long, default_value_t = RawTrain::default().eval_every)]
    pub eval_every: u64,
    /// Batches in the fixed evaluation set.
    #[arg(long, default_value_t = RawTrain::default().eval_batches)]
    pub eval_batches: usize,
    /// Log the training loss, gradient norms, update ratios and Adam statistics every this
    /// many updates (1 = every update).
    #[arg(long, default_value_t = RawTrain::default().log_every)]
    pub log_every: u64,
    /// Float type of the products, activations, parameters and optimizer state: f64 (the
    /// default; exact comparisons, PyTorch float64) or f32 (faster; every sum of squares,
    /// statistic and logged value still accumulated in f64). The same seed starts from the
    /// same weights (rounded) and sees the same batches in both.
    #[arg(long, default_value = "f64", value_name = "f64|f32")]
    pub precision: String,
    /// Write one run's initial weights, architecture, learning rates and batches as JSON to
    /// this file (one preset, one seed) and train nothing; see docs/training.md.
    #[arg(long, value_name = "FILE")]
    pub dump_init: Option<PathBuf>,
    /// Output file, written atomically: CSV, or Parquet if it ends in .parquet; stdout if
    /// absent or -.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl TrainArgs {
    /// The raw request.
    pub fn raw(&self) -> crate::Result<RawTrain> {
        let arch = Arch::parse(&self.arch, self.layers)?;
        if let (Arch::EncoderDecoder { .. }, Some(depth)) = (arch, self.depth) {
            return Err(Error::invalid(
                "--depth",
                depth,
                "no --depth with --arch encoder-decoder (its size is --layers N: 2N encoder and 3N decoder blocks)",
            ));
        }
        Ok(RawTrain {
            presets: self.preset.clone(),
            arch: self.arch.clone(),
            layers: self.layers,
            model: RawModel {
                depth: self.depth.unwrap_or(RawTrain::default().model.depth),
                branch: self.branch.clone(),
                init: self.init.clone(),
                hidden_ratio: self.hidden_ratio,
                width: self.width,
                norm: self.norm,
                groups: self.groups,
                ..RawModel::default()
            },
            mc: RawMc {
                eps: self.eps,
                heads: self.heads,
                precision: Precision::parse(&self.precision)?,
                ..RawMc::default()
            },
            affine: !self.no_affine,
            task: TaskConfig {
                kind: match (&self.task, arch) {
                    (Some(t), _) => TaskKind::parse(t)?,
                    (None, Arch::EncoderDecoder { .. }) => TaskKind::ReversePairs,
                    (None, Arch::Decoder) => RawTrain::default().task.kind,
                },
                vocab: self.vocab,
                seq: self.seq,
                d_in: self.task_in,
                d_out: self.task_out,
                teacher_depth: self.teacher_depth,
                teacher_width: self.teacher_width,
                noise: self.noise,
                temperature: self.teacher_temperature,
                teacher_seed: self.teacher_seed,
                rewire: self.teacher_rewire,
                rewire_seed: self.teacher_rewire_seed,
            },
            optimizer: self.optimizer.clone(),
            optimizer_flags: self.optimizer_flags,
            clip: self.clip,
            lr: self.lr,
            schedule: self.schedule.clone(),
            warmup: self.warmup,
            steps: self.steps,
            batch: self.batch,
            seeds: self.seeds.clone(),
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            log_every: self.log_every,
        })
    }
}

/// Runs `normscope train`: the log and its summary (median over seeds) as text, or `None`
/// when `--dump-init` wrote its file and trained nothing.
pub fn train(a: &TrainArgs) -> crate::Result<Option<(polars::prelude::DataFrame, String)>> {
    if let Some(p) = &a.dump_init {
        atomic::check_target("--dump-init", p)?;
    }
    crate::placement::load_all(&a.placements)?;
    let cfg = a.raw()?.check()?;
    if let Some(p) = &a.dump_init {
        if a.out.is_some() {
            return Err(Error::invalid(
                "--out",
                "set",
                "no --out with --dump-init (it writes the dump and trains nothing)",
            ));
        }
        if cfg.mc.precision != Precision::F64 {
            return Err(Error::invalid(
                "--precision",
                cfg.mc.precision.name(),
                "f64 with --dump-init (the dump holds the f64 weights and batches; the reference script rounds them itself with --dtype float32)",
            ));
        }
        crate::budget::check(cfg.dump_bytes(), "--dump-init", "--steps, --batch or --seq")?;
        if cfg.presets.len() != 1 || cfg.seeds.len() != 1 {
            return Err(Error::invalid(
                "--dump-init",
                p.display(),
                "a file for one run: give one --preset and one --seeds value",
            ));
        }
        let task = crate::train::task::build(&cfg.task)?;
        let text = crate::train::dump::dump(&cfg, task.as_ref(), cfg.presets[0], cfg.seeds[0])?;
        atomic::write_bytes(p, text.as_bytes())?;
        return Ok(None);
    }
    let total = cfg
        .schedule
        .steps
        .saturating_mul((cfg.presets.len() * cfg.seeds.len()) as u64);
    let bar = crate::output::progress::DelayedBar::steps(total);
    let records = crate::train::run::run(&cfg, &bar)?;
    bar.finish();
    let frame = crate::train::log::frame(&cfg, &records)?;
    let mut summary = crate::train::summary::summary(&cfg.presets, &records)?;
    let text = table::Format::Table.encode(&mut summary)?;
    Ok(Some((
        frame,
        format!(
            "summary (median over seeds; excess = final eval loss - the task's floor):\n{}",
            String::from_utf8_lossy(&text)
        ),
    )))
}
