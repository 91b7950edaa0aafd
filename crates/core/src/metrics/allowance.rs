//! The finite-width allowance of the closed form, stated before any comparison is run.
//!
//! The closed form is the d -> infinity limit. At width d, a norm's Jacobian
//! `(1/sigma)(P - y y^T/d)` is a projection of rank `d - r` (r = 2 for LayerNorm: the mean
//! and radial directions; r = 1 for RMSNorm; a GroupNorm removes 2 directions from each block
//! of `m = (d/G) seq` entries, `r = 2 G / seq` per token; InstanceNorm and BatchNorm are exact
//! over their columns, and take LayerNorm's r = 2 for the O(1/d) bias of their
//! `1/|P z|^2` over a Gram matrix that fluctuates with the width), so each norm on a Jacobian path scales
//! mean-square gains by `(1 - r/d)`, and the per-token `1/sigma` of each norm fluctuates by
//! `O(1/sqrt d)`, biasing ratios by `O(1/d)` (Jensen). For a metric whose path crosses k
//! norms the leading deviation is `|theory| (1 - (1 - r/d)^k)`; the allowance is twice that
//! plus `2/d` absolute (for shares, correlations and cosines that are O(1)).
//!
//! `rel_update` and `angular_dist` are roots (of `|x_l - x_{l-1}|^2/|x_{l-1}|^2`, and of
//! `2(1 - cos)` for small angles), and a norm acting on an input it has not normalized adds to
//! the *squared* quantity: centering removes the token mean (`1/d` of the squared norm) and
//! fixing the radius moves it by `O(1/(2d))`. For them the allowance is taken on the squared
//! scale, `2 r k / d` with k the norms of block l, and mapped back through the root.

use super::{Metric, Reach, Scale};
use crate::spec::{NormStatistic, StackSpec};

/// Norm slots of block l.
fn norms_in_block(spec: &StackSpec, l: usize) -> usize {
    let b = spec.block(l);
    [b.n_in, b.n_br, b.n_out]
        .iter()
        .filter(|s| s.is_norm())
        .count()
}

/// Number of norms the metric's paths cross at `layer` (its [`Reach`]).
pub fn norms_on_path(spec: &StackSpec, metric: Metric, layer: usize) -> usize {
    let blocks =
        |r: std::ops::RangeInclusive<usize>| r.map(|i| norms_in_block(spec, i)).sum::<usize>();
    let fin = usize::from(spec.final_norm.is_norm());
    match metric.info().reach {
        Reach::Forward => blocks(1..=layer),
        Reach::ForwardToOutput => blocks(1..=layer) + fin,
        Reach::Backward => blocks(layer + 1..=spec.depth) + fin,
        Reach::BackwardThroughBlock => {
            blocks(layer + 1..=spec.depth) + fin + norms_in_block(spec, layer.max(1))
        }
        Reach::Block => norms_in_block(spec, layer.max(1)),
    }
}

/// The allowance for `metric` at `layer` given the closed-form value `theory` at width d.
pub fn allowance(spec: &StackSpec, metric: Metric, layer: usize, theory: f64, d: usize) -> f64 {
    // The directions the norm's Jacobian removes per block of its statistic (LayerNorm 2,
    // RMSNorm 1; DyT is elementwise and removes none).
    let removes = spec.norm.info().removes;
    let r = match spec.norm.statistic() {
        NormStatistic::Token | NormStatistic::Tanh | NormStatistic::Identity => removes,
        // `removes` of the m = (d/G) seq entries of each block, 2 G / seq per token of width d.
        NormStatistic::Groups => {
            removes * spec.layout.groups as f64 / spec.layout.seq.unwrap_or(1) as f64
        }
        // Exact over the columns; over the width, each norm's `1/|P z|^2` reads a Gram
        // matrix that fluctuates by O(1/sqrt d), the same O(1/d) Jensen bias as LayerNorm's.
        NormStatistic::Batch | NormStatistic::Sequence => removes,
    };
    let d = d as f64;
    let t = theory.abs();
    let squared = |x: f64| {
        let kb = norms_in_block(spec, layer.max(1)) as f64;
        (x * x + 2.0 * r * kb / d).sqrt() - x
    };
    match metric.info().scale {
        Scale::Root => squared(t) + 2.0 / d,
        Scale::Angle => {
            let pi = std::f64::consts::PI;
            squared(pi * t) / pi + 2.0 / d
        }
        Scale::Linear => {
            let k = norms_on_path(spec, metric, layer) as f64;
            2.0 * t * (1.0 - (1.0 - r / d).powf(k)) + 2.0 / d
        }
    }
}
