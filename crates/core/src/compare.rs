//! `normscope compare`: the closed form against Monte Carlo, a typed join of the two engines'
//! profiles of the same stack, key by key, with the finite-width allowance of each metric
//! ([`crate::metrics::allowance`]) stated before the comparison is run.
//!
//! Each comparison gets a [`Status`]: `agree` when the closed form lies within the Monte Carlo
//! interval widened by the allowance, `disagree` when it does not, and `uninformative` when the
//! allowance exceeds [`UNINFORMATIVE_FRACTION`] of the closed form's magnitude (the band then
//! admits deviations of that order, so "agree" would say little). A zero closed form is judged
//! on the absolute band. Separately, `ci_covers_theory` flags Monte Carlo intervals that miss the
//! closed form even where the allowance covers it, and `estimator` says which Monte Carlo
//! estimator produced the row (`path_len`/`eff_depth`: the exact path polynomial up to
//! `--path-max` blocks, the factorized estimator beyond). With `--finite-width` the closed form
//! of `grad_sq` and `weight_grad_sq` carries its leading 1/d correction at the Monte Carlo width
//! ([`crate::theory::finite_width`]) where one is derived.

use crate::branch::Block;
use crate::branch::BranchModel;
use crate::closed_form::ClosedForm;
use crate::engine::refusal::{NormUse, reason};
use crate::engine::{Engine, Plan};
use crate::layers::LayerSpec;
use crate::metrics::{Metric, allowance};
use crate::monte_carlo::{McConfig, MonteCarlo};
use crate::output::progress::DelayedBar;
use crate::profile::{Row, Value};
use crate::theory::finite_width as fw;
use crate::{Error, Result};

/// One row of `normscope compare`: the Monte Carlo row (preset, layer, source, metric,
/// estimate, interval) with the closed form next to it.
///
/// # Examples
///
/// A tiny comparison (depth 2, width 8, 4 tokens, 2 networks) of Post-LN's stream, whose
/// closed form is 1 and whose sampled values are 1 up to the norm's epsilon:
///
/// ```rust
/// use normscope_core::compare::compare;
/// use normscope_core::layers::LayerSpec;
/// use normscope_core::metrics::Metric;
/// use normscope_core::model::RawModel;
/// use normscope_core::monte_carlo::{McConfig, RawMc};
/// let raw = RawModel { depth: 2, width: 8, tokens: 4, ..RawModel::default() };
/// let cfg = McConfig::new(&raw, &RawMc { samples: 2, ..RawMc::default() })?;
/// let mut notes = Vec::new();
/// let rows = compare(&[normscope_core::placement::find("post")?], &cfg, &[Metric::StreamSq], &LayerSpec::Last, false, &mut notes)?;
/// assert_eq!(rows.len(), 1);
/// let c = &rows[0];
/// assert_eq!((c.theory, c.mc.layer, c.mc.n), (1.0, 2, Some(2)));
/// assert_eq!(c.diff, c.mc.value - c.theory);
/// assert!((c.mc.value - 1.0).abs() < 1e-3); // LayerNorm's eps = 1e-5 lowers it slightly
/// assert!(!c.corrected);
/// # Ok::<(), normscope_core::Error>(())
/// ```
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
    /// `allowance / |theory|` (infinite for a zero closed form).
    pub relative_allowance: f64,
    /// Agree, disagree or uninformative.
    pub status: Status,
    /// Whether the Monte Carlo interval itself contains the closed form.
    pub ci_covers_theory: bool,
    /// The Monte Carlo estimator that produced the row.
    pub estimator: &'static str,
    /// Whether `theory` carries the leading finite-width correction.
    pub corrected: bool,
}

/// An allowance above this fraction of `|theory|` makes a comparison uninformative: the band
/// then admits a deviation of half the value (a factor 1.5 or 0.5), larger than the effects the
/// analyses report.
pub const UNINFORMATIVE_FRACTION: f64 = 0.5;

/// The outcome of one comparison.
///
/// # Examples
///
/// ```rust
/// use normscope_core::compare::Status;
/// assert_eq!(Status::of(1.0, (0.9, 1.1), 0.0), Status::Agree);
/// assert_eq!(Status::of(1.0, (1.1, 1.3), 0.25), Status::Agree); // 1.1 - 0.25 <= 1
/// assert_eq!(Status::of(1.0, (1.2, 1.3), 0.0), Status::Disagree);
/// // An allowance above half of |theory| says little.
/// assert_eq!(Status::of(1.0, (0.9, 1.1), 0.6), Status::Uninformative);
/// assert_eq!(Status::Uninformative.name(), "uninformative");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Within the interval plus the allowance, and the allowance is informative.
    Agree,
    /// Outside the interval plus the allowance.
    Disagree,
    /// Within the band, but the allowance exceeds [`UNINFORMATIVE_FRACTION`] of the value.
    Uninformative,
}

impl Status {
    /// The name in the `status` column.
    pub fn name(self) -> &'static str {
        match self {
            Status::Agree => "agree",
            Status::Disagree => "disagree",
            Status::Uninformative => "uninformative",
        }
    }

    /// The status of a closed form `theory` against an interval `(lo, hi)` and `allowance`.
    pub fn of(theory: f64, (lo, hi): (f64, f64), allowance: f64) -> Status {
        if !(theory >= lo - allowance && theory <= hi + allowance) {
            Status::Disagree
        } else if theory != 0.0 && allowance > UNINFORMATIVE_FRACTION * theory.abs() {
            Status::Uninformative
        } else {
            Status::Agree
        }
    }
}

/// The Monte Carlo estimator of `metric` at `depth` with `path_max` ([`crate::metrics::Info::estimator`]).
pub fn estimator(metric: Metric, depth: usize, path_max: usize) -> &'static str {
    metric.info().estimator(depth, path_max)
}

/// The summary line of a comparison table: each status counted, the fraction used, and the
/// Monte Carlo intervals that miss the closed form inside the allowance.
pub fn summary(rows: &[Comparison]) -> String {
    let count = |s: Status| rows.iter().filter(|r| r.status == s).count();
    let missed = rows
        .iter()
        .filter(|r| r.agree && !r.ci_covers_theory)
        .count();
    format!(
        "{} comparisons: {} agree, {} disagree, {} uninformative (allowance > {} of |theory|); {} Monte Carlo intervals miss the closed form inside the allowance",
        rows.len(),
        count(Status::Agree),
        count(Status::Disagree),
        count(Status::Uninformative),
        UNINFORMATIVE_FRACTION,
        missed
    )
}

/// Runs both engines on every preset's stack and compares them where both have a value
/// (cells where either is missing are counted in a note, not compared). With `finite_width`,
/// the closed form carries its leading finite-width correction at the Monte Carlo width where
/// one is derived (a note names what is left uncorrected).
pub fn compare(
    presets: &[&'static crate::placement::Preset],
    cfg: &McConfig,
    metrics: &[Metric],
    layers: &LayerSpec,
    finite_width: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Comparison>> {
    if (1..=2).any(|l| cfg.block(l) == Block::Attention { uniform: false }) {
        return Err(Error::Unsupported(
            "the closed form has no softmax attention (random W_Q, W_K); compare with --uniform or --branch uniform-attention".into(),
        ));
    }
    crate::tables::check_mc_fits(cfg, metrics, layers)?;
    let probe = crate::closed_form::keep(metrics, &[]);
    let kept = layers.max_count(cfg.model.depth);
    let costs = crate::closed_form::cost::presets_block_seconds(&cfg.model, presets)?;
    crate::budget::check_closed_form_plan(cfg.model.depth, &probe, kept, &costs)?;
    let plan = Plan::new(metrics, layers.clone());
    let bar = DelayedBar::networks((cfg.samples * presets.len()) as u64);
    let mc_engine = MonteCarlo {
        cfg,
        progress: &bar,
    };
    let theory_engine = ClosedForm::new(&cfg.model).with_batch(cfg.batch);
    // Every stack must have a closed form before any network is drawn.
    for p in presets {
        theory_engine.check(&cfg.model.stack(p)?)?;
    }
    let mut out = Vec::new();
    for p in presets {
        let spec = cfg.model.stack(p)?;
        let mc = mc_engine.profile(&spec, &plan)?;
        let theory = theory_engine.profile(&spec, &plan)?;
        notes.extend(mc.notes.iter().chain(&theory.notes).cloned());
        let width = cfg.model.branch.width;
        let correction = if finite_width {
            match reason(NormUse::FiniteWidth {
                spec: &spec,
                branch: cfg.model.branch.kind,
            }) {
                None => {
                    notes.extend(fw::unchecked(spec.depth, width));
                    let m = &cfg.model;
                    let b = BranchModel::new(&m.branch, spec.beta, m.inputs.q0, m.inputs.c0);
                    Some(fw::correction(&spec, &b, width))
                }
                Some(why) => {
                    notes.push(format!(
                        "--finite-width: {p} is compared uncorrected: no correction is derived for {why}"
                    ));
                    None
                }
            }
        } else {
            None
        };
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
            let factor = correction
                .as_ref()
                .and_then(|c| key.0.correction_factor(c, key.1));
            let t = t * factor.unwrap_or(1.0);
            let a = match factor {
                Some(_) => fw::allowance(t, spec.depth, width),
                None => allowance::allowance(&spec, key.0, key.1, t, width),
            };
            let (lo, hi) = row.interval();
            let status = Status::of(t, (lo, hi), a);
            out.push(Comparison {
                theory: t,
                diff: row.value - t,
                allowance: a,
                agree: status != Status::Disagree,
                relative_allowance: a / t.abs(),
                status,
                ci_covers_theory: lo <= t && t <= hi,
                estimator: estimator(key.0, spec.depth, cfg.path_max),
                corrected: factor.is_some(),
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
/// `depth,layer,source,metric,theory,mc,stderr,ci_low,ci_high,n,diff,allowance,`
/// `relative_allowance,agree,status,ci_covers_theory,estimator,theory_corrected` (`agree`: not
/// `disagree`; `theory_corrected`: the closed form carries the finite-width correction).
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
            rows.first()
                .map_or(crate::profile::EngineKind::Mc, |r| r.mc.engine)
                .name(),
            rows.iter().map(|r| r.mc.value),
        ),
        Column::new(col::STDERR.into(), mc(|r| r.stderr)),
        Column::new(col::CI_LOW.into(), mc(|r| r.ci_low)),
        Column::new(col::CI_HIGH.into(), mc(|r| r.ci_high)),
        column(col::N, rows.iter().map(|r| r.mc.n)),
        column("diff", rows.iter().map(|r| r.diff)),
        column("allowance", rows.iter().map(|r| r.allowance)),
        column(
            "relative_allowance",
            rows.iter().map(|r| {
                r.relative_allowance
                    .is_finite()
                    .then_some(r.relative_allowance)
            }),
        ),
        column("agree", rows.iter().map(|r| r.agree)),
        column("status", rows.iter().map(|r| r.status.name())),
        column("ci_covers_theory", rows.iter().map(|r| r.ci_covers_theory)),
        column("estimator", rows.iter().map(|r| r.estimator)),
        column("theory_corrected", rows.iter().map(|r| r.corrected)),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// The `compare` table ([`compare_frame`]) as CSV bytes.
pub fn compare_csv(rows: &[Comparison]) -> Result<Vec<u8>> {
    crate::output::table::Format::Csv.encode(&mut compare_frame(rows)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_separates_uninformative_from_agree() {
        // Inside the band with an allowance below half the value: agree.
        assert_eq!(Status::of(1.0, (0.9, 1.1), 0.4), Status::Agree);
        // Inside, but the allowance (2.03 on a value of 1, the issue's case) exceeds half of it.
        assert_eq!(Status::of(1.0, (1.5, 1.6), 2.03), Status::Uninformative);
        // Outside the interval widened by the allowance.
        assert_eq!(Status::of(1.0, (1.5, 1.6), 0.4), Status::Disagree);
        // A zero closed form is judged on the absolute band.
        assert_eq!(Status::of(0.0, (-0.01, 0.01), 0.03), Status::Agree);
    }

    #[test]
    fn estimator_switches_at_path_max() {
        assert_eq!(
            estimator(Metric::EffDepth, 256, 256),
            "exact path polynomial"
        );
        assert_eq!(estimator(Metric::PathLen, 257, 256), "factorized");
        assert_eq!(estimator(Metric::GradSq, 1000, 256), "direct");
    }
}
