//! The summary `normscope train` prints when it ends: one row per preset, over its seeds, of
//! what became of the runs (read from the log, [`super::run::Record`]).
//!
//! Columns: `preset`, `label`, `seeds` (runs), `diverged` (runs flagged by the divergence rule
//! of [`super::run`]), then the median over the seeds of the final evaluation loss
//! (`final_loss`, the last finite one) and of its excess over the task's floor on the
//! evaluation set (`excess = final_loss - floor`), with the smallest and largest excess
//! (`excess_min`, `excess_max`). The medians are of the runs as they ended, diverged runs
//! included (their last finite loss), so a reader sees the failures in `diverged` and their
//! losses in the spread.

use super::run::Record;
use crate::output::table::column;
use crate::placement::Preset;
use polars::prelude::*;

/// The summary's columns, in order.
pub const COLUMNS: [&str; 8] = [
    "preset",
    "label",
    "seeds",
    "diverged",
    "final_loss",
    "excess",
    "excess_min",
    "excess_max",
];

/// One run's end: `(final evaluation loss, floor, diverged)`.
fn run_end(records: &[&Record]) -> (Option<f64>, Option<f64>, bool) {
    let last = |m: &str| {
        records
            .iter()
            .rev()
            .find(|r| r.metric == m)
            .map(|r| r.value)
    };
    let final_loss = last("eval_loss");
    let floor = last("eval_floor");
    let diverged = last("diverged").is_some_and(|v| v > 0.5);
    (final_loss, floor, diverged)
}

/// The median of `v` (the mean of the middle two for an even count); `None` when empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The summary of a request's log: presets in the order they first appear, each over its
/// seeds, labelled by the request's `resolved` presets (a name not among them is its own
/// label).
///
/// # Examples
///
/// Two seeds of `pre`: final losses 0.5 and 0.75 over a floor of 0.25, one diverged:
///
/// ```rust
/// use normscope_core::train::run::Record;
/// use normscope_core::placement;
/// use normscope_core::train::summary::summary;
/// let rec = |seed, step, metric, value| Record {
///     preset: "pre".into(), seed, step, layer: None, param: None, metric, value,
/// };
/// let log = [
///     rec(0, 0, "eval_floor", 0.25),
///     rec(0, 4, "eval_loss", 0.5),
///     rec(0, 4, "diverged", 0.0),
///     rec(1, 0, "eval_floor", 0.25),
///     rec(1, 4, "eval_loss", 0.75),
///     rec(1, 4, "diverged", 1.0),
/// ];
/// let df = summary(&[placement::find("pre")?], &log)?;
/// let f = |c: &str| df.column(c).unwrap().f64().unwrap().get(0).unwrap();
/// assert_eq!(df.column("diverged")?.u64()?.get(0), Some(1));
/// assert_eq!(f("final_loss"), 0.625); // the median of 0.5 and 0.75
/// assert_eq!((f("excess"), f("excess_min"), f("excess_max")), (0.375, 0.25, 0.5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn summary(resolved: &[&Preset], records: &[Record]) -> crate::Result<DataFrame> {
    let mut presets: Vec<&str> = Vec::new();
    for r in records {
        if !presets.contains(&r.preset.as_str()) {
            presets.push(&r.preset);
        }
    }
    let (mut seeds, mut diverged) = (Vec::new(), Vec::new());
    let (mut loss, mut excess, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in &presets {
        let mut runs: Vec<u64> = records
            .iter()
            .filter(|r| r.preset == *p)
            .map(|r| r.seed)
            .collect();
        runs.sort_unstable();
        runs.dedup();
        let ends: Vec<_> = runs
            .iter()
            .map(|s| {
                let own: Vec<&Record> = records
                    .iter()
                    .filter(|r| r.preset == *p && r.seed == *s)
                    .collect();
                run_end(&own)
            })
            .collect();
        let finals: Vec<f64> = ends.iter().filter_map(|e| e.0).collect();
        let excesses: Vec<f64> = ends.iter().filter_map(|e| Some(e.0? - e.1?)).collect();
        seeds.push(runs.len() as u64);
        diverged.push(ends.iter().filter(|e| e.2).count() as u64);
        loss.push(median(finals));
        lo.push(excesses.iter().copied().min_by(f64::total_cmp));
        hi.push(excesses.iter().copied().max_by(f64::total_cmp));
        excess.push(median(excesses));
    }
    let label = |p: &str| {
        resolved
            .iter()
            .find(|x| x.name == p)
            .map_or_else(|| p.to_string(), |x| x.label.to_string())
    };
    Ok(DataFrame::new_infer_height(vec![
        column(COLUMNS[0], presets.iter().map(|p| p.to_string())),
        column(COLUMNS[1], presets.iter().map(|p| label(p))),
        column(COLUMNS[2], seeds),
        column(COLUMNS[3], diverged),
        column(COLUMNS[4], loss),
        column(COLUMNS[5], excess),
        column(COLUMNS[6], lo),
        column(COLUMNS[7], hi),
    ])?)
}
