//! Analyses: small programs over the library that regenerate `data/<id>/` and
//! `figures/<id>/`. Each has an id, an embedded default configuration (full and `--quick`),
//! accepts overrides from a TOML file ([`config_file`]), and ends with a `manifest.json` listing its
//! resolved configuration, seeds, source commit and the sha256 of every output ([`manifest`]).
//!
//! Every configuration is resolved and validated before anything runs, so bad input writes no
//! file. Adding an analysis is one new file here, its `pub mod` line and its line in
//! [`REGISTRY`].
//!
//! [`reproduce`] holds the output folder's lock ([`normscope_core::output::lock`]) for the whole run, so
//! a second writer is refused. Each analysis writes into a staging folder
//! ([`normscope_core::output::staging`]) and its two folders, `figures/<id>` and `data/<id>` (with the
//! manifest), are moved into place whole when it ends; an error, SIGINT or SIGTERM discards
//! the staging folder and leaves the analysis's earlier outputs as they were.

#![deny(unsafe_code)]

pub mod adjacent_layers;
pub mod branch_gain;
pub mod branch_weights;
pub mod claims;
pub mod common;
pub mod config_file;
pub mod convergence;
pub mod deepnorm_alpha;
pub mod effective_depth;
pub mod encoder_decoder;
pub mod expansion;
pub mod finetune;
pub mod finite_width;
pub mod lr_search;
pub mod manifest;
pub mod mc_grid;
pub mod optimizers;
pub mod output_change;
pub mod placement_file;
pub mod rank_collapse;
pub mod seed;
pub mod shard;
pub mod slurm;
pub mod stability_law;
pub mod stale;
pub mod stream_gradients;
pub mod tier;
pub mod train_grid;
pub mod trained_lens;
pub mod training;
pub mod training_demo;
pub mod tuned;
pub mod warmup;

use config_file::ConfigFile;
use normscope_core::output::console::say;
use normscope_core::output::lock::OutputLock;
use normscope_core::output::staging::{self, Stage};
use normscope_core::output::{figure, table};
use normscope_core::profile::Row;
use normscope_core::{Error, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a run was asked for: quick or full defaults, and an optional configuration file.
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
pub type Work = Box<dyn FnOnce(&mut Out) -> Result<()>>;

/// An analysis ready to run: its resolved configuration and the work.
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
pub trait AnalysisConfig: Serialize + DeserializeOwned + 'static {
    /// The full-run defaults (`cargo run --release`).
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
    let c: C = s.resolve(id, C::full(), C::quick())?;
    c.check()?;
    let seeds = c.seeds();
    Ok(Prepared::new(c, seeds, run))
}

/// A registered analysis.
pub struct Analysis {
    /// Id: the folder name under `data/` and `figures/`, and the `[table]` in `--config`.
    pub id: &'static str,
    /// One sentence on what it shows.
    pub about: &'static str,
    /// Resolves and validates the configuration; runs nothing.
    pub prepare: fn(&str, &Settings) -> Result<Prepared>,
    /// What one work unit is, for analyses that route their grid through [`Out::units`]
    /// (`None`: the analysis is one unit, run by `merge`; see [`shard`]).
    pub units: Option<&'static str>,
}

/// Where an analysis writes, and what it wrote (for the manifest). Writes go to a staging
/// folder at their final relative paths; reads of earlier analyses' outputs go to
/// [`Out::root`].
pub struct Out {
    root: PathBuf,
    stage: Stage,
    id: &'static str,
    /// Relative path -> sha256 of the bytes written.
    outputs: BTreeMap<String, String>,
    /// Relative path -> sha256 of the files read from earlier analyses.
    inputs: BTreeMap<String, String>,
    /// Whole run, shard or merge.
    mode: Mode,
    /// [`Out::units`] calls so far.
    calls: usize,
}

/// How [`Out::units`] runs.
enum Mode {
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
    pub fn read_input(&mut self, rel: &str) -> Result<()> {
        let hash = manifest::sha256_file(&self.root.join(rel))?;
        self.inputs.insert(rel.to_string(), hash);
        Ok(())
    }

    /// Records `bytes` as an input named `rel` (e.g. a file embedded at build time), with
    /// their sha256, for the manifest.
    pub fn input_bytes(&mut self, rel: &str, bytes: &[u8]) {
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
    /// types, so tables of different analyses concatenate without a schema override.
    pub fn frame(&mut self, name: &str, df: &mut polars::prelude::DataFrame) -> Result<()> {
        let stem = name.strip_suffix(".csv").ok_or_else(|| {
            normscope_core::Error::Undefined(format!("table file name '{name}' must end in .csv"))
        })?;
        self.bytes(name, &table::Format::Csv.encode(df)?)?;
        self.bytes(
            &format!("{stem}.parquet"),
            &table::Format::Parquet.encode(df)?,
        )
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

/// Every analysis, in run order (`claims` reads the others' tables, so it comes after them;
/// the grid sweeps `mc-grid` and `train-grid`, which read nothing, are appended after it).
pub const REGISTRY: &[Analysis] = &[
    expansion::ANALYSIS,
    branch_weights::ANALYSIS,
    effective_depth::ANALYSIS,
    stream_gradients::ANALYSIS,
    adjacent_layers::ANALYSIS,
    output_change::ANALYSIS,
    deepnorm_alpha::ANALYSIS,
    rank_collapse::ANALYSIS,
    branch_gain::ANALYSIS,
    placement_file::ANALYSIS,
    training_demo::ANALYSIS,
    warmup::ANALYSIS,
    stability_law::ANALYSIS,
    convergence::ANALYSIS,
    optimizers::ANALYSIS,
    finetune::ANALYSIS,
    trained_lens::ANALYSIS,
    encoder_decoder::ANALYSIS,
    finite_width::ANALYSIS,
    claims::ANALYSIS,
    mc_grid::ANALYSIS,
    train_grid::ANALYSIS,
];

/// The ids of [`REGISTRY`].
pub fn ids() -> Vec<&'static str> {
    REGISTRY.iter().map(|a| a.id).collect()
}

/// Finds an analysis by id.
pub fn find(id: &str) -> Result<&'static Analysis> {
    REGISTRY
        .iter()
        .find(|a| a.id == id)
        .ok_or_else(|| Error::Unknown {
            kind: "analysis",
            name: id.to_string(),
            valid: ids().join(", "),
        })
}

/// The resolved configurations as one TOML file, one `[id]` table per analysis, ready to edit
/// and pass back with `--config`.
pub fn config_toml(selected: &[&Analysis], prepared: &[Prepared], quick: bool) -> String {
    let mut root = toml::map::Map::new();
    for (a, p) in selected.iter().zip(prepared) {
        root.insert(a.id.to_string(), p.toml.clone());
    }
    format!(
        "# normscope reproduce{}: the resolved configuration of each analysis. Edit and pass\n# back with `normscope reproduce --config FILE`; keys left out keep their defaults.\n\n{}",
        if quick { " --quick" } else { "" },
        toml::to_string(&toml::Value::Table(root)).expect("TOML tables print")
    )
}

/// What `reproduce` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// Output root: writes `root/data/...` and `root/figures/...`.
    pub root: PathBuf,
    /// Only these analyses (all if empty).
    pub only: Vec<String>,
    /// Reduced defaults.
    pub quick: bool,
    /// `--config` file.
    pub config: Option<PathBuf>,
    /// `--seed`: every analysis's base seed.
    pub seed: Option<u64>,
    /// Print the resolved configurations as TOML and run nothing.
    pub print_config: bool,
    /// Run only this shard of the one analysis in `only` (see [`shard`]).
    pub shard: Option<shard::ShardSpec>,
}

/// What every analysis of one `reproduce` or `merge` shares.
struct Run<'a> {
    root: &'a Path,
    source: &'a manifest::Source,
    quick: bool,
    invocation: String,
    inputs: &'a BTreeMap<String, String>,
}

impl Run<'_> {
    /// Runs one analysis into a staging folder and moves its folders into place with their
    /// manifest.
    fn analysis(&self, a: &Analysis, p: Prepared, mode: Mode) -> Result<()> {
        let t = std::time::Instant::now();
        let mut out = Out {
            root: self.root.to_path_buf(),
            stage: Stage::new(self.root, a.id)?,
            id: a.id,
            outputs: BTreeMap::new(),
            inputs: self.inputs.clone(),
            mode,
            calls: 0,
        };
        (p.work)(&mut out)?;
        let Out {
            stage,
            outputs,
            inputs,
            ..
        } = out;
        let files = outputs.len();
        let m = manifest::Manifest {
            analysis: a.id,
            crate_version: env!("CARGO_PKG_VERSION"),
            source: self.source.clone(),
            build: manifest::Build::current(),
            invocation: self.invocation.clone(),
            quick: self.quick,
            config: p.config,
            seeds: p.seeds,
            inputs,
            outputs,
        };
        let (data, figures) = (format!("data/{}", a.id), format!("figures/{}", a.id));
        stage.write(
            &format!("{data}/{}", manifest::FILE),
            &manifest::to_bytes(&m),
        )?;
        // Readers of files this replaces are listed as stale before the move (an interrupted
        // run leaves the list), and the list is rebuilt from the folder after it.
        stale::update(self.root, Some((a.id, &m.outputs)))?;
        // The data folder holds the manifest: last in, first out.
        let moved = stage.commit(self.root, &[&figures, &data]);
        stale::update(self.root, None)?;
        moved?;
        say(format_args!(
            "      {files} files in {:.1} s",
            t.elapsed().as_secs_f64()
        ))?;
        Ok(())
    }
}

/// Runs shard `spec` of analysis `a` into `req.root`: the units [`shard::assign`] gives it at
/// the analysis's first [`Out::units`] call (none for an analysis without units), written as
/// `units-<call>.bin` with a `shard.json` ([`shard::ShardManifest`]) last. Rerunning a shard
/// rewrites the same bytes.
fn run_shard(
    req: &Request,
    a: &Analysis,
    p: Prepared,
    spec: shard::ShardSpec,
    source: manifest::Source,
) -> Result<()> {
    // Said before the folder is created: a standard error that cannot be written leaves none.
    say(format_args!(
        "{} shard {spec}: {}",
        a.id,
        a.units.unwrap_or("no work units: the merge runs it")
    ))?;
    let _lock = OutputLock::acquire(&req.root)?;
    staging::remove_leftovers(&req.root, &ids())?;
    let t = std::time::Instant::now();
    let config_toml = toml::to_string(&p.toml).expect("TOML tables print");
    let Prepared {
        config,
        seeds,
        work,
        ..
    } = p;
    let mut done = None;
    if a.units.is_some() {
        let mut out = Out {
            root: req.root.clone(),
            stage: Stage::new(&req.root, a.id)?,
            id: a.id,
            outputs: BTreeMap::new(),
            inputs: BTreeMap::new(),
            mode: Mode::Shard { spec, done: None },
            calls: 0,
        };
        work(&mut out)?;
        if let Mode::Shard { done: d, .. } = out.mode {
            done = d;
        }
    }
    let mut files = BTreeMap::new();
    let call = match done {
        Some((call, bytes)) => {
            let name = shard::units_file(&call.name);
            normscope_core::output::atomic::write_bytes(&req.root.join(&name), &bytes)?;
            files.insert(name, manifest::sha256(&bytes));
            Some(call)
        }
        None => None,
    };
    let units = call.as_ref().map_or(0, |c| c.mine.len());
    let m = shard::ShardManifest {
        format: shard::FORMAT.into(),
        analysis: a.id.into(),
        shard: spec,
        crate_version: env!("CARGO_PKG_VERSION").into(),
        source,
        build: serde_json::to_value(manifest::Build::current()).expect("builds serialize"),
        binary: shard::binary_sha256()?,
        invocation: shard::without_shard(&manifest::invocation()),
        quick: req.quick,
        config,
        config_toml,
        seeds,
        call,
        files,
    };
    let mut bytes = serde_json::to_vec_pretty(&m).expect("manifests serialize");
    bytes.push(b'\n');
    normscope_core::output::atomic::write_bytes(&req.root.join(shard::MANIFEST), &bytes)?;
    say(format_args!(
        "      {units} units in {:.1} s",
        t.elapsed().as_secs_f64()
    ))?;
    Ok(())
}

/// `normscope merge`: checks the shard folders ([`shard::load`]; a missing, duplicated,
/// corrupt or foreign shard is refused before anything is written), then runs their analysis
/// into `root` with the first units call's results read from the shards, writing exactly the
/// files (manifest included) of the unsharded run.
pub fn merge(dirs: &[PathBuf], root: &Path) -> Result<()> {
    if root.exists() && !root.is_dir() {
        return Err(Error::invalid(
            "--out-dir",
            root.display(),
            "a folder (created if missing), not a file",
        ));
    }
    let loaded = shard::load(dirs)?;
    let m = &loaded.manifest;
    let a = find(&m.analysis)?;
    let table: toml::Table = toml::from_str(&m.config_toml).map_err(|e| {
        Error::invalid(
            "SHARD_DIRS",
            &m.analysis,
            format!("a readable configuration ({e})"),
        )
    })?;
    let mut tables = toml::Table::new();
    tables.insert(a.id.to_string(), toml::Value::Table(table));
    let settings = Settings {
        quick: m.quick,
        file: ConfigFile {
            path: shard::MANIFEST.into(),
            tables,
            placements: Vec::new(),
        },
        seed: None,
    };
    let p = (a.prepare)(a.id, &settings)?;
    if p.config != m.config || p.seeds != m.seeds {
        return Err(Error::invalid(
            "SHARD_DIRS",
            &m.analysis,
            "shards whose configuration this normscope resolves to the same values",
        ));
    }
    let (source, quick, invocation) = (m.source.clone(), m.quick, m.invocation.clone());
    // Said before the folder is created: a standard error that cannot be written leaves none.
    say(format_args!(
        "merging {} shards of {}: {}",
        m.shard.count, a.id, a.about
    ))?;
    let _lock = OutputLock::acquire(root)?;
    staging::remove_leftovers(root, &ids())?;
    let run = Run {
        root,
        source: &source,
        quick,
        invocation,
        inputs: &BTreeMap::new(),
    };
    run.analysis(a, p, Mode::Merge(Some(Box::new(loaded))))?;
    normscope_core::output::console::failed()
}

/// A sharded run resolves its analysis from the shards alone, so its `--config` may not name
/// placement files.
fn no_placements(file: &ConfigFile) -> Result<()> {
    if file.placements.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(
            "--config",
            &file.path,
            "a file without `placements` with --shard (the merge resolves the analysis from the shards alone)",
        ))
    }
}

/// Checks, as `reproduce --only id --shard` would, that analysis `id` resolves with this
/// `--config` file, `--quick` and `--seed` (a bad value is an error naming its field), so that
/// `normscope slurm` writes no scripts whose every task would fail.
pub fn check_shardable(
    id: &str,
    config: Option<&Path>,
    quick: bool,
    seed: Option<u64>,
) -> Result<()> {
    let a = find(id)?;
    let file = match config {
        Some(p) => ConfigFile::load(p, &ids())?,
        None => ConfigFile::default(),
    };
    no_placements(&file)?;
    let settings = Settings { quick, file, seed };
    (a.prepare)(a.id, &settings).map(|_| ())
}

/// Runs the requested analyses: resolves every configuration first (bad input writes nothing),
/// then takes the output folder's lock ([`Error::Busy`] if another run holds it), removes what
/// killed runs left ([`staging::remove_leftovers`]), and runs each analysis into a staging
/// folder, whose `figures/<id>` and `data/<id>` (with the manifest) then replace the ones in
/// the root whole, so the folders hold exactly what the manifest lists (outputs of an earlier
/// run with other settings are gone). Progress goes to stderr.
pub fn reproduce(req: &Request) -> Result<()> {
    if req.root.exists() && !req.root.is_dir() {
        return Err(Error::invalid(
            "--out-dir",
            req.root.display(),
            "a folder (created if missing), not a file",
        ));
    }
    let file = match &req.config {
        Some(p) => ConfigFile::load(p, &ids())?,
        None => ConfigFile::default(),
    };
    let selected: Vec<&Analysis> = if req.only.is_empty() {
        REGISTRY.iter().collect()
    } else {
        req.only.iter().map(|id| find(id)).collect::<Result<_>>()?
    };
    let settings = Settings {
        quick: req.quick,
        file,
        seed: req.seed,
    };
    let prepared: Vec<Prepared> = selected
        .iter()
        .map(|a| (a.prepare)(a.id, &settings))
        .collect::<Result<_>>()?;
    if req.print_config {
        normscope_core::output::console::out(
            config_toml(&selected, &prepared, req.quick).as_bytes(),
        )?;
        return Ok(());
    }
    // Placement files named by the configuration are inputs of every analysis.
    let placement_inputs: BTreeMap<String, String> = settings
        .file
        .placements
        .iter()
        .map(|(name, path)| Ok((name.clone(), manifest::sha256_file(path)?)))
        .collect::<Result<_>>()?;
    let source = manifest::Source::detect();
    if let Some(spec) = req.shard {
        if selected.len() != 1 {
            return Err(Error::invalid(
                "--only",
                req.only.join(","),
                "exactly one analysis id with --shard",
            ));
        }
        no_placements(&settings.file)?;
        let p = prepared.into_iter().next().expect("one analysis");
        return run_shard(req, selected[0], p, spec, source);
    }
    // Said before the folder is created: a standard error that cannot be written leaves none.
    say(format_args!(
        "{} {} into {}",
        selected.len(),
        if selected.len() == 1 {
            "analysis"
        } else {
            "analyses"
        },
        req.root.display()
    ))?;
    let _lock = OutputLock::acquire(&req.root)?;
    staging::remove_leftovers(&req.root, &ids())?;
    let total = std::time::Instant::now();
    let run = Run {
        root: &req.root,
        source: &source,
        quick: req.quick,
        invocation: manifest::invocation(),
        inputs: &placement_inputs,
    };
    for (i, (a, p)) in selected.iter().zip(prepared).enumerate() {
        say(format_args!(
            "[{}/{}] {}: {}",
            i + 1,
            selected.len(),
            a.id,
            a.about
        ))?;
        run.analysis(a, p, Mode::Whole)?;
    }
    say(format_args!(
        "done in {:.1} s",
        total.elapsed().as_secs_f64()
    ))?;
    if req.root.join(stale::FILE).exists() {
        say(format_args!(
            "note: {} lists analyses that cite files this run replaced; rebuild them with --only",
            req.root.join(stale::FILE).display()
        ))?;
    }
    normscope_core::output::console::failed()?;
    Ok(())
}
