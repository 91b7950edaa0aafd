//! The Python the PyTorch comparisons run, shared by the integration tests of the root package
//! (`tests/it`) and of the bench (`crates/bench/tests`); included by path in both.

/// The Python with PyTorch to use (`NORMSCOPE_TORCH_PYTHON`, else `python3`), or why there
/// is none.
pub fn torch_python() -> Result<String, String> {
    let python = std::env::var("NORMSCOPE_TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&python)
        .args(["-c", "import torch"])
        .output()
        .map_err(|e| format!("{python} did not start ({e})"))?;
    if out.status.success() {
        Ok(python)
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{python} -c \"import torch\" failed ({}); set NORMSCOPE_TORCH_PYTHON",
            err.lines().last().unwrap_or("no output").trim()
        ))
    }
}

/// [`torch_python`], or `None` after printing `skipped: no PyTorch: <why>` (the test then
/// returns early and passes).
pub fn torch_or_skip() -> Option<String> {
    torch_python()
        .inspect_err(|why| println!("skipped: no PyTorch: {why}"))
        .ok()
}
