//! Every row carries every setting that changes its value: `theory`, `mc` and `train` are run
//! at a small base configuration, then with each flag changed in turn, and the rows' setting
//! columns (every column but the value and its interval) must change. Every flag of each
//! command's `--help` is covered: a flag is either changed here or listed with the reason it
//! cannot change a value (output paths, formats, memory layout), and for the ones that select
//! what is written (`--eval-every`, `--log-every`, `--layers`, ...) the rows both runs write
//! must hold the same values.

use crate::common::normscope;
use normscope::output::table::csv_fields as fields;
use std::collections::{BTreeMap, BTreeSet};

/// The columns that hold a result rather than a setting.
const RESULTS: [&str; 8] = [
    "value", "stderr", "ci_low", "ci_high", "n", "missing", "part", "param",
];

/// A row's settings, `(column, value)`, and its value.
type Entry = (Vec<(String, String)>, String);

/// A table's header and rows, from a CSV on stdout (or `out` in `dir`).
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn parse(text: &str) -> Table {
        let mut lines = text.lines();
        let split = |l: &str| fields(l);
        let header = split(lines.next().expect("a header"));
        Table {
            header,
            rows: lines.map(split).collect(),
        }
    }

    /// Each row by its position (layer, source, metric, step, param, part: unique in a run of
    /// one preset and one seed): `(settings, value)`, the settings being every other column
    /// but [`RESULTS`].
    fn by_position(&self) -> BTreeMap<Vec<String>, Entry> {
        let position = ["layer", "source", "metric", "step", "param", "part"];
        let col = |name: &str| self.header.iter().position(|h| h == name);
        let value = col("value").expect("a value column");
        let mut out = BTreeMap::new();
        for r in &self.rows {
            let key: Vec<String> = position
                .iter()
                .filter_map(|c| col(c).map(|i| r[i].clone()))
                .collect();
            let settings = self
                .header
                .iter()
                .zip(r)
                .filter(|(h, _)| !RESULTS.contains(&h.as_str()) && !position.contains(&h.as_str()))
                .map(|(h, v)| (h.clone(), v.clone()))
                .collect();
            let old = out.insert(key.clone(), (settings, r[value].clone()));
            assert!(old.is_none(), "two rows at {key:?}");
        }
        out
    }
}

fn run(args: &[String]) -> Table {
    let o = normscope(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        o.status.success(),
        "{}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    Table::parse(&String::from_utf8(o.stdout).expect("utf-8"))
}

/// The long flags `normscope <command> --help` lists.
fn flags(command: &str) -> BTreeSet<String> {
    let o = normscope(&[command, "--help"]);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            if !l.starts_with('-') {
                return None;
            }
            let long = l.split_whitespace().find(|w| w.starts_with("--"))?;
            Some(long.trim_end_matches(',').to_string())
        })
        .filter(|f| f != "--help")
        .collect()
}

/// A case: the flag, arguments both runs add to the base (where the flag is read), and the
/// arguments that change it.
type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str]);

/// `base` then `extra`, a flag of `extra` replacing the base's value of it (the flag and the
/// value after it; a switch, `--uniform`, has none).
fn merge<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < base.len() {
        if base[i].starts_with("--") && extra.contains(&base[i]) {
            let has_value = base.get(i + 1).is_some_and(|v| !v.starts_with("--"));
            i += if has_value { 2 } else { 1 };
            continue;
        }
        out.push(base[i]);
        i += 1;
    }
    out.extend(extra);
    out
}

/// `command` with `base`, the shared arguments and the change, each overriding the former.
fn args(command: &str, base: &[&str], shared: &[&str], change: &[&str]) -> Vec<String> {
    let all = merge(&merge(base, shared), change);
    std::iter::once(command)
        .chain(all)
        .map(str::to_string)
        .collect()
}

/// For each case: runs the base with the case's shared arguments, then with its change too,
/// and checks that every row whose value changed has changed settings, and that some row's
/// settings changed (the setting is shown). `selects` are flags that only pick what is
/// written: the rows both runs write must be equal. `inert` flags cannot change a value
/// (output paths and formats).
fn check(command: &str, base: &[&str], cases: &[Case], selects: &[Case], inert: &[&str]) {
    let mut failures = Vec::new();
    for (flag, shared, change) in cases {
        let before = run(&args(command, base, shared, &[])).by_position();
        let after = run(&args(command, base, shared, change)).by_position();
        let mut shown = false;
        for (key, (settings, value)) in &after {
            let Some((old_settings, old_value)) = before.get(key) else {
                shown = true; // a new row, e.g. a layer of a deeper stack
                continue;
            };
            if settings != old_settings {
                shown = true;
            } else if value != old_value {
                failures.push(format!(
                    "{flag} {}: {key:?} changed value ({old_value} -> {value}) with the same settings",
                    change.join(" ")
                ));
            }
        }
        if !shown {
            failures.push(format!(
                "{flag} {}: no row's settings changed",
                change.join(" ")
            ));
        }
    }
    for (flag, shared, change) in selects {
        let before = run(&args(command, base, shared, &[])).by_position();
        let after = run(&args(command, base, shared, change)).by_position();
        let common: Vec<_> = after
            .iter()
            .filter(|(k, _)| before.contains_key(*k))
            .collect();
        if common.is_empty() {
            failures.push(format!("{flag}: no rows in common"));
        }
        for (key, row) in common {
            if before.get(key) != Some(row) {
                failures.push(format!("{flag} {}: {key:?} changed", change.join(" ")));
            }
        }
    }
    assert!(failures.is_empty(), "{command}:\n{}", failures.join("\n"));
    let covered: BTreeSet<String> = cases
        .iter()
        .chain(selects)
        .map(|c| c.0.to_string())
        .chain(inert.iter().map(|s| s.to_string()))
        .collect();
    let listed = flags(command);
    assert!(listed.len() > 5, "{command} --help listed {listed:?}");
    let uncovered: Vec<_> = listed.difference(&covered).collect();
    assert!(
        uncovered.is_empty(),
        "{command}: flags neither changed by this test nor listed as inert: {uncovered:?}"
    );
}

/// The model flags `theory` and `mc` share, each changed where it is read.
const MODEL_CASES: [Case; 15] = [
    ("--depth", &[], &["--depth", "5"]),
    ("--branch", &[], &["--branch", "linear"]),
    ("--init", &[], &["--init", "he"]),
    ("--hidden-ratio", &[], &["--hidden-ratio", "2"]),
    ("--gain", &[], &["--gain", "0.5"]),
    ("--alpha", &[], &["--alpha", "2"]),
    ("--beta", &[], &["--beta", "0.5"]),
    ("--lambda", &[], &["--lambda", "0.5"]),
    ("--q0", &[], &["--q0", "2"]),
    ("--c0", &[], &["--c0", "0.25"]),
    ("--final-norm", &[], &["--final-norm", "off"]),
    ("--norm", &[], &["--norm", "rms"]),
    (
        "--groups",
        &["--norm", "group", "--groups", "4"],
        &["--groups", "2"],
    ),
    ("--preset", &[], &["--preset", "pre"]),
    (
        "--placements",
        &["--placements", "examples/placements/mixln.toml"],
        &["--preset", "my-mixln"],
    ),
];

#[test]
fn every_theory_setting_changes_its_rows() {
    let base = [
        "--preset",
        "post",
        "--branch",
        "relu-mlp",
        "--depth",
        "4",
        "--metrics",
        "stream_sq,grad_sq",
        "--layers",
        "0,last",
    ];
    let mut cases: Vec<Case> = MODEL_CASES.to_vec();
    cases.extend([
        (
            "--tokens",
            &["--branch", "uniform-attention"][..],
            &["--tokens", "8"][..],
        ),
        ("--width", &["--init", "bert"], &["--width", "64"]),
        (
            "--finite-width",
            &["--branch", "linear"],
            &["--finite-width", "64"],
        ),
        (
            "--batch",
            &[
                "--preset", "pre", "--branch", "linear", "--norm", "batch", "--tokens", "1",
                "--batch", "6",
            ],
            &["--batch", "8"],
        ),
    ]);
    let selects: [Case; 2] = [
        ("--layers", &[], &["--layers", "last"]),
        ("--metrics", &[], &["--metrics", "grad_sq"]),
    ];
    check("theory", &base, &cases, &selects, &["--out", "--format"]);
}

#[test]
fn every_mc_setting_changes_its_rows() {
    let base = [
        "--preset",
        "post",
        "--branch",
        "relu-mlp",
        "--depth",
        "4",
        "--width",
        "8",
        "--tokens",
        "4",
        "--samples",
        "4",
        "--metrics",
        "stream_sq,grad_sq",
        "--layers",
        "0,last",
    ];
    let mut cases: Vec<Case> = MODEL_CASES.to_vec();
    cases.extend([
        ("--tokens", &[][..], &["--tokens", "6"][..]),
        ("--width", &[], &["--width", "16"]),
        ("--samples", &[], &["--samples", "5"]),
        ("--seed", &[], &["--seed", "7"]),
        ("--eps", &[], &["--eps", "0.001"]),
        ("--heads", &["--branch", "attention"], &["--heads", "2"]),
        // Heads and the hidden ratio enter every network's seed, so a per-token branch's or a
        // linear branch's rows change with them too, and show them.
        ("--heads", &[], &["--heads", "2"]),
        (
            "--hidden-ratio",
            &["--branch", "linear"],
            &["--hidden-ratio", "2"],
        ),
        ("--uniform", &["--branch", "attention"], &["--uniform"]),
        // The override of the gain of branches without a closed-form gain, and uniform
        // attention inside the Transformer stack, are shown too.
        ("--gain", &["--branch", "attention"], &["--gain", "0.5"]),
        ("--uniform", &["--branch", "transformer"], &["--uniform"]),
        (
            "--path-max",
            &["--metrics", "path_len", "--depth", "6"],
            &["--path-max", "2"],
        ),
        ("--precision", &[], &["--precision", "f32"]),
        ("--batch", &[], &["--batch", "2"]),
    ]);
    let selects: [Case; 3] = [
        ("--layers", &[], &["--layers", "last"]),
        ("--metrics", &[], &["--metrics", "grad_sq"]),
        // Held or streamed networks give the same numbers.
        ("--memory", &[], &["--memory", "streamed"]),
    ];
    check("mc", &base, &cases, &selects, &["--out", "--format"]);
}

#[test]
fn every_train_setting_changes_its_rows() {
    let base = [
        "--preset",
        "pre",
        "--branch",
        "transformer",
        "--task",
        "teacher-lm",
        "--width",
        "8",
        "--heads",
        "2",
        "--vocab",
        "8",
        "--seq",
        "4",
        "--teacher-width",
        "8",
        "--steps",
        "2",
        "--batch",
        "2",
        "--eval-every",
        "2",
        "--eval-batches",
        "1",
        "--log-every",
        "2",
        "--seeds",
        "0",
    ];
    let regression: &[&str] = &["--task", "regression", "--branch", "relu-mlp"];
    let seq2seq_one = [
        "--arch",
        "encoder-decoder",
        "--task",
        "reverse-pairs",
        "--layers",
        "1",
    ];
    let cases: Vec<Case> = vec![
        ("--preset", &[], &["--preset", "post"]),
        (
            "--placements",
            &["--placements", "examples/placements/mixln.toml"],
            &["--preset", "my-mixln"],
        ),
        (
            "--arch",
            &[],
            &[
                "--arch",
                "encoder-decoder",
                "--layers",
                "1",
                "--task",
                "reverse-pairs",
            ],
        ),
        ("--layers", &seq2seq_one, &["--layers", "2"]),
        ("--branch", &[], &["--branch", "attention"]),
        ("--depth", &[], &["--depth", "4"]),
        ("--width", &[], &["--width", "16"]),
        ("--heads", &[], &["--heads", "4"]),
        ("--hidden-ratio", &[], &["--hidden-ratio", "2"]),
        ("--init", &[], &["--init", "he"]),
        ("--norm", &[], &["--norm", "rms"]),
        (
            "--groups",
            &["--norm", "group", "--groups", "4"],
            &["--groups", "2"],
        ),
        ("--no-affine", &[], &["--no-affine"]),
        ("--eps", &[], &["--eps", "0.001"]),
        ("--task", &[], &["--task", "copy"]),
        ("--vocab", &[], &["--vocab", "12"]),
        ("--seq", &[], &["--seq", "6"]),
        ("--task-in", regression, &["--task-in", "8"]),
        ("--task-out", regression, &["--task-out", "8"]),
        ("--teacher-depth", &[], &["--teacher-depth", "1"]),
        ("--teacher-width", &[], &["--teacher-width", "16"]),
        ("--noise", regression, &["--noise", "0.5"]),
        (
            "--teacher-temperature",
            &[],
            &["--teacher-temperature", "0.9"],
        ),
        ("--teacher-seed", &[], &["--teacher-seed", "3"]),
        ("--teacher-rewire", &[], &["--teacher-rewire", "0.5"]),
        (
            "--teacher-rewire-seed",
            &["--teacher-rewire", "0.5"],
            &["--teacher-rewire-seed", "9"],
        ),
        ("--optimizer", &[], &["--optimizer", "sgd"]),
        ("--beta1", &[], &["--beta1", "0.5"]),
        ("--beta2", &[], &["--beta2", "0.9"]),
        ("--adam-eps", &[], &["--adam-eps", "1e-6"]),
        (
            "--weight-decay",
            &["--optimizer", "adamw"],
            &["--weight-decay", "0.1"],
        ),
        (
            "--momentum",
            &["--optimizer", "sgd"],
            &["--momentum", "0.9"],
        ),
        ("--clip", &[], &["--clip", "1"]),
        ("--lr", &[], &["--lr", "0.01"]),
        ("--schedule", &[], &["--schedule", "cosine"]),
        ("--warmup", &[], &["--warmup", "1"]),
        ("--steps", &[], &["--steps", "4"]),
        ("--batch", &[], &["--batch", "3"]),
        ("--seeds", &[], &["--seeds", "1"]),
        ("--eval-batches", &[], &["--eval-batches", "2"]),
        ("--precision", &[], &["--precision", "f32"]),
    ];
    let selects: [Case; 2] = [
        ("--eval-every", &[], &["--eval-every", "1"]),
        ("--log-every", &[], &["--log-every", "1"]),
    ];
    check("train", &base, &cases, &selects, &["--out", "--dump-init"]);
}
