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
    let v = serde_json::json!({
        "output": path.file_name().map(|n| n.to_string_lossy().into_owned()),
        "sha256": sha256(bytes),
        "crate_version": env!("CARGO_PKG_VERSION"),
        "build_commit": env!("NORMSCOPE_BUILD_COMMIT"),
        "source": Source::detect(),
        "build": Build::current(),
        "invocation": invocation(),
    });
    let mut out = serde_json::to_vec_pretty(&v).expect("JSON values print");
    out.push(b'\n');
    out
}

/// The sidecar path of `path`: `FILE.manifest.json`.
pub fn sidecar_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".manifest.json");
    path.with_file_name(name)
}

/// Writes `bytes` to `out` (standard output if `None`) and, for a file, its
/// [`sidecar`]; both atomically, and the file is removed again if its sidecar cannot be
/// written (no output without its provenance).
pub fn emit_with_provenance(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    let Some(path) = out else {
        return normscope_core::output::atomic::emit(None, bytes);
    };
    normscope_core::output::atomic::write_bytes(path, bytes)?;
    if let Err(e) =
        normscope_core::output::atomic::write_bytes(&sidecar_path(path), &sidecar(path, bytes))
    {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(())
}
