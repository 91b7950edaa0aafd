//! The closed-form engine: the mean-field recursion of one stack ([`MeanField`]) and the raw
//! quantities its metrics read ([`Quantities`]), turned into an exact [`Profile`].

use super::layered::Keep;
use super::mean_field::{Inputs, MeanField};
use super::paths::{MAX_PATH_LAYER, SplitPaths};
use crate::branch::{BranchConfig, BranchKind, BranchModel, Init};
use crate::engine::{Engine, Plan};
use crate::metrics::Metric;
use crate::profile::{EngineKind, Profile, Setup, Value};
use crate::spec::StackSpec;
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};

/// The closed form for a branch and an input law.
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

/// What the closed-form metrics read: the recursion, and the path-length quantities that are
/// streamed over depth only when asked for.
pub struct Quantities<'a> {
    /// The recursion.
    pub mf: &'a MeanField,
    /// `eff_depth` at the selected layers (if asked for).
    pub eff_depth: BTreeMap<usize, f64>,
    /// The selected layers whose `eff_depth` is positive though some block's branch share
    /// was below f64's normal range ([`MeanField::path_tiny`]).
    pub eff_depth_tiny: BTreeSet<usize>,
    /// The `path_len` law `(k, P(k))` at the selected layers up to [`MAX_PATH_LAYER`] (if asked
    /// for).
    pub path_laws: BTreeMap<usize, Vec<(usize, f64)>>,
}

impl<'a> Quantities<'a> {
    /// For a metric the recursion carries beyond f64's range (as a magnitude,
    /// [`crate::theory::logsum::Mag`], per source in log space, or as a mean of path lengths
    /// that may fall below f64's normal range; [`crate::metrics::Info::beyond_f64`]): the
    /// reason the value at layer l (source `s`) cannot be written as a number though its
    /// logarithm is exact, `e^x` above f64's largest number or below its smallest positive
    /// normal one (a true zero, log = -inf, is written as 0). `None` for a value in range and
    /// for a metric the recursion keeps as an f64.
    pub fn beyond_f64(&self, m: Metric, l: usize, s: Option<usize>) -> Option<String> {
        m.info().beyond_f64.and_then(|reason| reason(self, l, s))
    }

    /// Computes what `metrics` need at `layers` (sorted); notes on skipped layers go to `notes`.
    pub fn new(
        mf: &'a MeanField,
        metrics: &[Metric],
        layers: &[usize],
        path_len_explicit: bool,
        preset: &str,
        notes: &mut Vec<String>,
    ) -> Result<Self> {
        let mut q = Quantities {
            mf,
            eff_depth: BTreeMap::new(),
            eff_depth_tiny: BTreeSet::new(),
            path_laws: BTreeMap::new(),
        };
        let keeps = Metric::keeps(metrics);
        if keeps.path_law {
            q.path_laws = path_laws(mf, layers, path_len_explicit, preset, notes)?;
        }
        if keeps.mean_path {
            let mut paths = SplitPaths::new(1.0 / mf.tokens);
            let (mut next, mut tiny) = (0, false);
            for l in 0..=mf.depth {
                if l >= 1 {
                    let (a2, bm, bf) = mf.transfer(l)?;
                    paths.push_mean(a2, bm, bf);
                    tiny |= mf.path_tiny[l];
                }
                if layers.get(next) == Some(&l) {
                    q.eff_depth.insert(l, paths.mean_length());
                    if tiny {
                        q.eff_depth_tiny.insert(l);
                    }
                    next += 1;
                }
            }
        }
        Ok(q)
    }
}

/// The exact path-length law at the selected layers, streamed over depth.
fn path_laws(
    mf: &MeanField,
    layers: &[usize],
    explicit: bool,
    preset: &str,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<usize, Vec<(usize, f64)>>> {
    let mut out = BTreeMap::new();
    let Some(&top) = layers.last() else {
        return Ok(out);
    };
    let mut layers = layers.to_vec();
    if top > MAX_PATH_LAYER {
        if explicit {
            return Err(Error::Unsupported(format!(
                "path_len at layer {top}: the exact Poisson-binomial law costs O(l^2) and is computed up to layer {MAX_PATH_LAYER}; select --layers <= {MAX_PATH_LAYER} or drop path_len from --metrics"
            )));
        }
        notes.push(format!(
            "{preset}: path_len skipped for layers > {MAX_PATH_LAYER} (exact law is O(l^2)); eff_depth is still written"
        ));
        layers.retain(|&l| l <= MAX_PATH_LAYER);
    }
    let mut dist = SplitPaths::new(1.0 / mf.tokens);
    let mut next = 0;
    let last = layers.last().copied().unwrap_or(0);
    for l in 0..=last {
        if l >= 1 {
            let (a2, bm, bf) = mf.transfer(l)?;
            dist.push(a2, bm, bf);
        }
        if layers.get(next) == Some(&l) {
            out.insert(l, dist.iter().collect());
            next += 1;
        }
    }
    Ok(out)
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
            norm: Some(spec.norm.name().to_string()),
            width: (b.init == Init::Bert).then_some(b.width as u64),
            tokens: attends.then_some(b.tokens as u64),
            samples: None,
            seed: None,
        }
    }

    fn profile(&self, spec: &StackSpec, plan: &Plan) -> Result<Profile> {
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
            &plan.metrics,
            &layers,
            plan.path_len_explicit,
            &spec.preset,
            &mut profile.notes,
        )?;
        for (m, l) in plan.cells(&layers, spec.depth) {
            m.closed_form(&q, l, &mut |s, v| {
                let value = match q.beyond_f64(m, l, s) {
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

/// Why `e^ln` cannot be written as an f64 though `ln` is exact: above f64's largest number or
/// below its smallest positive normal one; None for a number in range, a true zero
/// (`ln = -inf`) or a NaN `ln` (which the row's own check reports as undefined).
pub fn ln_beyond_f64(ln: f64) -> Option<String> {
    if !ln.is_finite() {
        return None;
    }
    let v = ln.exp();
    let log10 = ln / std::f64::consts::LN_10;
    if v < f64::MIN_POSITIVE {
        Some(format!(
            "underflow: e^{ln:.1} = 10^{log10:.1} is below f64's smallest number (its log is exact)"
        ))
    } else if v.is_infinite() {
        Some(format!(
            "overflow: e^{ln:.1} = 10^{log10:.1} is beyond f64's largest number (its log is exact)"
        ))
    } else {
        None
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
pub fn estimate_rows(metrics: &[Metric], layers: &[usize]) -> u128 {
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
