//! The Monte Carlo engine (`docs/theory.md`, "Monte Carlo: finite width"): sample independent networks of width d over n
//! tokens with the same [`crate::spec::StackSpec`], run real forward and backward passes, and
//! report every metric with its standard error and a 95% confidence interval over networks.
//!
//! Networks run in parallel (rayon); each draws from its own seeded stream ([`rng`]) and the
//! results are reduced in index order, so the output is byte-identical for any thread count.
//! Matrix products are single-threaded ([`gemm`](normscope_numeric::gemm): matrixmultiply's `dgemm` arithmetic in f64,
//! in the engine's own kernel where [`exact_dgemm`](normscope_numeric::exact_dgemm) can; faer with `Par::Seq` in f32), so
//! rayon owns the cores.

pub mod lean_mlp;
pub mod measure;
pub mod memory;
pub mod network;
pub mod norm;
pub mod precision;
pub mod sample;
pub mod sampler;
pub mod sampling;
pub mod size;

pub use measure::{Memory, Quantities};
pub use precision::Precision;
pub use sampling::{McConfig, RawMc};

use crate::Result;
use crate::branch::BranchKind;
use crate::engine::refusal::{NormUse, refused};
use crate::engine::{Engine, Plan};
use crate::metrics::Metric;
use crate::profile::{EngineKind, Key, ModelSettings, Profile, Setup, Value};
use crate::spec::StackSpec;
use measure::Values;
use normscope_numeric::{estimate, rng};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Samples and measures network `index` of `spec` under `cfg`, in `cfg.precision`, held or
/// streamed as `cfg.memory` says.
pub fn measure_network(
    spec: &StackSpec,
    cfg: &McConfig,
    plan: &measure::NetworkPlan,
    index: u64,
) -> Values {
    measure_network_with(spec, cfg, plan, index, cfg.memory)
}

/// [`measure_network`] held or streamed as `memory` says (the values do not depend on it).
pub fn measure_network_with(
    spec: &StackSpec,
    cfg: &McConfig,
    plan: &measure::NetworkPlan,
    index: u64,
    memory: measure::Memory,
) -> Values {
    let hash = rng::config_hash(&cfg.canonical(spec.seed_name()));
    let mut r = rng::network_rng(cfg.seed, hash, index);
    match cfg.precision {
        Precision::F64 => measure::measure_drawn::<f64>(spec, cfg, plan, &mut r, memory),
        Precision::F32 => measure::measure_drawn::<f32>(spec, cfg, plan, &mut r, memory),
    }
}

/// Networks measured in parallel per batch, per thread: each batch's tables are folded into
/// [`Columns`] in network order before the next batch starts, so at most this many
/// per-network tables per thread are alive at once, whatever `--samples` is.
pub const BATCH_PER_THREAD: usize = 8;

/// Per-network values kept as one column per key, in network order: the only per-network
/// record the estimator needs (one f64 per network and key, read twice by the two-pass
/// variance of [`estimate`](normscope_numeric::estimate::estimate)). A `path_len` length that some networks pruned counts as
/// 0 for them; other keys skip the networks that lack them (non-finite values).
///
/// # Examples
///
/// Two networks' values of one key give an estimate with n = 2 and their mean:
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::monte_carlo::Columns;
/// use normscope_core::monte_carlo::measure::Values;
/// use normscope_core::profile::Value;
///
/// let key = (Metric::StreamSq, 1, None);
/// let mut cols = Columns::with_capacity(2);
/// cols.push(Values::from([(key, 1.0)]));
/// cols.push(Values::from([(key, 3.0)]));
/// match &cols.estimates()[&key] {
///     Value::Estimate(e) => assert_eq!((e.n, e.mean), (2, 2.0)),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Default)]
pub struct Columns {
    cols: BTreeMap<Key, Vec<f64>>,
    networks: usize,
    /// Networks expected: each column is allocated once at this capacity (no doubling).
    capacity: usize,
}

impl Columns {
    /// Columns for `networks` networks, each allocated exactly once.
    pub fn with_capacity(networks: usize) -> Self {
        Columns {
            capacity: networks,
            ..Columns::default()
        }
    }

    /// Appends the next network's values.
    pub fn push(&mut self, values: Values) {
        let before = self.networks;
        for (k, x) in values {
            let capacity = self.capacity.max(before + 1);
            let col = self.cols.entry(k).or_insert_with(|| {
                let mut col = Vec::with_capacity(capacity);
                // A row first seen now (a path length) was 0 in every earlier network.
                if k.0.info().absent_is_zero {
                    col.resize(before, 0.0);
                }
                col
            });
            col.push(x);
        }
        self.networks += 1;
        for (k, col) in self.cols.iter_mut() {
            if k.0.info().absent_is_zero && col.len() < self.networks {
                col.push(0.0);
            }
        }
    }

    /// The estimates, keys in order; a key with fewer than two values is left out.
    pub fn estimates(self) -> BTreeMap<Key, Value> {
        self.cols
            .into_iter()
            .filter(|(_, vals)| vals.len() >= 2)
            .map(|(k, vals)| (k, Value::Estimate(estimate::estimate(&vals))))
            .collect()
    }
}

/// Progress reporting for [`MonteCarlo`]: called once per finished network.
///
/// # Examples
///
/// An implementor that counts finished networks (`()` is the silent one):
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::engine::{Engine, Plan};
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::{McConfig, MonteCarlo, Progress, RawMc};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// struct Count(AtomicUsize);
/// impl Progress for Count {
///     fn tick(&self) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let raw = RawModel {
///     depth: 2,
///     branch: "linear".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc { samples: 3, ..RawMc::default() })?;
/// let count = Count(AtomicUsize::new(0));
/// let mc = MonteCarlo { cfg: &cfg, progress: &count };
/// mc.profile(&cfg.model.stack(normscope_core::placement::find("pre")?)?, &Plan::new(&[Metric::StreamSq], LayerSpec::Last))?;
/// assert_eq!(count.0.load(Ordering::Relaxed), 3);
/// # Ok(())
/// # }
/// ```
pub trait Progress: Sync {
    /// One more network is done.
    fn tick(&self);
}

impl Progress for () {
    fn tick(&self) {}
}

/// The Monte Carlo engine: `cfg.samples` independent networks per stack, in parallel.
///
/// # Examples
///
/// Profiling a Post-LN stack with norm epsilon 0: its last stream is a LayerNorm output, so
/// `q_L = 1` on every network (up to rounding) and the estimate has n = 4 networks.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::engine::{Engine, Plan};
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::{McConfig, MonteCarlo, RawMc};
/// use normscope_core::profile::{EngineKind, Value};
///
/// let raw = RawModel {
///     depth: 3,
///     branch: "relu-mlp".into(),
///     width: 8,
///     tokens: 4,
///     ..RawModel::default()
/// };
/// let cfg = McConfig::new(&raw, &RawMc { samples: 4, eps: 0.0, ..RawMc::default() })?;
/// let mc = MonteCarlo { cfg: &cfg, progress: &() };
/// assert_eq!(mc.kind(), EngineKind::Mc);
/// let spec = cfg.model.stack(normscope_core::placement::find("post")?)?;
/// let profile = mc.profile(&spec, &Plan::new(&[Metric::StreamSq], LayerSpec::Last))?;
/// match &profile.values[&(Metric::StreamSq, 3, None)] {
///     Value::Estimate(e) => {
///         assert_eq!(e.n, 4);
///         assert!((e.mean - 1.0).abs() < 1e-12);
///     }
///     other => panic!("{other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
pub struct MonteCarlo<'a> {
    /// Sampling settings (width, tokens, samples, seed, ...).
    pub cfg: &'a McConfig,
    /// Told of every finished network.
    pub progress: &'a dyn Progress,
}

impl Engine for MonteCarlo<'_> {
    fn kind(&self) -> EngineKind {
        match self.cfg.precision {
            Precision::F64 => EngineKind::Mc,
            Precision::F32 => EngineKind::McF32,
        }
    }

    fn setup(&self, spec: &StackSpec) -> Setup {
        let cfg = self.cfg;
        let b = &cfg.model.branch;
        let uniform = cfg.uniform && cfg.kind == BranchKind::Attention;
        let branch = if uniform {
            BranchKind::UniformAttention
        } else {
            cfg.kind
        };
        // The closed-form proxy's gain is the sampled branch's only where the closed form has
        // that branch; softmax attention and the Transformer stack have no gain g, except the
        // `--gain` override, which sets each block's proxy gain (the output matrix rescaled).
        let g = if branch.info().closed_form {
            let inputs = cfg.model.inputs;
            Some(crate::branch::BranchModel::new(b, None, inputs.q0, inputs.c0).nominal_gain)
        } else {
            b.gain
        };
        Setup {
            label: spec.label.clone(),
            branch: Some(cfg.branch_name()),
            init: Some(b.init.name().to_string()),
            g,
            norm: Some(spec.norm_setting(cfg.batch)),
            width: Some(b.width as u64),
            tokens: Some(b.tokens as u64),
            samples: Some(cfg.samples as u64),
            seed: Some(cfg.seed),
            // Heads and the hidden ratio enter every network's seed (`McConfig::canonical`),
            // so a Monte Carlo row carries them for every branch: two runs that differ only in
            // them draw different networks.
            model: ModelSettings {
                heads: Some(cfg.heads as u64),
                hidden_ratio: Some(b.hidden_ratio),
                eps: Some(cfg.eps),
                path_max: Some(cfg.path_max as u64),
                ..cfg.model.settings()
            },
        }
    }

    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile> {
        // A placement file's norm is checked here: the model's was when `cfg` was built.
        let d = self.cfg.model.branch.width;
        norm::grouping(spec.norm, spec.layout, d, self.cfg.columns())?;
        let c0 = self.cfg.model.inputs.c0;
        refused(NormUse::SampledInputs {
            norm: spec.norm,
            layout: spec.layout,
            d,
            batch: self.cfg.batch,
            c0,
        })?;
        let layers = plan.resolve(spec.depth)?;
        let mut selected = vec![false; spec.depth + 1];
        for &l in &layers {
            selected[l] = true;
        }
        // Metrics without a value in this setting are written as missing, with the reason,
        // and not measured.
        let (measured, undefined): (Vec<Metric>, Vec<Metric>) = plan
            .metrics
            .iter()
            .partition(|m| undefined_here(**m, spec, self.cfg).is_none());
        let mplan = measure::NetworkPlan {
            metrics: measured,
            selected,
            path_max: self.cfg.path_max,
        };
        let threads = rayon::current_num_threads();
        let batch = (threads * BATCH_PER_THREAD).max(1) as u64;
        // Held or streamed, decided once per stack for the networks running at once.
        let concurrent = threads.min(self.cfg.samples);
        let memory = self
            .cfg
            .memory
            .resolve(self.cfg, spec.depth, &plan.metrics, concurrent);
        let samples = self.cfg.samples as u64;
        let mut cols = Columns::with_capacity(self.cfg.samples);
        let mut start = 0;
        while start < samples {
            crate::interrupt::check()?;
            let end = samples.min(start + batch);
            let tables: Vec<Values> = (start..end)
                .into_par_iter()
                .map(|i| {
                    let v = measure_network_with(spec, self.cfg, &mplan, i, memory);
                    self.progress.tick();
                    v
                })
                .collect();
            for v in tables {
                cols.push(v);
            }
            start = end;
        }
        let mut profile = Profile::new(self.kind(), &spec.preset, spec.depth, self.setup(spec));
        profile.values = cols.estimates();
        for m in undefined {
            let reason = undefined_here(m, spec, self.cfg).unwrap_or_default();
            profile.insert_missing(m, &layers, &reason);
        }
        profile.settle();
        Ok(profile)
    }
}

/// Why `metric` has no value for `spec` under `cfg`, if it has none: the per-token
/// decomposition (`coef`, `branch_weight`) under a norm without a per-token statistic, and the
/// token correlation (`corr`) over a batch of independent sequences.
fn undefined_here(metric: Metric, spec: &StackSpec, cfg: &McConfig) -> Option<String> {
    let needs = metric.info().needs;
    if needs.decomposition && !spec.norm.per_token() {
        return Some(format!(
            "undefined for {}: it has no per-token statistic, so x_l has no per-token \
             decomposition sum_j C_lj B_j",
            spec.norm.label()
        ));
    }
    if needs.column_sum && cfg.batch > 1 {
        return Some(format!(
            "undefined with --batch {}: it would pair tokens of independent sequences",
            cfg.batch
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fill_pruned_path_lengths_with_zero_and_skip_other_gaps() {
        let (p, s) = ((Metric::PathLen, 4, Some(3)), (Metric::StreamSq, 4, None));
        let nets: Vec<Values> = vec![
            [(s, 1.0)].into_iter().collect(),
            [(p, 0.5)].into_iter().collect(),
            [(s, 3.0)].into_iter().collect(),
            [(s, 5.0), (p, 0.25)].into_iter().collect(),
        ];
        let mut cols = Columns::default();
        for v in nets {
            cols.push(v);
        }
        assert_eq!(cols.cols[&p], vec![0.0, 0.5, 0.0, 0.25]);
        assert_eq!(cols.cols[&s], vec![1.0, 3.0, 5.0]);
        let est = cols.estimates();
        match (&est[&p], &est[&s]) {
            (Value::Estimate(a), Value::Estimate(b)) => {
                assert_eq!((a.n, b.n), (4, 3));
                assert_eq!((a.mean, b.mean), (0.1875, 3.0));
            }
            other => panic!("{other:?}"),
        }
    }
}
