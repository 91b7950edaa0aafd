//! The provenance of a standalone `--out` file (`theory`, `mc`, `compare`, `expand`, `train`,
//! `plot`): `FILE.manifest.json` beside it, with what an analysis's manifest records
//! ([`super::manifest`]) for one file.

use super::manifest::{Build, Source, invocation, sha256};
use normscope_core::Result;
use std::path::Path;

/// The provenance of a standalone `--out` file (`theory`, `mc`, `compare`, `expand`, `train`,
/// `plot`), written beside it as `FILE.manifest.json`: the file's name and sha256, the crate
/// version, the commit the binary was built from, the source commit and whether it was dirty
/// (as in an analysis's manifest), the toolchain and the command line.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::runner::sidecar::sidecar;
/// let json: serde_json::Value =
///     serde_json::from_slice(&sidecar(std::path::Path::new("/tmp/t.csv"), b"a,b\n")).unwrap();
/// assert_eq!(json["output"], "t.csv");
/// assert_eq!(json["sha256"].as_str().unwrap().len(), 64);
/// assert!(json["invocation"].as_str().unwrap().starts_with("normscope"));
/// ```
pub fn sidecar(path: &Path, bytes: &[u8]) -> Vec<u8> {
    let mut v = serde_json::json!({
        "output": path.file_name().map(|n| n.to_string_lossy().into_owned()),
        "sha256": sha256(bytes),
    });
    if let (Some(map), serde_json::Value::Object(p)) = (v.as_object_mut(), provenance()) {
        map.extend(p);
    }
    let mut out = serde_json::to_vec_pretty(&v).expect("JSON values print");
    out.push(b'\n');
    out
}

/// What produced an output, as [`sidecar`] records it without the file's own name and hash:
/// the crate version, the build commit, the source commit and whether it was dirty, the
/// toolchain and the command line (which holds every setting and seed), and the sha256 of
/// each `--placements` file read ([`normscope_core::placement::loaded_files`]), since rows
/// name a file's preset only by its name.
pub fn provenance() -> serde_json::Value {
    let mut v = serde_json::json!({
        "crate_version": env!("CARGO_PKG_VERSION"),
        "build_commit": env!("NORMSCOPE_BUILD_COMMIT"),
        "source": Source::detect(),
        "build": Build::current(),
        "invocation": invocation(),
    });
    let files = normscope_core::placement::loaded_files();
    if !files.is_empty() {
        v["placements"] = files
            .into_iter()
            .map(|(path, sha)| serde_json::json!({ "path": path, "sha256": sha }))
            .collect();
    }
    v
}

/// The key under which a standalone Parquet `--out` carries its [`provenance`] as file
/// metadata.
pub const PARQUET_KEY: &str = "normscope.provenance";

/// The bytes of table `df` for `--out` in `format`: a Parquet file carries the
/// [`provenance`] as its file metadata under [`PARQUET_KEY`] (the sidecar is written too).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::runner::sidecar::encode_table;
/// use normscope_core::output::table::{Format, column};
/// use polars::prelude::DataFrame;
/// let mut df = DataFrame::new_infer_height(vec![column("x", [1.5])]).unwrap();
/// assert_eq!(encode_table(Format::Csv, &mut df).unwrap(), b"x\n1.5\n");
/// let parquet = encode_table(Format::Parquet, &mut df).unwrap();
/// let text = String::from_utf8_lossy(&parquet);
/// assert!(text.contains("normscope.provenance") && text.contains("invocation"));
/// ```
pub fn encode_table(
    format: normscope_core::output::table::Format,
    df: &mut polars::prelude::DataFrame,
) -> Result<Vec<u8>> {
    let json = serde_json::to_string(&provenance()).expect("JSON values print");
    format.encode_with(df, &[(PARQUET_KEY.to_string(), json)])
}

/// The sidecar path of `path`: `FILE.manifest.json`.
pub fn sidecar_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".manifest.json");
    path.with_file_name(name)
}

/// Checks `--out` before anything runs: as [`normscope_core::output::atomic::check_target`]
/// does, and its sidecar's path as well ([`normscope_core::output::pair::check_pair`]): not a
/// folder, symlink, FIFO or device, and a name within the file system's limit.
pub fn check_out(path: &Path) -> Result<()> {
    normscope_core::output::pair::check_pair(
        "--out",
        path,
        &sidecar_path(path),
        "provenance sidecar",
    )
}

/// Writes `bytes` to `out` (standard output if `None`) and, for a file, its [`sidecar`]:
/// both land or neither, and a failure leaves the old file and its old sidecar as they were
/// ([`normscope_core::output::pair`]).
pub fn emit_with_provenance(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    let Some(path) = out else {
        return normscope_core::output::atomic::emit(None, bytes);
    };
    normscope_core::output::pair::write_pair(
        path,
        bytes,
        &sidecar_path(path),
        &sidecar(path, bytes),
    )
}
