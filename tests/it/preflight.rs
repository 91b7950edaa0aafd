//! Time and size preflight, and memory checks that respect process limits: every
//! hostile command of the report is refused before anything is allocated or run, with exit
//! status 2, one line on standard error naming the flag to lower, and no output file. The
//! commands run under an address-space limit (`ulimit -v`), so a regression that starts
//! allocating fails fast instead of taking the machine's memory, and a watchdog kills a run
//! that starts computing instead of refusing. No wall-clock time is asserted.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Generous: a refusal takes milliseconds; a run that was not refused computes for minutes.
const WATCHDOG: Duration = Duration::from_secs(120);

/// Address-space limit of the runs, in KiB (`ulimit -v`): 16 GiB, enough for the binary and
/// its threads, far below what any of the refused runs asks for.
const ULIMIT_KB: u64 = 16 << 20;

/// Runs `normscope args` in `dir` under `ulimit -v limit_kb`, killed after [`WATCHDOG`].
fn run_limited(args: &[&str], dir: &Path, limit_kb: u64) -> Output {
    let script = format!("ulimit -v {limit_kb} && exec \"$0\" \"$@\"");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_normscope"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{args:?} was still running after {WATCHDOG:?} (not refused): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Asserts that `args` is refused: exit status 2, one line on standard error containing every
/// one of `names`, and nothing in `dir` but the inputs.
#[track_caller]
fn assert_refused(args: &[&str], dir: &Path, limit_kb: u64, names: &[&str]) -> String {
    let before: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    let o = run_limited(args, dir, limit_kb);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for n in names {
        assert!(err.contains(n), "{args:?}: no {n:?} in {err}");
    }
    assert!(o.stdout.is_empty(), "{args:?} wrote to stdout");
    let after: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert_eq!(before.len(), after.len(), "{args:?} wrote a file");
    err
}

/// The report's Monte Carlo commands (default metrics and layers, and the cheaper metrics),
/// at every size, with `--out`.
#[test]
fn hostile_monte_carlo_sizes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &[
                "mc",
                "--depth",
                "10000000",
                "--width",
                "16",
                "--tokens",
                "4",
                "--samples",
                "4",
            ],
            &["too large", "--depth", "--samples"],
        ),
        (
            &[
                "mc",
                "--depth",
                "100000",
                "--width",
                "4",
                "--tokens",
                "2",
                "--samples",
                "2",
            ],
            &["too large", "--depth", "--layers"],
        ),
        (
            &["mc", "--samples", "1000000000"],
            &["too large", "--samples"],
        ),
        (
            // Fits in memory, but its O(L^2) decomposition is about a week of work.
            &[
                "mc",
                "--depth",
                "1000000",
                "--width",
                "2",
                "--tokens",
                "1",
                "--samples",
                "1000",
                "--metrics",
                "stream_sq",
                "--layers",
                "last",
                "--preset",
                "pre",
            ],
            &[
                "too large",
                "floating-point operations",
                "days",
                "--samples",
            ],
        ),
        (
            &[
                "compare",
                "--depth",
                "10000000",
                "--width",
                "16",
                "--tokens",
                "4",
                "--samples",
                "4",
            ],
            &["too large", "--depth"],
        ),
    ];
    for (args, names) in cases {
        let mut a = args.to_vec();
        a.extend(["--out", "out.csv"]);
        assert_refused(&a, dir.path(), ULIMIT_KB, names);
    }
}

/// `mc --samples 1000000000` under an 8 GB address-space limit is refused naming the limit
/// (RLIMIT_AS), not aborted by the allocator; so is a run that fits the machine but not 1 GB.
#[test]
fn the_address_space_limit_is_part_of_the_memory_check() {
    let dir = tempfile::tempdir().unwrap();
    let err = assert_refused(
        &["mc", "--samples", "1000000000", "--out", "out.csv"],
        dir.path(),
        8_000_000,
        &["too large", "RLIMIT_AS", "--samples"],
    );
    assert!(err.contains("GB of memory"), "{err}");
    // ~1.6 GB of per-network values: refused under 1 GB, whatever the machine has free.
    let args = [
        "mc",
        "--depth",
        "2",
        "--width",
        "2",
        "--tokens",
        "1",
        "--samples",
        "200000000",
        "--metrics",
        "stream_sq",
        "--layers",
        "last",
        "--preset",
        "pre",
        "--out",
        "out.csv",
    ];
    assert_refused(&args, dir.path(), 1_000_000, &["RLIMIT_AS", "--samples"]);
}

/// The report's training commands: a huge step count (its log alone, and its work with the
/// log thinned out), huge batches (with and without `--dump-init`), and a batch whose column
/// count overflows usize (a capacity-overflow panic before).
#[test]
fn hostile_training_sizes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "1000000000000000000";
    let cases: &[(&[&str], &[&str])] = &[
        (&["train", "--steps", huge], &["too large", "--steps"]),
        (
            &[
                "train",
                "--steps",
                huge,
                "--log-every",
                huge,
                "--eval-every",
                huge,
            ],
            &["too large", "floating-point operations", "--steps"],
        ),
        (
            &["train", "--batch", "4503599627370496"],
            &["too large", "--batch"],
        ),
        (
            &["train", "--batch", "9223372036854775808"],
            &["too large", "--batch"],
        ),
        (
            &["train", "--batch", "18446744073709551615"],
            &["too large", "--batch"],
        ),
    ];
    for (args, names) in cases {
        let mut a = args.to_vec();
        a.extend(["--out", "log.csv"]);
        assert_refused(&a, dir.path(), ULIMIT_KB, names);
    }
    for batch in ["4503599627370496", "9223372036854775808"] {
        let args = [
            "train",
            "--preset",
            "pre",
            "--batch",
            batch,
            "--dump-init",
            "init.json",
        ];
        assert_refused(&args, dir.path(), ULIMIT_KB, &["too large", "--batch"]);
    }
}

/// A placement file whose branch scale depends on the block index builds one segment per
/// block: at depth 1e9 that is refused before the stack is built, in `theory` and `mc`; at a
/// small depth the same file runs.
#[test]
fn placement_files_at_any_depth_are_refused_before_their_stack_is_built() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("decay.toml"),
        "[[placement]]\nname = \"my-decay\"\nlabel = \"Pre-LN, branch/sqrt(l)\"\nequation = \"x_l = x_{l-1} + l^(-1/2) F_l(Norm(x_{l-1}))\"\nsource = \"test\"\nfinal_norm = \"layer\"\n\n[[placement.segment]]\ninput = \"layer\"\nbranch = \"1/sqrt(l)\"\n",
    )
    .unwrap();
    let base = [
        "--placements",
        "decay.toml",
        "--preset",
        "my-decay",
        "--metrics",
        "stream_sq",
        "--layers",
        "last",
        "--out",
        "out.csv",
    ];
    for cmd in ["theory", "mc"] {
        let mut a = vec![cmd, "--depth", "1000000000"];
        a.extend(base);
        if cmd == "mc" {
            a.extend(["--width", "2", "--tokens", "1"]);
        }
        assert_refused(&a, dir.path(), ULIMIT_KB, &["too large", "--depth"]);
    }
    let mut a = vec!["theory", "--depth", "1000"];
    a.extend(&base[..8]);
    let o = run_limited(&a, dir.path(), ULIMIT_KB);
    let out = common::success_stdout(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
}

/// The report's DyT closed form: its slots are integrated by quadrature, a few blocks per
/// second, so depth 1e6 (days) is refused naming `--depth` and the largest depth that fits
/// the hour; that depth itself passes the preflight (checked without running it: one more
/// block is refused), and LayerNorm at the same depth, millions of blocks per second, runs.
#[test]
fn dyt_quadrature_is_costed_at_its_own_rate() {
    let dir = tempfile::tempdir().unwrap();
    // The report's command at `depth` with `norm`, and `--out out.csv` when `out`.
    let run = |norm: &str, depth: &str, out: bool| {
        let mut a = vec![
            "theory",
            "--preset",
            "pre",
            "--branch",
            "relu-mlp",
            "--layers",
            "last",
            "--metrics",
            "stream_sq",
            "--norm",
            norm,
            "--depth",
            depth,
        ];
        if out {
            a.extend(["--out", "out.csv"]);
        }
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let refused = |depth: &str| {
        let a = run("dyt", depth, true);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        assert_refused(
            &a,
            dir.path(),
            ULIMIT_KB,
            &["too large", "--depth", "at most"],
        )
    };
    let err = refused("1000000");
    let fits: usize = err
        .split("--depth to at most ")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no largest depth in {err}"));
    assert!((100..100_000).contains(&fits), "{err}");
    assert!(err.contains("days"), "{err}");
    // One block more than the largest depth is refused; the largest is not refused by the
    // preflight (its run would take up to the hour, so it is not run here).
    refused(&(fits + 1).to_string());
    for (norm, depth) in [("dyt", "4"), ("layer", "1000000")] {
        let a = run(norm, depth, false);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = run_limited(&a, dir.path(), ULIMIT_KB);
        assert_eq!(common::success_stdout(&o).lines().count(), 2, "{a:?}");
    }
}

/// The report's Monte Carlo run under a small address-space limit (`prlimit --as`): the
/// threads' stacks and malloc arenas are virtual reservations the limit counts, so the
/// preflight counts them too. At every limit the run either completes or is refused naming
/// RLIMIT_AS (exit 2); it is never aborted by the allocator (SIGABRT) or killed.
#[test]
fn a_small_address_space_is_refused_or_enough_never_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "mc",
        "--preset",
        "pre",
        "--branch",
        "relu-mlp",
        "--depth",
        "16",
        "--width",
        "256",
        "--tokens",
        "8",
        "--samples",
        "4",
        "--layers",
        "last",
        "--metrics",
        "stream_sq",
    ];
    let mut outcomes = Vec::new();
    for limit_mb in [200u64, 300, 400, 500, 700, 1000, 2000] {
        let o = run_limited(&args, dir.path(), limit_mb * 1_000_000 / 1024);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        match o.status.code() {
            Some(0) => {
                assert_eq!(
                    common::success_stdout(&o).lines().count(),
                    2,
                    "{limit_mb} MB"
                );
            }
            Some(2) => {
                assert_eq!(err.lines().count(), 1, "{limit_mb} MB: {err}");
                assert!(
                    err.contains("RLIMIT_AS") && err.contains("too large"),
                    "{limit_mb} MB: {err}"
                );
                assert!(o.stdout.is_empty(), "{limit_mb} MB");
            }
            other => panic!("{limit_mb} MB: exit {other:?} (a signal?): {err}"),
        }
        outcomes.push(o.status.code());
    }
    // The smallest limit cannot hold the run, the largest can.
    assert_eq!(outcomes.first(), Some(&Some(2)), "{outcomes:?}");
    assert_eq!(outcomes.last(), Some(&Some(0)), "{outcomes:?}");
}

/// The training estimate (`TrainConfig::memory_bytes`) against the peak resident set of the
/// run it estimates (`wait4`'s `ru_maxrss` of the child, a memory measure), over a grid of
/// decoder runs of a few seconds each: Transformers of width 32 and 64, sequences of 16 to 64
/// tokens and batches of 16 to 64, a ReLU MLP and a regression. Every estimate is within a
/// factor of 2 of its peak (the sequences' attention was once estimated over the whole
/// batch's columns: 22.6 GB for a 0.4 GB run).
/// Runs its arguments as a command (output discarded) and prints the largest resident set of
/// its children in KiB (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, Linux).
const PEAK_OF_CHILD: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n\
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
sys.exit(r.returncode)";

#[test]
fn the_training_estimate_is_within_2x_of_the_peak_resident_set() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not installed (it measures the run's own peak memory)");
        return;
    }
    use normscope::model::RawModel;
    use normscope::train::config::RawTrain;
    use normscope::train::task::{TaskConfig, TaskKind};
    let dir = tempfile::tempdir().unwrap();
    let base = RawTrain::default();
    // (width, depth, branch, task, seq, batch, steps)
    let grid: &[(usize, usize, &str, TaskKind, usize, usize, u64)] = &[
        (32, 12, "transformer", TaskKind::TeacherLm, 16, 16, 20),
        (64, 12, "transformer", TaskKind::TeacherLm, 32, 32, 10),
        (32, 12, "transformer", TaskKind::TeacherLm, 64, 64, 5),
        (128, 12, "relu-mlp", TaskKind::TeacherLm, 16, 64, 5),
        (256, 4, "relu-mlp", TaskKind::Regression, 16, 256, 10),
    ];
    for &(width, depth, branch, kind, seq, batch, steps) in grid {
        let raw = RawTrain {
            model: RawModel {
                width,
                depth,
                branch: branch.into(),
                ..base.model.clone()
            },
            task: TaskConfig {
                kind,
                seq,
                ..base.task
            },
            batch,
            steps,
            ..base.clone()
        };
        let (model, log) = raw.check().unwrap().memory_bytes();
        let estimate = (model + log) as f64;
        let task = match kind {
            TaskKind::Regression => "regression",
            _ => "teacher-lm",
        };
        let args = [
            "train".to_string(),
            "--width".into(),
            width.to_string(),
            "--depth".into(),
            depth.to_string(),
            "--branch".into(),
            branch.into(),
            "--task".into(),
            task.into(),
            "--seq".into(),
            seq.to_string(),
            "--batch".into(),
            batch.to_string(),
            "--steps".into(),
            steps.to_string(),
            "--out".into(),
            "log.csv".into(),
        ];
        // The peak resident set of the run alone: a child's `ru_maxrss` counts the image it
        // was forked from until its exec (this test process, gigabytes while the other tests
        // run), so the run is the child of a small Python process, whose children's maximum
        // is the run's own.
        let o = Command::new("python3")
            .args(["-c", PEAK_OF_CHILD, env!("CARGO_BIN_EXE_normscope")])
            .args(&args)
            .current_dir(dir.path())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", o.status);
        let kib: f64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        let peak = kib * 1024.0;
        let ratio = estimate / peak;
        assert!(
            (0.5..=2.0).contains(&ratio),
            "{args:?}: estimate {estimate:.3e} B, peak {peak} B, ratio {ratio:.2}"
        );
    }
}
