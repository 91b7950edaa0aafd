//! What an engine returns: a [`Profile`], the typed per-layer table of one stack keyed by
//! [`Metric`], layer and source; and the tidy [`Row`] it becomes in tables.
//!
//! Row columns, in order ([`crate::output::table::COLUMNS`]):
//! `preset,label,engine,branch,init,g,norm,width,tokens,samples,seed,hidden_ratio,heads,alpha,
//! beta,lambda,final_norm,q0,c0,eps,path_max,depth,layer,source,metric,value,stderr,ci_low,
//! ci_high,n,missing`. The settings columns (`label` to `path_max`, a [`Setup`] with its
//! [`ModelSettings`]) say what every row was computed under, so that tables from different analyses
//! can be concatenated and filtered without their file names; a setting that does not apply
//! to the engine is empty. `source` is j
//! (0 = x_0) for `coef` and `branch_weight`, the path length k for `path_len`, empty otherwise;
//! `stderr,ci_low,ci_high,n` are empty for exact (closed-form) values. `missing` is empty for a
//! value; when a quantity could not be computed (it is not finite: beyond f64's range, or 0/0),
//! the value columns are empty and `missing` gives the reason. A non-finite number is never
//! written.

use crate::metrics::Metric;
use normscope_numeric::estimate::Estimate;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most distinct reasons a note of missing values names ([`Profile::settle`]); the others are
/// counted.
pub const NOTE_REASONS: usize = 3;

/// Which engine produced a value.
///
/// # Examples
///
/// ```rust
/// use normscope_core::profile::EngineKind;
/// assert_eq!(EngineKind::McF32.name(), "mc-f32");
/// assert_eq!(EngineKind::from_name("theory-fw"), Some(EngineKind::TheoryFiniteWidth));
/// assert_eq!(EngineKind::from_name("exact"), None);
/// assert_eq!(EngineKind::ALL.len(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EngineKind {
    /// The closed form (infinite width, exact).
    Theory,
    /// Monte Carlo over sampled finite-width networks (estimates with intervals), in f64.
    Mc,
    /// The same Monte Carlo with products and activations in f32 (`mc --precision f32`);
    /// statistics accumulated in f64.
    McF32,
    /// The closed form with its leading finite-width correction at the row's width
    /// ([`crate::theory::finite_width`]; `theory --finite-width d`).
    TheoryFiniteWidth,
}

impl EngineKind {
    /// Every engine.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::Theory,
        EngineKind::Mc,
        EngineKind::McF32,
        EngineKind::TheoryFiniteWidth,
    ];

    /// The name in the `engine` column.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Theory => "theory",
            EngineKind::Mc => "mc",
            EngineKind::McF32 => "mc-f32",
            EngineKind::TheoryFiniteWidth => "theory-fw",
        }
    }

    /// The engine with column name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One value of a profile.
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::profile::{Value, OVERFLOW};
/// assert_eq!(Value::Exact(2.0).non_finite_reason(Metric::StreamSq), None);
/// assert_eq!(
///     Value::Exact(f64::INFINITY).non_finite_reason(Metric::StreamSq).as_deref(),
///     Some(OVERFLOW)
/// );
/// let nan = Value::Exact(f64::NAN).non_finite_reason(Metric::Corr).unwrap();
/// assert!(nan.starts_with("undefined: "));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An exact (closed-form) value.
    Exact(f64),
    /// A Monte Carlo estimate with its standard error and 95% interval.
    Estimate(Estimate),
    /// No value: the quantity is not finite here, for the reason given (written as empty
    /// value columns and the reason in the `missing` column).
    Missing(String),
}

/// Reason for an exact value that is infinite.
pub const OVERFLOW: &str = "overflow: infinite in f64 (a quantity the closed form does not carry in log space, or whose log is infinite too)";
/// Reason for a Monte Carlo estimate whose mean is infinite.
pub(crate) const MC_OVERFLOW: &str = "overflow: a sampled network's value is beyond the range of f64 (lower --q0, --gain, --alpha or --lambda)";
/// Reason for a Monte Carlo estimate whose mean is finite but whose spread is not.
pub(crate) const MC_SPREAD_OVERFLOW: &str =
    "overflow: the samples' variance is beyond the range of f64 (lower --q0 or --gain)";
/// Reason for a Monte Carlo estimate that is 0/0 in some sampled network.
pub const MC_UNDEFINED: &str = "undefined: 0/0, inf - inf or an underflowed denominator (below 1e-280) in a sampled network (a zero, vanishing or overflowing stream or branch output)";

impl Value {
    /// The reason this value cannot be written as a number, if any: it, its standard error or
    /// an end of its interval is not finite. `metric` names the 0/0 case of exact values.
    pub fn non_finite_reason(&self, metric: Metric) -> Option<String> {
        match self {
            Value::Exact(x) if x.is_nan() => {
                Some(format!("undefined: {}", metric.info().undefined))
            }
            Value::Exact(x) if x.is_infinite() => Some(OVERFLOW.to_string()),
            Value::Estimate(e) if e.mean.is_nan() => Some(MC_UNDEFINED.to_string()),
            Value::Estimate(e) if e.mean.is_infinite() => Some(MC_OVERFLOW.to_string()),
            Value::Estimate(e)
                if !(e.stderr.is_finite() && e.ci_low.is_finite() && e.ci_high.is_finite()) =>
            {
                Some(MC_SPREAD_OVERFLOW.to_string())
            }
            _ => None,
        }
    }
}

/// The settings a profile was computed under: the columns `label` to `path_max` of every row
/// (those after `seed` in [`Setup::model`]).
///
/// The closed form is exact at infinite width, so its `width`, `tokens`, `samples` and `seed`
/// are empty, except `width` under BERT's init (whose gain depends on d) and `tokens` for the
/// attention branches (whose kernels depend on n). Monte Carlo fills them all; its `g` is the
/// closed form's gain of the same branch, empty for softmax attention and the Transformer
/// stack, which have none.
///
/// # Examples
///
/// ```rust
/// use normscope_core::profile::Setup;
/// let s = Setup { label: "Pre-LN".into(), width: Some(8), ..Setup::default() };
/// assert_eq!((s.width, s.samples), (Some(8), None));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Setup {
    /// The preset's name in papers (`Post-LN`): the stack's [`crate::spec::StackSpec::label`].
    pub label: String,
    /// Branch F (`linear`, `relu-mlp`, ...).
    pub branch: Option<String>,
    /// Init scheme.
    pub init: Option<String>,
    /// Gain g of the unscaled branch at unit input second moment (docs/theory.md, "Branches").
    pub g: Option<f64>,
    /// Norm kind (`layer`, `rms`, `identity`, ...; [`crate::spec::StackSpec::norm_setting`]).
    pub norm: Option<String>,
    /// Width d.
    pub width: Option<u64>,
    /// Tokens n.
    pub tokens: Option<u64>,
    /// Networks S.
    pub samples: Option<u64>,
    /// Base seed.
    pub seed: Option<u64>,
    /// The model settings beyond the preset ([`ModelSettings`]).
    pub model: ModelSettings,
}

/// The settings of a model that change a row's value besides those [`Setup`] names (built by
/// [`crate::model::ModelConfig::settings`]): the
/// columns `hidden_ratio` to `path_max` of every tidy row ([`crate::output::table::COLUMNS`]).
///
/// Empty (`None`) means "not read here": the hidden ratio of a branch without an MLP, the
/// heads of a per-token branch, the norm epsilon and path cut-off of the closed form (which
/// has no epsilon and evaluates every path exactly). `alpha`, `beta`, `lambda` and
/// `final_norm` are the overrides (`--alpha`, ...): empty keeps the preset's own, which its
/// name fixes (`normscope presets`).
///
/// # Examples
///
/// ```rust
/// use normscope_core::model::RawModel;
/// use normscope_core::profile::ModelSettings;
/// let model = RawModel { alpha: Some(2.0), branch: "linear".into(), ..RawModel::default() }
///     .check()
///     .unwrap();
/// let s: ModelSettings = model.settings();
/// assert_eq!((s.alpha, s.beta, s.q0, s.c0), (Some(2.0), None, Some(1.0), Some(0.0)));
/// assert_eq!(s.hidden_ratio, None); // a linear branch has no hidden layer
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelSettings {
    /// MLP hidden width / d (branches with an MLP: `relu-mlp`, `gelu-mlp`, `transformer`).
    pub hidden_ratio: Option<f64>,
    /// Attention heads (Monte Carlo of a branch that attends).
    pub heads: Option<u64>,
    /// The skip scale alpha of every block (`--alpha`), if overridden.
    pub alpha: Option<f64>,
    /// DeepNet's branch-weight scale beta (`--beta`), if set.
    pub beta: Option<f64>,
    /// The branch multiplier lambda of every block (`--lambda`), if overridden.
    pub lambda: Option<f64>,
    /// The final norm forced `on` or `off` (`--final-norm`), if overridden.
    pub final_norm: Option<String>,
    /// Input second moment q0 = E||x_0||^2 / d.
    pub q0: Option<f64>,
    /// Correlation c0 of two tokens (inputs).
    pub c0: Option<f64>,
    /// Norm epsilon (Monte Carlo).
    pub eps: Option<f64>,
    /// Depth up to which Monte Carlo evaluates the path polynomial exactly (`--path-max`).
    pub path_max: Option<u64>,
}

/// `(metric, layer, source)`: the key of a profile entry.
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::profile::Key;
/// // `coef` at layer 3 from source j = 0; `stream_sq` has no source.
/// let a: Key = (Metric::Coef, 3, Some(0));
/// let b: Key = (Metric::StreamSq, 3, None);
/// assert_eq!(a.2, Some(0));
/// assert!(b < a); // keys sort by metric (registry order), then layer, then source
/// ```
pub type Key = (Metric, usize, Option<usize>);

/// The per-layer table of one stack from one engine.
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::profile::{EngineKind, Profile, Setup, Value, OVERFLOW};
/// let mut p = Profile::new(EngineKind::Theory, "pre", 2, Setup::default());
/// p.values.insert((Metric::StreamSq, 1, None), Value::Exact(2.0));
/// p.values.insert((Metric::StreamSq, 2, None), Value::Exact(f64::INFINITY));
/// // `settle` turns the infinite value into a missing one and notes it.
/// assert_eq!(p.settle(), 1);
/// assert_eq!(p.notes.len(), 1);
/// let rows = p.rows();
/// assert_eq!((rows[0].layer, rows[0].value), (1, 2.0));
/// assert_eq!(rows[1].missing.as_deref(), Some(OVERFLOW));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The engine.
    pub engine: EngineKind,
    /// Preset name of the stack.
    pub preset: String,
    /// Depth L of the stack.
    pub depth: usize,
    /// Values by key, in key order.
    pub values: BTreeMap<Key, Value>,
    /// What was skipped and why (e.g. `path_len` beyond its layer limit).
    pub notes: Vec<String>,
    /// The settings every row carries.
    pub setup: Arc<Setup>,
}

impl Profile {
    /// An empty profile.
    pub fn new(engine: EngineKind, preset: &str, depth: usize, setup: Setup) -> Self {
        Profile {
            engine,
            preset: preset.to_string(),
            depth,
            values: BTreeMap::new(),
            notes: Vec::new(),
            setup: Arc::new(setup),
        }
    }

    /// Writes `metric` as [`Value::Missing`] with `reason` at every layer of `layers` it has
    /// (one row per source `j = 0..=l` for a metric with sources, as a measured one has), for
    /// an engine that has no value of it in this setting.
    pub fn insert_missing(&mut self, metric: Metric, layers: &[usize], reason: &str) {
        for &l in layers
            .iter()
            .filter(|&&l| metric.info().layers.contains(l, self.depth))
        {
            let sources: Vec<Option<usize>> = if metric.has_source() {
                (0..=l).map(Some).collect()
            } else {
                vec![None]
            };
            for s in sources {
                self.values
                    .insert((metric, l, s), Value::Missing(reason.to_string()));
            }
        }
    }

    /// Replaces every value that is not finite by [`Value::Missing`] with its reason (the one
    /// check every engine applies before its values become rows), notes how many values are
    /// missing and why; returns how many it replaced.
    pub fn settle(&mut self) -> usize {
        let mut converted = 0;
        for (&(metric, _, _), v) in self.values.iter_mut() {
            if let Some(reason) = v.non_finite_reason(metric) {
                *v = Value::Missing(reason);
                converted += 1;
            }
        }
        let count = self
            .values
            .values()
            .filter(|v| matches!(v, Value::Missing(_)))
            .count();
        if count > 0 {
            let mut reasons: Vec<&str> = self
                .values
                .values()
                .filter_map(|v| match v {
                    Value::Missing(r) => Some(r.as_str()),
                    _ => None,
                })
                .collect();
            reasons.sort_unstable();
            reasons.dedup();
            // A deep stack's underflows each state their own exponent: the note names the
            // first few reasons and counts the rest (every row's `missing` column has its own).
            let more = reasons.len().saturating_sub(NOTE_REASONS);
            reasons.truncate(NOTE_REASONS);
            let more = if more > 0 {
                format!("; and {more} other reason(s), in each row's missing column")
            } else {
                String::new()
            };
            self.notes.push(format!(
                "{}: {count} value(s) written as missing ({}{more})",
                self.preset,
                reasons.join("; ")
            ));
        }
        converted
    }

    /// The tidy rows, in key order.
    pub fn rows(&self) -> Vec<Row> {
        self.values
            .iter()
            .map(|(&(metric, layer, source), v)| {
                let mut r = Row {
                    preset: self.preset.clone(),
                    setup: self.setup.clone(),
                    engine: self.engine,
                    depth: self.depth as u64,
                    layer: layer as u64,
                    source: source.map(|s| s as u64),
                    metric,
                    value: f64::NAN,
                    stderr: None,
                    ci_low: None,
                    ci_high: None,
                    n: None,
                    missing: None,
                };
                match v {
                    Value::Exact(x) => r.value = *x,
                    Value::Missing(reason) => r.missing = Some(reason.clone()),
                    Value::Estimate(e) => {
                        r.value = e.mean;
                        r.stderr = Some(e.stderr);
                        r.ci_low = Some(e.ci_low);
                        r.ci_high = Some(e.ci_high);
                        r.n = Some(e.n as u64);
                    }
                }
                r
            })
            .collect()
    }
}

/// One tidy row.
///
/// # Examples
///
/// ```rust
/// use normscope_core::metrics::Metric;
/// use normscope_core::profile::{EngineKind, Profile, Setup, Value};
/// use normscope_numeric::estimate::estimate;
/// let mut p = Profile::new(EngineKind::Mc, "post", 3, Setup::default());
/// p.values.insert((Metric::StreamSq, 3, None), Value::Estimate(estimate(&[1.0, 3.0])));
/// let row = &p.rows()[0];
/// assert_eq!((row.preset.as_str(), row.depth, row.layer), ("post", 3, 3));
/// assert_eq!((row.value, row.n), (2.0, Some(2)));
/// assert_eq!(row.finite(), Some(2.0));
/// let (lo, hi) = row.interval();
/// assert!(lo < 2.0 && 2.0 < hi);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Preset name.
    pub preset: String,
    /// The settings it was computed under (shared by a profile's rows).
    pub setup: Arc<Setup>,
    /// The engine.
    pub engine: EngineKind,
    /// Depth L of the stack.
    pub depth: u64,
    /// Layer l in 0..=L.
    pub layer: u64,
    /// Source j or path length k, where the metric has one.
    pub source: Option<u64>,
    /// The metric.
    pub metric: Metric,
    /// Estimate or exact value.
    pub value: f64,
    /// Standard error (Monte Carlo only).
    pub stderr: Option<f64>,
    /// Lower end of the 95% confidence interval (Monte Carlo only).
    pub ci_low: Option<f64>,
    /// Upper end of the 95% confidence interval (Monte Carlo only).
    pub ci_high: Option<f64>,
    /// Number of independent samples (Monte Carlo only).
    pub n: Option<u64>,
    /// Why there is no value (then `value` is NaN and is written empty), see [`Value::Missing`].
    pub missing: Option<String>,
}

impl Row {
    /// A row with no value, for `reason`.
    pub fn missing(
        preset: &str,
        setup: &Arc<Setup>,
        engine: EngineKind,
        depth: usize,
        (metric, layer): (Metric, usize),
        reason: String,
    ) -> Row {
        Row {
            preset: preset.to_string(),
            setup: setup.clone(),
            engine,
            depth: depth as u64,
            layer: layer as u64,
            source: None,
            metric,
            value: f64::NAN,
            stderr: None,
            ci_low: None,
            ci_high: None,
            n: None,
            missing: Some(reason),
        }
    }

    /// The value, unless it is missing.
    pub fn finite(&self) -> Option<f64> {
        self.missing.is_none().then_some(self.value)
    }

    /// The 95% interval `(ci_low, ci_high)`; an exact row's is the point itself.
    pub fn interval(&self) -> (f64, f64) {
        (
            self.ci_low.unwrap_or(self.value),
            self.ci_high.unwrap_or(self.value),
        )
    }

    /// The sort key: the columns in order as written (names compared as text, numbers as
    /// numbers, an empty source first).
    pub(crate) fn key_cmp(&self, other: &Self) -> Ordering {
        (
            &self.preset,
            self.engine.name(),
            self.depth,
            self.layer,
            self.source,
            self.metric.name(),
        )
            .cmp(&(
                &other.preset,
                other.engine.name(),
                other.depth,
                other.layer,
                other.source,
                other.metric.name(),
            ))
    }
}

/// Sorts rows by key (stable, so equal keys keep their order).
pub fn sort_rows(rows: &mut [Row]) {
    rows.sort_by(Row::key_cmp);
}
