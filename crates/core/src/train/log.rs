//! The training log as a tidy long table: the settings a value was computed under, then
//! `seed, step, layer, param, metric, value` (one value per row, the conventions of the other
//! tables: empty where a column does not apply, never a non-finite value). CSV, or typed
//! Parquet for a `.parquet` path ([`crate::output::table::Format`]).
//!
//! The float type: an f32 run's log (`--precision f32`) has one more column,
//! [`PRECISION_COLUMN`] (`f32`), after `batch`; an f64 log (the default) has exactly
//! [`COLUMNS`], as before the f32 path existed, so f64 logs are byte-identical to theirs.
//!
//! The architecture: an encoder-decoder run's log (`--arch encoder-decoder`) has one more
//! column, [`PART_COLUMN`], after `layer`: `encoder` or `decoder` for a row with a layer
//! ([`crate::train::seq2seq::part`]), empty otherwise; its `depth` is the model's blocks in
//! all, `5 N` (`--layers N`). A decoder-only log has no such column.

use super::config::{Arch, TrainConfig};
use super::run::Record;
use super::seq2seq;
use crate::monte_carlo::precision::Precision;
use crate::output::table::column;
use crate::placement;
use polars::prelude::*;

/// The columns, in order.
pub const COLUMNS: [&str; 20] = [
    "preset",
    "label",
    "task",
    "branch",
    "norm",
    "width",
    "depth",
    "heads",
    "optimizer",
    "lr",
    "schedule",
    "warmup",
    "steps",
    "batch",
    "seed",
    "step",
    "layer",
    "param",
    "metric",
    "value",
];

/// The column an f32 log adds after `batch`: the float type the run computed in.
pub const PRECISION_COLUMN: &str = "precision";

/// The column an encoder-decoder log adds after `layer`: the stack of the row's layer.
pub const PART_COLUMN: &str = "part";

/// The log of a request's runs as a data frame (rows in the order given), with the
/// [`PRECISION_COLUMN`] after `batch` unless the run was f64.
pub fn frame(cfg: &TrainConfig, records: &[Record]) -> crate::Result<DataFrame> {
    let n = records.len();
    let label = |p: &str| {
        placement::find(p)
            .map(|x| x.label.to_string())
            .unwrap_or_default()
    };
    let s = &cfg.schedule;
    let mut cols = vec![
        column(COLUMNS[0], records.iter().map(|r| r.preset.clone())),
        column(COLUMNS[1], records.iter().map(|r| label(&r.preset))),
        column(
            COLUMNS[2],
            std::iter::repeat_n(cfg.task.kind.name().to_string(), n),
        ),
        column(
            COLUMNS[3],
            std::iter::repeat_n(cfg.mc.kind.name().to_string(), n),
        ),
        column(
            COLUMNS[4],
            std::iter::repeat_n(norm_setting(&cfg.mc.model), n),
        ),
        column(
            COLUMNS[5],
            std::iter::repeat_n(cfg.mc.model.branch.width as u64, n),
        ),
        column(
            COLUMNS[6],
            std::iter::repeat_n(cfg.mc.model.depth as u64, n),
        ),
        column(COLUMNS[7], std::iter::repeat_n(cfg.mc.heads as u64, n)),
        column(
            COLUMNS[8],
            std::iter::repeat_n(cfg.optimizer.name().to_string(), n),
        ),
        column(COLUMNS[9], std::iter::repeat_n(s.peak, n)),
        column(
            COLUMNS[10],
            std::iter::repeat_n(s.decay.name().to_string(), n),
        ),
        column(COLUMNS[11], std::iter::repeat_n(s.warmup, n)),
        column(COLUMNS[12], std::iter::repeat_n(s.steps, n)),
        column(COLUMNS[13], std::iter::repeat_n(cfg.batch as u64, n)),
        column(COLUMNS[14], records.iter().map(|r| r.seed)),
        column(COLUMNS[15], records.iter().map(|r| r.step)),
        column(
            COLUMNS[16],
            records.iter().map(|r| r.layer.map(|l| l as u64)),
        ),
        column(COLUMNS[17], records.iter().map(|r| r.param.clone())),
        column(COLUMNS[18], records.iter().map(|r| r.metric.to_string())),
        column(COLUMNS[19], records.iter().map(|r| r.value)),
    ];
    if let Arch::EncoderDecoder { layers } = cfg.arch {
        let at = COLUMNS
            .iter()
            .position(|c| *c == "layer")
            .expect("a layer column")
            + 1;
        let part = |l: Option<usize>| l.map(|l| seq2seq::part(layers, l).name().to_string());
        cols.insert(
            at,
            column(PART_COLUMN, records.iter().map(|r| part(r.layer))),
        );
    }
    if cfg.mc.precision != Precision::F64 {
        let at = COLUMNS
            .iter()
            .position(|c| *c == "batch")
            .expect("a batch column")
            + 1;
        cols.insert(
            at,
            column(
                PRECISION_COLUMN,
                std::iter::repeat_n(cfg.mc.precision.name().to_string(), n),
            ),
        );
    }
    Ok(DataFrame::new_infer_height(cols)?)
}

/// The `norm` column of a training log: the norm's name, with GroupNorm's groups
/// (`group:G=8`) as the Monte Carlo tables write it (the batch has a column of its own).
fn norm_setting(m: &crate::model::ModelConfig) -> String {
    match m.norm {
        crate::spec::NormKind::Group => format!("group:G={}", m.groups),
        other => other.name().to_string(),
    }
}
