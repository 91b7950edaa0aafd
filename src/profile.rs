//! The tidy row shared by both engines, and its sort key.
//!
//! Columns, in order: `preset,engine,depth,layer,source,metric,value,stderr,ci_low,ci_high,n`.
//! `source` is j (0 = x_0) for `coef` and `branch_weight`, the path length k for `path_len`,
//! empty otherwise; `stderr,ci_low,ci_high,n` are empty for exact (closed-form) values.

use std::cmp::Ordering;

/// One tidy row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Preset name.
    pub preset: String,
    /// `theory` or `mc`.
    pub engine: &'static str,
    /// Depth L of the stack.
    pub depth: u64,
    /// Layer l in 0..=L.
    pub layer: u64,
    /// Source j or path length k, where the metric has one.
    pub source: Option<u64>,
    /// Metric name (see [`crate::metrics::Metric`]).
    pub metric: &'static str,
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
    /// An exact (closed-form) row.
    pub fn exact(
        preset: &str,
        depth: usize,
        layer: usize,
        source: Option<usize>,
        metric: &'static str,
        value: f64,
    ) -> Self {
        Row {
            preset: preset.to_string(),
            engine: "theory",
            depth: depth as u64,
            layer: layer as u64,
            source: source.map(|s| s as u64),
            metric,
            value,
            stderr: None,
            ci_low: None,
            ci_high: None,
            n: None,
        }
    }

    /// The 95% interval `(ci_low, ci_high)`; an exact row's is the point itself.
    pub fn interval(&self) -> (f64, f64) {
        (
            self.ci_low.unwrap_or(self.value),
            self.ci_high.unwrap_or(self.value),
        )
    }

    /// The sort key: the columns in order, numbers compared as numbers, an empty source first.
    pub fn key_cmp(&self, other: &Self) -> Ordering {
        (
            &self.preset,
            self.engine,
            self.depth,
            self.layer,
            self.source,
            self.metric,
        )
            .cmp(&(
                &other.preset,
                other.engine,
                other.depth,
                other.layer,
                other.source,
                other.metric,
            ))
    }
}

/// Sorts rows by key (stable, so equal keys keep their order).
pub fn sort_rows(rows: &mut [Row]) {
    rows.sort_by(Row::key_cmp);
}
