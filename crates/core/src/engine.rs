//! The one interface of both engines: a checked [`StackSpec`] and a [`Plan`] in, a typed
//! [`Profile`] out.
//!
//! - [`crate::closed_form::ClosedForm`]: the infinite-width mean field (exact values);
//! - [`crate::monte_carlo::MonteCarlo`]: sampled finite-width networks (estimates with 95%
//!   confidence intervals).
//!
//! Callers build each stack once per run ([`crate::model::ModelConfig::stack`]) and hand the
//! same spec to either engine; [`crate::compare`] joins the two profiles key by key.

use crate::Result;
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::profile::{EngineKind, Profile, Setup};
use crate::spec::StackSpec;

/// What to measure: metrics and layers.
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
pub trait Engine {
    /// Which engine this is (the `engine` column).
    fn kind(&self) -> EngineKind;

    /// The settings the rows of `spec`'s profile carry ([`Setup`]).
    fn setup(&self, spec: &StackSpec) -> Setup;

    /// The profile of `spec` for `plan`.
    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile>;
}
