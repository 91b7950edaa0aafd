//! Analyses: small programs over the library that regenerate `data/<id>/` and
//! `figures/<id>/`. Each has an id, an embedded default configuration, and writes a
//! `manifest.json` listing its configuration and the sha256 of every output.
//!
//! Adding an analysis is one new file here plus one line in [`REGISTRY`].

pub mod effective_depth;
pub mod manifest;

use crate::{Error, Result};
use std::path::Path;

/// A registered analysis.
pub struct Analysis {
    /// Id: the folder name under `data/` and `figures/`.
    pub id: &'static str,
    /// One sentence on what it shows.
    pub about: &'static str,
    /// Runs it with its default configuration under `root`.
    pub run: fn(&Path) -> Result<()>,
}

/// Every analysis, in run order.
pub const REGISTRY: &[Analysis] = &[effective_depth::ANALYSIS];

/// Runs every analysis (or only `only`) under `root`.
pub fn reproduce(root: &Path, only: Option<&str>) -> Result<()> {
    let selected: Vec<&Analysis> = match only {
        None => REGISTRY.iter().collect(),
        Some(id) => vec![
            REGISTRY
                .iter()
                .find(|a| a.id == id)
                .ok_or_else(|| Error::Unknown {
                    kind: "analysis",
                    name: id.to_string(),
                    valid: REGISTRY.iter().map(|a| a.id).collect::<Vec<_>>().join(", "),
                })?,
        ],
    };
    for (i, a) in selected.iter().enumerate() {
        eprintln!("[{}/{}] {}: {}", i + 1, selected.len(), a.id, a.about);
        let t = std::time::Instant::now();
        (a.run)(root)?;
        eprintln!("      done in {:.1} s", t.elapsed().as_secs_f64());
    }
    Ok(())
}
