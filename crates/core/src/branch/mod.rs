//! The branch F of a block (docs/theory.md, "Branches"), one file per branch: each file holds the
//! branch's mean-field summary (a [`MeanFieldBranch`]: its gains and pair kernel) and its
//! sampled module (a [`Module`]: parameters, forward, JVP and backward), and [`BranchKind`] is
//! the one registry of branches that the CLI, help text, analyses and tests iterate.
//!
//! - [`linear`]: `W u`; [`mlp`]: `W2 phi(W1 u)` with its [`Activation`];
//!   [`attention`]: multi-head softmax self-attention and its uniform limit;
//!   [`cross_attention`]: uniform attention to a fixed memory; [`transformer`]: the stack that
//!   alternates attention and MLP blocks. [`module`] is the trait of a sampled module, and
//!   [`drawn`] dispatches a block to its file's module;
//!   [`outer_energy`] gives the squared norm of an outer-product weight gradient without
//!   holding it.
//!
//! A branch is summarized by the fan-in gains `sigma^2` of its matrices (see [`init`]) and its
//! *pair kernel*: for two inputs a, b (sequences of tokens) pushed through the same weights,
//! the per-coordinate output moments `E<F(a)_i, F(b)_i>/d` (same token) and
//! `E<F(a)_i, F(b)_k>/d` (different tokens), as functions of the input moments. The forward
//! gain g, the correlation map kappa and the seeds' merge error all come from this one kernel:
//!
//! | branch | same-token output moment | cross-token |
//! |---|---|---|
//! | `linear` `W u` | `s m_same` | `s m_cross` |
//! | `relu-mlp`, `gelu-mlp` `W2 phi(W1 u)` | `s2 E[phi(x)phi(y)]`, `Cov = s1 m_same` | same with `m_cross` |
//! | `uniform-attention` `W_O W_V mean_k u_k` | `sV sO (m_same/n + (1-1/n) m_cross)` | the same |
//! | `cross-attention` `W_O W_V mean_k mem_k` | `sV sO q0 (c0 + (1-c0)/n)` | the same |
//!
//! Branches have no biases. Cross-attention attends uniformly to a fixed memory of n tokens
//! distributed like the input (second moment q0, correlation c0), so it does not depend on the
//! stream.
//!
//! Jacobians act on a tangent (or gradient) of n tokens through its *split*: the token-mean
//! part and the fluctuation around it ([`BranchModel::jacobian_split`]). At infinite width a
//! norm, the skip and a linear branch act on every token alike and keep the split; uniform
//! attention passes only the mean part (gain `sV sO`) and removes the fluctuation;
//! cross-attention passes nothing. An MLP's `D_t` differs per token and mixes the parts, but
//! scales the total by `g_b` whatever the split, and the closed form runs stacks of one branch
//! kind, where the split of an MLP's output is never read.

pub mod activation;
pub mod attention;
pub mod cross_attention;
pub mod drawn;
pub mod init;
pub mod linear;
pub mod mlp;
pub mod module;
pub mod outer_energy;
pub mod transformer;

pub use activation::Activation;
pub use drawn::{Branch, Cache};
pub use init::Init;
pub use module::Module;

use crate::{Error, Result};

/// Which function the branch computes: every branch of either engine.
///
/// # Examples
///
/// ```rust
/// use normscope_core::branch::{Activation, Block, BranchKind};
///
/// assert_eq!(BranchKind::parse("MLP")?, BranchKind::ReluMlp);
/// assert_eq!(BranchKind::ReluMlp.name(), "relu-mlp");
/// assert_eq!(BranchKind::GeluMlp.label(), "GELU MLP");
/// assert_eq!(
///     BranchKind::names(true),
///     "linear, relu-mlp, gelu-mlp, uniform-attention, cross-attention"
/// );
/// // Monte Carlo only: refused by the closed form, which uses a proxy's gains.
/// assert!(BranchKind::parse_closed_form("transformer").is_err());
/// assert_eq!(BranchKind::Transformer.closed_form_proxy(), BranchKind::ReluMlp);
/// // A Transformer alternates attention (odd blocks) and MLP (even blocks).
/// assert_eq!(BranchKind::Transformer.block(1, false), Block::Attention { uniform: false });
/// assert_eq!(BranchKind::Transformer.block(2, false), Block::Mlp(Activation::Relu));
/// assert!(BranchKind::Linear.has_constant_gain() && !BranchKind::GeluMlp.has_constant_gain());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchKind {
    /// `F(u) = W u`, one d x d matrix.
    Linear,
    /// `F(u) = W2 relu(W1 u)`, hidden width `ratio * d`.
    ReluMlp,
    /// `F(u) = W2 gelu(W1 u)`, hidden width `ratio * d`.
    GeluMlp,
    /// Multi-head softmax self-attention (Monte Carlo only).
    Attention,
    /// Self-attention with `W_Q = W_K = 0`: every token gets `W_O W_V` of the token mean.
    UniformAttention,
    /// Attention to a fixed memory sequence, independent of the stream.
    CrossAttention,
    /// Odd blocks softmax attention, even blocks ReLU MLP (a Transformer layer is two blocks;
    /// Monte Carlo only).
    Transformer,
}

/// A registry entry: what the CLI and help text say about a branch.
///
/// # Examples
///
/// ```rust
/// use normscope_core::branch::{BranchKind, KindInfo};
///
/// let info: KindInfo = BranchKind::ReluMlp.info();
/// assert_eq!((info.name, info.aliases, info.closed_form), ("relu-mlp", &["mlp"][..], true));
/// assert!(!BranchKind::Attention.info().closed_form);
/// assert_eq!(BranchKind::Linear.info().about, "F(u) = W u");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindInfo {
    /// The name `--branch` takes.
    pub name: &'static str,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// One line for help text.
    pub about: &'static str,
    /// Whether the closed form (and `expand`) has it; the Monte Carlo engine has every branch.
    pub closed_form: bool,
}

/// The function of one block's branch, after a stack's kind is resolved per block
/// ([`BranchKind::block`]): what the sampled network builds.
///
/// # Examples
///
/// ```rust
/// use normscope_core::branch::{Activation, Block, BranchKind};
///
/// assert_eq!(BranchKind::GeluMlp.block(3, false), Block::Mlp(Activation::Gelu));
/// assert_eq!(BranchKind::UniformAttention.block(1, false), Block::Attention { uniform: true });
/// // `uniform` forces W_Q = W_K = 0 on softmax attention.
/// assert_eq!(BranchKind::Attention.block(1, true), Block::Attention { uniform: true });
/// assert_eq!(Block::Attention { uniform: false }.closed_form(), BranchKind::UniformAttention);
/// assert_eq!(Block::CrossAttention.closed_form(), BranchKind::CrossAttention);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// `W u`.
    Linear,
    /// `W2 phi(W1 u)`.
    Mlp(Activation),
    /// Self-attention; `uniform` means `W_Q = W_K = 0`.
    Attention {
        /// `W_Q = W_K = 0`.
        uniform: bool,
    },
    /// Uniform attention to a fixed memory.
    CrossAttention,
}

impl BranchKind {
    /// Every branch, in help-text order.
    pub const ALL: [BranchKind; 7] = [
        BranchKind::Linear,
        BranchKind::ReluMlp,
        BranchKind::GeluMlp,
        BranchKind::Attention,
        BranchKind::UniformAttention,
        BranchKind::CrossAttention,
        BranchKind::Transformer,
    ];

    /// Its registry entry.
    pub fn info(self) -> KindInfo {
        match self {
            BranchKind::Linear => linear::INFO,
            BranchKind::ReluMlp => mlp::RELU_INFO,
            BranchKind::GeluMlp => mlp::GELU_INFO,
            BranchKind::Attention => attention::SOFTMAX_INFO,
            BranchKind::UniformAttention => attention::UNIFORM_INFO,
            BranchKind::CrossAttention => cross_attention::INFO,
            BranchKind::Transformer => transformer::INFO,
        }
    }

    /// Whether its blocks include an MLP, whose hidden width `hidden_ratio` sets.
    pub fn has_hidden(self) -> bool {
        matches!(
            self,
            BranchKind::ReluMlp | BranchKind::GeluMlp | BranchKind::Transformer
        )
    }

    /// Whether its blocks mix tokens (attention), so that heads and tokens matter.
    pub fn attends(self) -> bool {
        !matches!(
            self,
            BranchKind::Linear | BranchKind::ReluMlp | BranchKind::GeluMlp
        )
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Typeset name for tables and captions, e.g. `ReLU MLP`.
    pub fn label(self) -> &'static str {
        match self {
            BranchKind::Linear => "linear",
            BranchKind::ReluMlp => "ReLU MLP",
            BranchKind::GeluMlp => "GELU MLP",
            BranchKind::Attention => "softmax attention",
            BranchKind::UniformAttention => "uniform attention",
            BranchKind::CrossAttention => "cross-attention",
            BranchKind::Transformer => "Transformer",
        }
    }

    /// The names `--branch` takes, comma-separated: the closed form's only, or every branch.
    pub fn names(closed_form_only: bool) -> String {
        Self::ALL
            .iter()
            .filter(|k| k.info().closed_form || !closed_form_only)
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses a name or alias of any branch, ignoring ASCII case.
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        let s = lower.as_str();
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s || k.info().aliases.contains(&s))
            .ok_or_else(|| Error::Unknown {
                kind: "branch",
                name: s.to_string(),
                valid: Self::names(false),
            })
    }

    /// Parses a name or alias of a branch the closed form has; a Monte Carlo-only branch
    /// (`transformer`, softmax `attention`) is refused with that explanation.
    pub fn parse_closed_form(s: &str) -> Result<Self> {
        match Self::parse(s) {
            Ok(k) if k.info().closed_form => Ok(k),
            Ok(k) => Err(Error::Unsupported(format!(
                "the {} branch has no closed form (Monte Carlo only: use `normscope mc` or `normscope compare`); the closed form's branches are {}",
                k.name(),
                Self::names(true)
            ))),
            Err(_) => Err(Error::Unknown {
                kind: "branch",
                name: s.to_string(),
                valid: Self::names(true),
            }),
        }
    }

    /// The branch block l (1-based) of a stack of this kind computes; `uniform` forces
    /// `W_Q = W_K = 0` on attention.
    pub fn block(self, l: usize, uniform: bool) -> Block {
        match self {
            BranchKind::Linear => Block::Linear,
            BranchKind::ReluMlp => Block::Mlp(Activation::Relu),
            BranchKind::GeluMlp => Block::Mlp(Activation::Gelu),
            BranchKind::Attention => Block::Attention { uniform },
            BranchKind::UniformAttention => Block::Attention { uniform: true },
            BranchKind::CrossAttention => Block::CrossAttention,
            BranchKind::Transformer => transformer::block(l, uniform),
        }
    }

    /// The closed-form branch whose matrices have the same gains (softmax attention's are
    /// uniform attention's; a transformer's are its MLP's at even blocks and attention's at
    /// odd ones, see [`Block::closed_form`]): used for `--gain` rescaling and the summary.
    pub fn closed_form_proxy(self) -> BranchKind {
        match self {
            BranchKind::Linear => BranchKind::Linear,
            BranchKind::ReluMlp | BranchKind::Transformer => BranchKind::ReluMlp,
            BranchKind::GeluMlp => BranchKind::GeluMlp,
            BranchKind::Attention | BranchKind::UniformAttention => BranchKind::UniformAttention,
            BranchKind::CrossAttention => BranchKind::CrossAttention,
        }
    }

    /// The mean-field summary of a closed-form branch (`None` for softmax attention and the
    /// transformer stack, which only Monte Carlo runs).
    pub fn summary(self) -> Option<&'static dyn MeanFieldBranch> {
        match self {
            BranchKind::Linear => Some(&linear::Kernel),
            BranchKind::ReluMlp => Some(&mlp::Kernel(Activation::Relu)),
            BranchKind::GeluMlp => Some(&mlp::Kernel(Activation::Gelu)),
            BranchKind::UniformAttention => Some(&attention::UniformKernel),
            BranchKind::CrossAttention => Some(&cross_attention::Kernel),
            BranchKind::Attention | BranchKind::Transformer => None,
        }
    }

    /// Whether `E||F(u)||^2 / ||u||^2` is the same constant g for every input, so that the
    /// exact symbolic expansion can use one symbol g.
    pub fn has_constant_gain(self) -> bool {
        self.summary().is_some_and(|s| s.constant_gain())
    }
}

impl Block {
    /// The closed-form kind with this block's matrix gains (for `--gain` rescaling).
    pub fn closed_form(self) -> BranchKind {
        match self {
            Block::Linear => BranchKind::Linear,
            Block::Mlp(Activation::Relu) => BranchKind::ReluMlp,
            Block::Mlp(Activation::Gelu) => BranchKind::GeluMlp,
            Block::Attention { .. } => BranchKind::UniformAttention,
            Block::CrossAttention => BranchKind::CrossAttention,
        }
    }
}

/// A branch's mean-field summary (docs/theory.md, "Branches"): how its matrices' fan-in gains enter,
/// and its pair kernel and Jacobian moments at given input moments. Implemented once per
/// closed-form branch, on a unit value of its file.
///
/// # Examples
///
/// The linear branch's implementor ([`linear::Kernel`]) and the ReLU MLP's ([`mlp::Kernel`]):
/// under Xavier at width 4 and hidden ratio 4, `W` has fan-in gain `2 * 4/(4 + 4) = 1`, the
/// MLP's `W1` `2 * 4/(4 + 16) = 0.4` and `W2` `2 * 16/(16 + 4) = 1.6`.
///
/// ```rust
/// use normscope_core::branch::{
///     Activation, BranchConfig, BranchKind, BranchModel, Init, MeanFieldBranch, linear, mlp,
/// };
///
/// assert_eq!(linear::Kernel.matrix_gains(Init::Xavier, 4.0, 4.0), (1.0, 1.0));
/// let (first, last) = mlp::Kernel(Activation::Relu).matrix_gains(Init::Xavier, 4.0, 4.0);
/// assert!((first - 0.4).abs() < 1e-15 && (last - 1.6).abs() < 1e-15);
///
/// let k: &dyn MeanFieldBranch = BranchKind::Linear.summary().unwrap();
/// assert!(k.scale_free() && k.constant_gain() && !k.mixes_tokens());
/// let cfg = BranchConfig { init: Init::He, ..BranchConfig::default() };
/// let m = BranchModel::new(&cfg, None, 1.0, 0.0);
/// // He: s = 2, so the pair kernel is (2 m_same, 2 m_cross).
/// assert_eq!(k.pair(&m, 1.0, 1.0, 1.0, 0.25), (2.0, 0.5));
/// assert_eq!(k.unit_gain(&m), 2.0);
/// assert!(BranchKind::Attention.summary().is_none());
/// ```
pub trait MeanFieldBranch: Sync {
    /// Fan-in gains `(first, last)` of its first and last matrices under `init` at width d
    /// and MLP hidden ratio r (a linear branch's first is 1, unused).
    fn matrix_gains(&self, init: Init, d: f64, r: f64) -> (f64, f64);
    /// Whether DeepNet's beta scales the first matrix too (FFN: both; attention: V and O),
    /// not only the last.
    fn beta_scales_first(&self) -> bool;
    /// Whether `F(t u)` scales the moments by `t^2` (or they do not depend on the input), so
    /// that they can be evaluated at unit input and scaled exactly.
    fn scale_free(&self) -> bool;
    /// Whether `E||F(u)||^2 / ||u||^2` is one constant for every input.
    fn constant_gain(&self) -> bool;
    /// Whether the branch acts through the token mean rather than on each token.
    fn mixes_tokens(&self) -> bool;
    /// Gain at unit input second moment (attention: the weight gain `sV sO`).
    fn unit_gain(&self, m: &BranchModel) -> f64;
    /// Output moments `(same token, different tokens)` per coordinate for inputs with second
    /// moments `qa`, `qb` and cross moments `m_same`, `m_cross`.
    fn pair(&self, m: &BranchModel, qa: f64, qb: f64, m_same: f64, m_cross: f64) -> (f64, f64);
    /// `g_b = E||J_F^T h||^2 / ||h||^2` at input second moment q, h with independent tokens.
    fn backward_gain(&self, m: &BranchModel, q: f64) -> f64;
    /// Mean-square gains of the input Jacobian on the token-mean part and the fluctuation.
    fn jacobian_split(&self, m: &BranchModel, q: f64) -> (f64, f64);
    /// `||a||^2 / d` for the input a of the last matrix.
    fn last_input_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64;
    /// Second moment of the first-order output change per squared relative weight
    /// perturbation of every matrix.
    fn perturbation_sq(&self, m: &BranchModel, q: f64, c: f64) -> f64;
    /// The input Jacobian's cross-token share `rho'`: for a per-token branch `J_t`, the ratio
    /// `E<J_t^T g, J_s^T h> / (g_b <g, h>)` of two tokens of input correlation c, by which a
    /// gradient's cross-token moment is carried relative to its per-token energy. 1 for a
    /// linear branch; `E[phi'(X) phi'(Y)] / E[phi'(X)^2]` for an MLP (X, Y of correlation c,
    /// at variance `first q`). `None` where not derived (token-mixing branches, GELU).
    fn deriv_corr(&self, _m: &BranchModel, _q: f64, _c: f64) -> Option<f64> {
        None
    }
}

/// How the branch is built: kind, init, widths and an optional gain override.
///
/// # Examples
///
/// The default is a Xavier linear branch at width 256 (the CLI's defaults); `--gain` sets the
/// gain at unit input second moment whatever the init.
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchKind, BranchModel, Init};
/// let cfg = BranchConfig::default();
/// assert_eq!((cfg.kind, cfg.init, cfg.width, cfg.gain), (BranchKind::Linear, Init::Xavier, 256, None));
/// assert_eq!(BranchModel::new(&cfg, None, 1.0, 0.0).nominal_gain, 1.0);
/// let cfg = BranchConfig { init: Init::He, gain: Some(0.5), ..cfg };
/// assert_eq!(BranchModel::new(&cfg, None, 1.0, 0.0).nominal_gain, 0.5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BranchConfig {
    /// What the branch computes (a closed-form kind).
    pub kind: BranchKind,
    /// Init scheme of every matrix.
    pub init: Init,
    /// MLP hidden width / d.
    pub hidden_ratio: f64,
    /// Overrides the derived gain g of the unscaled branch at unit input second moment
    /// (`--gain`); the output matrix is rescaled, the nonlinearity's regime is kept.
    pub gain: Option<f64>,
    /// Width d (only BERT's init depends on it).
    pub width: usize,
    /// Tokens n (attention branches only).
    pub tokens: usize,
}

impl Default for BranchConfig {
    fn default() -> Self {
        BranchConfig {
            kind: BranchKind::Linear,
            init: Init::Xavier,
            hidden_ratio: 4.0,
            gain: None,
            width: 256,
            tokens: 32,
        }
    }
}

/// A branch reduced to its mean-field summary, with DeepNet's beta already applied.
///
/// # Examples
///
/// A Xavier ReLU MLP of hidden ratio 4: `s1 = 2/(1 + 4) = 0.4`, `s2 = 2 * 4/(1 + 4) = 1.6` and
/// `g = s1 s2 / 2 = 8/25 = 0.32` (by hand). A `--gain` override of 1.5 rescales the output
/// matrix, and DeepNet's `beta = 0.5` scales both matrices by `beta^2`, so the forward gain
/// becomes `1.5 * 0.5^4 = 0.09375`.
///
/// ```rust
/// use normscope_core::branch::{BranchConfig, BranchKind, BranchModel};
///
/// let cfg = BranchConfig { kind: BranchKind::ReluMlp, ..BranchConfig::default() };
/// let m = BranchModel::new(&cfg, None, 1.0, 0.0);
/// assert!((m.first - 0.4).abs() < 1e-15 && (m.last - 1.6).abs() < 1e-15);
/// assert!((m.nominal_gain - 0.32).abs() < 1e-15);
/// let (q, _) = m.forward(1.0, 0.0);
/// assert!((q - 0.32).abs() < 1e-15);
/// // ReLU: E[relu'^2] = 1/2, so the backward gain equals the forward gain.
/// assert!((m.backward_gain(3.0) - 0.32).abs() < 1e-15);
///
/// let cfg = BranchConfig { gain: Some(1.5), ..cfg };
/// let m = BranchModel::new(&cfg, Some(0.5), 1.0, 0.0);
/// assert!((m.nominal_gain - 1.5).abs() < 1e-14);
/// assert!((m.forward(1.0, 0.0).0 - 0.09375).abs() < 1e-14);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BranchModel {
    /// What the branch computes (a closed-form kind).
    pub kind: BranchKind,
    /// Fan-in gain of the first matrix (`W1` or `W_V`; unused for linear).
    pub first: f64,
    /// Fan-in gain of the last matrix (`W2`, `W_O` or the linear `W`), including any
    /// `--gain` rescaling.
    pub last: f64,
    /// MLP hidden ratio.
    pub ratio: f64,
    /// Tokens n.
    pub tokens: f64,
    /// Second moment of the memory mean for cross-attention, `q0 (c0 + (1 - c0)/n)`.
    pub memory_mean_sq: f64,
    /// Gain g of the unscaled branch at unit input second moment (the symbol g).
    pub nominal_gain: f64,
}

impl BranchModel {
    /// Builds the summary from a config, DeepNet's beta (if any), and the input law (q0, c0)
    /// which cross-attention's memory shares. Panics on a kind without a closed form (the
    /// configuration refuses those first).
    pub fn new(cfg: &BranchConfig, beta: Option<f64>, q0: f64, c0: f64) -> Self {
        let kernel = cfg
            .kind
            .summary()
            .expect("a closed-form branch (checked by the configuration)");
        let (mut first, mut last) =
            kernel.matrix_gains(cfg.init, cfg.width as f64, cfg.hidden_ratio);
        let n = cfg.tokens as f64;
        let mut m = BranchModel {
            kind: cfg.kind,
            first,
            last,
            ratio: cfg.hidden_ratio,
            tokens: n,
            memory_mean_sq: q0 * (c0 + (1.0 - c0) / n),
            nominal_gain: 0.0,
        };
        let unit = kernel.unit_gain(&m);
        if let Some(g) = cfg.gain {
            last = if unit > 0.0 { last * g / unit } else { last };
            m.last = last;
        }
        m.nominal_gain = kernel.unit_gain(&m);
        if let Some(b) = beta {
            let b2 = b * b;
            if kernel.beta_scales_first() {
                first *= b2;
                m.first = first;
            }
            m.last *= b2;
        }
        m
    }

    /// The summary's kernel.
    pub fn kernel(&self) -> &'static dyn MeanFieldBranch {
        self.kind
            .summary()
            .expect("a closed-form branch (checked by the configuration)")
    }

    /// See [`MeanFieldBranch::pair`].
    pub fn pair(&self, qa: f64, qb: f64, m_same: f64, m_cross: f64) -> (f64, f64) {
        self.kernel().pair(self, qa, qb, m_same, m_cross)
    }

    /// Output second moment and token correlation for an input of second moment q and token
    /// correlation c: `(q_F, kappa)`.
    pub fn forward(&self, q: f64, c: f64) -> (f64, f64) {
        let (same, cross) = self.pair(q, q, q, q * c);
        let kappa = if same > 0.0 { cross / same } else { c };
        (same, kappa)
    }

    /// See [`MeanFieldBranch::backward_gain`].
    pub fn backward_gain(&self, q: f64) -> f64 {
        self.kernel().backward_gain(self, q)
    }

    /// See [`MeanFieldBranch::deriv_corr`].
    pub fn deriv_corr(&self, q: f64, c: f64) -> Option<f64> {
        self.kernel().deriv_corr(self, q, c)
    }

    /// See [`MeanFieldBranch::mixes_tokens`].
    pub fn mixes_tokens(&self) -> bool {
        self.kernel().mixes_tokens()
    }

    /// See [`MeanFieldBranch::scale_free`].
    pub fn scale_free(&self) -> bool {
        self.kernel().scale_free()
    }

    /// See [`MeanFieldBranch::jacobian_split`].
    pub fn jacobian_split(&self, q: f64) -> (f64, f64) {
        self.kernel().jacobian_split(self, q)
    }

    /// See [`MeanFieldBranch::last_input_sq`].
    pub fn last_input_sq(&self, q: f64, c: f64) -> f64 {
        self.kernel().last_input_sq(self, q, c)
    }

    /// See [`MeanFieldBranch::perturbation_sq`].
    pub fn perturbation_sq(&self, q: f64, c: f64) -> f64 {
        self.kernel().perturbation_sq(self, q, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(kind: BranchKind, init: Init) -> BranchModel {
        let cfg = BranchConfig {
            kind,
            init,
            ..BranchConfig::default()
        };
        BranchModel::new(&cfg, None, 1.0, 0.0)
    }

    #[test]
    fn derived_gains_match_hand_values() {
        // Xavier ReLU MLP, ratio r: s1 = 2/(1+r), s2 = 2r/(1+r), g = s1 s2 / 2 = 2r/(1+r)^2.
        let m = model(BranchKind::ReluMlp, Init::Xavier);
        assert!((m.nominal_gain - 8.0 / 25.0).abs() < normscope_numeric::tolerance::ROUNDING);
        // He ReLU MLP: s1 = s2 = 2, g = 2.
        assert!(
            (model(BranchKind::ReluMlp, Init::He).nominal_gain - 2.0).abs()
                < normscope_numeric::tolerance::ROUNDING
        );
        // Xavier linear d x d: g = 1; torch default: 1/3.
        assert!(
            (model(BranchKind::Linear, Init::Xavier).nominal_gain - 1.0).abs()
                < normscope_numeric::tolerance::ROUNDING
        );
        let t = model(BranchKind::Linear, Init::TorchDefault).nominal_gain;
        assert!((t - 1.0 / 3.0).abs() < normscope_numeric::tolerance::ROUNDING);
    }

    #[test]
    fn gain_override_and_beta() {
        let cfg = BranchConfig {
            kind: BranchKind::ReluMlp,
            gain: Some(1.5),
            ..BranchConfig::default()
        };
        let m = BranchModel::new(&cfg, Some(0.5), 1.0, 0.0);
        assert!((m.nominal_gain - 1.5).abs() < normscope_numeric::tolerance::ROUNDING_CHAIN);
        // Two matrices scaled by beta: forward gain g beta^4.
        let (q, _) = m.forward(1.0, 0.0);
        assert!((q - 1.5 * 0.5f64.powi(4)).abs() < normscope_numeric::tolerance::ROUNDING_CHAIN);
    }

    #[test]
    fn relu_backward_gain_equals_forward_gain() {
        let m = model(BranchKind::ReluMlp, Init::Xavier);
        assert!(
            (m.backward_gain(3.0) - m.nominal_gain).abs() < normscope_numeric::tolerance::ROUNDING
        );
    }
}
