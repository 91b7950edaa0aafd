//! `normscope-bench --train --quick`: the repetitions, each side's median and the verdict
//! are printed (with PyTorch when a Python with torch is found, else without). No time is
//! asserted.

use crate::common;

use crate::common::success_stdout as stdout;
use std::process::Output;

fn bench(args: &[&str]) -> Output {
    let mut all = vec!["--train", "--quick", "--precision", "f64"];
    all.extend_from_slice(args);
    common::bench(&all)
}

#[test]
fn repetitions_and_their_median_without_torch() {
    let o = bench(&["--no-torch", "--repeats", "2"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("no PyTorch run, no verdict"), "{err}");
    let out = stdout(&o);
    for r in [
        "[1/2] normscope f64: 40 steps in",
        "[2/2] normscope f64: 40 steps in",
    ] {
        assert!(out.contains(r), "{r}: {out}");
    }
    assert!(out.contains("normscope f64: median "), "{out}");
    assert!(!out.contains("pytorch"), "{out}");
}

#[test]
fn zero_repetitions_are_refused() {
    let o = bench(&["--no-torch", "--repeats", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--repeats") && err.contains("at least 1"),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "nothing timed: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn verdict_on_the_medians_against_torch() {
    let Some(python) = common::torch_or_skip() else {
        return;
    };
    let out = stdout(&bench(&["--repeats", "2", "--python", &python]));
    assert!(out.contains("[2/2] pytorch "), "{out}");
    assert!(out.contains("eager float64: median "), "{out}");
    let verdict = out
        .lines()
        .find(|l| l.starts_with("ratio normscope f64 / pytorch float64: "))
        .unwrap_or_else(|| panic!("no ratio line: {out}"));
    assert!(
        verdict.contains("of the medians (paired runs "),
        "{verdict}"
    );
    assert!(verdict.contains("target >= 2.0x: "), "{verdict}");
}
