//! Monte Carlo configuration: the closed form's model parameters plus width, tokens, samples,
//! seed, norm epsilon, heads and the branch kinds only sampling can run (softmax attention,
//! transformer stacks).

use crate::branch::{BranchConfig, BranchKind, BranchModel, Init};
use crate::config::{ModelConfig, RawModel};
use crate::{Error, Result};

/// Branch kinds of the sampled networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McKind {
    /// `W u`.
    Linear,
    /// `W2 relu(W1 u)`.
    ReluMlp,
    /// `W2 gelu(W1 u)`.
    GeluMlp,
    /// Multi-head softmax self-attention (`uniform`: `W_Q = W_K = 0`).
    Attention,
    /// Uniform attention to a fixed memory.
    CrossAttention,
    /// Odd blocks attention, even blocks ReLU MLP (a Transformer layer is two blocks).
    Transformer,
}

impl McKind {
    /// Names accepted by `--branch` for `mc`.
    pub const NAMES: &'static str =
        "linear, relu-mlp, gelu-mlp, attention, uniform-attention, cross-attention, transformer";

    /// Parses a name; `uniform-attention` is attention with `uniform` forced on.
    pub fn parse(s: &str) -> Result<(Self, bool)> {
        Ok(match s {
            "linear" => (McKind::Linear, false),
            "relu-mlp" | "mlp" => (McKind::ReluMlp, false),
            "gelu-mlp" => (McKind::GeluMlp, false),
            "attention" => (McKind::Attention, false),
            "uniform-attention" => (McKind::Attention, true),
            "cross-attention" => (McKind::CrossAttention, false),
            "transformer" => (McKind::Transformer, false),
            _ => {
                return Err(Error::Unknown {
                    kind: "branch",
                    name: s.to_string(),
                    valid: Self::NAMES.to_string(),
                });
            }
        })
    }

    /// The kind of block l (1-based).
    pub fn at(self, l: usize) -> McKind {
        match self {
            McKind::Transformer if l % 2 == 1 => McKind::Attention,
            McKind::Transformer => McKind::ReluMlp,
            k => k,
        }
    }

    /// The closed-form branch with the same weights' gains (softmax attention's weight gain is
    /// uniform attention's), used for `--gain` rescaling.
    pub fn closed_form_proxy(self) -> BranchKind {
        match self {
            McKind::Linear => BranchKind::Linear,
            McKind::ReluMlp | McKind::Transformer => BranchKind::ReluMlp,
            McKind::GeluMlp => BranchKind::GeluMlp,
            McKind::Attention => BranchKind::UniformAttention,
            McKind::CrossAttention => BranchKind::CrossAttention,
        }
    }
}

/// Raw Monte Carlo settings (from flags).
#[derive(Clone, Debug, PartialEq)]
pub struct RawMc {
    /// Independent networks S.
    pub samples: usize,
    /// Base seed.
    pub seed: u64,
    /// Norm epsilon.
    pub eps: f64,
    /// Attention heads.
    pub heads: usize,
    /// Force `W_Q = W_K = 0`.
    pub uniform: bool,
    /// Largest depth for the exact path polynomial.
    pub path_max: usize,
}

impl Default for RawMc {
    fn default() -> Self {
        RawMc {
            samples: 32,
            seed: 0,
            eps: 1e-5,
            heads: 4,
            uniform: false,
            path_max: 256,
        }
    }
}

/// Validated Monte Carlo configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct McConfig {
    /// Model parameters (the branch entry holds the closed-form proxy of the branch).
    pub model: ModelConfig,
    /// Sampled branch kind.
    pub kind: McKind,
    /// `W_Q = W_K = 0`.
    pub uniform: bool,
    /// Heads.
    pub heads: usize,
    /// Networks S >= 2.
    pub samples: usize,
    /// Seed.
    pub seed: u64,
    /// Norm epsilon >= 0.
    pub eps: f64,
    /// Exact path polynomial up to this depth; a factorized estimator beyond.
    pub path_max: usize,
}

impl McConfig {
    /// Validates the model and the sampling settings.
    pub fn new(raw: &RawModel, mc: &RawMc) -> Result<Self> {
        let (kind, forced_uniform) = McKind::parse(&raw.branch)?;
        let proxy = RawModel {
            branch: kind.closed_form_proxy().name().to_string(),
            ..raw.clone()
        };
        let model = proxy.check()?;
        if mc.samples < 2 {
            return Err(Error::invalid(
                "--samples",
                mc.samples,
                "an integer >= 2 (a confidence interval needs two networks)",
            ));
        }
        if !(mc.eps.is_finite() && mc.eps >= 0.0) {
            return Err(Error::invalid("--eps", mc.eps, "a finite number >= 0"));
        }
        let attention = matches!(kind, McKind::Attention | McKind::Transformer);
        if attention && (mc.heads == 0 || !raw.width.is_multiple_of(mc.heads)) {
            return Err(Error::invalid(
                "--heads",
                mc.heads,
                format!("a divisor of --width = {} (>= 1)", raw.width),
            ));
        }
        let n = raw.tokens as f64;
        if raw.c0 < 1.0 && raw.tokens > 1 && raw.c0 <= -1.0 / (n - 1.0) {
            return Err(Error::invalid(
                "--c0",
                raw.c0,
                format!(
                    "a correlation > -1/(n-1) = {} for n = {} tokens",
                    -1.0 / (n - 1.0),
                    raw.tokens
                ),
            ));
        }
        Ok(McConfig {
            model,
            kind,
            uniform: mc.uniform || forced_uniform,
            heads: mc.heads,
            samples: mc.samples,
            seed: mc.seed,
            eps: mc.eps,
            path_max: mc.path_max,
        })
    }

    /// The canonical text hashed into every network's seed (see [`super::rng`]).
    pub fn canonical(&self, preset: &str) -> String {
        format!(
            "normscope-mc-v1|preset={preset}|model={:?}|kind={:?}|uniform={}|heads={}|eps={:?}",
            self.model, self.kind, self.uniform, self.heads, self.eps
        )
    }

    /// Closed-form summary of block l's branch (gains of its matrices, before beta).
    pub fn proxy_model(&self, l: usize) -> BranchModel {
        let cfg = BranchConfig {
            kind: self.kind.at(l).closed_form_proxy(),
            gain: None,
            ..self.model.branch
        };
        BranchModel::new(&cfg, None, self.model.inputs.q0, self.model.inputs.c0)
    }

    /// Init scheme.
    pub fn init(&self) -> Init {
        self.model.branch.init
    }
}
