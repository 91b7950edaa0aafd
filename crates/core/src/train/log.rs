//! The training log as a tidy long table: every setting a value was computed under (each
//! flag of `normscope train` that can change it, [`COLUMNS`] up to `precision`), then
//! `seed, step, layer, part, param, metric, value` (one value per row, the conventions of the
//! other tables: empty where a column does not apply, never a non-finite value). CSV, or typed
//! Parquet for a `.parquet` path ([`crate::output::table::Format`]).
//!
//! A setting the run does not read is empty: the task's settings it has not (`vocab` of
//! regression, `noise` of a token task, ..., [`task_reads`]), the hyperparameters of the other
//! optimizers, `clip` without clipping, `groups` outside GroupNorm (folded into `norm`,
//! `group:G=8`). `part` is `encoder` or `decoder` for a row with a layer of an
//! encoder-decoder run (`--arch encoder-decoder`, [`crate::train::seq2seq::part`]), whose
//! `depth` is the model's blocks in all, `5 N` (`--layers N`); empty otherwise.

use super::config::{Arch, TrainConfig};
use super::optim::OptimizerKind;
use super::run::Record;
use super::seq2seq;
use super::task::{TaskConfig, TaskKind};
use crate::output::table::column;
use polars::prelude::*;

/// The columns, in order. The optimizers' hyperparameters (`beta1` to `momentum`) are the
/// registry's flags ([`OptimizerKind::all_flags`], a test keeps them equal).
pub const COLUMNS: [&str; 45] = [
    "preset",
    "label",
    "arch",
    "task",
    "branch",
    "init",
    "hidden_ratio",
    "norm",
    "affine",
    "eps",
    "width",
    "depth",
    "heads",
    "vocab",
    "seq",
    "task_in",
    "task_out",
    "teacher_depth",
    "teacher_width",
    "noise",
    "teacher_temperature",
    "teacher_seed",
    "teacher_rewire",
    "teacher_rewire_seed",
    "optimizer",
    "beta1",
    "beta2",
    "adam_eps",
    "weight_decay",
    "momentum",
    "clip",
    "lr",
    "schedule",
    "warmup",
    "steps",
    "batch",
    "eval_batches",
    "precision",
    "seed",
    "step",
    "layer",
    "part",
    "param",
    "metric",
    "value",
];

/// The column of an optimizer flag: `--adam-eps` is `adam_eps`.
///
/// # Examples
///
/// ```rust
/// use normscope_core::train::log::flag_column;
/// assert_eq!(flag_column("--adam-eps"), "adam_eps");
/// ```
pub fn flag_column(flag: &str) -> String {
    flag.trim_start_matches("--").replace('-', "_")
}

/// The task settings task `kind` reads, by column name: the teacher seed always (it draws the
/// evaluation set), the teacher's shape where there is a teacher, the rest per task.
///
/// # Examples
///
/// ```rust
/// use normscope_core::train::log::task_reads;
/// use normscope_core::train::task::TaskKind;
/// assert!(task_reads(TaskKind::Regression).contains(&"noise"));
/// assert!(!task_reads(TaskKind::Copy).contains(&"teacher_depth"));
/// ```
pub fn task_reads(kind: TaskKind) -> &'static [&'static str] {
    match kind {
        TaskKind::Regression => &[
            "task_in",
            "task_out",
            "teacher_depth",
            "teacher_width",
            "noise",
            "teacher_seed",
        ],
        TaskKind::TeacherLm => &[
            "vocab",
            "seq",
            "teacher_depth",
            "teacher_width",
            "teacher_temperature",
            "teacher_seed",
            "teacher_rewire",
            "teacher_rewire_seed",
        ],
        TaskKind::Copy | TaskKind::Reverse | TaskKind::Sort | TaskKind::ReversePairs => {
            &["vocab", "seq", "teacher_seed"]
        }
    }
}

/// One run-wide setting's value.
enum Setting {
    Text(String),
    Int(Option<u64>),
    Real(Option<f64>),
}

/// The run-wide settings of `cfg`, by column: every column of [`COLUMNS`] from `label`'s
/// successor `arch` to `precision` (the preset and its label are per row).
fn settings(cfg: &TrainConfig) -> Vec<(&'static str, Setting)> {
    use Setting::{Int, Real, Text};
    let t: &TaskConfig = &cfg.task;
    let reads = task_reads(t.kind);
    let int = |name: &'static str, v: usize| (name, Int(reads.contains(&name).then_some(v as u64)));
    let real = |name: &'static str, v: f64| (name, Real(reads.contains(&name).then_some(v)));
    let m = &cfg.mc.model;
    let s = &cfg.schedule;
    let hyper = cfg.optimizer.settings();
    let mut out = vec![
        ("arch", Text(cfg.arch.name().to_string())),
        ("task", Text(t.kind.name().to_string())),
        ("branch", Text(cfg.mc.branch_name())),
        ("init", Text(m.branch.init.name().to_string())),
        (
            "hidden_ratio",
            Real(cfg.mc.kind.has_hidden().then_some(m.branch.hidden_ratio)),
        ),
        ("norm", Text(norm_setting(m))),
        ("affine", Text(cfg.affine.to_string())),
        ("eps", Real(Some(cfg.mc.eps))),
        ("width", Int(Some(m.branch.width as u64))),
        ("depth", Int(Some(m.depth as u64))),
        (
            "heads",
            Int(cfg.mc.kind.attends().then_some(cfg.mc.heads as u64)),
        ),
        int("vocab", t.vocab),
        int("seq", t.seq),
        int("task_in", t.d_in),
        int("task_out", t.d_out),
        int("teacher_depth", t.teacher_depth),
        int("teacher_width", t.teacher_width),
        real("noise", t.noise),
        real("teacher_temperature", t.temperature),
        ("teacher_seed", Int(Some(t.teacher_seed))),
        real("teacher_rewire", t.rewire),
        (
            "teacher_rewire_seed",
            Int(reads
                .contains(&"teacher_rewire_seed")
                .then_some(t.rewire_seed)),
        ),
        ("optimizer", Text(cfg.optimizer.name().to_string())),
    ];
    let first = COLUMNS
        .iter()
        .position(|c| *c == "optimizer")
        .expect("a column")
        + 1;
    let count = OptimizerKind::all_flags().len();
    for name in &COLUMNS[first..first + count] {
        let v = hyper
            .iter()
            .find(|(f, _)| flag_column(f) == *name)
            .map(|(_, v)| *v);
        out.push((name, Real(v)));
    }
    out.extend([
        ("clip", Real(cfg.clip)),
        ("lr", Real(Some(s.peak))),
        ("schedule", Text(s.decay.name().to_string())),
        ("warmup", Int(Some(s.warmup))),
        ("steps", Int(Some(s.steps))),
        ("batch", Int(Some(cfg.batch as u64))),
        ("eval_batches", Int(Some(cfg.eval_batches as u64))),
        ("precision", Text(cfg.mc.precision.name().to_string())),
    ]);
    out
}

/// The log of a request's runs as a data frame (rows in the order given), columns
/// [`COLUMNS`].
pub fn frame(cfg: &TrainConfig, records: &[Record]) -> crate::Result<DataFrame> {
    let n = records.len();
    // The label of a record's preset: the request's resolved preset of that name.
    let label = |p: &str| {
        cfg.presets
            .iter()
            .find(|x| x.name == p)
            .map(|x| x.label.to_string())
            .unwrap_or_default()
    };
    let part = |l: Option<usize>| match cfg.arch {
        Arch::EncoderDecoder { layers } => l.map(|l| seq2seq::part(layers, l).name().to_string()),
        Arch::Decoder => None,
    };
    let mut cols = vec![
        column(COLUMNS[0], records.iter().map(|r| r.preset.clone())),
        column(COLUMNS[1], records.iter().map(|r| label(&r.preset))),
    ];
    for (name, v) in settings(cfg) {
        cols.push(match v {
            Setting::Text(x) => column(name, std::iter::repeat_n(x, n)),
            Setting::Int(x) => column(name, std::iter::repeat_n(x, n)),
            Setting::Real(x) => column(name, std::iter::repeat_n(x, n)),
        });
    }
    cols.extend([
        column("seed", records.iter().map(|r| r.seed)),
        column("step", records.iter().map(|r| r.step)),
        column("layer", records.iter().map(|r| r.layer.map(|l| l as u64))),
        column("part", records.iter().map(|r| part(r.layer))),
        column("param", records.iter().map(|r| r.param.clone())),
        column("metric", records.iter().map(|r| r.metric.to_string())),
        column("value", records.iter().map(|r| r.value)),
    ]);
    let df = DataFrame::new_infer_height(cols)?;
    debug_assert!(
        df.get_column_names().iter().map(|c| c.as_str()).eq(COLUMNS),
        "the log's columns are COLUMNS"
    );
    Ok(df)
}

/// The `norm` column of a training log: the norm's name, with GroupNorm's groups
/// (`group:G=8`) as the Monte Carlo tables write it (the batch has a column of its own).
fn norm_setting(m: &crate::model::ModelConfig) -> String {
    if m.norm.has_groups() {
        format!("{}:G={}", m.norm, m.groups)
    } else {
        m.norm.name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_optimizer_columns_are_the_registrys_flags() {
        let first = COLUMNS.iter().position(|c| *c == "optimizer").unwrap() + 1;
        let flags = OptimizerKind::all_flags();
        let mut want: Vec<String> = flags.iter().map(|f| flag_column(f)).collect();
        let mut have: Vec<String> = COLUMNS[first..first + flags.len()]
            .iter()
            .map(|c| c.to_string())
            .collect();
        want.sort();
        have.sort();
        assert_eq!(have, want);
        assert_eq!(COLUMNS[first + flags.len()], "clip");
    }
}
