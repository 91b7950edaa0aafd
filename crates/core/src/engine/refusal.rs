//! The combinations of a norm with an engine, a branch, a placement or settings that are
//! refused, and why: stated once here, from the rows of the table of norm kinds
//! ([`crate::spec::NormKind::info`]), and called by every engine before it runs.
//!
//! | use | refused |
//! |---|---|
//! | [`NormUse::ClosedForm`] | DyT with a token-mixing branch, or after the sum / on the branch output; BatchNorm and InstanceNorm with a branch whose cross-column Jacobian is not derived, or on a non-Gaussian input; InstanceNorm with identical tokens or fewer than 6; BatchNorm with more than one token, correlated samples or fewer than 6 samples |
//! | [`NormUse::ClosedFormBatch`] | `--batch` above 1 for a norm other than BatchNorm |
//! | [`NormUse::ClosedFormMetric`] | the metrics DyT's, BatchNorm's and InstanceNorm's maps do not carry |
//! | [`NormUse::FiniteWidth`] | a branch other than linear, no norms, a norm without a derived correction, a block other than norm-after-sum |
//! | [`NormUse::Expansion`] | a norm without one scalar per token at infinite width |
//! | [`NormUse::Sampled`] | BatchNorm over fewer than 2 values per channel, InstanceNorm over fewer than 2 tokens, GroupNorm's groups not dividing the width or leaving blocks of one entry |
//! | [`NormUse::SampledInputs`] | identical tokens (`--c0 1`) where every block of the norm lies in one channel of one sequence |
//! | [`NormUse::TrainedWidth`] | LayerNorm on width 1 |
//! | [`NormUse::TrainedOn`] | InstanceNorm on examples that are single vectors |

use crate::branch::{BranchConfig, BranchKind, BranchModel};
use crate::metrics::{Metric, Reach};
use crate::norms::grouped::Grouping;
use crate::spec::{InputScale, NormKind, NormLayout, NormMap, NormStatistic, SkipScale, StackSpec};
use crate::theory::Inputs;
use crate::theory::norm_map::MIN_COLUMNS;
use crate::{Error, Result};

/// A use of a stack's norm that an engine may refuse ([`refused`]).
///
/// # Examples
///
/// ```rust
/// use normscope_core::engine::refusal::{refused, NormUse};
/// use normscope_core::spec::{NormKind, NormLayout};
/// let layout = NormLayout { groups: 4, seq: Some(8) };
/// let inputs = |norm, batch, c0| NormUse::SampledInputs { norm, layout, d: 16, batch, c0 };
/// assert!(refused(inputs(NormKind::Instance, 1, 1.0)).is_err());
/// assert!(refused(inputs(NormKind::Batch, 2, 1.0)).is_ok()); // two sequences differ
/// assert!(refused(inputs(NormKind::Instance, 1, 0.5)).is_ok());
/// ```
#[derive(Clone, Copy, Debug)]
pub enum NormUse<'a> {
    /// The closed form's recursion of `spec` with `branch` on `inputs`, BatchNorm's columns
    /// the `batch` samples of one token each.
    ClosedForm {
        /// The stack.
        spec: &'a StackSpec,
        /// The branch.
        branch: &'a BranchConfig,
        /// The input law.
        inputs: Inputs,
        /// Samples per batch (`--batch`).
        batch: usize,
    },
    /// A closed-form table of `spec` with `--batch` samples, which only BatchNorm reads.
    ClosedFormBatch {
        /// The stack.
        spec: &'a StackSpec,
        /// Samples per batch (`--batch`).
        batch: usize,
    },
    /// One metric of `spec` in the closed form.
    ClosedFormMetric {
        /// The stack.
        spec: &'a StackSpec,
        /// The metric.
        metric: Metric,
    },
    /// The derived finite-width correction of `spec` with a `branch` branch.
    FiniteWidth {
        /// The stack.
        spec: &'a StackSpec,
        /// The branch kind.
        branch: BranchKind,
    },
    /// The symbolic expansion of `spec`.
    Expansion {
        /// The stack.
        spec: &'a StackSpec,
    },
    /// A sampled (Monte Carlo or trained) norm of width `d` over `columns` columns grouped as
    /// `layout` says.
    Sampled {
        /// The norm.
        norm: NormKind,
        /// Its grouping.
        layout: NormLayout,
        /// The width.
        d: usize,
        /// The columns of one input (batch times tokens).
        columns: usize,
    },
    /// Monte Carlo's inputs to a norm of width `d`: `batch` sequences of tokens with
    /// pairwise correlation `c0`.
    SampledInputs {
        /// The norm.
        norm: NormKind,
        /// Its grouping.
        layout: NormLayout,
        /// The width.
        d: usize,
        /// Sequences per input (`--batch`).
        batch: usize,
        /// The tokens' correlation (`--c0`).
        c0: f64,
    },
    /// A trained model of width `width` with `--norm norm`.
    TrainedWidth {
        /// The norm.
        norm: NormKind,
        /// The width.
        width: usize,
    },
    /// A trained stack on examples of `seq` tokens (1 for vectors); `field` names the
    /// setting that chose the norm (`--norm`, or `--placements` for a file's own kind).
    TrainedOn {
        /// The stack's norm.
        norm: NormKind,
        /// Tokens per example.
        seq: usize,
        /// The flag that chose the norm.
        field: &'static str,
    },
}

/// Refuses `u` if its norm cannot be used so, saying why (the error names the flag or the
/// field to change): the one statement of the combinations the engines refuse (module docs).
pub fn refused(u: NormUse<'_>) -> Result<()> {
    match u {
        NormUse::ClosedForm {
            spec,
            branch,
            inputs,
            batch,
        } => closed_form(spec, branch, inputs, batch),
        NormUse::ClosedFormBatch { spec, batch } => {
            if batch > 1 && !spec.norm.spans_batch() {
                return Err(Error::invalid(
                    "--batch",
                    batch,
                    format!(
                        "1 with --norm {} (preset {}): the closed form reads the batch only for \
                         {}",
                        spec.norm,
                        spec.preset,
                        labels(NormKind::spans_batch)
                    ),
                ));
            }
            Ok(())
        }
        NormUse::ClosedFormMetric { spec, metric } => closed_form_metric(spec, metric),
        NormUse::FiniteWidth { spec, branch } => finite_width(spec, branch),
        NormUse::Expansion { spec } => match spec.norm.closed_form_map() {
            // GroupNorm's statistic spans tokens, but at infinite width it is one scalar per
            // token (its map is LayerNorm's).
            NormMap::Sphere | NormMap::Absent => Ok(()),
            NormMap::Tanh | NormMap::Columns => Err(Error::Unsupported(format!(
                "the expansion divides by one scalar per norm and token; --norm {} has no such \
                 scalar (its statistic spans several tokens, or it divides by nothing)",
                spec.norm
            ))),
        },
        NormUse::Sampled {
            norm,
            layout,
            d,
            columns,
        } => sampled(norm, layout, d, columns),
        NormUse::SampledInputs {
            norm,
            layout,
            d,
            batch,
            c0,
        } => {
            let one_channel = match norm.statistic() {
                NormStatistic::Sequence => true,
                NormStatistic::Batch => batch == 1,
                NormStatistic::Groups => layout.groups == d,
                NormStatistic::Token | NormStatistic::Tanh | NormStatistic::Identity => false,
            };
            if one_channel && c0 >= 1.0 {
                return Err(Error::invalid(
                    "--c0",
                    c0,
                    format!(
                        "a correlation < 1 with --norm {norm}: identical tokens have zero \
                         variance in each of its blocks"
                    ),
                ));
            }
            Ok(())
        }
        NormUse::TrainedWidth { norm, width } => {
            if norm.statistic() == NormStatistic::Token && norm.centers() && width < 2 {
                return Err(Error::invalid(
                    "--width",
                    width,
                    format!(
                        "an integer >= 2 with {} (it maps a single coordinate to 0)",
                        norm.label()
                    ),
                ));
            }
            Ok(())
        }
        NormUse::TrainedOn { norm, seq, field } => {
            if norm.spans_sequence() && seq < 2 {
                return Err(Error::invalid(
                    field,
                    norm,
                    format!(
                        "a norm other than {norm} on a task whose examples are single vectors \
                         ({} normalizes each channel over the tokens of a sequence; a token \
                         task such as --task teacher-lm has them)",
                        norm.label()
                    ),
                ));
            }
            Ok(())
        }
    }
}

/// Why `u` is refused, if it is: the text of [`refused`]'s error (for an
/// [`Error::Unsupported`], without its `unsupported: ` prefix), for the callers that write
/// the reason into a table or a note rather than stop.
///
/// # Examples
///
/// ```rust
/// use normscope_core::branch::BranchKind;
/// use normscope_core::engine::refusal::{reason, NormUse};
/// use normscope_core::model::RawModel;
/// use normscope_core::spec::NormKind;
/// let spec = RawModel { depth: 10, ..RawModel::default() }.check()?.stack(normscope_core::placement::find("post")?)?;
/// assert_eq!(reason(NormUse::FiniteWidth { spec: &spec, branch: BranchKind::Linear }), None);
/// let dyt = spec.with_norm(NormKind::Dyt);
/// let why = reason(NormUse::FiniteWidth { spec: &dyt, branch: BranchKind::Linear });
/// assert_eq!(why.as_deref(), Some("--norm dyt (derived for LayerNorm and RMSNorm only)"));
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub fn reason(u: NormUse<'_>) -> Option<String> {
    refused(u).err().map(|e| match e {
        Error::Unsupported(why) => why,
        other => other.to_string(),
    })
}

/// The labels of the norms `keep` selects, in table order: `LayerNorm and RMSNorm`.
fn labels(keep: fn(NormKind) -> bool) -> String {
    let all: Vec<&str> = NormKind::ALL
        .into_iter()
        .filter(|&k| keep(k))
        .map(NormKind::label)
        .collect();
    all.join(" and ")
}

/// [`NormUse::ClosedForm`]. DyT, InstanceNorm and BatchNorm need Gaussian inputs: DyT for its
/// Gaussian integrals of tanh, the column norms for the radius of `P z` to be an inverse
/// chi-square independent of its direction ([`crate::theory`]'s norm map). For the column
/// norms every `N_in` and the final norm read a stream that never received a normalized
/// output, and every `N_out` has skip scale 0 (its input is the branch output alone; with a
/// skip its cosine with the stream before it is not derived, and later norms read normalized
/// outputs); `N_br` is refused (its output enters the stream). After an `N_out` with skip
/// scale 0 the next branch's first matrix makes its input Gaussian again at infinite width:
/// Yang et al. 2019's network (`post --alpha 0`) is covered. Their branch must carry the
/// gradient's cross-column moment in closed form (`deriv_corr`): linear and relu-mlp. Then
/// the settings the column norms' map is derived for, naming the field: BatchNorm with one
/// token per sample (`--tokens 1`, so the batch's columns are exchangeable), independent
/// samples (`--c0 0`, as Monte Carlo draws them) and at least 6 columns (`--batch`: the
/// map's variance needs them); InstanceNorm over at least 6 tokens that are not identical
/// (`--c0` below 1).
fn closed_form(
    spec: &StackSpec,
    branch: &BranchConfig,
    inputs: Inputs,
    batch: usize,
) -> Result<()> {
    let norm = spec.norm;
    let label = norm.label();
    // The branch's traits, read only for the norms whose map needs Gaussian inputs.
    let model = || BranchModel::new(branch, None, 1.0, 0.0);
    match norm.closed_form_map() {
        NormMap::Sphere | NormMap::Absent => {}
        NormMap::Tanh => {
            if model().mixes_tokens() {
                return Err(Error::Unsupported(format!(
                    "the closed form with --norm {norm} and the {} branch: {label}'s \
                     Jacobian differs from token to token, which mixes the gradient's token \
                     mean and fluctuation that attention treats apart; derived for \
                     per-token branches (linear, relu-mlp, gelu-mlp); use Monte Carlo \
                     (`normscope mc`)",
                    branch.kind.name()
                )));
            }
            if let Some(l) = (1..=spec.depth).find(|&l| {
                let b = spec.block(l);
                b.n_out.is_norm() || b.n_br.is_norm()
            }) {
                return Err(Error::Unsupported(format!(
                    "the closed form of {} with --norm {norm}: block {l} applies {label} \
                     after the sum or to the branch output, so later {label} inputs carry \
                     tanh outputs, which are not Gaussian; derived where every {label} \
                     input is Gaussian (norms only at the branch input and the output, as \
                     Pre-Norm); use Monte Carlo (`normscope mc`)",
                    spec.preset
                )));
            }
        }
        NormMap::Columns => {
            let model = model();
            if model.mixes_tokens() || model.deriv_corr(1.0, 0.0).is_none() {
                return Err(Error::Unsupported(format!(
                    "the closed form with --norm {norm} and the {} branch: {label} needs \
                     the branch's Jacobian on a gradient's cross-column moment, derived \
                     for the linear and relu-mlp branches; use Monte Carlo (`normscope mc`)",
                    branch.kind.name(),
                )));
            }
            column_inputs_gaussian(spec)?;
        }
    }
    let tokens = branch.tokens;
    // The column map's variance needs `n` columns (`field`, written `symbol`) >= 6.
    let enough_columns = |field: &'static str, n: usize, symbol: &str| {
        if (n as f64) < MIN_COLUMNS {
            return Err(Error::invalid(
                field,
                n,
                format!(
                    "at least 6 for {label}'s closed form (below, its Jacobian's mean square \
                     has no variance: E 1/chi^4 with {symbol} - 1 degrees)"
                ),
            ));
        }
        Ok(())
    };
    match norm.statistic() {
        NormStatistic::Sequence => {
            if inputs.c0 >= 1.0 {
                return Err(Error::invalid(
                    "--c0",
                    inputs.c0,
                    format!("below 1 for {label} (identical tokens have no variance to normalize)"),
                ));
            }
            enough_columns("--tokens", tokens, "n")?;
        }
        NormStatistic::Batch => {
            if tokens != 1 {
                return Err(Error::invalid(
                    "--tokens",
                    tokens,
                    format!(
                        "1 for {label}'s closed form (the batch's B x T columns of T-token \
                         sequences are not exchangeable; use Monte Carlo, `normscope mc`)"
                    ),
                ));
            }
            if inputs.c0 != 0.0 {
                return Err(Error::invalid(
                    "--c0",
                    inputs.c0,
                    format!(
                        "0 for {label}'s closed form (the batch's samples are independent, as \
                         Monte Carlo draws them)"
                    ),
                ));
            }
            enough_columns("--batch", batch, "B")?;
        }
        NormStatistic::Token
        | NormStatistic::Groups
        | NormStatistic::Tanh
        | NormStatistic::Identity => {}
    }
    Ok(())
}

/// The Gaussian-input rule of [`closed_form`] for InstanceNorm and BatchNorm.
fn column_inputs_gaussian(spec: &StackSpec) -> Result<()> {
    let refuse = |l: usize, why: &str| {
        Err(Error::Unsupported(format!(
            "the closed form of {} with --norm {}: block {l} {why}; derived where every {} \
             input is Gaussian (Pre-Norm placements, or norms after the sum with skip scale 0, \
             Yang et al.'s network); use Monte Carlo (`normscope mc`)",
            spec.preset,
            spec.norm,
            spec.norm.label()
        )))
    };
    // Whether the stream x_{l-1} has never received a normalized output.
    let mut gaussian = true;
    for l in 1..=spec.depth {
        let b = spec.block(l);
        if b.n_br.is_norm() {
            return refuse(
                l,
                "normalizes the branch output, which enters the stream: later norm inputs are \
                 not Gaussian",
            );
        }
        if b.n_in.is_norm() && !gaussian {
            return refuse(
                l,
                "normalizes the branch input, a stream of normalized outputs, which is not \
                 Gaussian",
            );
        }
        if b.n_out.is_norm() {
            // With a skip, the sum's cosine with x_{l-1} and every later norm input are not
            // derived (and after the first such block the skip carries normalized outputs).
            if !matches!(b.skip, SkipScale::Alpha(a) if a == 0.0) {
                return refuse(
                    l,
                    "normalizes the sum of a skip and the branch: the norms after it read \
                     normalized outputs, which are not Gaussian, and its cosine with the stream \
                     is not derived",
                );
            }
            gaussian = false;
        }
    }
    if spec.final_norm.is_norm() && !gaussian {
        return refuse(
            spec.depth,
            "ends in a final norm on a stream of normalized outputs, which is not Gaussian",
        );
    }
    Ok(())
}

/// [`NormUse::ClosedFormMetric`] (docs/theory.md, "Other norms"). Under DyT its map carries
/// the stream's second moment, correlation and Jacobian gains (and with them `cos_prev` and
/// `angular_dist`), but the per-token decomposition (`coef`, `branch_weight`), `rel_update`,
/// `merge_error` and `output_change` are not derived. Under InstanceNorm and BatchNorm the
/// forward metrics and `grad_sq` are derived; the decomposition, the steps, the merge, the
/// perturbations, the single-block gains and path laws (their Jacobian moves energy between
/// the columns' mean and fluctuation, which the path law's split does not carry) and
/// `weight_grad_sq` (its gradient and input are correlated across columns) are not; nor,
/// under BatchNorm, whose columns are samples of one token each, the metrics of a token
/// correlation (the correlation the map carries is between samples).
fn closed_form_metric(spec: &StackSpec, metric: Metric) -> Result<()> {
    let info = metric.info();
    let needs = info.needs;
    let scalar = needs.decomposition || needs.step || needs.merge || needs.perturbation;
    let weights = info.reach == Reach::BackwardThroughBlock;
    let column = scalar || needs.gains || needs.paths || weights;
    let label = spec.norm.label();
    let not_carried = match spec.norm.closed_form_map() {
        NormMap::Sphere | NormMap::Absent => false,
        NormMap::Tanh => scalar,
        NormMap::Columns => column,
    };
    if not_carried {
        return Err(Error::Unsupported(format!(
            "not derived in the closed form under {label}; Monte Carlo is the reference"
        )));
    }
    if spec.norm.spans_batch() && info.min_tokens.is_some() {
        return Err(Error::Unsupported(format!(
            "not derived in the closed form under {label} (one token per sample)"
        )));
    }
    Ok(())
}

/// [`NormUse::FiniteWidth`]: derived for the linear branch, the norms whose row says so
/// ([`crate::spec::NormInfo::finite_width`]) and norm-after-sum blocks only.
fn finite_width(spec: &StackSpec, branch: BranchKind) -> Result<()> {
    let why = |s: String| Err(Error::Unsupported(s));
    if branch != BranchKind::Linear {
        return why(format!(
            "the {} branch (derived for the linear branch only)",
            branch.name()
        ));
    }
    let norm = spec.norm;
    if norm.is_identity() {
        return why("stacks without norms".into());
    }
    if !norm.info().finite_width {
        return why(format!(
            "--norm {norm} (derived for {} only)",
            labels(|k| k.info().finite_width)
        ));
    }
    match (1..=spec.depth).find_map(|l| {
        let b = spec.block(l);
        let post_like = !b.n_in.is_norm()
            && !b.n_br.is_norm()
            && b.n_out.is_norm()
            && b.in_scale == InputScale::One;
        (!post_like).then(|| {
            format!(
                "preset {} (block {l} is not a norm-after-sum block N(alpha x + lambda F(x)), the only kind derived)",
                spec.preset
            )
        })
    }) {
        Some(s) => why(s),
        None => Ok(()),
    }
}

/// [`NormUse::Sampled`]: the norm's blocks must hold at least two values to normalize.
fn sampled(norm: NormKind, layout: NormLayout, d: usize, n: usize) -> Result<()> {
    let seq = layout.seq.unwrap_or(n);
    let label = norm.label();
    match norm.statistic() {
        NormStatistic::Token | NormStatistic::Tanh | NormStatistic::Identity => {}
        NormStatistic::Batch => {
            if n < 2 {
                return Err(Error::invalid(
                    "--batch",
                    (n / seq.max(1)).max(1),
                    format!(
                        "batch x tokens >= 2 for {label} (got {n} value per channel; PyTorch \
                         refuses one too)"
                    ),
                ));
            }
        }
        NormStatistic::Sequence => {
            if seq < 2 {
                return Err(Error::invalid(
                    "--tokens",
                    seq,
                    format!(
                        "an integer >= 2 for {label} (it normalizes each channel over the \
                         tokens of a sequence; PyTorch refuses one)"
                    ),
                ));
            }
        }
        NormStatistic::Groups => {
            let g = Grouping::group(layout.groups, d, seq).map_err(|_| {
                Error::invalid(
                    "--groups",
                    layout.groups,
                    format!("a divisor of --width = {d}"),
                )
            })?;
            if g.size() < 2 {
                return Err(Error::invalid(
                    "--groups",
                    layout.groups,
                    format!(
                        "a divisor of --width = {d} leaving >= 2 entries per group \
                         ((width / groups) x tokens = {})",
                        g.size()
                    ),
                ));
            }
        }
    }
    Ok(())
}
