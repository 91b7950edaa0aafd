//! `reverse-pairs`: the sequence-to-sequence task of the encoder-decoder model
//! ([`crate::train::seq2seq`]). Content symbols are `0..vocab-1`, `BOS = vocab - 1` starts
//! the decoder's input, and with `k = --seq`:
//!
//! ```text
//! source   a = (a_1 .. a_k)                 a_i iid uniform over the vocab - 1 content symbols
//! target   y = reverse(a) = (a_k .. a_1)
//! decoder  reads [BOS, y_1 .. y_{k-1}] and predicts y_1 .. y_k (teacher forcing), every
//!          position weighted 1
//! ```
//!
//! The encoder reads the source, the decoder its own input; the loss is the decoder's mean
//! cross-entropy over the k targets. Floor: 0, since y is a function of a. Context-free loss:
//! `ln(vocab - 1)`, exact: every target token is marginally uniform over the content symbols,
//! also given its position and the earlier targets (they are other, independent a_i), so a
//! predictor that ignores the source can do no better than uniform.

use super::{Batch, Io, PairBatch, Task, TaskConfig, TaskKind};
use crate::Result;
use normscope_numeric::rng::Rng;
use rand::RngExt;

/// Reverse a source sequence into a target sequence.
///
/// # Examples
///
/// Vocab 5: BOS is 4, and the context-free loss is `ln(vocab - 1) = ln 4`.
///
/// ```rust
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use normscope_core::train::task::seq2seq::ReversePairs;
/// use normscope_core::train::task::{Io, Task, TaskConfig, TaskKind};
///
/// let cfg = TaskConfig {
///     kind: TaskKind::ReversePairs,
///     vocab: 5,
///     seq: 3,
///     ..TaskConfig::default()
/// };
/// let task = ReversePairs::new(&cfg)?;
/// assert_eq!(task.bos(), 4);
/// assert_eq!(task.io(), Io::Pairs { vocab: 5, src: 3, tgt: 3 });
/// assert_eq!(task.context_free_loss(), 4f64.ln());
/// assert!(ReversePairs::new(&TaskConfig { vocab: 2, ..cfg }).is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ReversePairs {
    /// Vocabulary size, BOS included.
    vocab: usize,
    /// Source (and target) tokens per sequence, k.
    len: usize,
}

impl ReversePairs {
    /// Checks `cfg` ([`TaskConfig::check_as`] reverse-pairs) and builds the task.
    pub fn new(cfg: &TaskConfig) -> Result<Self> {
        cfg.check_as(TaskKind::ReversePairs)?;
        Ok(ReversePairs {
            vocab: cfg.vocab,
            len: cfg.seq,
        })
    }

    /// The id that starts the decoder's input, `vocab - 1`.
    pub fn bos(&self) -> u32 {
        (self.vocab - 1) as u32
    }
}

impl Task for ReversePairs {
    fn kind(&self) -> TaskKind {
        TaskKind::ReversePairs
    }

    fn io(&self) -> Io {
        Io::Pairs {
            vocab: self.vocab,
            src: self.len,
            tgt: self.len,
        }
    }

    /// Per pair, k source tokens drawn uniformly from `rng` in order.
    fn batch(&self, rng: &mut Rng, size: usize) -> Batch {
        let (k, bos) = (self.len, self.bos());
        let n = size * k;
        let mut source = Vec::with_capacity(n);
        let (mut inputs, mut targets) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..size {
            let a: Vec<u32> = (0..k).map(|_| rng.random_range(0..bos)).collect();
            let y: Vec<u32> = a.iter().rev().copied().collect();
            source.extend_from_slice(&a);
            inputs.push(bos);
            inputs.extend_from_slice(&y[..k - 1]);
            targets.extend_from_slice(&y);
        }
        Batch::Pairs(PairBatch {
            src_len: k,
            tgt_len: k,
            size,
            source,
            inputs,
            targets,
            weights: vec![1.0; n],
        })
    }

    /// 0: the target is a function of the source.
    fn floor(&self, _batch: &Batch) -> f64 {
        0.0
    }

    /// `ln(vocab - 1)`, exact.
    fn context_free_loss(&self) -> f64 {
        ((self.vocab - 1) as f64).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use normscope_numeric::tolerance;
    use rand::SeedableRng;

    fn task(vocab: usize, seq: usize) -> ReversePairs {
        ReversePairs::new(&TaskConfig {
            kind: TaskKind::ReversePairs,
            vocab,
            seq,
            ..TaskConfig::default()
        })
        .unwrap()
    }

    fn pairs(b: Batch) -> PairBatch {
        match b {
            Batch::Pairs(p) => p,
            _ => panic!("reverse-pairs gives pairs"),
        }
    }

    #[test]
    fn the_target_reverses_the_source_and_the_decoder_reads_it_shifted() {
        let t = task(16, 8);
        let b = pairs(t.batch(&mut Rng::seed_from_u64(4), 64));
        let (k, bos) = (8, 15);
        assert_eq!((b.src_len, b.tgt_len, b.size), (k, k, 64));
        for v in [&b.source, &b.inputs, &b.targets] {
            assert_eq!(v.len(), 64 * k);
        }
        for s in 0..b.size {
            let a = &b.source[s * k..(s + 1) * k];
            let inp = &b.inputs[s * k..(s + 1) * k];
            let tgt = &b.targets[s * k..(s + 1) * k];
            assert!(a.iter().all(|&x| x < bos), "content only in the source");
            let rev: Vec<u32> = a.iter().rev().copied().collect();
            assert_eq!(tgt, rev.as_slice());
            assert_eq!(inp[0], bos);
            assert_eq!(&inp[1..], &tgt[..k - 1], "teacher forcing");
        }
        assert!(b.weights.iter().all(|&w| (w - 1.0).abs() < tolerance::ZERO));
        // Every content symbol occurs (512 uniform draws over 15 symbols).
        for x in 0..bos {
            assert!(b.source.contains(&x), "{x}");
        }
        assert!(t.floor(&Batch::Pairs(b)).abs() < tolerance::ZERO);
        assert!((t.context_free_loss() - 15f64.ln()).abs() < tolerance::ROUNDING);
    }

    #[test]
    fn a_batch_is_a_function_of_the_generator() {
        let t = task(7, 5);
        let draw = |seed| t.batch(&mut Rng::seed_from_u64(seed), 4);
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        // Two batches in a row from one stream differ, and continue the stream.
        let mut r = Rng::seed_from_u64(3);
        let first = t.batch(&mut r, 4);
        assert_eq!(first, draw(3));
        assert_ne!(t.batch(&mut r, 4), first);
    }

    #[test]
    fn one_token_pairs_read_only_bos() {
        let b = pairs(task(3, 1).batch(&mut Rng::seed_from_u64(0), 5));
        assert!(b.inputs.iter().all(|&x| x == 2));
        assert_eq!(b.targets, b.source);
    }
}
