//! What the training loop ([`super::run::train`]) needs of a model, so that one loop trains
//! the decoder-only [`TrainModel`] and the encoder-decoder [`super::seq2seq::EncDec`] alike:
//! its parameters with where they sit ([`ParamInfo`]), the loss and gradients on a batch with
//! the stream gradients of the same backward pass, the evaluation loss, and the probe batch's
//! output and diagnostics.
//!
//! Stream gradients ([`LayerValue`], logged as `stream_grad`): `||dL/dx_l||_F / sqrt(n)` at
//! every block boundary l (the stream `x_l` entering block l + 1, n its columns, i.e. tokens),
//! from the backward pass the update uses. The decoder-only model logs l = 0..=L at layers
//! 0..=L (layer 0 is the embedding's output); the encoder-decoder model's layers are in
//! [`super::seq2seq`]. Liu et al. 2020 (arXiv:2004.08249, Sec. 3) read exactly this profile:
//! in Post-LN the gradient shrinks toward the decoder's input.

use super::diagnostics::{self, AttentionStats};
use super::model::{ParamInfo, TrainModel};
use super::pass;
use super::pass::Typed;
use super::task::Batch;
use crate::norms::running::Running;
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// One value per layer from a backward pass (e.g. `stream_grad`).
///
/// # Examples
///
/// `stream_grad` at the block boundaries 0..=2 of a depth-2 model, from one backward pass.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::trainable::{LayerValue, Trainable};
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
/// let (model, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let streams: Vec<LayerValue> = model.gradients(&first).streams;
/// assert_eq!(streams.iter().map(|v| v.layer).collect::<Vec<_>>(), [0, 1, 2]);
/// assert!(streams.iter().all(|v| v.metric == "stream_grad" && v.value > 0.0));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LayerValue {
    /// The layer ([`ParamInfo::layer`]'s numbering).
    pub layer: usize,
    /// The metric's name in the log.
    pub metric: &'static str,
    /// Its value.
    pub value: f64,
}

/// The loss and gradients of one batch.
///
/// # Examples
///
/// One gradient per parameter, shaped like it, and the loss of the same forward pass.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::trainable::Trainable;
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
/// let (model, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let g = model.gradients(&first);
/// assert_eq!(g.loss, model.batch_loss(&first));
/// let params = model.params();
/// assert_eq!(g.grads.len(), params.len());
/// assert!(g.grads.iter().zip(&params).all(|(g, (_, w))| g.shape() == w.shape()));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Gradients<T: Real> {
    /// The loss (f64).
    pub loss: f64,
    /// Every parameter's gradient, in [`Trainable::params`] order.
    pub grads: Vec<DMatrix<T>>,
    /// Per-layer values of the same backward pass: `stream_grad` at every block boundary (and
    /// whatever else the model reports, e.g. the encoder-decoder's `memory_grad`).
    pub streams: Vec<LayerValue>,
    /// BatchNorm's running statistics after this training pass, one per BatchNorm slot
    /// ([`Trainable::set_running`]; empty without one, or in evaluation mode).
    pub running: Vec<Running>,
}

/// What an evaluation logs from one forward pass of the probe batch.
///
/// # Examples
///
/// A Pre-LN MLP of 2 blocks: the RMS of both blocks' `N_in` inputs, by layer and slot, and no
/// attention statistics.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::run;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::trainable::Trainable;
///
/// let raw = RawTrain {
///     presets: "pre".into(),
///     model: RawModel { depth: 2, branch: "relu-mlp".into(), width: 8, ..RawModel::default() },
///     task: TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() },
///     batch: 4,
///     ..RawTrain::default()
/// };
/// let cfg = raw.check()?;
/// let task = task::build(&cfg.task)?;
/// let (model, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let p = model.probe(&first);
/// let slots: Vec<(usize, &str)> = p.norm_inputs.iter().map(|x| (x.0, x.1)).collect();
/// assert_eq!(slots, [(1, "n_in"), (2, "n_in")]);
/// assert!(p.attention.is_empty());
/// assert_eq!(p.output, model.output(&first));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Probe<T: Real> {
    /// The output (logits or regression outputs), for `output_change`.
    pub output: DMatrix<T>,
    /// `(layer, slot, RMS)` of every norm slot's input ([`diagnostics::norm_inputs`]).
    pub norm_inputs: Vec<(usize, &'static str, f64)>,
    /// `(layer, stats)` of every softmax-attention block ([`diagnostics::attention`]).
    pub attention: Vec<(usize, AttentionStats)>,
}

/// A model the training loop can train.
///
/// # Examples
///
/// [`TrainModel`] is an implementor: L + 2 layers (input map, blocks, output), its output on a
/// batch of 4 regression examples, and one step of plain gradient descent written against the
/// trait.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::task::Batch;
/// use normscope_core::train::trainable::Trainable;
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
/// fn sgd_step<M: Trainable<Real = f64>>(m: &mut M, batch: &Batch, lr: f64) {
///     let g = m.gradients(batch);
///     for (w, gw) in m.params_mut().into_iter().zip(g.grads) {
///         *w -= gw * lr;
///     }
/// }
///
/// let (mut model, _, first) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// assert_eq!(model.layers(), 4);
/// assert_eq!(model.output(&first).shape(), (2, 4));
/// let before = model.batch_loss(&first);
/// sgd_step(&mut model, &first, 1e-3);
/// assert!(model.batch_loss(&first) < before);
/// # Ok(())
/// # }
/// ```
pub trait Trainable: Clone {
    /// The float type of its parameters and activations.
    type Real: Real;

    /// Every parameter with where it sits, in the order of [`Self::params_mut`] and of
    /// [`Gradients::grads`].
    fn params(&self) -> Vec<(ParamInfo, &DMatrix<Self::Real>)>;

    /// The parameters, mutable, in [`Self::params`] order.
    fn params_mut(&mut self) -> Vec<&mut DMatrix<Self::Real>>;

    /// The number of layers per-layer statistics run over: every [`ParamInfo::layer`] and
    /// [`LayerValue::layer`] is below it.
    fn layers(&self) -> usize;

    /// The loss of `batch` and its gradients, with the stream gradients of the same pass.
    fn gradients(&self, batch: &Batch) -> Gradients<Self::Real>;

    /// The loss of `batch` (a forward pass only).
    fn batch_loss(&self, batch: &Batch) -> f64;

    /// The output on `batch`.
    fn output(&self, batch: &Batch) -> DMatrix<Self::Real>;

    /// The output and the diagnostics of one forward pass of `batch`.
    fn probe(&self, batch: &Batch) -> Probe<Self::Real>;

    /// Switches its forward passes to training (`true`, as built) or evaluation, as PyTorch's
    /// `module.train()` and `module.eval()`: only BatchNorm differs (batch or running
    /// statistics).
    fn set_training(&mut self, on: bool);

    /// Sets BatchNorm's running statistics to those of a training pass
    /// ([`Gradients::running`]), as PyTorch's forward pass in training mode moves them.
    fn set_running(&mut self, running: Vec<Running>);

    /// Whether a norm keeps running statistics (BatchNorm), so that evaluation and training
    /// mode differ.
    fn has_running_statistics(&self) -> bool;
}

impl<T: Real> Trainable for TrainModel<T> {
    type Real = T;

    fn params(&self) -> Vec<(ParamInfo, &DMatrix<T>)> {
        TrainModel::params(self)
    }

    fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        TrainModel::params_mut(self)
    }

    /// L + 2: the input map (0), the blocks (1..=L), the output norm and head (L + 1).
    fn layers(&self) -> usize {
        self.depth() + 2
    }

    fn gradients(&self, batch: &Batch) -> Gradients<T> {
        let typed = Typed::<T>::new(batch);
        let (input, target) = typed.views();
        let p = self.forward(input);
        let (loss, g) = pass::loss(&p.output, target);
        let n = p.output.ncols();
        let (grads, stream_sq) = self.backward_with_streams(input, &p, &g);
        Gradients {
            loss,
            grads,
            streams: stream_values(0, &stream_sq, n),
            running: self.running_after(&p),
        }
    }

    fn batch_loss(&self, batch: &Batch) -> f64 {
        let typed = Typed::<T>::new(batch);
        let (input, target) = typed.views();
        pass::loss(&self.forward(input).output, target).0
    }

    fn output(&self, batch: &Batch) -> DMatrix<T> {
        self.forward(Typed::<T>::new(batch).views().0).output
    }

    fn probe(&self, batch: &Batch) -> Probe<T> {
        let p = self.forward(Typed::<T>::new(batch).views().0);
        Probe {
            norm_inputs: diagnostics::norm_inputs(self, &p),
            attention: diagnostics::attention(self, &p),
            output: p.output,
        }
    }

    fn set_training(&mut self, on: bool) {
        self.training = on;
    }

    fn set_running(&mut self, running: Vec<Running>) {
        TrainModel::set_running(self, running);
    }

    fn has_running_statistics(&self) -> bool {
        self.norm_slots().iter().any(|n| n.running.is_some())
    }
}

/// `stream_grad` at layers `first..`: `sqrt(stream_sq[l]) / sqrt(n)` for n columns.
pub(crate) fn stream_values(first: usize, stream_sq: &[f64], n: usize) -> Vec<LayerValue> {
    stream_sq
        .iter()
        .enumerate()
        .map(|(l, s)| LayerValue {
            layer: first + l,
            metric: "stream_grad",
            value: s.sqrt() / (n as f64).sqrt(),
        })
        .collect()
}
