//! The Monte Carlo engine (THEORY.md section 6): sample independent networks of width d over n
//! tokens with the same [`crate::spec::StackSpec`], run real forward and backward passes, and
//! report every metric with its standard error and a 95% confidence interval over networks.
//!
//! Networks run in parallel (rayon); each draws from its own seeded stream ([`rng`]) and the
//! results are reduced in index order, so the output is byte-identical for any thread count.
//! Matrix products are single-threaded (nalgebra/matrixmultiply without threading), so rayon
//! owns the cores.

pub mod activation;
pub mod allowance;
pub mod branch;
pub mod config;
pub mod gemm;
pub mod measure;
pub mod network;
pub mod norm;
pub mod rng;
pub mod sample;
pub mod sampler;
pub mod stats;

pub use config::{McConfig, McKind, RawMc};

use crate::Result;
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::profile::Row;
use measure::{Plan, Values};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Samples and measures network `index` of preset `preset` under `cfg`.
pub fn run_network(preset: &str, cfg: &McConfig, plan: &Plan, index: u64) -> Result<Values> {
    let spec = cfg.model.stack(preset)?;
    let hash = rng::config_hash(&cfg.canonical(&spec.preset));
    let mut r = rng::network_rng(cfg.seed, hash, index);
    let net = sampler::network(&spec, cfg, &mut r);
    Ok(measure::measure(&net, plan, &mut r))
}

/// Aggregates per-network values into rows (`engine = mc`), keys in order. A `path_len`
/// length that some networks pruned counts as 0 for them.
pub fn aggregate(preset: &str, depth: usize, per_net: &[Values]) -> Vec<Row> {
    let mut keys: BTreeMap<(Metric, u64, Option<u64>), Vec<f64>> = BTreeMap::new();
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
        .map(|((m, l, s), vals)| {
            let e = stats::estimate(&vals);
            Row {
                preset: preset.to_string(),
                engine: "mc",
                depth: depth as u64,
                layer: l,
                source: s,
                metric: m.name(),
                value: e.mean,
                stderr: Some(e.stderr),
                ci_low: Some(e.ci_low),
                ci_high: Some(e.ci_high),
                n: Some(e.n as u64),
            }
        })
        .collect()
}

/// Progress reporting for [`run`]: called once per finished network.
pub trait Progress: Sync {
    /// One more network is done.
    fn tick(&self);
}

impl Progress for () {
    fn tick(&self) {}
}

/// Monte Carlo rows of every preset.
pub fn run(
    presets: &[String],
    cfg: &McConfig,
    metrics: &[Metric],
    layers: &LayerSpec,
    progress: &dyn Progress,
) -> Result<Vec<Row>> {
    let depth = cfg.model.depth;
    let mut selected = vec![false; depth + 1];
    for l in layers.resolve(depth)? {
        selected[l] = true;
    }
    let plan = Plan {
        metrics: metrics.to_vec(),
        selected,
        path_max: cfg.path_max,
    };
    let mut rows = Vec::new();
    for p in presets {
        let per_net: Vec<Values> = (0..cfg.samples as u64)
            .into_par_iter()
            .map(|i| {
                let r = run_network(p, cfg, &plan, i);
                progress.tick();
                r
            })
            .collect::<Result<Vec<_>>>()?;
        let name = crate::placement::find(p)?.name;
        rows.extend(aggregate(name, depth, &per_net));
    }
    Ok(rows)
}
