//! A trainable model: an input map, the L blocks of a [`StackSpec`] with the Monte Carlo
//! engine's branch modules, the preset's output norm and an output head,
//!
//! ```text
//! x_0 = E[:, token_t] + P[:, t]            (sequence tasks)   or   x_0 = W_in x   (regression)
//! x_l = N_out( alpha_l ⊙ x_{l-1} + lambda_l N_br( F_l( s_l N_in(x_{l-1}) ) ) ),  l = 1..L
//! f   = H N_final(x_L)                     (logits over the vocabulary, or the regression output)
//! ```
//!
//! (docs/theory.md, "The block model"). Every norm slot may carry a learnable gain and bias
//! ([`super::layer_norm`]); a preset's symbols become parameters where its paper trains them:
//! ReZero's `lambda_l` (a scalar, 0 at init; Bachlechner et al. 2020) and Admin's `omega_l` (a
//! d-vector initialized from the profiling pass; Liu et al. 2020). DeepNet's `alpha` and
//! LayerNorm-Scaling's `s_l = 1/sqrt(l)` are constants, as in their papers. The body is a
//! [`Network`] drawn by the Monte Carlo engine's sampler: made trainable
//! ([`TrainModel::from_network`]), the engine's network i gives the engine's streams and
//! gradients bit for bit (test `tests/it/train_gradients.rs`). A training run draws its body
//! from its own seed's stream ([`super::init::weight_rng`]), makes attention causal within
//! sequences and puts learned embeddings in front, so it is a network of the same distribution
//! the engine averages over, not the engine's network i.
//!
//! With `--branch transformer`, LayerNorm-Scaling's l and Mix-LN's split count blocks (two per
//! Transformer layer), as the stack spec does for every engine; their papers count layers
//! (DeepNet's constants already use N = L/2 layers). Not yet changed: it would change the
//! init-time tables too.

use super::layer_norm::NormLayer;
use crate::branch::{Branch, Module};
use crate::monte_carlo::network::Network;
use crate::spec::{BranchScale, InputScale, SkipScale, StackSpec};
use nalgebra::DMatrix;
use normscope_numeric::gemm::Real;

/// The map from the task's input to the stream `x_0`.
///
/// # Examples
///
/// A regression model maps its 4 inputs linearly to width 8; a token model embeds tokens and
/// positions.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::model::InputMap;
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
/// let (model, _, _) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// match &model.input {
///     InputMap::Linear(w) => assert_eq!(w.shape(), (8, 4)),
///     other => panic!("{other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub enum InputMap<T: Real = f64> {
    /// Token and learned position embeddings, `x_0 = E[:, token] + P[:, position]`.
    Embedding {
        /// `E`, d x vocab.
        tokens: DMatrix<T>,
        /// `P`, d x seq.
        positions: DMatrix<T>,
    },
    /// A linear map `x_0 = W_in x` (d x d_in).
    Linear(DMatrix<T>),
}

/// A skip scale: a constant, or Admin's learnable d-vector `omega`.
///
/// # Examples
///
/// Pre-LN's skips are the constant 1; Admin's `omega` is a learnable d-vector.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::model::Skip;
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
/// let (pre, _, _) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// assert!(matches!(pre.blocks[0].skip, Skip::Fixed(a) if a == 1.0));
/// let admin_cfg = RawTrain { presets: "admin".into(), ..raw }.check()?;
/// let (admin, _, _) = run::start(&admin_cfg, task.as_ref(), normscope_core::placement::find("admin")?, 0)?;
/// match &admin.blocks[1].skip {
///     Skip::Learnable(omega) => assert_eq!(omega.shape(), (8, 1)),
///     other => panic!("{other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub enum Skip<T: Real = f64> {
    /// A constant `alpha` (1, DeepNet's `alpha`), rounded to `T` where it multiplies.
    Fixed(f64),
    /// A learnable per-coordinate scale (d x 1).
    Learnable(DMatrix<T>),
}

/// A branch multiplier: a constant, or a learnable scalar (ReZero's `lambda`, 1 x 1).
///
/// # Examples
///
/// A learnable multiplier in f32 reads back exactly as f64 (0.1f32 is not 0.1).
///
/// ```rust
/// use nalgebra::DMatrix;
/// use normscope_core::train::model::Multiplier;
/// assert_eq!(Multiplier::<f64>::Fixed(0.5).value(), 0.5);
/// let lambda = Multiplier::Learnable(DMatrix::from_element(1, 1, 0.1f32));
/// assert_eq!(lambda.value(), 0.1f32 as f64);
/// assert_ne!(lambda.value(), 0.1);
/// ```
#[derive(Clone, Debug)]
pub enum Multiplier<T: Real = f64> {
    /// A constant.
    Fixed(f64),
    /// A learnable scalar.
    Learnable(DMatrix<T>),
}

impl<T: Real> Multiplier<T> {
    /// Its current value (exactly, as f64).
    pub fn value(&self) -> f64 {
        match self {
            Multiplier::Fixed(v) => *v,
            Multiplier::Learnable(m) => m[(0, 0)].as_f64(),
        }
    }
}

/// One trainable block.
///
/// # Examples
///
/// A Pre-LN block: `N_in` with its affine map, the MLP's two matrices, no `N_br` or `N_out`.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
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
/// let (model, _, _) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let block = &model.blocks[0];
/// assert!(block.n_in.is_some() && block.n_br.is_none() && block.n_out.is_none());
/// assert_eq!(block.in_scale, None);
/// let names: Vec<String> = block.named_params("").into_iter().map(|p| p.0).collect();
/// assert_eq!(names, ["w1", "w2", "n_in.gain", "n_in.bias"]);
/// assert_eq!(block.clone().params_mut().len(), 4);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TrainBlock<T: Real = f64> {
    /// `N_in` (with its affine), if a norm.
    pub n_in: Option<NormLayer<T>>,
    /// `s_l` after `N_in` (LayerNorm-Scaling's `1/sqrt(l)`), if any.
    pub in_scale: Option<f64>,
    /// The branch `F_l`.
    pub branch: Branch<T>,
    /// `N_br`, if a norm.
    pub n_br: Option<NormLayer<T>>,
    /// `alpha_l`.
    pub skip: Skip<T>,
    /// `lambda_l`.
    pub lambda: Multiplier<T>,
    /// `N_out`, if a norm.
    pub n_out: Option<NormLayer<T>>,
}

impl<T: Real> TrainBlock<T> {
    /// The block's parameters in order, named, with whether AdamW's weight decay applies: the
    /// branch's matrices (their names after `prefix`, e.g. `cross.` for cross-attention), then
    /// `n_in.gain`, `n_in.bias`, `n_br.*`, `n_out.*` (where present), `omega`, `lambda`
    /// (where learnable).
    pub fn named_params(&self, prefix: &str) -> Vec<(String, &DMatrix<T>, bool)> {
        let mut out: Vec<(String, &DMatrix<T>, bool)> = self
            .branch
            .params()
            .into_iter()
            .map(|(name, m)| (format!("{prefix}{name}"), m, true))
            .collect();
        for (slot, n) in [
            ("n_in", &self.n_in),
            ("n_br", &self.n_br),
            ("n_out", &self.n_out),
        ] {
            for (name, m) in n.iter().flat_map(|n| n.params()) {
                out.push((format!("{slot}.{name}"), m, false));
            }
        }
        if let Skip::Learnable(m) = &self.skip {
            out.push(("omega".into(), m, false));
        }
        if let Multiplier::Learnable(m) = &self.lambda {
            out.push(("lambda".into(), m, false));
        }
        out
    }

    /// The same parameters, mutable, in [`Self::named_params`] order.
    pub fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        let mut out = self.branch.params_mut();
        for n in [&mut self.n_in, &mut self.n_br, &mut self.n_out]
            .into_iter()
            .flatten()
        {
            out.extend(n.params_mut());
        }
        if let Skip::Learnable(m) = &mut self.skip {
            out.push(m);
        }
        if let Multiplier::Learnable(m) = &mut self.lambda {
            out.push(m);
        }
        out
    }
}

/// Where a parameter sits, for per-block statistics.
///
/// # Examples
///
/// Layer 0 is the input map, 1..=L the blocks, L + 1 the output norm and head; weight decay
/// applies to matrices only.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::model::ParamInfo;
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
/// let (model, _, _) = run::start(&cfg, task.as_ref(), normscope_core::placement::find("pre")?, 0)?;
/// let infos: Vec<ParamInfo> = model.params().into_iter().map(|(i, _)| i).collect();
/// assert_eq!(infos[0], ParamInfo { layer: 0, name: "w_in".into(), decay: true });
/// assert_eq!(infos[3], ParamInfo { layer: 1, name: "n_in.gain".into(), decay: false });
/// assert_eq!(infos.last().unwrap(), &ParamInfo { layer: 3, name: "head".into(), decay: true });
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// 0 for the input map, l for block l, L + 1 for the output norm and head (the
    /// encoder-decoder model numbers its two stacks one after the other:
    /// [`super::seq2seq`]).
    pub layer: usize,
    /// Its name within the layer, e.g. `wq`, `n_in.gain`, `omega`, `head`.
    pub name: String,
    /// Whether AdamW's decoupled weight decay applies (matrices only, not gains, biases or
    /// scalars).
    pub decay: bool,
}

/// The trainable blocks of `spec` around its sampled `branches` (width d) and its output norm:
/// norm slots with learnable affine maps when `affine`, ReZero's `lambda` learnable, Admin's
/// `omega` a learnable d-vector filled with `omegas[l-1]` (rounded to `T`; ignored for other
/// skips) ([`TrainModel::from_network`]).
pub(crate) fn train_blocks<T: Real>(
    spec: &StackSpec,
    branches: Vec<Branch<T>>,
    d: usize,
    affine: bool,
    omegas: &[f64],
) -> (Vec<TrainBlock<T>>, Option<NormLayer<T>>) {
    let kind = spec.norm;
    let slot = |s: crate::spec::Slot| {
        s.is_norm()
            .then(|| NormLayer::new(kind, d, affine).with_groups(spec.layout.groups))
    };
    let blocks = branches
        .into_iter()
        .enumerate()
        .map(|(i, branch)| {
            let b = spec.block(i + 1);
            TrainBlock {
                n_in: slot(b.n_in),
                in_scale: match b.in_scale {
                    InputScale::One => None,
                    InputScale::InvSqrtLayer => Some(1.0 / ((i + 1) as f64).sqrt()),
                },
                branch,
                n_br: slot(b.n_br),
                skip: match b.skip {
                    SkipScale::One => Skip::Fixed(1.0),
                    SkipScale::Alpha(a) => Skip::Fixed(a),
                    SkipScale::AdminOmega => {
                        Skip::Learnable(DMatrix::from_element(d, 1, T::of(omegas[i])))
                    }
                },
                lambda: match b.lambda {
                    BranchScale::One => Multiplier::Fixed(1.0),
                    BranchScale::Lambda(v) => {
                        Multiplier::Learnable(DMatrix::from_element(1, 1, T::of(v)))
                    }
                },
                n_out: slot(b.n_out),
            }
        })
        .collect();
    (blocks, slot(spec.final_norm))
}

/// A trainable model, its parameters and activations in float type `T` (f64 by default; f32
/// for `normscope train --precision f32`).
///
/// # Examples
///
/// Parameters: `w_in` 8 x 4 = 32, per block `w1`, `w2` (32 x 8, 8 x 32) and `N_in`'s gain
/// and bias (8 each) = 528, the final norm's gain and bias (16) and the head 2 x 8 (16):
/// `32 + 2 x 528 + 16 + 16 = 1120`.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::model::RawModel;
/// use normscope_core::train::config::RawTrain;
/// use normscope_core::train::task::{self, TaskConfig};
/// use normscope_core::train::run;
/// use normscope_core::train::pass;
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
/// assert_eq!((model.depth(), model.width()), (2, 8));
/// assert_eq!(model.size(), 1120);
/// let p = model.forward(pass::views(&first).0);
/// assert_eq!(p.output.shape(), (2, 4));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TrainModel<T: Real = f64> {
    /// The block model it was built from.
    pub spec: StackSpec,
    /// Norm epsilon.
    pub eps: f64,
    /// The input map.
    pub input: InputMap<T>,
    /// Block l at index l - 1.
    pub blocks: Vec<TrainBlock<T>>,
    /// The output norm, if the preset has one.
    pub final_norm: Option<NormLayer<T>>,
    /// The head `H` (outputs x d).
    pub head: DMatrix<T>,
    /// Whether forward passes train (BatchNorm divides by the batch's statistics) or evaluate
    /// (by its running statistics); `true` when built, as a PyTorch module.
    pub training: bool,
}

impl<T: Real> TrainModel<T> {
    /// The body of a sampled Monte Carlo network with an input map and a head. Norm slots get
    /// learnable affine parameters when `affine`; ReZero-style `lambda` (a
    /// [`BranchScale::Lambda`]) becomes a learnable scalar; Admin's `omega`
    /// ([`SkipScale::AdminOmega`]) becomes a learnable d-vector filled with `omegas[l-1]`
    /// (from [`super::init::admin_omegas`], rounded to `T`; ignored for other skips).
    pub fn from_network(
        net: Network<T>,
        input: InputMap<T>,
        head: DMatrix<T>,
        affine: bool,
        omegas: &[f64],
    ) -> Self {
        let d = net.input.nrows();
        let (blocks, final_norm) = train_blocks(&net.spec, net.branches, d, affine, omegas);
        TrainModel {
            final_norm,
            spec: net.spec,
            eps: net.eps,
            input,
            blocks,
            head,
            training: true,
        }
    }

    /// Depth L.
    pub fn depth(&self) -> usize {
        self.blocks.len()
    }

    /// Width d.
    pub fn width(&self) -> usize {
        self.head.ncols()
    }

    /// Every parameter with where it sits, in the order of [`Self::params_mut`] and of the
    /// gradients [`TrainModel::backward`] returns.
    pub fn params(&self) -> Vec<(ParamInfo, &DMatrix<T>)> {
        let mut out: Vec<(ParamInfo, &DMatrix<T>)> = Vec::new();
        macro_rules! put {
            ($layer:expr, $name:expr, $m:expr, $decay:expr) => {
                out.push((
                    ParamInfo {
                        layer: $layer,
                        name: $name,
                        decay: $decay,
                    },
                    $m,
                ))
            };
        }
        match &self.input {
            InputMap::Embedding { tokens, positions } => {
                put!(0, "embedding".into(), tokens, true);
                put!(0, "positions".into(), positions, true);
            }
            InputMap::Linear(w) => put!(0, "w_in".into(), w, true),
        }
        for (i, b) in self.blocks.iter().enumerate() {
            for (name, m, decay) in b.named_params("") {
                put!(i + 1, name, m, decay);
            }
        }
        let top = self.depth() + 1;
        for (name, m) in self.final_norm.iter().flat_map(|n| n.params()) {
            put!(top, format!("final.{name}"), m, false);
        }
        put!(top, "head".into(), &self.head, true);
        out
    }

    /// The parameters, mutable, in [`Self::params`] order.
    pub fn params_mut(&mut self) -> Vec<&mut DMatrix<T>> {
        let mut out: Vec<&mut DMatrix<T>> = Vec::new();
        match &mut self.input {
            InputMap::Embedding { tokens, positions } => {
                out.push(tokens);
                out.push(positions);
            }
            InputMap::Linear(w) => out.push(w),
        }
        for b in &mut self.blocks {
            out.extend(b.params_mut());
        }
        if let Some(n) = &mut self.final_norm {
            out.extend(n.params_mut());
        }
        out.push(&mut self.head);
        out
    }

    /// Number of scalar parameters.
    pub fn size(&self) -> usize {
        self.params().iter().map(|(_, m)| m.len()).sum()
    }
}
