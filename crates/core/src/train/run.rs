//! The training loop of one (preset, seed) run and what it logs, and the
//! runs of a request in parallel, reduced in (preset, seed) order so the log is byte-identical
//! for any thread count.
//!
//! Pairing: the data stream of seed s ([`data_rng`]) and the initial weights
//! ([`super::init::weight_rng`]) depend on the seed alone, so every preset sees the same
//! batches in the same order and, where shapes match, starts from the same draws. The
//! evaluation set and the probe batch (its first batch) are drawn once from the teacher seed
//! and shared by every run.
//!
//! Logged per run (long format, one value per row; `layer` 0 is the input map, 1..=L the
//! blocks, L + 1 the output norm and head; an encoder-decoder model numbers its two stacks one
//! after the other, [`super::seq2seq`], and a layer without parameters gets no per-layer
//! `grad_norm`, `update_ratio` or Adam rows):
//!
//! | metric | when | layer / param |
//! |---|---|---|
//! | `train_loss`, `lr` | every `--log-every` updates | - |
//! | `grad_norm` | same, before clipping | every parameter tensor; `all` per layer; global |
//! | `update_norm` `‖Δθ_l‖`, `update_ratio` `‖Δθ_l‖/‖θ_l‖` | same | per layer |
//! | `adam_v_mean`, `adam_v_max` (Adam's second moment, not bias-corrected) | same | per layer |
//! | `stream_grad` `‖dL/dx_l‖_F / sqrt(columns)` at every block boundary ([`super::trainable`]) | same | per layer (0..=L) |
//! | `memory_grad` (encoder-decoder: what each cross-attention block sends to the encoder output) | same | cross-attention layers |
//! | `eval_loss`, `excess_loss` (over the task's floor on the eval set) | step 0 and every `--eval-every` | - |
//! | `output_change` `‖f(θ_t; P) - f(θ_0; P)‖_F / sqrt(columns)` on the probe batch P (Liu et al. 2020) | same | - |
//! | `norm_input_rms` | same | per layer, param = slot |
//! | `attn_max_logit`, `attn_entropy` | same | attention layers |
//! | `eval_floor`, `context_free_loss` | step 0 | - |
//! | `param_count` (entries of every parameter tensor of the layer, the `n_l` of a per-entry RMS norm `‖·‖_F / sqrt(n_l)`) | step 0 | per layer (`all`) |
//! | `diverged` (1 or 0) | once: at the step flagged, else the last | - |
//!
//! Divergence ([`DIVERGE_FACTOR`], [`DIVERGE_EVALS`]): a non-finite training loss or gradient,
//! or an evaluation loss above `DIVERGE_FACTOR` times the initial one at `DIVERGE_EVALS`
//! consecutive evaluations. A flagged run stops there; the other runs go on. No non-finite
//! number is logged.
//!
//! Models: [`train`] trains any [`Trainable`] (the decoder-only [`TrainModel`], the
//! encoder-decoder [`EncDec`]); [`run_one`] starts the one `cfg.arch` asks for.
//!
//! Float type: a run computes in `cfg.mc.precision` (`--precision`, f64 by default): [`train`]
//! is generic over the model's [`Real`], a task's batches (drawn in f64) are rounded to the
//! run's type ([`Typed`]), and every logged value is accumulated in f64. The same seed in f64 and f32
//! sees the same batches and starts from the same draws (rounded), so the two are paired.

use super::batch_cache::{self, BatchCache};
use super::config::{Arch, TrainConfig};
use super::init;
use super::model::{ParamInfo, TrainModel};
use super::optim::{Optimizer, clip_global_norm_as};
use super::pass::Typed;
use super::seq2seq::EncDec;
use super::task::{Batch, Task};
use super::trainable::{Gradients, Trainable};
use crate::monte_carlo::Progress;
use crate::monte_carlo::precision::Precision;
use crate::placement::Preset;
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;
use normscope_numeric::rng::{Rng, config_hash, splitmix64};
use rand::SeedableRng;
use rayon::prelude::*;

/// An evaluation loss above this multiple of the initial one counts toward divergence.
pub const DIVERGE_FACTOR: f64 = 1.5;

/// Consecutive evaluations above [`DIVERGE_FACTOR`] that flag a run as diverged.
pub const DIVERGE_EVALS: usize = 3;

/// The evaluation-loss part of the divergence rule: counts consecutive evaluations above
/// [`DIVERGE_FACTOR`] times the initial loss.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DivergenceRule {
    initial: f64,
    above: usize,
}

impl DivergenceRule {
    /// The rule for a run whose evaluation loss at init is `initial`.
    pub fn new(initial: f64) -> Self {
        DivergenceRule { initial, above: 0 }
    }

    /// Records an evaluation loss; whether the run has now diverged (a non-finite loss, or
    /// [`DIVERGE_EVALS`] consecutive losses above `DIVERGE_FACTOR * initial`).
    pub fn observe(&mut self, loss: f64) -> bool {
        if !loss.is_finite() {
            return true;
        }
        self.above = if loss > DIVERGE_FACTOR * self.initial {
            self.above + 1
        } else {
            0
        };
        self.above >= DIVERGE_EVALS
    }
}

/// One logged value.
///
/// # Examples
///
/// A request's log: one row per value; step 0 holds the evaluation loss at init.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::run::Record;
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let records: Vec<Record> = run::run(&cfg, &())?;
/// let evals: Vec<u64> = records
///     .iter()
///     .filter(|r| r.metric == "eval_loss")
///     .map(|r| r.step)
///     .collect();
/// assert_eq!(evals, [0, 1, 2, 3]);
/// let first = &records[0];
/// assert_eq!((first.preset.as_str(), first.seed), ("pre", 0));
/// assert!(records.iter().all(|r| r.value.is_finite()));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Preset name.
    pub preset: String,
    /// Training seed.
    pub seed: u64,
    /// Update number (0 = at init).
    pub step: u64,
    /// Layer, if per layer.
    pub layer: Option<usize>,
    /// Parameter or slot, if per parameter (`all` for a layer's total).
    pub param: Option<String>,
    /// The quantity.
    pub metric: &'static str,
    /// Its value (always finite).
    pub value: f64,
}

/// The data stream of training seed `seed`.
pub fn data_rng(seed: u64) -> Rng {
    Rng::seed_from_u64(splitmix64(
        splitmix64(seed) ^ config_hash("normscope-train-data-v1"),
    ))
}

/// The evaluation set's stream (shared by every run of a teacher).
pub fn eval_rng(teacher_seed: u64) -> Rng {
    Rng::seed_from_u64(splitmix64(
        splitmix64(teacher_seed) ^ config_hash("normscope-train-eval-v1"),
    ))
}

/// The weight of a batch in an average over batches (its loss weights, or its entries).
fn batch_weight(b: &Batch) -> f64 {
    match b {
        Batch::Tokens(t) => t.weights.iter().sum(),
        Batch::Pairs(p) => p.weights.iter().sum(),
        Batch::Vectors(v) => v.y.len() as f64,
    }
}

/// Weighted mean loss of `m` over `set` (accumulated in f64).
pub fn eval_loss<M: Trainable>(m: &M, set: &[Batch]) -> f64 {
    let (mut sum, mut w) = (0.0, 0.0);
    for b in set {
        let bw = batch_weight(b);
        sum += m.batch_loss(b) * bw;
        w += bw;
    }
    sum / w
}

struct Logger<'a> {
    preset: &'a str,
    seed: u64,
    out: Vec<Record>,
}

impl Logger<'_> {
    fn put(
        &mut self,
        step: u64,
        layer: Option<usize>,
        param: Option<&str>,
        metric: &'static str,
        value: f64,
    ) {
        if value.is_finite() {
            self.out.push(Record {
                preset: self.preset.to_string(),
                seed: self.seed,
                step,
                layer,
                param: param.map(str::to_string),
                metric,
                value,
            });
        }
    }
}

/// Whether every entry is finite: [`f64::is_finite`] of each, without stopping at the first
/// that is not within a block of 256, so that the test vectorizes (the answer is the same).
fn all_finite<T: Real>(values: &[T]) -> bool {
    values
        .chunks(256)
        .all(|c| c.iter().fold(true, |ok, v| ok & v.as_f64().is_finite()))
}

/// Per-layer square sums of a list of tensors in [`Trainable::params`] order (in f64), over
/// `n` layers.
fn layer_sq<T: Real>(layers: &[usize], tensors: &[&DMatrix<T>], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n];
    for (l, t) in layers.iter().zip(tensors) {
        out[*l] += T::sum_sq(*t);
    }
    out
}

/// The initial model of `preset` for training seed `seed`, the seed's data stream, and its
/// first batch (on which Admin's `omega` is profiled), in f64: the entry point of the f64-only
/// paths (sweeps, `--dump-init`, ablations), so a request whose `cfg.mc.precision` is not f64
/// is refused ([`check_f64`]) rather than silently computed, and logged, as f64. [`start_as`]
/// for another float type.
pub fn start(
    cfg: &TrainConfig,
    task: &dyn Task,
    preset: &'static Preset,
    seed: u64,
) -> crate::Result<(TrainModel, Rng, Batch)> {
    check_f64(cfg)?;
    start_as(cfg, task, preset, seed)
}

/// Refuses a request whose precision is not f64, for the paths that only train in f64.
pub fn check_f64(cfg: &TrainConfig) -> crate::Result<()> {
    match cfg.mc.precision {
        Precision::F64 => Ok(()),
        p => Err(crate::Error::invalid(
            "precision",
            p.name(),
            "f64 (sweeps, ablations and --dump-init train in f64 only; `normscope train --precision f32` runs one request in f32)",
        )),
    }
}

/// [`start`] in float type `T`: the same draws and batches, the weights rounded to `T`. A
/// decoder-only model: an encoder-decoder request is refused ([`start_encdec`] starts those).
pub fn start_as<T: Real>(
    cfg: &TrainConfig,
    task: &dyn Task,
    preset: &'static Preset,
    seed: u64,
) -> crate::Result<(TrainModel<T>, Rng, Batch)> {
    if cfg.arch != Arch::Decoder {
        return Err(crate::Error::invalid(
            "--arch",
            cfg.arch.name(),
            "decoder here (sweeps, ablations and the training analyses train decoder-only models; `normscope train` runs encoder-decoder requests)",
        ));
    }
    let spec = cfg.mc.model.stack(preset)?;
    let mut data = data_rng(seed);
    let first = task.batch(&mut data, cfg.batch);
    let (seq, columns) = match &first {
        Batch::Tokens(t) => (t.seq, t.inputs.len()),
        Batch::Vectors(v) => (1, v.x.ncols()),
        Batch::Pairs(_) => unreachable!("a decoder-only task's batch"),
    };
    super::config::check_trainable(&spec, cfg.mc.model.branch.width, seq, columns)?;
    let m = init::model_as(&spec, &cfg.mc, cfg.io, cfg.affine, seed, |m| {
        m.embed(Typed::<T>::new(&first).views().0)
    });
    Ok((m, data, first))
}

/// The initial encoder-decoder model of `preset` for training seed `seed` in float type `T`
/// ([`super::seq2seq::init`]), the seed's data stream, and its first batch (on which Admin's
/// `omega` is profiled): [`start_as`] for `--arch encoder-decoder`.
pub fn start_encdec<T: Real>(
    cfg: &TrainConfig,
    task: &dyn Task,
    preset: &'static Preset,
    seed: u64,
) -> crate::Result<(EncDec<T>, Rng, Batch)> {
    let mut data = data_rng(seed);
    let first = task.batch(&mut data, cfg.batch);
    let Batch::Pairs(pairs) = &first else {
        return Err(crate::Error::invalid(
            "--task",
            task.kind().name(),
            "reverse-pairs with --arch encoder-decoder",
        ));
    };
    let m = super::seq2seq::init::model(cfg, preset, seed, pairs)?;
    Ok((m, data, first))
}

/// Trains one preset from one seed, from its initial model ([`start_as`], or [`start_encdec`]
/// for an encoder-decoder request), in the float type of `cfg.mc.precision`, taking its batches
/// through `batches` when given.
pub fn run_one(
    cfg: &TrainConfig,
    task: &dyn Task,
    job: (&'static Preset, u64),
    eval_set: &[Batch],
    batches: Option<&BatchCache>,
    progress: &dyn Progress,
) -> crate::Result<Vec<Record>> {
    let options = Options {
        batches,
        ..Options::default()
    };
    match cfg.mc.precision {
        Precision::F64 => run_one_as::<f64>(cfg, task, job, eval_set, &options, progress),
        Precision::F32 => run_one_as::<f32>(cfg, task, job, eval_set, &options, progress),
    }
}

fn run_one_as<T: Real>(
    cfg: &TrainConfig,
    task: &dyn Task,
    (preset, seed): (&'static Preset, u64),
    eval_set: &[Batch],
    options: &Options,
    progress: &dyn Progress,
) -> crate::Result<Vec<Record>> {
    let records = match cfg.arch {
        Arch::Decoder => {
            let begin = start_as::<T>(cfg, task, preset, seed)?;
            train(cfg, task, preset, seed, begin, eval_set, options, progress).records
        }
        Arch::EncoderDecoder { .. } => {
            let begin = start_encdec::<T>(cfg, task, preset, seed)?;
            train(cfg, task, preset, seed, begin, eval_set, options, progress).records
        }
    };
    // A run stopped early (`crate::interrupt`) has no log.
    crate::interrupt::check()?;
    Ok(records)
}

/// What [`train`] does besides the loop of `cfg`: which parameters it keeps fixed, and at which
/// updates it keeps a copy of the model.
///
/// # Examples
///
/// By default every parameter trains and no copy is kept; here the starting model and the one
/// after update 2 are kept, and the head is frozen.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::model::ParamInfo;
/// use normscope_core::train::run::Options;
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let d = Options::default();
/// assert!(d.frozen.is_none() && d.snapshots.is_empty() && !d.stop_collapsed && !d.lean);
///
/// let frozen = |p: &ParamInfo| p.name == "head";
/// let options = Options { frozen: Some(&frozen), snapshots: &[0, 2], ..Options::default() };
/// let begin = run::start(&cfg, task.as_ref(), cfg.presets[0], 0)?;
/// let head0 = begin.0.head.clone();
/// let mut er = run::eval_rng(cfg.task.teacher_seed);
/// let eval = vec![task.batch(&mut er, cfg.batch)];
/// let t = run::train(&cfg, task.as_ref(), cfg.presets[0], 0, begin, &eval, &options, &());
/// assert_eq!(t.snapshots.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 2]);
/// assert_eq!(t.model.head, head0);
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct Options<'a> {
    /// Parameters not updated (frozen), by their [`ParamInfo`]; `None` trains every one.
    pub frozen: Option<&'a (dyn Fn(&ParamInfo) -> bool + Sync)>,
    /// Updates after which a copy of the model is kept (0 = the starting model).
    pub snapshots: &'a [u64],
    /// Batches shared with the other runs of the request ([`BatchCache`]; the same batches
    /// either way).
    pub batches: Option<&'a BatchCache>,
    /// Stop a run that is collapsed on its evaluations so far, from
    /// [`super::classify::STOP_FROM`] of its updates on ([`super::classify::stop_now`]); the
    /// log then has `stopped_collapsed` = 1 at that update.
    pub stop_collapsed: bool,
    /// Skip what only a single run's log needs: the per-parameter gradient norms and the
    /// evaluation-time diagnostics (norm-input RMS, attention statistics). Losses, per-layer
    /// gradient and update norms, `output_change` and everything the classifier reads stay.
    pub lean: bool,
}

/// A finished run: the final model (as it was when the run stopped), its log, and the copies
/// asked for by [`Options::snapshots`] (in step order; none after a divergence). `Trained`
/// alone is an f64 decoder-only run's (`Trained<TrainModel<f64>>`).
///
/// # Examples
///
/// Three updates of Adam at lr 1e-3 do not diverge; the log ends with `diverged` = 0.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::run::{Options, Trained};
///
/// // L = 2 ReLU-MLP blocks of width 8 (hidden 32), regression from 4 inputs to 2 outputs.
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     steps: 3,
///     batch: 4,
///     eval_every: 1,
///     eval_batches: 1,
///     log_every: 1,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
///
/// let begin = run::start(&cfg, task.as_ref(), cfg.presets[0], 0)?;
/// let mut er = run::eval_rng(cfg.task.teacher_seed);
/// let eval = vec![task.batch(&mut er, cfg.batch)];
/// let options = Options::default();
/// let t: Trained = run::train(&cfg, task.as_ref(), cfg.presets[0], 0, begin, &eval, &options, &());
/// assert_eq!((t.diverged_at, t.stopped_at), (None, None));
/// assert!(t.snapshots.is_empty());
/// let last = t.records.iter().rev().find(|r| r.metric == "diverged").unwrap();
/// assert_eq!((last.step, last.value), (3, 0.0));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Trained<M = TrainModel> {
    /// The model after the last update made.
    pub model: M,
    /// The log.
    pub records: Vec<Record>,
    /// `(update, model)` copies.
    pub snapshots: Vec<(u64, M)>,
    /// The update at which the run was flagged as diverged, if it was.
    pub diverged_at: Option<u64>,
    /// The update at which a collapsed run was stopped ([`Options::stop_collapsed`]), if it
    /// was.
    pub stopped_at: Option<u64>,
}

/// Trains `begin = (model, data stream, first batch)` (from [`start`], [`start_encdec`], or a
/// pre-trained model with a new task's stream) for `cfg`'s schedule, logging as the module
/// docs say. Any [`Trainable`] model; the float type is the model's (`cfg.mc.precision` is not
/// read here).
#[allow(clippy::too_many_arguments)]
pub fn train<M: Trainable>(
    cfg: &TrainConfig,
    task: &dyn Task,
    preset: &'static Preset,
    seed: u64,
    begin: (M, Rng, Batch),
    eval_set: &[Batch],
    options: &Options,
    progress: &dyn Progress,
) -> Trained<M> {
    let (mut m, mut data, first_batch) = begin;
    let infos: Vec<_> = m.params().into_iter().map(|(i, _)| i).collect();
    let layers: Vec<usize> = infos.iter().map(|i| i.layer).collect();
    let trained: Vec<bool> = infos
        .iter()
        .map(|i| !options.frozen.is_some_and(|f| f(i)))
        .collect();
    let shapes: Vec<(usize, usize)> = m
        .params()
        .iter()
        .zip(&trained)
        .filter(|(_, t)| **t)
        .map(|((_, w), _)| w.shape())
        .collect();
    let decay: Vec<bool> = infos
        .iter()
        .zip(&trained)
        .filter(|(_, t)| **t)
        .map(|(i, _)| i.decay)
        .collect();
    // Index of each trained tensor among the optimizer's.
    let slot: Vec<Option<usize>> = trained
        .iter()
        .scan(0, |k, t| {
            Some(t.then(|| {
                *k += 1;
                *k - 1
            }))
        })
        .collect();
    let mut opt = Optimizer::<M::Real>::new_as(cfg.optimizer, &shapes, &decay);
    let n_layers = m.layers();
    // Layers without parameters (an encoder without an output norm) get no per-layer rows.
    let mut has_params = vec![false; n_layers];
    for l in &layers {
        has_params[*l] = true;
    }
    let mut log = Logger {
        preset: preset.name,
        seed,
        out: Vec::new(),
    };
    let mut snapshots = Vec::new();
    if options.snapshots.contains(&0) {
        let mut snap = m.clone();
        snap.set_training(false);
        snapshots.push((0, snap));
    }
    let probe = &eval_set[0];
    // Evaluations run in evaluation mode (BatchNorm on its running statistics), updates in
    // training mode, as a PyTorch loop switches with `model.eval()` and `model.train()`.
    m.set_training(false);
    let f0 = m.output(probe);
    let floor = {
        let (mut s, mut w) = (0.0, 0.0);
        for b in eval_set {
            s += task.floor(b) * batch_weight(b);
            w += batch_weight(b);
        }
        s / w
    };
    log.put(0, None, None, "eval_floor", floor);
    log.put(0, None, None, "context_free_loss", task.context_free_loss());
    // Entries per layer (every parameter tensor of it): the `n_l` of the per-entry RMS norms
    // `||.||_F / sqrt(n_l)` of `super::sweep::Outcome::scaling`.
    let mut counts = vec![0usize; n_layers];
    for (info, w) in m.params() {
        counts[info.layer] += w.len();
    }
    for (l, &n) in counts.iter().enumerate().filter(|(l, _)| has_params[*l]) {
        log.put(0, Some(l), Some("all"), "param_count", n as f64);
    }
    let context_free = task.context_free_loss();
    let lean = options.lean;
    let first = evaluate(&m, eval_set, probe, &f0, floor, 0, lean, &mut log);
    m.set_training(true);
    // The divergence rule's baseline: the evaluation loss at init in training mode. It is
    // `first` for every norm but BatchNorm, whose running statistics at init (0 and 1) make
    // the evaluation-mode loss that of an un-normalized network and would loosen the rule for
    // BatchNorm alone.
    let baseline = match m.has_running_statistics() {
        true => eval_loss(&m, eval_set),
        false => first,
    };
    let mut rule = DivergenceRule::new(baseline);
    let mut evals = vec![(0, first)];
    let mut batch = first_batch;
    let mut diverged_at = None;
    let mut stopped_at = None;
    for s in 1..=cfg.schedule.steps {
        // A stopped run ends here, its log cut short: every caller checks the request after
        // `train` returns (`crate::interrupt::check`) and returns `Error::Interrupted`.
        if crate::interrupt::requested() {
            break;
        }
        if s > 1 {
            batch = batch_cache::draw(options.batches, task, &mut data, cfg.batch);
        }
        if let Some(c) = options.batches.filter(|_| s < cfg.schedule.steps) {
            // The next batch, drawn now unless another run of this stream has claimed it.
            c.prefetch(task, &data, cfg.batch);
        }
        let Gradients {
            loss,
            mut grads,
            streams,
            running,
        } = m.gradients(&batch);
        let logging = s == 1 || s % cfg.log_every == 0 || s == cfg.schedule.steps;
        let finite = loss.is_finite() && grads.iter().all(|g| all_finite(g.as_slice()));
        if !finite {
            diverged_at = Some(s);
            progress.tick();
            break;
        }
        m.set_running(running);
        let lr = cfg.schedule.lr(s);
        if logging {
            log.put(s, None, None, "train_loss", loss);
            log.put(s, None, None, "lr", lr);
            let gsq = layer_sq(&layers, &grads.iter().collect::<Vec<_>>(), n_layers);
            for (i, info) in infos.iter().enumerate().filter(|_| !lean) {
                log.put(
                    s,
                    Some(info.layer),
                    Some(&info.name),
                    "grad_norm",
                    M::Real::sum_sq(&grads[i]).sqrt(),
                );
            }
            for (l, v) in gsq.iter().enumerate().filter(|(l, _)| has_params[*l]) {
                log.put(s, Some(l), Some("all"), "grad_norm", v.sqrt());
            }
            log.put(
                s,
                None,
                Some("all"),
                "grad_norm",
                gsq.iter().sum::<f64>().sqrt(),
            );
            for v in &streams {
                log.put(s, Some(v.layer), None, v.metric, v.value);
            }
        }
        let mut grads: Vec<DMatrix<M::Real>> = grads
            .drain(..)
            .zip(&trained)
            .filter(|(_, t)| **t)
            .map(|(g, _)| g)
            .collect();
        if let Some(c) = cfg.clip {
            clip_global_norm_as(&mut grads, c);
        }
        let before: Option<Vec<DMatrix<M::Real>>> =
            logging.then(|| m.params().iter().map(|(_, w)| (*w).clone()).collect());
        {
            let mut params: Vec<&mut DMatrix<M::Real>> = m
                .params_mut()
                .into_iter()
                .zip(&trained)
                .filter(|(_, t)| **t)
                .map(|(w, _)| w)
                .collect();
            opt.step(&mut params, &grads, lr);
        }
        if let Some(before) = before {
            let now = m.params();
            let delta: Vec<DMatrix<M::Real>> =
                now.iter().zip(&before).map(|((_, w), b)| *w - b).collect();
            let dsq = layer_sq(&layers, &delta.iter().collect::<Vec<_>>(), n_layers);
            let wsq = layer_sq(&layers, &before.iter().collect::<Vec<_>>(), n_layers);
            for l in (0..n_layers).filter(|l| has_params[*l]) {
                log.put(s, Some(l), Some("all"), "update_norm", dsq[l].sqrt());
                if wsq[l] > 0.0 {
                    log.put(
                        s,
                        Some(l),
                        Some("all"),
                        "update_ratio",
                        (dsq[l] / wsq[l]).sqrt(),
                    );
                }
            }
            let mut v_sum = vec![0.0; n_layers];
            let mut v_n = vec![0usize; n_layers];
            let mut v_max = vec![f64::NEG_INFINITY; n_layers];
            for (i, l) in layers.iter().enumerate() {
                if let Some(v) = slot[i].and_then(|k| opt.second_moment(k)) {
                    v_sum[*l] += M::Real::sum(v);
                    v_n[*l] += v.len();
                    v_max[*l] = v_max[*l].max(v.max().as_f64());
                }
            }
            for l in 0..n_layers {
                if v_n[l] > 0 {
                    log.put(
                        s,
                        Some(l),
                        Some("all"),
                        "adam_v_mean",
                        v_sum[l] / v_n[l] as f64,
                    );
                    log.put(s, Some(l), Some("all"), "adam_v_max", v_max[l]);
                }
            }
        }
        if s % cfg.eval_every == 0 || s == cfg.schedule.steps {
            m.set_training(false);
            let e = evaluate(&m, eval_set, probe, &f0, floor, s, lean, &mut log);
            m.set_training(true);
            evals.push((s, e));
            if rule.observe(e) {
                diverged_at = Some(s);
                progress.tick();
                break;
            }
            if options.stop_collapsed
                && s < cfg.schedule.steps
                && super::classify::stop_now(&evals, cfg.schedule.steps, floor, context_free)
            {
                log.put(s, None, None, "stopped_collapsed", 1.0);
                stopped_at = Some(s);
                progress.tick();
                break;
            }
        }
        if options.snapshots.contains(&s) {
            let mut snap = m.clone();
            snap.set_training(false);
            snapshots.push((s, snap));
        }
        progress.tick();
    }
    match diverged_at {
        Some(s) => log.put(s, None, None, "diverged", 1.0),
        None => log.put(
            stopped_at.unwrap_or(cfg.schedule.steps),
            None,
            None,
            "diverged",
            0.0,
        ),
    }
    // Returned, like the snapshots, in evaluation mode: whoever evaluates it next gets
    // BatchNorm's running statistics, and `train` switches a model it continues back.
    m.set_training(false);
    Trained {
        model: m,
        records: log.out,
        snapshots,
        diverged_at,
        stopped_at,
    }
}

/// Logs the evaluation-time quantities at `step` (without the diagnostics when `lean`);
/// returns the evaluation loss.
#[allow(clippy::too_many_arguments)]
fn evaluate<M: Trainable>(
    m: &M,
    eval_set: &[Batch],
    probe: &Batch,
    f0: &DMatrix<M::Real>,
    floor: f64,
    step: u64,
    lean: bool,
    log: &mut Logger,
) -> f64 {
    let e = eval_loss(m, eval_set);
    log.put(step, None, None, "eval_loss", e);
    log.put(step, None, None, "excess_loss", e - floor);
    let p = m.probe(probe);
    let change = M::Real::sum_sq(&(&p.output - f0)).sqrt() / (f0.ncols() as f64).sqrt();
    log.put(step, None, None, "output_change", change);
    if lean {
        return e;
    }
    for (l, slot, v) in p.norm_inputs {
        log.put(step, Some(l), Some(slot), "norm_input_rms", v);
    }
    for (l, a) in p.attention {
        log.put(step, Some(l), None, "attn_max_logit", a.max_logit);
        log.put(step, Some(l), None, "attn_entropy", a.entropy);
    }
    e
}

/// Every (preset, seed) run of a request, in parallel, in (preset, seed) order.
pub fn run(cfg: &TrainConfig, progress: &(dyn Progress + Sync)) -> crate::Result<Vec<Record>> {
    let task = super::task::build(&cfg.task)?;
    // Every run logs it at step 0: estimated once here, on every thread, before the runs
    // share the task (a run that asked first would estimate it while the others wait).
    task.context_free_loss();
    let mut er = eval_rng(cfg.task.teacher_seed);
    let eval_set: Vec<Batch> = (0..cfg.eval_batches)
        .map(|_| task.batch(&mut er, cfg.batch))
        .collect();
    let jobs: Vec<(&'static Preset, u64)> = cfg
        .presets
        .iter()
        .flat_map(|&p| cfg.seeds.iter().map(move |s| (p, *s)))
        .collect();
    // Runs of one seed draw the same batches: drawn once, by whichever run gets there first.
    let batches = BatchCache::for_runs(task.as_ref(), jobs.len());
    let parts: Vec<crate::Result<Vec<Record>>> = jobs
        .par_iter()
        .map(|&job| {
            run_one(
                cfg,
                task.as_ref(),
                job,
                &eval_set,
                batches.as_ref(),
                progress,
            )
        })
        .collect();
    let mut out = Vec::new();
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divergence_needs_consecutive_evaluations_above_the_factor() {
        let high = DIVERGE_FACTOR * 2.0 + 0.01;
        let mut r = DivergenceRule::new(2.0);
        for _ in 1..DIVERGE_EVALS {
            assert!(!r.observe(high));
        }
        // A low evaluation resets the count.
        assert!(!r.observe(1.0));
        for _ in 1..DIVERGE_EVALS {
            assert!(!r.observe(high));
        }
        assert!(r.observe(high));
        // Exactly at the threshold is not above it; a non-finite loss diverges at once.
        let mut r = DivergenceRule::new(2.0);
        for _ in 0..2 * DIVERGE_EVALS {
            assert!(!r.observe(DIVERGE_FACTOR * 2.0));
        }
        assert!(r.observe(f64::NAN));
        assert!(DivergenceRule::new(1.0).observe(f64::INFINITY));
    }
}
