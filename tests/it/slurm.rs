//! `normscope slurm --submit` on a real Slurm: the quick `finite-width` (a Monte Carlo grid) and
//! `warmup` (a training grid) as 3-shard job arrays with dependent merges; the merged folders
//! equal the single-machine runs byte for byte, and a task resubmitted alone rewrites the same
//! bytes.
//!
//! Runs when `sbatch` is installed and `scontrol ping` finds a controller up; skipped with the
//! reason printed otherwise (`.ci/run` does not need it). `sudo scripts/local-slurm.sh` starts a
//! one-node cluster on this machine.

use crate::common::output_files as files;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Longest wait for the jobs of one analysis.
const TIMEOUT: Duration = Duration::from_secs(900);

fn slurm_up() -> Result<(), String> {
    let sbatch = Command::new("sbatch").arg("--version").output();
    if !sbatch.is_ok_and(|o| o.status.success()) {
        return Err("sbatch is not installed".into());
    }
    let ping = Command::new("scontrol")
        .arg("ping")
        .output()
        .map_err(|e| format!("scontrol: {e}"))?;
    let text = String::from_utf8_lossy(&ping.stdout);
    if !text.contains("UP") {
        return Err(format!(
            "no Slurm controller is up ({}); start one with `sudo scripts/local-slurm.sh`",
            text.trim()
        ));
    }
    Ok(())
}

fn normscope(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .output()
        .expect("normscope runs");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Waits until none of `jobs` is queued or running.
fn wait(jobs: &[&str]) {
    let t = Instant::now();
    loop {
        let o = Command::new("squeue")
            .args(["-h", "-o", "%i %T", "-j", &jobs.join(",")])
            .output()
            .expect("squeue runs");
        let text = String::from_utf8_lossy(&o.stdout);
        if text.trim().is_empty() {
            return;
        }
        assert!(t.elapsed() < TIMEOUT, "jobs still queued: {text}");
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn sharded_on_slurm_equals_the_single_machine_run() {
    if let Err(why) = slurm_up() {
        // On stderr, which the test harness does not capture: a skip is visible.
        eprintln!("skipped: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for id in ["finite-width", "warmup"] {
        let whole = tmp.path().join(format!("whole-{id}"));
        normscope(&["reproduce", "--only", id, "--quick", "--out-dir", s(&whole)]);
        let work = tmp.path().join(format!("work-{id}"));
        let merged = tmp.path().join(format!("merged-{id}"));
        let out = normscope(&[
            "slurm",
            "--only",
            id,
            "--quick",
            "--shards",
            "3",
            "--time",
            "00:15:00",
            "--dir",
            s(&work),
            "--out-dir",
            s(&merged),
            "--submit",
        ]);
        // "array job A (3 tasks), merge job M (after every task succeeds)"
        let words: Vec<&str> = out.split_whitespace().collect();
        let ids: Vec<&str> = words
            .windows(2)
            .filter(|w| w[0] == "job")
            .map(|w| w[1])
            .collect();
        let [array, merge] = ids[..] else {
            panic!("two job ids in: {out}")
        };
        println!("{id}: array job {array}, merge job {merge}");
        wait(&[array, merge]);
        let log = std::fs::read_to_string(work.join(format!("logs/merge-{merge}.out")))
            .unwrap_or_default();
        assert!(
            merged.join("data").join(id).join("manifest.json").exists(),
            "{id}: the merge wrote nothing; its log:\n{log}"
        );
        let (want, got) = (files(&whole), files(&merged));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>()
        );
        for (k, v) in &want {
            assert!(
                got[k] == *v,
                "{id}: {k} differs from the single-machine run"
            );
        }
        // A task resubmitted alone ran (its own log, a new shard.json written in place of the
        // old one) and rewrote its shard's bytes.
        let shard = work.join("shard-1/shard.json");
        let before = std::fs::read(&shard).unwrap();
        let written = std::fs::metadata(&shard).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        let again = Command::new("sbatch")
            .args(["--parsable", "--array=1", s(&work.join("array.sbatch"))])
            .output()
            .unwrap();
        let job = String::from_utf8_lossy(&again.stdout).trim().to_string();
        assert!(again.status.success() && !job.is_empty());
        wait(&[&job]);
        assert!(
            work.join(format!("logs/shard-{job}_1.out")).exists(),
            "{id}: the resubmitted task left no log"
        );
        assert!(
            std::fs::metadata(&shard).unwrap().modified().unwrap() > written,
            "{id}: the resubmitted task did not rewrite shard 1"
        );
        assert_eq!(
            before,
            std::fs::read(&shard).unwrap(),
            "{id}: rerun shard 1"
        );
    }
}

/// Bad input to `normscope slurm` is one line naming the field, exit 2, and creates nothing:
/// it is checked before the command says what it will write (it printed "2 shards of nope:
/// scripts into ..." before the error), and a `--dir` that is a file is named as such (it was
/// an I/O error, exit 1, on `DIR/logs`).
#[test]
fn bad_slurm_requests_are_one_line_and_create_nothing() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let dir = t.path().join("d");
    let through_file = file.join("sub");
    let dangling = t.path().join("dangling");
    std::os::unix::fs::symlink(t.path().join("nowhere"), &dangling).unwrap();
    let scripts_folder = t.path().join("s");
    std::fs::create_dir_all(scripts_folder.join("array.sbatch")).unwrap();
    // `slurm --only ID --shards N --dir DIR` and more flags.
    let req = |id: &str, shards: &str, at: &Path, more: &[&str]| -> Vec<String> {
        let head = ["--only", id, "--shards", shards, "--dir", s(at)];
        head.iter().chain(more).map(|a| a.to_string()).collect()
    };
    for (args, field) in [
        (req("mc-grid", "2", &through_file, &[]), "--dir"),
        (req("mc-grid", "2", &dangling, &[]), "--dir"),
        (req("mc-grid", "2", &scripts_folder, &[]), "array.sbatch"),
        (
            req("mc-grid", "2", &dir, &["--out-dir", s(&file)]),
            "--out-dir",
        ),
        (req("nope", "2", &dir, &[]), "analysis 'nope'"),
        (req("expansion", "0", &dir, &[]), "--shards"),
        (req("mc-grid", "2", &file, &[]), "--dir"),
        (req("mc-grid", "2", &dir, &["--mem", "8G x"]), "--mem"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_normscope"))
            .arg("slurm")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(field),
            "{args:?}: {err}"
        );
        assert!(!dir.exists(), "{args:?}: created {}", dir.display());
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    assert!(!scripts_folder.join("logs").exists());
}
