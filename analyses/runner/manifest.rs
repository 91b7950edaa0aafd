//! `data/<id>/manifest.json`: analysis id, crate version, source commit, toolchain (rustc
//! version and target), the command line, whether the quick defaults were used, the resolved
//! configuration, seeds, the sha256 of every input read from earlier analyses and of every
//! output
//! (paths relative to the output root; the hash of the bytes the run wrote, not a re-read of
//! the disk). No timestamps, so an unchanged rerun leaves the file byte-identical.
//!
//! The source commit is the last commit that touched the code ([`CODE_PATHS`]: `src`,
//! `crates`, `analyses`, `Cargo.toml`, `Cargo.lock`) in the repository the binary was built from, with
//! `dirty: true` when that code has uncommitted changes. It is `null` where git or the
//! repository is unavailable.
//!
//! **A manifest names the commit that last changed its outputs** ([`keep`]): a run whose
//! manifest would differ from the one already in `data/<id>/` only in `source` and
//! `invocation` (same crate version, toolchain, configuration, seeds, inputs and output
//! hashes) keeps the one in place, byte for byte. A code change that changes no output
//! therefore changes no file under `data/` or `figures/` when the data are regenerated, and
//! needs no data commit; the recorded commit is one whose code wrote exactly these bytes.
//! `tests/` checks this at HEAD on the analyses whose full run is quick.

use normscope_core::Result;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The code paths (from the repository's root) whose last commit identifies the source.
pub const CODE_PATHS: [&str; 5] = ["src", "crates", "analyses", "Cargo.toml", "Cargo.lock"];

/// The build's fingerprint: sha256 of the sources it was built from (`src`, `crates`,
/// `analyses`, `examples`, `Cargo.toml`, `Cargo.lock`: paths and bytes), the toolchain, the
/// target and the profile (this crate's `build.rs`). Every binary of one build has it, so
/// `normscope merge` takes the shards of `normscope reproduce --shard` and of an analysis
/// binary's `--shard` alike, and refuses those of other sources.
pub const BUILD_SHA256: &str = env!("NORMSCOPE_BUILD_SHA256");

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
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::manifest::Build;
/// let b = Build::current();
/// assert!(b.target.starts_with(std::env::consts::ARCH)); // e.g. x86_64-unknown-linux-gnu
/// assert!(b.rustc.starts_with("rustc ") || b.rustc == "unknown"); // `rustc --version`
/// ```
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
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::manifest::Source;
/// let s = Source { git_commit: None, dirty: None };
/// assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"git_commit":null,"dirty":null}"#);
/// let back: Source = serde_json::from_str(r#"{"git_commit":"abc","dirty":false}"#).unwrap();
/// assert_eq!(back.git_commit.as_deref(), Some("abc"));
/// ```
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Source {
    /// Last commit touching [`CODE_PATHS`], if git and the repository are available.
    pub git_commit: Option<String>,
    /// Whether [`CODE_PATHS`] have uncommitted changes.
    pub dirty: Option<bool>,
}

impl Source {
    /// Asks git in the crate's source directory (compile-time `CARGO_MANIFEST_DIR`).
    pub(crate) fn detect() -> Self {
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
///
/// # Examples
///
/// A rerun at a later commit that wrote the same outputs keeps the manifest in place, byte
/// for byte ([`keep`]); one whose outputs changed writes its own.
///
/// ```rust
/// use normscope_analyses::manifest::{keep, sha256, Build, Manifest, Source};
/// use std::collections::BTreeMap;
///
/// let run = |commit: &str, csv: &[u8]| Manifest {
///     analysis: "expansion",
///     crate_version: "0.1.0",
///     source: Source { git_commit: Some(commit.into()), dirty: Some(false) },
///     build: Build::current(),
///     invocation: "normscope reproduce --only expansion".into(),
///     quick: false,
///     config: serde_json::json!({ "depth": 3 }),
///     seeds: vec![0],
///     inputs: BTreeMap::new(),
///     outputs: BTreeMap::from([("data/expansion/a.csv".into(), sha256(csv))]),
/// };
/// let first = keep(&run("aaa", b"x,y\n"), None);
/// assert!(first.ends_with(b"\n"));
/// assert_eq!(keep(&run("bbb", b"x,y\n"), Some(&first)), first);
/// let changed = keep(&run("bbb", b"x,z\n"), Some(&first));
/// assert_ne!(changed, first);
/// let json: serde_json::Value = serde_json::from_slice(&changed).unwrap();
/// assert_eq!(json["source"]["git_commit"], "bbb");
/// ```
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
    /// The command line that made the outputs (`normscope` and its arguments); an analysis
    /// binary records the `normscope reproduce --only <id> ...` line it stands for.
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
    invocation_of(std::env::args().skip(1))
}

/// [`invocation`] for the arguments `args` (after the program's name).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::manifest::invocation_of;
/// let args = ["reproduce", "--out-dir", "/tmp/x", "--config", "my file.toml"];
/// assert_eq!(
///     invocation_of(args.map(String::from)),
///     r#"normscope reproduce --out-dir DIR --config "my file.toml""#
/// );
/// ```
pub fn invocation_of(args: impl IntoIterator<Item = String>) -> String {
    let mut after_out_dir = false;
    let args = args.into_iter().map(|a| {
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

/// The manifest to write for a run whose new manifest is `new`, given the bytes of the one in
/// place (`old`, if any): `old` itself when the two agree in everything but `source` and
/// `invocation` and `old` names a clean commit (see the module docs), else `new`'s bytes.
pub fn keep(new: &Manifest, old: Option<&[u8]>) -> Vec<u8> {
    let fresh = to_bytes(new);
    let essence = |v: &mut serde_json::Value| {
        let clean = v["source"]["git_commit"].is_string() && v["source"]["dirty"] == false;
        if let Some(o) = v.as_object_mut() {
            o.remove("source");
            o.remove("invocation");
        }
        clean
    };
    let Some(old) = old else { return fresh };
    let Ok(mut was) = serde_json::from_slice::<serde_json::Value>(old) else {
        return fresh;
    };
    // Both sides through the same parser, so a float in the configuration compares as the
    // text it was written as.
    let mut now: serde_json::Value = serde_json::from_slice(&fresh).expect("manifest parses");
    essence(&mut now);
    if essence(&mut was) && was == now {
        old.to_vec()
    } else {
        fresh
    }
}

/// The key under which an analysis's Parquet tables carry [`parquet_metadata`].
pub const PARQUET_KEY: &str = "normscope.manifest";

/// What an analysis's Parquet tables carry besides the analysis and its inputs
/// ([`parquet_metadata`]).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::manifest::ParquetMeta;
/// let m = ParquetMeta { quick: true, config: serde_json::json!({}), seeds: vec![0] };
/// assert_eq!(m.seeds, [0]);
/// ```
#[derive(Clone, Debug)]
pub struct ParquetMeta {
    /// Whether the `--quick` defaults were used.
    pub quick: bool,
    /// Resolved configuration.
    pub config: serde_json::Value,
    /// Base seeds.
    pub seeds: Vec<u64>,
}

/// The file metadata of an analysis's Parquet tables: under [`PARQUET_KEY`], the manifest's
/// fields that hold for every commit that writes these bytes (analysis, crate version,
/// toolchain, quick, configuration, seeds, and the inputs read before the table was
/// written), and `"manifest": "manifest.json"`, the file beside it that adds the source
/// commit, the command line and every output's sha256. The commit cannot sit inside the
/// table (it is the one that last changed the bytes, [`keep`]), nor the command line (which
/// analyses ran with it changes nothing in them), nor a hash of the file itself. So a rerun at
/// a later commit rewrites the same Parquet bytes.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::manifest::{parquet_metadata, PARQUET_KEY};
/// let meta = parquet_metadata("warmup", false, &serde_json::json!({"seeds": 10}), &[0], &Default::default());
/// assert_eq!(meta[0].0, PARQUET_KEY);
/// let json: serde_json::Value = serde_json::from_str(&meta[0].1).unwrap();
/// assert_eq!(json["analysis"], "warmup");
/// assert_eq!(json["config"]["seeds"], 10);
/// assert_eq!(json["manifest"], "manifest.json");
/// assert!(json.get("source").is_none());
/// ```
pub fn parquet_metadata(
    analysis: &str,
    quick: bool,
    config: &serde_json::Value,
    seeds: &[u64],
    inputs: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let json = serde_json::json!({
        "analysis": analysis,
        "crate_version": env!("CARGO_PKG_VERSION"),
        "build": Build::current(),
        "quick": quick,
        "config": config,
        "seeds": seeds,
        "inputs": inputs,
        "manifest": FILE,
    });
    vec![(
        PARQUET_KEY.to_string(),
        serde_json::to_string(&json).expect("JSON values print"),
    )]
}

/// sha256 of bytes, hex.
pub fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// sha256 of a file, hex: a regular file of at most [`normscope_core::input::DATA_CAP`] bytes.
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let bytes = normscope_core::input::read(path, "input file", normscope_core::input::DATA_CAP)?;
    Ok(sha256(&bytes))
}

/// The manifest's file name in `data/<id>/`.
pub const FILE: &str = "manifest.json";

/// The bytes of `data/<id>/manifest.json` (pretty JSON and a final newline).
pub(crate) fn to_bytes(m: &Manifest) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(m).expect("manifest serializes");
    text.push('\n');
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(commit: &str, dirty: bool, output_hash: &str) -> Manifest<'static> {
        Manifest {
            analysis: "expansion",
            crate_version: "0.1.0",
            source: Source {
                git_commit: Some(commit.into()),
                dirty: Some(dirty),
            },
            build: Build::current(),
            invocation: format!("normscope {commit}"),
            quick: false,
            config: serde_json::json!({"depth": 3}),
            seeds: vec![0],
            inputs: BTreeMap::new(),
            outputs: BTreeMap::from([("data/expansion/a.csv".into(), output_hash.into())]),
        }
    }

    #[test]
    fn a_manifest_naming_the_same_outputs_is_kept() {
        let old = to_bytes(&manifest("aaa", false, "h1"));
        // Same outputs, new commit and command line: the old bytes, naming "aaa".
        assert_eq!(keep(&manifest("bbb", false, "h1"), Some(&old)), old);
        // Same outputs from a dirty tree: still the clean record of the same bytes.
        assert_eq!(keep(&manifest("bbb", true, "h1"), Some(&old)), old);
    }

    #[test]
    fn a_change_of_output_configuration_or_a_dirty_record_writes_afresh() {
        let old = to_bytes(&manifest("aaa", false, "h1"));
        let new = manifest("bbb", false, "h2");
        assert_eq!(keep(&new, Some(&old)), to_bytes(&new));
        let mut other = manifest("bbb", false, "h1");
        other.seeds = vec![1];
        assert_eq!(keep(&other, Some(&old)), to_bytes(&other));
        let dirty_old = to_bytes(&manifest("aaa", true, "h1"));
        let clean = manifest("bbb", false, "h1");
        assert_eq!(keep(&clean, Some(&dirty_old)), to_bytes(&clean));
        assert_eq!(keep(&clean, None), to_bytes(&clean));
        assert_eq!(keep(&clean, Some(b"not json")), to_bytes(&clean));
    }
}
