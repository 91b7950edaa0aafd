//! The closed-form engine: the mean-field recursion of one stack
//! ([`crate::theory::MeanField`]) and the raw quantities its metrics read
//! ([`Quantities`]), turned into an exact [`Profile`]; with `--finite-width d`, the leading
//! finite-width correction applied to its rows ([`finite_width`]); what a block of it costs in
//! time ([`cost`]).

pub mod cost;
pub mod finite_width;

use crate::Result;
use crate::branch::{BranchConfig, BranchKind, BranchModel, Init};
use crate::engine::refusal::{NormUse, reason, refused};
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
/// let rows = cf.profile(&model.stack(normscope_core::placement::find("pre")?)?, &plan)?.rows();
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
        if spec.norm.spans_batch() {
            branch.tokens = self.batch as f64;
        }
        MeanField::run(spec, &branch, self.inputs, keep)
    }

    /// Refuses a stack this closed form does not cover, or settings its norm's map is not
    /// derived for, naming the field ([`NormUse::ClosedForm`]).
    pub fn check(&self, spec: &StackSpec) -> Result<()> {
        refused(NormUse::ClosedForm {
            spec,
            branch: self.branch,
            inputs: self.inputs,
            batch: self.batch,
        })
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
            label: spec.label.clone(),
            branch: Some(b.kind.name().to_string()),
            init: Some(b.init.name().to_string()),
            g: Some(model.nominal_gain),
            norm: Some(spec.norm_setting(if spec.norm.spans_batch() {
                self.batch
            } else {
                1
            })),
            width: (b.init == Init::Bert).then_some(b.width as u64),
            tokens: (attends || spec.norm.spans_sequence()).then_some(b.tokens as u64),
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
            .partition(|&&metric| refused(NormUse::ClosedFormMetric { spec, metric }).is_ok());
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
        for metric in missing {
            let why = reason(NormUse::ClosedFormMetric { spec, metric }).unwrap_or_default();
            profile.insert_missing(metric, &layers, &why);
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
