//! Turns a [`MeanField`] into tidy rows for the selected metrics and layers.

use super::mean_field::MeanField;
use super::paths::{MAX_PATH_LAYER, SplitPaths};
use crate::metrics::Metric;
use crate::profile::Row;
use crate::{Error, Result};

/// What to write.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Metrics, in any order.
    pub metrics: Vec<Metric>,
    /// Sorted unique layers in 0..=L.
    pub layers: Vec<usize>,
    /// Whether `path_len` was asked for by name (then exceeding [`MAX_PATH_LAYER`] is an error;
    /// with `all` it is skipped with a note).
    pub path_len_explicit: bool,
}

/// Rows of one stack. `notes` collects what was skipped and why.
pub fn rows(
    preset: &str,
    mf: &MeanField,
    sel: &Selection,
    notes: &mut Vec<String>,
) -> Result<Vec<Row>> {
    let depth = mf.depth;
    let mut out = Vec::new();
    for &m in &sel.metrics {
        let name = m.name();
        let push = |out: &mut Vec<Row>, l: usize, src: Option<usize>, v: f64| {
            out.push(Row::exact(preset, depth, l, src, name, v));
        };
        match m {
            Metric::PathLen => path_rows(preset, mf, sel, notes, &mut out)?,
            Metric::EffDepth => {
                let mut paths = SplitPaths::new(1.0 / mf.tokens);
                let mut next = 0;
                for l in 0..=depth {
                    if l >= 1 {
                        let (a2, bm, bf) = mf.transfer(l)?;
                        paths.push_mean(a2, bm, bf);
                    }
                    if sel.layers.get(next) == Some(&l) {
                        push(&mut out, l, None, paths.mean_length());
                        next += 1;
                    }
                }
            }
            _ => {
                for &l in &sel.layers {
                    match m {
                        Metric::StreamSq => push(&mut out, l, None, mf.q[l].value()),
                        Metric::Corr => push(&mut out, l, None, mf.corr[l]),
                        Metric::Coef => {
                            for j in 0..=l {
                                push(&mut out, l, Some(j), mf.coef(l, j));
                            }
                        }
                        Metric::BranchWeight => {
                            for j in 0..=l {
                                push(&mut out, l, Some(j), mf.branch_weight(l, j));
                            }
                        }
                        Metric::GradSq => push(&mut out, l, None, mf.grad[l].value()),
                        Metric::OutputChange => {
                            push(&mut out, l, None, mf.output_change[l].value())
                        }
                        _ if l == 0 => {}
                        Metric::SkipGain => push(&mut out, l, None, mf.skip_gain[l]),
                        Metric::BranchGain => push(&mut out, l, None, mf.branch_gain[l]),
                        Metric::WeightGradSq => push(&mut out, l, None, mf.weight_grad[l].value()),
                        Metric::RelUpdate => push(&mut out, l, None, mf.rel_update[l]),
                        Metric::CosPrev => push(&mut out, l, None, mf.cos_prev[l]),
                        Metric::AngularDist => push(
                            &mut out,
                            l,
                            None,
                            mf.cos_prev[l].clamp(-1.0, 1.0).acos() / std::f64::consts::PI,
                        ),
                        Metric::MergeError if l < depth => {
                            push(&mut out, l, None, mf.merge_error[l])
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    if let Some(bad) = out
        .iter()
        .find(|r| !r.value.is_finite() && !r.value.is_nan())
    {
        return Err(Error::Overflow(format!(
            "{} at layer {} of {preset} is beyond f64",
            bad.metric, bad.layer
        )));
    }
    Ok(out)
}

fn path_rows(
    preset: &str,
    mf: &MeanField,
    sel: &Selection,
    notes: &mut Vec<String>,
    out: &mut Vec<Row>,
) -> Result<()> {
    let Some(&top) = sel.layers.last() else {
        return Ok(());
    };
    let mut layers = sel.layers.clone();
    if top > MAX_PATH_LAYER {
        if sel.path_len_explicit {
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
            for (k, v) in dist.iter() {
                out.push(Row::exact(preset, mf.depth, l, Some(k), "path_len", v));
            }
            next += 1;
        }
    }
    Ok(())
}

/// An upper bound on the number of rows [`rows`] writes, to refuse runaway tables early.
pub fn estimate_rows(sel: &Selection) -> u128 {
    let per_layer: u128 = sel
        .metrics
        .iter()
        .map(|m| if m.has_source() { 0 } else { 1 })
        .sum();
    let with_source = sel.metrics.iter().filter(|m| m.has_source()).count() as u128;
    sel.layers
        .iter()
        .map(|&l| per_layer + with_source * (l as u128 + 1))
        .sum()
}
