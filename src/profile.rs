//! What an engine returns: a [`Profile`], the typed per-layer table of one stack keyed by
//! [`Metric`], layer and source; and the tidy [`Row`] it becomes in tables.
//!
//! Row columns, in order ([`crate::output::table::COLUMNS`]):
//! `preset,engine,depth,layer,source,metric,value,stderr,ci_low,ci_high,n`. `source` is j
//! (0 = x_0) for `coef` and `branch_weight`, the path length k for `path_len`, empty otherwise;
//! `stderr,ci_low,ci_high,n` are empty for exact (closed-form) values.

use crate::metrics::Metric;
use crate::monte_carlo::stats::Estimate;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Which engine produced a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EngineKind {
    /// The closed form (infinite width, exact).
    Theory,
    /// Monte Carlo over sampled finite-width networks (estimates with intervals).
    Mc,
}

impl EngineKind {
    /// Every engine.
    pub const ALL: [EngineKind; 2] = [EngineKind::Theory, EngineKind::Mc];

    /// The name in the `engine` column.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Theory => "theory",
            EngineKind::Mc => "mc",
        }
    }

    /// The engine with column name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One value of a profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An exact (closed-form) value.
    Exact(f64),
    /// A Monte Carlo estimate with its standard error and 95% interval.
    Estimate(Estimate),
}

/// `(metric, layer, source)`: the key of a profile entry.
pub type Key = (Metric, usize, Option<usize>);

/// The per-layer table of one stack from one engine.
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
}

impl Profile {
    /// An empty profile.
    pub fn new(engine: EngineKind, preset: &str, depth: usize) -> Self {
        Profile {
            engine,
            preset: preset.to_string(),
            depth,
            values: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// The tidy rows, in key order.
    pub fn rows(&self) -> Vec<Row> {
        self.values
            .iter()
            .map(|(&(metric, layer, source), v)| {
                let mut r = Row {
                    preset: self.preset.clone(),
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
                };
                match v {
                    Value::Exact(x) => r.value = *x,
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
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Preset name.
    pub preset: String,
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
}

impl Row {
    /// The 95% interval `(ci_low, ci_high)`; an exact row's is the point itself.
    pub fn interval(&self) -> (f64, f64) {
        (
            self.ci_low.unwrap_or(self.value),
            self.ci_high.unwrap_or(self.value),
        )
    }

    /// The sort key: the columns in order as written (names compared as text, numbers as
    /// numbers, an empty source first).
    pub fn key_cmp(&self, other: &Self) -> Ordering {
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
