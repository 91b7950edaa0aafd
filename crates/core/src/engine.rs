//! The one interface of both engines: a checked [`StackSpec`] and a [`Plan`] in, a typed
//! [`Profile`] out.
//!
//! - [`crate::closed_form::ClosedForm`]: the infinite-width mean field (exact values);
//! - [`crate::monte_carlo::MonteCarlo`]: sampled finite-width networks (estimates with 95%
//!   confidence intervals).
//!
//! Callers build each stack once per run ([`crate::model::ModelConfig::stack`]) and hand the
//! same spec to either engine; [`crate::compare`] joins the two profiles key by key. What
//! either engine (and training, and the symbolic expansion) refuses to do with a stack's norm
//! is stated once, in [`refusal`].

pub mod refusal;

use crate::Result;
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::profile::{EngineKind, Profile, Setup};
use crate::spec::StackSpec;

/// What to measure: metrics and layers.
///
/// # Examples
///
/// ```rust
/// use normscope_core::engine::Plan;
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// let plan = Plan::new(&[Metric::StreamSq], LayerSpec::List(vec![4, 0, 2, 2]));
/// assert_eq!(plan.resolve(4)?, vec![0, 2, 4]);
/// assert_eq!(
///     plan.cells(&[0, 2, 4], 4),
///     vec![(Metric::StreamSq, 0), (Metric::StreamSq, 2), (Metric::StreamSq, 4)]
/// );
/// assert!(plan.resolve(3).is_err()); // layer 4 is beyond depth 3
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Metrics, in any order (each is written only if asked for).
    pub metrics: Vec<Metric>,
    /// Layers, resolved against each stack's depth.
    pub layers: LayerSpec,
    /// Whether `path_len` was named explicitly: then a layer beyond the closed form's path-law
    /// limit is an error; with `all` it is skipped with a note.
    pub path_len_explicit: bool,
}

impl Plan {
    /// A plan for `metrics` at `layers`, `path_len` counted as explicit.
    pub fn new(metrics: &[Metric], layers: LayerSpec) -> Self {
        Plan {
            metrics: metrics.to_vec(),
            layers,
            path_len_explicit: true,
        }
    }

    /// The selected layers of a depth-`depth` stack, sorted and unique.
    pub fn resolve(&self, depth: usize) -> Result<Vec<usize>> {
        self.layers.resolve(depth)
    }

    /// Every `(metric, layer)` pair of the plan that the metric has a row at, metric-major.
    pub fn cells(&self, layers: &[usize], depth: usize) -> Vec<(Metric, usize)> {
        self.metrics
            .iter()
            .flat_map(|&m| {
                layers
                    .iter()
                    .filter(move |&&l| m.info().layers.contains(l, depth))
                    .map(move |&l| (m, l))
            })
            .collect()
    }
}

/// An engine: profiles a stack.
///
/// # Examples
///
/// The closed form is an engine; Post-LN's stream has unit second moment at every layer
/// (LayerNorm's output has `||Norm(z)||^2 = d`):
///
/// ```rust
/// use normscope_core::closed_form::ClosedForm;
/// use normscope_core::engine::{Engine, Plan};
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::profile::EngineKind;
/// let model = RawModel { depth: 3, ..RawModel::default() }.check()?;
/// let engine = ClosedForm::new(&model);
/// let spec = model.stack(normscope_core::placement::find("post")?)?;
/// assert_eq!(engine.kind(), EngineKind::Theory);
/// assert_eq!(engine.setup(&spec).label, "Post-LN");
/// let profile = engine.profile(&spec, &Plan::new(&[Metric::StreamSq], LayerSpec::All))?;
/// let values: Vec<f64> = profile.rows().iter().map(|r| r.value).collect();
/// assert_eq!(values, vec![1.0, 1.0, 1.0, 1.0]);
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub trait Engine {
    /// Which engine this is (the `engine` column).
    fn kind(&self) -> EngineKind;

    /// The settings the rows of `spec`'s profile carry ([`Setup`]).
    fn setup(&self, spec: &StackSpec) -> Setup;

    /// The profile of `spec` for `plan`.
    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile>;
}
