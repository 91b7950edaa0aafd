//! Tidy tables of many presets from either engine: each stack is built once
//! ([`ModelConfig::stack`]) and profiled ([`crate::engine::Engine`]), and the profiles become
//! rows. The CLI's `theory` and `mc`, the analyses and the tests call these.

use crate::closed_form::ClosedForm;
use crate::closed_form::estimate_rows;
use crate::engine::{Engine, Plan};
use crate::layers::LayerSpec;
use crate::metrics::Metric;
use crate::model::{ModelConfig, TheoryConfig};
use crate::monte_carlo::{McConfig, MonteCarlo};
use crate::output::progress::DelayedBar;
use crate::placement::Preset;
use crate::profile::Row;
use crate::{Error, Result};

/// Refuse tables larger than this many rows (ask for fewer layers or metrics instead).
pub const MAX_ROWS: u128 = 20_000_000;

/// Rows of every preset from `engine`; notes on skipped metrics and missing values go to
/// `notes`.
///
/// A preset whose computation fails numerically ([`Error::is_numerical`]: an overflow beyond
/// f64 even in log space, or a quantity undefined for its stack) does not discard the other
/// presets: its cells are written as missing with the error as the reason, and a note names
/// it. Only when every preset fails is the (first) error returned.
pub fn rows(
    engine: &dyn Engine,
    model: &ModelConfig,
    presets: &[&'static Preset],
    plan: &Plan,
    notes: &mut Vec<String>,
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for p in presets {
        let spec = model.stack(p)?;
        match engine.profile(&spec, plan) {
            Ok(profile) => {
                notes.extend(profile.notes.iter().cloned());
                out.extend(profile.rows());
            }
            Err(e) if e.is_numerical() => {
                let layers = plan.resolve(spec.depth)?;
                let reason = e.to_string();
                let setup = std::sync::Arc::new(engine.setup(&spec));
                notes.push(format!("{p}: every value written as missing ({reason})"));
                out.extend(plan.cells(&layers, spec.depth).into_iter().map(|cell| {
                    Row::missing(
                        p.name,
                        &setup,
                        engine.kind(),
                        spec.depth,
                        cell,
                        reason.clone(),
                    )
                }));
                failed.push(e);
            }
            Err(e) => return Err(e),
        }
    }
    if failed.len() == presets.len()
        && let Some(e) = failed.into_iter().next()
    {
        return Err(e);
    }
    Ok(out)
}

/// The closed-form table of a `theory` request, refusing tables over [`MAX_ROWS`] rows.
pub fn theory_rows(cfg: &TheoryConfig, notes: &mut Vec<String>) -> Result<Vec<Row>> {
    let depth = cfg.model.depth;
    let count = cfg.layers.max_count(depth);
    let probe = crate::closed_form::keep(&cfg.metrics, &[]);
    let costs = crate::closed_form::cost::presets_block_seconds(&cfg.model, &cfg.presets)?;
    crate::budget::check_closed_form_plan(depth, &probe, count, &costs)?;
    check_stacks(&cfg.presets, depth, |depth| {
        crate::budget::closed_form_plan_bytes(depth, &probe, count)
    })?;
    if count > MAX_ROWS {
        return Err(Error::invalid(
            "--layers",
            format!("{count} layers"),
            format!(
                "at most {MAX_ROWS} rows per table: pick fewer layers (e.g. --layers log:20 or last)"
            ),
        ));
    }
    // Only BatchNorm's closed form reads the batch: a batch for another norm would be
    // silently ignored.
    if cfg.batch > 1 {
        for p in &cfg.presets {
            let spec = cfg.model.stack(p)?;
            crate::engine::refusal::refused(crate::engine::refusal::NormUse::ClosedFormBatch {
                spec: &spec,
                batch: cfg.batch,
            })?;
        }
    }
    let layers = cfg.layers.resolve(depth)?;
    let estimate = estimate_rows(&cfg.metrics, &layers) * cfg.presets.len() as u128;
    if estimate > MAX_ROWS {
        return Err(Error::invalid(
            "--layers",
            format!("{} layers", layers.len()),
            format!(
                "at most {MAX_ROWS} rows per table; this selection would write up to {estimate} (coef, branch_weight and path_len have O(l) rows per layer): pick fewer layers (e.g. --layers log:20 or last) or metrics"
            ),
        ));
    }
    let plan = Plan {
        metrics: cfg.metrics.clone(),
        layers: cfg.layers.clone(),
        path_len_explicit: cfg.path_len_explicit,
    };
    let mut out = rows(
        &ClosedForm::new(&cfg.model).with_batch(cfg.batch),
        &cfg.model,
        &cfg.presets,
        &plan,
        notes,
    )?;
    if let Some(d) = cfg.finite_width {
        crate::closed_form::finite_width::apply(&mut out, &cfg.model, &cfg.presets, d, notes)?;
    }
    Ok(out)
}

/// Monte Carlo rows of every preset, with a progress bar on long runs; notes (missing values)
/// go to `notes`.
pub fn mc_rows(
    presets: &[&'static Preset],
    cfg: &McConfig,
    metrics: &[Metric],
    layers: &LayerSpec,
    notes: &mut Vec<String>,
) -> Result<Vec<Row>> {
    check_mc_fits(cfg, metrics, layers)?;
    let depth = cfg.model.depth;
    let selected = crate::monte_carlo::size::Selected::of(&layers.resolve(depth)?);
    crate::monte_carlo::size::check_mc_work(cfg, depth, metrics, &selected, presets.len())?;
    check_stacks(presets, depth, |depth| {
        crate::monte_carlo::size::mc_bytes(cfg, depth, metrics, 0)
    })?;
    let bar = DelayedBar::networks((cfg.samples * presets.len()) as u64);
    let engine = MonteCarlo {
        cfg,
        progress: &bar,
    };
    let plan = Plan::new(metrics, layers.clone());
    let rows = rows(&engine, &cfg.model, presets, &plan, notes);
    bar.finish();
    rows
}

/// Refuses a Monte Carlo run of `cfg` (one preset) that cannot fit in memory or would take
/// more than [`crate::budget::MAX_WORK`] ([`crate::budget`]).
pub fn check_mc_fits(cfg: &McConfig, metrics: &[Metric], layers: &LayerSpec) -> Result<()> {
    let depth = cfg.model.depth;
    // The networks first: a depth too large for them is refused before the layers are listed.
    crate::monte_carlo::size::check_mc(cfg, depth, metrics, 0)?;
    let resolved = layers.resolve(depth)?;
    let rows = estimate_rows(metrics, &resolved);
    let selected = crate::monte_carlo::size::Selected::of(&resolved);
    drop(resolved);
    crate::monte_carlo::size::check_mc_selected(cfg, depth, metrics, rows, &selected)?;
    crate::monte_carlo::size::check_mc_work(cfg, depth, metrics, &selected, 1)
}

/// The canonical names of `presets`, comma-separated (as `--preset` takes them).
pub fn names(presets: &[&Preset]) -> String {
    presets.iter().map(|p| p.name).collect::<Vec<_>>().join(",")
}

/// Refuses presets whose stacks at `depth` (a placement file's can hold one segment per
/// block, [`crate::budget::stack_bytes`]) do not fit beside the engine's `engine_bytes`.
fn check_stacks(
    presets: &[&'static Preset],
    depth: usize,
    engine_bytes: impl Fn(usize) -> u128,
) -> Result<()> {
    let stacks = crate::budget::stacks_bytes(presets, depth)?;
    crate::budget::check(
        stacks.saturating_add(engine_bytes(depth)),
        &format!("building --preset {} at depth {depth}", names(presets)),
        "--depth, or use presets whose placement-file scales do not depend on the block index l",
    )
}
