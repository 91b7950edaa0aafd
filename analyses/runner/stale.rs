//! Stale analyses: an analysis that read another's outputs (the claims ledger reads 30 tables;
//! `stability-law` reads `warmup`'s manifest) records their sha256 in its manifest's `inputs`.
//! When a later `reproduce --only X` replaces one of those files with other bytes, the reader's
//! outputs no longer describe the folder. [`FILE`] (`data/STALE.txt`) then lists each such
//! analysis with the files that changed, and says how to rebuild it; it is absent when nothing
//! is stale.
//!
//! It is written before an analysis's outputs are moved into place (from the staged outputs'
//! hashes), so an interrupted run leaves it in place whenever the move may have happened, and
//! rewritten from the folder after the move (removed when the move changed nothing a reader
//! cites).

use super::manifest;
use normscope_core::Result;
use std::collections::BTreeMap;
use std::path::Path;

/// The list of stale analyses, relative to the output root.
pub const FILE: &str = "data/STALE.txt";

/// The `inputs` of each analysis's manifest under `root` (id -> relative path -> sha256),
/// for inputs inside the output folder. An unreadable manifest is skipped.
fn recorded(root: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Ok(dirs) = std::fs::read_dir(root.join("data")) else {
        return out;
    };
    for d in dirs.flatten() {
        let id = d.file_name().to_string_lossy().into_owned();
        let path = d.path().join(manifest::FILE);
        let Ok(bytes) = normscope_core::input::read_capped(&path, normscope_core::input::TEXT_CAP)
        else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            continue;
        };
        let inputs: BTreeMap<String, String> = v["inputs"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(rel, _)| rel.starts_with("data/") || rel.starts_with("figures/"))
            .filter_map(|(rel, h)| Some((rel.clone(), h.as_str()?.to_string())))
            .collect();
        if !inputs.is_empty() {
            out.insert(id, inputs);
        }
    }
    out
}

/// The analyses whose recorded inputs differ from the folder's files, with those files, if
/// analysis `upcoming` (its id and the outputs it is about to move in, relative path ->
/// sha256) replaced `data/<id>` and `figures/<id>`.
fn stale(
    root: &Path,
    upcoming: Option<(&str, &BTreeMap<String, String>)>,
) -> Vec<(String, Vec<String>)> {
    let mut hashes: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut current = |rel: &str| -> Option<String> {
        if let Some((id, outputs)) = upcoming
            && (rel.starts_with(&format!("data/{id}/"))
                || rel.starts_with(&format!("figures/{id}/")))
        {
            return outputs.get(rel).cloned();
        }
        hashes
            .entry(rel.to_string())
            .or_insert_with(|| manifest::sha256_file(&root.join(rel)).ok())
            .clone()
    };
    let mut out = Vec::new();
    for (id, inputs) in recorded(root) {
        if upcoming.is_some_and(|(u, _)| u == id) {
            continue;
        }
        let changed: Vec<String> = inputs
            .iter()
            .filter(|(rel, h)| current(rel).as_ref() != Some(*h))
            .map(|(rel, _)| rel.clone())
            .collect();
        if !changed.is_empty() {
            out.push((id, changed));
        }
    }
    out
}

/// Writes [`FILE`] listing the stale analyses (those whose recorded inputs differ from the
/// folder once `upcoming` has moved in), or removes it when none is.
pub fn update(root: &Path, upcoming: Option<(&str, &BTreeMap<String, String>)>) -> Result<()> {
    let list = stale(root, upcoming);
    let path = root.join(FILE);
    if list.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(normscope_core::Error::Io {
                path: path.display().to_string(),
                source: e,
            }),
            _ => Ok(()),
        };
    }
    let mut text = String::from(
        "# Analyses whose outputs cite files that have since been replaced by a later run.\n\
         # Rebuild them with `normscope reproduce --only ID` (this file then goes away).\n",
    );
    for (id, files) in &list {
        text.push_str(&format!("{id}: {}\n", files.join(", ")));
    }
    normscope_core::output::atomic::write_bytes(&path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(root: &Path, id: &str, inputs: &[(&str, &str)]) {
        let inputs: BTreeMap<&str, &str> = inputs.iter().copied().collect();
        let v = serde_json::json!({ "analysis": id, "inputs": inputs });
        std::fs::create_dir_all(root.join("data").join(id)).unwrap();
        std::fs::write(
            root.join("data").join(id).join(manifest::FILE),
            v.to_string(),
        )
        .unwrap();
    }

    #[test]
    fn a_reader_is_stale_exactly_when_a_file_it_cites_changed() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join("data/a")).unwrap();
        std::fs::write(root.join("data/a/x.csv"), "1").unwrap();
        let h = manifest::sha256(b"1");
        manifest(root, "a", &[]);
        manifest(root, "claims", &[("data/a/x.csv", &h)]);
        update(root, None).unwrap();
        assert!(!root.join(FILE).exists());
        // About to replace x.csv with the same bytes: not stale; with others: stale.
        let same = BTreeMap::from([("data/a/x.csv".to_string(), h.clone())]);
        update(root, Some(("a", &same))).unwrap();
        assert!(!root.join(FILE).exists());
        let other = BTreeMap::from([("data/a/x.csv".to_string(), manifest::sha256(b"2"))]);
        update(root, Some(("a", &other))).unwrap();
        let text = std::fs::read_to_string(root.join(FILE)).unwrap();
        assert!(text.contains("claims: data/a/x.csv"), "{text}");
        // The move did not happen: rewritten from the folder, nothing is stale.
        update(root, None).unwrap();
        assert!(!root.join(FILE).exists());
        // It did, with other bytes.
        std::fs::write(root.join("data/a/x.csv"), "2").unwrap();
        update(root, None).unwrap();
        assert!(root.join(FILE).exists());
        // Rebuilding the reader records the new hash.
        manifest(root, "claims", &[("data/a/x.csv", &manifest::sha256(b"2"))]);
        update(root, None).unwrap();
        assert!(!root.join(FILE).exists());
    }
}
