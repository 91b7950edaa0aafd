//! The commands over the registry: `reproduce` ([`reproduce`], also a shard of it),
//! `merge` ([`merge`]) and `slurm` ([`slurm`]).

pub mod args;
pub mod cite;
pub mod plot;
pub mod slurm;
pub mod table_bounds;
pub mod text_table;
pub mod visible;

use crate::runner::config_file::ConfigFile;
use crate::runner::{Analysis, Mode, Out, Prepared, Settings, manifest, shard, stale};
use crate::{REGISTRY, find, ids};
use normscope_core::output::console::say;
use normscope_core::output::lock::OutputLock;
use normscope_core::output::staging::{self, Stage};
use normscope_core::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
///
/// # Examples
///
/// The request of `normscope reproduce --quick --only expansion` (run with [`reproduce`]):
///
/// ```rust
/// use normscope_analyses::Request;
/// let req = Request {
///     root: std::env::temp_dir().join("normscope-out"),
///     only: vec!["expansion".into()],
///     quick: true,
///     ..Request::default()
/// };
/// assert_eq!(req.only, ["expansion"]);
/// assert!(req.quick && !req.print_config);
/// assert_eq!((req.seed, req.config.is_none(), req.shard.is_none()), (None, true, true));
/// ```
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
    /// The command line the manifests record (`None`: this process's,
    /// [`manifest::invocation`]). An analysis binary gives the `normscope reproduce --only
    /// ID ...` line it stands for, so that its outputs are those of that line byte for byte.
    pub invocation: Option<String>,
}

impl Request {
    /// The command line to record: [`field@Request::invocation`], else this process's.
    fn invocation(&self) -> String {
        self.invocation.clone().unwrap_or_else(manifest::invocation)
    }
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
        let parquet = Some(manifest::ParquetMeta {
            quick: self.quick,
            config: p.config.clone(),
            seeds: p.seeds.clone(),
        });
        let mut out = Out {
            root: self.root.to_path_buf(),
            stage: Stage::new(self.root, a.id)?,
            id: a.id,
            outputs: BTreeMap::new(),
            inputs: self.inputs.clone(),
            mode,
            calls: 0,
            parquet,
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
        // The manifest in place is kept when only the commit and command line would change
        // (manifest::keep): it names the commit that last changed these outputs.
        let rel = format!("{data}/{}", manifest::FILE);
        let before = self.root.join(&rel);
        let old = before
            .is_file()
            .then(|| {
                normscope_core::input::read(&before, "manifest", normscope_core::input::TEXT_CAP)
            })
            .transpose()?;
        stage.write(&rel, &manifest::keep(&m, old.as_deref()))?;
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
            parquet: None,
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
        build_sha256: manifest::BUILD_SHA256.into(),
        invocation: shard::without_shard(&req.invocation()),
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
    crate::setup_all()?;
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
    crate::setup_all()?;
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
    crate::setup_all()?;
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
        invocation: req.invocation(),
        inputs: &placement_inputs,
    };
    for (i, (a, p)) in selected.iter().zip(prepared).enumerate() {
        normscope_core::interrupt::check()?;
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
