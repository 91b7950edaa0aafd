//! The closed-form engine: the mean-field recursion of one stack
//! ([`crate::theory::MeanField`]) and the raw quantities its metrics read
//! ([`Quantities`]), turned into an exact [`Profile`]; with `--finite-width d`, the leading
//! finite-width correction applied to its rows ([`finite_width`]).

pub mod finite_width;

use crate::branch::{BranchConfig, BranchKind, BranchModel, Init};
use crate::engine::{Engine, Plan};
use crate::metrics::closed::Quantities;
use crate::metrics::{Metric, Reach};
use crate::profile::{EngineKind, Profile, Setup, Value};
use crate::spec::{NormKind, SkipScale, StackSpec};
use crate::theory::norm_map::MIN_COLUMNS;
use crate::theory::{Inputs, Keep, MeanField};
use crate::{Error, Result};

/// The closed form for a branch and an input law.
///
/// # Examples
///
/// Pre-LN with a linear Xavier branch (gain 1): each block adds a unit second moment, so
/// `q_l = q0 + l`.
///
/// ```rust
/// use normscope_core::closed_form::ClosedForm;
/// use normscope_core::engine::{Engine, Plan};
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// let model = RawModel { depth: 4, ..RawModel::default() }.check()?;
/// let cf = ClosedForm::new(&model);
/// assert_eq!(cf.inputs.q0, 1.0);
/// let plan = Plan::new(&[Metric::StreamSq], LayerSpec::List(vec![0, 4]));
/// let rows = cf.profile(&model.stack("pre")?, &plan)?.rows();
/// assert_eq!((rows[0].value, rows[1].value), (1.0, 5.0));
/// assert_eq!(rows[1].stderr, None); // exact
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ClosedForm<'a> {
    /// The branch (DeepNet's beta comes from each stack).
    pub branch: &'a BranchConfig,
    /// The input law.
    pub inputs: Inputs,
    /// Samples per batch B (`--batch`): the columns BatchNorm averages over, one token each.
    pub batch: usize,
    /// The model, whose settings its rows carry ([`crate::model::ModelConfig::settings`]).
    pub model: &'a crate::model::ModelConfig,
}

impl<'a> ClosedForm<'a> {
    /// The closed form of a checked model.
    pub fn new(model: &'a crate::model::ModelConfig) -> Self {
        ClosedForm {
            branch: &model.branch,
            inputs: model.inputs,
            batch: 1,
            model,
        }
    }

    /// With B samples per batch (`--batch`, read by BatchNorm).
    pub fn with_batch(self, batch: usize) -> Self {
        ClosedForm { batch, ..self }
    }

    /// The mean-field recursion of `spec`, keeping what `keep` selects. Under BatchNorm the
    /// exchangeable columns are the batch's B one-token samples.
    pub fn mean_field(&self, spec: &StackSpec, keep: &Keep) -> Result<MeanField> {
        self.check(spec)?;
        let mut branch = BranchModel::new(self.branch, spec.beta, self.inputs.q0, self.inputs.c0);
        if spec.norm == NormKind::Batch {
            branch.tokens = self.batch as f64;
        }
        MeanField::run(spec, &branch, self.inputs, keep)
    }

    /// Refuses a stack this closed form does not cover ([`check`]), and the settings the
    /// column norms' map is not derived for, naming the field: BatchNorm with more than one
    /// token per sample (`--tokens 1`, so the batch's columns are exchangeable), correlated
    /// samples (`--c0 0`, as Monte Carlo draws them) or fewer than
    /// 6 columns (`--batch`: the map's variance needs them); InstanceNorm over fewer tokens
    /// or identical ones (`--c0 1`).
    pub fn check(&self, spec: &StackSpec) -> Result<()> {
        check(spec, self.branch)?;
        if spec.norm == NormKind::Instance && self.inputs.c0 >= 1.0 {
            return Err(Error::invalid(
                "--c0",
                self.inputs.c0,
                "below 1 for InstanceNorm (identical tokens have no variance to normalize)",
            ));
        }
        if spec.norm == NormKind::Batch {
            if self.branch.tokens != 1 {
                return Err(Error::invalid(
                    "--tokens",
                    self.branch.tokens,
                    "1 for BatchNorm's closed form (the batch's B x T columns of T-token \
                     sequences are not exchangeable; use Monte Carlo, `normscope mc`)",
                ));
            }
            if self.inputs.c0 != 0.0 {
                return Err(Error::invalid(
                    "--c0",
                    self.inputs.c0,
                    "0 for BatchNorm's closed form (the batch's samples are independent, as \
                     Monte Carlo draws them)",
                ));
            }
            if (self.batch as f64) < MIN_COLUMNS {
                return Err(Error::invalid(
                    "--batch",
                    self.batch,
                    "at least 6 for BatchNorm's closed form (below, its Jacobian's mean square \
                     has no variance: E 1/chi^4 with B - 1 degrees)",
                ));
            }
        }
        if spec.norm == NormKind::Instance && (self.branch.tokens as f64) < MIN_COLUMNS {
            return Err(Error::invalid(
                "--tokens",
                self.branch.tokens,
                "at least 6 for InstanceNorm's closed form (below, its Jacobian's mean square \
                 has no variance: E 1/chi^4 with n - 1 degrees)",
            ));
        }
        Ok(())
    }
}

impl Engine for ClosedForm<'_> {
    fn kind(&self) -> EngineKind {
        EngineKind::Theory
    }

    fn setup(&self, spec: &StackSpec) -> Setup {
        let b = self.branch;
        let model = BranchModel::new(b, None, self.inputs.q0, self.inputs.c0);
        let attends = matches!(
            b.kind,
            BranchKind::UniformAttention | BranchKind::CrossAttention
        );
        Setup {
            label: Setup::label_of(&spec.preset),
            branch: Some(b.kind.name().to_string()),
            init: Some(b.init.name().to_string()),
            g: Some(model.nominal_gain),
            norm: Some(spec.norm_setting(if spec.norm == NormKind::Batch {
                self.batch
            } else {
                1
            })),
            width: (b.init == Init::Bert).then_some(b.width as u64),
            tokens: (attends || spec.norm == NormKind::Instance).then_some(b.tokens as u64),
            samples: None,
            seed: None,
            model: self.model.settings(),
        }
    }

    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile> {
        self.check(spec)?;
        // Metrics the closed form has not derived in this setting are written as missing,
        // with the reason, and not computed.
        let (derived, missing): (Vec<Metric>, Vec<Metric>) = plan
            .metrics
            .iter()
            .partition(|m| not_derived(**m, spec).is_none());
        let plan = &Plan {
            metrics: derived,
            ..plan.clone()
        };
        let layers = plan.resolve(spec.depth)?;
        let mf = self.mean_field(spec, &keep(&plan.metrics, &layers))?;
        let mut profile = Profile::new(
            EngineKind::Theory,
            &spec.preset,
            spec.depth,
            self.setup(spec),
        );
        let q = Quantities::new(
            &mf,
            Metric::keeps(&plan.metrics),
            &layers,
            plan.path_len_explicit,
            &spec.preset,
            &mut profile.notes,
        )?;
        for (m, l) in plan.cells(&layers, spec.depth) {
            m.closed_form(&q, l, &mut |s, v| {
                let value = match m.beyond_f64(&q, l, s) {
                    Some(reason) => Value::Missing(reason),
                    None => Value::Exact(v),
                };
                profile.values.insert((m, l, s), value);
            });
        }
        for m in missing {
            let reason = not_derived(m, spec).unwrap_or_default();
            profile.insert_missing(m, &layers, &reason);
        }
        profile.settle();
        Ok(profile)
    }
}

/// Refuses a stack the closed form does not cover: a norm whose map needs Gaussian inputs
/// (DyT, InstanceNorm, BatchNorm) wherever one of its inputs is not Gaussian, or with a
/// branch whose Jacobian it has not derived.
///
/// DyT's map integrates `tanh` against a Gaussian input, exact where its input is a sum of
/// Gaussian terms: the stream of a stack whose blocks add raw branch outputs (`N_in` and the
/// final norm, Pre-Norm). After a DyT in `N_out` or `N_br` the stream carries `tanh` outputs,
/// whose law is not Gaussian (measured: DeepNorm with DyT at L = 16, d = 512, `stream_sq` at
/// block 8 is 0.110 by Monte Carlo against 0.066 from Gaussian integrals). DyT also needs a
/// per-token branch: its Jacobian differs from token to token, which mixes the gradient's
/// token mean and fluctuation that attention treats apart.
///
/// InstanceNorm and BatchNorm need Gaussian columns for the radius of `P z` to be an inverse
/// chi-square independent of its direction ([`crate::theory`]'s norm map): every `N_in` and
/// the final norm read a stream that never received a normalized output, and every `N_out`
/// has skip scale 0 (its input is the branch output alone; with a skip its cosine with the
/// stream before it is not derived, and later norms read normalized outputs); `N_br` is refused (its
/// output enters the stream). After an `N_out` with skip scale 0 the next branch's first
/// matrix makes its input Gaussian again at infinite width: Yang et al. 2019's network
/// (`post --alpha 0`) is covered. Their branch must carry the gradient's cross-column moment
/// in closed form (`deriv_corr`): linear and relu-mlp.
pub fn check(spec: &StackSpec, branch: &BranchConfig) -> Result<()> {
    let norm = spec.norm;
    let gaussian_only = norm == NormKind::Dyt || norm.is_column_norm();
    if !gaussian_only {
        return Ok(());
    }
    let model = BranchModel::new(branch, None, 1.0, 0.0);
    let mixing = model.mixes_tokens();
    if norm == NormKind::Dyt && mixing {
        return Err(Error::Unsupported(format!(
            "the closed form with --norm dyt and the {} branch: DyT's Jacobian differs from \
             token to token, which mixes the gradient's token mean and fluctuation that \
             attention treats apart; derived for per-token branches (linear, relu-mlp, \
             gelu-mlp); use Monte Carlo (`normscope mc`)",
            branch.kind.name()
        )));
    }
    if norm.is_column_norm() && (mixing || model.deriv_corr(1.0, 0.0).is_none()) {
        return Err(Error::Unsupported(format!(
            "the closed form with --norm {norm} and the {} branch: {} needs the branch's \
             Jacobian on a gradient's cross-column moment, derived for the linear and \
             relu-mlp branches; use Monte Carlo (`normscope mc`)",
            branch.kind.name(),
            norm.label()
        )));
    }
    if norm == NormKind::Dyt {
        if let Some(l) = (1..=spec.depth).find(|&l| {
            let b = spec.block(l);
            b.n_out.is_norm() || b.n_br.is_norm()
        }) {
            return Err(Error::Unsupported(format!(
                "the closed form of {} with --norm dyt: block {l} applies DyT after the sum or \
                 to the branch output, so later DyT inputs carry tanh outputs, which are not \
                 Gaussian; derived where every DyT input is Gaussian (norms only at the branch \
                 input and the output, as Pre-Norm); use Monte Carlo (`normscope mc`)",
                spec.preset
            )));
        }
        return Ok(());
    }
    column_inputs_gaussian(spec)
}

/// The Gaussian-input rule of [`check`] for InstanceNorm and BatchNorm.
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

/// Why the closed form has no value of `metric` for `spec`, if it has none (docs/theory.md,
/// "Other norms"). Under DyT its map carries the stream's second moment, correlation and
/// Jacobian gains (and with them `cos_prev` and `angular_dist`), but the per-token
/// decomposition (`coef`, `branch_weight`), `rel_update`, `merge_error` and `output_change`
/// are not derived. Under InstanceNorm and BatchNorm the forward metrics and `grad_sq` are
/// derived; the decomposition, the steps, the merge, the perturbations, the single-block
/// gains and path laws (their Jacobian moves energy between the columns' mean and
/// fluctuation, which the path law's split does not carry) and `weight_grad_sq` (its
/// gradient and input are correlated across columns) are not.
pub fn not_derived(metric: Metric, spec: &StackSpec) -> Option<String> {
    let needs = metric.info().needs;
    let scalar = needs.decomposition || needs.step || needs.merge || needs.perturbation;
    let info = metric.info();
    let weights = info.reach == Reach::BackwardThroughBlock;
    let column = scalar || needs.gains || needs.paths || weights;
    let label = spec.norm.label();
    match spec.norm {
        NormKind::Dyt if scalar => Some(format!(
            "not derived in the closed form under {label}; Monte Carlo is the reference"
        )),
        NormKind::Batch | NormKind::Instance if column => Some(format!(
            "not derived in the closed form under {label}; Monte Carlo is the reference"
        )),
        // Its columns are samples of one token each: the correlation the map carries is
        // between samples, not the token correlation the metric is.
        NormKind::Batch if info.min_tokens.is_some() => Some(
            "not derived in the closed form under BatchNorm (one token per sample)".to_string(),
        ),
        _ => None,
    }
}

/// What the recursion must keep for `metrics` at `layers`: only those layers, plus the whole
/// sequences that sources and path laws read, and the backward pass only for gradients.
pub fn keep(metrics: &[Metric], layers: &[usize]) -> Keep {
    let keeps = Metric::keeps(metrics);
    Keep {
        layers: Some(layers.iter().copied().collect()),
        sources: keeps.sources,
        gains: keeps.gains,
        backward: keeps.backward,
        merge: keeps.merge,
    }
}

/// An upper bound on the number of rows a closed-form profile writes for `metrics` at
/// `layers`, to refuse runaway tables early.
pub(crate) fn estimate_rows(metrics: &[Metric], layers: &[usize]) -> u128 {
    let per_layer: u128 = metrics
        .iter()
        .map(|m| if m.has_source() { 0 } else { 1 })
        .sum();
    let with_source = metrics.iter().filter(|m| m.has_source()).count() as u128;
    layers
        .iter()
        .map(|&l| per_layer + with_source * (l as u128 + 1))
        .sum()
}
