//! `normscope train` end to end: the log's schema and contents, byte-identical output for any
//! thread count, paired seeds, diverging runs logged as results (each flagged once, no
//! non-finite value written), and bad input refused with exit 2, one line naming the field, and no output file.

use std::path::Path;
use std::process::{Command, Output};

fn normscope(args: &[&str], dir: &Path, threads: Option<usize>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_normscope"));
    c.args(args).current_dir(dir);
    if let Some(t) = threads {
        c.env("RAYON_NUM_THREADS", t.to_string());
    }
    c.output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small transformer run: 3 presets x 3 seeds, 30 Adam updates.
const SMALL: [&str; 22] = [
    "train",
    "--preset",
    "pre,post,deepnorm",
    "--branch",
    "transformer",
    "--task",
    "teacher-lm",
    "--depth",
    "4",
    "--width",
    "16",
    "--heads",
    "2",
    "--batch",
    "4",
    "--steps",
    "30",
    "--eval-every",
    "10",
    "--seeds",
    "0..3",
    "--lr=3e-3",
];

fn rows(csv: &str) -> Vec<Vec<String>> {
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn log_is_byte_identical_for_any_thread_count_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    let mut a: Vec<&str> = SMALL.to_vec();
    a.extend(["--out", "one.csv"]);
    let o = normscope(&a, dir.path(), Some(1));
    assert!(o.status.success(), "{}", stderr(&o));
    // The summary on stderr: a header and one row per preset, in the order given.
    let err = stderr(&o);
    let summary: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("summary"))
        .skip(1)
        .collect();
    assert!(
        summary[0].starts_with("preset") && summary[0].contains("excess"),
        "{err}"
    );
    let presets: Vec<&str> = summary[1..]
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(presets, ["pre", "post", "deepnorm"], "{err}");
    let mut b: Vec<&str> = SMALL.to_vec();
    b.extend(["--out", "two.csv"]);
    let o = normscope(&b, dir.path(), Some(2));
    assert!(o.status.success(), "{}", stderr(&o));
    let one = std::fs::read(dir.path().join("one.csv")).unwrap();
    let two = std::fs::read(dir.path().join("two.csv")).unwrap();
    assert!(one == two, "1 and 2 threads differ");
    let text = String::from_utf8(one).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        normscope::train::log::COLUMNS.join(",")
    );
    let rows = rows(&text);
    let col = |name: &str| {
        normscope::train::log::COLUMNS
            .iter()
            .position(|c| *c == name)
            .unwrap()
    };
    let (metric, value, step, preset, seed) = (
        col("metric"),
        col("value"),
        col("step"),
        col("preset"),
        col("seed"),
    );
    // Every quantity named in the training log is logged.
    for m in [
        "train_loss",
        "eval_loss",
        "excess_loss",
        "eval_floor",
        "grad_norm",
        "update_ratio",
        "output_change",
        "norm_input_rms",
        "attn_max_logit",
        "attn_entropy",
        "adam_v_mean",
        "adam_v_max",
        "lr",
        "diverged",
    ] {
        assert!(rows.iter().any(|r| r[metric] == m), "no {m} rows");
    }
    // No non-finite value; one divergence flag per run.
    for r in &rows {
        let v: f64 = r[value].parse().unwrap();
        assert!(v.is_finite(), "{r:?}");
    }
    for p in ["pre", "post", "deepnorm"] {
        for s in ["0", "1", "2"] {
            let flags = rows
                .iter()
                .filter(|r| r[preset] == p && r[seed] == s && r[metric] == "diverged")
                .count();
            assert_eq!(flags, 1, "{p} seed {s}");
        }
    }
    // The output change starts at 0.
    let at0 = |m: &str, p: &str| {
        rows.iter()
            .find(|r| r[metric] == m && r[preset] == p && r[step] == "0")
            .map(|r| r[value].clone())
            .unwrap()
    };
    assert_eq!(at0("output_change", "post"), "0.0");
}

#[test]
fn seeds_are_paired_across_presets() {
    // Seed 3 gives Pre-LN, Post-LN and DeepNorm the same batches in the same order, and the
    // same draws where the recipe does not rescale them (queries, keys, embeddings; DeepNet's
    // beta scales values, outputs and the FFN), while seed 4 differs.
    let dir = tempfile::tempdir().unwrap();
    let dump = |preset: &str, seed: &str| {
        let file = format!("{preset}-{seed}.json");
        let o = normscope(
            &[
                "train",
                "--preset",
                preset,
                "--depth",
                "4",
                "--width",
                "16",
                "--heads",
                "2",
                "--batch",
                "3",
                "--steps",
                "4",
                "--seeds",
                seed,
                "--dump-init",
                &file,
            ],
            dir.path(),
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let param = |v: &serde_json::Value, layer: u64, name: &str| {
        v["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["layer"] == layer && p["name"] == name)
            .unwrap()["data"]
            .clone()
    };
    let pre = dump("pre", "3");
    for other in [dump("post", "3"), dump("deepnorm", "3")] {
        assert_eq!(pre["batches"], other["batches"]);
        for (layer, name) in [(0, "embedding"), (0, "positions"), (1, "wq"), (3, "wk")] {
            assert_eq!(
                param(&pre, layer, name),
                param(&other, layer, name),
                "{name}"
            );
        }
    }
    let four = dump("pre", "4");
    assert_ne!(pre["batches"], four["batches"]);
    assert_ne!(param(&pre, 1, "wq"), param(&four, 1, "wq"));
}

#[test]
fn diverging_runs_are_results_flagged_once_each() {
    // Plain SGD at lr 1e4 on a no-norm ReZero-free stack overflows; 30 updates.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "train",
        "--preset",
        "pre",
        "--norm",
        "identity",
        "--branch",
        "relu-mlp",
        "--task",
        "regression",
        "--depth",
        "8",
        "--width",
        "16",
        "--optimizer",
        "sgd",
        "--lr",
        "1e4",
        "--steps",
        "30",
        "--seeds",
        "0,1",
        "--out",
        "d.csv",
    ];
    let o = normscope(&args, dir.path(), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("d.csv")).unwrap();
    let flags: Vec<&str> = text.lines().filter(|l| l.contains(",diverged,")).collect();
    assert_eq!(flags.len(), 2, "{flags:?}");
    for f in flags {
        assert!(f.ends_with(",1.0"), "{f}");
    }
    assert!(!text.contains("NaN") && !text.contains("inf"));
}

#[test]
fn bad_input_exits_2_naming_the_field_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 16] = [
        (&["--seeds", "0..18446744073709551615"], "--seeds"),
        (&["--adam-eps", "0"], "--adam-eps"),
        (&["--width", "1", "--heads", "1"], "--width"),
        (
            &[
                "--branch",
                "mlp",
                "--task",
                "regression",
                "--teacher-width",
                "4096",
                "--teacher-depth",
                "4096",
            ],
            "too large",
        ),
        (&["--optimizer", "lion"], "optimizer"),
        (&["--schedule", "step"], "schedule"),
        (&["--task", "chess"], "task"),
        (&["--lr", "0"], "--lr"),
        (&["--lr", "NaN"], "--lr"),
        (&["--warmup", "50"], "--warmup"),
        (&["--heads", "3"], "--heads"),
        (&["--batch", "0"], "--batch"),
        (&["--task", "copy", "--vocab", "2"], "--vocab"),
        (&["--branch", "cross-attention"], "--branch"),
        (&["--seeds", "3..1"], "--seeds"),
        (&["--dump-init", "/nonexistent-dir/x.json"], "--dump-init"),
    ];
    for (extra, field) in cases {
        let mut a = vec!["train", "--steps", "5", "--out", "x.csv"];
        a.extend_from_slice(extra);
        let o = normscope(&a, dir.path(), None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{extra:?}: {e}");
        assert!(e.contains(field), "{extra:?}: {e}");
        assert!(!dir.path().join("x.csv").exists(), "{extra:?}");
    }
}

#[test]
fn dump_init_writes_the_documented_format() {
    let dir = tempfile::tempdir().unwrap();
    let o = normscope(
        &[
            "train",
            "--preset",
            "admin",
            "--depth",
            "4",
            "--width",
            "16",
            "--steps",
            "3",
            "--dump-init",
            "d.json",
        ],
        dir.path(),
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("d.json")).unwrap()).unwrap();
    assert_eq!(v["format"], "normscope-train-init-v1");
    assert_eq!(v["batches"].as_array().unwrap().len(), 3);
    assert_eq!(v["lrs"].as_array().unwrap().len(), 3);
    // Admin's omega is learnable and listed among the parameters with its shape.
    assert_eq!(v["model"]["blocks"][0]["skip"], "learnable");
    let omega = v["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "omega")
        .unwrap();
    assert_eq!(omega["shape"], serde_json::json!([16, 1]));
    // Two presets cannot share one dump file.
    let o = normscope(
        &["train", "--preset", "pre,post", "--dump-init", "e.json"],
        dir.path(),
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join("e.json").exists());
}
