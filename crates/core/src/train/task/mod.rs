//! Seeded training tasks (docs/training.md, "Designs that fit a small machine"): what a model sees,
//! what it predicts, and the two reference losses every outcome is measured against.
//!
//! - [`regression`]: teacher-student regression from a random deep residual-MLP teacher
//!   (tier 0), loss `mean (f - y)^2`, floor the noise variance.
//! - [`teacher_lm`]: next-token prediction on sequences sampled from a random Pre-LN teacher
//!   Transformer (tier 1), loss the mean cross-entropy, floor the teacher's conditional entropy.
//! - [`algorithmic`]: copy, reverse and sort (tier 1), loss the cross-entropy on the output
//!   half, floor 0.
//! - [`seq2seq`]: reverse-pairs, a source sequence and its reverse for the encoder-decoder
//!   model ([`crate::train::seq2seq`]), floor 0.
//!
//! Reference losses: the *floor* is the loss of the Bayes-optimal predictor
//! ([`Task::floor`]); the *context-free loss* is the loss of the best predictor that ignores
//! the input ([`Task::context_free_loss`]): for token tasks the entropy of the targets'
//! unigram distribution, the "unigram plateau" that docs/training.md, "Designs that fit a small machine" reports Post-LN
//! collapsing to.
//!
//! Randomness: a batch is a function of the caller's generator alone (the caller seeds it per
//! training seed and step, so data order is paired across presets); a teacher's weights are a
//! function of `teacher_seed` and the shapes alone. No global or thread-local generator is used.

pub mod algorithmic;
pub mod regression;
pub mod seq2seq;
pub mod teacher_lm;

use crate::{Error, Result};
use nalgebra::DMatrix;
use normscope_numeric::rng::{Rng, splitmix64};
use rand::SeedableRng;

/// LayerNorm's `eps` inside the teachers: `LN(z) = P z / sqrt(|P z|^2 / d + eps)`, PyTorch's
/// `nn.LayerNorm` default (the Monte Carlo engine's too).
pub const NORM_EPS: f64 = 1e-5;

/// The largest vocabulary, sequence length, input/output width, teacher width and teacher
/// depth accepted: `--seq <= 4096`; the same cap keeps every teacher matrix below
/// `4096^2` entries (128 MiB) and token ids far inside `u32`.
pub const MAX_SIZE: usize = 4096;

/// Examples (regression) or sequences (teacher-lm) of the seeded sample that estimates a
/// teacher's context-free loss.
pub const CONTEXT_FREE_SAMPLE: usize = 4096;

/// Which task.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::task::TaskKind;
///
/// assert_eq!(TaskKind::parse("Teacher-LM")?, TaskKind::TeacherLm);
/// assert_eq!(TaskKind::Reverse.name(), "reverse");
/// assert_eq!(TaskKind::ReversePairs.label(), "Reverse (pairs)");
/// assert!(TaskKind::Sort.is_algorithmic() && !TaskKind::Regression.is_algorithmic());
/// assert!(TaskKind::ReversePairs.is_pairs());
/// assert_eq!(TaskKind::ALL.len(), 6);
/// assert!(TaskKind::parse("mnist").is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// Teacher-student regression ([`regression`]).
    Regression,
    /// Next-token prediction from a random teacher Transformer ([`teacher_lm`]).
    TeacherLm,
    /// `[a, SEP, a]` ([`algorithmic`]).
    Copy,
    /// `[a, SEP, reverse(a)]` ([`algorithmic`]).
    Reverse,
    /// `[a, SEP, sort(a)]` ([`algorithmic`]).
    Sort,
    /// Source a, target `reverse(a)`, for the encoder-decoder model ([`seq2seq`]).
    ReversePairs,
}

impl TaskKind {
    /// Names accepted by `--task`.
    pub const NAMES: &'static str = "regression, teacher-lm, copy, reverse, sort, reverse-pairs";

    /// Every task, in help-text order.
    pub const ALL: [TaskKind; 6] = [
        TaskKind::Regression,
        TaskKind::TeacherLm,
        TaskKind::Copy,
        TaskKind::Reverse,
        TaskKind::Sort,
        TaskKind::ReversePairs,
    ];

    /// Parses a name, ignoring ASCII case (`Teacher-LM`, `COPY`).
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|k| k.name() == lower)
            .ok_or_else(|| Error::Unknown {
                kind: "task",
                name: s.to_string(),
                valid: Self::NAMES.to_string(),
            })
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Regression => "regression",
            TaskKind::TeacherLm => "teacher-lm",
            TaskKind::Copy => "copy",
            TaskKind::Reverse => "reverse",
            TaskKind::Sort => "sort",
            TaskKind::ReversePairs => "reverse-pairs",
        }
    }

    /// Typeset name for captions and tables.
    pub fn label(self) -> &'static str {
        match self {
            TaskKind::Regression => "Regression",
            TaskKind::TeacherLm => "Teacher LM",
            TaskKind::Copy => "Copy",
            TaskKind::Reverse => "Reverse",
            TaskKind::Sort => "Sort",
            TaskKind::ReversePairs => "Reverse (pairs)",
        }
    }

    /// Whether it is one of copy, reverse, sort.
    pub fn is_algorithmic(self) -> bool {
        matches!(self, TaskKind::Copy | TaskKind::Reverse | TaskKind::Sort)
    }

    /// Whether its batches are (source, target) pairs for an encoder-decoder model.
    pub fn is_pairs(self) -> bool {
        self == TaskKind::ReversePairs
    }
}

/// What a model sees and predicts.
///
/// # Examples
///
/// What the default tasks read and write (vocab 16, seq 16, 16 inputs and outputs):
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::task::{self, Io, TaskConfig, TaskKind};
///
/// let io = |kind| -> Result<Io, normscope_core::Error> {
///     Ok(task::build(&TaskConfig { kind, teacher_width: 8, ..TaskConfig::default() })?.io())
/// };
/// assert_eq!(io(TaskKind::Regression)?, Io::Vectors { d_in: 16, d_out: 16 });
/// assert_eq!(io(TaskKind::Copy)?, Io::Tokens { vocab: 16, seq: 16 });
/// assert_eq!(io(TaskKind::ReversePairs)?, Io::Pairs { vocab: 16, src: 16, tgt: 16 });
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// Token sequences: inputs and targets are token ids `< vocab`, `seq` tokens per sequence.
    Tokens {
        /// Vocabulary size.
        vocab: usize,
        /// Tokens per sequence.
        seq: usize,
    },
    /// Vectors: one example per column.
    Vectors {
        /// Input width.
        d_in: usize,
        /// Output width.
        d_out: usize,
    },
    /// Sequence pairs for an encoder-decoder model: the encoder reads `src` tokens per
    /// sequence, the decoder `tgt`, every id `< vocab`.
    Pairs {
        /// Vocabulary size (shared by source and target).
        vocab: usize,
        /// Source tokens per sequence.
        src: usize,
        /// Target tokens per sequence.
        tgt: usize,
    },
}

/// A batch of token sequences, sequence-major: token t of sequence b at index `b * seq + t`.
/// The loss is `sum_i w_i CE_i / sum_i w_i` with `CE_i = -ln p(targets_i | inputs of the
/// sequence up to i)`.
///
/// # Examples
///
/// Copy with vocab 5 (separator 4) and seq 4 (k = 2): each sequence is `[a1, a2, 4, a1, a2]`,
/// inputs its first four tokens, targets its last four, and only the two output positions
/// count.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig { kind: TaskKind::Copy, vocab: 5, seq: 4, ..TaskConfig::default() };
/// let copy = task::build(&cfg)?;
/// let Batch::Tokens(b) = copy.batch(&mut data_rng(0), 2) else { panic!("tokens") };
/// assert_eq!((b.seq, b.size, b.inputs.len()), (4, 2, 8));
/// assert_eq!(b.weights, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]);
/// assert_eq!((b.inputs[2], b.targets[1]), (4, 4));
/// assert_eq!(b.targets[2..4], b.inputs[0..2]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBatch {
    /// Tokens per sequence.
    pub seq: usize,
    /// Sequences.
    pub size: usize,
    /// Input token ids, `size * seq`.
    pub inputs: Vec<u32>,
    /// Target token ids, `size * seq` (the next token of each input position).
    pub targets: Vec<u32>,
    /// Loss weights, `size * seq`: 1 where the loss counts, 0 elsewhere (e.g. the prompt part of
    /// copy).
    pub weights: Vec<f64>,
}

/// A regression batch. The loss is the mean over all entries of `(f - y)^2` (PyTorch's
/// `nn.MSELoss` default reduction).
///
/// # Examples
///
/// The regression task's batches: inputs and targets as columns, the same batch from the same
/// stream state.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::{self, Batch, TaskConfig};
///
/// let t = task::build(&TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..Default::default() })?;
/// let Batch::Vectors(b) = t.batch(&mut data_rng(0), 3) else { panic!("vectors") };
/// assert_eq!((b.x.shape(), b.y.shape()), ((4, 3), (2, 3)));
/// assert_eq!(t.batch(&mut data_rng(0), 3), Batch::Vectors(b));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct VectorBatch {
    /// Inputs, `d_in x size`.
    pub x: DMatrix<f64>,
    /// Targets, `d_out x size`.
    pub y: DMatrix<f64>,
}

/// A batch of (source, target) sequence pairs, sequence-major (token t of pair b at index
/// `b * src_len + t` of the source, `b * tgt_len + t` of the target side). The encoder reads
/// `source`; the decoder reads `inputs` and predicts `targets`; the loss is
/// `sum_i w_i CE_i / sum_i w_i` over the target positions.
///
/// # Examples
///
/// Reverse-pairs with vocab 5 (BOS = 4) and k = 3: the targets are the source reversed, and
/// the decoder reads them shifted right behind BOS.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig {
///     kind: TaskKind::ReversePairs,
///     vocab: 5,
///     seq: 3,
///     ..TaskConfig::default()
/// };
/// let Batch::Pairs(p) = task::build(&cfg)?.batch(&mut data_rng(0), 1) else { panic!("pairs") };
/// assert_eq!((p.src_len, p.tgt_len, p.size), (3, 3, 1));
/// let reversed: Vec<u32> = p.source.iter().rev().copied().collect();
/// assert_eq!(p.targets, reversed);
/// assert_eq!(p.inputs, [4, p.targets[0], p.targets[1]]);
/// assert_eq!(p.weights, [1.0; 3]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PairBatch {
    /// Source tokens per pair.
    pub src_len: usize,
    /// Target tokens per pair (the decoder's inputs and targets).
    pub tgt_len: usize,
    /// Pairs.
    pub size: usize,
    /// Source ids, `size * src_len`.
    pub source: Vec<u32>,
    /// The decoder's input ids, `size * tgt_len` (the targets shifted right behind BOS).
    pub inputs: Vec<u32>,
    /// Target ids, `size * tgt_len`.
    pub targets: Vec<u32>,
    /// Loss weights, `size * tgt_len`.
    pub weights: Vec<f64>,
}

/// One batch of any kind.
///
/// # Examples
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::{self, Batch, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig { d_in: 4, d_out: 2, teacher_width: 8, ..TaskConfig::default() };
/// let regression = task::build(&cfg)?;
/// match regression.batch(&mut data_rng(0), 3) {
///     Batch::Vectors(v) => assert_eq!((v.x.shape(), v.y.shape()), ((4, 3), (2, 3))),
///     other => panic!("{other:?}"),
/// }
/// // A batch is a function of the generator's state: the same seed, the same batch.
/// assert_eq!(regression.batch(&mut data_rng(1), 3), regression.batch(&mut data_rng(1), 3));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Batch {
    /// Token sequences.
    Tokens(TokenBatch),
    /// Vectors.
    Vectors(VectorBatch),
    /// Sequence pairs.
    Pairs(PairBatch),
}

/// A seeded task.
///
/// # Examples
///
/// The copy task (an implementor built by [`build`]): floor 0, context-free loss
/// `ln(vocab - 1) = ln 4` for vocab 5.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::run::data_rng;
/// use normscope_core::train::task::{self, Io, Task, TaskConfig, TaskKind};
///
/// let copy: Box<dyn Task> =
///     task::build(&TaskConfig { kind: TaskKind::Copy, vocab: 5, seq: 4, ..Default::default() })?;
/// assert_eq!(copy.kind(), TaskKind::Copy);
/// assert_eq!(copy.io(), Io::Tokens { vocab: 5, seq: 4 });
/// let batch = copy.batch(&mut data_rng(0), 2);
/// assert_eq!(copy.floor(&batch), 0.0);
/// assert_eq!(copy.context_free_loss(), 4f64.ln());
/// # Ok(())
/// # }
/// ```
pub trait Task: Send + Sync {
    /// Which task.
    fn kind(&self) -> TaskKind;

    /// What a model sees and predicts.
    fn io(&self) -> Io;

    /// A fresh batch of `size` examples drawn from `rng` (the caller keeps one stream per
    /// training seed, drawn in update order, so data order is paired across presets). A
    /// function of the state of `rng` and `size` alone, and it runs no parallel (rayon) work:
    /// [`crate::train::batch_cache`] shares batches between runs on rayon's threads, and a run
    /// waits there for a batch another run is drawing.
    fn batch(&self, rng: &mut Rng, size: usize) -> Batch;

    /// The loss of the Bayes-optimal predictor on this batch (the floor): regression: the noise
    /// variance `noise^2`; teacher-lm: the mean over weighted positions of the entropy (nats) of
    /// the teacher's next-token distribution at the batch's prefixes, whose expectation is the
    /// exact loss floor; copy, reverse, sort, reverse-pairs: 0.
    fn floor(&self, batch: &Batch) -> f64;

    /// The loss of the best predictor that ignores the input: token tasks: the entropy of the
    /// targets' marginal (unigram) distribution at the weighted positions (exact for copy,
    /// reverse, sort, reverse-pairs; a seeded estimate for teacher-lm); regression: the mean over outputs of
    /// `Var y` (predicting the mean), a seeded estimate. Teacher-lm estimates it on the first
    /// call, in parallel on rayon, and keeps it: a caller that shares the task across
    /// parallel runs asks for it once before it shares it.
    fn context_free_loss(&self) -> f64;
}

/// Task settings (CLI flags in parentheses). A teacher is a function of `teacher_seed`, the
/// shapes (`vocab`, `d_in`, `d_out`, `teacher_depth`, `teacher_width`) and nothing else.
///
/// # Examples
///
/// ```rust
/// use normscope_core::train::task::{DEFAULT_TEMPERATURE, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig::default();
/// assert_eq!(cfg.kind, TaskKind::Regression);
/// assert_eq!((cfg.vocab, cfg.seq, cfg.teacher_depth, cfg.teacher_width), (16, 16, 2, 32));
/// assert_eq!((cfg.noise, cfg.temperature), (0.1, DEFAULT_TEMPERATURE));
/// assert!(cfg.check().is_ok());
/// // Copy needs an even --seq (k prompt tokens, then k outputs).
/// let odd = TaskConfig { kind: TaskKind::Copy, seq: 5, ..cfg };
/// assert!(odd.check().unwrap_err().to_string().contains("--seq"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskConfig {
    /// Which task (`--task`).
    pub kind: TaskKind,
    /// Vocabulary size, separator included for the algorithmic tasks and BOS for reverse-pairs
    /// (`--vocab`).
    pub vocab: usize,
    /// Tokens per sequence the model sees (`--seq`; reverse-pairs: the source's and the
    /// target's length k).
    pub seq: usize,
    /// Regression input width (`--task-in`).
    pub d_in: usize,
    /// Regression output width (`--task-out`).
    pub d_out: usize,
    /// Teacher blocks (`--teacher-depth`).
    pub teacher_depth: usize,
    /// Teacher width (`--teacher-width`).
    pub teacher_width: usize,
    /// Regression noise standard deviation (`--noise`).
    pub noise: f64,
    /// Teacher-lm softmax temperature (`--teacher-temperature`).
    pub temperature: f64,
    /// The teacher's weights' seed (`--teacher-seed`).
    pub teacher_seed: u64,
    /// Teacher-lm: the fraction of the vocabulary whose teacher embeddings are drawn anew
    /// (`--teacher-rewire`, 0 = the teacher as drawn): the same language with a changed subset
    /// of its rules, for fine-tuning ([`teacher_lm::TeacherLm::new`]).
    pub rewire: f64,
    /// The seed of the rewired tokens and their new embeddings (`--teacher-rewire-seed`).
    pub rewire_seed: u64,
}

/// The default `--teacher-temperature`: with the other defaults the teacher-lm floor is about
/// half of `ln(vocab)` (58% at teacher seed 0, median 52% over seeds 0-15; measured, see
/// [`teacher_lm`]).
pub const DEFAULT_TEMPERATURE: f64 = 0.45;

impl Default for TaskConfig {
    /// Small defaults: vocab 16, seq 16 (k = 8 for the algorithmic tasks), d_in = d_out = 16, a
    /// teacher of depth 2 and width 32, noise 0.1, temperature [`DEFAULT_TEMPERATURE`],
    /// teacher seed 0; task regression.
    fn default() -> Self {
        TaskConfig {
            kind: TaskKind::Regression,
            vocab: 16,
            seq: 16,
            d_in: 16,
            d_out: 16,
            teacher_depth: 2,
            teacher_width: 32,
            noise: 0.1,
            temperature: DEFAULT_TEMPERATURE,
            teacher_seed: 0,
            rewire: 0.0,
            rewire_seed: 0,
        }
    }
}

/// `min <= value <= MAX_SIZE`, else an error naming `field`.
fn check_size(field: &'static str, value: usize, min: usize, why: &str) -> Result<()> {
    if (min..=MAX_SIZE).contains(&value) {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            value,
            format!("an integer from {min} to {MAX_SIZE}{why}"),
        ))
    }
}

impl TaskConfig {
    /// Checks every field against the rules of `self.kind` ([`TaskConfig::check_as`]).
    pub fn check(&self) -> Result<()> {
        self.check_as(self.kind)
    }

    /// Checks every field against the rules of task `kind`, returning the first error (naming
    /// the flag and what is accepted):
    ///
    /// - `--vocab` in `2..=4096` (algorithmic tasks: `3..=4096`, two content symbols and the
    ///   separator at least; reverse-pairs: `3..=4096`, two content symbols and BOS);
    /// - `--seq` in `1..=4096` (algorithmic: even, `2..=4096`, so `k = seq / 2 >= 1`);
    /// - `--task-in`, `--task-out` in `1..=4096`;
    /// - `--teacher-depth` in `0..=4096` (regression: `1..=4096`, its blocks are scaled by
    ///   `1/sqrt(depth)`);
    /// - `--teacher-width` in `2..=4096` (LayerNorm of one coordinate is 0); teacher-lm: even,
    ///   so that its [`teacher_lm::TEACHER_HEADS`] heads divide it;
    /// - `--noise` finite and `>= 0`; `--teacher-temperature` finite and `> 0`.
    pub fn check_as(&self, kind: TaskKind) -> Result<()> {
        let algorithmic = kind.is_algorithmic();
        if kind.is_pairs() {
            check_size(
                "--vocab",
                self.vocab,
                3,
                &format!(" for {} (at least 2 content symbols and BOS)", kind.name()),
            )?;
            check_size("--seq", self.seq, 1, "")?;
        } else if algorithmic {
            check_size(
                "--vocab",
                self.vocab,
                3,
                &format!(
                    " for {} (at least 2 content symbols and the separator)",
                    kind.name()
                ),
            )?;
            check_size("--seq", self.seq, 2, "")?;
            if !self.seq.is_multiple_of(2) {
                return Err(Error::invalid(
                    "--seq",
                    self.seq,
                    format!(
                        "an even number for {} (k = seq/2 content tokens, a separator, k outputs)",
                        kind.name()
                    ),
                ));
            }
        } else {
            check_size("--vocab", self.vocab, 2, "")?;
            check_size("--seq", self.seq, 1, "")?;
        }
        check_size("--task-in", self.d_in, 1, "")?;
        check_size("--task-out", self.d_out, 1, "")?;
        let (depth_min, why) = match kind {
            TaskKind::Regression => (1, " for regression (blocks are scaled by 1/sqrt(depth))"),
            _ => (0, ""),
        };
        check_size("--teacher-depth", self.teacher_depth, depth_min, why)?;
        check_size(
            "--teacher-width",
            self.teacher_width,
            2,
            " (LayerNorm of one coordinate is 0)",
        )?;
        let heads = teacher_lm::TEACHER_HEADS;
        if kind == TaskKind::TeacherLm && !self.teacher_width.is_multiple_of(heads) {
            return Err(Error::invalid(
                "--teacher-width",
                self.teacher_width,
                format!("a multiple of {heads} for teacher-lm (the teacher's attention heads)"),
            ));
        }
        if !(self.noise.is_finite() && self.noise >= 0.0) {
            return Err(Error::invalid(
                "--noise",
                self.noise,
                "a finite standard deviation >= 0",
            ));
        }
        if !(self.rewire.is_finite() && (0.0..=1.0).contains(&self.rewire)) {
            return Err(Error::invalid(
                "--teacher-rewire",
                self.rewire,
                "a fraction of the vocabulary from 0 to 1",
            ));
        }
        if self.rewire > 0.0 && kind != TaskKind::TeacherLm {
            return Err(Error::invalid(
                "--teacher-rewire",
                self.rewire,
                "0 unless --task teacher-lm (only its teacher has embeddings to rewire)",
            ));
        }
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return Err(Error::invalid(
                "--teacher-temperature",
                self.temperature,
                "a finite number > 0",
            ));
        }
        Ok(())
    }
}

/// Checks every field ([`TaskConfig::check`]), then builds the task; a teacher's weights are
/// drawn from `teacher_seed` only.
pub fn build(cfg: &TaskConfig) -> Result<Box<dyn Task>> {
    Ok(match cfg.kind {
        TaskKind::Regression => Box::new(regression::Regression::new(cfg)?),
        TaskKind::TeacherLm => Box::new(teacher_lm::TeacherLm::new(cfg)?),
        TaskKind::Copy | TaskKind::Reverse | TaskKind::Sort => {
            Box::new(algorithmic::Algorithmic::new(cfg)?)
        }
        TaskKind::ReversePairs => Box::new(seq2seq::ReversePairs::new(cfg)?),
    })
}

/// The generator of a teacher's weights: `Xoshiro256++` seeded by `teacher_seed`
/// (`Rng::seed_from_u64`).
pub fn teacher_rng(teacher_seed: u64) -> Rng {
    Rng::seed_from_u64(teacher_seed)
}

/// The generator of the seeded sample that estimates a teacher's context-free loss: seeded by
/// `splitmix64(teacher_seed) ^ 0x636f_6e74_6578_7466` ("contextf"), a stream apart from the
/// weights' and fixed per teacher, so the estimate is too.
pub fn estimate_rng(teacher_seed: u64) -> Rng {
    Rng::seed_from_u64(splitmix64(teacher_seed) ^ 0x636f_6e74_6578_7466)
}

/// `-sum_i p_i ln p_i` in nats (`0 ln 0 = 0`).
pub fn entropy<'a>(p: impl IntoIterator<Item = &'a f64>) -> f64 {
    -p.into_iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| x * x.ln())
        .sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(kind: TaskKind) -> TaskConfig {
        TaskConfig {
            kind,
            ..TaskConfig::default()
        }
    }

    #[test]
    fn names_round_trip_ignoring_case() {
        for k in TaskKind::ALL {
            assert_eq!(TaskKind::parse(k.name()).unwrap(), k);
            assert_eq!(TaskKind::parse(&k.name().to_uppercase()).unwrap(), k);
            assert!(TaskKind::NAMES.contains(k.name()));
        }
        let e = TaskKind::parse("mnist").unwrap_err().to_string();
        assert!(
            e.contains("unknown task 'mnist'") && e.contains("teacher-lm"),
            "{e}"
        );
    }

    #[test]
    fn defaults_are_valid_for_every_task() {
        for k in TaskKind::ALL {
            let cfg = config(k);
            cfg.check().unwrap();
            let t = build(&cfg).unwrap();
            assert_eq!(t.kind(), k);
            match (k, t.io()) {
                (TaskKind::Regression, Io::Vectors { d_in, d_out }) => {
                    assert_eq!((d_in, d_out), (16, 16))
                }
                (_, Io::Tokens { vocab, seq }) => assert_eq!((vocab, seq), (16, 16)),
                (TaskKind::ReversePairs, Io::Pairs { vocab, src, tgt }) => {
                    assert_eq!((vocab, src, tgt), (16, 16, 16))
                }
                (k, io) => panic!("{k:?} has io {io:?}"),
            }
        }
    }

    #[test]
    fn same_seed_same_batch_other_seed_other_batch() {
        for k in TaskKind::ALL {
            let t = build(&config(k)).unwrap();
            let draw = |seed| t.batch(&mut Rng::seed_from_u64(seed), 8);
            assert_eq!(draw(1), draw(1), "{k:?}");
            assert_ne!(draw(1), draw(2), "{k:?}");
        }
    }

    #[test]
    fn batch_shapes_follow_io() {
        for k in TaskKind::ALL {
            let t = build(&config(k)).unwrap();
            match (t.io(), t.batch(&mut Rng::seed_from_u64(3), 5)) {
                (Io::Tokens { vocab, seq }, Batch::Tokens(b)) => {
                    assert_eq!((b.seq, b.size), (seq, 5));
                    for v in [&b.inputs, &b.targets] {
                        assert_eq!(v.len(), 5 * seq);
                        assert!(v.iter().all(|&x| (x as usize) < vocab));
                    }
                    assert_eq!(b.weights.len(), 5 * seq);
                }
                (Io::Vectors { d_in, d_out }, Batch::Vectors(b)) => {
                    assert_eq!(b.x.shape(), (d_in, 5));
                    assert_eq!(b.y.shape(), (d_out, 5));
                }
                (Io::Pairs { vocab, src, tgt }, Batch::Pairs(b)) => {
                    assert_eq!((b.src_len, b.tgt_len, b.size), (src, tgt, 5));
                    assert_eq!(b.source.len(), 5 * src);
                    for v in [&b.inputs, &b.targets] {
                        assert_eq!(v.len(), 5 * tgt);
                    }
                    for v in [&b.source, &b.inputs, &b.targets] {
                        assert!(v.iter().all(|&x| (x as usize) < vocab));
                    }
                    assert_eq!(b.weights.len(), 5 * tgt);
                }
                (io, _) => panic!("{k:?}: batch does not match {io:?}"),
            }
        }
    }

    /// The error of `cfg` built, as text.
    fn error(cfg: TaskConfig) -> String {
        match build(&cfg) {
            Ok(_) => panic!("{cfg:?} was accepted"),
            Err(e) => {
                assert!(e.is_bad_input());
                e.to_string()
            }
        }
    }

    #[test]
    fn bad_fields_are_errors_naming_the_flag() {
        let lm = config(TaskKind::TeacherLm);
        let copy = config(TaskKind::Copy);
        let reg = config(TaskKind::Regression);
        let cases: Vec<(TaskConfig, &str)> = vec![
            (TaskConfig { vocab: 1, ..lm }, "--vocab"),
            (TaskConfig { vocab: 5000, ..lm }, "--vocab"),
            (TaskConfig { seq: 0, ..lm }, "--seq"),
            (TaskConfig { seq: 4097, ..lm }, "--seq"),
            (TaskConfig { seq: 7, ..copy }, "--seq"),
            (TaskConfig { seq: 0, ..copy }, "--seq"),
            (TaskConfig { d_in: 0, ..reg }, "--task-in"),
            (TaskConfig { d_out: 0, ..reg }, "--task-out"),
            (
                TaskConfig {
                    teacher_depth: 0,
                    ..reg
                },
                "--teacher-depth",
            ),
            (
                TaskConfig {
                    teacher_width: 1,
                    ..reg
                },
                "--teacher-width",
            ),
            (
                TaskConfig {
                    teacher_width: 33,
                    ..lm
                },
                "--teacher-width",
            ),
            (TaskConfig { noise: -0.1, ..reg }, "--noise"),
            (
                TaskConfig {
                    noise: f64::NAN,
                    ..reg
                },
                "--noise",
            ),
            (
                TaskConfig {
                    temperature: 0.0,
                    ..lm
                },
                "--teacher-temperature",
            ),
            (
                TaskConfig {
                    temperature: f64::INFINITY,
                    ..lm
                },
                "--teacher-temperature",
            ),
        ];
        for (cfg, flag) in cases {
            let e = error(cfg);
            assert!(e.contains(flag), "{flag}: {e}");
        }
    }

    #[test]
    fn a_vocabulary_too_small_names_the_minimum() {
        for k in [TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort] {
            let e = error(TaskConfig {
                vocab: 2,
                ..config(k)
            });
            assert!(e.contains("--vocab") && e.contains("from 3"), "{e}");
        }
        // Two symbols are enough for a language model, and odd lengths too.
        build(&TaskConfig {
            vocab: 2,
            seq: 7,
            ..config(TaskKind::TeacherLm)
        })
        .unwrap();
    }

    #[test]
    fn entropy_of_uniform_is_log_n() {
        let p = [0.25; 4];
        assert!((entropy(&p) - 4f64.ln()).abs() < normscope_numeric::tolerance::ROUNDING);
        assert!(entropy(&[1.0, 0.0]).abs() < normscope_numeric::tolerance::ZERO);
    }
}
