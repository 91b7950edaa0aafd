//! A checked training request: every field validated, each error naming its flag and what
//! it accepts, and the run's memory estimated before anything is allocated.

use super::optim::{OptimizerFlags, OptimizerKind};
use super::schedule::{Decay, Schedule};
use super::task::{Io, TaskConfig, TaskKind};
use crate::branch::{Block, BranchKind};
use crate::engine::refusal::{NormUse, refused};
use crate::model::{RawModel, parse_presets};
use crate::monte_carlo::sampling::{McConfig, RawMc};
use crate::{Error, Result};

/// Branches a trainable model can have (cross-attention attends to a fixed memory that a
/// training task does not provide).
pub(crate) const TRAINABLE_BRANCHES: &str =
    "linear, relu-mlp (mlp), gelu-mlp, attention, uniform-attention, transformer";

/// The model's architecture (`--arch`).
///
/// # Examples
///
/// ```rust
/// use normscope_core::Error;
/// use normscope_core::train::config::Arch;
///
/// assert_eq!(Arch::parse("decoder", None)?, Arch::Decoder);
/// let ed = Arch::parse("Encoder-Decoder", Some(2))?;
/// assert_eq!(ed, Arch::EncoderDecoder { layers: 2 });
/// // Two encoder blocks and three decoder blocks per layer; a decoder's blocks are --depth.
/// assert_eq!((ed.name(), ed.blocks(12), Arch::Decoder.blocks(12)), ("encoder-decoder", 10, 12));
/// // --layers is required with encoder-decoder and refused with decoder.
/// let refused = |r: Result<Arch, Error>| {
///     matches!(r, Err(Error::InvalidParam { field: "--layers", .. }))
/// };
/// assert!(refused(Arch::parse("encoder-decoder", None)));
/// assert!(refused(Arch::parse("decoder", Some(2))));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// One stack of `--depth` blocks with an input map and a head ([`super::model::TrainModel`]):
    /// decoder-only Transformers, MLPs.
    Decoder,
    /// An encoder-decoder Transformer ([`super::seq2seq::EncDec`]) of `layers` layers per
    /// stack: `2 layers` encoder blocks (self-attention, MLP) and `3 layers` decoder blocks
    /// (causal self-attention, cross-attention, MLP).
    EncoderDecoder {
        /// Layers N per stack (`--layers`).
        layers: usize,
    },
}

impl Arch {
    /// Names `--arch` accepts.
    pub const NAMES: &'static str = "decoder, encoder-decoder";

    /// Canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Decoder => "decoder",
            Arch::EncoderDecoder { .. } => "encoder-decoder",
        }
    }

    /// `--arch` (ignoring ASCII case) with `--layers`: the layers are required with
    /// encoder-decoder (an integer >= 1) and refused with decoder (whose size is `--depth`).
    pub fn parse(name: &str, layers: Option<usize>) -> Result<Self> {
        match (name.to_ascii_lowercase().as_str(), layers) {
            ("decoder", None) => Ok(Arch::Decoder),
            ("decoder", Some(n)) => Err(Error::invalid(
                "--layers",
                n,
                "only with --arch encoder-decoder (--depth counts the blocks of --arch decoder)",
            )),
            ("encoder-decoder", Some(n)) if (1..=crate::train::task::MAX_SIZE).contains(&n) => {
                Ok(Arch::EncoderDecoder { layers: n })
            }
            ("encoder-decoder", n) => Err(Error::invalid(
                "--layers",
                n.map_or("none".to_string(), |n| n.to_string()),
                format!(
                    "an integer from 1 to {} with --arch encoder-decoder (N encoder layers of 2 blocks, N decoder layers of 3)",
                    crate::train::task::MAX_SIZE
                ),
            )),
            _ => Err(Error::Unknown {
                kind: "architecture (--arch)",
                name: name.to_string(),
                valid: Self::NAMES.to_string(),
            }),
        }
    }

    /// Residual blocks in all: L for decoder, `5 layers` for encoder-decoder.
    pub fn blocks(self, depth: usize) -> usize {
        match self {
            Arch::Decoder => depth,
            Arch::EncoderDecoder { layers } => 5 * layers,
        }
    }
}

/// Raw training settings, as the command line gives them.
///
/// # Examples
///
/// `normscope train`'s defaults, and a request [`RawTrain::check`] refuses, naming the flag:
///
/// ```rust
/// use normscope_core::Error;
/// use normscope_core::train::config::RawTrain;
///
/// let raw = RawTrain::default();
/// assert_eq!((raw.presets.as_str(), raw.arch.as_str()), ("pre,post", "decoder"));
/// assert_eq!(raw.model.branch, "transformer");
/// assert_eq!((raw.model.depth, raw.model.width), (12, 32));
/// assert_eq!((raw.optimizer.as_str(), raw.lr, raw.steps, raw.batch), ("adam", 1e-3, 400, 16));
/// let no_batch = RawTrain { batch: 0, ..raw };
/// assert!(matches!(no_batch.check(), Err(Error::InvalidParam { field: "--batch", .. })));
/// ```
#[derive(Clone, Debug)]
pub struct RawTrain {
    /// Comma-separated presets.
    pub presets: String,
    /// The architecture (`--arch`): `decoder` or `encoder-decoder`.
    pub arch: String,
    /// Layers per stack of an encoder-decoder model (`--layers`; `None` with `decoder`).
    pub layers: Option<usize>,
    /// The body: branch, depth, width, init, hidden ratio, norm kind (other fields unused; an
    /// encoder-decoder model's depth is its `layers`').
    pub model: RawModel,
    /// Heads and norm epsilon (other fields unused).
    pub mc: RawMc,
    /// Learnable gains and biases on every norm.
    pub affine: bool,
    /// The task.
    pub task: TaskConfig,
    /// Optimizer name.
    pub optimizer: String,
    /// The optimizers' hyperparameters that are given (`--momentum`, `--beta1`, ...; each
    /// declared once, in its optimizer's file): the others take their defaults, and one the
    /// optimizer does not have is refused.
    pub optimizer_flags: OptimizerFlags,
    /// Global-norm clipping threshold.
    pub clip: Option<f64>,
    /// Peak learning rate.
    pub lr: f64,
    /// Schedule after warmup.
    pub schedule: String,
    /// Warmup updates.
    pub warmup: u64,
    /// Updates.
    pub steps: u64,
    /// Examples (sequences) per batch.
    pub batch: usize,
    /// Seeds, e.g. `0..32`, `0,3,7` or `5`.
    pub seeds: String,
    /// Evaluate every this many updates.
    pub eval_every: u64,
    /// Batches in the fixed evaluation set.
    pub eval_batches: usize,
    /// Log gradient, update and optimizer statistics every this many updates.
    pub log_every: u64,
}

impl Default for RawTrain {
    /// Every default of `normscope train`, once: Pre-LN and Post-LN decoder-only Transformers
    /// (L = 12 blocks, d = 32, 4 heads) on the teacher-LM task, Adam at lr 1e-3 with PyTorch's
    /// betas, constant schedule without warmup, 400 updates of 16 sequences, seed 0.
    fn default() -> Self {
        RawTrain {
            presets: "pre,post".into(),
            arch: "decoder".into(),
            layers: None,
            model: RawModel {
                depth: 12,
                branch: "transformer".into(),
                width: 32,
                ..RawModel::default()
            },
            mc: RawMc::default(),
            affine: true,
            task: TaskConfig {
                kind: TaskKind::TeacherLm,
                ..TaskConfig::default()
            },
            optimizer: "adam".into(),
            optimizer_flags: OptimizerFlags::default(),
            clip: None,
            lr: 1e-3,
            schedule: "constant".into(),
            warmup: 0,
            steps: 400,
            batch: 16,
            seeds: "0".into(),
            eval_every: 25,
            eval_batches: 4,
            log_every: 10,
        }
    }
}

/// A checked training request.
///
/// # Examples
///
/// The defaults with three seeds, checked: the presets and seeds listed, the optimizer
/// resolved, and the batch's columns (16 sequences of 16 tokens).
///
/// ```rust
/// use normscope_core::train::config::{Arch, RawTrain, TrainConfig};
/// use normscope_core::train::optim::{Adam, OptimizerKind};
/// use normscope_core::train::task::Io;
///
/// let cfg: TrainConfig = RawTrain { seeds: "0..3".into(), ..RawTrain::default() }.check()?;
/// assert_eq!(cfg.presets.iter().map(|p| p.name).collect::<Vec<_>>(), ["pre", "post"]);
/// assert_eq!(cfg.seeds, [0, 1, 2]);
/// assert_eq!((cfg.arch, cfg.optimizer), (Arch::Decoder, OptimizerKind::Adam(Adam::default())));
/// assert_eq!(cfg.io, Io::Tokens { vocab: 16, seq: 16 });
/// assert_eq!((cfg.columns(), cfg.schedule.steps, cfg.schedule.peak), (256, 400, 1e-3));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// Presets, resolved, in the order given.
    pub presets: Vec<&'static crate::placement::Preset>,
    /// The architecture.
    pub arch: Arch,
    /// The body's sampling settings (tokens = tokens per sequence; depth = every block of the
    /// model, [`Arch::blocks`]).
    pub mc: McConfig,
    /// Learnable norm affine parameters.
    pub affine: bool,
    /// The task's settings.
    pub task: TaskConfig,
    /// What the model reads and writes.
    pub io: Io,
    /// The optimizer.
    pub optimizer: OptimizerKind,
    /// Global-norm clipping.
    pub clip: Option<f64>,
    /// The learning-rate schedule.
    pub schedule: Schedule,
    /// Examples per batch.
    pub batch: usize,
    /// Seeds, in order.
    pub seeds: Vec<u64>,
    /// Evaluation interval (updates).
    pub eval_every: u64,
    /// Evaluation batches.
    pub eval_batches: usize,
    /// Logging interval (updates).
    pub log_every: u64,
}

/// Bytes per row of the training log while it is written: the [`super::run::Record`] (about
/// 150 bytes with its strings), its row of the data frame (20 columns) and its line of the
/// encoded table, rounded up.
pub const LOG_ROW_BYTES: u128 = 1024;

/// Log rows per layer of one logged update, at most: `grad_norm` of each parameter tensor (up
/// to ten per block) and of the layer, `update_norm`, `update_ratio`, `adam_v_mean`,
/// `adam_v_max`, `stream_grad` and `memory_grad`.
pub const LOG_ROWS_PER_LAYER_LOGGED: u128 = 18;

/// Log rows per layer of one evaluation, at most: `norm_input_rms` of up to three slots,
/// `attn_max_logit` and `attn_entropy`.
pub const LOG_ROWS_PER_LAYER_EVAL: u128 = 6;

/// Copies of the parameters a run holds: the parameters, their gradients, the optimizer's two
/// moments, and the copy a logged update's `update_norm` compares with, rounded up.
pub const PARAM_COPIES: u128 = 6;

/// Resident bytes of the process before a run allocates (the binary, its libraries and the
/// threads' stacks as touched): measured 10 MB, rounded up.
pub const PROCESS_BYTES: u128 = 16_000_000;

/// Work per parameter of one optimizer update (Adam's moments, bias corrections, weight
/// decay, clipping's norm), in floating-point operations.
pub const OPTIMIZER_WORK: f64 = 20.0;

/// The most seeds one request runs.
pub const MAX_SEEDS: u64 = 1 << 16;

/// Parses `a..b` (half-open), `a..=b`, a comma list, or one seed.
pub(crate) fn parse_seeds(s: &str) -> Result<Vec<u64>> {
    let bad = || {
        Error::invalid(
            "--seeds",
            s,
            format!(
                "a range a..b (b > a) or a..=b of at most {MAX_SEEDS} seeds, a comma list of distinct integers, or one integer"
            ),
        )
    };
    let num = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
    let range = |a: u64, end: Option<u64>| match end {
        Some(e) if e > a && e - a <= MAX_SEEDS => Ok((a..e).collect()),
        _ => Err(bad()),
    };
    // `a..=b` without b + 1, which overflows at u64::MAX.
    let inclusive = |a: u64, b: u64| match b.checked_sub(a) {
        Some(d) if d < MAX_SEEDS => Ok((a..=b).collect()),
        _ => Err(bad()),
    };
    let seeds: Vec<u64> = if let Some((a, b)) = s.split_once("..=") {
        inclusive(num(a)?, num(b)?)?
    } else if let Some((a, b)) = s.split_once("..") {
        range(num(a)?, Some(num(b)?))?
    } else {
        s.split(',').map(num).collect::<Result<_>>()?
    };
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if seeds.is_empty() || sorted.len() != seeds.len() || seeds.len() as u64 > MAX_SEEDS {
        return Err(bad());
    }
    Ok(seeds)
}

fn positive(field: &'static str, v: Option<f64>, max: Option<f64>) -> Result<()> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0 && max.is_none_or(|m| x < m)) => Err(Error::invalid(
            field,
            x,
            match max {
                Some(m) => format!("a number in (0, {m})"),
                None => "a finite number > 0".into(),
            },
        )),
        _ => Ok(()),
    }
}

impl RawTrain {
    /// Validates every field.
    pub fn check(&self) -> Result<TrainConfig> {
        self.check_with(parse_presets(&self.presets)?)
    }

    /// Validates every field but `presets`, whose resolved values are given (a sweep's cell
    /// holds its preset, not a name to look up again).
    pub fn check_with(
        &self,
        presets: Vec<&'static crate::placement::Preset>,
    ) -> Result<TrainConfig> {
        if presets.is_empty() {
            return Err(Error::invalid("--preset", "(none)", "at least one preset"));
        }
        let kind = BranchKind::parse(&self.model.branch)?;
        if kind == BranchKind::CrossAttention {
            return Err(Error::invalid(
                "--branch",
                &self.model.branch,
                format!("a trainable branch: {TRAINABLE_BRANCHES}"),
            ));
        }
        let task_kind = self.task.kind;
        let arch = Arch::parse(&self.arch, self.layers)?;
        check_arch(arch, kind, task_kind, &presets, &self.model.branch)?;
        let attention = (1..=2).any(|l| matches!(kind.block(l, false), Block::Attention { .. }));
        if task_kind == TaskKind::Regression && attention {
            return Err(Error::invalid(
                "--branch",
                &self.model.branch,
                "linear, relu-mlp or gelu-mlp for --task regression (its examples are not sequences to attend over)",
            ));
        }
        if self.batch == 0 {
            return Err(Error::invalid("--batch", 0, "an integer >= 1"));
        }
        for (field, v) in [
            ("--eval-every", self.eval_every),
            ("--log-every", self.log_every),
        ] {
            if v == 0 {
                return Err(Error::invalid(field, 0, "an integer >= 1"));
            }
        }
        if self.eval_batches == 0 {
            return Err(Error::invalid("--eval-batches", 0, "an integer >= 1"));
        }
        self.task.check()?;
        let io = match task_kind {
            TaskKind::Regression => Io::Vectors {
                d_in: self.task.d_in,
                d_out: self.task.d_out,
            },
            TaskKind::ReversePairs => Io::Pairs {
                vocab: self.task.vocab,
                src: self.task.seq,
                tgt: self.task.seq,
            },
            _ => Io::Tokens {
                vocab: self.task.vocab,
                seq: self.task.seq,
            },
        };
        refused(NormUse::TrainedWidth {
            norm: self.model.norm,
            width: self.model.width,
        })?;
        let tokens = match io {
            Io::Tokens { seq, .. } => seq,
            Io::Pairs { src, .. } => src,
            Io::Vectors { .. } => 1,
        };
        let raw = RawModel {
            tokens,
            depth: arch.blocks(self.model.depth),
            ..self.model.clone()
        };
        // The norms run on the training batches, checked against them when a run starts
        // (check_trainable), not on the Monte Carlo networks the weights are drawn from.
        let mc = McConfig::without_norm_shapes(
            &raw,
            &RawMc {
                samples: 2,
                ..self.mc.clone()
            },
        )?;
        let optimizer = OptimizerKind::resolve(&self.optimizer, &self.optimizer_flags)?;
        positive("--clip", self.clip, None)?;
        let schedule = Schedule::new(
            self.lr,
            self.warmup,
            self.steps,
            Decay::parse(&self.schedule)?,
        )?;
        let cfg = TrainConfig {
            presets,
            arch,
            mc,
            affine: self.affine,
            task: self.task,
            io,
            optimizer,
            clip: self.clip,
            schedule,
            batch: self.batch,
            seeds: parse_seeds(&self.seeds)?,
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            log_every: self.log_every,
        };
        cfg.check_memory()?;
        cfg.check_work()?;
        Ok(cfg)
    }
}

/// What an architecture accepts: encoder-decoder takes the transformer branch, the
/// reverse-pairs task and every preset but DeepNet's encoder-decoder halves (`deepnorm` brings
/// both); reverse-pairs needs encoder-decoder.
fn check_arch(
    arch: Arch,
    kind: BranchKind,
    task: TaskKind,
    presets: &[&crate::placement::Preset],
    branch: &str,
) -> Result<()> {
    match arch {
        Arch::EncoderDecoder { .. } => {
            if kind != BranchKind::Transformer {
                return Err(Error::invalid(
                    "--branch",
                    branch,
                    "transformer with --arch encoder-decoder (its layers are attention and ReLU MLP blocks)",
                ));
            }
            if !task.is_pairs() {
                return Err(Error::invalid(
                    "--task",
                    task.name(),
                    "reverse-pairs with --arch encoder-decoder (a task of source and target sequences)",
                ));
            }
            if let Some(p) = presets.iter().find(|p| p.name.starts_with("deepnorm-ed-")) {
                return Err(Error::invalid(
                    "--preset",
                    p.name,
                    "a preset other than deepnorm-ed-enc and deepnorm-ed-dec with --arch encoder-decoder (deepnorm uses DeepNet's encoder constants in the encoder and its decoder constants in the decoder)",
                ));
            }
        }
        Arch::Decoder if task.is_pairs() => {
            return Err(Error::invalid(
                "--task",
                task.name(),
                format!(
                    "a decoder-only task ({}) with --arch decoder; reverse-pairs needs --arch encoder-decoder",
                    TaskKind::ALL
                        .iter()
                        .filter(|k| !k.is_pairs())
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Arch::Decoder => {}
    }
    Ok(())
}

impl TrainConfig {
    /// Columns per batch (tokens of every sequence, or examples), saturating at `usize::MAX`
    /// (a batch that large is refused by [`Self::check_memory`]).
    pub fn columns(&self) -> usize {
        usize::try_from(self.columns_u128()).unwrap_or(usize::MAX)
    }

    /// [`Self::columns`] without overflow.
    fn columns_u128(&self) -> u128 {
        self.tokens_per_example() * self.batch as u128
    }

    /// Columns per example: the tokens of a sequence (a target's for pairs), or 1.
    fn tokens_per_example(&self) -> u128 {
        match self.io {
            Io::Tokens { seq, .. } => seq as u128,
            Io::Pairs { tgt, .. } => tgt as u128,
            Io::Vectors { .. } => 1,
        }
    }

    /// Runs of the request: presets times seeds.
    fn runs(&self) -> u128 {
        (self.presets.len() as u128) * (self.seeds.len() as u128)
    }

    /// Rows of the training log of one run ([`super::run`]'s table): per logged update (every
    /// `--log-every`, the first and the last) at most [`LOG_ROWS_PER_LAYER_LOGGED`] per layer
    /// (the blocks, the input map and the head) and a few scalars; per evaluation (every
    /// `--eval-every`, step 0 and the last) at most [`LOG_ROWS_PER_LAYER_EVAL`] per layer; and
    /// once, at step 0, each layer's `param_count`.
    pub fn log_rows(&self) -> u128 {
        let steps = self.schedule.steps as u128;
        let layers = self.mc.model.depth as u128 + 2;
        let logged = steps / self.log_every as u128 + 2;
        let evals = steps / self.eval_every as u128 + 2;
        logged
            .saturating_mul(8 + LOG_ROWS_PER_LAYER_LOGGED * layers)
            .saturating_add(evals.saturating_mul(8 + LOG_ROWS_PER_LAYER_EVAL * layers))
            .saturating_add(layers)
    }

    /// Estimated peak bytes of the request, `(model, log)`: per run in flight (one per thread)
    /// the parameters [`PARAM_COPIES`] times, the body's activations over a batch (each
    /// sequence's own: attention's scores are per sequence), the logits and the evaluation's
    /// batches; the task's teacher; [`PROCESS_BYTES`]; and apart, the log every run keeps until
    /// the table is written ([`Self::log_rows`] rows of [`LOG_ROW_BYTES`]). Within a factor of
    /// 2 of the measured peak resident set over the grid of `tests/it/preflight.rs`
    /// (docs/performance.md, "Training memory").
    pub fn memory_bytes(&self) -> (u128, u128) {
        let columns = self.columns_u128();
        let mut seq_cfg = self.mc.clone();
        seq_cfg.model.branch.tokens =
            usize::try_from(self.tokens_per_example()).unwrap_or(usize::MAX);
        let depth = self.mc.model.depth;
        let size = self.mc.precision.bytes() as u128;
        let (outputs, inputs) = self.ends();
        let d = self.mc.model.branch.width as u128;
        let params = crate::monte_carlo::size::body_weights(&self.mc, depth)
            .saturating_add(d.saturating_mul(inputs.saturating_add(outputs)));
        let acts = crate::monte_carlo::size::body_activation_floats(&seq_cfg, depth)
            .saturating_mul(self.batch as u128);
        let logits = (3 * outputs).saturating_mul(columns);
        let eval = (4 * self.eval_batches as u128).saturating_mul(columns);
        let per_run = size.saturating_mul(
            params
                .saturating_mul(PARAM_COPIES)
                .saturating_add(acts)
                .saturating_add(logits)
                .saturating_add(eval),
        );
        let runs = (rayon::current_num_threads() as u128).min(self.runs());
        let log = self
            .runs()
            .saturating_mul(self.log_rows())
            .saturating_mul(LOG_ROW_BYTES);
        let model = per_run
            .saturating_mul(runs)
            .saturating_add(self.teacher_bytes())
            .saturating_add(PROCESS_BYTES);
        (model, log)
    }

    /// Refuses a run whose estimated peak memory ([`Self::memory_bytes`]) does not fit, before
    /// allocating, naming the settings that lower its larger part.
    pub fn check_memory(&self) -> Result<()> {
        let (model, log) = self.memory_bytes();
        let lower = if log > model {
            "--steps (or raise --log-every and --eval-every), --seeds or --preset (the log of every run is kept until the table is written)"
        } else {
            "--width, --depth, --batch, --seq, --teacher-width, --teacher-depth or the number of threads"
        };
        crate::budget::check(model.saturating_add(log), "this training run", lower)
    }

    /// Outputs and inputs of the model's ends (vocabulary or vector sizes, positions).
    fn ends(&self) -> (u128, u128) {
        let (outputs, inputs) = match self.io {
            Io::Tokens { vocab, seq } => (vocab, vocab + seq),
            Io::Pairs { vocab, src, tgt } => (vocab, 2 * vocab + src + tgt),
            Io::Vectors { d_in, d_out } => (d_out, d_in),
        };
        (outputs as u128, inputs as u128)
    }

    /// Estimated work of the request in floating-point operations
    /// ([`crate::budget::WORK_RATE`]), per run (presets times seeds): every update a forward
    /// and backward pass over the batch (three forward passes: the body's,
    /// `monte_carlo::size::body_forward_work`, with the ends and logits) plus the optimizer's
    /// update ([`OPTIMIZER_WORK`] per parameter) and the task's teacher drawing the batch; every
    /// evaluation a forward pass over `--eval-batches` batches; every logged update a copy and
    /// norms of the parameters.
    pub fn work(&self) -> f64 {
        let depth = self.mc.model.depth;
        let batch = self.batch as f64;
        let (outputs, inputs) = self.ends();
        let d = self.mc.model.branch.width as f64;
        let columns = self.columns_u128() as f64;
        let ends = 2.0 * columns * d * outputs as f64 + columns * d;
        let forward = crate::monte_carlo::size::body_forward_work(&self.mc, depth, batch) + ends;
        let params = crate::monte_carlo::size::body_weights(&self.mc, depth) as f64
            + d * (inputs + outputs) as f64;
        let t = &self.task;
        let teacher = 2.0
            * columns
            * (6.0 * (t.teacher_width as f64).powi(2) * (t.teacher_depth as f64 + 1.0)
                + t.teacher_width as f64 * t.vocab.max(t.d_out) as f64);
        let steps = self.schedule.steps as f64;
        let evals = (steps / self.eval_every as f64).floor() + 2.0;
        let logged = (steps / self.log_every as f64).floor() + 2.0;
        let per_run = steps * (3.0 * forward + OPTIMIZER_WORK * params + teacher)
            + evals * (self.eval_batches as f64 + 1.0) * forward
            + logged * 6.0 * params;
        per_run * self.runs() as f64
    }

    /// Refuses a request whose [`Self::work`] exceeds [`crate::budget::MAX_WORK`].
    pub fn check_work(&self) -> Result<()> {
        crate::budget::check_work(
            self.work(),
            &format!(
                "training {} run(s) of {} updates of --batch {}",
                self.runs(),
                self.schedule.steps,
                self.batch
            ),
            "--steps, --batch, --seeds, --preset, --width, --depth, --seq, --heads, --hidden-ratio, or --eval-batches (or raise --eval-every)",
        )
    }

    /// Peak bytes of the task's teacher: its weights (at most six `w x w` matrices per layer
    /// and the two ends) and the seeded context-free estimate: the caches (keys, values and
    /// stream per layer) of one chunk of sequences per thread
    /// ([`super::task::teacher_lm::ESTIMATE_CHUNK`], at most
    /// [`super::task::CONTEXT_FREE_SAMPLE`] in all), plus each chunk's `seq x vocab` sums, which it holds
    /// until they are added in order.
    pub(crate) fn teacher_bytes(&self) -> u128 {
        let t = &self.task;
        let w = t.teacher_width as u128;
        let depth = t.teacher_depth as u128 + 1;
        let ends = w * (t.vocab.max(t.d_in) + t.vocab.max(t.d_out)) as u128;
        let weights = depth.saturating_mul(6 * w * w).saturating_add(ends);
        // One chunk of sequences per thread at a time.
        let held = (rayon::current_num_threads() * super::task::teacher_lm::ESTIMATE_CHUNK)
            .min(super::task::CONTEXT_FREE_SAMPLE);
        let estimate = (held as u128)
            .saturating_mul(t.seq as u128 + 1)
            .saturating_mul(w)
            .saturating_mul(3 * depth);
        let chunks =
            super::task::CONTEXT_FREE_SAMPLE.div_ceil(super::task::teacher_lm::ESTIMATE_CHUNK);
        let sums = (chunks as u128)
            .saturating_mul(t.seq as u128)
            .saturating_mul(t.vocab as u128);
        8u128.saturating_mul(weights.saturating_add(estimate).saturating_add(sums))
    }

    /// Peak bytes of `--dump-init`'s JSON document: every batch's numbers (about 64 bytes each
    /// as parsed JSON values and text) and the parameters.
    pub fn dump_bytes(&self) -> u128 {
        let per_example = match self.io {
            Io::Tokens { seq, .. } => 3 * seq as u128,
            Io::Pairs { src, tgt, .. } => src as u128 + 3 * tgt as u128,
            Io::Vectors { d_in, d_out } => d_in as u128 + d_out as u128,
        };
        let per_batch = per_example * self.batch as u128;
        let d = self.mc.model.branch.width as u128;
        let params = (self.mc.model.depth as u128).saturating_mul(12 * d * d);
        64u128.saturating_mul(
            per_batch
                .saturating_mul(self.schedule.steps as u128 + self.eval_batches as u128)
                .saturating_add(params),
        )
    }
}

/// Refuses a stack whose norm cannot run on the task's batches: BatchNorm with a single value
/// per channel (`--batch`), InstanceNorm on examples that are single vectors (`--norm`, or
/// `--placements` when a placement file names it), GroupNorm
/// whose groups do not divide the width or leave blocks of one entry (`--groups`). `d` is the
/// width, `seq` the tokens per sequence of the model's columns (1 for vectors) and `columns`
/// the columns of a training batch.
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::RawModel;
/// use normscope_core::placement;
/// use normscope_core::spec::NormKind;
/// use normscope_core::train::config::check_trainable;
/// let spec = |norm: NormKind| {
///     let raw = RawModel { norm, width: 8, ..RawModel::default() };
///     raw.check().unwrap().stack(placement::find("pre").unwrap()).unwrap()
/// };
/// assert!(check_trainable(&spec(NormKind::Batch), 8, 16, 4 * 16).is_ok());
/// let err = check_trainable(&spec(NormKind::Instance), 8, 1, 4).unwrap_err().to_string();
/// assert!(err.starts_with("invalid --norm = instance"), "{err}");
/// let err = check_trainable(&spec(NormKind::Batch), 8, 1, 1).unwrap_err().to_string();
/// assert!(err.starts_with("invalid --batch = 1"), "{err}");
/// ```
pub fn check_trainable(
    spec: &crate::spec::StackSpec,
    d: usize,
    seq: usize,
    columns: usize,
) -> Result<()> {
    use crate::spec::NormLayout;
    // A placement file's own norm kind is its file's choice, not --norm's.
    let field = if spec.file.is_some() {
        "--placements"
    } else {
        "--norm"
    };
    refused(NormUse::TrainedOn {
        norm: spec.norm,
        seq,
        field,
    })?;
    let layout = NormLayout {
        groups: spec.layout.groups,
        seq: Some(seq),
    };
    crate::monte_carlo::norm::grouping(spec.norm, layout, d, columns)?;
    Ok(())
}
