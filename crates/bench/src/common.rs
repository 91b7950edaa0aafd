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
/// names the script in errors (a failed run reports its last line of standard error).
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
        return Err(Error::Unsupported(format!(
            "{what} did not run ({}); install it with `pip install torch` or pass --python",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no output")
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Unsupported(format!("unreadable output of {what}: {e}")))
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
