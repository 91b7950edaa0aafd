//! Sharded runs: an analysis split into independent work units, run as shards anywhere (a
//! Slurm job array, [`crate::slurm`]) and merged into exactly the files one run
//! writes.
//!
//! # How an analysis declares its units
//!
//! An analysis whose work is a grid of independent computations routes that grid through
//! [`Out::units`](super::Out::units): the ordered list of units, an estimated cost per unit,
//! and a function that computes any subset of them. Each unit's result must depend on the unit
//! alone (its seed derived from the configuration and the unit, never from which other units
//! run beside it or on how many threads), and must serialize ([`serde`]; encoded with
//! `postcard`, which keeps every f64 bit, NaN included). Its registry entry says what a unit is
//! ([`Analysis::units`](super::Analysis::units)). Then:
//!
//! - a whole run computes every unit, as before;
//! - `reproduce --only ID --shard I/N` computes the units [`assign`] gives shard `I` at the
//!   analysis's first `units` call, writes them with a [`ShardManifest`] and stops;
//! - `merge` checks the shards ([`load`]), runs the analysis again with the first call's results
//!   read from the shards, and everything after that call (later stages that depend on the
//!   grid, tables, figures, LaTeX, the manifest) is computed once, by the merge.
//!
//! An analysis without units (`units: None`, cheap ones, or ones whose stages depend on each
//! other throughout) is one unit that the merge runs; its shards record no work.
//!
//! The assignment is longest-processing-time first: units in decreasing estimated cost (ties:
//! lower index first) each go to the shard with the least cost so far (ties: lower shard), so
//! shards get about equal work and the plan depends only on the configuration.

use super::manifest::{self, Source};
use normscope_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The format tag of a shard's manifest.
pub const FORMAT: &str = "normscope-shard/2";

/// The shard manifest's file name in a shard folder.
pub const MANIFEST: &str = "shard.json";

/// Most shards of one run.
pub(crate) const MAX_SHARDS: usize = 100_000;

/// Shard `index` of `count` (0-based, as Slurm's `SLURM_ARRAY_TASK_ID`).
///
/// # Examples
///
/// `--shard I/N`, parsed and written back; shard `N/N` does not exist (0-based):
///
/// ```rust
/// use normscope_analyses::shard::ShardSpec;
/// use normscope_core::Error;
///
/// let s: ShardSpec = "1/4".parse()?;
/// assert_eq!(s, ShardSpec { index: 1, count: 4 });
/// assert_eq!(s.to_string(), "1/4");
/// for bad in ["4/4", "0/0", "1", "-1/4"] {
///     let err = bad.parse::<ShardSpec>().unwrap_err();
///     assert!(matches!(err, Error::InvalidParam { field: "--shard", .. }), "{bad}");
/// }
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    /// This shard, `0 <= index < count`.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl std::str::FromStr for ShardSpec {
    type Err = Error;

    /// Parses `I/N`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "--shard",
                s,
                format!(
                    "I/N with 1 <= N <= {MAX_SHARDS} and 0 <= I < N (I is 0-based, as Slurm's array index), e.g. 0/4"
                ),
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(bad());
        }
        Ok(ShardSpec { index, count })
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard of each unit: longest-processing-time first over the estimated `costs` (see the
/// module docs). Non-finite or negative costs count as zero.
pub fn assign(costs: &[f64], count: usize) -> Vec<usize> {
    let cost = |i: usize| {
        let c = costs[i];
        if c.is_finite() && c > 0.0 { c } else { 0.0 }
    };
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| cost(b).total_cmp(&cost(a)).then(a.cmp(&b)));
    let mut load = vec![0.0f64; count.max(1)];
    let mut shard = vec![0; costs.len()];
    for i in order {
        let s = (0..load.len())
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .expect("at least one shard");
        load[s] += cost(i);
        shard[i] = s;
    }
    shard
}

/// The units a shard ran: the analysis's first [`Out::units`](super::Out::units) call.
///
/// # Examples
///
/// Shard 1 of 2's part of a call of four units:
///
/// ```rust
/// use normscope_analyses::shard::{assign, Call};
/// let costs = vec![4.0, 1.0, 3.0, 2.0];
/// // Longest first onto the least loaded shard: 4 -> 0, 3 -> 1, 2 -> 1, 1 -> 0.
/// let plan = assign(&costs, 2);
/// assert_eq!(plan, vec![0, 0, 1, 1]);
/// let mine: Vec<usize> = (0..4).filter(|&i| plan[i] == 1).collect();
/// let call = Call { name: "cells".into(), units: 4, mine, costs };
/// assert_eq!(call.mine, vec![2, 3]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// The call's name, as the analysis gives it.
    pub name: String,
    /// Units in the whole call.
    pub units: usize,
    /// Indices of this shard's units.
    pub mine: Vec<usize>,
    /// The estimated cost of every unit of the call (what [`assign`] balanced;
    /// `normscope-bench --shards` scales it by the measured time to project cluster wall times).
    pub costs: Vec<f64>,
}

/// `shard.json`: what one shard ran and from what.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::manifest::Source;
/// use normscope_analyses::shard::{ShardManifest, ShardSpec};
/// let m = ShardManifest {
///     format: "normscope-shard-1".into(),
///     analysis: "mc-grid".into(),
///     shard: "1/4".parse::<ShardSpec>()?,
///     crate_version: "0.1.0".into(),
///     source: Source { git_commit: None, dirty: None },
///     build: serde_json::json!({}),
///     build_sha256: "0".repeat(64),
///     invocation: "normscope reproduce --only mc-grid".into(),
///     quick: true,
///     config: serde_json::json!({}),
///     config_toml: String::new(),
///     seeds: vec![0],
///     call: None,
///     files: Default::default(),
/// };
/// assert_eq!(m.shard.to_string(), "1/4");
/// let text = serde_json::to_string(&m).unwrap();
/// assert_eq!(serde_json::from_str::<ShardManifest>(&text).unwrap(), m);
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// [`FORMAT`].
    pub format: String,
    /// Analysis id.
    pub analysis: String,
    /// Which shard.
    pub shard: ShardSpec,
    /// `CARGO_PKG_VERSION`.
    pub crate_version: String,
    /// Source commit of the binary.
    pub source: Source,
    /// Toolchain, as the analysis manifest records it.
    pub build: serde_json::Value,
    /// The fingerprint of the build that ran the shard ([`manifest::BUILD_SHA256`]): the merge
    /// accepts only shards of its own build (the sources, toolchain, target and profile), so a
    /// rebuild of changed sources between a failed task and its resubmission cannot mix, while
    /// `normscope` and the analysis binaries of one build can.
    pub build_sha256: String,
    /// The command line without `--shard`: the merged manifest records it, so it equals an
    /// unsharded run's.
    pub invocation: String,
    /// Whether the `--quick` defaults were used.
    pub quick: bool,
    /// Resolved configuration (JSON, as the analysis manifest records it).
    pub config: serde_json::Value,
    /// The same as TOML text: the merge resolves the analysis from it.
    pub config_toml: String,
    /// Base seeds.
    pub seeds: Vec<u64>,
    /// The units this shard ran (`None`: the analysis has none; the merge runs it).
    pub call: Option<Call>,
    /// File in the shard folder -> sha256.
    pub files: BTreeMap<String, String>,
}

/// The file holding a call's results in a shard folder.
pub(crate) fn units_file(call: &str) -> String {
    format!("units-{call}.bin")
}

/// Encodes `(unit index, encoded result)` pairs.
pub fn encode(results: &[(usize, Vec<u8>)]) -> Result<Vec<u8>> {
    postcard::to_stdvec(results).map_err(|e| Error::Undefined(format!("encoding units: {e}")))
}

/// One result, encoded.
pub(crate) fn encode_one<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    postcard::to_stdvec(v).map_err(|e| Error::Undefined(format!("encoding a unit: {e}")))
}

/// One result, decoded.
pub(crate) fn decode_one<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|_| foreign(what, "a unit's result does not decode"))
}

/// The command line without `--shard I/N` (or `--shard=I/N`).
pub(crate) fn without_shard(invocation: &str) -> String {
    let mut out = Vec::new();
    let mut skip = false;
    for a in invocation.split(' ') {
        if std::mem::take(&mut skip) {
            continue;
        }
        if a == "--shard" {
            skip = true;
        } else if !a.starts_with("--shard=") {
            out.push(a);
        }
    }
    out.join(" ")
}

fn foreign(what: &str, why: impl std::fmt::Display) -> Error {
    Error::invalid(
        "SHARD_DIRS",
        what,
        format!(
            "shards of one `reproduce --only ID --shard I/N` run made by this normscope build; {why}"
        ),
    )
}

/// Checked shards, ready to merge: the reference manifest and the first call's encoded results
/// by unit index (empty when the analysis has no units).
///
/// # Examples
///
/// What [`load`] returns for a run of one shard that ran both units of its call `cells`: the
/// folder holds the units' results (`units-cells.bin`, [`encode`]) and `shard.json`, which
/// names this build.
///
/// ```rust
/// use normscope_analyses::manifest::{sha256, Source};
/// use normscope_analyses::shard::{self, Call, Loaded, ShardManifest, ShardSpec};
///
/// let dir = tempfile::tempdir().unwrap();
/// let units = shard::encode(&[(0, b"first".to_vec()), (1, b"second".to_vec())])?;
/// std::fs::write(dir.path().join("units-cells.bin"), &units).unwrap();
/// let m = ShardManifest {
///     format: shard::FORMAT.into(),
///     analysis: "mc-grid".into(),
///     shard: ShardSpec { index: 0, count: 1 },
///     crate_version: "0.1.0".into(),
///     source: Source { git_commit: None, dirty: None },
///     build: serde_json::json!({}),
///     build_sha256: normscope_analyses::manifest::BUILD_SHA256.into(), // this build's shards only
///     invocation: "normscope reproduce --only mc-grid".into(),
///     quick: true,
///     config: serde_json::json!({}),
///     config_toml: String::new(),
///     seeds: vec![0],
///     call: Some(Call { name: "cells".into(), units: 2, mine: vec![0, 1], costs: vec![1.0; 2] }),
///     files: [("units-cells.bin".to_string(), sha256(&units))].into(),
/// };
/// std::fs::write(dir.path().join(shard::MANIFEST), serde_json::to_vec(&m).unwrap()).unwrap();
/// let loaded: Loaded = shard::load(&[dir.path().to_path_buf()])?;
/// assert_eq!(loaded.manifest, m);
/// assert_eq!(loaded.call, Some(("cells".to_string(), 2)));
/// assert_eq!(loaded.results[&0], b"first");
/// assert_eq!(loaded.results[&1], b"second");
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Loaded {
    /// The manifest every shard agrees on (shard 0's).
    pub manifest: ShardManifest,
    /// The first call's name and unit count, if any.
    pub call: Option<(String, usize)>,
    /// Encoded result of each unit, by index.
    pub results: BTreeMap<usize, Vec<u8>>,
}

/// A shard's file: a regular file of at most [`normscope_core::input::DATA_CAP`] bytes.
fn read(path: &Path) -> Result<Vec<u8>> {
    normscope_core::input::read(path, "SHARD_DIRS", normscope_core::input::DATA_CAP)
}

/// Reads and checks shard folders: each has a `shard.json` of [`FORMAT`] whose files match their
/// sha256 (else corrupt); all come from the same analysis, configuration, seeds, invocation,
/// source commit, toolchain and build, the build being this one (else foreign); every shard `0..N`
/// is there exactly once (else missing or duplicated); their units cover the call exactly
/// once. Each refusal is bad input naming the folder. Writes nothing.
pub fn load(dirs: &[PathBuf]) -> Result<Loaded> {
    if dirs.is_empty() {
        return Err(Error::invalid(
            "SHARD_DIRS",
            "",
            "one or more shard folders written by `normscope reproduce --only ID --shard I/N`",
        ));
    }
    let mut shards: Vec<(PathBuf, ShardManifest)> = Vec::new();
    for d in dirs {
        let name = d.display().to_string();
        let path = d.join(MANIFEST);
        let bytes = normscope_core::input::read_capped(&path, normscope_core::input::TEXT_CAP).map_err(|e| {
            let why = match e {
                normscope_core::input::ReadError::Io(_) => "none here: the shard did not finish".to_string(),
                normscope_core::input::ReadError::Refused(why) => {
                    format!("its {MANIFEST} is refused: {why}")
                }
            };
            Error::invalid(
                "SHARD_DIRS",
                &name,
                format!(
                    "a shard folder with a {MANIFEST} (written by `reproduce --shard I/N`); {why}"
                ),
            )
        })?;
        let m: ShardManifest = serde_json::from_slice(&bytes).map_err(|e| {
            Error::invalid(
                "SHARD_DIRS",
                &name,
                format!("a readable {MANIFEST}; it is corrupt ({e}); rerun this shard"),
            )
        })?;
        if m.format != FORMAT {
            return Err(foreign(
                &name,
                format!("its format is '{}', not '{FORMAT}'", m.format),
            ));
        }
        for (file, hash) in &m.files {
            let ok =
                normscope_core::input::read_capped(&d.join(file), normscope_core::input::DATA_CAP)
                    .is_ok_and(|b| &manifest::sha256(&b) == hash);
            if !ok {
                return Err(Error::invalid(
                    "SHARD_DIRS",
                    format!("{name}/{file}"),
                    format!(
                        "the bytes {MANIFEST} lists; missing or its sha256 differs (corrupt): rerun this shard"
                    ),
                ));
            }
        }
        shards.push((d.clone(), m));
    }
    let (d0, m0) = &shards[0];
    let here = manifest::BUILD_SHA256;
    if m0.build_sha256 != here {
        let short = |h: &str| h.chars().take(12).collect::<String>();
        return Err(foreign(
            &d0.display().to_string(),
            format!(
                "it was made by normscope {} at commit {} (dirty: {}), build sha256 {}..., and this build is {}... (rebuilt since the shards ran? rerun them with this one)",
                m0.crate_version,
                m0.source.git_commit.as_deref().unwrap_or("unknown"),
                m0.source.dirty.map_or("unknown".into(), |x| x.to_string()),
                short(&m0.build_sha256),
                short(here),
            ),
        ));
    }
    let mut seen: BTreeMap<usize, &Path> = BTreeMap::new();
    for (d, m) in &shards {
        let name = d.display().to_string();
        let fields: [(&str, bool); 8] = [
            ("analysis", m.analysis == m0.analysis),
            ("shard count", m.shard.count == m0.shard.count),
            (
                "configuration",
                m.config == m0.config && m.config_toml == m0.config_toml,
            ),
            ("quick", m.quick == m0.quick),
            ("seeds", m.seeds == m0.seeds),
            (
                "invocation (the command line without --shard; give every shard the same flags in the same order)",
                m.invocation == m0.invocation,
            ),
            ("build", m.build_sha256 == m0.build_sha256),
            (
                "source commit or toolchain",
                (&m.crate_version, &m.source, &m.build)
                    == (&m0.crate_version, &m0.source, &m0.build),
            ),
        ];
        if let Some((field, _)) = fields.iter().find(|f| !f.1) {
            return Err(foreign(
                &name,
                format!("its {field} differs from {}'s", d0.display()),
            ));
        }
        if let Some(other) = seen.insert(m.shard.index, d) {
            return Err(Error::invalid(
                "SHARD_DIRS",
                &name,
                format!(
                    "each shard once; shard {} is also in {}",
                    m.shard,
                    other.display()
                ),
            ));
        }
    }
    let n = m0.shard.count;
    if let Some(missing) = (0..n).find(|i| !seen.contains_key(i)) {
        let have: Vec<String> = seen.keys().map(|i| i.to_string()).collect();
        return Err(Error::invalid(
            "SHARD_DIRS",
            format!("shard {missing}/{n}"),
            format!(
                "all {n} shards of the run; shard {missing} is missing (given: {})",
                have.join(", ")
            ),
        ));
    }
    let call = m0.call.as_ref().map(|c| (c.name.clone(), c.units));
    let mut results = BTreeMap::new();
    for (d, m) in &shards {
        let name = d.display().to_string();
        if m.call.as_ref().map(|c| (c.name.clone(), c.units)) != call {
            return Err(foreign(
                &name,
                format!("its units differ from {}'s", d0.display()),
            ));
        }
        let Some(c) = &m.call else { continue };
        let bytes = read(&d.join(units_file(&c.name)))?;
        let pairs: Vec<(usize, Vec<u8>)> = postcard::from_bytes(&bytes)
            .map_err(|_| foreign(&name, "its units file does not decode"))?;
        let indices: Vec<usize> = pairs.iter().map(|p| p.0).collect();
        if indices != c.mine {
            return Err(foreign(
                &name,
                "its units file does not hold the units it lists",
            ));
        }
        for (i, r) in pairs {
            if i >= c.units || results.insert(i, r).is_some() {
                return Err(Error::invalid(
                    "SHARD_DIRS",
                    &name,
                    format!(
                        "each of the {} units once; unit {i} is out of range or also in another shard",
                        c.units
                    ),
                ));
            }
        }
    }
    if let Some((_, units)) = &call
        && let Some(missing) = (0..*units).find(|i| !results.contains_key(i))
    {
        return Err(Error::invalid(
            "SHARD_DIRS",
            format!("unit {missing}"),
            format!("all {units} units of the run; unit {missing} is in no shard"),
        ));
    }
    Ok(Loaded {
        manifest: m0.clone(),
        call,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_name_the_flag() {
        let s: ShardSpec = "2/7".parse().unwrap();
        assert_eq!((s.index, s.count), (2, 7));
        for bad in ["7/7", "1", "a/2", "0/0", "-1/3"] {
            let e = bad.parse::<ShardSpec>().unwrap_err().to_string();
            assert!(e.contains("--shard"), "{e}");
        }
    }

    #[test]
    fn assignment_balances_and_covers() {
        let costs: Vec<f64> = (0..20).map(|i| 1.0 + (i % 5) as f64).collect();
        for n in [1, 2, 7] {
            let a = assign(&costs, n);
            let mut load = vec![0.0; n];
            for (i, s) in a.iter().enumerate() {
                assert!(*s < n);
                load[*s] += costs[i];
            }
            let max = load.iter().cloned().fold(0.0, f64::max);
            let min = load.iter().cloned().fold(f64::INFINITY, f64::min);
            // LPT: the spread is at most the largest single cost.
            assert!(max - min <= 5.0, "{load:?}");
            assert_eq!(a, assign(&costs, n));
        }
    }

    #[test]
    fn invocation_drops_the_shard() {
        assert_eq!(
            without_shard("normscope reproduce --only x --shard 1/2 --out-dir DIR"),
            "normscope reproduce --only x --out-dir DIR"
        );
        assert_eq!(
            without_shard("normscope reproduce --shard=0/3 --quick"),
            "normscope reproduce --quick"
        );
    }
}
