//! Sharded runs (`reproduce --shard I/N`, `merge`): for every analysis on the quick
//! configuration, the merge of N in {1, 2, 7} shards writes exactly the bytes of the unsharded
//! run (manifests included), and merge refuses missing, duplicated, corrupt and foreign shards
//! with exit status 2, writing nothing.

use crate::common::output_files as files;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn normscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .output()
        .expect("normscope runs")
}

fn ok(args: &[&str]) {
    let o = normscope(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn ids() -> Vec<String> {
    let o = normscope(&["reproduce", "--list"]);
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Shards `id` into `n` folders under `dir`; returns them.
fn shards(dir: &Path, id: &str, n: usize, extra: &[&str]) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = dir.join(format!("{id}-{n}-{i}"));
            let spec = format!("{i}/{n}");
            let mut args = vec!["reproduce", "--only", id, "--quick"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["--shard", &spec, "--out-dir", s(&d)]);
            ok(&args);
            d
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> Output {
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| s(d).to_string()));
    args.extend(["--out-dir".into(), s(out).into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    normscope(&a)
}

#[test]
fn merged_shards_equal_the_unsharded_run_for_every_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let ids = ids();
    // Analysis by analysis, as the shards run (the manifest records `--only ID`), in registry
    // order so the ledger reads the others' tables.
    for id in &ids {
        ok(&["reproduce", "--only", id, "--quick", "--out-dir", s(&whole)]);
    }
    let want = files(&whole);
    assert!(want.len() > 100, "the quick run writes every analysis");
    for n in [1, 2, 7] {
        let merged = tmp.path().join(format!("merged-{n}"));
        for id in &ids {
            let dirs = shards(tmp.path(), id, n, &[]);
            let o = merge(&dirs, &merged);
            assert!(
                o.status.success(),
                "merge of {id} ({n} shards): {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let got = files(&merged);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{n} shards: the same files"
        );
        for (k, v) in &want {
            assert!(
                got[k] == *v,
                "{n} shards: {k} differs from the unsharded run"
            );
        }
    }
}

/// Asserts that merging `dirs` is refused with exit 2, a one-line message containing `needle`,
/// and nothing written.
fn refused(dirs: &[PathBuf], needle: &str) {
    let out = dirs[0].parent().unwrap().join("refused-out");
    let o = merge(dirs, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!out.exists(), "a refused merge writes nothing");
}

#[test]
fn merge_refuses_missing_duplicated_corrupt_and_foreign_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let id = "finite-width";
    let three = shards(tmp.path(), id, 3, &[]);

    // Missing: a shard left out, or a folder without shard.json (an unfinished shard).
    refused(&three[..2], "shard 2 is missing");
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    refused(&[three[0].clone(), three[1].clone(), empty], "empty");

    // Duplicated.
    refused(
        &[
            three[0].clone(),
            three[1].clone(),
            three[1].clone(),
            three[2].clone(),
        ],
        "also in",
    );

    // Foreign: another seed, another shard count, another analysis.
    let seeded = shards(&tmp.path().join("seeded"), id, 3, &["--seed", "9"]);
    refused(
        &[three[0].clone(), three[1].clone(), seeded[2].clone()],
        "configuration differs",
    );
    let two = shards(&tmp.path().join("two"), id, 2, &[]);
    refused(
        &[three[0].clone(), two[1].clone(), three[2].clone()],
        "shard count differs",
    );
    let other = shards(&tmp.path().join("other"), "warmup", 3, &[]);
    refused(
        &[three[0].clone(), other[1].clone(), three[2].clone()],
        "analysis differs",
    );

    // Corrupt: one byte of a units file flipped, or the manifest truncated.
    let corrupt = tmp.path().join("corrupt");
    std::fs::create_dir_all(&corrupt).unwrap();
    for f in std::fs::read_dir(&three[1]).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, corrupt.join(p.file_name().unwrap())).unwrap();
        }
    }
    let units = corrupt.join("units-cells.bin");
    let mut b = std::fs::read(&units).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 1;
    std::fs::write(&units, b).unwrap();
    refused(
        &[three[0].clone(), corrupt.clone(), three[2].clone()],
        "corrupt",
    );
    let m = corrupt.join("shard.json");
    let text = std::fs::read(&m).unwrap();
    std::fs::write(&m, &text[..text.len() / 2]).unwrap();
    refused(&[three[0].clone(), corrupt, three[2].clone()], "corrupt");

    // Foreign: another source commit, or another binary (a rebuild since the shards ran).
    let copy = |from: &Path, to: &Path, edit: &dyn Fn(&mut serde_json::Value)| {
        std::fs::create_dir_all(to).unwrap();
        for f in std::fs::read_dir(from).unwrap() {
            let p = f.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
            }
        }
        let m = to.join("shard.json");
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(&m, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    };
    let commit = tmp.path().join("commit");
    copy(&three[1], &commit, &|v| {
        v["source"]["git_commit"] = "0123456789abcdef0123456789abcdef01234567".into()
    });
    refused(
        &[three[0].clone(), commit, three[2].clone()],
        "source commit or toolchain differs",
    );
    let rebuilt: Vec<PathBuf> = three
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let to = tmp.path().join(format!("rebuilt-{i}"));
            copy(d, &to, &|v| v["build_sha256"] = "0".repeat(64).into());
            to
        })
        .collect();
    refused(&rebuilt, "build sha256");

    // The good set merges, in any order, and a rerun shard rewrites the same bytes.
    let (a, b) = (tmp.path().join("in-order"), tmp.path().join("any-order"));
    assert!(merge(&three, &a).status.success());
    let shuffled = [three[2].clone(), three[0].clone(), three[1].clone()];
    assert!(merge(&shuffled, &b).status.success());
    assert!(files(&a) == files(&b), "the shards' order does not matter");
    let before = std::fs::read(three[1].join("units-cells.bin")).unwrap();
    shards(tmp.path(), id, 3, &[]);
    assert_eq!(
        before,
        std::fs::read(three[1].join("units-cells.bin")).unwrap()
    );
    assert!(merge(&three, &tmp.path().join("good")).status.success());
}

#[test]
fn bad_shard_flags_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, field) in [
        (
            vec!["reproduce", "--only", "warmup", "--shard", "3/3"],
            "--shard",
        ),
        (
            vec!["reproduce", "--only", "warmup", "--shard", "x"],
            "--shard",
        ),
        (
            vec!["reproduce", "--only", "warmup,claims", "--shard", "0/2"],
            "--only",
        ),
        (vec!["reproduce", "--shard", "0/2"], "--only"),
    ] {
        let mut a = args.clone();
        let d = tmp.path().join("x");
        a.extend(["--out-dir", s(&d)]);
        let o = normscope(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(field), "{args:?}: {err}");
        assert!(!d.exists(), "{args:?} wrote {}", d.display());
    }
}

#[test]
fn slurm_writes_an_array_and_a_dependent_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    ok(&[
        "slurm",
        "--only",
        "finite-width",
        "--shards",
        "7",
        "--quick",
        "--time",
        "00:10:00",
        "--dir",
        s(&dir),
        "--out-dir",
        s(tmp.path()),
    ]);
    let array = std::fs::read_to_string(dir.join("array.sbatch")).unwrap();
    assert!(array.contains("#SBATCH --array=0-6"), "{array}");
    assert!(array.contains("--shard \"$i/7\""), "{array}");
    let merge = std::fs::read_to_string(dir.join("merge.sbatch")).unwrap();
    assert!(merge.contains("shard-{0..6}"), "{merge}");
    let submit = std::fs::read_to_string(dir.join("submit.sh")).unwrap();
    assert!(submit.contains("--dependency=afterok:$array"), "{submit}");
    let o = normscope(&[
        "slurm",
        "--only",
        "finite-width",
        "--shards",
        "2",
        "--mem",
        "8G;x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--mem"));
}
