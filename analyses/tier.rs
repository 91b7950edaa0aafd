//! The tiers the training claims are judged on (docs/training.md, "Designs that fit a small machine"), and the settings every
//! row of a training table carries ([`RunKey`]).
//!
//! - **`regression`** (tier 0, the cheap tier): a residual ReLU-MLP student of a random deep
//!   residual-MLP teacher, Gaussian noise whose variance is the loss floor; d = 16, batch 16.
//!   Isolates the FFN-gradient and amplification effects; a run costs about a tenth of a
//!   Transformer's.
//! - **`lm`** (tier 1, primary for claims 6, 7, 8 and the stability law): a decoder-only
//!   Transformer (attention and ReLU-MLP blocks alternating; a Transformer layer is two blocks)
//!   on next-token prediction of sequences from a random teacher Transformer (`teacher-lm`:
//!   its conditional entropy is the exact floor, the unigram entropy the context-free loss);
//!   d = 32, 4 heads, 16 tokens, batch 16, Adam with the papers' betas (0.9, 0.98).
//! - **`seq2seq`** (tier 2, the papers' own setting): an encoder-decoder Transformer (N
//!   encoder layers of self-attention and MLP, N decoder layers of causal self-attention,
//!   cross-attention and MLP: 5N blocks) on reversing a sequence of 12 tokens (`reverse-pairs`:
//!   floor 0, context-free loss ln 15), otherwise the LM tier's settings (claim 4 after
//!   training, claim 6 at one depth). Its depth is given in blocks, 5N.
//!
//! A tier is a base request ([`Tier::base`]); a cell of an analysis sets the preset, depth
//! (blocks), optimizer, learning rate and warmup on it ([`normscope_core::train::sweep::Cell`]).

use normscope_core::model::RawModel;
use normscope_core::output::table::column;
use normscope_core::placement::Preset;
use normscope_core::spec::NormKind;
use normscope_core::train::config::RawTrain;
use normscope_core::train::optim::{AdamFlags, OptimizerFlags};
use normscope_core::train::sweep::Cell;
use normscope_core::train::task::{Io, TaskConfig, TaskKind};
use normscope_core::{Error, Result};
use polars::prelude::Column;
use serde::{Deserialize, Serialize};

/// A tier's settings: every run of the tier shares them.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::tier::Tier;
/// let lm = Tier::lm();
/// assert_eq!((lm.width, lm.heads, lm.steps, lm.precision.as_str()), (32, 4, 300, "f32"));
/// assert_eq!(lm.blocks_per_layer(), 2); // attention and MLP
/// assert_eq!(lm.layers(24), 12);
/// let s2s = Tier::seq2seq();
/// assert!(s2s.encdec());
/// assert_eq!((s2s.blocks_per_layer(), s2s.seq), (5, 12));
/// assert_eq!(Tier::regression().layers(6), 6);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// Its name in tables (`regression`, `lm`, `seq2seq`).
    pub name: String,
    /// `decoder` (one stack) or `encoder-decoder` (`normscope train --arch`).
    #[serde(default = "decoder")]
    pub arch: String,
    /// Task (`normscope train --task`).
    pub task: String,
    /// Branch (`--branch`).
    pub branch: String,
    /// Init scheme (`--init`).
    pub init: String,
    /// Width d.
    pub width: usize,
    /// Attention heads (ignored without attention).
    pub heads: usize,
    /// Vocabulary (token tasks).
    pub vocab: usize,
    /// Tokens per sequence (token tasks).
    pub seq: usize,
    /// Examples (sequences) per batch.
    pub batch: usize,
    /// Updates per run.
    pub steps: u64,
    /// Evaluation interval (updates).
    pub eval_every: u64,
    /// Evaluation batches.
    pub eval_batches: usize,
    /// Adam's beta2.
    pub beta2: f64,
    /// `f64` or `f32`.
    pub precision: String,
    /// The task's teacher and evaluation set.
    #[serde(with = "crate::seed")]
    pub seed: u64,
    /// Normalizer of every norm slot (`--norm`): LayerNorm unless the tier names another
    /// (written only then, so the tiers of earlier configurations read and print as before).
    #[serde(default = "layer", skip_serializing_if = "is_layer")]
    pub norm: String,
    /// GroupNorm's groups (`--groups`; written only when not the default).
    #[serde(default = "groups", skip_serializing_if = "is_default_groups")]
    pub groups: usize,
    /// A longer update budget for the tier's deepest models ([`Tier::steps_at`]; written only
    /// when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long: Option<LongBudget>,
}

/// A longer update budget for deep models: a model of at least `from_blocks` blocks trains
/// `steps` updates instead of its tier's [`Tier::steps`], the same for every preset, warmup
/// and seed of that depth (so compared arms share it), fixed in the configuration before any
/// run (so a shard, a subset of cells or a thread count never changes it).
///
/// Why (docs/training.md, "Budgets"): at 300 updates Post-LN on the `lm` tier at 48 blocks
/// sits on the plateau at every learning rate and is classified collapsed, though run for
/// 2,000 updates it leaves the plateau at updates 360-560 at lr 1e-4 and 3e-4 and collapses at
/// 1e-3 (issue 58's measurement, seeds 0-1). `norms` gives DyT 2,000 updates; the full
/// `warmup` run does not use it yet (too slow on the 2-core machine). A run that sits collapsed
/// on the plateau is still stopped from half its budget
/// ([`normscope_core::train::classify::STOP_FROM`]).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::tier::{LongBudget, Tier};
/// let lm = Tier { long: Some(LongBudget { from_blocks: 48, steps: 2000 }), ..Tier::lm() };
/// assert_eq!((lm.steps_at(24), lm.steps_at(48)), (300, 2000));
/// assert_eq!(lm.at_blocks(48).steps, 2000);
/// assert_eq!(Tier::lm().steps_at(48), 300);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongBudget {
    /// The shallowest depth (blocks) that gets the longer budget.
    pub from_blocks: usize,
    /// Its updates.
    pub steps: u64,
}

fn decoder() -> String {
    "decoder".into()
}

fn layer() -> String {
    NormKind::Layer.name().into()
}

fn is_layer(s: &str) -> bool {
    s == NormKind::Layer.name()
}

fn groups() -> usize {
    normscope_core::spec::DEFAULT_GROUPS
}

fn is_default_groups(g: &usize) -> bool {
    *g == groups()
}

impl Tier {
    /// Whether the tier is an encoder-decoder one.
    pub fn encdec(&self) -> bool {
        self.arch == "encoder-decoder"
    }

    /// Tier 2 (module docs): reverse-pairs (12 source tokens), encoder-decoder Transformer,
    /// d = 32, 4 heads, batch 16, 300 updates evaluated every 20, Adam betas (0.9, 0.98), f32.
    pub fn seq2seq() -> Tier {
        Tier {
            name: "seq2seq".into(),
            arch: "encoder-decoder".into(),
            task: "reverse-pairs".into(),
            seq: 12,
            ..Tier::lm()
        }
    }

    /// Tier 0 (module docs): regression, ReLU MLP, d = 16, batch 16, 1000 updates evaluated
    /// every 20, Xavier init, f64.
    pub fn regression() -> Tier {
        Tier {
            name: "regression".into(),
            arch: decoder(),
            task: "regression".into(),
            branch: "relu-mlp".into(),
            init: "xavier".into(),
            width: 16,
            heads: 1,
            vocab: 16,
            seq: 16,
            batch: 16,
            steps: 1000,
            eval_every: 20,
            eval_batches: 4,
            beta2: 0.999,
            precision: "f64".into(),
            seed: 0,
            norm: layer(),
            groups: groups(),
            long: None,
        }
    }

    /// Tier 1 (module docs): teacher-LM, decoder-only Transformer, d = 32, 4 heads, 16 tokens, batch 16,
    /// 300 updates evaluated every 20, Adam betas (0.9, 0.98), f32.
    pub fn lm() -> Tier {
        Tier {
            name: "lm".into(),
            arch: decoder(),
            task: "teacher-lm".into(),
            branch: "transformer".into(),
            init: "xavier".into(),
            width: 32,
            heads: 4,
            vocab: 16,
            seq: 16,
            batch: 16,
            steps: 300,
            eval_every: 20,
            eval_batches: 4,
            beta2: 0.98,
            precision: "f32".into(),
            seed: 0,
            norm: layer(),
            groups: groups(),
            long: None,
        }
    }

    /// Blocks per layer: 2 for a Transformer (attention and MLP), 1 otherwise; an
    /// encoder-decoder's "layer" is one encoder and one decoder layer, 2 + 3 blocks.
    pub fn blocks_per_layer(&self) -> usize {
        if self.encdec() {
            5
        } else if self.branch == "transformer" {
            2
        } else {
            1
        }
    }

    /// The updates a model of `blocks` blocks trains: [`LongBudget::steps`] from
    /// [`LongBudget::from_blocks`] on, else [`Tier::steps`].
    pub fn steps_at(&self, blocks: usize) -> u64 {
        match self.long {
            Some(l) if blocks >= l.from_blocks => l.steps,
            _ => self.steps,
        }
    }

    /// The tier as it trains a model of `blocks` blocks: its `steps` those of
    /// [`Tier::steps_at`], without a longer budget.
    pub fn at_blocks(&self, blocks: usize) -> Tier {
        Tier {
            steps: self.steps_at(blocks),
            long: None,
            ..self.clone()
        }
    }

    /// Layers of a model of `blocks` blocks (per stack for an encoder-decoder).
    pub fn layers(&self, blocks: usize) -> usize {
        blocks / self.blocks_per_layer()
    }

    /// The base request of the tier (every cell modifies it): its norm with affine maps, the
    /// task's teacher and evaluation set from `seed`, gradient and update statistics logged at
    /// updates 1, `steps / 2` and `steps` (what `optimizers` reads beyond the first update).
    pub fn base(&self) -> Result<RawTrain> {
        let d = RawTrain::default();
        Ok(RawTrain {
            arch: self.arch.clone(),
            layers: self.encdec().then_some(1),
            presets: "pre".into(),
            model: RawModel {
                branch: self.branch.clone(),
                init: self.init.clone(),
                width: self.width,
                norm: NormKind::parse(&self.norm).ok_or_else(|| {
                    Error::invalid(
                        "tier.norm",
                        &self.norm,
                        format!("one of {}", NormKind::names()),
                    )
                })?,
                groups: self.groups,
                ..d.model
            },
            mc: normscope_core::monte_carlo::sampling::RawMc {
                heads: self.heads,
                precision: normscope_core::monte_carlo::precision::Precision::parse(
                    &self.precision,
                )?,
                ..d.mc
            },
            task: TaskConfig {
                kind: TaskKind::parse(&self.task)?,
                vocab: self.vocab,
                seq: self.seq,
                teacher_seed: self.seed,
                ..d.task
            },
            optimizer_flags: OptimizerFlags {
                adam: AdamFlags {
                    beta2: Some(self.beta2),
                    ..AdamFlags::default()
                },
                ..d.optimizer_flags
            },
            steps: self.steps,
            batch: self.batch,
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            log_every: (self.steps / 2).max(1),
            ..d
        })
    }

    /// Checks the tier through the request it makes (every field named `<field>.<key>`), at
    /// each depth `depths` (blocks) that must be whole layers.
    pub fn check(&self, field: &'static str, depths: &[usize]) -> Result<()> {
        if let Some(l) = self.long
            && (l.from_blocks == 0 || l.steps < self.steps)
        {
            return Err(Error::invalid(
                field,
                format!(
                    "{}: long budget of {} updates from {} blocks",
                    self.name, l.steps, l.from_blocks
                ),
                format!(
                    "from_blocks >= 1 and steps >= the tier's steps ({})",
                    self.steps
                ),
            ));
        }
        for &depth in depths {
            if depth == 0 || depth % self.blocks_per_layer() != 0 {
                return Err(Error::invalid(
                    field,
                    format!("{} at depth {depth}", self.name),
                    format!(
                        "depths (blocks) that are whole layers of {} block(s), >= 1",
                        self.blocks_per_layer()
                    ),
                ));
            }
            let mut raw = self.at_blocks(depth).base()?;
            raw.model.depth = depth;
            if self.encdec() {
                raw.layers = Some(depth / 5);
            }
            let bad = |e: Error| {
                Error::invalid(field, &self.name, format!("a valid training tier ({e})"))
            };
            let cfg = raw.check().map_err(bad)?;
            // The norm on the tier's batches, checked now rather than when a run starts.
            let (seq, columns) = match cfg.io {
                Io::Tokens { seq, .. } | Io::Pairs { src: seq, .. } => (seq, seq * cfg.batch),
                Io::Vectors { .. } => (1, cfg.batch),
            };
            let spec = cfg
                .mc
                .model
                .stack(normscope_core::placement::POST)
                .map_err(bad)?;
            normscope_core::train::config::check_trainable(&spec, self.width, seq, columns)
                .map_err(bad)?;
        }
        Ok(())
    }
}

/// A tier and the presets, depths and learning-rate grid an analysis trains in it.
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::tier::{Tier, TierSet};
/// let set = TierSet {
///     tier: Tier::regression(),
///     presets: normscope_analyses::common::presets(&["pre", "post"]),
///     depths: vec![4],
///     lrs: vec![1e-3, 1e-2],
/// };
/// set.check("mine.tiers")?;
/// let bad = TierSet { depths: vec![0], ..set.clone() };
/// assert!(bad.check("mine.tiers").is_err());
/// # Ok::<(), normscope_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierSet {
    /// The tier's settings.
    pub tier: Tier,
    /// Presets.
    pub presets: Vec<&'static Preset>,
    /// Depths in blocks (whole layers).
    pub depths: Vec<usize>,
    /// The learning-rate grid of the tuning.
    pub lrs: Vec<f64>,
}

impl TierSet {
    /// Checks presets, depths (whole layers, each a valid request) and the grid, naming
    /// `field`.
    pub fn check(&self, field: &'static str) -> Result<()> {
        super::training::check_presets(&self.presets)?;
        super::common::check_depths(field, &self.depths)?;
        super::training::check_lrs(field, &self.lrs)?;
        self.tier.check(field, &self.depths)
    }
}

/// Every setting of one training run, as every training table's leading columns carry it
/// (the schema is the same in every training analysis): `preset, label, tier, task, branch,
/// width, heads, blocks, layers, optimizer, lr, warmup, schedule, steps, batch, precision,
/// seed`. `blocks` is the depth L the block model counts; `layers` the Transformer layers
/// (two blocks each) or, without attention, the blocks. A summary over seeds writes its seeds
/// as `seed` = `a..b` ([`seed_range`]).
///
/// # Examples
///
/// ```rust
/// use normscope_analyses::tier::{RunKey, Tier};
/// use normscope_core::train::sweep::Cell;
/// let cell = Cell { preset: normscope_core::placement::POST, depth: 24, optimizer: "adam".into(), lr: 1e-3, warmup: 0 };
/// let k = RunKey::new(&Tier::lm(), &cell, 3);
/// assert_eq!((k.tier.as_str(), k.blocks, k.layers, k.heads), ("lm", 24, 12, 4));
/// assert_eq!((k.seed.as_str(), k.schedule.as_str()), ("3", "constant"));
/// assert_eq!(k.at_lr(1e-2).lr, 1e-2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RunKey {
    /// The preset (its name and paper label are the key's first two columns).
    pub preset: &'static Preset,
    /// Tier name.
    pub tier: String,
    /// Task.
    pub task: String,
    /// Branch.
    pub branch: String,
    /// Width d.
    pub width: usize,
    /// Attention heads (0 without attention).
    pub heads: usize,
    /// Blocks L.
    pub blocks: usize,
    /// Layers.
    pub layers: usize,
    /// Optimizer.
    pub optimizer: String,
    /// Peak learning rate.
    pub lr: f64,
    /// Linear-warmup updates.
    pub warmup: u64,
    /// Schedule after warmup.
    pub schedule: String,
    /// Updates.
    pub steps: u64,
    /// Batch size.
    pub batch: usize,
    /// `f64` or `f32`.
    pub precision: String,
    /// Training seed, or a range `a..b` for a summary.
    pub seed: String,
}

impl RunKey {
    /// The key of `cell` at `seed` (a seed or a range text) in `tier`.
    pub fn new(tier: &Tier, cell: &Cell, seed: impl ToString) -> RunKey {
        let attention = tier.branch == "transformer" || tier.branch.contains("attention");
        RunKey {
            preset: cell.preset,
            tier: tier.name.clone(),
            task: tier.task.clone(),
            branch: tier.branch.clone(),
            width: tier.width,
            heads: if attention { tier.heads } else { 0 },
            blocks: cell.depth,
            layers: tier.layers(cell.depth),
            optimizer: cell.optimizer.clone(),
            lr: cell.lr,
            warmup: cell.warmup,
            schedule: "constant".into(),
            steps: tier.steps_at(cell.depth),
            batch: tier.batch,
            precision: tier.precision.clone(),
            seed: seed.to_string(),
        }
    }

    /// The same key with another learning rate.
    pub fn at_lr(&self, lr: f64) -> RunKey {
        RunKey { lr, ..self.clone() }
    }
}

/// The seeds `0..n` as a summary row writes them.
pub fn seed_range(seeds: &[u64]) -> String {
    match (seeds.first(), seeds.last()) {
        (Some(a), Some(b)) if seeds.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("{a}..{}", b + 1)
        }
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The leading columns of a training table, one row per key (module docs of [`RunKey`]). An
/// lr of NaN (a summary over learning rates) is written empty.
pub fn key_columns(keys: &[RunKey]) -> Vec<Column> {
    let s = |f: fn(&RunKey) -> &str| keys.iter().map(move |k| f(k).to_string());
    vec![
        column("preset", s(|k| k.preset.name)),
        column("label", s(|k| k.preset.label)),
        column("tier", s(|k| &k.tier)),
        column("task", s(|k| &k.task)),
        column("branch", s(|k| &k.branch)),
        column("width", keys.iter().map(|k| k.width as u64)),
        column("heads", keys.iter().map(|k| k.heads as u64)),
        column("blocks", keys.iter().map(|k| k.blocks as u64)),
        column("layers", keys.iter().map(|k| k.layers as u64)),
        column("optimizer", s(|k| &k.optimizer)),
        column("lr", keys.iter().map(|k| k.lr)),
        column("warmup", keys.iter().map(|k| k.warmup)),
        column("schedule", s(|k| &k.schedule)),
        column("steps", keys.iter().map(|k| k.steps)),
        column("batch", keys.iter().map(|k| k.batch as u64)),
        column("precision", s(|k| &k.precision)),
        column("seed", s(|k| &k.seed)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_tiers_are_valid_and_count_layers() {
        Tier::regression().check("tiers", &[6, 48]).unwrap();
        Tier::lm().check("tiers", &[12, 24]).unwrap();
        Tier::seq2seq().check("tiers", &[30]).unwrap();
        assert_eq!(Tier::seq2seq().layers(30), 6);
        assert!(Tier::seq2seq().check("tiers", &[24]).is_err());
        assert_eq!(Tier::lm().layers(24), 12);
        assert_eq!(Tier::regression().layers(24), 24);
        // A Transformer depth must be whole layers.
        let e = Tier::lm().check("tiers", &[7]).unwrap_err().to_string();
        assert!(e.contains("tiers") && e.contains("whole layers"), "{e}");
        let bad = Tier {
            width: 30,
            ..Tier::lm()
        };
        assert!(bad.check("tiers", &[12]).is_err());
    }

    #[test]
    fn a_long_budget_applies_from_its_depth_and_is_checked() {
        let long = |from_blocks, steps| Tier {
            long: Some(LongBudget { from_blocks, steps }),
            ..Tier::lm()
        };
        let t = long(48, 2000);
        t.check("tiers", &[12, 48]).unwrap();
        assert_eq!(
            (t.steps_at(24), t.steps_at(48), t.steps_at(96)),
            (300, 2000, 2000)
        );
        // The key of a run carries the steps it trained.
        let cell = Cell {
            preset: normscope_core::placement::POST,
            depth: 48,
            optimizer: "adam".into(),
            lr: 1e-3,
            warmup: 0,
        };
        assert_eq!(RunKey::new(&t, &cell, 0).steps, 2000);
        assert_eq!(RunKey::new(&Tier::lm(), &cell, 0).steps, 300);
        assert_eq!(t.at_blocks(48).base().unwrap().steps, 2000);
        assert_eq!(t.at_blocks(12).base().unwrap().steps, 300);
        // Fewer updates than the tier's own, or from depth 0: refused, naming the field.
        for bad in [long(48, 299), long(0, 2000)] {
            let e = bad.check("warmup.tiers", &[12]).unwrap_err().to_string();
            assert!(
                e.contains("warmup.tiers") && e.contains("from_blocks >= 1"),
                "{e}"
            );
        }
        // Written only when set: earlier configurations print as before, and it round-trips.
        let plain = toml::to_string(&Tier::lm()).unwrap();
        assert!(!plain.contains("long"), "{plain}");
        let text = toml::to_string(&t).unwrap();
        assert_eq!(toml::from_str::<Tier>(&text).unwrap(), t);
    }

    #[test]
    fn seed_ranges() {
        assert_eq!(seed_range(&[0, 1, 2]), "0..3");
        assert_eq!(seed_range(&[3, 7]), "3 7");
        assert_eq!(seed_range(&[5]), "5..6");
    }
}
