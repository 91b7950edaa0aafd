//! The declarative block model (docs/theory.md, "The block model"):
//!
//! ```text
//! x_l = N_out( alpha_l * x_{l-1} + lambda_l * N_br( F_l( N_in(x_{l-1}) ) ) )
//! ```
//!
//! A [`StackSpec`] is a list of segments of identical [`BlockSpec`]s, so that a stack of depth
//! 10^6 costs a few bytes. Presets in [`crate::placement`] build stack specs; both engines read
//! them and nothing else.
//!
//! A stack can also be built in code and handed to an engine directly; here a two-segment
//! stack (Post-Norm blocks 1..=2, then Pre-Norm blocks with skip scale 0.9) through the closed
//! form:
//!
//! ```
//! use normscope_core::engine::{Engine, Plan};
//! use normscope_core::layers::LayerSpec;
//! use normscope_core::metrics::Metric;
//! use normscope_core::model::RawModel;
//! use normscope_core::spec::{BlockSpec, Segment, SkipScale, Slot, StackSpec};
//! use normscope_core::closed_form::ClosedForm;
//!
//! let model = RawModel { depth: 6, ..RawModel::default() }.check()?;
//! let mut spec = StackSpec::uniform("mine", 6, BlockSpec::PRE, Slot::Norm);
//! spec.segments = vec![
//!     Segment { last: 2, block: BlockSpec::POST },
//!     Segment { last: 6, block: BlockSpec { skip: SkipScale::Alpha(0.9), ..BlockSpec::PRE } },
//! ];
//! assert_eq!(spec.block(3).skip, SkipScale::Alpha(0.9));
//! let plan = Plan::new(&[Metric::EffDepth], LayerSpec::Last);
//! let profile = ClosedForm::new(&model).profile(&spec, &plan)?;
//! let row = &profile.rows()[0];
//! assert_eq!((row.preset.as_str(), row.layer), ("mine", 6));
//! assert!(row.value > 0.0 && row.value < 6.0);
//! # Ok::<(), normscope_core::Error>(())
//! ```

/// Where a normalizer sits: either a norm of the stack's [`NormKind`] or the identity.
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{BlockSpec, Slot};
/// // Pre-Norm normalizes the branch input and leaves the sum alone.
/// assert_eq!(BlockSpec::PRE.n_in, Slot::Norm);
/// assert!(BlockSpec::PRE.n_in.is_norm());
/// assert!(!BlockSpec::PRE.n_out.is_norm());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The identity map.
    Identity,
    /// `Norm(z)` of the stack's [`NormKind`], without affine parameters: LayerNorm
    /// `(z - mean z)/sqrt(var z + eps)`, RMSNorm `z/sqrt(mean z^2 + eps)` (with `eps = 0` both give
    /// `||Norm(z)||^2 = d` per token), or BatchNorm, InstanceNorm, GroupNorm or DyT
    /// ([`crate::norms`]).
    Norm,
}

impl Slot {
    /// Whether this slot normalizes.
    pub fn is_norm(self) -> bool {
        self == Slot::Norm
    }
}

/// Which normalizer a [`Slot::Norm`] is. In configuration files and on the command line:
/// `layer` (or `ln`, `layernorm`), `rms` (or `rmsnorm`), `batch` (or `bn`, `batchnorm`),
/// `instance` (or `instancenorm`), `group` (or `gn`, `groupnorm`), `dyt` (or `tanh`),
/// `identity` (or `none`).
///
/// LayerNorm and RMSNorm divide each token by its own statistic; BatchNorm, InstanceNorm and
/// GroupNorm divide blocks of entries spanning several tokens ([`crate::norms::grouped`]);
/// DyT divides by nothing ([`crate::norms::dyt`]). LayerNorm, RMSNorm and GroupNorm (a fixed
/// number of groups) have the same infinite-width limit in the closed form; DyT has its own
/// (Gaussian integrals of tanh), and BatchNorm and InstanceNorm theirs over n exchangeable
/// columns (Yang et al. 2019), each where its inputs are Gaussian
/// ([`crate::engine::refusal`]).
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::NormKind;
/// assert_eq!(NormKind::Rms.name(), "rms");
/// assert_eq!(NormKind::Rms.label(), "RMSNorm");
/// assert_eq!(NormKind::Layer.to_string(), "layer");
/// assert_eq!(NormKind::Identity.label(), "no norm");
/// assert_eq!(NormKind::parse("GN"), Some(NormKind::Group));
/// assert_eq!(NormKind::parse("batchnorm"), Some(NormKind::Batch));
/// assert_eq!(NormKind::parse("weight"), None);
/// assert!(NormKind::Rms.per_token() && !NormKind::Batch.per_token());
/// assert!(NormKind::Batch.is_column_norm() && !NormKind::Group.is_column_norm());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum NormKind {
    /// LayerNorm without affine (Ba et al. 2016).
    #[serde(alias = "ln", alias = "layernorm")]
    #[cfg_attr(feature = "cli", value(alias = "ln", alias = "layernorm"))]
    Layer,
    /// RMSNorm without affine (Zhang and Sennrich 2019).
    #[serde(alias = "rmsnorm")]
    #[cfg_attr(feature = "cli", value(alias = "rmsnorm"))]
    Rms,
    /// BatchNorm in training mode without affine (Ioffe and Szegedy 2015; PyTorch
    /// `BatchNorm1d`): every channel over the whole batch of `batch x tokens` columns.
    #[serde(alias = "bn", alias = "batchnorm")]
    #[cfg_attr(feature = "cli", value(alias = "bn", alias = "batchnorm"))]
    Batch,
    /// InstanceNorm without affine (Ulyanov et al. 2016; PyTorch `InstanceNorm1d`): every
    /// channel over the tokens of its own sequence.
    #[serde(alias = "instancenorm")]
    #[cfg_attr(feature = "cli", value(alias = "instancenorm"))]
    Instance,
    /// GroupNorm without affine (Wu and He 2018; PyTorch `GroupNorm`): the channels in
    /// `--groups` groups, each group over the tokens of its own sequence.
    #[serde(alias = "gn", alias = "groupnorm")]
    #[cfg_attr(feature = "cli", value(alias = "gn", alias = "groupnorm"))]
    Group,
    /// DyT, `tanh(alpha z)` with `alpha` at its initial value (Zhu et al. 2025,
    /// "Transformers without Normalization"): a normalization-free replacement.
    #[serde(alias = "tanh")]
    #[cfg_attr(feature = "cli", value(alias = "tanh"))]
    Dyt,
    /// No normalization: every norm slot of the preset, the final one included, becomes the
    /// identity (the un-normalized baseline of a placement).
    #[serde(alias = "none")]
    #[cfg_attr(feature = "cli", value(alias = "none"))]
    Identity,
}

impl NormKind {
    /// Every kind, in the order of `--help`.
    pub const ALL: [NormKind; 7] = [
        NormKind::Layer,
        NormKind::Rms,
        NormKind::Batch,
        NormKind::Instance,
        NormKind::Group,
        NormKind::Dyt,
        NormKind::Identity,
    ];

    /// The table of norm kinds: one row per kind with everything the engines read about it.
    /// This is the only match over the kinds; every other question about a norm is answered
    /// from its row (the methods below), and the combinations an engine refuses are stated
    /// once, from these rows, in [`crate::engine::refusal`].
    pub fn info(self) -> NormInfo {
        use NormMap as M;
        use NormStatistic as S;
        match self {
            NormKind::Layer => NormInfo {
                name: "layer",
                aliases: &["ln", "layernorm"],
                label: "LayerNorm",
                statistic: S::Token,
                centers: true,
                removes: 2.0,
                map: M::Sphere,
                finite_width: true,
                bias: true,
            },
            NormKind::Rms => NormInfo {
                name: "rms",
                aliases: &["rmsnorm"],
                label: "RMSNorm",
                statistic: S::Token,
                centers: false,
                removes: 1.0,
                map: M::Sphere,
                finite_width: true,
                bias: false,
            },
            NormKind::Batch => NormInfo {
                name: "batch",
                aliases: &["bn", "batchnorm"],
                label: "BatchNorm",
                statistic: S::Batch,
                centers: true,
                removes: 2.0,
                map: M::Columns,
                finite_width: false,
                bias: true,
            },
            NormKind::Instance => NormInfo {
                name: "instance",
                aliases: &["instancenorm"],
                label: "InstanceNorm",
                statistic: S::Sequence,
                centers: true,
                removes: 2.0,
                map: M::Columns,
                finite_width: false,
                bias: true,
            },
            NormKind::Group => NormInfo {
                name: "group",
                aliases: &["gn", "groupnorm"],
                label: "GroupNorm",
                statistic: S::Groups,
                centers: true,
                removes: 2.0,
                map: M::Sphere,
                finite_width: false,
                bias: true,
            },
            NormKind::Dyt => NormInfo {
                name: "dyt",
                aliases: &["tanh"],
                label: "DyT",
                statistic: S::Tanh,
                centers: false,
                removes: 0.0,
                map: M::Tanh,
                finite_width: false,
                bias: true,
            },
            NormKind::Identity => NormInfo {
                name: "identity",
                aliases: &["none"],
                label: "no norm",
                statistic: S::Identity,
                centers: false,
                removes: 0.0,
                map: M::Absent,
                finite_width: false,
                bias: true,
            },
        }
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Other accepted spellings (case-insensitive).
    pub fn aliases(self) -> &'static [&'static str] {
        self.info().aliases
    }

    /// The kind named `s` (a name or an alias, any case), if any.
    pub fn parse(s: &str) -> Option<NormKind> {
        let s = s.trim().to_ascii_lowercase();
        NormKind::ALL
            .into_iter()
            .find(|k| k.name() == s || k.aliases().contains(&s.as_str()))
    }

    /// The accepted names, for error messages: `layer, rms, ..., identity`.
    pub fn names() -> String {
        NormKind::ALL.map(NormKind::name).join(", ")
    }

    /// Typeset name for tables and captions, e.g. `RMSNorm`.
    pub fn label(self) -> &'static str {
        self.info().label
    }

    /// What the norm divides by ([`NormInfo::statistic`]).
    pub fn statistic(self) -> NormStatistic {
        self.info().statistic
    }

    /// The norm's map in the closed form ([`NormInfo::map`]).
    pub fn closed_form_map(self) -> NormMap {
        self.info().map
    }

    /// Whether the norm divides each token by a statistic of that token alone (LayerNorm,
    /// RMSNorm; the identity trivially): the condition for the exact per-token decomposition
    /// `x_l = sum_j C_{l,j} B~_j` that `coef` and `branch_weight` read.
    pub fn per_token(self) -> bool {
        match self.statistic() {
            NormStatistic::Token | NormStatistic::Identity => true,
            NormStatistic::Sequence
            | NormStatistic::Batch
            | NormStatistic::Groups
            | NormStatistic::Tanh => false,
        }
    }

    /// Whether the norm averages each channel over a set of columns (InstanceNorm: the tokens
    /// of a sequence; BatchNorm: the batch), so its Jacobian removes the columns' mean.
    pub fn is_column_norm(self) -> bool {
        match self.statistic() {
            NormStatistic::Sequence | NormStatistic::Batch => true,
            NormStatistic::Token
            | NormStatistic::Groups
            | NormStatistic::Tanh
            | NormStatistic::Identity => false,
        }
    }

    /// Whether this is no norm at all: every norm slot becomes the identity.
    pub fn is_identity(self) -> bool {
        self.statistic() == NormStatistic::Identity
    }

    /// Whether the norm divides by nothing (DyT, the identity): a normalization-free stack.
    pub fn is_normalization_free(self) -> bool {
        matches!(
            self.statistic(),
            NormStatistic::Tanh | NormStatistic::Identity
        )
    }

    /// Whether the norm is an elementwise tanh with a scale `alpha` (DyT).
    pub fn is_tanh(self) -> bool {
        self.statistic() == NormStatistic::Tanh
    }

    /// Whether the norm reads GroupNorm's number of groups (`--groups`).
    pub fn has_groups(self) -> bool {
        self.statistic() == NormStatistic::Groups
    }

    /// Whether the norm's statistic spans the batch (BatchNorm): it reads `--batch`, and a
    /// trained one keeps running statistics for evaluation.
    pub fn spans_batch(self) -> bool {
        self.statistic() == NormStatistic::Batch
    }

    /// Whether the norm's statistic spans the tokens of a sequence channel by channel
    /// (InstanceNorm): it needs sequences of tokens.
    pub fn spans_sequence(self) -> bool {
        self.statistic() == NormStatistic::Sequence
    }

    /// Whether the norm subtracts the mean of what it divides ([`NormInfo::centers`]).
    pub fn centers(self) -> bool {
        self.info().centers
    }

    /// Whether the norm's affine form has a bias ([`NormInfo::bias`]).
    pub fn has_bias(self) -> bool {
        self.info().bias
    }
}

/// One row of the table of norm kinds ([`NormKind::info`]): what each norm is, what it
/// divides by, and what the closed form, the finite-width correction and training read of it.
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{NormKind, NormMap, NormStatistic};
/// let rms = NormKind::Rms.info();
/// assert_eq!((rms.name, rms.label, rms.statistic), ("rms", "RMSNorm", NormStatistic::Token));
/// assert_eq!((rms.removes, rms.centers, rms.bias), (1.0, false, false));
/// assert_eq!(NormKind::Group.info().map, NormMap::Sphere);
/// assert_eq!(NormKind::Batch.info().map, NormMap::Columns);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NormInfo {
    /// Canonical name (`--norm`, tables' `norm` column).
    pub name: &'static str,
    /// Other accepted spellings (case-insensitive).
    pub aliases: &'static [&'static str],
    /// Typeset name for tables and captions, e.g. `RMSNorm`.
    pub label: &'static str,
    /// What it divides by: the blocks Monte Carlo and training compute its statistic over.
    pub statistic: NormStatistic,
    /// Whether it subtracts the mean of each block it divides (LayerNorm over a token; the
    /// column and group norms over their blocks), so its Jacobian removes that mean too.
    pub centers: bool,
    /// How many directions its Jacobian removes per block of its statistic (LayerNorm: the
    /// mean and the output, 2; RMSNorm: the output, 1; DyT and the identity: none): the rank
    /// loss of the finite-width allowance.
    pub removes: f64,
    /// Its map in the closed form ([`crate::theory`]'s norm map).
    pub map: NormMap,
    /// Whether the derived finite-width correction (`--finite-width`) covers it.
    pub finite_width: bool,
    /// Whether its affine form (training's `--affine`) has a bias (PyTorch's `RMSNorm` has
    /// none).
    pub bias: bool,
}

/// What a norm divides by ([`NormInfo::statistic`]).
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{NormKind, NormStatistic};
/// assert_eq!(NormKind::Instance.statistic(), NormStatistic::Sequence);
/// assert_eq!(NormKind::Dyt.statistic(), NormStatistic::Tanh);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormStatistic {
    /// Each token's own entries (LayerNorm, RMSNorm).
    Token,
    /// Each channel over the tokens of its own sequence (InstanceNorm).
    Sequence,
    /// Each channel over every column of the batch (BatchNorm).
    Batch,
    /// Groups of channels, each over the tokens of its own sequence (GroupNorm, `--groups`).
    Groups,
    /// Nothing: an elementwise `tanh(alpha z)` (DyT).
    Tanh,
    /// Nothing: the identity.
    Identity,
}

/// A norm's map in the closed form ([`NormInfo::map`]; docs/theory.md, "Other norms").
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{NormKind, NormMap};
/// assert_eq!(NormKind::Layer.closed_form_map(), NormMap::Sphere);
/// assert_eq!(NormKind::Dyt.closed_form_map(), NormMap::Tanh);
/// assert_eq!(NormKind::Identity.closed_form_map(), NormMap::Absent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormMap {
    /// Every token onto the sphere of radius `sqrt(d)`: second moment 1, correlation kept,
    /// mean-square gain `1/q` (LayerNorm, RMSNorm, GroupNorm with a fixed number of groups).
    Sphere,
    /// Gaussian integrals of `tanh` (DyT), where its inputs are Gaussian.
    Tanh,
    /// Over `n` exchangeable columns (Yang et al. 2019; BatchNorm, InstanceNorm), where its
    /// inputs are Gaussian.
    Columns,
    /// None: a stack without norms has no norm slot to map.
    Absent,
}

impl std::fmt::Display for NormKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// GroupNorm's default number of groups, `G = 32` (Wu and He 2018, "Group Normalization",
/// section 4: "we use G = 32 by default").
pub const DEFAULT_GROUPS: usize = 32;

/// The grouping of the norms that span several tokens: GroupNorm's number of groups and the
/// tokens of one sequence (InstanceNorm and GroupNorm normalize within a sequence, BatchNorm
/// over every column of the batch).
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{NormLayout, DEFAULT_GROUPS};
/// let l = NormLayout::default();
/// assert_eq!((l.groups, l.seq), (DEFAULT_GROUPS, None));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormLayout {
    /// GroupNorm's groups G (must divide the width).
    pub groups: usize,
    /// Tokens per sequence; `None`: all columns are one sequence.
    pub seq: Option<usize>,
}

impl Default for NormLayout {
    fn default() -> Self {
        NormLayout {
            groups: DEFAULT_GROUPS,
            seq: None,
        }
    }
}

/// The skip scale `alpha_l`.
///
/// # Examples
///
/// `--alpha` replaces every block's skip scale by the symbol; Admin's preset profiles it:
///
/// ```rust
/// use normscope_core::placement::{build, Overrides};
/// use normscope_core::spec::SkipScale;
/// let ov = Overrides { alpha: Some(0.5), ..Overrides::default() };
/// assert_eq!(build("pre", 4, &ov)?.block(2).skip, SkipScale::Alpha(0.5));
/// assert_eq!(build("pre", 4, &Overrides::default())?.block(2).skip, SkipScale::One);
/// assert_eq!(build("admin", 4, &Overrides::default())?.block(1).skip, SkipScale::AdminOmega);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SkipScale {
    /// Structurally 1 (no symbol appears in the expansion).
    One,
    /// A free parameter: the symbol `alpha` with this value (DeepNorm, or `--alpha`).
    Alpha(f64),
    /// Admin's profiled `omega_l` (Liu et al. 2020), as the paper's code profiles it
    /// (Transformer-Clinic, `fairseq/modules/transformer_layer.py`, `adaptive-profiling`):
    /// `omega_1 = 1` and `omega_{l+1}^2 = Var(omega_l x_{l-1}) + Var(lambda_l N_br(F_l))`, the
    /// variances of the two summands before `N_out`. The closed form uses second moments
    /// (`omega_{l+1}^2 = s_l`, equal to `1 + sum_{j<=l} Var F_j` in Post-Norm when `q0 = 1`);
    /// the Monte Carlo engine takes the centred variance over all entries of its own sampled
    /// network, as the code's `np.var` does.
    AdminOmega,
}

/// The branch multiplier `lambda_l`.
///
/// # Examples
///
/// ReZero starts every branch multiplier at 0:
///
/// ```rust
/// use normscope_core::placement::{build, Overrides};
/// use normscope_core::spec::BranchScale;
/// let spec = build("rezero", 3, &Overrides::default())?;
/// assert_eq!(spec.block(3).lambda, BranchScale::Lambda(0.0));
/// assert_eq!(spec.block(3).lambda.value(), 0.0);
/// assert_eq!(BranchScale::One.value(), 1.0);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BranchScale {
    /// Structurally 1.
    One,
    /// A free parameter: the symbol `lambda` with this value (ReZero's 0, or `--lambda`).
    Lambda(f64),
}

impl BranchScale {
    /// Numeric value.
    pub fn value(self) -> f64 {
        match self {
            BranchScale::One => 1.0,
            BranchScale::Lambda(v) => v,
        }
    }
}

/// Extra scale on the branch input after `N_in`.
///
/// # Examples
///
/// ```rust
/// use normscope_core::placement::find;
/// use normscope_core::spec::InputScale;
/// // LayerNorm Scaling divides block l's normed input by sqrt(l); Pre-LN leaves it alone.
/// assert_eq!(find("lns")?.stack(4)?.block(3).in_scale, InputScale::InvSqrtLayer);
/// assert_eq!(find("pre")?.stack(4)?.block(3).in_scale, InputScale::One);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputScale {
    /// None.
    One,
    /// `1/sqrt(l)` for block l: LayerNorm Scaling (Sun et al. 2025).
    InvSqrtLayer,
}

/// One residual block `x_l = N_out(alpha x + lambda N_br(F(N_in(x))))`.
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{BlockSpec, Slot, SkipScale};
/// // Post-Norm: Norm(x + F(x)); a variant with a skip scale 0.9.
/// assert_eq!(BlockSpec::POST.n_out, Slot::Norm);
/// assert_eq!(BlockSpec::POST.n_in, Slot::Identity);
/// let b = BlockSpec { skip: SkipScale::Alpha(0.9), ..BlockSpec::POST };
/// assert_eq!(b.skip, SkipScale::Alpha(0.9));
/// assert_ne!(b, BlockSpec::POST);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockSpec {
    /// Normalizer on the branch input.
    pub n_in: Slot,
    /// Extra scale on the branch input.
    pub in_scale: InputScale,
    /// Normalizer on the branch output.
    pub n_br: Slot,
    /// Normalizer on the sum.
    pub n_out: Slot,
    /// Skip scale.
    pub skip: SkipScale,
    /// Branch multiplier.
    pub lambda: BranchScale,
}

impl BlockSpec {
    /// Pre-Norm: `x + F(Norm(x))`.
    pub const PRE: BlockSpec = BlockSpec {
        n_in: Slot::Norm,
        in_scale: InputScale::One,
        n_br: Slot::Identity,
        n_out: Slot::Identity,
        skip: SkipScale::One,
        lambda: BranchScale::One,
    };
    /// Post-Norm: `Norm(x + F(x))`.
    pub const POST: BlockSpec = BlockSpec {
        n_in: Slot::Identity,
        in_scale: InputScale::One,
        n_br: Slot::Identity,
        n_out: Slot::Norm,
        skip: SkipScale::One,
        lambda: BranchScale::One,
    };
}

/// A run of identical blocks `first..=last` (1-based block indices).
///
/// # Examples
///
/// Mix-LN at depth 8: Post-Norm for blocks 1..=floor(0.25 * 8) = 1..=2, Pre-Norm after.
///
/// ```rust
/// use normscope_core::placement::{build, Overrides};
/// use normscope_core::spec::{BlockSpec, Segment};
/// let spec = build("mixln", 8, &Overrides::default())?;
/// assert_eq!(
///     spec.segments,
///     vec![
///         Segment { last: 2, block: BlockSpec::POST },
///         Segment { last: 8, block: BlockSpec::PRE },
///     ]
/// );
/// assert_eq!(spec.block(2), BlockSpec::POST);
/// assert_eq!(spec.block(3), BlockSpec::PRE);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Last block index (inclusive) of this segment.
    pub last: usize,
    /// The block used for every index in the segment.
    pub block: BlockSpec,
}

/// A whole stack of `depth` blocks plus what acts on the network output.
///
/// # Examples
///
/// ```rust
/// use normscope_core::spec::{BlockSpec, NormKind, Slot, StackSpec};
/// let spec = StackSpec::uniform("pre", 4, BlockSpec::PRE, Slot::Norm);
/// assert_eq!((spec.depth, spec.segments.len()), (4, 1));
/// assert_eq!(spec.norm, NormKind::Layer);
/// assert_eq!(spec.seed_name(), "pre");
/// assert_eq!((spec.label.as_str(), spec.file.as_deref()), ("pre", None));
/// // Without norms every slot, the final one included, becomes the identity.
/// let bare = spec.with_norm(NormKind::Identity);
/// assert_eq!(bare.block(1).n_in, Slot::Identity);
/// assert_eq!(bare.final_norm, Slot::Identity);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StackSpec {
    /// Preset name that built this stack.
    pub preset: String,
    /// How tables and legends name it (the preset's label, `Post-LN`; the name for a stack
    /// built in code).
    pub label: String,
    /// The placement file whose preset built this stack (its path as given), `None` for a
    /// built-in preset or a stack built in code: such a stack keeps the norm kind its file
    /// names.
    pub file: Option<String>,
    /// Number of blocks L.
    pub depth: usize,
    /// Segments in order; the last one ends at `depth`.
    pub segments: Vec<Segment>,
    /// Norm applied to x_L to form the network output (enters gradients and `output_change`,
    /// never `stream_sq`; docs/theory.md, "Conventions").
    pub final_norm: Slot,
    /// DeepNet's init scale beta on the branch weights (FFN matrices, attention's V and O, a
    /// linear branch's matrix); `None` means no scaling and no symbol.
    pub beta: Option<f64>,
    /// Which normalizer every [`Slot::Norm`] is.
    pub norm: NormKind,
    /// How GroupNorm and InstanceNorm group the columns and channels ([`Self::norm`] of
    /// other kinds ignores it).
    pub layout: NormLayout,
    /// The preset name Monte Carlo seeds this stack's networks with, if not [`Self::preset`]: a
    /// placement file's stack that equals a built-in preset's stack at this depth (with the
    /// same overrides) is seeded as that preset, so it draws the same networks
    /// ([`crate::placement::build`]).
    pub seed_as: Option<String>,
}

impl StackSpec {
    /// Block l (1-based). Panics if `l` is 0 or beyond the depth (a programming error).
    pub fn block(&self, l: usize) -> BlockSpec {
        assert!(
            l >= 1 && l <= self.depth,
            "block index {l} out of 1..={}",
            self.depth
        );
        // Segments are sorted by `last`; a binary search keeps stacks with one segment per
        // block (l-dependent scales from a placement file) O(L log L) to walk.
        let i = self.segments.partition_point(|s| s.last < l);
        self.segments
            .get(i)
            .map(|s| s.block)
            .expect("segments cover 1..=depth")
    }

    /// The name Monte Carlo seeds this stack's networks with: [`Self::seed_as`] or the preset.
    pub fn seed_name(&self) -> &str {
        self.seed_as.as_deref().unwrap_or(&self.preset)
    }

    /// A stack of `depth` identical blocks.
    pub fn uniform(preset: &str, depth: usize, block: BlockSpec, final_norm: Slot) -> Self {
        StackSpec {
            preset: preset.to_string(),
            label: preset.to_string(),
            file: None,
            depth,
            segments: vec![Segment { last: depth, block }],
            final_norm,
            beta: None,
            norm: NormKind::Layer,
            layout: NormLayout::default(),
            seed_as: None,
        }
    }

    /// The norm as a table's `norm` column writes it: its name, with GroupNorm's groups
    /// (`group:G=32`) and, from Monte Carlo, the batch of sequences when above one
    /// (`batch:B=8`, `layer:B=4`).
    ///
    /// ```rust
    /// use normscope_core::placement::{build, Overrides};
    /// use normscope_core::spec::NormKind;
    /// let spec = build("pre", 2, &Overrides::default())?;
    /// assert_eq!(spec.norm_setting(1), "layer");
    /// assert_eq!(spec.clone().with_norm(NormKind::Group).norm_setting(1), "group:G=32");
    /// assert_eq!(spec.with_norm(NormKind::Batch).norm_setting(8), "batch:B=8");
    /// # Ok::<(), normscope_core::Error>(())
    /// ```
    pub fn norm_setting(&self, batch: usize) -> String {
        let mut s = self.norm.name().to_string();
        if self.norm.has_groups() {
            s += &format!(":G={}", self.layout.groups);
        }
        if batch > 1 || self.norm.spans_batch() {
            s += &format!(":B={batch}");
        }
        s
    }

    /// Sets the grouping of GroupNorm and InstanceNorm.
    pub fn with_layout(mut self, layout: NormLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Sets the norm kind; [`NormKind::Identity`] turns every norm slot into the identity.
    pub fn with_norm(mut self, norm: NormKind) -> Self {
        self.norm = norm;
        if norm.is_identity() {
            let id = |s: Slot| if s.is_norm() { Slot::Identity } else { s };
            self.map_blocks(|mut b| {
                b.n_in = id(b.n_in);
                b.n_br = id(b.n_br);
                b.n_out = id(b.n_out);
                b
            });
            self.final_norm = Slot::Identity;
        }
        self
    }

    /// Applies `f` to every segment's block (used by the `--alpha`/`--lambda` overrides).
    pub(crate) fn map_blocks(&mut self, f: impl Fn(BlockSpec) -> BlockSpec) {
        for s in &mut self.segments {
            s.block = f(s.block);
        }
    }
}
