//! `data/<id>/manifest.json`: analysis id, crate version, resolved configuration, seeds, and
//! the sha256 of every output (paths relative to the output root). No timestamps, so an
//! unchanged rerun leaves the file byte-identical.

use crate::Result;
use crate::output::atomic;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Serialize)]
struct Manifest<'a> {
    analysis: &'a str,
    crate_version: &'a str,
    config: &'a serde_json::Value,
    seeds: Vec<u64>,
    outputs: BTreeMap<String, String>,
}

/// sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| crate::Error::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

/// Writes `root/data/<id>/manifest.json` for `outputs` (paths relative to `root`).
pub fn write(
    root: &Path,
    id: &str,
    config: &serde_json::Value,
    seeds: Vec<u64>,
    outputs: &[String],
) -> Result<()> {
    let mut hashes = BTreeMap::new();
    for rel in outputs {
        hashes.insert(rel.clone(), sha256_file(&root.join(rel))?);
    }
    let m = Manifest {
        analysis: id,
        crate_version: env!("CARGO_PKG_VERSION"),
        config,
        seeds,
        outputs: hashes,
    };
    let mut text = serde_json::to_string_pretty(&m).expect("manifest serializes");
    text.push('\n');
    atomic::write_bytes(
        &root.join("data").join(id).join("manifest.json"),
        text.as_bytes(),
    )
}
