//! The finite-width correction applied to closed-form rows (`theory --finite-width d`,
//! `compare --finite-width`): the per-layer factors are derived in
//! [`crate::theory::finite_width`]; here they multiply the rows of the metrics that have one
//! ([`crate::metrics::Info::correction`]).

use crate::Result;
use crate::branch::BranchModel;
use crate::engine::refusal::{NormUse, reason};
use crate::metrics::Metric;
use crate::model::ModelConfig;
use crate::placement::Preset;
use crate::profile::{EngineKind, Row, Setup};
use crate::theory::finite_width::{correction, unchecked};
use std::sync::Arc;

/// Whether `metric` has a derived correction ([`crate::metrics::Info::correction`]).
pub(crate) fn corrected(metric: Metric) -> bool {
    metric.info().correction.is_some()
}

/// Applies the correction at width `d` to the closed-form rows of `grad_sq` and
/// `weight_grad_sq` (their engine becomes [`EngineKind::TheoryFiniteWidth`], their width `d`);
/// other rows stay the d -> infinity closed form. Every preset or metric left uncorrected is
/// named in `notes`. `presets` are the rows' presets, in their order.
pub(crate) fn apply(
    rows: &mut [Row],
    model: &ModelConfig,
    presets: &[&'static Preset],
    d: usize,
    notes: &mut Vec<String>,
) -> Result<()> {
    let presets: Vec<&Preset> = presets
        .iter()
        .copied()
        .filter(|p| rows.iter().any(|r| r.preset == p.name))
        .collect();
    let mut others: Vec<&'static str> = rows
        .iter()
        .filter(|r| !corrected(r.metric))
        .map(|r| r.metric.name())
        .collect();
    others.sort_unstable();
    others.dedup();
    if !others.is_empty() {
        notes.push(format!(
            "--finite-width {d}: no correction is derived for {} (written uncorrected, engine `theory`; the `finite-width` analysis gives their measured deviation)",
            others.join(", ")
        ));
    }
    for p in presets {
        let spec = model.stack(p)?;
        if let Some(why) = reason(NormUse::FiniteWidth {
            spec: &spec,
            branch: model.branch.kind,
        }) {
            notes.push(format!(
                "--finite-width {d}: {p} is written uncorrected: no correction is derived for {why}"
            ));
            continue;
        }
        if let Some(n) = unchecked(spec.depth, d).filter(|n| !notes.contains(n)) {
            notes.push(n);
        }
        let branch = BranchModel::new(&model.branch, spec.beta, model.inputs.q0, model.inputs.c0);
        let c = correction(&spec, &branch, d);
        let mut setup: Option<Arc<Setup>> = None;
        for r in rows
            .iter_mut()
            .filter(|r| r.preset == p.name && r.engine == EngineKind::Theory)
        {
            let Some(f) = r.metric.correction_factor(&c, r.layer as usize) else {
                continue;
            };
            if !r.value.is_finite() {
                continue;
            }
            let s = setup.get_or_insert_with(|| {
                Arc::new(Setup {
                    width: Some(d as u64),
                    ..(*r.setup).clone()
                })
            });
            r.value *= f;
            r.engine = EngineKind::TheoryFiniteWidth;
            r.setup = s.clone();
        }
    }
    Ok(())
}
