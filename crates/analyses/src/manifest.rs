//! `data/<id>/manifest.json`: analysis id, crate version, source commit, toolchain (rustc
//! version and target), the command line, whether the quick defaults were used, the resolved
//! configuration, seeds, the sha256 of every input read from earlier analyses and of every
//! output
//! (paths relative to the output root; the hash of the bytes the run wrote, not a re-read of
//! the disk). No timestamps, so an unchanged rerun leaves the file byte-identical.
//!
//! The source commit is the last commit that touched the code (`src`, `analyses`, `Cargo.toml`,
//! `Cargo.lock`) in the repository the binary was built from, with `dirty: true` when that code
//! has uncommitted changes. It is `null` where git or the repository is unavailable. Data
//! committed after the code it came from therefore names that code's commit, and a rerun on
//! the same checkout reproduces the manifest byte for byte.

use normscope_core::Result;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The code paths (from the repository's root) whose last commit identifies the source.
pub const CODE_PATHS: [&str; 4] = ["src", "crates", "Cargo.toml", "Cargo.lock"];

/// `--version`: the workspace version, the git commit it was built from and the toolchain
/// (all recorded at build time by this crate's `build.rs`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NORMSCOPE_BUILD_COMMIT"),
    "; ",
    env!("NORMSCOPE_RUSTC"),
    "; ",
    env!("NORMSCOPE_TARGET"),
    ")"
);

/// The toolchain the binary was built with (recorded by `build.rs`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Build {
    /// `rustc --version` at build time.
    pub rustc: &'static str,
    /// The target triple.
    pub target: &'static str,
}

impl Build {
    /// This binary's.
    pub const fn current() -> Self {
        Build {
            rustc: env!("NORMSCOPE_RUSTC"),
            target: env!("NORMSCOPE_TARGET"),
        }
    }
}

/// Where the code came from.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Source {
    /// Last commit touching [`CODE_PATHS`], if git and the repository are available.
    pub git_commit: Option<String>,
    /// Whether [`CODE_PATHS`] have uncommitted changes.
    pub dirty: Option<bool>,
}

impl Source {
    /// Asks git in the crate's source directory (compile-time `CARGO_MANIFEST_DIR`).
    pub fn detect() -> Self {
        let dir = env!("CARGO_MANIFEST_DIR");
        let git = |args: &[&str]| -> Option<String> {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .args(["--"])
                .args(CODE_PATHS.map(|p| format!(":/{p}")))
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let commit = git(&["log", "-1", "--format=%H"]).filter(|c| !c.is_empty());
        let dirty = commit
            .as_ref()
            .and_then(|_| git(&["status", "--porcelain"]))
            .map(|s| !s.is_empty());
        Source {
            git_commit: commit,
            dirty,
        }
    }
}

/// The manifest of one analysis run.
#[derive(Serialize)]
pub struct Manifest<'a> {
    /// Analysis id.
    pub analysis: &'a str,
    /// `CARGO_PKG_VERSION`.
    pub crate_version: &'a str,
    /// Source commit.
    pub source: Source,
    /// Toolchain.
    pub build: Build,
    /// The command line that made the outputs (`normscope` and its arguments).
    pub invocation: String,
    /// Whether the `--quick` defaults were used.
    pub quick: bool,
    /// Resolved configuration.
    pub config: serde_json::Value,
    /// Base seeds.
    pub seeds: Vec<u64>,
    /// Input path (relative to the root) -> sha256, for analyses that read earlier ones'
    /// outputs (the claims ledger).
    pub inputs: BTreeMap<String, String>,
    /// Output path (relative to the root) -> sha256.
    pub outputs: BTreeMap<String, String>,
}

/// The command line as run: `normscope` followed by the arguments, each quoted when it holds
/// a space or quote. The `--out-dir` folder is written as `DIR`: where the outputs went does
/// not change them, and the manifest of a rerun elsewhere stays byte-identical.
pub fn invocation() -> String {
    let mut after_out_dir = false;
    let args = std::env::args().skip(1).map(|a| {
        if std::mem::take(&mut after_out_dir) {
            return "DIR".to_string();
        }
        if a == "--out-dir" {
            after_out_dir = true;
        } else if a.starts_with("--out-dir=") {
            return "--out-dir=DIR".to_string();
        }
        if a.is_empty() || a.contains([' ', '"', '\'', '\\']) {
            format!("{a:?}")
        } else {
            a
        }
    });
    std::iter::once("normscope".to_string())
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

/// sha256 of bytes, hex.
pub fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// sha256 of a file, hex: a regular file of at most [`normscope_core::input::DATA_CAP`] bytes.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = normscope_core::input::read(path, "input file", normscope_core::input::DATA_CAP)?;
    Ok(sha256(&bytes))
}

/// The manifest's file name in `data/<id>/`.
pub const FILE: &str = "manifest.json";

/// The bytes of `data/<id>/manifest.json` (pretty JSON and a final newline).
pub fn to_bytes(m: &Manifest) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(m).expect("manifest serializes");
    text.push('\n');
    text.into_bytes()
}
