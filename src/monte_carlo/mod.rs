//! The Monte Carlo engine (THEORY.md section 6): sample independent networks of width d over n
//! tokens with the same [`crate::spec::StackSpec`], run real forward and backward passes, and
//! report every metric with its standard error and a 95% confidence interval over networks.
//!
//! Networks run in parallel (rayon); each draws from its own seeded stream ([`rng`]) and the
//! results are reduced in index order, so the output is byte-identical for any thread count.
//! Matrix products are single-threaded (nalgebra/matrixmultiply without threading), so rayon
//! owns the cores.

pub mod gemm;
pub mod measure;
pub mod network;
pub mod norm;
pub mod rng;
pub mod sample;
pub mod sampler;
pub mod sampling;
pub mod stats;

pub use measure::Quantities;
pub use sampling::{McConfig, RawMc};

use crate::Result;
use crate::engine::{Engine, Plan};
use crate::metrics::Metric;
use crate::profile::{EngineKind, Key, Profile, Value};
use crate::spec::StackSpec;
use measure::Values;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Samples and measures network `index` of `spec` under `cfg`.
pub fn measure_network(
    spec: &StackSpec,
    cfg: &McConfig,
    plan: &measure::NetworkPlan,
    index: u64,
) -> Values {
    let hash = rng::config_hash(&cfg.canonical(&spec.preset));
    let mut r = rng::network_rng(cfg.seed, hash, index);
    let net = sampler::network(spec, cfg, &mut r);
    measure::measure(&net, plan, &mut r)
}

/// Aggregates per-network values into estimates, keys in order. A `path_len` length that some
/// networks pruned counts as 0 for them; a key with fewer than two values is left out.
pub fn aggregate(per_net: &[Values]) -> BTreeMap<Key, Value> {
    let mut keys: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    for v in per_net {
        for k in v.keys() {
            keys.entry(*k).or_default();
        }
    }
    for (k, vals) in keys.iter_mut() {
        for v in per_net {
            match v.get(k) {
                Some(x) => vals.push(*x),
                None if k.0 == Metric::PathLen => vals.push(0.0),
                None => {}
            }
        }
    }
    keys.into_iter()
        .filter(|(_, vals)| vals.len() >= 2)
        .map(|(k, vals)| (k, Value::Estimate(stats::estimate(&vals))))
        .collect()
}

/// Progress reporting for [`MonteCarlo`]: called once per finished network.
pub trait Progress: Sync {
    /// One more network is done.
    fn tick(&self);
}

impl Progress for () {
    fn tick(&self) {}
}

/// The Monte Carlo engine: `cfg.samples` independent networks per stack, in parallel.
pub struct MonteCarlo<'a> {
    /// Sampling settings (width, tokens, samples, seed, ...).
    pub cfg: &'a McConfig,
    /// Told of every finished network.
    pub progress: &'a dyn Progress,
}

impl Engine for MonteCarlo<'_> {
    fn kind(&self) -> EngineKind {
        EngineKind::Mc
    }

    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile> {
        let mut selected = vec![false; spec.depth + 1];
        for l in plan.resolve(spec.depth)? {
            selected[l] = true;
        }
        let mplan = measure::NetworkPlan {
            metrics: plan.metrics.clone(),
            selected,
            path_max: self.cfg.path_max,
        };
        let per_net: Vec<Values> = (0..self.cfg.samples as u64)
            .into_par_iter()
            .map(|i| {
                let v = measure_network(spec, self.cfg, &mplan, i);
                self.progress.tick();
                v
            })
            .collect();
        let mut profile = Profile::new(EngineKind::Mc, &spec.preset, spec.depth);
        profile.values = aggregate(&per_net);
        profile.settle();
        Ok(profile)
    }
}
