//! The closed-form engine: the mean-field recursion of one stack
//! ([`crate::theory::MeanField`]) and the raw quantities its metrics read
//! ([`Quantities`]), turned into an exact [`Profile`]; with `--finite-width d`, the leading
//! finite-width correction applied to its rows ([`finite_width`]).

pub mod finite_width;

use crate::branch::{BranchConfig, BranchKind, BranchModel, Init};
use crate::engine::{Engine, Plan};
use crate::metrics::Metric;
use crate::metrics::closed::Quantities;
use crate::profile::{EngineKind, Profile, Setup, Value};
use crate::spec::{NormKind, StackSpec};
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
}

impl<'a> ClosedForm<'a> {
    /// The closed form of a checked model.
    pub fn new(model: &'a crate::model::ModelConfig) -> Self {
        ClosedForm {
            branch: &model.branch,
            inputs: model.inputs,
        }
    }

    /// The mean-field recursion of `spec`, keeping what `keep` selects.
    pub fn mean_field(&self, spec: &StackSpec, keep: &Keep) -> Result<MeanField> {
        let branch = BranchModel::new(self.branch, spec.beta, self.inputs.q0, self.inputs.c0);
        MeanField::run(spec, &branch, self.inputs, keep)
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
            norm: Some(spec.norm_setting(1)),
            width: (b.init == Init::Bert).then_some(b.width as u64),
            tokens: attends.then_some(b.tokens as u64),
            samples: None,
            seed: None,
        }
    }

    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile> {
        check(spec, self.branch)?;
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

/// Refuses a stack the closed form does not cover: a norm without one
/// ([`crate::spec::NormKind::closed_form`]), and DyT wherever one of its inputs is not
/// Gaussian. DyT's map integrates `tanh` against a Gaussian input, exact where its input is a
/// sum of Gaussian terms: the stream of a stack whose blocks add raw branch outputs (`N_in`
/// and the final norm, Pre-Norm). After a DyT in `N_out` or `N_br` the stream carries
/// `tanh` outputs, whose law is not Gaussian (measured: DeepNorm with DyT at L = 16, d = 512,
/// `stream_sq` at block 8 is 0.110 by Monte Carlo against 0.066 from Gaussian integrals).
/// DyT also needs a per-token branch: its Jacobian differs from token to token, which mixes
/// the gradient's token mean and fluctuation that attention treats apart.
pub fn check(spec: &StackSpec, branch: &BranchConfig) -> Result<()> {
    spec.norm.closed_form()?;
    if spec.norm != NormKind::Dyt {
        return Ok(());
    }
    let model = BranchModel::new(branch, None, 1.0, 0.0);
    if model.mixes_tokens() {
        return Err(Error::Unsupported(format!(
            "the closed form with --norm dyt and the {} branch: DyT's Jacobian differs from \
             token to token, which mixes the gradient's token mean and fluctuation that \
             attention treats apart; derived for per-token branches (linear, relu-mlp, \
             gelu-mlp); use Monte Carlo (`normscope mc`)",
            branch.kind.name()
        )));
    }
    if let Some(l) = (1..=spec.depth).find(|&l| {
        let b = spec.block(l);
        b.n_out.is_norm() || b.n_br.is_norm()
    }) {
        return Err(Error::Unsupported(format!(
            "the closed form of {} with --norm dyt: block {l} applies DyT after the sum or to \
             the branch output, so later DyT inputs carry tanh outputs, which are not \
             Gaussian; derived where every DyT input is Gaussian (norms only at the branch \
             input and the output, as Pre-Norm); use Monte Carlo (`normscope mc`)",
            spec.preset
        )));
    }
    Ok(())
}

/// Why the closed form has no value of `metric` for `spec`, if it has none: under DyT
/// (docs/theory.md, "Other norms") its map carries the stream's second moment, correlation
/// and Jacobian gains (and with them `cos_prev` and `angular_dist`), but the per-token
/// decomposition (`coef`, `branch_weight`), `rel_update`, `merge_error` and `output_change`
/// are not derived.
pub fn not_derived(metric: Metric, spec: &StackSpec) -> Option<String> {
    let needs = metric.info().needs;
    let scalar = needs.decomposition || needs.step || needs.merge || needs.perturbation;
    (spec.norm == NormKind::Dyt && scalar).then(|| {
        "not derived in the closed form under DyT; Monte Carlo is the reference".to_string()
    })
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
