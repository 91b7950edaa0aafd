//! `mc-grid`: a Monte Carlo sweep given as a TOML grid, the `normscope mc` of every cell of the
//! Cartesian product `presets x depths x widths`, as work units that run anywhere.
//!
//! Every cell is one [`normscope mc`](normscope_core::tables::mc_rows) run: one preset at one depth L
//! and width d, with the scalar settings below shared by every cell. A cell's networks draw
//! from streams seeded by `(seed, the cell's configuration, network index)`
//! ([`normscope_numeric::rng`]: the configuration's canonical text holds the preset, the depth
//! and the width), so a cell's rows do not depend on which other cells are in the grid, on
//! which shard runs it, or on the number of threads; they are the bytes `normscope mc` writes
//! for the same settings.
//!
//! Output: `data/mc-grid/mc.csv` (and `mc.parquet`), the tidy rows (the columns of every
//! Monte Carlo table) of every cell, cells in grid order (presets outermost, widths
//! innermost), each cell's rows sorted by key. No figure.
//!
//! # Keys
//!
//! Lists (the grid): `presets`, `depths`, `widths` (each non-empty, without repeats).
//! Scalars (every cell): `branch`, `init`, `norm` (`layer`, `rms` or `identity`), `tokens`,
//! `c0` (the tokens' correlation), `heads` (attention branches), `samples` (networks per cell,
//! at least 2), `metrics` (a list of metric names, as `mc --metrics` takes them, `"all"` for every
//! one), `layers` (as `mc --layers` takes them: `"last"`, `"log:8"`, `"all"` or a list of
//! layers like `"0,4"`, where a list may also name `last`, layer L of each cell: `"0,1,last"`),
//! `seed`. Every cell is checked before anything runs (bad input is exit status 2
//! naming the key, e.g. `mc-grid.depths`), and a cell whose networks or table would not fit in
//! memory is refused then too.
//!
//! ```toml
//! # grid.toml
//! [mc-grid]
//! presets = ["pre", "post", "deepnorm"]
//! depths = [8, 32, 128]
//! widths = [32, 64, 128]
//! branch = "relu-mlp"
//! init = "he"
//! samples = 16
//! metrics = ["grad_sq", "eff_depth"]
//! layers = "0,last"
//! seed = 0
//! ```
//!
//! (`examples/grids/mc-grid.toml` is a commented example.) One unit is one cell:
//!
//! ```text
//! normscope reproduce --only mc-grid --config grid.toml --out-dir out          # whole
//! normscope reproduce --only mc-grid --config grid.toml --shard 0/8 --out-dir shards/0
//! ...                                                                          # shards 1..7
//! normscope merge shards/0 shards/1 ... shards/7 --out-dir out                 # same bytes
//! normscope slurm --only mc-grid --config grid.toml --shards 8                 # batch scripts
//! ```

use super::{Analysis, Out, common};
use normscope_core::engine::Engine;
use normscope_core::layers::LayerSpec;
use normscope_core::metrics::Metric;
use normscope_core::model::RawModel;
use normscope_core::monte_carlo::{McConfig, MonteCarlo, RawMc};
use normscope_core::output::table;
use normscope_core::placement::Preset;
use normscope_core::profile::{EngineKind, Row};
use normscope_core::spec::NormKind;
use normscope_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "mc-grid",
    about: "a Monte Carlo sweep given as a TOML grid: `normscope mc` at every (preset, depth, width)",
    claims: &[],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some("one (preset, depth, width) cell: its `normscope mc` run"),
};

/// The most cells (work units) of one grid.
pub const MAX_CELLS: usize = 1_000_000;

/// The command-line flag (or registry kind) the library names in its errors, and the key of
/// this analysis it comes from.
const FIELDS: &[(&str, &str)] = &[
    ("preset", "mc-grid.presets"),
    ("--preset", "mc-grid.presets"),
    ("--depth", "mc-grid.depths"),
    ("--width", "mc-grid.widths"),
    ("branch", "mc-grid.branch"),
    ("--branch", "mc-grid.branch"),
    ("init", "mc-grid.init"),
    ("--init", "mc-grid.init"),
    ("--norm", "mc-grid.norm"),
    ("--tokens", "mc-grid.tokens"),
    ("--c0", "mc-grid.c0"),
    ("--heads", "mc-grid.heads"),
    ("--samples", "mc-grid.samples"),
    ("metric", "mc-grid.metrics"),
    ("--metrics", "mc-grid.metrics"),
    ("--layers", "mc-grid.layers"),
];

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::mc_grid::Config;
/// let c = Config::full();
/// assert_eq!((c.depths.clone(), c.widths.clone()), (vec![8, 32], vec![32, 64]));
/// assert_eq!((c.branch.as_str(), c.init.as_str()), ("relu-mlp", "he"));
/// assert_eq!((c.tokens, c.heads, c.samples), (8, 4, 8));
/// assert_eq!(c.layers, "0,last");
/// // 3 presets x 2 depths x 2 widths.
/// assert_eq!(c.cells().len(), 12);
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (grid).
    pub presets: Vec<&'static Preset>,
    /// Depths L (grid).
    pub depths: Vec<usize>,
    /// Widths d (grid).
    pub widths: Vec<usize>,
    /// Branch F (`normscope mc --branch`).
    pub branch: String,
    /// Init scheme.
    pub init: String,
    /// Norm kind of every norm slot.
    pub norm: NormKind,
    /// Tokens n per network.
    pub tokens: usize,
    /// Correlation of the tokens.
    pub c0: f64,
    /// Attention heads (attention branches; must divide every width).
    pub heads: usize,
    /// Networks per cell (>= 2).
    pub samples: usize,
    /// Metric names (`all` for every metric).
    pub metrics: Vec<String>,
    /// Layers written, as `mc --layers` takes them.
    pub layers: String,
    /// Base seed.
    #[serde(with = "crate::seed")]
    pub seed: u64,
}

/// One work unit: a cell of the grid.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::mc_grid::{Cell, Config};
/// let cells = Config::quick().cells(); // presets, then depths, then widths
/// assert_eq!(cells.len(), 4);
/// let (pre, post) = (normscope_core::placement::PRE, normscope_core::placement::POST);
/// assert_eq!(cells[0], Cell { preset: pre, depth: 4, width: 16 });
/// assert_eq!(cells[3], Cell { preset: post, depth: 8, width: 16 });
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Preset.
    pub preset: &'static Preset,
    /// Depth L.
    pub depth: usize,
    /// Width d.
    pub width: usize,
}

impl Cell {
    /// The cell as messages name it.
    fn name(&self) -> String {
        format!(
            "cell (preset {}, depth {}, width {})",
            self.preset, self.depth, self.width
        )
    }
}

/// Renames the field of a bad-input error from the flag or registry kind the library names to
/// the analysis's key, by `fields` ((flag or kind, key) pairs), naming `what` (the cell, if
/// not empty) in it; a memory refusal is prefixed with `what`. Other errors pass unchanged.
pub(crate) fn rename(e: Error, fields: &[(&str, &'static str)], what: &str) -> Error {
    let key = |name: &str| fields.iter().find(|f| f.0 == name).map(|f| f.1);
    match e {
        Error::InvalidParam {
            field,
            value,
            accepted,
        } => Error::InvalidParam {
            field: key(field).unwrap_or(field),
            value,
            accepted: if what.is_empty() {
                accepted
            } else {
                format!("{accepted} (in {what})")
            },
        },
        Error::Unknown { kind, name, valid } => match key(kind) {
            Some(k) => Error::invalid(k, name, format!("a known {kind}: {valid}")),
            None => Error::Unknown { kind, name, valid },
        },
        Error::TooLarge(m) if !what.is_empty() => Error::TooLarge(format!("{what}: {m}")),
        e => e,
    }
}

/// Checks that `v` has no repeated element, naming `field`.
pub(crate) fn distinct<T: PartialEq + std::fmt::Debug>(field: &'static str, v: &[T]) -> Result<()> {
    if let Some((i, x)) = v.iter().enumerate().find(|(i, x)| v[..*i].contains(x)) {
        return Err(Error::invalid(
            field,
            format!("{x:?}"),
            format!("a list without repeats (entry {i} repeats an earlier one)"),
        ));
    }
    Ok(())
}

/// The number of cells of a grid of these list lengths, if at most [`MAX_CELLS`]; else bad
/// input naming `field`.
pub(crate) fn cell_count(field: &'static str, lens: &[usize]) -> Result<usize> {
    lens.iter()
        .try_fold(1usize, |n, &k| n.checked_mul(k))
        .filter(|&n| n <= MAX_CELLS)
        .ok_or_else(|| {
            Error::invalid(
                field,
                format!("{lens:?} entries"),
                format!("lists whose product (the grid's work units) is at most {MAX_CELLS}"),
            )
        })
}

impl Config {
    /// Every cell, in grid order (presets, then depths, then widths).
    pub fn cells(&self) -> Vec<Cell> {
        let mut v = Vec::new();
        for &p in &self.presets {
            for &depth in &self.depths {
                for &width in &self.widths {
                    v.push(Cell {
                        preset: p,
                        depth,
                        width,
                    });
                }
            }
        }
        v
    }

    /// The `normscope mc` configuration of a cell (unchecked fields are checked here).
    pub(crate) fn mc_config(&self, cell: &Cell) -> Result<McConfig> {
        let raw = RawModel {
            depth: cell.depth,
            branch: self.branch.clone(),
            init: self.init.clone(),
            norm: self.norm,
            width: cell.width,
            tokens: self.tokens,
            c0: self.c0,
            ..RawModel::default()
        };
        let mc = RawMc {
            samples: self.samples,
            seed: self.seed,
            heads: self.heads,
            ..RawMc::default()
        };
        McConfig::new(&raw, &mc)
    }

    /// The metrics.
    fn metric_list(&self) -> Result<Vec<Metric>> {
        if self.metrics.is_empty() {
            return Err(Error::invalid(
                "mc-grid.metrics",
                "[]",
                "a non-empty list of metric names (or [\"all\"])",
            ));
        }
        Metric::parse_list(&self.metrics.join(",")).map_err(|e| rename(e, FIELDS, ""))
    }

    /// The layer selection at depth `depth`: `layers` as `mc --layers` takes it, where a list
    /// may also name `last` (layer L of each cell, e.g. `0,last`).
    fn layer_spec(&self, depth: usize) -> Result<LayerSpec> {
        let spec = match LayerSpec::parse(&self.layers) {
            Ok(s) => Ok(s),
            Err(e) if self.layers.contains(',') => {
                let list: Vec<String> = self
                    .layers
                    .split(',')
                    .map(|p| match p.trim() {
                        "last" => depth.to_string(),
                        x => x.to_string(),
                    })
                    .collect();
                LayerSpec::parse(&list.join(",")).map_err(|_| e)
            }
            Err(e) => Err(e),
        };
        spec.map_err(|_| {
            Error::invalid(
                "mc-grid.layers",
                &self.layers,
                "all, last, log:K (K >= 1), or a comma-separated list of layers like 0,4,last (last: layer L of each cell)",
            )
        })
    }

    /// Checks one cell: its configuration, its preset's stack, and that its networks and
    /// table fit in memory; errors name the key.
    fn check_cell(&self, cell: &Cell, metrics: &[Metric]) -> Result<(McConfig, LayerSpec)> {
        let layers = self.layer_spec(cell.depth)?;
        let r = || -> Result<McConfig> {
            let cfg = self.mc_config(cell)?;
            cfg.model.stack(cell.preset)?;
            normscope_core::tables::check_mc_fits(&cfg, metrics, &layers)?;
            Ok(cfg)
        };
        let cfg = r().map_err(|e| rename(e, FIELDS, &cell.name()))?;
        Ok((cfg, layers))
    }
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post", "deepnorm"]),
            depths: vec![8, 32],
            widths: vec![32, 64],
            branch: "relu-mlp".into(),
            init: "he".into(),
            norm: NormKind::Layer,
            tokens: 8,
            c0: 0.0,
            heads: RawMc::default().heads,
            samples: 8,
            metrics: ["grad_sq", "eff_depth"].map(String::from).to_vec(),
            layers: "0,last".into(),
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            presets: common::presets(&["pre", "post"]),
            depths: vec![4, 8],
            widths: vec![16],
            samples: 4,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        if self.presets.is_empty() {
            return Err(Error::invalid(
                "mc-grid.presets",
                "[]",
                "a non-empty list of presets",
            ));
        }
        distinct("mc-grid.presets", &self.presets)?;
        super::common::check_depths("mc-grid.depths", &self.depths)?;
        distinct("mc-grid.depths", &self.depths)?;
        super::common::check_depths("mc-grid.widths", &self.widths)?;
        distinct("mc-grid.widths", &self.widths)?;
        cell_count(
            "mc-grid.presets/depths/widths",
            &[self.presets.len(), self.depths.len(), self.widths.len()],
        )?;
        let metrics = self.metric_list()?;
        for cell in self.cells() {
            self.check_cell(&cell, &metrics)?;
            cell.preset.check_norm(self.norm, "mc-grid.norm")?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        vec![self.seed]
    }
}

/// A [`Row`] without its [`Setup`](normscope_core::profile::Setup) (which the merge rebuilds from the
/// cell's configuration): what a unit returns, serializable for the shards.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RowData {
    /// Preset name.
    pub preset: String,
    /// Engine column name.
    pub engine: String,
    /// Depth L.
    pub depth: u64,
    /// Layer l.
    pub layer: u64,
    /// Source j or path length k.
    pub source: Option<u64>,
    /// The metric.
    pub metric: Metric,
    /// Estimate (NaN when missing).
    pub value: f64,
    /// Standard error.
    pub stderr: Option<f64>,
    /// Lower end of the 95% interval.
    pub ci_low: Option<f64>,
    /// Upper end of the 95% interval.
    pub ci_high: Option<f64>,
    /// Networks.
    pub n: Option<u64>,
    /// Why there is no value.
    pub missing: Option<String>,
}

impl RowData {
    /// The fields of `r` but its setup.
    pub fn of(r: &Row) -> Self {
        RowData {
            preset: r.preset.clone(),
            engine: r.engine.name().to_string(),
            depth: r.depth,
            layer: r.layer,
            source: r.source,
            metric: r.metric,
            value: r.value,
            stderr: r.stderr,
            ci_low: r.ci_low,
            ci_high: r.ci_high,
            n: r.n,
            missing: r.missing.clone(),
        }
    }

    /// The row again, with `setup`.
    pub fn row(&self, setup: &Arc<normscope_core::profile::Setup>) -> Result<Row> {
        let engine = EngineKind::from_name(&self.engine).ok_or_else(|| {
            Error::Undefined(format!("a unit's row names engine '{}'", self.engine))
        })?;
        Ok(Row {
            preset: self.preset.clone(),
            setup: setup.clone(),
            engine,
            depth: self.depth,
            layer: self.layer,
            source: self.source,
            metric: self.metric,
            value: self.value,
            stderr: self.stderr,
            ci_low: self.ci_low,
            ci_high: self.ci_high,
            n: self.n,
            missing: self.missing.clone(),
        })
    }
}

/// The rows of each of `cells` (sorted by key), one cell after the other; a cell's rows
/// depend on the cell alone.
fn compute(c: &Config, metrics: &[Metric], cells: &[Cell]) -> Result<Vec<Vec<RowData>>> {
    cells
        .iter()
        .map(|cell| {
            let (cfg, layers) = c.check_cell(cell, metrics)?;
            let mut notes = Vec::new();
            let mut rows = normscope_core::tables::mc_rows(
                &[cell.preset],
                &cfg,
                metrics,
                &layers,
                &mut notes,
            )?;
            for n in notes {
                normscope_core::output::console::note(format_args!(
                    "      note ({}): {n}",
                    cell.name()
                ));
            }
            normscope_core::profile::sort_rows(&mut rows);
            Ok(rows.iter().map(RowData::of).collect())
        })
        .collect()
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let metrics = c.metric_list()?;
    let cells = c.cells();
    // Networks x blocks x the d^2 entries of each block's matrices.
    let cost = |u: &Cell| (c.samples * u.depth) as f64 * (u.width as f64).powi(2);
    let Some(results) = out.units("cells", &cells, cost, |mine| compute(c, &metrics, mine))? else {
        return Ok(());
    };
    let mut rows = Vec::new();
    for (cell, data) in cells.iter().zip(&results) {
        let (cfg, _) = c.check_cell(cell, &metrics)?;
        let engine = MonteCarlo {
            cfg: &cfg,
            progress: &(),
        };
        let preset = cell.preset;
        let setup = Arc::new(engine.setup(&cfg.model.stack(preset)?));
        for d in data {
            rows.push(d.row(&setup)?);
        }
    }
    out.frame("mc.csv", &mut table::frame_in_order(&rows)?)
}
