//! What the benches share: the verdict words, the statistic every target is judged on, the
//! default number of repeats, the precisions asked for, and the PyTorch scripts' JSON.

use normscope::monte_carlo::Precision;
use normscope::stats::bootstrap::median;
use normscope::{Error, Result};

/// The name of the statistic [`crate::train::verdict_ratio`] compares, as printed.
pub const VERDICT_STATISTIC: &str = "median";

/// The statistic [`VERDICT_STATISTIC`] names, of repeated measurements: what both benches'
/// verdicts are judged on.
pub fn statistic(xs: &[f64]) -> f64 {
    median(xs)
}

/// Repetitions of each side by default.
pub const DEFAULT_REPEATS: usize = 3;

/// `met` or `not met`.
pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "not met" }
}

/// Runs `python script args...` and parses its standard output as one JSON value; `what`
/// names the script in errors (a failed run reports its last line of standard error,
/// [`failure_text`]).
pub fn python_json(
    python: &str,
    script: &std::path::Path,
    args: &[impl AsRef<std::ffi::OsStr>],
    what: &str,
) -> Result<serde_json::Value> {
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| Error::Io {
            path: python.to_string(),
            source: e,
        })?;
    if !out.status.success() {
        return Err(Error::Unsupported(failure_text(
            what,
            python,
            script,
            &String::from_utf8_lossy(&out.stderr),
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Unsupported(format!("unreadable output of {what}: {e}")))
}

/// Checks, before anything is timed, that `python` (`--python`) runs and imports PyTorch and
/// numpy: a path that cannot be run is bad input naming `--python`, and so is a Python without
/// the modules, with the install hint (exit status 2 for both, as for a script that fails:
/// [`failure_text`]).
pub fn check_python(python: &str) -> Result<()> {
    let out = std::process::Command::new(python)
        .args(["-c", "import torch, numpy"])
        .output()
        .map_err(|e| {
            Error::invalid(
                "--python",
                python,
                format!("a Python interpreter this process can run (running it failed: {e})"),
            )
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or("no output");
    Err(Error::Unsupported(format!(
        "--python {python} cannot import torch and numpy ({last}); install them with `pip \
         install torch numpy` in a venv and pass its python"
    )))
}

/// Why a Python script failed, from its standard error's last line: a missing PyTorch or
/// numpy gets the install hint, anything else (an error in the script) the command to run by
/// hand for the whole traceback.
fn failure_text(what: &str, python: &str, script: &std::path::Path, stderr: &str) -> String {
    let last = stderr.lines().last().unwrap_or("no output");
    if last.contains("No module named 'torch'") || last.contains("No module named 'numpy'") {
        format!(
            "{what} did not run ({last}); install it with `pip install torch numpy` or pass --python"
        )
    } else {
        format!(
            "{what} failed ({last}); `{python} {}` with the same arguments shows the whole traceback",
            script.display()
        )
    }
}

/// The precisions a bench measures: the one `--precision` names, else both.
pub fn precisions(only: Option<Precision>) -> Vec<Precision> {
    only.map_or_else(|| Precision::ALL.to_vec(), |p| vec![p])
}

/// `f64 and f32`: the precisions' names, as the benches' headers print them.
pub fn names(precisions: &[Precision]) -> String {
    precisions
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(" and ")
}

#[cfg(test)]
mod tests {
    use super::{check_python, failure_text};
    use std::path::Path;

    #[test]
    fn a_python_that_cannot_run_or_import_torch_is_refused_naming_the_flag() {
        for bad in ["/nonexistent/python", "/etc/passwd"] {
            let e = check_python(bad).unwrap_err();
            let text = e.to_string();
            assert!(e.is_bad_input(), "{text}");
            assert!(
                text.contains("--python") && text.contains(bad) && text.contains("interpreter"),
                "{text}"
            );
        }
        // `true` runs and exits 0 for any arguments: accepted as it stands; `false` fails the
        // import check.
        assert!(check_python("true").is_ok());
        let text = check_python("false").unwrap_err().to_string();
        assert!(
            text.contains("--python false cannot import torch and numpy") && text.contains("pip"),
            "{text}"
        );
    }

    #[test]
    fn a_missing_torch_and_a_failing_script_are_told_apart() {
        let script = Path::new("benches/torch_ensemble.py");
        let missing = failure_text(
            "the PyTorch reference",
            "python3",
            script,
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'",
        );
        assert!(missing.contains("pip install torch numpy"), "{missing}");
        let failed = failure_text(
            "the PyTorch ensemble script",
            "/v/bin/python",
            script,
            "  File \"x\", line 117\nValueError: too many values to unpack (expected 2)",
        );
        assert!(!failed.contains("pip install"), "{failed}");
        assert!(
            failed.contains("failed (ValueError: too many values to unpack (expected 2))")
                && failed.contains("`/v/bin/python benches/torch_ensemble.py`"),
            "{failed}"
        );
    }
}
