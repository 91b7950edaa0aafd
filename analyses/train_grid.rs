//! `train-grid`: a training sweep given as a TOML grid, every cell of `presets x depths x
//! optimizers x lrs x warmups` trained from the same (paired) seeds, as work units that run
//! anywhere.
//!
//! Each (cell, seed) is one `normscope train` run ([`normscope_core::train::sweep::run_jobs`]) of the
//! base request the scalar keys below give, with the cell's preset, depth, optimizer, peak
//! learning rate and warmup. A run depends on its (cell, seed) alone: the seed fixes the data
//! order and the weight draws, the task (teacher and evaluation set) comes from `seed`, so a
//! run's outcome does not depend on which other cells are in the grid, which shard runs it,
//! or the number of threads. A run's class (diverged, collapsed, still descending, trained)
//! is [`normscope_core::train::classify`]'s; every run is trained to its end.
//!
//! Outputs (cells in grid order, presets outermost, warmups innermost, then seeds in the
//! order given), each row led by the training tables' settings columns
//! ([`super::tier::key_columns`]: `preset, label, tier` (= `train-grid`), `task, branch,
//! width, heads, blocks, layers, optimizer, lr, warmup, schedule, steps, batch, precision,
//! seed`):
//!
//! - `data/train-grid/runs.csv`: one row per (cell, seed): the settings, then `purpose`
//!   (`grid`), `class, diverged, initial_loss, final_loss, floor, context_free, excess`
//!   (`final_loss - floor`), `closed` (the fraction of the gap `C - F` closed) and `failed`
//!   (not stable: diverged, collapsed or slow); an undefined number is written empty;
//! - `data/train-grid/curves.csv`: every evaluation of every run: the settings, `step,
//!   eval_loss`.
//!
//! (And each as Parquet beside it.) No figure.
//!
//! # Keys
//!
//! Lists (the grid): `presets`, `depths`, `optimizers` (`sgd`, `adam`, `adamw`), `lrs` (peak
//! learning rates, finite and > 0), `warmups` (linear-warmup updates); each non-empty,
//! without repeats. `seeds`: a count `n` (seeds `0..n`) or a list of distinct seeds, paired
//! across cells. Scalars (every run): `width`, `branch`, `init`, `norm`, `task`
//! (`regression`, `teacher-lm`, `copy`, `reverse`, `sort`), `steps`, `batch`, `eval_every`,
//! `eval_batches`, `schedule` (`constant`, `cosine`, `linear`, ...: `normscope train
//! --schedule`), `seed` (the task's teacher and evaluation set). Every cell is checked
//! before anything runs (bad input is exit status 2 naming the key, e.g. `train-grid.lrs`).
//!
//! ```toml
//! # grid.toml
//! [train-grid]
//! presets = ["pre", "post", "deepnorm"]
//! depths = [6, 24]
//! optimizers = ["adam", "sgd"]
//! lrs = [1e-3, 3e-3, 1e-2]
//! warmups = [0, 50]
//! seeds = 8            # or a list: [0, 3, 7]
//! width = 16
//! steps = 200
//! ```
//!
//! (`examples/grids/train-grid.toml` is a commented example.) One unit is one (cell, seed) run:
//!
//! ```text
//! normscope reproduce --only train-grid --config grid.toml --out-dir out        # whole
//! normscope reproduce --only train-grid --config grid.toml --shard 0/8 --out-dir shards/0
//! ...                                                                           # shards 1..7
//! normscope merge shards/0 shards/1 ... shards/7 --out-dir out                  # same bytes
//! normscope slurm --only train-grid --config grid.toml --shards 8               # batch scripts
//! ```

use super::mc_grid::{cell_count, distinct, rename};
use super::tier::{RunKey, Tier, key_columns};
use super::training as tier;
use super::{Analysis, Out, common};
use normscope_core::model::RawModel;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::spec::NormKind;
use normscope_core::train::config::{MAX_SEEDS, RawTrain};
use normscope_core::train::sweep::{self, Cell, Outcome};
use normscope_core::train::task::{TaskConfig, TaskKind};
use normscope_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// Registry entry.
pub const ANALYSIS: Analysis = Analysis {
    id: "train-grid",
    about: "a training sweep given as a TOML grid: preset x depth x optimizer x lr x warmup, paired seeds",
    claims: &[],
    prepare: |id, s| super::prepare::<Config>(id, s, run),
    setup: <Config as super::AnalysisConfig>::setup,
    units: Some("one (cell, seed) training run"),
};

/// The command-line flag (or registry kind) the library names in its errors, and the key of
/// this analysis it comes from.
const FIELDS: &[(&str, &str)] = &[
    ("preset", "train-grid.presets"),
    ("--preset", "train-grid.presets"),
    ("--depth", "train-grid.depths"),
    ("optimizer", "train-grid.optimizers"),
    ("--optimizer", "train-grid.optimizers"),
    ("--lr", "train-grid.lrs"),
    ("--warmup", "train-grid.warmups"),
    ("--seeds", "train-grid.seeds"),
    ("--width", "train-grid.width"),
    ("branch", "train-grid.branch"),
    ("--branch", "train-grid.branch"),
    ("init", "train-grid.init"),
    ("--init", "train-grid.init"),
    ("--norm", "train-grid.norm"),
    ("task", "train-grid.task"),
    ("--task", "train-grid.task"),
    ("--steps", "train-grid.steps"),
    ("--batch", "train-grid.batch"),
    ("--eval-every", "train-grid.eval_every"),
    ("--eval-batches", "train-grid.eval_batches"),
    ("schedule", "train-grid.schedule"),
    ("--schedule", "train-grid.schedule"),
];

/// Training seeds: a count `n` (seeds `0..n`) or a list.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::train_grid::Seeds;
/// assert_eq!(Seeds::Count(3).list(), vec![0, 1, 2]);
/// assert_eq!(Seeds::List(vec![7, 2]).list(), vec![7, 2]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Seeds {
    /// Seeds `0..n`.
    Count(u64),
    /// These seeds, in this order.
    List(Vec<u64>),
}

impl Seeds {
    /// The seeds, in order.
    pub fn list(&self) -> Vec<u64> {
        match self {
            Seeds::Count(n) => (0..*n).collect(),
            Seeds::List(v) => v.clone(),
        }
    }
}

/// Configuration.
///
/// # Examples
///
/// The full and `--quick` defaults, as `normscope reproduce` resolves them without `--config`:
///
/// ```rust
/// use normscope_analyses::AnalysisConfig;
/// use normscope_analyses::train_grid::{Config, Seeds};
/// let c = Config::full();
/// assert_eq!(c.presets, ["pre", "post"]);
/// assert_eq!((c.depths.clone(), c.lrs.clone()), (vec![4, 8], vec![1e-3, 1e-2]));
/// assert_eq!(c.seeds, Seeds::Count(4));
/// assert_eq!((c.width, c.steps, c.batch, c.eval_every), (16, 100, 16, 25));
/// assert_eq!((c.task.as_str(), c.schedule.as_str()), ("regression", "constant"));
/// // 2 presets x 2 depths x 1 optimizer x 2 lrs x 1 warmup, each at 4 seeds.
/// assert_eq!((c.cells().len(), c.jobs().len()), (8, 32));
/// assert_eq!(c.tier().name, "train-grid");
/// c.check()?;
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Presets (grid).
    pub presets: Vec<&'static Preset>,
    /// Blocks L (grid).
    pub depths: Vec<usize>,
    /// Optimizers (grid).
    pub optimizers: Vec<String>,
    /// Peak learning rates (grid).
    pub lrs: Vec<f64>,
    /// Linear-warmup updates (grid).
    pub warmups: Vec<u64>,
    /// Paired training seeds of every cell.
    pub seeds: Seeds,
    /// Width d.
    pub width: usize,
    /// Branch.
    pub branch: String,
    /// Init scheme.
    pub init: String,
    /// Norm kind.
    pub norm: NormKind,
    /// Task.
    pub task: String,
    /// Updates per run.
    pub steps: u64,
    /// Examples per batch.
    pub batch: usize,
    /// Evaluation interval (updates).
    pub eval_every: u64,
    /// Evaluation batches.
    pub eval_batches: usize,
    /// Learning-rate schedule after warmup.
    pub schedule: String,
    /// The task's seed (teacher and evaluation set).
    #[serde(with = "crate::seed")]
    pub seed: u64,
}

impl Config {
    /// The base request every cell modifies (its preset, depth, optimizer, lr, warmup and
    /// seed are the first cell's; [`Cell::config`] replaces them).
    pub fn raw(&self) -> Result<RawTrain> {
        let d = RawTrain::default();
        Ok(RawTrain {
            presets: self
                .presets
                .first()
                .map_or(String::new(), |p| p.name.to_string()),
            model: RawModel {
                depth: self.depths.first().copied().unwrap_or(1),
                branch: self.branch.clone(),
                init: self.init.clone(),
                width: self.width,
                norm: self.norm,
                ..d.model
            },
            task: TaskConfig {
                kind: TaskKind::parse(&self.task).map_err(|e| rename(e, FIELDS, ""))?,
                teacher_seed: self.seed,
                ..d.task
            },
            optimizer: self.optimizers.first().cloned().unwrap_or_default(),
            lr: self.lrs.first().copied().unwrap_or(f64::NAN),
            schedule: self.schedule.clone(),
            warmup: self.warmups.first().copied().unwrap_or(0),
            steps: self.steps,
            batch: self.batch,
            seeds: "0".into(),
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            log_every: self.steps.max(1),
            ..d
        })
    }

    /// The grid's settings as a tier (named `train-grid`), for its tables' leading columns.
    pub fn tier(&self) -> Tier {
        Tier {
            name: "train-grid".into(),
            arch: "decoder".into(),
            task: self.task.clone(),
            branch: self.branch.clone(),
            init: self.init.clone(),
            width: self.width,
            heads: normscope_core::monte_carlo::sampling::RawMc::default().heads,
            vocab: TaskConfig::default().vocab,
            seq: TaskConfig::default().seq,
            batch: self.batch,
            steps: self.steps,
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            beta2: 0.999,
            precision: "f64".into(),
            seed: self.seed,
            ..Tier::regression()
        }
    }

    /// Every cell, in grid order (presets, depths, optimizers, lrs, warmups).
    pub fn cells(&self) -> Vec<Cell> {
        let mut v = Vec::new();
        for p in &self.presets {
            for &depth in &self.depths {
                for o in &self.optimizers {
                    for &lr in &self.lrs {
                        for &warmup in &self.warmups {
                            v.push(Cell {
                                preset: p,
                                depth,
                                optimizer: o.clone(),
                                lr,
                                warmup,
                            });
                        }
                    }
                }
            }
        }
        v
    }

    /// Every (cell, seed) run, cells in grid order, seeds inside.
    pub fn jobs(&self) -> Vec<(Cell, u64)> {
        let seeds = self.seeds.list();
        self.cells()
            .into_iter()
            .flat_map(|c| seeds.iter().map(move |&s| (c.clone(), s)))
            .collect()
    }
}

/// A cell as messages name it.
fn name(c: &Cell) -> String {
    format!(
        "cell (preset {}, depth {}, optimizer {}, lr {}, warmup {})",
        c.preset, c.depth, c.optimizer, c.lr, c.warmup
    )
}

impl super::AnalysisConfig for Config {
    fn full() -> Self {
        Config {
            presets: common::presets(&["pre", "post"]),
            depths: vec![4, 8],
            optimizers: vec!["adam".into()],
            lrs: vec![1e-3, 1e-2],
            warmups: vec![0],
            seeds: Seeds::Count(4),
            width: 16,
            branch: "relu-mlp".into(),
            init: RawModel::default().init,
            norm: NormKind::Layer,
            task: "regression".into(),
            steps: 100,
            batch: 16,
            eval_every: 25,
            eval_batches: tier::EVAL_BATCHES,
            schedule: "constant".into(),
            seed: 0,
        }
    }

    fn quick() -> Self {
        Config {
            depths: vec![4],
            seeds: Seeds::Count(2),
            steps: 50,
            ..Self::full()
        }
    }

    fn check(&self) -> Result<()> {
        let nonempty = |field: &'static str, n: usize| {
            if n == 0 {
                Err(Error::invalid(field, "[]", "a non-empty list"))
            } else {
                Ok(())
            }
        };
        nonempty("train-grid.presets", self.presets.len())?;
        distinct("train-grid.presets", &self.presets)?;
        super::common::check_depths("train-grid.depths", &self.depths)?;
        distinct("train-grid.depths", &self.depths)?;
        nonempty("train-grid.optimizers", self.optimizers.len())?;
        for o in &self.optimizers {
            normscope_core::train::optim::OptimizerKind::parse(o)
                .map_err(|e| rename(e, FIELDS, ""))?;
        }
        distinct("train-grid.optimizers", &self.optimizers)?;
        tier::check_lrs("train-grid.lrs", &self.lrs)?;
        nonempty("train-grid.warmups", self.warmups.len())?;
        distinct("train-grid.warmups", &self.warmups)?;
        let seeds = self.seeds.list();
        if seeds.is_empty() || seeds.len() as u64 > MAX_SEEDS {
            return Err(Error::invalid(
                "train-grid.seeds",
                serde_json::to_string(&self.seeds).expect("seeds serialize"),
                format!("a count from 1 to {MAX_SEEDS}, or a non-empty list of distinct seeds"),
            ));
        }
        distinct("train-grid.seeds", &seeds)?;
        cell_count(
            "train-grid.presets/depths/optimizers/lrs/warmups/seeds",
            &[
                self.presets.len(),
                self.depths.len(),
                self.optimizers.len(),
                self.lrs.len(),
                self.warmups.len(),
                seeds.len(),
            ],
        )?;
        let base = self.raw()?;
        base.check().map_err(|e| rename(e, FIELDS, ""))?;
        for c in self.cells() {
            c.config(&base, seeds[0])
                .map_err(|e| rename(e, FIELDS, &name(&c)))?;
        }
        Ok(())
    }

    fn seeds(&self) -> Vec<u64> {
        let mut s = vec![self.seed];
        s.extend(self.seeds.list());
        s
    }
}

fn run(c: &Config, out: &mut Out) -> Result<()> {
    let base = c.raw()?;
    let jobs = c.jobs();
    let cost = |j: &(Cell, u64)| (j.0.depth as u64 * c.steps) as f64;
    let Some(outcomes) = out.units("runs", &jobs, cost, |mine| {
        let refs: Vec<(&Cell, u64)> = mine.iter().map(|(cell, s)| (cell, *s)).collect();
        sweep::run_jobs(&base, &refs, &())
    })?
    else {
        return Ok(());
    };
    let t = c.tier();
    let key = |r: &Outcome| RunKey {
        schedule: c.schedule.clone(),
        ..RunKey::new(&t, &r.cell, r.seed)
    };
    let keyed: Vec<(RunKey, &Outcome, &str)> =
        outcomes.iter().map(|r| (key(r), r, "grid")).collect();
    let mut runs = super::lr_search::outcome_frame(&keyed)?;
    runs.with_column(column("failed", outcomes.iter().map(|r| r.failed)))?;
    out.frame("runs.csv", &mut runs)?;
    let pts: Vec<(&Outcome, u64, f64)> = outcomes
        .iter()
        .flat_map(|r| r.curve.iter().map(move |&(s, e)| (r, s, e)))
        .collect();
    let keys: Vec<RunKey> = pts.iter().map(|p| key(p.0)).collect();
    let mut cols = key_columns(&keys);
    cols.extend([
        column("step", pts.iter().map(|p| p.1)),
        column("eval_loss", pts.iter().map(|p| p.2)),
    ]);
    let mut curves = tier::frame(cols)?;
    out.frame("curves.csv", &mut curves)
}
