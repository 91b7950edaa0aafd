//! `data/<id>/manifest.json`: analysis id, crate version, source commit, whether the quick
//! defaults were used, the resolved configuration, seeds, and the sha256 of every output
//! (paths relative to the output root; the hash of the bytes the run wrote, not a re-read of
//! the disk). No timestamps, so an unchanged rerun leaves the file byte-identical.
//!
//! The source commit is the last commit that touched the code (`src`, `analyses`, `Cargo.toml`,
//! `Cargo.lock`) in the repository the binary was built from, with `dirty: true` when that code
//! has uncommitted changes. It is `null` where git or the repository is unavailable. Data
//! committed after the code it came from therefore names that code's commit, and a rerun on
//! the same checkout reproduces the manifest byte for byte.

use crate::Result;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The code paths whose last commit identifies the source.
pub const CODE_PATHS: [&str; 4] = ["src", "analyses", "Cargo.toml", "Cargo.lock"];

/// Where the code came from.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
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
                .args(CODE_PATHS)
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
    /// Whether the `--quick` defaults were used.
    pub quick: bool,
    /// Resolved configuration.
    pub config: serde_json::Value,
    /// Base seeds.
    pub seeds: Vec<u64>,
    /// Output path (relative to the root) -> sha256.
    pub outputs: BTreeMap<String, String>,
}

/// sha256 of bytes, hex.
pub fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| crate::Error::Io {
        path: path.display().to_string(),
        source: e,
    })?;
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
