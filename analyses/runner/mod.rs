//! The run machinery under every analysis: settings and prepared configurations
//! ([`Settings`], [`Prepared`], [`AnalysisConfig`]), the analysis type ([`Analysis`]), the
//! output handle an analysis writes through ([`Out`]: staging, hashes for the manifest, work
//! units for shards), manifests ([`manifest`]), work units and shards ([`shard`]), the stale
//! marker ([`stale`]), `--config` files ([`config_file`]), seeds ([`seed`]) and the reader of
//! earlier analyses' tables ([`data`]).
//!
//! Nothing here imports an analysis, the ledger or the commands: they sit above it.

pub mod config_file;
pub mod data;
pub mod manifest;
pub mod seed;
pub mod shard;
pub mod sidecar;
pub mod stale;

use config_file::ConfigFile;
use normscope_core::output::staging::Stage;
use normscope_core::output::table;
use normscope_core::profile::Row;
use normscope_core::{Error, Result};
use normscope_figure as figure;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a run was asked for: quick or full defaults, and an optional configuration file.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::{AnalysisConfig, Settings};
/// use normscope_analyses::rank_collapse::Config;
/// let quick = Settings { quick: true, seed: Some(7), ..Settings::default() };
/// let c: Config = quick.resolve("rank-collapse", Config::full(), Config::quick())?;
/// assert_eq!(c.depth, 16); // the quick default
/// assert_eq!(c.mc.seed, 7); // --seed replaces every base seed
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Use the reduced (`--quick`) defaults.
    pub quick: bool,
    /// Overrides from `--config`.
    pub file: ConfigFile,
    /// `--seed`: replaces every base seed of every analysis (after the file's values).
    pub seed: Option<u64>,
}

impl Settings {
    /// The configuration of analysis `id`: its full or quick defaults with the file's `[id]`
    /// table laid over them.
    pub fn resolve<C: Serialize + DeserializeOwned>(
        &self,
        id: &str,
        full: C,
        quick: C,
    ) -> Result<C> {
        let c = self
            .file
            .resolve(id, if self.quick { &quick } else { &full })?;
        match self.seed {
            None => Ok(c),
            Some(seed) => {
                let mut v = toml::Value::try_from(&c).expect("configs serialize to TOML");
                set_seeds(&mut v, seed);
                Ok(v.try_into().expect("a seed keeps the config's shape"))
            }
        }
    }
}

/// Sets every `seed` key in `v` (at any depth, in tables and arrays of tables) to `seed`.
fn set_seeds(v: &mut toml::Value, seed: u64) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t.iter_mut() {
                if k == "seed" && (x.is_integer() || x.is_str()) {
                    *x = seed::to_toml(seed);
                } else {
                    set_seeds(x, seed);
                }
            }
        }
        toml::Value::Array(a) => a.iter_mut().for_each(|x| set_seeds(x, seed)),
        _ => {}
    }
}

/// The work of a prepared analysis.
///
/// # Examples
///
/// [`Prepared::new`] wraps an analysis's run function and its resolved configuration into one
/// `Work`, which [`crate::reproduce`] calls once with the analysis's [`Out`]:
///
/// ```rust
/// use normscope_analyses::{Out, Prepared, Work};
/// use normscope_core::Result;
/// #[derive(serde::Serialize)]
/// struct Cfg {
///     depth: usize,
/// }
/// fn run(c: &Cfg, out: &mut Out) -> Result<()> {
///     out.bytes("depth.txt", c.depth.to_string().as_bytes())
/// }
/// let p = Prepared::new(Cfg { depth: 3 }, vec![7], run);
/// assert_eq!((p.config["depth"].as_u64(), p.seeds), (Some(3), vec![7]));
/// let _work: Work = p.work; // writes depth.txt = "3" when reproduce runs it
/// ```
pub type Work = Box<dyn FnOnce(&mut Out) -> Result<()>>;

/// An analysis ready to run: its resolved configuration and the work.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::{find, Settings};
/// let s = Settings { quick: true, ..Settings::default() };
/// let p = (find("rank-collapse")?.prepare)("rank-collapse", &s)?;
/// assert_eq!(p.config["depth"], 16);
/// assert_eq!(p.toml["init"].as_str(), Some("xavier"));
/// assert_eq!(p.seeds, vec![0]);
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub struct Prepared {
    /// The resolved configuration, recorded in the manifest.
    pub config: serde_json::Value,
    /// The same as TOML, as `reproduce --print-config` prints it.
    pub toml: toml::Value,
    /// Base seeds of its Monte Carlo runs.
    pub seeds: Vec<u64>,
    /// The work; writes through [`Out`].
    pub work: Work,
}

impl Prepared {
    /// Wraps a resolved configuration and the function that runs it.
    pub fn new<C: Serialize + 'static>(
        config: C,
        seeds: Vec<u64>,
        run: fn(&C, &mut Out) -> Result<()>,
    ) -> Self {
        Prepared {
            config: serde_json::to_value(&config).expect("configs serialize to JSON"),
            toml: toml::Value::try_from(&config).expect("configs serialize to TOML"),
            seeds,
            work: Box::new(move |out| run(&config, out)),
        }
    }
}

/// An analysis's configuration: its defaults and checks. [`prepare`] is the one `prepare` of
/// every analysis: it lays the `--config` file's table over the full or quick defaults, checks
/// the result, and wraps the work.
///
/// # Examples
///
/// An implementor, with reduced `--quick` defaults:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_core::{Error, Result};
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Mine {
///     depth: usize,
///     seed: u64,
/// }
/// impl AnalysisConfig for Mine {
///     fn full() -> Self {
///         Mine { depth: 64, seed: 0 }
///     }
///     fn quick() -> Self {
///         Mine { depth: 8, ..Self::full() }
///     }
///     fn check(&self) -> Result<()> {
///         if self.depth == 0 {
///             return Err(Error::invalid("mine.depth", 0, "an integer >= 1"));
///         }
///         Ok(())
///     }
///     fn seeds(&self) -> Vec<u64> {
///         vec![self.seed]
///     }
/// }
/// assert_eq!(Mine::quick().depth, 8);
/// assert!(Mine { depth: 0, seed: 0 }.check().is_err());
/// assert_eq!(Mine::full().seeds(), vec![0]);
/// ```
pub trait AnalysisConfig: Serialize + DeserializeOwned + 'static {
    /// Makes the names the defaults use resolvable before they are made: the placement file
    /// an analysis ships is loaded here (nothing for the others). A failure is the error of
    /// the run, not a panic of [`AnalysisConfig::full`].
    fn setup() -> Result<()> {
        Ok(())
    }
    /// The full-run defaults (`cargo run --release -- reproduce`).
    fn full() -> Self;
    /// The `--quick` defaults: fewer Monte Carlo networks and depths (the full ones if absent).
    fn quick() -> Self {
        Self::full()
    }
    /// Checks what types cannot (depths >= 1, presets, the model), naming the field.
    fn check(&self) -> Result<()>;
    /// Base seeds of its Monte Carlo runs (recorded in the manifest).
    fn seeds(&self) -> Vec<u64>;
}

/// Resolves and checks the configuration of analysis `C` (see [`AnalysisConfig`]) and wraps
/// it with `run`, the work that writes through [`Out`].
pub fn prepare<C: AnalysisConfig>(
    id: &str,
    s: &Settings,
    run: fn(&C, &mut Out) -> Result<()>,
) -> Result<Prepared> {
    C::setup()?;
    let c: C = s.resolve(id, C::full(), C::quick())?;
    c.check()?;
    let seeds = c.seeds();
    Ok(Prepared::new(c, seeds, run))
}

/// A registered analysis.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::{find, REGISTRY};
/// let a = find("mc-grid")?;
/// assert_eq!(a.id, "mc-grid");
/// assert!(a.units.is_some()); // it can be sharded
/// assert!(find("claims")?.units.is_none());
/// assert_eq!(REGISTRY[0].id, "expansion");
/// assert!(find("nope").is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub struct Analysis {
    /// Id: the folder name under `data/` and `figures/`, and the `[table]` in `--config`.
    pub id: &'static str,
    /// One sentence on what it shows.
    pub about: &'static str,
    /// The claims of the ledger (`data/claims/claims.md`, numbered 1-10) whose verdicts read
    /// its tables; empty for an analysis no verdict reads.
    pub claims: &'static [u8],
    /// Resolves and validates the configuration; runs nothing.
    pub prepare: fn(&str, &Settings) -> Result<Prepared>,
    /// Its [`AnalysisConfig::setup`]: loads the placement file it ships (nothing for most).
    /// Every analysis's runs before any configuration is resolved ([`crate::setup_all`]), so
    /// a preset a shipped file defines (`depth-mup`) resolves in every analysis's `--config`
    /// table whichever analyses are selected and in whatever order.
    pub setup: fn() -> Result<()>,
    /// What one work unit is, for analyses that route their grid through [`Out::units`]
    /// (`None`: the analysis is one unit, run by `merge`; see [`shard`]).
    pub units: Option<&'static str>,
}

/// Where an analysis writes, and what it wrote (for the manifest). Writes go to a staging
/// folder at their final relative paths; reads of earlier analyses' outputs go to
/// [`Out::root`].
///
/// # Examples
///
/// An analysis writes through its `Out` while [`crate::reproduce`] runs it; every file it
/// wrote is then listed with its sha256 in `data/<id>/manifest.json`:
///
/// ```rust
/// use normscope_analyses::{reproduce, Request};
/// let tmp = tempfile::tempdir().unwrap();
/// let root = tmp.path();
/// let req = Request { root: root.to_path_buf(), only: vec!["expansion".into()], ..Request::default() };
/// reproduce(&req)?;
/// let text = std::fs::read_to_string(root.join("data/expansion/manifest.json")).unwrap();
/// let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
/// assert_eq!(manifest["analysis"], "expansion");
/// let outputs = manifest["outputs"].as_object().unwrap();
/// assert!(!outputs.is_empty());
/// assert!(outputs.values().all(|h| h.as_str().unwrap().len() == 64)); // sha256 in hex
/// # Ok::<(), normscope_core::Error>(())
/// ```
pub struct Out {
    pub(crate) root: PathBuf,
    pub(crate) stage: Stage,
    pub(crate) id: &'static str,
    /// Relative path -> sha256 of the bytes written.
    pub(crate) outputs: BTreeMap<String, String>,
    /// Relative path -> sha256 of the files read from earlier analyses.
    pub(crate) inputs: BTreeMap<String, String>,
    /// Whole run, shard or merge.
    pub(crate) mode: Mode,
    /// [`Out::units`] calls so far.
    pub(crate) calls: usize,
    /// What every Parquet table's file metadata holds besides the analysis and the inputs
    /// read so far ([`manifest::parquet_metadata`]); `None` for a shard, which writes none.
    pub(crate) parquet: Option<manifest::ParquetMeta>,
}

/// How [`Out::units`] runs.
pub(crate) enum Mode {
    /// Every unit, here.
    Whole,
    /// This shard's units of the first call, then stop; `done` holds them.
    Shard {
        spec: shard::ShardSpec,
        done: Option<(shard::Call, Vec<u8>)>,
    },
    /// The first call's results from the shards.
    Merge(Option<Box<shard::Loaded>>),
}

impl Out {
    /// Writes `bytes` to `rel` in the stage and records their hash.
    fn put(&mut self, rel: String, bytes: &[u8]) -> Result<()> {
        self.stage.write(&rel, bytes)?;
        self.outputs.insert(rel, manifest::sha256(bytes));
        Ok(())
    }

    /// The output root (`--out-dir`), to read the outputs of analyses that ran before (they
    /// are in place there). This analysis's own outputs are not there until it has ended.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Records that `rel` (relative to the root) was read as an input, with the sha256 of its
    /// bytes, for the manifest.
    pub(crate) fn read_input(&mut self, rel: &str) -> Result<()> {
        let hash = manifest::sha256_file(&self.root.join(rel))?;
        self.inputs.insert(rel.to_string(), hash);
        Ok(())
    }

    /// Records `bytes` as an input named `rel` (e.g. a file embedded at build time), with
    /// their sha256, for the manifest.
    pub(crate) fn input_bytes(&mut self, rel: &str, bytes: &[u8]) {
        self.inputs.insert(rel.to_string(), manifest::sha256(bytes));
    }

    /// Runs the work units `units` (an analysis's grid of independent computations, see
    /// [`shard`]) with `run`, which computes any subset and returns one result per unit, in
    /// order; `cost` estimates each unit's cost for [`shard::assign`]. A whole run computes
    /// them all and returns `Some`. A shard (`reproduce --shard I/N`) computes its own at the
    /// first call, keeps them for its result file and returns `None`: the analysis stops there
    /// (`let Some(r) = out.units(..)? else { return Ok(()) };`). A merge returns the first
    /// call's results from the shards. Later calls run here in every mode.
    pub fn units<U: Clone, T: Serialize + DeserializeOwned>(
        &mut self,
        name: &str,
        units: &[U],
        cost: impl Fn(&U) -> f64,
        run: impl FnOnce(&[U]) -> Result<Vec<T>>,
    ) -> Result<Option<Vec<T>>> {
        self.calls += 1;
        let first = self.calls == 1;
        let check = |r: Vec<T>, n: usize| {
            if r.len() == n {
                Ok(r)
            } else {
                Err(Error::Undefined(format!(
                    "units '{name}': {} results for {n} units (an analysis returns one per unit)",
                    r.len()
                )))
            }
        };
        match &mut self.mode {
            Mode::Shard { spec, done } if first => {
                let costs: Vec<f64> = units.iter().map(&cost).collect();
                let plan = shard::assign(&costs, spec.count);
                let mine: Vec<usize> = (0..units.len())
                    .filter(|&i| plan[i] == spec.index)
                    .collect();
                let subset: Vec<U> = mine.iter().map(|&i| units[i].clone()).collect();
                let results = check(run(&subset)?, subset.len())?;
                let encoded = mine
                    .iter()
                    .zip(&results)
                    .map(|(&i, r)| Ok((i, shard::encode_one(r)?)))
                    .collect::<Result<Vec<_>>>()?;
                *done = Some((
                    shard::Call {
                        name: name.to_string(),
                        units: units.len(),
                        mine,
                        costs,
                    },
                    shard::encode(&encoded)?,
                ));
                Ok(None)
            }
            Mode::Merge(loaded) if first => {
                let l = loaded.take().expect("the shards are loaded once");
                if l.call.as_ref() != Some(&(name.to_string(), units.len())) {
                    return Err(Error::invalid(
                        "SHARD_DIRS",
                        &l.manifest.analysis,
                        format!(
                            "shards whose units match this analysis's '{name}' ({} units)",
                            units.len()
                        ),
                    ));
                }
                l.results
                    .values()
                    .map(|b| shard::decode_one(b, name))
                    .collect::<Result<_>>()
                    .map(Some)
            }
            _ => {
                let n = units.len();
                check(run(units)?, n).map(Some)
            }
        }
    }

    /// Writes tidy rows to `data/<id>/<name>` (sorted, the standard columns), and as typed
    /// Parquet beside it (see [`Out::frame`]).
    pub fn rows(&mut self, name: &str, rows: Vec<Row>) -> Result<()> {
        self.frame(name, &mut table::frame(rows)?)
    }

    /// Writes a LaTeX table's files ([`Table::files`](normscope_core::output::latex::Table::files): `<name>.tex` and
    /// `<name>_tabular.tex`) to `data/<id>/`.
    pub fn latex(
        &mut self,
        table: &normscope_core::output::latex::Table,
        name: &str,
    ) -> Result<()> {
        for (file, text) in table.files(name) {
            self.bytes(&file, text.as_bytes())?;
        }
        Ok(())
    }

    /// Writes bytes (another CSV, LaTeX, Markdown) to `data/<id>/<name>`.
    pub fn bytes(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.put(format!("data/{}/{name}", self.id), bytes)
    }

    /// Writes a polars frame as CSV to `data/<id>/<name>` (`name` ends in `.csv`), and the same
    /// table as typed Parquet to `data/<id>/<stem>.parquet`, whose empty columns keep their
    /// types, so tables of different analyses concatenate without a schema override. The
    /// Parquet file carries the run's manifest, less the commit, command line and output
    /// hashes, as file metadata, with the inputs read before it ([`manifest::parquet_metadata`]).
    pub fn frame(&mut self, name: &str, df: &mut polars::prelude::DataFrame) -> Result<()> {
        let stem = name.strip_suffix(".csv").ok_or_else(|| {
            normscope_core::Error::Undefined(format!("table file name '{name}' must end in .csv"))
        })?;
        self.bytes(name, &table::Format::Csv.encode(df)?)?;
        self.bytes(
            &format!("{stem}.parquet"),
            &table::Format::Parquet.encode_with(df, &self.parquet_metadata())?,
        )
    }

    /// The file metadata of a Parquet table written now: the run's manifest less its commit,
    /// command line and outputs, with the inputs read so far ([`manifest::parquet_metadata`]).
    fn parquet_metadata(&self) -> Vec<(String, String)> {
        self.parquet.as_ref().map_or_else(Vec::new, |m| {
            manifest::parquet_metadata(self.id, m.quick, &m.config, &m.seeds, &self.inputs)
        })
    }

    /// Draws `figures/<id>/<stem>.png` and `.svg`.
    pub fn figure(&mut self, stem: &str, fig: &impl figure::Figure) -> Result<()> {
        let rel = format!("figures/{}/{stem}", self.id);
        let r = figure::render(fig, &self.root.join(&rel))?;
        self.put(format!("{rel}.png"), &r.png)?;
        self.put(format!("{rel}.svg"), &r.svg)?;
        self.put(format!("{rel}.pdf"), &r.pdf)
    }
}
