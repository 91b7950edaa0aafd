//! `normscope-bench --train-grid --quick`: the repetitions, normscope's median, and with a
//! Python that has torch, both PyTorch modes (eager loop, vmap ensemble) and the ratio to the
//! better of them. No time is asserted.

use crate::common;

use crate::common::success_stdout as stdout;
use std::process::Output;

fn bench(args: &[&str]) -> Output {
    let mut all = vec!["--train-grid", "--quick", "--precision", "f32"];
    all.extend_from_slice(args);
    common::bench(&all)
}

#[test]
fn repetitions_and_their_median_without_torch() {
    let out = stdout(&bench(&["--no-torch", "--repeats", "2"]));
    for r in [
        "[1/2] normscope f32: 3 runs in",
        "[2/2] normscope f32: 3 runs in",
        "normscope f32: median ",
    ] {
        assert!(out.contains(r), "{r}: {out}");
    }
    assert!(!out.contains("pytorch"), "{out}");
}

#[test]
fn ratio_to_the_better_torch_mode() {
    let Some(python) = common::torch_or_skip() else {
        return;
    };
    let out = stdout(&bench(&["--repeats", "1", "--python", &python]));
    assert!(out.contains("[1/1] pytorch "), "{out}");
    assert!(
        out.contains("eager loop ") && out.contains("vmap ensemble "),
        "{out}"
    );
    let verdict = out
        .lines()
        .find(|l| l.contains("ratio to the better ("))
        .unwrap_or_else(|| panic!("no ratio line: {out}"));
    assert!(verdict.contains("target >= 3.0x: "), "{verdict}");
}

/// `bench --all --quick --repeats 1` with `script` as the training reference: its standard
/// output and error, after checking that the run failed.
fn failing_all(python: &str, script: &std::path::Path) -> (String, String) {
    let o = common::bench(&[
        "--all",
        "--quick",
        "--repeats",
        "1",
        "--python",
        python,
        "--train-script",
        script.to_str().unwrap(),
    ]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(!o.status.success(), "{out}");
    (out, err)
}

/// `--all` with a part that fails (here the training part, whose PyTorch script raises): the
/// error is printed, that part's targets are "not measured" with the reason in the summary,
/// the part after it (the training-analysis cell) still runs and is judged, and the run exits
/// non-zero. Needs PyTorch (the Monte Carlo part runs it).
#[test]
fn a_failing_part_of_all_leaves_the_rest_and_the_summary_and_fails_the_run() {
    let Some(python) = common::torch_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("raises.py");
    std::fs::write(&script, "raise ValueError('boom')\n").unwrap();
    let (out, err) = failing_all(&python, &script);
    for p in ["f64 / pytorch float64", "f32 / pytorch float32"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("training normscope {p} ")))
            .unwrap_or_else(|| panic!("no summary line for the failed part in {p}: {out}"));
        assert!(
            line.contains("the part failed") && line.contains("ValueError: boom"),
            "{line}"
        );
        assert!(line.contains(", not measured ["), "{line}");
        assert!(!line.contains("pip install"), "{line}");
    }
    // The part after the failed one ran: its ratio line, and its f32 target judged.
    assert!(out.contains("ratio to the better ("), "{out}");
    let grid = out
        .lines()
        .find(|l| l.starts_with("train-grid cell normscope f32 "))
        .unwrap_or_else(|| panic!("no summary line for the grid cell: {out}"));
    assert!(
        grid.contains(", met [") || grid.contains(", not met ["),
        "{grid}"
    );
    // Two not measured from the failed part; the grid's f64 line has no target.
    let tally = out
        .lines()
        .find(|l| l.contains(" targets met, "))
        .unwrap_or_else(|| panic!("no tally: {out}"));
    assert!(
        tally.ends_with(", 2 not measured; 1 without a target"),
        "{tally}"
    );
    assert!(
        err.contains("training reference failed (ValueError: boom)"),
        "{err}"
    );
}

/// `--all` with a training script that fails only in f32: f64's ratio, measured before the
/// failure, stays in the summary with its verdict; only f32's target is "not measured".
/// Needs PyTorch.
#[test]
fn a_part_failing_in_f32_keeps_its_f64_result() {
    let Some(python) = common::torch_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("f32_raises.py");
    let real = std::path::Path::new(common::ROOT)
        .join("benches/torch_train_reference.py")
        .canonicalize()
        .unwrap();
    std::fs::write(
        &script,
        format!(
            "import runpy, sys\n\
             if 'float32' in sys.argv:\n    raise ValueError('boom32')\n\
             sys.argv[0] = {real:?}\n\
             runpy.run_path({real:?}, run_name='__main__')\n"
        ),
    )
    .unwrap();
    let (out, err) = failing_all(&python, &script);
    let line = |p: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("training normscope {p} ")))
            .unwrap_or_else(|| panic!("no summary line for {p}: {out}"))
            .to_string()
    };
    let f64_line = line("f64 / pytorch float64");
    assert!(
        f64_line.contains("x, met [") || f64_line.contains("x, not met ["),
        "{f64_line}"
    );
    let f32_line = line("f32 / pytorch float32");
    assert!(
        f32_line.contains("the part failed") && f32_line.contains("ValueError: boom32"),
        "{f32_line}"
    );
    assert!(f32_line.contains(", not measured ["), "{f32_line}");
    // One line each, in order.
    let training: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("training normscope "))
        .collect();
    assert_eq!(training.len(), 2, "{out}");
    assert!(training[0].starts_with("training normscope f64 "), "{out}");
    assert!(err.contains("ValueError: boom32"), "{err}");
}
