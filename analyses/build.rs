//! Records what the workspace was built from, for `--version` and the manifests
//! (`manifest::VERSION` and `manifest::Build`): the git commit
//! of the source tree (if it is a git checkout), the rustc version and the target triple.

use std::process::Command;

fn main() {
    let run = |cmd: &str, args: &[&str]| -> Option<String> {
        let out = Command::new(cmd).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = run("git", &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = run(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=NORMSCOPE_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=NORMSCOPE_RUSTC={version}");
    println!("cargo:rustc-env=NORMSCOPE_TARGET={target}");
    // Rebuild when the checked-out commit moves (not on every file change): git names the
    // files, so a linked worktree (whose `.git` is a file) is followed too. Only paths that
    // exist: cargo reruns a script whose listed path is missing on every build.
    for name in ["HEAD", "refs/heads", "packed-refs"] {
        if let Some(p) = run(
            "git",
            &["rev-parse", "--path-format=absolute", "--git-path", name],
        ) && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
