//! What the bench tests share: the binary run from the repository's root (where the PyTorch
//! scripts' default paths point), and the Python with PyTorch, when there is one.

use std::process::{Command, Output};

/// The repository's root.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Runs `normscope-bench` from the repository's root with `args`.
pub fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_normscope-bench"))
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("binary runs")
}

/// The standard output of a run that must have succeeded (else its standard error, as the
/// panic message).
pub fn success_stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

#[path = "../../../../tests/support/torch_python.rs"]
mod torch;
pub use torch::torch_or_skip;
