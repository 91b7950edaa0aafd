//! Analyses: small programs over the library that regenerate `data/<id>/` and
//! `figures/<id>/`. Each has an id, an embedded default configuration (full and `--quick`),
//! accepts overrides from a TOML file ([`config_file`]), and ends with a `manifest.json` listing its
//! resolved configuration, seeds, source commit and the sha256 of every output ([`manifest`]).
//!
//! Every configuration is resolved and validated before anything runs, so bad input writes no
//! file. Adding an analysis is one new file here, its `pub mod` line and its line in
//! [`REGISTRY`].
//!
//! [`reproduce`] holds the output folder's lock ([`crate::output::lock`]) for the whole run, so
//! a second writer is refused. Each analysis writes into a staging folder
//! ([`crate::output::staging`]) and its two folders, `figures/<id>` and `data/<id>` (with the
//! manifest), are moved into place whole when it ends; an error, SIGINT or SIGTERM discards
//! the staging folder and leaves the analysis's earlier outputs as they were.

pub mod adjacent_layers;
pub mod branch_gain;
pub mod branch_weights;
pub mod claims;
pub mod common;
pub mod config_file;
pub mod convergence;
pub mod deepnorm_alpha;
pub mod effective_depth;
pub mod expansion;
pub mod finetune;
pub mod finite_width;
pub mod manifest;
pub mod optimizers;
pub mod output_change;
pub mod placement_file;
pub mod rank_collapse;
pub mod regression_tier;
pub mod stability_law;
pub mod stream_gradients;
pub mod trained_lens;
pub mod training_demo;
pub mod warmup;

use crate::output::lock::OutputLock;
use crate::output::staging::{self, Stage};
use crate::output::{figure, table};
use crate::profile::Row;
use crate::{Error, Result};
use config_file::ConfigFile;
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

/// Sets every `seed` key in `v` (at any depth) to `seed`.
fn set_seeds(v: &mut toml::Value, seed: u64) {
    if let Some(t) = v.as_table_mut() {
        for (k, x) in t.iter_mut() {
            if k == "seed" && x.is_integer() {
                *x = toml::Value::Integer(seed as i64);
            } else {
                set_seeds(x, seed);
            }
        }
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

    /// Writes tidy rows to `data/<id>/<name>` (sorted, the standard columns), and as typed
    /// Parquet beside it (see [`Out::frame`]).
    pub fn rows(&mut self, name: &str, rows: Vec<Row>) -> Result<()> {
        self.frame(name, &mut table::frame(rows)?)
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
            crate::Error::Undefined(format!("table file name '{name}' must end in .csv"))
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

/// Every analysis, in run order (`claims` reads the others' tables, so it is last).
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
    optimizers::ANALYSIS,
    convergence::ANALYSIS,
    trained_lens::ANALYSIS,
    finetune::ANALYSIS,
    finite_width::ANALYSIS,
    claims::ANALYSIS,
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
        print!("{}", config_toml(&selected, &prepared, req.quick));
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
    let _lock = OutputLock::acquire(&req.root)?;
    staging::remove_leftovers(&req.root, &ids())?;
    let total = std::time::Instant::now();
    for (i, (a, p)) in selected.iter().zip(prepared).enumerate() {
        eprintln!("[{}/{}] {}: {}", i + 1, selected.len(), a.id, a.about);
        let t = std::time::Instant::now();
        let mut out = Out {
            root: req.root.clone(),
            stage: Stage::new(&req.root, a.id)?,
            id: a.id,
            outputs: BTreeMap::new(),
            inputs: placement_inputs.clone(),
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
            source: source.clone(),
            build: manifest::Build::current(),
            invocation: manifest::invocation(),
            quick: req.quick,
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
        // The data folder holds the manifest: last in, first out.
        stage.commit(&req.root, &[&figures, &data])?;
        eprintln!("      {files} files in {:.1} s", t.elapsed().as_secs_f64());
    }
    eprintln!("done in {:.1} s", total.elapsed().as_secs_f64());
    Ok(())
}
