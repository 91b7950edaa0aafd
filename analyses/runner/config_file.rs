//! `--config FILE`: a TOML file with one table per analysis id, e.g.
//!
//! ```toml
//! [effective-depth]
//! mc_depths = [4, 16, 64]
//! [effective-depth.mc]
//! samples = 8
//! ```
//!
//! Each table overrides the analysis's embedded defaults (full or `--quick`) key by key.
//! One top-level key is not a table: `placements = "my.toml"` (or a list of files), placement
//! files whose presets the analyses' `presets` lists may name, resolved relative to the
//! configuration file's folder ([`normscope_core::placement::file`]); each analysis's manifest records
//! their sha256 among its inputs.
//! Unknown tables and unknown keys are rejected with the list of accepted ones; a value of the
//! wrong type is rejected with the key's name. A key or value echoed in a message is shortened
//! past [`normscope_core::error::SHOWN_VALUE`] characters (its start and its length).

use normscope_core::{Error, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// A parsed configuration file: its path (for messages) and its tables.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::config_file::ConfigFile;
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::expansion::Config;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("cfg.toml");
/// std::fs::write(&path, "[expansion]\ndepth = 3\n").unwrap();
/// let file = ConfigFile::load(&path, &["expansion"])?;
/// assert!(file.placements.is_empty());
/// let c: Config = file.resolve("expansion", &Config::full())?;
/// assert_eq!(c.depth, 3); // from the file
/// assert_eq!(c.presets, Config::full().presets); // the default
/// // Unknown tables are refused.
/// assert!(ConfigFile::load(&path, &["claims"]).is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConfigFile {
    /// Where it came from.
    pub path: String,
    /// Top-level tables, by analysis id.
    pub tables: toml::Table,
    /// The `placements` files, as written and as resolved (relative to the file's folder),
    /// loaded into the preset registry by [`ConfigFile::load`].
    pub placements: Vec<(String, std::path::PathBuf)>,
}

/// The top-level key naming placement files.
pub(crate) const PLACEMENTS_KEY: &str = "placements";

impl ConfigFile {
    /// Reads and parses `path` (a regular file of at most [`normscope_core::input::TEXT_CAP`] bytes),
    /// checking that every top-level key is one of `ids` and a table.
    pub fn load(path: &Path, ids: &[&str]) -> Result<Self> {
        let shown = path.display().to_string();
        // A missing, unreadable or binary file is bad input (exit 2), not an I/O failure.
        let text = normscope_core::input::read_text(path).map_err(|why| Error::Config {
            path: shown.clone(),
            message: format!(
                "--config: cannot read it as a UTF-8 TOML file of at most {} bytes: {why}",
                normscope_core::input::TEXT_CAP
            ),
        })?;
        let mut tables: toml::Table = text.parse().map_err(|e: toml::de::Error| Error::Config {
            path: shown.clone(),
            message: e.message().to_string(),
        })?;
        let mut placements = Vec::new();
        if let Some(v) = tables.remove(PLACEMENTS_KEY) {
            let bad = || Error::Config {
                path: shown.clone(),
                message: format!(
                    "`{PLACEMENTS_KEY}` must be a file name or a list of file names (placement files, relative to this file's folder), not {v}"
                ),
            };
            let names: Vec<String> = match &v {
                toml::Value::String(s) => vec![s.clone()],
                toml::Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
                    .collect::<Result<_>>()?,
                _ => return Err(bad()),
            };
            let dir = path.parent().unwrap_or(Path::new(""));
            for n in names {
                let resolved = dir.join(&n);
                normscope_core::placement::load(&resolved)?;
                placements.push((n, resolved));
            }
        }
        for (k, v) in &tables {
            if !ids.contains(&k.as_str()) {
                return Err(Error::Config {
                    path: shown,
                    message: format!(
                        "unknown analysis [{}]; accepted: {}, or the key `{PLACEMENTS_KEY}`",
                        normscope_core::error::shown(k),
                        ids.join(", ")
                    ),
                });
            }
            if !v.is_table() {
                return Err(Error::Config {
                    path: shown,
                    message: format!("`{k}` must be a table ([{k}]), not a {}", v.type_str()),
                });
            }
        }
        Ok(ConfigFile {
            path: shown,
            tables,
            placements,
        })
    }

    /// `base` with the file's `[id]` table laid over it.
    pub fn resolve<C: Serialize + DeserializeOwned>(&self, id: &str, base: &C) -> Result<C> {
        let Some(user) = self.tables.get(id) else {
            return Ok(round_trip(base));
        };
        let fail = |message: String| Error::Config {
            path: self.path.clone(),
            message,
        };
        let base = toml::Value::try_from(base).expect("configs serialize to TOML");
        let mut merged = base.clone();
        overlay(&mut merged, user, id).map_err(fail)?;
        merged.try_into::<C>().map_err(|e| {
            // Name the key: lay the user's values over the defaults one at a time.
            let culprit = leaves(user, id)
                .into_iter()
                .find_map(|(table, key, value)| {
                    let mut one = base.clone();
                    let path: Vec<&str> = table.split('.').skip(1).collect();
                    let mut slot = &mut one;
                    for p in &path {
                        slot = slot.get_mut(*p)?;
                    }
                    slot.as_table_mut()?.insert(key.clone(), value);
                    one.try_into::<C>()
                        .err()
                        .map(|err| format!("[{table}] {key}: {}", err.message()))
                });
            fail(culprit.unwrap_or_else(|| format!("[{id}]: {}", e.message())))
        })
    }
}

/// The base through TOML and back, so a config is the same value whether or not a file is
/// given.
fn round_trip<C: Serialize + DeserializeOwned>(base: &C) -> C {
    toml::Value::try_from(base)
        .expect("configs serialize to TOML")
        .try_into()
        .expect("configs deserialize from their own TOML")
}

/// Every non-table value of a user table: `(table path, key, value)`.
fn leaves(user: &toml::Value, at: &str) -> Vec<(String, String, toml::Value)> {
    let mut out = Vec::new();
    if let Some(t) = user.as_table() {
        for (k, v) in t {
            if v.is_table() {
                out.extend(leaves(v, &format!("{at}.{k}")));
            } else {
                out.push((at.to_string(), k.clone(), v.clone()));
            }
        }
    }
    out
}

fn overlay(
    base: &mut toml::Value,
    user: &toml::Value,
    at: &str,
) -> std::result::Result<(), String> {
    let (Some(b), Some(u)) = (base.as_table_mut(), user.as_table()) else {
        *base = user.clone();
        return Ok(());
    };
    for (k, v) in u {
        let Some(slot) = b.get_mut(k) else {
            let mut keys: Vec<&str> = b.keys().map(|s| s.as_str()).collect();
            keys.sort_unstable();
            let accepted = if keys.is_empty() {
                "none (this table has no settings)".to_string()
            } else {
                keys.join(", ")
            };
            return Err(format!(
                "unknown key `{}` in [{at}]; accepted: {accepted}",
                normscope_core::error::shown(k)
            ));
        };
        if slot.is_table() != v.is_table() {
            return Err(format!(
                "[{at}] `{k}` must be a {}, not a {}",
                slot.type_str(),
                v.type_str()
            ));
        }
        overlay(slot, v, &format!("{at}.{k}"))?;
    }
    Ok(())
}
