//! The closed-form engine: the mean-field recursion of one stack
//! ([`crate::theory::MeanField`]) and the raw quantities its metrics read
//! ([`Quantities`]), turned into an exact [`Profile`]; with `--finite-width d`, the leading
//! finite-width correction applied to its rows ([`finite_width`]).

pub mod finite_width;

use crate::Result;
use crate::branch::{BranchConfig, BranchKind, BranchModel, Init};
use crate::engine::{Engine, Plan};
use crate::metrics::Metric;
use crate::metrics::closed::Quantities;
use crate::profile::{EngineKind, Profile, Setup, Value};
use crate::spec::StackSpec;
use crate::theory::{Inputs, Keep, MeanField};

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
        spec.norm.closed_form()?;
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
        profile.settle();
        Ok(profile)
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
