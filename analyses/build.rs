//! Records what the workspace was built from, for `--version` and the manifests
//! (`manifest::VERSION` and `manifest::Build`): the git commit
//! of the source tree (if it is a git checkout), the rustc version and the target triple; and
//! the build's fingerprint (`manifest::BUILD_SHA256`), which every binary of one build shares
//! (`normscope` and the analysis binaries), so a shard run by either merges with the other's.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the fingerprint covers, from the workspace root: the code paths of
/// `manifest::CODE_PATHS` and the example files the analyses embed.
const FINGERPRINTED: [&str; 6] = [
    "src",
    "crates",
    "analyses",
    "examples",
    "Cargo.toml",
    "Cargo.lock",
];

/// Every file below `p` (or `p` itself), sorted, skipping `target` folders and hidden entries.
fn files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            let name = e.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| n.starts_with('.') || n == "target") {
                continue;
            }
            files(&e, out);
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

/// sha256 over the fingerprinted files (path and bytes), the toolchain, target and profile.
fn fingerprint(root: &Path, toolchain: &[&str]) -> String {
    let mut all = Vec::new();
    for p in FINGERPRINTED {
        files(&root.join(p), &mut all);
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    let mut h = Sha256::new();
    for f in all {
        let rel = f.strip_prefix(root).unwrap_or(&f);
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&f).unwrap_or_default());
        h.update([0]);
    }
    for t in toolchain {
        h.update(t.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

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
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let build = fingerprint(&root, &[&version, &target, &profile]);
    println!("cargo:rustc-env=NORMSCOPE_BUILD_SHA256={build}");
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
