//! Sampling settings of the Monte Carlo engine: the closed form's model parameters plus width,
//! tokens, samples, seed, norm epsilon, heads and the branch kinds only sampling can run
//! (softmax attention, transformer stacks).

use super::measure::Memory;
use super::precision::Precision;
use crate::branch::{Block, BranchConfig, BranchKind, BranchModel, Init};
use crate::engine::refusal::{NormUse, refused};
use crate::model::{ModelConfig, RawModel};
use crate::{Error, Result};

/// Raw Monte Carlo settings (from flags).
///
/// # Examples
///
/// The defaults of `normscope mc`:
///
/// ```rust
/// use normscope_core::monte_carlo::{Memory, Precision, RawMc};
///
/// let raw = RawMc::default();
/// assert_eq!((raw.samples, raw.seed, raw.heads, raw.path_max), (32, 0, 4, 256));
/// assert_eq!(raw.eps, 1e-5);
/// assert!(!raw.uniform);
/// assert_eq!((raw.precision, raw.memory), (Precision::F64, Memory::Auto));
/// ```
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
    /// Float type of the products and activations (not part of the seed).
    pub precision: Precision,
    /// Held or streamed networks (not part of the seed; the values do not depend on it).
    pub memory: Memory,
    /// Sequences per network input (`--batch`): the input is `batch` independent sequences of
    /// `--tokens` tokens side by side, the columns BatchNorm averages over.
    pub batch: usize,
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
            precision: Precision::F64,
            memory: Memory::Auto,
            batch: 1,
        }
    }
}

/// Validated Monte Carlo configuration.
///
/// # Examples
///
/// `uniform-attention` is kept as attention with `W_Q = W_K = 0`; a single network is refused
/// (a confidence interval needs two):
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::branch::BranchKind;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::{McConfig, RawMc};
///
/// let raw = RawModel {
///     depth: 4,
///     branch: "uniform-attention".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc { heads: 2, samples: 4, ..RawMc::default() })?;
/// assert_eq!(cfg.kind, BranchKind::Attention);
/// assert!(cfg.uniform);
/// assert_eq!((cfg.heads, cfg.samples, cfg.model.depth), (2, 4, 4));
/// assert!(cfg.canonical("pre").starts_with("normscope-mc-v1|preset=pre|"));
///
/// let err = McConfig::new(&raw, &RawMc { samples: 1, ..RawMc::default() }).unwrap_err();
/// assert!(err.to_string().contains("--samples"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct McConfig {
    /// Model parameters (the branch entry holds the closed-form proxy of the branch).
    pub model: ModelConfig,
    /// Sampled branch kind (`uniform-attention` is kept as `Attention` with `uniform`, so that
    /// both spellings seed the same networks).
    pub kind: BranchKind,
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
    /// Float type of the products and activations; not in [`Self::canonical`], so both
    /// precisions sample the same networks.
    pub precision: Precision,
    /// Held or streamed networks ([`Memory`]); not in [`Self::canonical`] either.
    pub memory: Memory,
    /// Independent sequences per input (`--batch`, >= 1); in [`Self::canonical`] when > 1.
    pub batch: usize,
}

impl McConfig {
    /// Validates the model and the sampling settings.
    pub fn new(raw: &RawModel, mc: &RawMc) -> Result<Self> {
        let cfg = Self::without_norm_shapes(raw, mc)?;
        let (norm, layout) = (cfg.model.norm, cfg.model.layout());
        crate::monte_carlo::norm::grouping(norm, layout, raw.width, cfg.columns())?;
        refused(NormUse::SampledInputs {
            norm,
            layout,
            d: raw.width,
            batch: mc.batch,
            c0: raw.c0,
        })?;
        Ok(cfg)
    }

    /// [`Self::new`] without checking that the norm's blocks fit the networks' columns (and
    /// are not degenerate at `--c0`): for training, whose norms run on its own batches and
    /// are checked against them ([`crate::train::config::check_trainable`]).
    pub(crate) fn without_norm_shapes(raw: &RawModel, mc: &RawMc) -> Result<Self> {
        let parsed = BranchKind::parse(&raw.branch)?;
        let forced_uniform = parsed == BranchKind::UniformAttention;
        let kind = if forced_uniform {
            BranchKind::Attention
        } else {
            parsed
        };
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
        // Heads matter if any block is attention (a stack's kinds repeat with period <= 2).
        let attention = (1..=2).any(|l| matches!(kind.block(l, false), Block::Attention { .. }));
        if mc.uniform && !attention {
            return Err(Error::invalid(
                "--uniform",
                "set",
                format!(
                    "only with an attention branch (attention, transformer); --branch {} has no W_Q, W_K",
                    raw.branch
                ),
            ));
        }
        if attention && (mc.heads == 0 || !raw.width.is_multiple_of(mc.heads)) {
            return Err(Error::invalid(
                "--heads",
                mc.heads,
                format!("a divisor of --width = {} (>= 1)", raw.width),
            ));
        }
        if mc.batch == 0 {
            return Err(Error::invalid("--batch", 0, "an integer >= 1"));
        }
        let mixes = (1..=2).any(|l| {
            matches!(
                kind.block(l, false),
                Block::Attention { .. } | Block::CrossAttention
            )
        });
        if mc.batch > 1 && mixes {
            return Err(Error::invalid(
                "--batch",
                mc.batch,
                format!(
                    "1 with --branch {}: attention over a batch of several sequences is not \
                     implemented (a per-token branch: linear, relu-mlp, gelu-mlp)",
                    raw.branch
                ),
            ));
        }
        mc.batch.checked_mul(raw.tokens).ok_or_else(|| {
            Error::invalid(
                "--batch",
                mc.batch,
                "batch x tokens within the machine's range",
            )
        })?;
        Ok(McConfig {
            model,
            kind,
            uniform: mc.uniform || forced_uniform,
            heads: mc.heads,
            samples: mc.samples,
            seed: mc.seed,
            eps: mc.eps,
            path_max: mc.path_max,
            precision: mc.precision,
            memory: mc.memory,
            batch: mc.batch,
        })
    }

    /// Columns of a network's input and streams: `batch x tokens`.
    pub fn columns(&self) -> usize {
        self.batch * self.model.branch.tokens
    }

    /// The canonical text hashed into every network's seed (see [`normscope_numeric::rng`]).
    pub fn canonical(&self, preset: &str) -> String {
        format!(
            "normscope-mc-v1|preset={preset}|model={}|kind={:?}|uniform={}|heads={}|eps={:?}{}",
            self.model.canonical(),
            self.kind,
            self.uniform,
            self.heads,
            self.eps,
            match self.batch {
                1 => String::new(),
                b => format!("|batch={b}"),
            }
        )
    }

    /// The sampled branch's name as rows write it: `uniform-attention` for softmax attention
    /// with `W_Q = W_K = 0` (`--uniform`), `transformer:uniform` for a Transformer stack whose
    /// attention is uniform, else the kind's name.
    ///
    /// # Examples
    ///
    /// ```rust
    /// use normscope_core::model::RawModel;
    /// use normscope_core::monte_carlo::{McConfig, RawMc};
    /// let raw = RawModel { branch: "transformer".into(), width: 16, ..RawModel::default() };
    /// let uniform = RawMc { uniform: true, ..RawMc::default() };
    /// assert_eq!(McConfig::new(&raw, &uniform).unwrap().branch_name(), "transformer:uniform");
    /// assert_eq!(McConfig::new(&raw, &RawMc::default()).unwrap().branch_name(), "transformer");
    /// ```
    pub fn branch_name(&self) -> String {
        match (self.kind, self.uniform) {
            (BranchKind::Attention, true) => BranchKind::UniformAttention.name().to_string(),
            (BranchKind::Transformer, true) => "transformer:uniform".to_string(),
            (kind, _) => kind.name().to_string(),
        }
    }

    /// The closed-form proxy of a block computing `block` (its matrices' gains).
    pub(crate) fn proxy_for(&self, block: Block) -> BranchModel {
        let cfg = BranchConfig {
            kind: block.closed_form(),
            gain: None,
            ..self.model.branch
        };
        BranchModel::new(&cfg, None, self.model.inputs.q0, self.model.inputs.c0)
    }

    /// The branch of block l (1-based).
    pub fn block(&self, l: usize) -> Block {
        self.kind.block(l, self.uniform)
    }

    /// Init scheme.
    pub fn init(&self) -> Init {
        self.model.branch.init
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinalNorm;
    use crate::spec::NormKind;

    /// The canonical text seeds every network, so it is pinned: these strings were printed by
    /// the code before the branch redesign (commit c16cd4c, `McKind` and the closed-form
    /// proxy's `{:?}`), and must never change, or every Monte Carlo table would.
    #[test]
    fn canonical_text_is_pinned() {
        let cases = [
            (
                "post",
                RawModel::default(),
                RawMc::default(),
                "normscope-mc-v1|preset=post|model=ModelConfig { depth: 64, branch: BranchConfig { kind: Linear, init: Xavier, hidden_ratio: 4.0, gain: None, width: 256, tokens: 32 }, overrides: Overrides { alpha: None, beta: None, lambda: None, final_norm: None }, inputs: Inputs { q0: 1.0, c0: 0.0 }, norm: Layer }|kind=Linear|uniform=false|heads=4|eps=1e-5",
            ),
            (
                "pre",
                RawModel {
                    branch: "uniform-attention".into(),
                    width: 16,
                    tokens: 3,
                    ..RawModel::default()
                },
                RawMc {
                    heads: 2,
                    ..RawMc::default()
                },
                "normscope-mc-v1|preset=pre|model=ModelConfig { depth: 64, branch: BranchConfig { kind: UniformAttention, init: Xavier, hidden_ratio: 4.0, gain: None, width: 16, tokens: 3 }, overrides: Overrides { alpha: None, beta: None, lambda: None, final_norm: None }, inputs: Inputs { q0: 1.0, c0: 0.0 }, norm: Layer }|kind=Attention|uniform=true|heads=2|eps=1e-5",
            ),
            (
                "deepnorm",
                RawModel {
                    branch: "transformer".into(),
                    init: "bert".into(),
                    gain: Some(1.5),
                    depth: 12,
                    norm: NormKind::Rms,
                    final_norm: FinalNorm::On,
                    ..RawModel::default()
                },
                RawMc {
                    eps: 1e-6,
                    heads: 2,
                    samples: 8,
                    seed: 7,
                    ..RawMc::default()
                },
                "normscope-mc-v1|preset=deepnorm|model=ModelConfig { depth: 12, branch: BranchConfig { kind: ReluMlp, init: Bert, hidden_ratio: 4.0, gain: Some(1.5), width: 256, tokens: 32 }, overrides: Overrides { alpha: None, beta: None, lambda: None, final_norm: Some(true) }, inputs: Inputs { q0: 1.0, c0: 0.0 }, norm: Rms }|kind=Transformer|uniform=false|heads=2|eps=1e-6",
            ),
            (
                "peri",
                RawModel {
                    branch: "mlp".into(),
                    init: "he".into(),
                    hidden_ratio: 2.0,
                    c0: 0.5,
                    q0: 2.0,
                    alpha: Some(0.9),
                    beta: Some(0.5),
                    lambda: Some(0.25),
                    ..RawModel::default()
                },
                RawMc::default(),
                "normscope-mc-v1|preset=peri|model=ModelConfig { depth: 64, branch: BranchConfig { kind: ReluMlp, init: He, hidden_ratio: 2.0, gain: None, width: 256, tokens: 32 }, overrides: Overrides { alpha: Some(0.9), beta: Some(0.5), lambda: Some(0.25), final_norm: None }, inputs: Inputs { q0: 2.0, c0: 0.5 }, norm: Layer }|kind=ReluMlp|uniform=false|heads=4|eps=1e-5",
            ),
            (
                "post",
                RawModel {
                    branch: "cross-attention".into(),
                    ..RawModel::default()
                },
                RawMc {
                    eps: 0.0,
                    ..RawMc::default()
                },
                "normscope-mc-v1|preset=post|model=ModelConfig { depth: 64, branch: BranchConfig { kind: CrossAttention, init: Xavier, hidden_ratio: 4.0, gain: None, width: 256, tokens: 32 }, overrides: Overrides { alpha: None, beta: None, lambda: None, final_norm: None }, inputs: Inputs { q0: 1.0, c0: 0.0 }, norm: Layer }|kind=CrossAttention|uniform=false|heads=4|eps=0.0",
            ),
        ];
        for (preset, raw, mc, expected) in cases {
            let cfg = McConfig::new(&raw, &mc).unwrap();
            assert_eq!(cfg.canonical(preset), expected, "--branch {}", raw.branch);
        }
    }
}
