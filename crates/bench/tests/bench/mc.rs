//! `normscope-bench --quick --no-torch`: every line is printed (both precisions, the issue's
//! targets from their constants, the memory lines or their skip reason). No time is asserted.

use std::process::Command;

fn bench(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_normscope-bench"))
        .args(["--quick", "--no-torch"])
        .args(args)
        .current_dir(crate::common::ROOT)
        .output()
        .expect("binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

fn has(out: &str, needles: &[&str]) -> bool {
    out.lines().any(|l| needles.iter().all(|n| l.contains(n)))
}

#[test]
fn quick_bench_prints_every_line_for_both_precisions() {
    let out = bench(&[]);
    let f64_kernel = normscope::numeric::exact_dgemm::kernel_name();
    for (p, torch_target, kernel) in [("f64", "3.0x", f64_kernel), ("f32", "2.0x", "faer")] {
        assert!(out.contains(&format!("== {p} ==")), "{out}");
        assert!(
            has(
                &out,
                &[
                    &format!("gemm rate ({p}"),
                    "matrixmultiply",
                    "faer",
                    "better: ",
                    &format!("(normscope's {p} products use {kernel})")
                ]
            ),
            "{p}: {out}"
        );
        // Three rounds by default (--repeats), each with its rates, then the verdict on the
        // median of the rounds' shares.
        for r in 1..=3 {
            assert!(
                has(
                    &out,
                    &[
                        &format!("[{r}/3] normscope's forward and backward passes ({p}"),
                        "GFLOP/s",
                        "of the better GEMM rate"
                    ]
                ),
                "{p}: {out}"
            );
            assert!(
                has(&out, &[&format!("[{r}/3] gemm rate ({p}"), "better: "]),
                "{p}: {out}"
            );
            // Where the wall time went: the products and the drawing were both timed (neither
            // is zero), and the rest, the wall time less the two, is not negative (it would be
            // if a drawing were timed inside a product, or a thread's time not divided).
            let split = out
                .lines()
                .find(|l| l.starts_with(&format!("[{r}/3] normscope's wall time ({p}): ")))
                .unwrap_or_else(|| panic!("{p}, round {r}: no split of the wall time: {out}"));
            let share = |label: &str| -> f64 {
                let after = split
                    .split(label)
                    .nth(1)
                    .unwrap_or_else(|| panic!("{split}"));
                let number = after.split('%').next().unwrap().rsplit(' ').next().unwrap();
                number
                    .parse()
                    .unwrap_or_else(|_| panic!("{label}: {split}"))
            };
            let (products, drawing) = (share("products "), share("weight drawing "));
            let rest = share("the rest (");
            assert!(products > 0.0 && drawing > 0.0, "{split}");
            assert!(rest >= -0.1, "{split}");
        }
        assert!(
            has(
                &out,
                &[
                    &format!("normscope's passes / better GEMM rate ({p}): median of 3 rounds"),
                    "(rounds ",
                    "target >= 80%: "
                ]
            ),
            "{p}: {out}"
        );
        assert!(
            has(
                &out,
                &[
                    &format!("ratio pytorch / normscope ({p})"),
                    "not measured (--no-torch)",
                    &format!("target >= {torch_target}")
                ]
            ),
            "{p}: {out}"
        );
        assert!(
            has(
                &out,
                &[&format!(
                    "peak memory of one streamed network (--memory streamed; {p}"
                )]
            ),
            "{p}: {out}"
        );
        for depth in [2, 8, 32] {
            let line = format!("memory L = {depth} ({p}):");
            let measured = has(
                &out,
                &[&line, "peak", "formula", "ratio", "target <= 2.0x: "],
            );
            let skipped = has(&out, &[&line, "target <= 2.0x"])
                && (has(&out, &[&line, "skipped: estimated"])
                    || has(&out, &[&line, "not measured on this OS"]));
            assert!(measured || skipped, "{line}: {out}");
        }
    }
}

#[test]
fn one_precision_and_chosen_memory_depths() {
    let out = bench(&["--precision", "f32", "--memory-depths", "3"]);
    assert!(
        out.contains("== f32 ==") && !out.contains("== f64 =="),
        "{out}"
    );
    assert!(out.contains("memory L = 3 (f32):"), "{out}");
    assert!(!out.contains("memory L = 8"), "{out}");
}

#[cfg(target_os = "linux")]
#[test]
fn memory_probe_prints_json() {
    let o = Command::new(env!("CARGO_BIN_EXE_normscope-bench"))
        .args(["--quick", "--memory-probe", "64", "--precision", "f64"])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["depth"], 64);
    assert_eq!(v["precision"], "f64");
    // The streamed network keeps its 65 streams x_l of d x n = 128 x 32 f64 (2.1 MB), and one
    // block's two 128 x 512 matrices (1 MB); a peak below the streams alone means the probe
    // did not measure the network. 16 times the streams bounds it from above: a held
    // network's 64 blocks of weights would be 64 MB.
    let streams = 65.0 * 128.0 * 32.0 * 8.0;
    let peak = v["peak"].as_f64().unwrap();
    assert!(peak >= streams && peak <= 16.0 * streams, "{peak}");
}

/// `bench --all`: the Monte Carlo lines, then the training lines, then one summary line per
/// target (two Monte Carlo targets per precision, one per memory depth and precision, one
/// training target per precision) and the tally; nothing is timed when `--repeats` is bad.
#[test]
fn all_measures_every_target_and_lists_them() {
    let out = bench(&["--all", "--repeats", "1", "--memory-depths", "3"]);
    let summary = out
        .split("== summary: the performance targets, measured in this run ==\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary: {out}"));
    assert!(out.contains("[1/1] normscope f32: 40 steps in"), "{out}");
    let all: Vec<&str> = summary.lines().collect();
    // The machine, then 2 precisions x (GEMM share, PyTorch ratio, memory at L = 3, training
    // ratio, train-grid ratio) with the machine beside each, + tally + note.
    let machine = all[0]
        .strip_prefix("machine: ")
        .unwrap_or_else(|| panic!("{summary}"));
    let kernel = if normscope::numeric::exact_dgemm::active() {
        "; f64 kernel blocks of "
    } else {
        "; f64 products by matrixmultiply (the engine's AVX-512 kernel is not in use)"
    };
    assert!(machine.contains(kernel), "{machine}");
    let lines = &all[1..];
    assert_eq!(lines.len(), 2 * 5 + 2, "{summary}");
    let beside = format!(" [{machine}]");
    assert!(
        lines[..10].iter().all(|l| l.ends_with(&beside)),
        "{summary}"
    );
    for p in ["f64", "f32"] {
        for needle in [
            format!(
                "Monte Carlo passes / better GEMM rate ({p}, median of 1 rounds) (target >= 80%): "
            ),
            format!(
                "Monte Carlo pytorch / normscope ({p}) (target >= {}x): --no-torch, not measured",
                if p == "f64" { "3.0" } else { "2.0" }
            ),
            format!("peak memory / 8 (d^2 r + L d n), L = 3 ({p}) (target <= 2.0x): "),
            format!("training normscope {p} / pytorch "),
            format!("train-grid cell normscope {p} / pytorch "),
        ] {
            assert!(
                lines.iter().any(|l| l.starts_with(&needle)),
                "{needle}: {summary}"
            );
        }
    }
    // f64's train-grid line has no target: listed, not counted.
    assert!(lines[10].contains(" of 9 targets met, "), "{summary}");
    assert!(
        lines[10].ends_with(" not measured; 1 without a target"),
        "{summary}"
    );
    // Both PyTorch ratios, both training ratios and f32's train-grid ratio at least
    // (--no-torch); a memory probe may also be skipped where the OS or the free memory does
    // not allow it.
    let not_measured: usize = lines[10]
        .trim_end_matches("; 1 without a target")
        .rsplit(", ")
        .next()
        .and_then(|t| t.strip_suffix(" not measured"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of targets not measured: {summary}"));
    assert!(not_measured >= 5, "{summary}");
    assert!(
        lines[11].starts_with("--quick: smoke-test sizes"),
        "{summary}"
    );

    refuses_zero_repeats(&["--all"]);
}

/// `bench --quick --no-torch --repeats 0` with `args` exits 2 with one line naming the flag
/// and what it accepts, before anything is timed (nothing on standard output).
fn refuses_zero_repeats(args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_normscope-bench"))
        .args(["--quick", "--no-torch", "--repeats", "0"])
        .args(args)
        .current_dir(crate::common::ROOT)
        .output()
        .expect("binary runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "nothing timed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--repeats") && err.contains("at least 1"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn monte_carlo_bench_times_in_rounds_and_refuses_zero_rounds() {
    // --repeats 1: one round, its share the verdict's.
    let out = bench(&[
        "--precision",
        "f64",
        "--repeats",
        "1",
        "--memory-depths",
        "2",
    ]);
    assert!(has(&out, &["[1/1] gemm rate (f64"]), "{out}");
    assert!(!out.contains("[2/"), "{out}");
    assert!(
        has(
            &out,
            &["passes / better GEMM rate (f64): median of 1 rounds"]
        ),
        "{out}"
    );
    // --repeats 0: refused, nothing timed.
    refuses_zero_repeats(&[]);
    // --repeats with --shards (which does not repeat): refused by the parser, exit 2.
    let o = Command::new(env!("CARGO_BIN_EXE_normscope-bench"))
        .args(["--shards", "2", "--repeats", "2"])
        .current_dir(crate::common::ROOT)
        .output()
        .expect("binary runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--repeats") && err.contains("--shards"),
        "{err}"
    );
}

/// `--memory-probe L` goes through the same size check as `normscope mc` (it once skipped it,
/// then aborted allocating 32 GB at L = 1e9): refused in one line naming the flag under a
/// 16 GiB address-space limit, while the bench's own depths still fit under it.
#[cfg(target_os = "linux")]
#[test]
fn the_memory_probe_is_checked() {
    let limited = |args: &[&str]| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", 16u64 << 20))
            .arg(env!("CARGO_BIN_EXE_normscope-bench"))
            .args(args)
            .current_dir(crate::common::ROOT)
            .output()
            .expect("sh runs")
    };
    let o = limited(&["--memory-probe", "1000000000"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("too large") && err.contains("--memory-probe"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let out = crate::common::success_stdout(&limited(&["--memory-probe", "8", "--quick"]));
    assert!(out.contains("\"peak\""), "{out}");
}

/// A `--repeats` beyond usize's range is refused naming the flag (exit 2, one line).
#[test]
fn an_out_of_range_repeats_is_refused_naming_it() {
    let o = crate::common::bench(&["--repeats", "18446744073709551615"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error:") && err.contains("--repeats"),
        "{err}"
    );
}
