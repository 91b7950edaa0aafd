//! The model's parameters, checked: raw values (from command-line flags, or from an
//! analysis's TOML configuration) are validated here into types the engines trust. Every error
//! names the field and what it accepts. [`RawModel::default`] holds every default, once: the command line
//! shows and uses the same values.

use crate::branch::{BranchConfig, BranchKind, Init};
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::placement::{self, Overrides, Preset};
use crate::spec::{NormKind, NormLayout, StackSpec};
use crate::theory::Inputs;
use crate::{Error, Result};

/// Whether the network output gets a final Norm.
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::FinalNorm;
/// assert_eq!(FinalNorm::Auto.forced(), None);
/// assert_eq!(FinalNorm::On.forced(), Some(true));
/// assert_eq!(FinalNorm::Off.forced(), Some(false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum FinalNorm {
    /// The preset's own choice.
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl FinalNorm {
    /// The override: `None` keeps the preset's choice.
    pub fn forced(self) -> Option<bool> {
        match self {
            FinalNorm::Auto => None,
            FinalNorm::On => Some(true),
            FinalNorm::Off => Some(false),
        }
    }
}

/// The raw model parameters shared by `theory`, `expand`, `mc` and `compare`.
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::RawModel;
/// let raw = RawModel::default();
/// assert_eq!((raw.depth, raw.width, raw.tokens), (64, 256, 32));
/// assert_eq!((raw.branch.as_str(), raw.init.as_str()), ("linear", "xavier"));
/// assert_eq!((raw.q0, raw.c0, raw.hidden_ratio), (1.0, 0.0, 4.0));
/// // Checking names the field and what it accepts.
/// let err = RawModel { depth: 0, ..raw }.check().unwrap_err();
/// assert_eq!(err.to_string(), "invalid --depth = 0: an integer >= 1");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RawModel {
    /// Depth L.
    pub depth: usize,
    /// Branch name.
    pub branch: String,
    /// Init name.
    pub init: String,
    /// MLP hidden width / d.
    pub hidden_ratio: f64,
    /// Gain override.
    pub gain: Option<f64>,
    /// Skip-scale override.
    pub alpha: Option<f64>,
    /// DeepNet beta override.
    pub beta: Option<f64>,
    /// Branch-multiplier override.
    pub lambda: Option<f64>,
    /// Input second moment.
    pub q0: f64,
    /// Input token correlation.
    pub c0: f64,
    /// Tokens n.
    pub tokens: usize,
    /// Width d.
    pub width: usize,
    /// The normalizer of every norm slot.
    pub norm: NormKind,
    /// GroupNorm's number of groups G (a divisor of the width; read only with `--norm group`).
    pub groups: usize,
    /// Final Norm on the network output.
    pub final_norm: FinalNorm,
}

impl Default for RawModel {
    fn default() -> Self {
        let b = BranchConfig::default();
        RawModel {
            depth: 64,
            branch: b.kind.name().into(),
            init: b.init.name().into(),
            hidden_ratio: b.hidden_ratio,
            gain: None,
            alpha: None,
            beta: None,
            lambda: None,
            q0: 1.0,
            c0: 0.0,
            tokens: b.tokens,
            width: b.width,
            norm: NormKind::Layer,
            groups: crate::spec::DEFAULT_GROUPS,
            final_norm: FinalNorm::Auto,
        }
    }
}

/// Validated model parameters.
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::RawModel;
/// use normscope_core::placement;
/// use normscope_core::spec::Slot;
/// let raw = RawModel { depth: 4, alpha: Some(0.5), ..RawModel::default() };
/// let model = raw.check()?;
/// assert_eq!(model.depth, 4);
/// assert_eq!(model.overrides.alpha, Some(0.5));
/// assert_eq!(model.inputs.q0, 1.0);
/// let spec = model.stack(placement::find("post-ln")?)?; // an alias, resolved once
/// assert_eq!((spec.preset.as_str(), spec.depth), ("post", 4));
/// assert_eq!(spec.block(1).n_out, Slot::Norm);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// Depth L >= 1.
    pub depth: usize,
    /// The branch.
    pub branch: BranchConfig,
    /// Preset overrides.
    pub overrides: Overrides,
    /// Input law.
    pub inputs: Inputs,
    /// Norm kind.
    pub norm: NormKind,
    /// GroupNorm's groups G (checked to divide the width when the norm is GroupNorm).
    pub groups: usize,
}

/// The largest value whose square is finite in f64 (sqrt of `f64::MAX`, rounded down).
pub(crate) const SQUARE_FINITE: f64 = 1.3407807929942596e154;

/// DeepNet's beta, which the mean-field maps square in plain f64: finite, >= 0
/// and with a finite square, else bad input naming `field`.
fn square_finite(field: &'static str, v: Option<f64>) -> Result<()> {
    match v {
        Some(x) if !x.is_finite() || !(0.0..=SQUARE_FINITE).contains(&x) => Err(Error::invalid(
            field,
            x,
            format!("a number in [0, {SQUARE_FINITE:e}] (its square must be finite in f64)"),
        )),
        _ => Ok(()),
    }
}

fn non_negative(field: &'static str, v: Option<f64>) -> Result<()> {
    match v {
        Some(x) if !x.is_finite() || x < 0.0 => {
            Err(Error::invalid(field, x, "a finite number >= 0"))
        }
        _ => Ok(()),
    }
}

impl RawModel {
    /// Validates every field.
    pub fn check(&self) -> Result<ModelConfig> {
        if self.depth == 0 {
            return Err(Error::invalid("--depth", 0, "an integer >= 1"));
        }
        non_negative("--alpha", self.alpha)?;
        square_finite("--beta", self.beta)?;
        non_negative("--gain", self.gain)?;
        non_negative("--lambda", self.lambda)?;
        if !(self.q0.is_finite() && self.q0 > 0.0) {
            return Err(Error::invalid("--q0", self.q0, "a finite number > 0"));
        }
        if !(self.c0.is_finite() && (-1.0..=1.0).contains(&self.c0)) {
            return Err(Error::invalid("--c0", self.c0, "a number in [-1, 1]"));
        }
        if !(self.hidden_ratio.is_finite() && self.hidden_ratio > 0.0) {
            return Err(Error::invalid(
                "--hidden-ratio",
                self.hidden_ratio,
                "a finite number > 0",
            ));
        }
        if self.tokens == 0 {
            return Err(Error::invalid("--tokens", 0, "an integer >= 1"));
        }
        // n tokens with pairwise correlation c0 have a positive definite covariance only for
        // c0 > -1/(n-1) (c0 = 1: identical tokens); both engines take the same inputs.
        let n = self.tokens as f64;
        if self.c0 < 1.0 && self.tokens > 1 && self.c0 <= -1.0 / (n - 1.0) {
            return Err(Error::invalid(
                "--c0",
                self.c0,
                format!(
                    "a correlation > -1/(n-1) = {} for n = {} tokens (--tokens)",
                    -1.0 / (n - 1.0),
                    self.tokens
                ),
            ));
        }
        if self.width == 0 {
            return Err(Error::invalid("--width", 0, "an integer >= 1"));
        }
        if self.groups == 0 || (self.norm.has_groups() && !self.width.is_multiple_of(self.groups)) {
            return Err(Error::invalid(
                "--groups",
                self.groups,
                format!("a divisor of --width = {} (>= 1)", self.width),
            ));
        }
        let final_norm = self.final_norm.forced();
        Ok(ModelConfig {
            depth: self.depth,
            branch: BranchConfig {
                kind: BranchKind::parse_closed_form(&self.branch)?,
                init: Init::parse(&self.init)?,
                hidden_ratio: self.hidden_ratio,
                gain: self.gain,
                width: self.width,
                tokens: self.tokens,
            },
            overrides: Overrides {
                alpha: self.alpha,
                beta: self.beta,
                lambda: self.lambda,
                final_norm,
            },
            inputs: Inputs {
                q0: self.q0,
                c0: self.c0,
            },
            norm: self.norm,
            groups: self.groups,
        })
    }
}

impl ModelConfig {
    /// Builds the stack of `preset` (resolved where its name was parsed: [`parse_presets`])
    /// with these parameters. A built-in preset's norms are
    /// of kind [`Self::norm`]; a placement file's keep the kind its file names, unless
    /// [`Self::norm`] is [`NormKind::Identity`] (no norms at all). GroupNorm and InstanceNorm
    /// group the tokens of one sequence ([`NormLayout`]) with [`Self::groups`] groups.
    pub fn stack(&self, preset: &Preset) -> Result<StackSpec> {
        let spec = preset.stack_with(self.depth, &self.overrides)?;
        let norm = placement::norm_under(&spec, self.norm);
        Ok(spec.with_norm(norm).with_layout(self.layout()))
    }

    /// The grouping of GroupNorm and InstanceNorm: [`Self::groups`] groups, and the tokens
    /// of one sequence.
    pub fn layout(&self) -> NormLayout {
        NormLayout {
            groups: self.groups,
            seq: Some(self.branch.tokens),
        }
    }

    /// The canonical text of these parameters in Monte Carlo seeds: the `Debug` text they had
    /// before GroupNorm's groups existed, then `groups` for a GroupNorm only, so that no
    /// earlier network's seed changes.
    pub(crate) fn canonical(&self) -> String {
        let legacy = format!(
            "ModelConfig {{ depth: {:?}, branch: {:?}, overrides: {:?}, inputs: {:?}, norm: {:?} }}",
            self.depth, self.branch, self.overrides, self.inputs, self.norm
        );
        if self.norm.has_groups() {
            format!("{legacy}|groups={}", self.groups)
        } else {
            legacy
        }
    }
}

/// Parses a comma-separated preset list, resolving every name (or alias) to its preset once,
/// in the order given, without repeats: the engines take these values, never a name.
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::parse_presets;
/// let presets = parse_presets("Pre, post-ln,pre")?;
/// assert_eq!(presets.iter().map(|p| p.name).collect::<Vec<_>>(), ["pre", "post"]);
/// assert!(parse_presets("nope").is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn parse_presets(s: &str) -> Result<Vec<&'static Preset>> {
    let mut out: Vec<&'static Preset> = Vec::new();
    for p in s.split(',').map(str::trim) {
        let preset = placement::find(p)?;
        if !out.contains(&preset) {
            out.push(preset);
        }
    }
    Ok(out)
}

/// A validated `theory` request.
///
/// # Examples
///
/// ```rust
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::{RawModel, TheoryConfig};
/// let raw = RawModel { depth: 8, ..RawModel::default() };
/// let cfg = TheoryConfig::new("Pre,post,pre", &raw, "stream_sq,path_len", "last")?;
/// assert_eq!(cfg.presets.iter().map(|p| p.name).collect::<Vec<_>>(), ["pre", "post"]);
/// assert_eq!(cfg.metrics, vec![Metric::StreamSq, Metric::PathLen]);
/// assert!(cfg.path_len_explicit);
/// assert_eq!(cfg.layers, LayerSpec::Last);
/// // The finite-width correction needs d >= 8.
/// assert!(cfg.clone().with_finite_width(Some(4)).is_err());
/// assert_eq!(cfg.with_finite_width(Some(8))?.finite_width, Some(8));
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TheoryConfig {
    /// Presets, resolved, in the order given.
    pub presets: Vec<&'static Preset>,
    /// Model parameters.
    pub model: ModelConfig,
    /// Metrics.
    pub metrics: Vec<Metric>,
    /// Whether `path_len` was named explicitly.
    pub path_len_explicit: bool,
    /// Width d of the leading finite-width correction (`--finite-width`), if asked for.
    pub finite_width: Option<usize>,
    /// Layers.
    pub layers: LayerSpec,
    /// Samples per batch B (`--batch`): the columns BatchNorm's closed form averages over.
    pub batch: usize,
}

impl ModelConfig {
    /// The settings of this model both engines read, as rows carry them: the hidden ratio
    /// (where the branch has an MLP), the overrides, q0 and c0. An engine adds its own (heads,
    /// eps, path cut-off).
    pub fn settings(&self) -> crate::profile::ModelSettings {
        let ov = &self.overrides;
        crate::profile::ModelSettings {
            hidden_ratio: self
                .branch
                .kind
                .has_hidden()
                .then_some(self.branch.hidden_ratio),
            alpha: ov.alpha,
            beta: ov.beta,
            lambda: ov.lambda,
            final_norm: ov
                .final_norm
                .map(|on| if on { "on" } else { "off" }.to_string()),
            q0: Some(self.inputs.q0),
            c0: Some(self.inputs.c0),
            ..crate::profile::ModelSettings::default()
        }
    }
}

impl TheoryConfig {
    /// Validates a `theory` request.
    pub fn new(presets: &str, raw: &RawModel, metrics: &str, layers: &str) -> Result<Self> {
        Ok(TheoryConfig {
            presets: parse_presets(presets)?,
            model: raw.check()?,
            metrics: Metric::parse_list(metrics)?,
            path_len_explicit: metrics.split(',').any(|m| m.trim() == "path_len"),
            layers: LayerSpec::parse(layers)?,
            finite_width: None,
            batch: 1,
        })
    }

    /// Sets the batch B (`--batch`, >= 1), read by BatchNorm's closed form.
    pub fn with_batch(mut self, batch: usize) -> Result<Self> {
        if batch == 0 {
            return Err(Error::invalid(
                "--batch",
                batch,
                "a number of samples per batch >= 1",
            ));
        }
        self.batch = batch;
        Ok(self)
    }

    /// Applies the leading finite-width correction at width `d` (`--finite-width`), refusing
    /// widths below [`crate::theory::finite_width::MIN_WIDTH`].
    pub fn with_finite_width(mut self, d: Option<usize>) -> Result<Self> {
        if let Some(d) = d
            && d < crate::theory::finite_width::MIN_WIDTH
        {
            return Err(Error::invalid(
                "--finite-width",
                d.to_string(),
                format!(
                    "a width d >= {} (the correction is first order in 1/d)",
                    crate::theory::finite_width::MIN_WIDTH
                ),
            ));
        }
        self.finite_width = d;
        Ok(self)
    }
}
