//! The grid analyses `mc-grid` and `train-grid` (sweeps given as a `--config` TOML grid): a
//! small grid run whole and as 3 shards merged writes the same bytes; bad grid values are
//! refused with exit status 2, one line naming the key, and nothing written; and a cell's rows
//! do not depend on the grid around it (for `mc-grid`, they are the bytes `normscope mc`
//! writes for that cell).

use crate::common::output_files as files;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A small Monte Carlo grid: 2 presets x 2 depths x 2 widths.
const MC: &str = r#"[mc-grid]
presets = ["pre", "post"]
depths = [3, 5]
widths = [8, 12]
samples = 3
tokens = 4
metrics = ["grad_sq", "eff_depth"]
layers = "0,last"
seed = 3
"#;

/// A small training grid: 2 presets x 2 depths x 2 optimizers x 2 lrs x 2 warmups, 2 seeds.
const TRAIN: &str = r#"[train-grid]
presets = ["pre", "post"]
depths = [2, 3]
optimizers = ["adam", "sgd"]
lrs = [1e-3, 1e-2]
warmups = [0, 5]
seeds = [0, 5]
width = 8
steps = 20
batch = 8
eval_every = 10
seed = 1
"#;

fn normscope(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("normscope runs")
}

fn ok(dir: &Path, args: &[&str]) -> Output {
    let o = normscope(dir, args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Runs grid `toml` of analysis `id` whole into `dir/name` (config file `dir/name.toml`).
fn whole(dir: &Path, id: &str, name: &str, toml: &str) -> PathBuf {
    let config = format!("{name}.toml");
    std::fs::write(dir.join(&config), toml).unwrap();
    ok(
        dir,
        &[
            "reproduce",
            "--only",
            id,
            "--config",
            &config,
            "--out-dir",
            name,
        ],
    );
    dir.join(name)
}

#[test]
fn three_shards_merged_equal_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (id, toml, tables) in [
        ("mc-grid", MC, &["mc.csv", "mc.parquet"][..]),
        ("train-grid", TRAIN, &["runs.csv", "curves.csv"][..]),
    ] {
        std::fs::write(dir.join("grid.toml"), toml).unwrap();
        let run = |extra: &[&str], out: &str| {
            let mut args = vec!["reproduce", "--only", id, "--config", "grid.toml"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["--out-dir", out]);
            ok(dir, &args);
        };
        let w = format!("{id}-whole");
        run(&[], &w);
        let mut shards = Vec::new();
        for i in 0..3 {
            let d = format!("{id}-shard-{i}");
            run(&["--shard", &format!("{i}/3")], &d);
            // A shard writes its units, not the analysis's tables.
            assert!(!dir.join(&d).join("data").exists(), "{d} wrote data/");
            shards.push(d);
        }
        let m = format!("{id}-merged");
        let mut args = vec!["merge"];
        args.extend(shards.iter().map(String::as_str));
        args.extend(["--out-dir", &m]);
        ok(dir, &args);
        let (want, got) = (files(&dir.join(&w)), files(&dir.join(&m)));
        for t in tables {
            let rel = format!("data/{id}/{t}");
            assert!(want.contains_key(&rel), "{id}: no {rel}");
        }
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>(),
            "{id}: the same files"
        );
        for (k, v) in &want {
            assert!(got[k] == *v, "{id}: {k} differs from the unsharded run");
        }
    }
}

#[test]
fn bad_grid_values_are_refused_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (id, line, needle) in [
        ("mc-grid", "depths = [0]", "mc-grid.depths"),
        ("mc-grid", "depths = [4, 4]", "mc-grid.depths"),
        ("mc-grid", "presets = [\"nope\"]", "[mc-grid] presets"),
        ("mc-grid", "widht = [8]", "unknown key `widht` in [mc-grid]"),
        ("mc-grid", "metrics = [\"nope\"]", "mc-grid.metrics"),
        ("mc-grid", "layers = \"0,99\"", "mc-grid.layers"),
        ("mc-grid", "samples = 1", "mc-grid.samples"),
        ("mc-grid", "widths = [1000000]", "too large"),
        ("train-grid", "lrs = [-1e-3]", "train-grid.lrs"),
        ("train-grid", "depths = [0]", "train-grid.depths"),
        (
            "train-grid",
            "presets = [\"pre\", \"nope\"]",
            "[train-grid] presets",
        ),
        (
            "train-grid",
            "optimizers = [\"nope\"]",
            "train-grid.optimizers",
        ),
        ("train-grid", "warmups = [0, 1000]", "train-grid.warmups"),
        ("train-grid", "seeds = 0", "train-grid.seeds"),
        ("train-grid", "seeds = [1, 1]", "train-grid.seeds"),
        ("train-grid", "task = \"nope\"", "train-grid.task"),
        (
            "train-grid",
            "stesp = 10",
            "unknown key `stesp` in [train-grid]",
        ),
    ] {
        std::fs::write(dir.join("bad.toml"), format!("[{id}]\n{line}\n")).unwrap();
        for shard in [None, Some("1/3")] {
            let mut args = vec!["reproduce", "--only", id, "--config", "bad.toml"];
            if let Some(s) = shard {
                args.extend(["--shard", s]);
            }
            args.extend(["--out-dir", "out"]);
            let o = normscope(dir, &args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{line} ({shard:?}): {err}");
            assert!(
                err.contains(needle),
                "{line}: expected '{needle}' in: {err}"
            );
            assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
            assert!(
                !dir.join("out").exists(),
                "{line} ({shard:?}): wrote output"
            );
        }
    }
}

/// The data lines of `csv` (header dropped) whose fields at `key` columns equal `want`.
fn lines_of(csv: &str, key: &[(usize, &str)]) -> Vec<String> {
    csv.lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split(',').collect();
            key.iter().all(|(i, v)| f[*i] == *v)
        })
        .map(String::from)
        .collect()
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn a_cells_rows_do_not_depend_on_the_grid_around_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    // mc-grid: the cell (post, L = 5, d = 12) alone, and in the grid of MC.
    let alone = MC
        .replace("[\"pre\", \"post\"]", "[\"post\"]")
        .replace("[3, 5]", "[5]")
        .replace("[8, 12]", "[12]");
    let one = read(
        &whole(dir, "mc-grid", "mc-one", &alone),
        "data/mc-grid/mc.csv",
    );
    let all = read(&whole(dir, "mc-grid", "mc-all", MC), "data/mc-grid/mc.csv");
    // Columns preset (0), width (7), depth (21).
    let key = [(0, "post"), (7, "12"), (21, "5")];
    let cell = lines_of(&one, &key);
    assert_eq!(cell.len(), one.lines().count() - 1, "{one}");
    assert_eq!(cell.len(), 4, "grad_sq and eff_depth at layers 0 and L");
    assert_eq!(cell, lines_of(&all, &key));
    // The same bytes as `normscope mc` for that cell.
    let mc = ok(
        dir,
        &[
            "mc",
            "--preset",
            "post",
            "--depth",
            "5",
            "--width",
            "12",
            "--tokens",
            "4",
            "--samples",
            "3",
            "--seed",
            "3",
            "--branch",
            "relu-mlp",
            "--init",
            "he",
            "--metrics",
            "grad_sq,eff_depth",
            "--layers",
            "0,5",
        ],
    );
    assert_eq!(String::from_utf8(mc.stdout).unwrap(), one);

    // train-grid: the run (post, L = 3, sgd, lr 0.01, warmup 5, seed 5) alone, and in TRAIN.
    let alone = TRAIN
        .replace("[\"pre\", \"post\"]", "[\"post\"]")
        .replace("[2, 3]", "[3]")
        .replace("[\"adam\", \"sgd\"]", "[\"sgd\"]")
        .replace("[1e-3, 1e-2]", "[1e-2]")
        .replace("[0, 5]\nseeds", "[5]\nseeds")
        .replace("seeds = [0, 5]", "seeds = [5]");
    assert!(alone.contains("warmups = [5]") && alone.contains("seeds = [5]"));
    let one = whole(dir, "train-grid", "train-one", &alone);
    let all = whole(dir, "train-grid", "train-all", TRAIN);
    // Columns preset, blocks, optimizer, lr, warmup, seed (0, 7, 9, 10, 11, 16) in both
    // tables (the training tables' settings columns).
    let key = [
        (0, "post"),
        (7, "3"),
        (9, "sgd"),
        (10, "0.01"),
        (11, "5"),
        (16, "5"),
    ];
    for (table, rows) in [("runs.csv", 1), ("curves.csv", 3)] {
        let rel = format!("data/train-grid/{table}");
        let (a, b) = (read(&one, &rel), read(&all, &rel));
        let cell = lines_of(&a, &key);
        assert_eq!(cell.len(), rows, "{table}: {a}");
        assert_eq!(cell, lines_of(&b, &key), "{table}");
    }
}
