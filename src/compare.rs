//! `normscope compare`: the closed form against Monte Carlo, a typed join of the two engines'
//! profiles of the same stack, key by key, with the finite-width allowance of each metric
//! ([`crate::metrics::allowance`]) stated before the comparison is run.

use crate::branch::Block;
use crate::engine::{Engine, Plan};
use crate::layers::LayerSpec;
use crate::metrics::{Metric, allowance};
use crate::monte_carlo::{McConfig, MonteCarlo};
use crate::output::progress::DelayedBar;
use crate::profile::{Row, Value};
use crate::theory::ClosedForm;
use crate::{Error, Result};

/// One row of `normscope compare`: the Monte Carlo row (preset, layer, source, metric,
/// estimate, interval) with the closed form next to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Closed form.
    pub theory: f64,
    /// Monte Carlo estimate and its interval.
    pub mc: Row,
    /// `mc - theory`.
    pub diff: f64,
    /// Finite-width allowance (see [`crate::metrics::allowance`]).
    pub allowance: f64,
    /// Whether the closed form lies in `[ci_low - allowance, ci_high + allowance]`.
    pub agree: bool,
}

/// Runs both engines on every preset's stack and compares them where both have a value
/// (cells where either is missing are counted in a note, not compared).
pub fn compare(
    presets: &[String],
    cfg: &McConfig,
    metrics: &[Metric],
    layers: &LayerSpec,
    notes: &mut Vec<String>,
) -> Result<Vec<Comparison>> {
    if (1..=2).any(|l| cfg.block(l) == Block::Attention { uniform: false }) {
        return Err(Error::Unsupported(
            "the closed form has no softmax attention (random W_Q, W_K); compare with --uniform or --branch uniform-attention".into(),
        ));
    }
    crate::tables::check_mc_fits(cfg, metrics, layers)?;
    let probe = crate::theory::closed_form::keep(metrics, &[]);
    let kept = layers.max_count(cfg.model.depth);
    crate::budget::check_closed_form_plan(cfg.model.depth, &probe, kept, presets.len())?;
    let plan = Plan::new(metrics, layers.clone());
    let bar = DelayedBar::networks((cfg.samples * presets.len()) as u64);
    let mc_engine = MonteCarlo {
        cfg,
        progress: &bar,
    };
    let theory_engine = ClosedForm::new(&cfg.model);
    let mut out = Vec::new();
    for p in presets {
        let spec = cfg.model.stack(p)?;
        let mc = mc_engine.profile(&spec, &plan)?;
        let theory = theory_engine.profile(&spec, &plan)?;
        notes.extend(mc.notes.iter().chain(&theory.notes).cloned());
        let rows = mc.rows();
        let mut missing = 0;
        for ((key, _), row) in mc.values.iter().zip(rows) {
            let Some(&Value::Exact(t)) = theory.values.get(key) else {
                missing += usize::from(theory.values.contains_key(key));
                continue;
            };
            if row.missing.is_some() {
                missing += 1;
                continue;
            }
            let a = allowance::allowance(&spec, key.0, key.1, t, cfg.model.branch.width);
            let (lo, hi) = row.interval();
            out.push(Comparison {
                theory: t,
                diff: row.value - t,
                allowance: a,
                agree: t >= lo - a && t <= hi + a,
                mc: row,
            });
        }
        if missing > 0 {
            notes.push(format!(
                "{p}: {missing} cell(s) not compared (missing in one engine)"
            ));
        }
    }
    bar.finish();
    Ok(out)
}

/// The `compare` table:
/// `preset`, the settings and engine columns of the Monte Carlo rows
/// ([`crate::output::table::setup_columns`]), then
/// `depth,layer,source,metric,theory,mc,stderr,ci_low,ci_high,n,diff,allowance,agree`.
pub fn compare_frame(rows: &[Comparison]) -> Result<polars::prelude::DataFrame> {
    use crate::output::table::{col, column};
    use polars::prelude::*;
    let mc = |f: fn(&Row) -> Option<f64>| rows.iter().map(|r| f(&r.mc)).collect::<Vec<_>>();
    let refs: Vec<&Row> = rows.iter().map(|r| &r.mc).collect();
    let mut cols = vec![column(
        col::PRESET,
        rows.iter().map(|r| r.mc.preset.as_str()),
    )];
    // The settings are the Monte Carlo run's (the closed form's are a subset of them).
    cols.extend(crate::output::table::setup_columns(&refs));
    cols.extend([
        column(col::DEPTH, rows.iter().map(|r| r.mc.depth)),
        column(col::LAYER, rows.iter().map(|r| r.mc.layer)),
        column(col::SOURCE, rows.iter().map(|r| r.mc.source)),
        column(col::METRIC, rows.iter().map(|r| r.mc.metric.name())),
        column(
            crate::profile::EngineKind::Theory.name(),
            rows.iter().map(|r| r.theory),
        ),
        column(
            crate::profile::EngineKind::Mc.name(),
            rows.iter().map(|r| r.mc.value),
        ),
        Column::new(col::STDERR.into(), mc(|r| r.stderr)),
        Column::new(col::CI_LOW.into(), mc(|r| r.ci_low)),
        Column::new(col::CI_HIGH.into(), mc(|r| r.ci_high)),
        column(col::N, rows.iter().map(|r| r.mc.n)),
        column("diff", rows.iter().map(|r| r.diff)),
        column("allowance", rows.iter().map(|r| r.allowance)),
        column("agree", rows.iter().map(|r| r.agree)),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// The `compare` table ([`compare_frame`]) as CSV bytes.
pub fn compare_csv(rows: &[Comparison]) -> Result<Vec<u8>> {
    crate::output::table::Format::Csv.encode(&mut compare_frame(rows)?)
}
